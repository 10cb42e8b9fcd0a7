"""Batch deduplication of stored memories (`subcog-store dedup`); its undo is `review.reverse` (`unmerge`).

A run works scope by scope, one (namespace, domain) at a time, never across them:
1. candidate pairs (`batch.pairs`): from the stored vectors when the scope has them (no model needed), else
   FTS5 over shared words confirmed by word overlap;
2. the duplicate rule on every pair and union-find (`batch.clusters`);
3. per cluster one transaction (`batch.merge`): the survivor updated in place, the others merged away (or
   deleted with `hard_delete`), one decision-log row with every member and the undo snapshots.
The model is loaded only when a merged text needs a vector (never on a dry run).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

from subcog_store.batch import merge, pairs
from subcog_store.batch.clusters import clusters
from subcog_store.batch.report import Cluster, RunReport
from subcog_store.batch.runlock import run_lock
from subcog_store.clock import iso
from subcog_store.config import process_setting
from subcog_store.db import batch_runs, memories, settings as db_settings, vectors
from subcog_store.db.connection import immediate
from subcog_store.db.memories import Memory
from subcog_store.errors import ConfigError, InvalidInput
from subcog_store.review import reverse
from subcog_store.text.namespaces import canonical_domain, canonical_namespace

if TYPE_CHECKING:
    import numpy as np

    from subcog_store.core import Core

Progress = Callable[[int, int, str], None]   # (done, total, what)
LAST_RUN_KEY = "dedup_last_run_at"
AUTO_MIN_MEMORIES = 10
AUTO_INTERVAL_S = 24 * 3600
WARN_REMOVAL_RATE = 0.5
WARN_DURATION_S = 60.0
DIMENSIONS = 384
EMBED_BATCH = 256


def _no_progress(done: int, total: int, what: str) -> None:
    pass


def batch_threshold(value: float | str | None) -> float | None:
    """The explicit threshold (argument, else SUBCOG_DEDUP_BATCH_THRESHOLD), or None for the namespace's own."""
    if value is None:
        try:
            return process_setting("dedup_batch_threshold")  # type: ignore[return-value]
        except ConfigError as e:
            raise InvalidInput(str(e)) from None
    try:
        threshold = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"--threshold = {value!r} is not a number (a similarity between 0 and 1)") from None
    if not 0.0 <= threshold <= 1.0:
        raise InvalidInput(f"--threshold = {value!r} is out of range (0 to 1)")
    return threshold


def _knn_mode(knn: str | None) -> str:
    if knn is None:
        try:
            return str(process_setting("dedup_batch_knn"))
        except ConfigError as e:
            raise InvalidInput(str(e)) from None
    if knn not in ("matrix", "vec0"):
        raise InvalidInput(f"knn = {knn!r}: expected matrix or vec0")
    return knn


def _count_active(store: "Core", namespace: str | None, domain: str | None) -> int:
    return memories.count_active(store.con, namespace, domain)


def _auto_skip(store: "Core") -> str | None:
    active = _count_active(store, None, None)
    if active <= AUTO_MIN_MEMORIES:
        return f"the store holds {active} active memories (--auto runs above {AUTO_MIN_MEMORIES})"
    value = db_settings.get(store.con, LAST_RUN_KEY)
    if value is not None:
        try:
            last = float(value)
        except ValueError:
            return None
        age = store.clock() - last
        if age < AUTO_INTERVAL_S:
            return f"the last run was {age / 3600:.1f} h ago (--auto runs after 24 h)"
    return None


def dedup(store: "Core", *, namespace: str | None = None, domain: str | None = None,
          threshold: float | None = None, k: int = 5, dry_run: bool = False, hard_delete: bool = False,
          auto: bool = False, progress: Progress | None = None, knn: str | None = None) -> RunReport:
    """Deduplicate the active memories, per (namespace, domain); see the module docstring."""
    started = time.perf_counter()
    explicit = batch_threshold(threshold)
    mode = _knn_mode(knn)
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 1000:
        raise InvalidInput(f"k = {k!r}: expected a whole number of neighbours from 1 to 1000")
    ns = canonical_namespace(namespace) if namespace else None
    dom = canonical_domain(domain) if domain else None
    tick = progress or _no_progress
    report = RunReport(None, dry_run, hard_delete, k=k)
    if auto and (reason := _auto_skip(store)):
        report.skipped = reason
        report.memories_before = report.memories_after = _count_active(store, ns, dom)
        return report
    semantic = bool(store.settings.dedup_semantic_enabled)
    report.method, report.knn = ("embedding", mode) if semantic else ("text", "fts5")
    if not semantic:
        report.warnings.append(f"semantic tier disabled: candidates from the FTS5 index, confirmed by word "
                               f"overlap >= {store.settings.dedup_text_threshold}")
    report.memories_before = _count_active(store, ns, dom)
    if dry_run:
        return _run(store, report, started, ns, dom, explicit, mode, tick)
    with run_lock(store):   # one run at a time; a killed run's row is marked interrupted (batch.runlock)
        with immediate(store.con):
            batch_runs.mark_interrupted(store.con)
            report.run_id = batch_runs.start(store.con, iso(store.clock()), report.memories_before)
        return _run(store, report, started, ns, dom, explicit, mode, tick)


def _run(store: "Core", report: RunReport, started: float, ns: str | None, dom: str | None,
         explicit: float | None, mode: str, tick: Progress) -> RunReport:
    dry_run = report.dry_run
    try:
        planned = _plan_scopes(store, report, ns, dom, explicit, mode, tick)
        if not dry_run:
            _apply_all(store, report, planned, tick)
    except BaseException as e:
        if report.run_id is not None:
            report.warnings.append(f"run stopped: {type(e).__name__}: {e}")
            _finish(store, report, started, "interrupted", ns, dom)
        raise
    _finish(store, report, started, "finished", ns, dom)
    return report


def _scope_vectors(store: "Core", mems: list[Memory], namespace: str, domain: str
                   ) -> tuple[list[int], "np.ndarray | None"]:
    """The positions in `mems` that have a stored vector, and those vectors as one matrix."""
    import numpy as np

    by_seq = {m.seq: i for i, m in enumerate(mems)}
    order, blobs = [], []
    for seq, blob in vectors.in_scope(store.con, namespace, domain):
        if seq in by_seq:
            order.append(by_seq[seq])
            blobs.append(blob)
    if not order:
        return [], None
    return order, np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(order), DIMENSIONS)


def _plan_scopes(store: "Core", report: RunReport, ns: str | None, dom: str | None, explicit: float | None,
                 mode: str, tick: Progress) -> dict[str, Memory]:
    """Find the clusters of every scope and plan their merges; returns the memories as planned."""
    planned: dict[str, Memory] = {}
    methods: set[str] = set()
    for namespace, domain, _ in memories.scopes(store.con, ns, dom):
        mems = memories.in_scope(store.con, namespace, domain)
        if len(mems) < 2:
            continue
        label = f"memories in {namespace}/{domain}"
        step = lambda done, total: tick(done, total, label)  # noqa: E731
        order, vectors = _scope_vectors(store, mems, namespace, domain) if report.method == "embedding" \
            else ([], None)
        if vectors is not None:
            limit = explicit if explicit is not None else store.settings.threshold(namespace)
            if len(order) < len(mems):
                report.warnings.append(f"{len(mems) - len(order)} active memories in {namespace}/{domain} have no "
                                       "vector and were not compared (run `subcog-store reembed`)")
            if mode == "vec0":
                local = pairs.vec0_pairs(store.con, vectors, [mems[i].seq for i in order], namespace, domain,
                                         limit, report.k, step)
            else:
                local = pairs.matrix_pairs(vectors, limit, report.k, step)
            found = [(order[a], order[b], s) for a, b, s in local]
            method = "embedding"
        else:
            limit = explicit if explicit is not None else float(store.settings.dedup_text_threshold)
            found = pairs.text_pairs(store.con, [m.id for m in mems], [m.content for m in mems], namespace, domain,
                                     limit, report.k, step)
            method = "text"
        report.thresholds[f"{namespace}/{domain}"] = limit
        methods.add(method)
        report.candidates += len(found)
        groups = clusters([m.id for m in mems], [m.content for m in mems], found, report.guarded)
        for group, edges in groups:
            members = [mems[i] for i in group]
            id_edges = [(mems[a].id, mems[b].id, s) for a, b, s in edges]
            report.clusters.append(merge.plan(store, members, id_edges, method, report.warnings))
            planned.update({m.id: m for m in members})
    if methods == {"text"} and report.method == "embedding":
        report.method, report.knn = "text", "fts5"
        report.warnings.append("no stored vectors (stored while the model was missing?): candidates from the FTS5 "
                               f"index, confirmed by word overlap >= {store.settings.dedup_text_threshold}")
    return planned


def _apply_all(store: "Core", report: RunReport, planned: dict[str, Memory], tick: Progress) -> None:
    changed = [c for c in report.clusters if c.merged_content != c.contents[c.survivor]]
    vectors: dict[int, "np.ndarray"] = {}
    if changed and report.method == "embedding":
        embedder = store.vectors.embedder   # loaded only now: a merged text needs a vector
        if embedder is None:
            report.warnings.append(f"{len(changed)} merged memories stored without a vector (no model: "
                                   f"{store.vectors.error}): run `subcog-store reembed` when the model is back")
        else:
            for start in range(0, len(changed), EMBED_BATCH):
                chunk = changed[start:start + EMBED_BATCH]
                for cluster, vector in zip(chunk, embedder.embed_batch([c.merged_content for c in chunk])):
                    vectors[id(cluster)] = vector
                tick(min(len(changed), start + EMBED_BATCH), len(changed), "merged texts embedded")
    pause = float(process_setting("batch_test_sleep"))  # type: ignore[arg-type]
    for n, cluster in enumerate(report.clusters, start=1):
        merge.apply(store, cluster, planned, vectors.get(id(cluster)), report.hard_delete, report.run_id)
        tick(n, len(report.clusters), "clusters")
        if pause:
            time.sleep(pause)


def _finish(store: "Core", report: RunReport, started: float, status: str, ns: str | None,
            dom: str | None) -> None:
    if report.dry_run:
        planned = sum(len(c.members) - 1 for c in report.clusters)
        report.memories_after = report.memories_before - planned
    else:
        report.memories_after = _count_active(store, ns, dom)
    report.removed = report.memories_before - report.memories_after
    report.removal_rate = report.removed / report.memories_before if report.memories_before else 0.0
    report.duration_s = time.perf_counter() - started
    if report.removal_rate > WARN_REMOVAL_RATE:
        report.warnings.append(f"removal rate {report.removal_rate:.0%} exceeds {WARN_REMOVAL_RATE:.0%}: "
                               "check the threshold")
    if report.duration_s > WARN_DURATION_S:
        report.warnings.append(f"the run took {report.duration_s:.0f} s (over {WARN_DURATION_S:.0f} s)")
    skipped = [c for c in report.clusters if c.skipped]
    if skipped and not report.dry_run:
        report.warnings.append(f"{len(skipped)} clusters skipped: their memories changed during the run")
    if report.run_id is None:
        return
    now = iso(store.clock())
    with immediate(store.con):
        batch_runs.finish(store.con, report.run_id, finished_at=now, status=status,
                          memories_after=report.memories_after, clusters=report.merged_clusters,
                          removed=report.removed, removal_rate=report.removal_rate, duration_s=report.duration_s,
                          warnings=report.warnings)
        if status == "finished":
            db_settings.put(store.con, LAST_RUN_KEY, f"{store.clock():.3f}", now)


def unmerge(store: "Core", decision_id: int | str):
    """Undo one batch merge: every member back exactly as it was (rows, vectors, recent captures)."""
    return reverse(store, decision_id, batch_only=True)  # type: ignore[arg-type]


__all__ = ["dedup", "unmerge", "batch_threshold", "RunReport", "Cluster"]
