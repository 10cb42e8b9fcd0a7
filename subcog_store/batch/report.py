"""What a batch run found and did: its clusters and figures, as data (the CLI makes the text)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


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

    @property
    def removed(self) -> list[str]:
        return [m for m in self.members if m != self.survivor]

    def to_dict(self) -> dict:
        data = asdict(self)
        data["similarity"] = round(self.similarity, 4)
        data["max_similarity"] = round(self.max_similarity, 4)
        data["edges"] = [{"a": a, "b": b, "similarity": round(s, 4)} for a, b, s in self.edges]
        data["removed"] = self.removed
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
        data = {k: v for k, v in asdict(self).items() if k != "clusters"}
        data["clusters"] = [c.to_dict() for c in self.clusters]
        data["cluster_count"] = len(self.clusters)
        data["merged_clusters"] = self.merged_clusters
        data["duration_s"] = round(self.duration_s, 3)
        data["removal_rate"] = round(self.removal_rate, 4)
        return data
