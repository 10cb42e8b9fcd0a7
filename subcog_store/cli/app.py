"""The `subcog-store` command line: parse arguments, open the store, call one library function, report.

Exit codes: 0 ok · 1 unexpected error · 2 invalid input · 3 bad configuration · 4 database unusable
(missing directory, read-only, locked, corrupt) · 5 not a subcog-store database · 6 doctor found a broken
invariant · 7 no such memory or decision.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Callable

from subcog_store.errors import InvalidInput, NotFound, SubcogError

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def command(name: str) -> Callable:
    def register(fn: Callable[[argparse.Namespace], int]) -> Callable:
        COMMANDS[name] = fn
        return fn
    return register


def default_db_path() -> Path:
    """`SUBCOG_DB`, else `$XDG_DATA_HOME/subcog-store/memories.db` (XDG default ~/.local/share)."""
    if os.environ.get("SUBCOG_DB"):
        return Path(os.environ["SUBCOG_DB"])
    base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "subcog-store" / "memories.db"


def db_path(args: argparse.Namespace) -> Path:
    if args.db:
        return Path(args.db)
    path = default_db_path()
    if not os.environ.get("SUBCOG_DB"):
        path.parent.mkdir(parents=True, exist_ok=True)
    return path


def open_store(args: argparse.Namespace, readonly: bool = False):
    from subcog_store.store import Store

    return Store(db_path(args), readonly=readonly)


def emit(args: argparse.Namespace, data: object, text: str | None = None) -> None:
    if getattr(args, "json", False) or text is None:
        print(json.dumps(data, ensure_ascii=False, default=str))
    else:
        print(text)


def read_text_arg(text: str) -> str:
    """The text argument, or stdin when it is `-`; invalid UTF-8 is an InvalidInput."""
    if text != "-":
        return text
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInput(f"stdin is not valid UTF-8 (byte {e.start})") from None


def jsonl_requests(stream) -> list[tuple[int, dict | str]]:
    """Parse stdin JSONL: (line number, request object) or (line number, error message)."""
    out: list[tuple[int, dict | str]] = []
    for number, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            out.append((number, f"line is not valid UTF-8 (byte {e.start})"))
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            out.append((number, f"not JSON: {e.msg}"))
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("content"), str):
            out.append((number, 'expected an object with a string "content"'))
        elif not isinstance(obj.get("namespace"), str):
            out.append((number, 'expected a string "namespace"'))
        else:
            out.append((number, obj))
    return out


def run_jsonl(args: argparse.Namespace, capture: bool) -> int:
    """One result line per request line, in order; a bad line gets an error result and the others go on."""
    from subcog_store.store import validate_content

    requests = jsonl_requests(sys.stdin.buffer)
    failed = 0
    with open_store(args) as store:
        long_texts = []  # embedded in one batch up front: much cheaper than one model call per line
        for _, request in requests:
            if isinstance(request, dict):
                try:
                    text = validate_content(request["content"])
                except SubcogError:
                    continue
                if len(text) >= int(store.settings.dedup_min_semantic_length):
                    long_texts.append(text)
        store.embed_many(long_texts)
        for number, request in requests:
            try:
                if isinstance(request, str):
                    raise InvalidInput(request)
                if capture:
                    result = store.capture(request["content"], request["namespace"], request.get("domain"),
                                           importance=request.get("importance", 0.5), tags=request.get("tags"),
                                           source=request.get("source", "cli"), session_id=request.get("session_id"))
                else:
                    result = store.check_duplicate(request["content"], request["namespace"], request.get("domain"))
                print(json.dumps({"line": number, "ok": True, **result.to_dict()}, ensure_ascii=False))
            except SubcogError as e:
                failed += 1
                print(json.dumps({"line": number, "ok": False, "error": str(e), "exit_code": e.exit_code}))
    return 2 if failed else 0


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


@command("init")
def cmd_init(args: argparse.Namespace) -> int:
    from subcog_store.db.connection import latest_version

    with open_store(args) as store:
        emit(args, {"db": store.path, "schema_version": latest_version()},
             f"subcog-store database ready: {store.path} (schema version {latest_version()})")
    return 0


@command("capture")
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
        emit(args, result.to_dict(), text)
    return 0


@command("check")
def cmd_check(args: argparse.Namespace) -> int:
    if args.jsonl:
        return run_jsonl(args, capture=False)
    if args.text is None or args.namespace is None:
        raise InvalidInput("check needs --namespace and a text (or --jsonl)")
    with open_store(args) as store:
        result = store.check_duplicate(read_text_arg(args.text), args.namespace, args.domain)
        emit(args, result.to_dict(), describe_check(result))
    return 0


@command("list")
def cmd_list(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        status = None if args.status == "all" else args.status
        found = store.memories(args.namespace, args.domain, status, args.limit)
        emit(args, [m.to_dict() for m in found],
             "\n".join(f"{m.urn}  [{m.status}] {m.content[:100]}" for m in found) or "no memories")
    return 0


@command("show")
def cmd_show(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        memory = store.get(args.id)
        data = memory.to_dict()
        emit(args, data, "\n".join(f"{k}: {v}" for k, v in data.items()))
    return 0


@command("stats")
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


@command("doctor")
def cmd_doctor(args: argparse.Namespace) -> int:
    from subcog_store.doctor import diagnose

    with open_store(args) as store:
        findings = diagnose(store.con)
    bad = [f for f in findings if not f.ok]
    emit(args, {"ok": not bad, "findings": [f.__dict__ for f in findings]},
         "\n".join(f"{'ok  ' if f.ok else 'FAIL'} {f.check}: {f.detail}"
                   + (f" (e.g. {', '.join(f.examples)})" if f.examples else "") for f in findings))
    return 6 if bad else 0


@command("reembed")
def cmd_reembed(args: argparse.Namespace) -> int:
    from subcog_store.maintenance import reembed

    with open_store(args) as store:
        count = reembed(store)
        emit(args, {"embedded": count}, f"embedded {count} memories that had no vector")
    return 0


@command("sql")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="subcog-store", description=__doc__.split("\n")[0],
                                     epilog="Exit codes: " + __doc__.split("Exit codes: ")[1])
    parser.add_argument("--db", help="database file (default: $SUBCOG_DB, else the XDG data directory)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no warnings on stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        return p

    add("init", "create or upgrade the database")
    for name, help in (("capture", "check a text and store it unless it is a duplicate"),
                       ("check", "tell whether a text duplicates a stored memory (stores nothing)")):
        p = add(name, help)
        p.add_argument("text", nargs="?", help="the text ('-' reads stdin)")
        p.add_argument("--namespace", "-n", help="decisions, patterns, learnings, ...")
        p.add_argument("--domain", "-d", default=None, help="scope label (default: project)")
        p.add_argument("--jsonl", action="store_true",
                       help='read JSON lines {"content","namespace","domain","importance","tags"} from stdin')
        if name == "capture":
            p.add_argument("--importance", type=float, default=0.5, help="0 to 1 (default 0.5)")
            p.add_argument("--tag", action="append", help="a tag (repeatable)")
            p.add_argument("--source", help="where the text comes from (default: cli)")
            p.add_argument("--policy", choices=("skip", "verify", "replace", "merge"),
                           help="override the namespace's policy")
    p = add("list", "list memories, newest first")
    p.add_argument("--namespace", "-n")
    p.add_argument("--domain", "-d")
    p.add_argument("--status", default="active", choices=("active", "superseded", "merged", "deleted", "all"))
    p.add_argument("--limit", type=int, default=50)
    p = add("show", "show one memory")
    p.add_argument("id")
    add("stats", "counts, check counters, durations, recent window")
    add("doctor", "verify the store's invariants (exit 6 when one fails)")
    add("reembed", "embed active memories that have no vector (stored while the model was missing)")
    p = add("sql", "open the stock sqlite3 shell on the database with vec0 loaded")
    p.add_argument("query", nargs="?", help="run one statement and exit")
    p.add_argument("--print", action="store_true", help="print the shell command instead of running it")
    for extend in EXTENSIONS:
        extend(sub, add)
    return parser


EXTENSIONS: list[Callable] = []


def main(argv: list[str] | None = None) -> int:
    from subcog_store.cli import more_cmds as cli_more  # noqa: F401  (registers the hook, policy and batch commands)

    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR if args.quiet else logging.WARNING,
                        format="subcog-store: %(message)s")
    try:
        return COMMANDS[args.command](args)
    except SubcogError as e:
        print(f"subcog-store: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
