"""The labelled pair sets the duplicate rule is trained and measured on, with their cosines (cached).

Sources (read at bench time, never copied into the repository):
- MRPC train / test, PAWS dev, STS test: ../shared/data (or $SUBCOG_SHARED_DIR/data);
- the coding-memory pairs of bench/guard/pairs/ (train and test split by project);
- SICK (Marelli et al. 2014, CC BY-NC-SA 3.0): its contradictions of the SemEval TEST split, read from a
  SICK.txt given with --sick or found at bench/out/SICK.txt (e.g. `git show HEAD:SICK.txt` from a clone of
  kkalouli/SICK-processing); reported only, never trained on;
- bench/guard/contradictions.txt: SICK-style contradictions written for this project (a sentence, its negation,
  an antonym).
Cosines are the store's embedder's (int8 all-MiniLM-L6-v2), cached under bench/out/ by a hash of the texts.
"""
from __future__ import annotations

import hashlib
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from bench.guard import coding_pairs
from subcog_store.evaluation.pairs import LabeledPair, read_pairs

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "out"
HERE = Path(__file__).resolve().parent
PUBLIC = {  # name: path under data/, format
    "MRPC train": ("mrpc/msr_paraphrase_train.txt", "mrpc"),
    "PAWS dev": ("paws/paws_wiki_dev.jsonl", "jsonl"),
    "MRPC test": ("mrpc/msr_paraphrase_test.txt", "mrpc"),
    "STS test": ("stsb/sts-test.csv", "sts"),
}
TRAINING = ("MRPC train", "PAWS dev", "coding train")   # the sources the rule learns from
REPORTED = ("coding test", "MRPC test", "STS test", "SICK test contradictions", "written contradictions")


@dataclass(frozen=True)
class PairSet:
    name: str
    pairs: list[LabeledPair]
    cos: np.ndarray
    kinds: list[str] | None = None   # the coding pairs' kind of edit


def data_dir() -> Path:
    shared = os.environ.get("SUBCOG_SHARED_DIR")
    return (Path(shared) if shared else ROOT.parent / "shared") / "data"


def sick_path(given: str | None = None) -> Path | None:
    path = Path(given) if given else OUT / "SICK.txt"
    return path if path.is_file() else None


def _sick_contradictions(path: Path) -> list[LabeledPair]:
    out = []
    with path.open(encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        col = {name: i for i, name in enumerate(header)}
        for line in f:
            row = line.rstrip("\n").split("\t")
            if len(row) == len(header) and row[col["SemEval_set"]] == "TEST" \
                    and row[col["entailment_label"]] == "CONTRADICTION":
                out.append(LabeledPair(row[col["sentence_A"]], row[col["sentence_B"]], False))
    return out


def _written_contradictions() -> list[LabeledPair]:
    out = []
    for line in (HERE / "contradictions.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            base, *others = [part.strip() for part in line.split(" | ")]
            out += [LabeledPair(base, other, False) for other in others]
    return out


def available(names: Iterable[str], sick: str | None = None) -> list[str]:
    """The names whose data is present here."""
    out = []
    for name in names:
        if name in PUBLIC and not (data_dir() / PUBLIC[name][0]).is_file():
            continue
        if name.startswith("SICK") and sick_path(sick) is None:
            continue
        out.append(name)
    return out


def load(name: str, sick: str | None = None) -> PairSet:
    """A named set with the cosine of each pair."""
    kinds = None
    if name in PUBLIC:
        rel, fmt = PUBLIC[name]
        pairs = read_pairs(data_dir() / rel, fmt)  # type: ignore[arg-type]
    elif name.startswith("coding"):
        coding = coding_pairs.split(coding_pairs.load(), name.split()[1])
        pairs = [LabeledPair(p.a, p.b, p.label) for p in coding]
        kinds = [p.kind for p in coding]
    elif name == "SICK test contradictions":
        path = sick_path(sick)
        if path is None:
            raise FileNotFoundError("SICK.txt: pass --sick PATH or put it at bench/out/SICK.txt")
        pairs = _sick_contradictions(path)
    elif name == "written contradictions":
        pairs = _written_contradictions()
    else:
        raise KeyError(name)
    return PairSet(name, pairs, cosines(pairs), kinds)


def cosines(pairs: list[LabeledPair]) -> np.ndarray:
    """The store's cosine of each pair, cached in bench/out/ by a hash of the texts."""
    key = hashlib.sha256("\x00".join(f"{p.a}\x01{p.b}" for p in pairs).encode()).hexdigest()[:16]
    cache = OUT / f"guard-cosines-{key}.npy"
    if cache.exists():
        cos = np.load(cache)
        if len(cos) == len(pairs):
            return cos
    from subcog_store.model.embedder import Embedder

    embedder = Embedder()
    texts = sorted({t for p in pairs for t in (p.a, p.b)})
    vectors = dict(zip(texts, embedder.embed_batch(texts)))
    cos = np.array([float(vectors[p.a] @ vectors[p.b]) for p in pairs], dtype=np.float64)
    OUT.mkdir(parents=True, exist_ok=True)
    np.save(cache, cos)
    return cos


class PhraseCache:
    """The store's phrase similarity with the real model, each phrase embedded once (bench/out/guard-phrases.pkl)."""

    path = OUT / "guard-phrases.pkl"

    def __init__(self) -> None:
        from subcog_store.model.embedder import Embedder

        self.embedder = Embedder()
        self.vectors: dict[str, np.ndarray] = pickle.loads(self.path.read_bytes()) if self.path.exists() else {}
        self.calls = 0

    def vector(self, phrase: str) -> np.ndarray:
        if phrase not in self.vectors:
            self.vectors[phrase] = self.embedder.embed(phrase)
        return self.vectors[phrase]

    def __call__(self, p: str, q: str) -> float:
        self.calls += 1
        return float(self.vector(p) @ self.vector(q))

    def save(self) -> None:
        OUT.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(pickle.dumps(self.vectors))
