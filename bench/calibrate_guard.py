"""Calibrate the changed-fact guard: precision/recall of the semantic tier with and without it.

Run from the project root: `.venv/bin/python -m bench.calibrate_guard [--thresholds 0.80,0.82,...]`.
Reads MRPC (train, test) and STS-B test from ../shared/data (or $SUBCOG_SHARED_DIR/data); prints, for each
cosine threshold, flagged/TP/FP/FN/precision/recall for: plain cosine, cosine + changed_fact veto, and cosine +
veto + lexical_support >= SUPPORT_MIN. Embeddings are cached in /tmp/guard_cache (keyed by file contents).
Tune on MRPC train only; the test sets are for reporting.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

from subcog_store.text import guard
from subcog_store.evaluation.pairs import LabeledPair, read_pairs

SETS = [  # name, path under data/, format
    ("MRPC train", "mrpc/msr_paraphrase_train.txt", "mrpc"),
    ("MRPC test", "mrpc/msr_paraphrase_test.txt", "mrpc"),
    ("STS test", "stsb/sts-test.csv", "sts"),
]
THRESHOLDS = [round(0.80 + 0.02 * i, 2) for i in range(10)]  # 0.80 .. 0.98
CACHE = Path(os.environ.get("SUBCOG_GUARD_CACHE", "/tmp/guard_cache"))


def data_dir() -> Path:
    shared = os.environ.get("SUBCOG_SHARED_DIR")
    root = Path(shared) if shared else Path(__file__).resolve().parents[2] / "shared"
    return root / "data"


def cosines(pairs: list[LabeledPair], path: Path) -> list[float]:
    """Cosine per pair with the project's embedder, cached by the file's hash."""
    import numpy as np

    key = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    cache = CACHE / f"cos-{key}.npy"
    if cache.exists():
        cos = np.load(cache)
        if len(cos) == len(pairs):
            return cos.tolist()
    from subcog_store.model.embedder import Embedder

    embedder = Embedder()
    a = embedder.embed_batch([p.a for p in pairs])
    b = embedder.embed_batch([p.b for p in pairs])
    cos = (a * b).sum(axis=1)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(cache, cos)
    return cos.tolist()


def score(flags: list[bool], labels: list[bool]) -> tuple[int, int, int, int, float, float]:
    tp = sum(f and l for f, l in zip(flags, labels))
    fp = sum(f and not l for f, l in zip(flags, labels))
    fn = sum(l and not f for f, l in zip(flags, labels))
    flagged = tp + fp
    return flagged, tp, fp, fn, tp / flagged if flagged else 1.0, tp / (tp + fn) if tp + fn else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--thresholds", help="comma-separated cosine thresholds (default 0.80..0.98)")
    parser.add_argument("--support", type=float, default=guard.SUPPORT_MIN, help="lexical_support floor")
    args = parser.parse_args(argv)
    thresholds = [float(t) for t in args.thresholds.split(",")] if args.thresholds else THRESHOLDS
    data = data_dir()
    if not data.is_dir():
        print(f"calibrate_guard: {data} is absent; nothing to calibrate (set SUBCOG_SHARED_DIR)")
        return 0
    print(f"rule: duplicate iff cosine >= t [and not changed_fact] [and lexical_support >= {args.support}]")
    for name, rel, fmt in SETS:
        path = data / rel
        if not path.exists():
            print(f"\n{name}: {path} missing, skipped")
            continue
        pairs = read_pairs(path, fmt)
        labels = [p.label for p in pairs]
        cos = cosines(pairs, path)
        start = time.perf_counter()
        changed = [guard.changed_fact(p.a, p.b) for p in pairs]
        support = [guard.lexical_support(p.a, p.b) for p in pairs]
        per_pair_ms = (time.perf_counter() - start) * 1000 / max(len(pairs), 1)
        reasons: dict[str, int] = {}
        for v in changed:
            if v.changed:
                reasons[v.reason or "?"] = reasons.get(v.reason or "?", 0) + 1
        print(f"\n{name}: {len(pairs)} pairs, {sum(labels)} positive; guard + support {per_pair_ms:.3f} ms/pair;"
              f" changed: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())))
        print(f"{'thr':>5} | {'rule':<15} {'flagged':>7} {'TP':>5} {'FP':>4} {'FN':>5} {'prec':>6} {'recall':>6}")
        for t in thresholds:
            rules = {
                "cosine": [c >= t for c in cos],
                "+guard": [c >= t and not v.changed for c, v in zip(cos, changed)],
                "+guard+support": [c >= t and not v.changed and s >= args.support
                                   for c, v, s in zip(cos, changed, support)],
            }
            for label, flags in rules.items():
                flagged, tp, fp, fn, p, r = score(flags, labels)
                print(f"{t:5.2f} | {label:<15} {flagged:7d} {tp:5d} {fp:4d} {fn:5d} {p:6.3f} {r:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
