"""Upkeep and measurement: doctor, salvage, reembed, redact, eval-pairs."""
# Lazy imports: each command imports what it runs (every command is registered at start-up).
from __future__ import annotations

import argparse
import json

from subcog_store.cli.app import db_path, emit, open_store, positive_int
from subcog_store.errors import InvalidInput


def register(sub, add) -> None:
    add("doctor", "verify the store's invariants (exit 6 when one fails)", cmd_doctor)
    add("salvage", "print every active memory a damaged database still holds, as JSON lines for capture --jsonl",
        cmd_salvage)
    add("reembed", "embed active memories that have no vector (stored while the model was missing) and the "
        "sessions' text waiting for its vectors", cmd_reembed)
    p = add("redact", "apply the current secret rules to everything stored (memories, decision log, hook runs)",
            cmd_redact)
    p.add_argument("--dry-run", action="store_true", help="count what would change; change nothing")
    p = add("eval-pairs", "measure the duplicate check on labeled pairs (in a throw-away store)", cmd_eval_pairs)
    p.add_argument("file")
    p.add_argument("--format", choices=("mrpc", "sts", "jsonl"), required=True, dest="pairs_format")
    p.add_argument("--namespace", "-n", default="context", help="namespace whose settings apply (default context)")
    p.add_argument("--limit", type=positive_int, help="only the first N pairs")


def cmd_doctor(args: argparse.Namespace) -> int:
    from subcog_store.claude_code.installed import installed
    from subcog_store.doctor import Finding, diagnose, open_for_doctor
    from subcog_store.progress import bar

    with open_for_doctor(db_path(args)) as con, bar(0, "doctor", unit="checks", quiet=args.quiet) as p:
        def step(done: int, total: int, check: str) -> None:
            p.total = total
            p.set(done, check)

        findings = diagnose(con, worker=True, progress=step)
    hooks = installed()
    findings.append(Finding("hooks_run_once", not hooks.twice, hooks.describe()))
    bad = [f for f in findings if not f.ok]
    emit(args, {"ok": not bad, "findings": [f.__dict__ for f in findings]},
         "\n".join(f"{'ok  ' if f.ok else 'FAIL'} {f.check}: {f.detail}"
                   + (f" (e.g. {', '.join(f.examples)})" if f.examples else "") for f in findings))
    return 6 if bad else 0


def cmd_salvage(args: argparse.Namespace) -> int:
    import sys

    from subcog_store.cli.app import db_path
    from subcog_store.config import tell_user
    from subcog_store.db.connection import connect
    from subcog_store.errors import NotFound
    from subcog_store.db.salvage import Tally, salvage

    path = db_path(args)
    if not path.exists():
        raise NotFound(f"{path} does not exist")
    con = connect(path, readonly=True, migrate=False)
    tally = Tally()
    try:
        for line in salvage(con, tally):
            sys.stdout.write(line + "\n")
    finally:
        con.close()
    sys.stdout.flush()
    tell_user(f"salvaged {tally.saved} active memories; {tally.unreadable} rows could not be read; "
              f"{tally.retired} retired memories left out")
    return 0


def cmd_reembed(args: argparse.Namespace) -> int:
    from subcog_store.maintenance import reembed

    from subcog_store.progress import bar

    from subcog_store.capture.session_text import embed_waiting

    with open_store(args) as store, bar(0, "reembed", unit="memories", quiet=args.quiet) as p:
        count = reembed(store, progress=p.update)
        texts = embed_waiting(store.core, lambda: True) if store.settings.session_text_enabled else 0
        p.close()
        emit(args, {"embedded": count, "session_texts_embedded": texts},
             f"embedded {count} memories that had no vector and {texts} session texts waiting for theirs")
    return 0


def cmd_redact(args: argparse.Namespace) -> int:
    from subcog_store.maintenance import redact_store

    from subcog_store.progress import bar

    with open_store(args) as store, bar(0, "redact", unit="rows", quiet=args.quiet) as p:
        c = redact_store(store, dry_run=args.dry_run, progress=p.update)
    verb = "would redact" if c["dry_run"] else "redacted"
    text = (f"{verb} {c['secrets']} secret{'' if c['secrets'] == 1 else 's'} in {c['memories']} memories "
            f"({c['merged']} merged into an identical memory), {c['decisions']} logged decisions and "
            f"{c['hook_runs']} hook run reports")
    if not c["dry_run"] and (c["memories"] or c["decisions"] or c["hook_runs"]):
        text += "; file rewritten" if c["vacuumed"] else "; the file could not be rewritten now (in use): run again"
    emit(args, c, text)
    return 0


def cmd_eval_pairs(args: argparse.Namespace) -> int:
    from subcog_store.evaluation.evaluate import evaluate, format_report
    from subcog_store.evaluation.pairs import read_pairs
    from subcog_store.model import provider

    try:
        pairs = read_pairs(args.file, args.pairs_format, limit=args.limit)
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise InvalidInput(f"cannot read pairs: {e}") from None
    from subcog_store.progress import bar

    with bar(len(pairs), "eval-pairs", unit="pairs", quiet=args.quiet) as p:
        report = evaluate(pairs, args.namespace, progress=p.update, embedders=provider.VIA_WORKER)
    print(json.dumps(report.to_dict()) if args.json else format_report(report))
    return 0
