"""`eval-pairs`: measure the duplicate check on labeled pairs.

For each pair, `a` is captured into a fresh scope of a throw-away in-memory store and `b` is checked against
it with the current settings. Also reports a table over thresholds, with and without the changed-fact guard.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from subcog_store.dedup.rule import judge
from subcog_store.evaluation.pairs import LabeledPair
from subcog_store.model import provider
from subcog_store.store import Store
from subcog_store.text.namespaces import canonical_namespace

if TYPE_CHECKING:
    from subcog_store.dedup.check import CheckResult
    from subcog_store.model.embedder import Embedder

THRESHOLDS = (0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94, 0.96, 0.98)


@dataclass
class Counts:
    pairs: int = 0
    flagged: int = 0
    true_positive: int = 0
    false_positive: int = 0
    false_negative: int = 0

    def add(self, flagged: bool, label: bool) -> None:
        self.pairs += 1
        self.flagged += flagged
        self.true_positive += flagged and label
        self.false_positive += flagged and not label
        self.false_negative += label and not flagged

    def to_dict(self) -> dict:
        tp, fp, fn = self.true_positive, self.false_positive, self.false_negative
        return {**self.__dict__, "precision": round(tp / (tp + fp), 4) if tp + fp else None,
                "recall": round(tp / (tp + fn), 4) if tp + fn else None}


@dataclass
class EvalReport:
    current: Counts
    namespace: str
    threshold: float
    method: str
    table: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {**self.current.to_dict(), "namespace": self.namespace, "threshold": self.threshold,
                "method": self.method, "table": self.table}


def evaluate(pairs: Iterable[LabeledPair], namespace: str = "context", embedder: "Embedder | None" = None,
             environ: dict[str, str] | None = None, progress=None, embedders: str = provider.LOCAL) -> EvalReport:
    """Each pair judged in a throw-away store (all embedded first, in one call; `embedders`: where the model runs,
    model.provider); `progress(done, total)` counts the pairs judged."""
    pairs = list(pairs)
    store = Store(":memory:", embedder=embedder, environ=environ, embedders=embedders)
    default_ns = canonical_namespace(namespace)
    tick = progress or (lambda done, total: None)
    tick(0, len(pairs))
    store.embed_many([t for p in pairs for t in (p.a, p.b)]) if store.settings.dedup_semantic_enabled else None
    current = Counts()
    rows: list[tuple[float, bool, bool, bool]] = []  # similarity, changed fact, the whole rule agrees, label
    method = "embedding" if store.embedder is not None else "text"
    for i, pair in enumerate(pairs):
        tick(i, len(pairs))
        ns = canonical_namespace(pair.namespace) if pair.namespace else default_ns
        domain = f"pair-{i}"
        store.capture(pair.a, ns, domain, source="eval-pairs")
        result = store.check_duplicate(pair.b, ns, domain, log_check=False)
        current.add(result.is_duplicate, pair.label)
        similarity = result.similarity_score if result.is_duplicate else pair_similarity(store, pair, result)
        verdict = judge(pair.a, pair.b, similarity, store.phrase_similarity())
        rows.append((similarity, verdict.changed_fact is not None, verdict.agrees, pair.label))
    table = []
    for threshold in THRESHOLDS:
        plain, guard, full = Counts(), Counts(), Counts()
        for similarity, changed, agrees, label in rows:
            plain.add(similarity >= threshold, label)
            guard.add(similarity >= threshold and not changed, label)
            full.add(similarity >= threshold and agrees, label)
        table.append({"threshold": threshold, "plain": plain.to_dict(), "guard": guard.to_dict(),
                      "guard_support": full.to_dict()})
    threshold = store.settings.threshold(default_ns) if method == "embedding" else \
        float(store.settings.dedup_text_threshold)
    store.close()
    return EvalReport(current, default_ns, threshold, method, table)


def pair_similarity(store: "Store", pair: LabeledPair, result: "CheckResult") -> float:
    """The pair's cosine when the semantic tier embedded (the KNN reports only neighbours near its floor; the
    curve needs every threshold); else the text tier's best neighbour, or 0 when the tier was skipped."""
    if "semantic" in result.tiers_run:
        a, b = store.embed(pair.a), store.embed(pair.b)
        if a is not None and b is not None:
            return float(a @ b)
    return max((n.similarity for n in result.neighbours), default=0.0)


def format_report(report: EvalReport) -> str:
    c = report.current.to_dict()
    lines = [f"{k}: {c[k]}" for k in ("pairs", "flagged", "true_positive", "false_positive", "false_negative",
                                      "precision", "recall")]
    lines.insert(0, f"namespace {report.namespace}, threshold {report.threshold}, method {report.method} "
                    f"(current settings, guard on)")
    lines.append("")
    lines.append("| threshold | cosine only: flagged / P / R | + changed-fact guard | + guard + shared content |")
    lines.append("|---|---|---|---|")
    cell = lambda c: f"{c['flagged']} / {c['precision']} / {c['recall']}"  # noqa: E731
    for row in report.table:
        lines.append(f"| {row['threshold']:.2f} | {cell(row['plain'])} | {cell(row['guard'])} | "
                     f"{cell(row['guard_support'])} |")
    lines.append("(similarity: the pair's cosine, or its word overlap without the model; the last column is the rule "
                 "the store applies; the lines above the table are the full check with the current settings)")
    return "\n".join(lines)
