"""Commands on the decision log: review, confirm, reverse."""
# Lazy imports: each command imports what it runs (every command is registered at start-up).
from __future__ import annotations

import argparse

from subcog_store.cli.app import emit, open_store, positive_int


def register(sub, add) -> None:
    p = add("review", "list decisions waiting for review", cmd_review)
    p.add_argument("--all", action="store_true", help="every decision, reviewed or not")
    p.add_argument("--limit", type=positive_int, default=50)
    p = add("confirm", "confirm a decision of the log", cmd_confirm)
    p.add_argument("id")
    p = add("reverse", "undo a decision: store a rejected text, or restore replaced/merged memories", cmd_reverse)
    p.add_argument("id")


def _shown(row: dict) -> dict:
    """A decision as shown: no undo data, secrets redacted again."""
    from subcog_store.text.redact import shown

    row.pop("undo", None)
    for key in ("new_content", "matched_content", "reasoning"):
        row[key] = shown(row[key])
    return row


def cmd_review(args: argparse.Namespace) -> int:
    from subcog_store.review import unreviewed

    with open_store(args) as store:
        rows = unreviewed(store, args.limit, args.all)
    for row in rows:
        _shown(row)
    lines = [f"#{r['id']} {r['decided_at']} {r['namespace']} {r['decision']} [{r['review_status']}]"
             + (f" sim {r['similarity']:.3f}" if r["similarity"] is not None else "")
             + f"\n    new: {(r['new_content'] or '')[:100]}"
             + (f"\n    old: {(r['matched_content'] or '')[:100]} ({r['matched_memory_id']})" if r["matched_memory_id"]
                else "")
             + (f"\n    why: {r['reasoning']}" if r["reasoning"] else "") for r in rows]
    emit(args, rows, "\n".join(lines) or "nothing to review")
    return 0


def cmd_confirm(args: argparse.Namespace) -> int:
    from subcog_store.review import confirm

    with open_store(args) as store:
        row = confirm(store, args.id)
    emit(args, _shown(row), f"decision {row['id']} confirmed")
    return 0


def cmd_reverse(args: argparse.Namespace) -> int:
    from subcog_store.review import reverse

    with open_store(args) as store:
        report = reverse(store, args.id)
    emit(args, report.to_dict(), report.message)
    return 0
