"""Batch `dedup` on a store of bench/corpus.py memories with planted rewordings and planted changed facts.

Two domains of namespace `context` hold the same 2,000 corpus memories as background. Planted in one of them:
same-fact groups (a coding test block's A with its rewordings; a corpus memory with bench_dedup's reworded,
re-cased and clause-swapped variants); in the other: changed facts (a coding test block's A with each of its
changes; a corpus memory with a number changed). The batch run merges clusters; a planted same-fact pair is
caught when both end in one cluster, a planted changed pair is a wrong merge when they do. Each rule runs on its
dry run of the same store (the rule is swapped in batch/clusters.py for the baseline).
"""
from __future__ import annotations

import json
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.guard import coding_pairs

BACKGROUND = 2000
NAMESPACE = "context"


@dataclass
class Plan:
    rows: list[tuple[str, str]]                  # (text, domain)
    same: list[tuple[int, int]]                  # planted same-fact pairs (row indices)
    changed: list[tuple[int, int]]               # planted changed-fact pairs


def plan() -> Plan:
    from bench.bench_dedup import _near_miss, _variant
    from bench.corpus import build

    background = build(BACKGROUND * 3).sentences[:BACKGROUND]
    rows: list[tuple[str, str]] = [(t, "same") for t in background] + [(t, "changed") for t in background]
    seen = {(t, d) for t, d in rows}
    same: list[tuple[int, int]] = []
    changed: list[tuple[int, int]] = []

    def add(text: str, domain: str) -> int | None:
        if (text, domain) in seen:
            return None
        seen.add((text, domain))
        rows.append((text, domain))
        return len(rows) - 1

    # the blocks of the test split: A is the first text of a source's first pair
    by_source: dict[str, list[coding_pairs.CodingPair]] = {}
    for p in coding_pairs.split(coding_pairs.load(), "test"):
        by_source.setdefault(p.source, []).append(p)
    for source, pairs in by_source.items():
        base = pairs[0].a
        a_same = add(base, "same")
        a_changed = add(base, "changed")
        for p in pairs:
            if p.a != base or "+" in p.kind:
                continue
            if p.label and a_same is not None:
                j = add(p.b, "same")
                if j is not None:
                    same.append((a_same, j))
            elif not p.label and a_changed is not None:
                j = add(p.b, "changed")
                if j is not None:
                    changed.append((a_changed, j))
    rng = random.Random(23)
    for i in rng.sample(range(BACKGROUND), 300):
        v = _variant(rng, background[i], rng.randrange(3))
        j = add(v, "same")
        if j is not None:
            same.append((i, j))
    for i in rng.sample(range(BACKGROUND), 300):
        v = _near_miss(rng, background[i])
        j = add(v, "changed") if v else None
        if j is not None:
            changed.append((BACKGROUND + i, j))
    return Plan(rows, same, changed)


def build_store(p: Plan, path: Path) -> None:
    from bench.corpus import embed_cached
    from subcog_store.db.connection import immediate
    from subcog_store.db.memories import add_vector
    from subcog_store.db.sqlfiles import q
    from subcog_store.store import Store

    texts = sorted({t for t, _ in p.rows})
    vectors, _ = embed_cached(texts, log=lambda *a: None)
    index = {t: i for i, t in enumerate(texts)}
    store = Store(path, environ={})
    base = 1_700_000_000
    import time
    with immediate(store.con):
        for n, (text, domain) in enumerate(p.rows):
            at = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(base + n * 60))
            seq, _ = store.con.execute(q("insert_memory"), {
                "id": f"{n + 1:012x}", "domain": domain, "namespace": NAMESPACE, "content": text,
                "importance": 0.5, "tags": json.dumps([]), "source": "bench", "session_id": None, "created_at": at,
                "now": at}).fetchone()
            add_vector(store.con, seq, NAMESPACE, domain,
                       np.ascontiguousarray(vectors[index[text]], dtype=np.float32).tobytes())
    store.close()


def run(path: Path, verdict, ps, threshold: float | None) -> list[set[str]]:
    """The clusters batch dedup merges with `verdict` as the duplicate rule."""
    from subcog_store.batch import clusters as clusters_module
    from subcog_store.batch.run import dedup
    from subcog_store.store import Store

    real = clusters_module.judge

    class Veto:
        def __init__(self, agrees: bool, why: str | None):
            self.veto = None if agrees else (why or "not the same")

    def judge(older: str, newer: str, similarity: float, phrase_similarity=None, **_: object) -> Veto:
        return Veto(*verdict(older, newer, similarity, ps))
    clusters_module.judge = judge  # type: ignore[assignment]
    try:
        store = Store(path, environ={})
        try:
            report = dedup(store, threshold=threshold, dry_run=True)
        finally:
            store.close()
    finally:
        clusters_module.judge = real  # type: ignore[assignment]
    return [set(c.members) for c in report.clusters]


def report(verdicts: dict, ps) -> list[str]:
    p = plan()
    ids = [f"{n + 1:012x}" for n in range(len(p.rows))]
    out = ["## Batch dedup with planted pairs", "",
           f"{BACKGROUND} bench/corpus.py memories in each of two domains; planted: {len(p.same)} same-fact pairs "
           f"(coding test rewordings and bench_dedup's variants), {len(p.changed)} changed-fact pairs (coding test "
           "changes, a number changed). Cells: same-fact pairs merged / changed pairs merged.", "",
           "| threshold | before | after |", "| --- | --- | --- |"]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "planted.db"
        build_store(p, db)
        for threshold in (None, 0.85, 0.80):
            cells = []
            for rule in ("baseline", "new"):
                groups = run(db, verdicts[rule], ps, threshold)   # a dry run: the store is left as it was
                where = {m: k for k, g in enumerate(groups) for m in g}
                together = lambda x, y: ids[x] in where and where.get(ids[x]) == where.get(ids[y])  # noqa: E731
                caught = sum(together(x, y) for x, y in p.same)
                wrong = sum(together(x, y) for x, y in p.changed)
                cells.append(f"{caught} / {len(p.same)} ({caught / len(p.same):.1%}); {wrong} / {len(p.changed)}")
            label = "0.90 (the namespace's)" if threshold is None else f"{threshold:.2f}"
            out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out
