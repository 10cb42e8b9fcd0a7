"""CLI commands beyond the store's own: hooks, install-hooks, review, eval-pairs (and batch dedup)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from subcog_store.cli.app import EXTENSIONS, command, db_path, emit, open_store
from subcog_store.errors import InvalidInput


def register(sub, add) -> None:
    p = sub.add_parser("hook", help="Claude Code hooks (read the hook input on stdin)",
                       description="Claude Code hooks: they always exit 0 and print output the client accepts.")
    hooks = p.add_subparsers(dest="hook", required=True)
    h = hooks.add_parser("pre-compact", help="capture the conversation's decisions, learnings, patterns")
    h.add_argument("--format", choices=("default", "subcog"), default="default",
                   help="default: a systemMessage line; subcog: the original design's report (which the real "
                        "client rejects on PreCompact)")
    h.add_argument("--dry-run", action="store_true", help="report what would be captured; write nothing")
    hooks.add_parser("session-start", help="after a compaction, hand the capture report to the model")
    p = add("install-hooks", "register both hooks in Claude Code's settings.json (merging)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--project", metavar="DIR", help="write DIR/.claude/settings.json")
    where.add_argument("--user", action="store_true", help="write ~/.claude/settings.json")
    p.add_argument("--uninstall", action="store_true", help="remove our hooks instead")
    p.add_argument("--dry-run", action="store_true", help="say what would change; write nothing")
    p = add("review", "list decisions waiting for review")
    p.add_argument("--all", action="store_true", help="every decision, reviewed or not")
    p.add_argument("--limit", type=int, default=50)
    p = add("confirm", "confirm a decision of the log")
    p.add_argument("id", type=int)
    p = add("reverse", "undo a decision: store a rejected text, or restore replaced/merged memories")
    p.add_argument("id", type=int)
    p = add("eval-pairs", "measure the duplicate check on labeled pairs (in a throw-away store)")
    p.add_argument("file")
    p.add_argument("--format", choices=("mrpc", "sts", "jsonl"), required=True, dest="pairs_format")
    p.add_argument("--namespace", "-n", default="context", help="namespace whose settings apply (default context)")
    p.add_argument("--limit", type=int, help="only the first N pairs")


EXTENSIONS.append(register)


@command("hook")
def cmd_hook(args: argparse.Namespace) -> int:
    """Hooks exit 0 whatever happens, and never print a traceback."""
    try:
        from subcog_store.hook.handlers import HookOptions, pre_compact, pre_compact_output, session_start, setup_log

        setup_log()
        raw = _read_stdin()
        db = _hook_db(args)
        if args.hook == "pre-compact":
            run = pre_compact(raw, HookOptions.from_env(db, dry_run=args.dry_run))
            print(pre_compact_output(run, args.format))
        else:
            out = session_start(raw, db)
            if out:
                print(out)
    except BaseException as e:  # noqa: BLE001 - the user's compaction must go on
        if args.hook == "pre-compact":
            print(json.dumps({"systemMessage": f"subcog: capture skipped ({type(e).__name__}; see the hook log)"}))
    return 0


def _read_stdin() -> bytes:
    try:
        return sys.stdin.buffer.read(256 << 20)
    except (OSError, ValueError, AttributeError):
        return b""


def _hook_db(args: argparse.Namespace) -> Path:
    try:
        return db_path(args)
    except OSError:
        return Path(args.db or "subcog-store.db")


@command("install-hooks")
def cmd_install_hooks(args: argparse.Namespace) -> int:
    from subcog_store.hook.install import SettingsError, install_hooks, settings_path, uninstall_hooks

    path = settings_path(Path(args.project) if args.project else None, user=args.user)
    try:
        result = uninstall_hooks(path, dry_run=args.dry_run) if args.uninstall else \
            install_hooks(path, dry_run=args.dry_run)
    except SettingsError as e:
        raise InvalidInput(str(e)) from None
    verb = "would change" if args.dry_run and result.changed else ("updated" if result.changed else "unchanged")
    text = f"{path}: {verb}"
    if result.backup:
        text += f" (old file kept as {result.backup})"
    emit(args, result.to_dict(), text)
    return 0


@command("review")
def cmd_review(args: argparse.Namespace) -> int:
    from subcog_store.review import unreviewed

    with open_store(args) as store:
        rows = unreviewed(store, args.limit, args.all)
    for row in rows:
        row.pop("undo", None)
    lines = [f"#{r['id']} {r['decided_at']} {r['namespace']} {r['decision']} [{r['review_status']}]"
             + (f" sim {r['similarity']:.3f}" if r["similarity"] is not None else "")
             + f"\n    new: {(r['new_content'] or '')[:100]}"
             + (f"\n    old: {(r['matched_content'] or '')[:100]} ({r['matched_memory_id']})" if r["matched_memory_id"]
                else "")
             + (f"\n    why: {r['reasoning']}" if r["reasoning"] else "") for r in rows]
    emit(args, rows, "\n".join(lines) or "nothing to review")
    return 0


@command("confirm")
def cmd_confirm(args: argparse.Namespace) -> int:
    from subcog_store.review import confirm

    with open_store(args) as store:
        row = confirm(store, args.id)
    row.pop("undo", None)
    emit(args, row, f"decision {args.id} confirmed")
    return 0


@command("reverse")
def cmd_reverse(args: argparse.Namespace) -> int:
    from subcog_store.review import reverse

    with open_store(args) as store:
        report = reverse(store, args.id)
    emit(args, report.__dict__, report.message)
    return 0


@command("eval-pairs")
def cmd_eval_pairs(args: argparse.Namespace) -> int:
    from subcog_store.evaluation.evaluate import evaluate, format_report
    from subcog_store.evaluation.pairs import read_pairs

    try:
        pairs = read_pairs(args.file, args.pairs_format)
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise InvalidInput(f"cannot read pairs: {e}") from None
    if args.limit:
        pairs = pairs[: args.limit]
    report = evaluate(pairs, args.namespace)
    if args.json:
        print(json.dumps(report.to_dict()))
    else:
        print(format_report(report))
    return 0


try:
    from subcog_store.cli import batch_cmds as cli_batch  # noqa: F401  (dedup, unmerge)
except ImportError:
    pass
