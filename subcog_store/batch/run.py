"""Batch deduplication of stored memories (`subcog-store dedup`) and its undo (`subcog-store unmerge`).

A run works scope by scope: one (namespace, domain) at a time, never across them.

1. Candidates. With the model: the vectors stored in the `vec0` table of the scope are read into one matrix
   and each memory's k nearest neighbours (k=5) are found with blocked matrix products (blocks of 256 rows
   against the upper triangle; cosine = dot product of unit vectors). Only pairs at or above the threshold
   count. Without the model: each memory's significant words are looked up in the FTS5 index, and a
   candidate is confirmed when its word overlap reaches `dedup_text_threshold`.
2. The guard vetoes every pair that states different facts (`guard.changed_fact`) or shares too little
   content for one text to stand for the other (`guard.lexical_support` below `SUPPORT_MIN`), as at capture.
3. Clusters: union-find over the kept pairs, strongest first; two groups are only joined when no pair across
   them is vetoed by the guard, so a chain A~B~C never brings together an A and a C that state different facts.
4. Per cluster, one BEGIN IMMEDIATE transaction: the survivor is the highest-importance member (newest on
   ties) and is updated in place; when several members share the top importance their contents are merged
   (the store-time merger: built-in or SUBCOG_MERGE_CMD). Tags are unioned, importance is the maximum,
   created_at the newest. The other members become status 'merged' with successor_id = survivor and leave
   vector search (their vector is parked in retired_vectors); with hard_delete they are deleted, together
   with the retired memories and recent-capture rows that point at them. The decision log gets one row
   (policy 'batch', decision 'merged') whose undo JSON holds every touched row and vector, so
   `unmerge(decision_id)` restores them exactly.

Test hook: SUBCOG_BATCH_TEST_SLEEP=<seconds> sleeps after each committed cluster (used to kill a run midway).
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable

from subcog_store.dedup import plugins
from subcog_store.clock import iso
from subcog_store.db.connection import immediate
from subcog_store.errors import InvalidInput, NotFound
from subcog_store.text.namespaces import canonical_domain, canonical_namespace
from subcog_store.text.normalize import content_hash
from subcog_store.db.sqlfiles import q
from subcog_store.store import MEMORY_COLUMNS

if TYPE_CHECKING:
    import numpy as np

    from subcog_store.store import Store

ENV_THRESHOLD = "SUBCOG_DEDUP_BATCH_THRESHOLD"
ENV_KNN = "SUBCOG_DEDUP_BATCH_KNN"            # matrix (default) | vec0: how the k nearest are found
ENV_TEST_SLEEP = "SUBCOG_BATCH_TEST_SLEEP"
LAST_RUN_KEY = "dedup_last_run_at"
AUTO_MIN_MEMORIES = 10
AUTO_INTERVAL_S = 24 * 3600
WARN_REMOVAL_RATE = 0.5
WARN_DURATION_S = 60.0
BLOCK = 256            # rows per matrix block: 256 x 100k float32 similarities = 102 MB
ROW_CAP = 64           # at most this many above-threshold neighbours kept per row and block
DIMENSIONS = 384


# ---------------------------------------------------------------------------------------------------- reports

@dataclass
class Cluster:
    namespace: str
    domain: str
    members: list[str]                       # memory ids, oldest first
    similarity: float                        # the weakest kept edge (min similarity)
    max_similarity: float
    edges: list[tuple[str, str, float]]      # the kept pairs (older id, newer id, similarity)
    survivor: str
    merged_content: str
    importance: float
    tags: list[str]
    created_at: str
    method: str                              # embedding | text
    content_source: str                      # survivor | builtin | SUBCOG_MERGE_CMD | survivor (merger failed)
    contents: dict[str, str] = field(default_factory=dict)
    decision_id: int | None = None
    applied: bool = False
    skipped: str | None = None               # why a planned cluster was not merged

    def to_dict(self) -> dict:
        data = asdict(self)
        data["similarity"] = round(self.similarity, 4)
        data["max_similarity"] = round(self.max_similarity, 4)
        data["edges"] = [{"a": a, "b": b, "similarity": round(s, 4)} for a, b, s in self.edges]
        data["removed"] = [m for m in self.members if m != self.survivor]
        return data


@dataclass
class RunReport:
    run_id: int | None
    dry_run: bool
    hard_delete: bool
    skipped: str | None = None               # --auto: why nothing ran
    memories_before: int = 0
    memories_after: int = 0
    removed: int = 0
    removal_rate: float = 0.0
    duration_s: float = 0.0
    method: str = "embedding"
    knn: str | None = None
    k: int = 5
    thresholds: dict[str, float] = field(default_factory=dict)   # "namespace/domain" -> threshold used
    candidates: int = 0                      # pairs at or above the threshold
    guarded: list[dict] = field(default_factory=list)             # pairs the guard kept apart
    clusters: list[Cluster] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def merged_clusters(self) -> int:
        return sum(1 for c in self.clusters if c.applied)

    def to_dict(self) -> dict:
        data = {k: v for k, v in asdict(self).items() if k not in ("clusters",)}
        data["clusters"] = [c.to_dict() for c in self.clusters]
        data["cluster_count"] = len(self.clusters)
        data["merged_clusters"] = self.merged_clusters
        data["duration_s"] = round(self.duration_s, 3)
        data["removal_rate"] = round(self.removal_rate, 4)
        return data

    def text(self) -> str:
        if self.skipped:
            return f"dedup skipped: {self.skipped}"
        lines = []
        verb = "would merge" if self.dry_run else "merged"
        for c in self.clusters:
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
        for g in self.guarded:
            lines.append(f"kept apart by the guard: {g['a']} / {g['b']} ({g['similarity']:.3f}): {g['reason']}")
        mode = "dry run, nothing changed: " if self.dry_run else ""
        lines.append(f"{mode}{len(self.clusters)} clusters; memories {self.memories_before} -> "
                     f"{self.memories_after} ({self.removed} removed, {self.removal_rate:.1%}) in "
                     f"{self.duration_s:.2f} s [{self.method}, k={self.k}, thresholds "
                     f"{', '.join(f'{s} {t:g}' for s, t in self.thresholds.items()) or '-'}]")
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


@dataclass
class UnmergeReport:
    decision_id: int
    survivor: str
    restored: list[str]
    reinserted: list[str]                    # rows put back after a hard delete

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        extra = f" ({len(self.reinserted)} re-inserted after a hard delete)" if self.reinserted else ""
        return (f"unmerged decision {self.decision_id}: {self.survivor} restored, "
                f"{len(self.restored)} memories active again{extra}: {', '.join(self.restored)}")


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ---------------------------------------------------------------------------------------------------- progress

class Progress:
    """`\\r[#####.....] 1234/10000 clusters` on stderr, at most ten times a second."""

    def __init__(self, enabled: bool, stream=None):
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self._last = 0.0
        self._shown = False

    def update(self, done: int, total: int, label: str, force: bool = False) -> None:
        if not self.enabled or total <= 0:
            return
        now = time.monotonic()
        if not force and done < total and now - self._last < 0.1:
            return
        self._last = now
        filled = int(30 * done / total)
        self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{total} {label}   ")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False


def _progress_enabled(progress: bool | None) -> bool:
    if progress is not None:
        return bool(progress)
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


# ---------------------------------------------------------------------------------------------------- settings

def batch_threshold(value: float | str | None, environ: dict[str, str] | None = None) -> float | None:
    """The explicit threshold (argument, else SUBCOG_DEDUP_BATCH_THRESHOLD), or None for the namespace's own."""
    origin = "--threshold"
    if value is None:
        environ = os.environ if environ is None else environ
        if not environ.get(ENV_THRESHOLD, "").strip():
            return None
        value, origin = environ[ENV_THRESHOLD], ENV_THRESHOLD
    try:
        threshold = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{origin} = {value!r} is not a number (a similarity between 0 and 1)") from None
    if not 0.0 <= threshold <= 1.0 or threshold != threshold:
        raise InvalidInput(f"{origin} = {value!r} is out of range (0 to 1)")
    return threshold


def _knn_mode(knn: str | None) -> str:
    mode = (knn or os.environ.get(ENV_KNN) or "matrix").strip().lower()
    if mode not in ("matrix", "vec0"):
        raise InvalidInput(f"{ENV_KNN} = {mode!r}: expected matrix or vec0")
    return mode


# ---------------------------------------------------------------------------------------------------- candidates

@dataclass
class _Mem:
    row: dict

    @property
    def id(self) -> str:
        return self.row["id"]

    @property
    def seq(self) -> int:
        return self.row["seq"]

    @property
    def content(self) -> str:
        return self.row["content"]


def _row(values: Iterable) -> dict:
    return dict(zip(MEMORY_COLUMNS, values))


def _top_k_pairs(src: "np.ndarray", dst: "np.ndarray", sim: "np.ndarray", k: int) -> "np.ndarray":
    """Indices of the pairs (src < dst) that are among the k strongest of either endpoint."""
    import numpy as np

    if len(src) == 0:
        return np.zeros(0, dtype=np.int64)
    edge = np.arange(len(src))
    node = np.concatenate([src, dst])
    both_edge = np.concatenate([edge, edge])
    both_sim = np.concatenate([sim, sim])
    order = np.lexsort((-both_sim, node))
    node_sorted = node[order]
    starts = np.r_[0, np.flatnonzero(np.diff(node_sorted)) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(node_sorted)]))
    rank = np.arange(len(node_sorted)) - group_start
    return np.unique(both_edge[order][rank < k])


def _matrix_candidates(vectors: "np.ndarray", threshold: float, k: int,
                       tick: Callable[[int, int], None]) -> list[tuple[int, int, float]]:
    """Pairs (i < j) with cosine >= threshold that are among the k nearest of i or of j.

    Blocked products against the upper triangle: every pair is computed once; each block's rows keep at most
    ROW_CAP above-threshold neighbours (only a pathological pile of near-identical memories reaches it)."""
    import numpy as np

    n = len(vectors)
    srcs, dsts, sims = [], [], []
    for start in range(0, n, BLOCK):
        stop = min(n, start + BLOCK)
        block = vectors[start:stop] @ vectors[start:].T            # (b, n - start)
        b = stop - start
        block[:, :b][np.tril_indices(b)] = -2.0                    # j <= i: self and the lower triangle
        r, c = np.nonzero(block >= threshold)
        if len(r):
            s = block[r, c]
            if len(r) > ROW_CAP:
                order = np.lexsort((-s, r))
                r, c, s = r[order], c[order], s[order]
                starts = np.r_[0, np.flatnonzero(np.diff(r)) + 1]
                rank = np.arange(len(r)) - np.repeat(starts, np.diff(np.r_[starts, len(r)]))
                keep = rank < ROW_CAP
                r, c, s = r[keep], c[keep], s[keep]
            srcs.append(r + start)
            dsts.append(c + start)
            sims.append(s)
        del block
        tick(stop, n)
    if not srcs:
        return []
    src, dst, sim = np.concatenate(srcs), np.concatenate(dsts), np.concatenate(sims)
    keep = _top_k_pairs(src, dst, sim, k)
    return [(int(src[e]), int(dst[e]), float(sim[e])) for e in keep]


def _vec0_candidates(store: "Store", vectors: "np.ndarray", seqs: list[int], namespace: str, domain: str,
                     threshold: float, k: int, tick: Callable[[int, int], None]) -> list[tuple[int, int, float]]:
    """The same pairs by one vec0 KNN query per memory (exact, brute force inside sqlite-vec)."""
    import numpy as np

    index = {s: i for i, s in enumerate(seqs)}
    sql = ("select memory_seq, distance from memory_vectors where embedding match :v and k = :k "
           "and namespace = :ns and domain = :d")
    found: dict[tuple[int, int], float] = {}
    for i, vector in enumerate(vectors):
        for seq, distance in store.con.execute(sql, {"v": np.asarray(vector, dtype=np.float32).tobytes(),
                                                     "k": k + 1, "ns": namespace, "d": domain}):
            j = index.get(seq)
            if j is None or j == i:
                continue
            sim = 1.0 - distance * distance / 2.0
            if sim >= threshold:
                found[(min(i, j), max(i, j))] = sim
        tick(i + 1, len(vectors))
    return [(a, b, s) for (a, b), s in found.items()]


def _text_candidates(store: "Store", mems: list[_Mem], namespace: str, domain: str, threshold: float, k: int,
                     tick: Callable[[int, int], None]) -> list[tuple[int, int, float]]:
    """FTS5 over shared significant words, confirmed by word overlap: the store's text tier, per memory."""
    from subcog_store.dedup.check import text_neighbours

    index = {m.id: i for i, m in enumerate(mems)}
    found: dict[tuple[int, int], float] = {}
    for i, mem in enumerate(mems):
        for n in text_neighbours(store.con, mem.content, namespace, domain, k + 1):  # +1: itself
            j = index.get(n.memory_id)
            if j is not None and j != i and n.similarity >= threshold:
                found[(min(i, j), max(i, j))] = n.similarity
        tick(i + 1, len(mems))
    return [(a, b, s) for (a, b), s in found.items()]


# ---------------------------------------------------------------------------------------------------- clusters

class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))
        self.members: dict[int, list[int]] = {}

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def group(self, root: int) -> list[int]:
        return self.members.get(root, [root])

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        ga, gb = self.group(ra), self.group(rb)
        if len(ga) < len(gb):
            ra, rb, ga, gb = rb, ra, gb, ga
        self.parent[rb] = ra
        self.members[ra] = ga + gb
        self.members.pop(rb, None)


def _guard_fn() -> Callable[[str, str], tuple[bool, str]]:
    from subcog_store.text.guard import SUPPORT_MIN, changed_fact, lexical_support

    cache: dict[tuple[str, str], tuple[bool, str]] = {}

    def check(older: str, newer: str) -> tuple[bool, str]:
        """(vetoed, reason): a changed fact, or too little shared content (one text adds a fact)."""
        key = (older, newer)
        if key not in cache:
            verdict = changed_fact(older, newer)
            if verdict.changed:
                cache[key] = (True, f"{verdict.reason}: {verdict.detail}" if verdict.detail else str(verdict.reason))
            else:
                support = lexical_support(older, newer)
                cache[key] = (support < SUPPORT_MIN, f"support {support:.2f}" if support < SUPPORT_MIN else "")
        return cache[key]
    return check


def _clusters(mems: list[_Mem], pairs: list[tuple[int, int, float]], report: RunReport
              ) -> list[tuple[list[int], list[tuple[int, int, float]]]]:
    """Union-find over the guarded pairs, strongest first; groups join only when no cross pair is vetoed.
    `mems` is sorted oldest first, so index order is age order (i < j: i is the older)."""
    guard = _guard_fn()
    uf = _UnionFind(len(mems))
    kept: list[tuple[int, int, float]] = []
    for i, j, sim in sorted(pairs, key=lambda p: (-p[2], p[0], p[1])):
        older, newer = min(i, j), max(i, j)
        changed, reason = guard(mems[older].content, mems[newer].content)
        if changed:
            report.guarded.append({"a": mems[older].id, "b": mems[newer].id, "similarity": round(sim, 4),
                                   "reason": reason})
            continue
        ri, rj = uf.find(i), uf.find(j)
        if ri == rj:
            kept.append((older, newer, sim))
            continue
        conflict = None
        for x in uf.group(ri):
            for y in uf.group(rj):
                if (x, y) in ((i, j), (j, i)):
                    continue
                changed, why = guard(mems[min(x, y)].content, mems[max(x, y)].content)
                if changed:
                    conflict = (min(x, y), max(x, y), why)
                    break
            if conflict:
                break
        if conflict:
            x, y, why = conflict
            report.guarded.append({"a": mems[older].id, "b": mems[newer].id, "similarity": round(sim, 4),
                                   "reason": f"would join {mems[x].id} and {mems[y].id}, which differ: {why}"})
            continue
        uf.union(i, j)
        kept.append((older, newer, sim))
    groups: dict[int, list[int]] = {}
    for x in range(len(mems)):
        groups.setdefault(uf.find(x), []).append(x)
    edges: dict[int, list[tuple[int, int, float]]] = {}
    for e in kept:
        edges.setdefault(uf.find(e[0]), []).append(e)
    return [(sorted(g), sorted(edges.get(root, []), key=lambda e: -e[2]))
            for root, g in sorted(groups.items(), key=lambda kv: min(kv[1])) if len(g) > 1]


def _plan(store: "Store", mems: list[_Mem], group: list[int], edges: list[tuple[int, int, float]],
          namespace: str, domain: str, method: str, report: RunReport) -> Cluster:
    """Survivor, merged text, importance, tags, time of one cluster (runs the merger; no SQL)."""
    members = [mems[i] for i in group]                     # oldest first
    age = lambda m: (m.row["created_at"], m.seq)           # noqa: E731
    top = max(m.row["importance"] for m in members)
    tied = sorted((m for m in members if m.row["importance"] == top), key=age)
    survivor = tied[-1]
    content, source = survivor.content, "survivor"
    if len(tied) > 1:
        command = str(store.settings.merge_cmd or "")
        source = "SUBCOG_MERGE_CMD" if command else "builtin"
        sims = {(mems[a].id, mems[b].id): s for a, b, s in edges}
        merged = tied[0].content
        try:
            for older, newer in zip(tied, tied[1:]):
                sim = sims.get((older.id, newer.id)) or sims.get((newer.id, older.id)) or min(e[2] for e in edges)
                pair = plugins.Pair(merged, newer.content, older.row["created_at"], newer.row["created_at"], sim,
                                    namespace)
                merged = plugins.merge(command, pair, float(store.settings.plugin_timeout_secs))
            if not merged.strip():
                raise plugins.PluginError("the merger returned an empty text")
            content = merged.strip()
        except plugins.PluginError as e:
            content, source = survivor.content, "survivor (merger failed)"
            report.warnings.append(f"merger failed for the cluster of {survivor.id}: {e}; kept the survivor's text")
    tags: list[str] = []
    for m in [survivor] + [m for m in members if m is not survivor]:
        for tag in json.loads(m.row["tags"]):
            if tag not in tags:
                tags.append(tag)
    sims_only = [e[2] for e in edges]
    return Cluster(namespace, domain, [m.id for m in members], min(sims_only), max(sims_only),
                   [(mems[a].id, mems[b].id, s) for a, b, s in edges], survivor.id, content, top, tags,
                   max(m.row["created_at"] for m in members), method, source,
                   {m.id: m.content for m in members})


# ---------------------------------------------------------------------------------------------------- applying

def _vector_hex(store: "Store", seq: int) -> tuple[str | None, str | None]:
    live = store.con.execute(q("select_vector"), {"seq": seq}).fetchone()
    parked = store.con.execute(q("batch_retired_vector"), {"seq": seq}).fetchone()
    return (bytes(live[0]).hex() if live else None, bytes(parked[0]).hex() if parked else None)


def _snapshot(store: "Store", row: dict) -> dict:
    live, parked = _vector_hex(store, row["seq"])
    captures = [dict(zip(("id", "content_hash", "memory_id", "namespace", "domain", "captured_at"), r))
                for r in store.con.execute(q("batch_recent_captures_of"), {"id": row["id"]})]
    return {"row": row, "vector": live, "retired_vector": parked, "recent_captures": captures}


def _hard_delete(store: "Store", memory_id: str, deleted: list[dict]) -> None:
    """Delete a memory and, first, everything that points at it (retired predecessors, recent captures)."""
    for pred in [_row(r) for r in store.con.execute(q("batch_predecessors"), {"id": memory_id}).fetchall()]:
        _hard_delete(store, pred["id"], deleted)
    row = _row(store.con.execute(q("batch_memory_row"), {"id": memory_id}).fetchone())
    deleted.append(_snapshot(store, row))
    store.con.execute(q("batch_delete_recent_captures_of"), {"id": memory_id})
    store.con.execute(q("delete_vector"), {"seq": row["seq"]})
    store.con.execute(q("batch_delete_memory"), {"id": memory_id})


def _apply(store: "Store", cluster: Cluster, planned: dict[str, dict], vector: "np.ndarray | None",
           hard_delete: bool, run_id: int | None) -> None:
    """Merge one cluster in one transaction (or skip it when a member changed since planning)."""
    now = iso(store.clock())
    with immediate(store.con):
        rows = {}
        for mid in cluster.members:
            found = store.con.execute(q("batch_memory_row"), {"id": mid}).fetchone()
            rows[mid] = _row(found) if found else None
            if rows[mid] is None or rows[mid]["status"] != "active" or rows[mid] != planned[mid]:
                cluster.skipped = f"memory {mid} changed since the run started"
                return
        survivor = rows[cluster.survivor]
        others = [rows[m] for m in cluster.members if m != cluster.survivor]
        content = cluster.merged_content
        if content != survivor["content"]:
            owner = store.con.execute(q("batch_active_hash_owner"), {
                "domain": cluster.domain, "namespace": cluster.namespace,
                "content_hash": content_hash(content)}).fetchone()
            if owner and owner[0] not in cluster.members:
                content, vector = survivor["content"], None
                cluster.merged_content, cluster.content_source = content, "survivor (merged text already stored)"
        undo = {"run_id": run_id, "survivor": _snapshot(store, survivor),
                "members": [_snapshot(store, r) for r in others], "hard_delete": hard_delete, "deleted": []}
        for row in others:
            live = store.con.execute(q("select_vector"), {"seq": row["seq"]}).fetchone()
            if live:
                store.con.execute(q("batch_park_vector"), {"seq": row["seq"], "embedding": live[0]})
                store.con.execute(q("delete_vector"), {"seq": row["seq"]})
            store.con.execute(q("batch_retire_member"), {"id": row["id"], "successor_id": survivor["id"],
                                                         "now": now})
        store.con.execute(q("batch_update_survivor"), {
            "id": survivor["id"], "content": content, "importance": cluster.importance,
            "tags": json.dumps(cluster.tags), "created_at": cluster.created_at, "now": now})
        if content != survivor["content"]:
            store.con.execute(q("delete_vector"), {"seq": survivor["seq"]})
            if vector is not None:
                store.con.execute(q("insert_vector"), {"seq": survivor["seq"], "namespace": cluster.namespace,
                                                       "domain": cluster.domain, "embedding": vector.tobytes()})
        if hard_delete:
            for row in others:
                _hard_delete(store, row["id"], undo["deleted"])
        removed = [r["id"] for r in others]
        reasoning = (f"batch dedup{f' run {run_id}' if run_id else ''}: {len(cluster.members)} memories "
                     f"({cluster.method}, similarity {cluster.similarity:.3f}..{cluster.max_similarity:.3f}); "
                     f"survivor {survivor['id']} (importance {cluster.importance:g}); text: {cluster.content_source}; "
                     f"{'deleted' if hard_delete else 'merged'}: {', '.join(removed)}")
        cluster.decision_id = store.con.execute(q("log_decision"), {
            "decided_at": now, "domain": cluster.domain, "namespace": cluster.namespace, "policy": "batch",
            "decision": "merged", "new_content": content, "new_hash": content_hash(content),
            "matched_memory_id": ",".join(removed), "matched_content": others[0]["content"] if others else None,
            "similarity": cluster.similarity, "memory_id": survivor["id"], "reasoning": reasoning,
            "review_status": "unreviewed", "reviewed_at": None, "undo": json.dumps(undo)}).fetchone()[0]
        cluster.applied = True


# ---------------------------------------------------------------------------------------------------- the run

def _count_active(store: "Store", namespace: str | None, domain: str | None) -> int:
    return store.con.execute(q("batch_count_active"), {"namespace": namespace, "domain": domain}).fetchone()[0]


def _auto_skip(store: "Store") -> str | None:
    active = _count_active(store, None, None)
    if active <= AUTO_MIN_MEMORIES:
        return f"the store holds {active} active memories (--auto runs above {AUTO_MIN_MEMORIES})"
    row = store.con.execute(q("batch_get_setting"), {"key": LAST_RUN_KEY}).fetchone()
    if row:
        try:
            last = float(row[0])
        except ValueError:
            return None
        age = store.clock() - last
        if age < AUTO_INTERVAL_S:
            return f"the last run was {age / 3600:.1f} h ago (--auto runs after 24 h)"
    return None


def dedup(store: "Store", *, namespace: str | None = None, domain: str | None = None,
          threshold: float | None = None, k: int = 5, dry_run: bool = False, hard_delete: bool = False,
          auto: bool = False, progress: bool | None = None, knn: str | None = None) -> RunReport:
    """Deduplicate the active memories, per (namespace, domain); see the module docstring."""
    started = time.perf_counter()
    explicit = batch_threshold(threshold)
    mode = _knn_mode(knn)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InvalidInput(f"k = {k!r}: expected a whole number of neighbours >= 1")
    ns = canonical_namespace(namespace) if namespace else None
    dom = canonical_domain(domain) if domain else None
    report = RunReport(None, dry_run, hard_delete, k=k)
    if auto:
        reason = _auto_skip(store)
        if reason:
            report.skipped = reason
            report.memories_before = report.memories_after = _count_active(store, ns, dom)
            return report
    bar = Progress(_progress_enabled(progress))
    embedder = store.embedder
    report.method = "embedding" if embedder is not None else "text"
    report.knn = mode if embedder is not None else "fts5"
    if embedder is None:
        report.warnings.append(f"no model ({store.embedder_error or 'semantic tier disabled'}): candidates from "
                               f"the FTS5 index, confirmed by word overlap >= {store.settings.dedup_text_threshold}")
    start_iso = iso(store.clock())
    report.memories_before = _count_active(store, ns, dom)
    if not dry_run:
        with immediate(store.con):
            store.con.execute(q("batch_mark_stale_runs"))
            report.run_id = store.con.execute(q("batch_start_run"), {
                "started_at": start_iso, "memories_before": report.memories_before}).fetchone()[0]
    try:
        _run(store, report, ns, dom, explicit, k, mode, embedder, bar)
    except BaseException as e:
        bar.close()
        if report.run_id is not None:
            report.warnings.append(f"run stopped: {type(e).__name__}: {e}")
            _finish(store, report, started, "interrupted", ns, dom)
        raise
    bar.close()
    _finish(store, report, started, "finished", ns, dom)
    return report


def _run(store: "Store", report: RunReport, ns: str | None, dom: str | None, explicit: float | None, k: int,
         mode: str, embedder, bar: Progress) -> None:
    import numpy as np

    planned_rows: dict[str, dict] = {}
    scopes = store.con.execute(q("batch_scopes"), {"namespace": ns, "domain": dom}).fetchall()
    for namespace, domain, _ in scopes:
        limit = explicit if explicit is not None else (
            store.settings.threshold(namespace) if embedder is not None
            else float(store.settings.dedup_text_threshold))
        report.thresholds[f"{namespace}/{domain}"] = limit
        mems = [_Mem(_row(r)) for r in store.con.execute(q("batch_scope_memories"),
                                                         {"namespace": namespace, "domain": domain})]
        if len(mems) < 2:
            continue
        label = f"memories in {namespace}/{domain}"
        tick = lambda done, total: bar.update(done, total, label)  # noqa: E731
        if embedder is not None:
            by_seq = {m.seq: i for i, m in enumerate(mems)}
            order, blobs = [], []
            for seq, blob in store.con.execute(q("batch_scope_vectors"), {"namespace": namespace, "domain": domain}):
                if seq in by_seq:
                    order.append(by_seq[seq])
                    blobs.append(blob)
            missing = len(mems) - len(order)
            if missing:
                report.warnings.append(f"{missing} active memories in {namespace}/{domain} have no vector and were "
                                       "not compared (run `subcog-store reembed`)")
            if len(order) < 2:
                continue
            vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(order), DIMENSIONS)
            del blobs
            if mode == "vec0":
                local = _vec0_candidates(store, vectors, [mems[i].seq for i in order], namespace, domain, limit, k,
                                         tick)
            else:
                local = _matrix_candidates(vectors, limit, k, tick)
            del vectors
            pairs = [(order[a], order[b], s) for a, b, s in local]
        else:
            pairs = _text_candidates(store, mems, namespace, domain, limit, k, tick)
        bar.close()
        report.candidates += len(pairs)
        for group, edges in _clusters(mems, pairs, report):
            report.clusters.append(_plan(store, mems, group, edges, namespace, domain, report.method, report))
            planned_rows.update({mems[i].id: mems[i].row for i in group})
    if report.dry_run:
        return
    vectors: dict[int, "np.ndarray"] = {}
    changed = [i for i, c in enumerate(report.clusters) if c.merged_content != c.contents[c.survivor]]
    if changed and embedder is not None:
        texts = [report.clusters[i].merged_content for i in changed]
        for start in range(0, len(texts), 256):
            batch = embedder.embed_batch(texts[start:start + 256])
            for offset, vec in enumerate(batch):
                vectors[changed[start + offset]] = vec
            bar.update(min(len(texts), start + 256), len(texts), "merged texts embedded")
        bar.close()
    elif changed:
        report.warnings.append(f"{len(changed)} merged memories stored without a vector (no model): "
                               "run `subcog-store reembed` when the model is back")
    pause = float(os.environ.get(ENV_TEST_SLEEP) or 0)
    for n, cluster in enumerate(report.clusters, start=1):
        _apply(store, cluster, planned_rows, vectors.get(n - 1), report.hard_delete, report.run_id)
        bar.update(n, len(report.clusters), "clusters")
        if pause:
            time.sleep(pause)


def _finish(store: "Store", report: RunReport, started: float, status: str, ns: str | None,
            dom: str | None) -> None:
    report.memories_after = _count_active(store, ns, dom)
    report.removed = report.memories_before - report.memories_after
    report.removal_rate = report.removed / report.memories_before if report.memories_before else 0.0
    if report.dry_run:
        planned = sum(len(c.members) - 1 for c in report.clusters)
        report.memories_after = report.memories_before - planned
        report.removed = planned
        report.removal_rate = planned / report.memories_before if report.memories_before else 0.0
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
        store.con.execute(q("batch_finish_run"), {
            "id": report.run_id, "finished_at": now, "status": status, "memories_after": report.memories_after,
            "clusters": report.merged_clusters, "removed": report.removed, "removal_rate": report.removal_rate,
            "duration_s": report.duration_s, "warnings": json.dumps(report.warnings)})
        if status == "finished":
            store.con.execute(q("upsert_setting"), {"key": LAST_RUN_KEY, "value": f"{store.clock():.3f}",
                                                    "now": now})


# ---------------------------------------------------------------------------------------------------- unmerge

def _restore_vectors(store: "Store", snap: dict) -> None:
    row = snap["row"]
    store.con.execute(q("delete_vector"), {"seq": row["seq"]})
    store.con.execute(q("batch_unpark_vector"), {"seq": row["seq"]})
    if snap["vector"]:
        store.con.execute(q("insert_vector"), {"seq": row["seq"], "namespace": row["namespace"],
                                               "domain": row["domain"], "embedding": bytes.fromhex(snap["vector"])})
    if snap["retired_vector"]:
        store.con.execute(q("batch_park_vector"), {"seq": row["seq"],
                                                   "embedding": bytes.fromhex(snap["retired_vector"])})


def _params(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "content_hash"}


def unmerge(store: "Store", decision_id: int | str) -> UnmergeReport:
    """Undo one batch merge: every member back exactly as it was (rows, vectors, recent captures)."""
    try:
        did = int(decision_id)
    except (TypeError, ValueError):
        raise InvalidInput(f"decision id {decision_id!r} is not a number") from None
    now = iso(store.clock())
    with immediate(store.con):
        log = store.con.execute(q("batch_log_row"), {"id": did}).fetchone()
        if log is None:
            raise NotFound(f"no decision with id {did}")
        _, policy, decision, review, domain, namespace, memory_id, undo_text = log
        if policy != "batch" or decision != "merged":
            raise InvalidInput(f"decision {did} is not a batch merge ({policy or 'no policy'}/{decision}); "
                               "only `subcog-store dedup` merges can be unmerged")
        if review == "reversed":
            raise InvalidInput(f"decision {did} was already reversed")
        undo = json.loads(undo_text or "{}")
        survivor, members = undo["survivor"], undo["members"]
        current = store.con.execute(q("batch_memory_row"), {"id": survivor["row"]["id"]}).fetchone()
        if current is None or _row(current)["status"] != "active":
            raise InvalidInput(f"decision {did}: the survivor {survivor['row']['id']} is no longer active "
                               "(changed by a later decision); undo that one first")
        for snap in members:
            row = snap["row"]
            now_row = store.con.execute(q("batch_memory_row"), {"id": row["id"]}).fetchone()
            expected_gone = undo.get("hard_delete")
            if (now_row is None) != bool(expected_gone) or (now_row is not None and (
                    _row(now_row)["status"] != "merged" or _row(now_row)["successor_id"] != survivor["row"]["id"])):
                raise InvalidInput(f"decision {did}: memory {row['id']} changed after the merge; cannot restore it")
        for snap in [survivor] + members:
            row = snap["row"]
            owner = store.con.execute(q("batch_active_hash_owner"), {
                "domain": row["domain"], "namespace": row["namespace"], "content_hash": row["content_hash"]
            }).fetchone()
            if owner and owner[0] != survivor["row"]["id"]:
                raise InvalidInput(f"decision {did}: restoring {row['id']} would make its text active twice "
                                   f"(memory {owner[0]} holds the same text now); nothing was changed")
        reinserted = []
        if undo.get("hard_delete"):
            # Re-insert in reverse deletion order: members before the retired memories that point at them.
            for snap in reversed(undo["deleted"]):
                store.con.execute(q("batch_reinsert_memory"), _params(snap["row"]))
                reinserted.append(snap["row"]["id"])
            for snap in undo["deleted"]:
                _restore_vectors(store, snap)
                for capture in snap["recent_captures"]:
                    store.con.execute(q("batch_reinsert_recent_capture"), capture)
        # The survivor first: its merged text may equal a member's text (unique index on active hashes).
        store.con.execute(q("batch_restore_memory"), _params(survivor["row"]))
        _restore_vectors(store, survivor)
        for snap in members:
            store.con.execute(q("batch_restore_memory"), _params(snap["row"]))
            _restore_vectors(store, snap)
        store.con.execute(q("batch_mark_reversed"), {"id": did, "now": now})
    return UnmergeReport(did, survivor["row"]["id"], [s["row"]["id"] for s in members], reinserted)
