"""Commands on memories: init, capture, check, list, show, stats, sql."""
# Lazy imports: each command imports what it runs (every command is registered at start-up).
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil

from subcog_store.config import POLICIES, tell_user
from subcog_store.cli.app import db_path, emit, open_store, positive_int, read_stdin_bytes, read_text_arg
from subcog_store.errors import DatabaseError, InvalidInput, NotFound, SubcogError

MAX_JSONL_LINE = 1 << 20       # a longer line gets an error result without being parsed
MAX_JSON_DEPTH = 32


def register(sub, add) -> None:
    add("init", "create or upgrade the database", cmd_init)
    for name, help, handler in (("capture", "check a text and store it unless it is a duplicate", cmd_capture),
                                ("check", "tell whether a text duplicates a stored memory (stores nothing)",
                                 cmd_check)):
        p = add(name, help, handler)
        p.add_argument("text", nargs="?", help="the text ('-' reads stdin)")
        p.add_argument("--namespace", "-n", help="decisions, patterns, learnings, ...")
        p.add_argument("--domain", "-d", default=None, help="scope label (default: project)")
        p.add_argument("--jsonl", action="store_true",
                       help='read JSON lines {"content","namespace","domain","importance","tags","source",'
                            '"session_id","created_at"} from stdin')
        if name == "capture":
            p.add_argument("--importance", type=float, default=0.5, help="0 to 1 (default 0.5)")
            p.add_argument("--tag", action="append", help="a tag (repeatable)")
            p.add_argument("--source", help="where the text comes from (default: cli)")
            p.add_argument("--policy", choices=POLICIES,
                           help="override the namespace's policy")
    p = add("list", "list memories, newest first", cmd_list)
    p.add_argument("--namespace", "-n")
    p.add_argument("--domain", "-d")
    p.add_argument("--status", default="active", choices=("active", "superseded", "merged", "deleted", "all"))
    p.add_argument("--limit", type=positive_int, default=50)
    p = add("show", "show one memory", cmd_show)
    p.add_argument("id")
    add("stats", "counts, check counters, durations, recent window", cmd_stats)
    p = add("sql", "open the stock sqlite3 shell on the database with vec0 loaded", cmd_sql)
    p.add_argument("query", nargs="?", help="run one statement and exit")
    p.add_argument("--print", action="store_true", help="print the shell command instead of running it")


def _depth_ok(text: str) -> bool:
    """JSON nested deeper than MAX_JSON_DEPTH is refused before parsing (no RecursionError)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAX_JSON_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def jsonl_requests(stream) -> list[tuple[int, dict | str]]:
    """Parse JSONL: (line number, request object) or (line number, error message); each line on its own."""
    out: list[tuple[int, dict | str]] = []
    for number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        if len(raw) > MAX_JSONL_LINE:
            out.append((number, f"line is longer than {MAX_JSONL_LINE} bytes"))
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            out.append((number, f"line is not valid UTF-8 (byte {e.start})"))
            continue
        if not _depth_ok(line):
            out.append((number, f"JSON nested deeper than {MAX_JSON_DEPTH} levels"))
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as e:
            out.append((number, f"not JSON: {getattr(e, 'msg', str(e))[:200]}"))
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("content"), str):
            out.append((number, 'expected an object with a string "content"'))
        elif not isinstance(obj.get("namespace"), str):
            out.append((number, 'expected a string "namespace"'))
        else:
            out.append((number, obj))
    return out


def run_jsonl(args: argparse.Namespace, capture: bool) -> int:
    """One result line per request line, in order; a bad line gets an error result and the others go on. A database
    error (full disk, lock, I/O) ends the batch: the lines handled before it keep their results, that line and the
    later ones say so (exit 4)."""
    from subcog_store.store import CaptureRequest

    requests = jsonl_requests(read_stdin_bytes().splitlines(keepends=True))
    valid = [(n, r) for n, r in requests if isinstance(r, dict)]
    results: dict[int, dict] = {n: _failed(n, InvalidInput(r)) for n, r in requests if isinstance(r, str)}
    from subcog_store.progress import bar

    with open_store(args) as store, bar(len(valid), "capture" if capture else "check", unit="lines",
                                        quiet=args.quiet) as progress:
        if capture:
            batch = [CaptureRequest(r["content"], r["namespace"], r.get("domain"), r.get("importance", 0.5),
                                    r.get("tags"), r.get("source", "cli"), r.get("session_id"), None,
                                    r.get("created_at")) for _, r in valid]
            _capture_lines(store, valid, batch, results, progress.set)
        else:  # each line against the store alone (the batch is not a store)
            _check_lines(store, valid, results)
    failed = [r for r in results.values() if not r["ok"]]
    for number in sorted(results):
        print(json.dumps(results[number], ensure_ascii=False, default=str))
    stopped = next((r for r in failed if r["exit_code"] == DatabaseError.exit_code), None)
    if stopped is not None:
        tell_user(f"line {stopped['line']}: {stopped['error']} (the lines before it were handled; see their "
                  "results)")
        return DatabaseError.exit_code
    return 2 if failed else 0


def _failed(number: int, error: SubcogError) -> dict:
    return {"line": number, "ok": False, "error": str(error), "exit_code": error.exit_code}


def _database_error(error: BaseException) -> SubcogError | None:
    """A SQLite error as the documented DatabaseError, or None when it is not one (a bug: raised)."""
    from subcog_store.db.connection import database_error

    return error if isinstance(error, DatabaseError) else database_error(error)


def _not_attempted(numbers: list[int], results: dict[int, dict]) -> None:
    for number in numbers:
        results[number] = _failed(number, DatabaseError("not attempted: an earlier line hit a database error"))


def _capture_lines(store, valid: list, batch: list, results: dict[int, dict], progress=None) -> None:
    """Each line captured on its own (so a database error costs only the lines from it on), the vectors embedded a
    chunk at a time beforehand."""
    from subcog_store.dedup.in_batch import EMBED_CHUNK, Outcome, needs_vector
    from subcog_store.inputs import prepare

    for start in range(0, len(valid), EMBED_CHUNK):
        if progress:
            progress(start)
        chunk = []
        for request in batch[start:start + EMBED_CHUNK]:
            try:
                chunk.append(Outcome(0, prepare(request)))
            except InvalidInput:
                continue
        try:
            todo = [o.prepared for o in chunk if needs_vector(store.core, o)]
        except Exception as e:  # noqa: BLE001 - the capture of each line meets it again and reports it
            todo = []
            if _database_error(e) is None:
                raise
        store.embed_many([p.content for p in todo], [p.content_hash for p in todo])
        for offset, (number, _) in enumerate(valid[start:start + EMBED_CHUNK]):
            try:
                (outcome,) = store.capture_many([batch[start + offset]], dedupe_batch=False)
            except Exception as e:  # noqa: BLE001 - a SQLite error that escaped the store
                mapped = _database_error(e)
                if mapped is None:
                    raise
                outcome = Outcome(0, error=mapped)
            results[number] = _outcome(number, outcome, valid)
            if isinstance(outcome.error, DatabaseError) or not outcome.handled:
                _not_attempted([n for n, _ in valid if n > number], results)
                return


def _check_lines(store, valid: list, results: dict[int, dict]) -> None:
    from subcog_store.inputs import validate_domain

    store.embed_many([r["content"] for _, r in valid if len(r["content"]) <= 1 << 16])
    for number, r in valid:
        try:
            check = store.check_duplicate(r["content"], r["namespace"], validate_domain(r.get("domain")))
            results[number] = {"line": number, "ok": True, **check.to_dict()}
            continue
        except SubcogError as e:
            error: SubcogError | None = e
        except Exception as e:  # noqa: BLE001 - a SQLite error that escaped the store
            error = _database_error(e)
            if error is None:
                raise
        results[number] = _failed(number, error)
        if isinstance(error, DatabaseError):
            _not_attempted([n for n, _ in valid if n > number], results)
            return


def _outcome(number: int, o, valid: list) -> dict:
    if o.error is not None:
        return _failed(number, o.error)
    if not o.handled:
        return _failed(number, DatabaseError("not attempted: an earlier line hit a database error"))
    if o.repeat_of is not None:
        return {"line": number, "ok": True, "stored": False, "decision": "in_batch", "is_duplicate": True,
                "reason": "in_batch", "same_as_line": valid[o.repeat_of][0], "similarity_score": o.similarity,
                "decision_id": o.decision_id}
    return {"line": number, "ok": True, **o.result.to_dict()}


def describe_check(result) -> str:
    if not result.enabled:
        return "deduplication is disabled (SUBCOG_DEDUP_ENABLED=false)"
    tiers = ", ".join(result.tiers_run)
    if not result.is_duplicate:
        extra = "".join(f"\n  not a duplicate of {n.memory_id} ({n.similarity:.3f}): "
                        + (f"changed fact, {n.changed_fact}" if n.changed_fact else f"support {n.support:.2f}")
                        for n in result.neighbours if n.support is not None and not n.agrees)
        return f"unique (tiers: {tiers}; {result.check_duration_ms:.1f} ms){extra}"
    return (f"duplicate: {result.reason} via {result.method}, similarity {result.similarity_score:.3f}, "
            f"matches {result.matched_urn} (tiers: {tiers}; {result.check_duration_ms:.1f} ms)")


def cmd_init(args: argparse.Namespace) -> int:
    from subcog_store.db.connection import latest_version

    with open_store(args) as store:
        emit(args, {"db": store.path, "schema_version": latest_version()},
             f"subcog-store database ready: {store.path} (schema version {latest_version()})")
    return 0


def cmd_capture(args: argparse.Namespace) -> int:
    if args.jsonl:
        return run_jsonl(args, capture=True)
    if args.text is None or args.namespace is None:
        raise InvalidInput("capture needs --namespace and a text (or --jsonl)")
    with open_store(args) as store:
        result = store.capture(read_text_arg(args.text), args.namespace, args.domain, importance=args.importance,
                               tags=args.tag, source=args.source or "cli", policy=args.policy)
        text = (f"stored {result.urn} ({result.decision})" if result.stored else
                f"not stored ({result.decision}): " + describe_check(result.check))
        if result.retired:
            text += f"; retired {', '.join(result.retired)}"
        if result.outdated:
            text += f"; marked as outdated: {', '.join(result.outdated)}"
        emit(args, result.to_dict(), text)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    if args.jsonl:
        return run_jsonl(args, capture=False)
    if args.text is None or args.namespace is None:
        raise InvalidInput("check needs --namespace and a text (or --jsonl)")
    from subcog_store.inputs import validate_domain

    with open_store(args) as store:
        result = store.check_duplicate(read_text_arg(args.text), args.namespace, validate_domain(args.domain))
        emit(args, result.to_dict(), describe_check(result))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        status = None if args.status == "all" else args.status
        found = store.memories(args.namespace, args.domain, status, args.limit)
        shown = [m.to_dict() for m in found]
        emit(args, shown, "\n".join(f"{m['urn']}  [{m['status']}] {m['content'][:100]}" for m in shown)
             or "no memories")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from subcog_store.db import citations

    with open_store(args) as store:
        memory = store.get(args.id.rsplit("/", 1)[-1])   # an id or a subcog:// URN
        data = memory.to_dict()
        data["code"] = citations.of_memory(store.con, memory.id)
        lines = [f"{k}: {v}" for k, v in data.items() if k != "code"] + citations.describe(data["code"])
        emit(args, data, "\n".join(lines))
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        data = store.stats()
        lines = [f"{r['domain']}/{r['namespace']} {r['status']}: {r['memories']}" for r in data["memories"]]
        lines += [f"checks {r['namespace']} {r['result']}: {r['checks']}" for r in data["checks"]]
        lines += [f"skips {r['namespace']} {r['reason']}: {r['skips']}" for r in data["skips"]]
        lines += [f"duration {r['tier']}: n={r['checks']} p50={r['p50_ms']} ms p95={r['p95_ms']} ms"
                  for r in data["durations"]]
        w = data["recent_window"]
        lines.append(f"recent window: {w['entries']} entries (window {w['window_secs']} s, capacity {w['capacity']}), "
                     f"hit rate {w['hit_rate']}")
        emit(args, data, "\n".join(lines))
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    from subcog_store.db.connection import vec0_path

    path = db_path(args)
    if not path.exists():
        raise NotFound(f"{path} does not exist (run `subcog-store init`)")
    argv = ["sqlite3", "-cmd", f".load {vec0_path()}", str(path)] + ([args.query] if args.query else [])
    if args.print or not shutil.which("sqlite3"):
        print(shlex.join(argv))
        return 0
    os.execvp("sqlite3", argv)
    return 0

