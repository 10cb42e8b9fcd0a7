"""CLI wiring of the batch commands: `subcog-store dedup` and `subcog-store unmerge ID`.

Importing this module registers both commands (cli.EXTENSIONS / cli.command). Exit codes: 0 ok, 2 invalid input
(a bad threshold, a decision that is not a batch merge or was already reversed), 7 unknown decision id.
"""
from __future__ import annotations

import argparse

from subcog_store.cli.app import EXTENSIONS, command, emit, open_store


def register(sub, add) -> None:
    p = add("dedup", "merge duplicate active memories, per namespace and domain (batch)")
    p.add_argument("--namespace", "-n", help="only this namespace (default: all)")
    p.add_argument("--domain", "-d", help="only this domain (default: all)")
    p.add_argument("--threshold", type=str, default=None,
                   help="cosine similarity at or above which two memories are duplicates (default: "
                        "$SUBCOG_DEDUP_BATCH_THRESHOLD, else the namespace's store-time threshold)")
    p.add_argument("--k", type=int, default=5, help="nearest neighbours compared per memory (default 5)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the clusters, similarities, survivors and merged texts; change nothing")
    p.add_argument("--hard-delete", action="store_true",
                   help="delete merged-away memories (and what points at them) instead of marking them merged")
    p.add_argument("--auto", action="store_true",
                   help="run only when the store holds more than 10 memories and the last run is over 24 h old")
    p.add_argument("--progress", action="store_true", default=None,
                   help="show the progress bar on stderr even when it is not a terminal")
    p = add("unmerge", "undo one batch merge: restore its memories exactly as they were")
    p.add_argument("id", help="the decision id of the merge (from `dedup` or the decision log)")


@command("dedup")
def cmd_dedup(args: argparse.Namespace) -> int:
    from subcog_store.batch.run import dedup

    with open_store(args) as store:
        report = dedup(store, namespace=args.namespace, domain=args.domain, threshold=args.threshold, k=args.k,
                       dry_run=args.dry_run, hard_delete=args.hard_delete, auto=args.auto,
                       progress=args.progress)
        emit(args, report.to_dict(), report.text())
    return 0


@command("unmerge")
def cmd_unmerge(args: argparse.Namespace) -> int:
    from subcog_store.batch.run import unmerge

    with open_store(args) as store:
        report = unmerge(store, args.id)
        emit(args, report.to_dict(), report.text())
    return 0


EXTENSIONS.append(register)
