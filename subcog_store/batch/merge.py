"""Merging one cluster: the plan (survivor, merged text, importance, tags, time; runs the merger, no SQL) and
the apply transaction (through the one writer, one decision-log row with every member and its undo)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from subcog_store.batch.report import Cluster
from subcog_store.clock import iso
from subcog_store.db import decisions, memories as writer
from subcog_store.db.connection import immediate
from subcog_store.dedup import plugins
from subcog_store.text.normalize import content_hash

if TYPE_CHECKING:
    import numpy as np

    from subcog_store.db.memories import Memory
    from subcog_store.core import Core


def plan(store: "Core", members: Sequence["Memory"], edges: list[tuple[str, str, float]], method: str,
         warnings: list[str]) -> Cluster:
    """The survivor is the highest-importance member (newest on ties); when several share the top importance
    their texts are merged (the store-time merger: built-in or SUBCOG_MERGE_CMD). Tags are unioned, importance
    is the maximum, created_at the newest. `members` oldest first."""
    age = lambda m: (m.created_at, m.seq)           # noqa: E731
    top = max(m.importance for m in members)
    tied = sorted((m for m in members if m.importance == top), key=age)
    survivor = tied[-1]
    content, source = survivor.content, "survivor"
    if len(tied) > 1:
        command = str(store.settings.merge_cmd or "")
        source = "SUBCOG_MERGE_CMD" if command else "builtin"
        sims = {(a, b): s for a, b, s in edges}
        merged = tied[0].content
        try:
            for older, newer in zip(tied, tied[1:]):
                sim = sims.get((older.id, newer.id)) or sims.get((newer.id, older.id)) or min(e[2] for e in edges)
                pair = plugins.Pair(merged, newer.content, older.created_at, newer.created_at, sim,
                                    survivor.namespace)
                merged = plugins.merge(command, pair, float(store.settings.plugin_timeout_secs),
                                       store.settings.environ)
            if not merged.strip():
                raise plugins.PluginError("the merger returned an empty text")
            content = merged.strip()
        except plugins.PluginError as e:
            content, source = survivor.content, "survivor (merger failed)"
            warnings.append(f"merger failed for the cluster of {survivor.id}: {e}; kept the survivor's text")
    tags = list(dict.fromkeys(t for m in [survivor] + [m for m in members if m is not survivor] for t in m.tags))
    sims_only = [e[2] for e in edges]
    return Cluster(survivor.namespace, survivor.domain, [m.id for m in members], min(sims_only), max(sims_only),
                   list(edges), survivor.id, content, top, tags, max(m.created_at for m in members), method, source,
                   {m.id: m.content for m in members})


def apply(store: "Core", cluster: Cluster, planned: dict[str, "Memory"], vector: "np.ndarray | None",
          hard_delete: bool, run_id: int | None) -> None:
    """Merge one cluster in one transaction, or skip it when a member changed since planning."""
    con = store.con
    now = iso(store.clock())
    with immediate(con):
        rows = {mid: writer.get(con, mid) for mid in cluster.members}
        for mid, row in rows.items():
            if row is None or row.status != "active" or row != planned[mid]:
                cluster.skipped = f"memory {mid} changed since the run started"
                return
        survivor = rows[cluster.survivor]
        others = [rows[m] for m in cluster.removed]
        content = cluster.merged_content
        if content != survivor.content:
            owner = writer.active_owner(con, cluster.domain, cluster.namespace, content_hash(content))
            if owner and owner not in cluster.members:
                content, vector = survivor.content, None
                cluster.merged_content, cluster.content_source = content, "survivor (merged text already stored)"
        undo = decisions.Undo(before=[writer.snapshot(con, survivor.id)])
        undo.expect(survivor.id, "active", survivor.successor_id)
        for row in others:
            if hard_delete:
                undo.before += reversed(writer.hard_delete(con, row.id))  # a member before what points at it
                undo.expect(row.id, None)
            else:
                undo.before.append(writer.retire(con, row.id, "merged", now, successor_id=survivor.id))
                undo.expect(row.id, "merged", survivor.id)
        writer.rewrite(con, survivor, content=content, importance=cluster.importance, tags=cluster.tags,
                       created_at=cluster.created_at, now=now, vector=vector.tobytes() if vector is not None else None)
        reasoning = (f"batch dedup{f' run {run_id}' if run_id else ''}: {len(cluster.members)} memories "
                     f"({cluster.method}, similarity {cluster.similarity:.3f}..{cluster.max_similarity:.3f}); "
                     f"survivor {survivor.id} (importance {cluster.importance:g}); text: {cluster.content_source}; "
                     f"{'deleted' if hard_delete else 'merged'}: {', '.join(cluster.removed)}")
        cluster.decision_id = decisions.log_decision(con, decisions.Decision(
            decided_at=now, domain=cluster.domain, namespace=cluster.namespace, policy="batch", decision="merged",
            new_content=content, new_hash=content_hash(content),
            matched_memory_id=others[0].id if len(others) == 1 else None,
            matched_content=others[0].content if others else None, similarity=cluster.similarity,
            memory_id=survivor.id, reasoning=reasoning, undo=undo, members=decisions.members(cluster.removed, "merged")))
        cluster.applied = True
