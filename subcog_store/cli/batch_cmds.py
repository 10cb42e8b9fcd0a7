"""Batch commands: `dedup` (merge duplicate stored memories) and `unmerge ID` (undo one merge); the report's
text is made here (its progress bar is `progress.Stages`)."""
# Lazy imports: each command imports what it runs (every command is registered at start-up).
from __future__ import annotations

import argparse

from subcog_store.cli.app import emit, open_store


def register(sub, add) -> None:
    p = add("dedup", "merge duplicate active memories, per namespace and domain (batch)", cmd_dedup)
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
    p = add("unmerge", "undo one batch merge: restore its memories exactly as they were", cmd_unmerge)
    p.add_argument("id", help="the decision id of the merge (from `dedup` or the decision log)")


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def report_text(report) -> str:
    """The run in words: each cluster with its members, edges and result, the guarded pairs, the figures."""
    if report.skipped:
        return f"dedup skipped: {report.skipped}"
    lines = []
    verb = "would merge" if report.dry_run else "merged"
    for c in report.clusters:
        if c.skipped:
            lines.append(f"cluster in {c.namespace}/{c.domain}: skipped ({c.skipped})")
            continue
        lines.append(f"cluster in {c.namespace}/{c.domain} ({c.method}, similarity "
                     f"{c.similarity:.3f}..{c.max_similarity:.3f}): {verb} {len(c.members)} memories"
                     + (f" (decision {c.decision_id})" if c.decision_id else ""))
        for mid in c.members:
            mark = "survivor" if mid == c.survivor else "merged  "
            lines.append(f"  {mark} {mid}: {_short(c.contents.get(mid, ''))}")
        for a, b, s in c.edges:
            lines.append(f"  edge {a} ~ {b}: {s:.3f}")
        lines.append(f"  result ({c.content_source}; importance {c.importance:g}; tags {c.tags}): "
                     f"{_short(c.merged_content, 300)}")
    for g in report.guarded:
        lines.append(f"kept apart by the guard: {g['a']} / {g['b']} ({g['similarity']:.3f}): {g['reason']}")
    mode = "dry run, nothing changed: " if report.dry_run else ""
    lines.append(f"{mode}{len(report.clusters)} clusters; memories {report.memories_before} -> "
                 f"{report.memories_after} ({report.removed} removed, {report.removal_rate:.1%}) in "
                 f"{report.duration_s:.2f} s [{report.method}, k={report.k}, thresholds "
                 f"{', '.join(f'{s} {t:g}' for s, t in report.thresholds.items()) or '-'}]")
    lines += [f"warning: {w}" for w in report.warnings]
    return "\n".join(lines)


def cmd_dedup(args: argparse.Namespace) -> int:
    from subcog_store.batch.run import dedup

    from subcog_store.progress import Stages, wanted

    enabled = args.progress if args.progress is not None else wanted(args.quiet)
    bar = Stages("dedup", bool(enabled))
    with open_store(args) as store:
        try:
            report = dedup(store, namespace=args.namespace, domain=args.domain, threshold=args.threshold, k=args.k,
                           dry_run=args.dry_run, hard_delete=args.hard_delete, auto=args.auto, progress=bar)
        finally:
            bar.close()
        emit(args, report.to_dict(), report_text(report))
    return 0


def cmd_unmerge(args: argparse.Namespace) -> int:
    from subcog_store.batch.run import unmerge

    with open_store(args) as store:
        report = unmerge(store, args.id)
        emit(args, report.to_dict(), f"unmerged decision {report.decision_id}: {report.message}")
    return 0
