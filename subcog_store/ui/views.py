"""What each page of `subcog-store ui` shows, read from the store (`db/views.py`); the
changes go through the same logged operations as the CLI (`review.confirm`, `review.reverse`, `Store.forget`)."""
# Lazy imports: what only one page needs (recall for search, the review operations) loads with it.
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from subcog_store.db import memories as db_memories, views as db_views
from subcog_store.db.memories import Memory

if TYPE_CHECKING:
    from subcog_store.store import Store

PAGE = 50
STATES = ("current", "outdated", "retired", "all")


def projects(store: "Store") -> list[dict[str, Any]]:
    return db_views.projects(store.con)


def namespaces(store: "Store", domain: str) -> list[dict[str, Any]]:
    return db_views.namespaces(store.con, domain)


def memories(store: "Store", domain: str, namespace: str | None, state: str, offset: int) -> list[Memory]:
    return db_views.memories(store.con, domain, namespace or None, state if state in STATES else "current",
                             PAGE + 1, max(offset, 0))


def memory(store: "Store", memory_id: str) -> dict[str, Any]:
    """A memory with its history: the decisions that touched it, what it replaced, what replaced it."""
    m = store.get(memory_id)
    successor = None
    if m.successor_id:
        try:
            successor = store.get(m.successor_id)
        except Exception:  # noqa: BLE001 - a successor removed by a hard delete: shown as its id
            successor = None
    return {"memory": m, "successor": successor,
            "predecessors": db_views.predecessors(store.con, m.id),
            "decisions": db_views.memory_decisions(store.con, m.id)}


def decisions(store: "Store", show_all: bool, domain: str | None, offset: int) -> list[dict[str, Any]]:
    return db_views.decisions(store.con, show_all, domain or None, PAGE + 1, max(offset, 0))


def sessions(store: "Store", limit: int = 200) -> list[dict[str, Any]]:
    from subcog_store.recall.inject import CHARS_PER_TOKEN

    rows = db_views.sessions(store.con, limit)
    for row in rows:
        row["captured_tokens"] = -(-row["captured_chars"] // CHARS_PER_TOKEN)
    return rows


def search(store: "Store", query: str, domain: str, namespace: str | None) -> dict[str, Any]:
    """The project's memories for `query` ranked as the hooks rank them, every component of each score, and
    which of them the prompt hook would inject (its abstain gate, its limits), without logging a recall."""
    from subcog_store.recall import inject

    found = store.search(query, domain=domain, namespace=namespace or None, limit=20)
    injected = inject.prompt_context(store, query, domain, None, use_model=True) if not namespace else None
    s = store.settings
    return {"found": found, "hits": [h.to_dict(explain=True) for h in found.hits],
            "injected": set(injected.memory_ids) if injected else None,
            "injected_reason": injected.reason if injected else None,
            "gate": _gate(found, float(s.recall_min_similarity), float(s.recall_min_text_match),
                          db_memories.active_in_domain(store.con, domain)),
            "limits": f"at most {int(s.recall_prompt_limit)} memories, {int(s.recall_prompt_tokens)} tokens"}


def _gate(found, floor: float, text_floor: float, memories: int | None = None) -> str:
    """The prompt hook's abstain gate for this search, in numbers (`memories`: the project's, which narrow its
    margin)."""
    from subcog_store.recall import inject

    if found.method != "hybrid":
        return f"word match >= {text_floor:.2f}"
    bar = getattr(inject, "prompt_bar", None)
    if bar is None:
        return f"cosine >= {floor:.2f}"
    text = (f"cosine >= {bar(list(found.vector_scores), floor, memories):.2f}: the floor {floor:.2f}, or above what this prompt "
            "scores against the memories not about it")
    level = getattr(inject, "prompt_level", lambda _: None)(list(found.vector_scores))
    if level is not None and hasattr(inject, "COVERAGE_GATE"):
        text += (f"; or coverage >= {inject.COVERAGE_GATE:.2f} with cosine >= "
                 f"{max(inject.COVERAGE_FLOOR, level):.2f} (a memory that holds the prompt's words)")
    return text


def formula() -> str:
    """How a search score is made, in the ranking module's own constants ('' if they are not the ones known)."""
    from subcog_store.recall import fusion

    try:
        return (f"score = cosine + {fusion.W_COVERAGE:g} × coverage^{fusion.COVERAGE_POWER:g} (coverage: the "
                "IDF-weighted share of the prompt's content words the memory holds), times its source's weight; "
                "an outdated fact just below its successor")
    except AttributeError:   # the ranking changed its constants: the components are still shown
        return ""

def tags(memory: Memory) -> str:
    return ", ".join(memory.tags) if memory.tags else ""
