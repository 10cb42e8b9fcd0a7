"""Capturing many texts at once (a hook run, a JSONL file): each request validated on its own, repeats within
the batch found (the same hash, or the same meaning by the duplicate rule) and logged, only the texts that need
a vector embedded (long enough for the semantic tier and not already stored word for word, so a batch of
repeats never loads the model), in chunks, and the whole bounded by a deadline."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from subcog_store.dedup.check import exact_tier
from subcog_store.dedup.rule import judge
from subcog_store.errors import DatabaseError, InvalidInput, SubcogError
from subcog_store.inputs import CaptureRequest, Prepared, prepare_all

if TYPE_CHECKING:
    from subcog_store.dedup.check import CheckResult
    from subcog_store.store import CaptureResult, Store


@dataclass
class Outcome:
    """What `capture_many` did with one request (in order; `handled` False: the deadline came first)."""

    index: int
    prepared: Prepared | None = None
    result: "CaptureResult | None" = None    # captured, or a duplicate of what the store holds
    check: "CheckResult | None" = None       # dry run: the check alone
    repeat_of: int | None = None             # the earlier request of this batch it repeats
    similarity: float | None = None          # ... and how similar they are
    decision_id: int | None = None           # the in_batch decision row
    error: SubcogError | None = None
    handled: bool = True


def capture_many(store: "Store", requests: Sequence[CaptureRequest], *, deadline: float | None = None,
                 dry_run: bool = False, dedupe_batch: bool = True,
                 clock: Callable[[], float] = time.monotonic) -> list[Outcome]:
    """Capture (or, dry run, check) many texts: a bad request gets its error and the others go on; repeats within
    the batch are skipped and logged unless `dedupe_batch` is False (then each text meets only the store, in
    order). Stops cleanly at `deadline` (`clock()` seconds): later requests come back with `handled=False`."""
    outcomes = [Outcome(i) for i in range(len(requests))]
    for outcome, item in zip(outcomes, prepare_all(requests)):
        if isinstance(item, InvalidInput):
            outcome.error = item
        else:
            outcome.prepared = item
    ready = [o for o in outcomes if o.prepared]
    if dedupe_batch:
        mark_exact_repeats(ready)
    stop = embed_needed(store, [o for o in ready if o.repeat_of is None], deadline, clock)
    embedded_until = len(outcomes) if stop is None else stop
    if dedupe_batch:
        mark_semantic_repeats(store, [o for o in ready if o.repeat_of is None and o.index < embedded_until])
    for outcome in outcomes:
        if outcome.error:
            continue
        if outcome.index >= embedded_until or (deadline is not None and clock() > deadline):
            outcome.handled = False
            continue
        try:
            if outcome.repeat_of is not None:
                if not dry_run:
                    first = outcomes[outcome.repeat_of]
                    matched = first.result.memory_id if first.result else None
                    outcome.decision_id = store.log_repeat(outcome.prepared, first.prepared, matched,
                                                           outcome.similarity)
            elif dry_run:
                p = outcome.prepared
                outcome.check = store.check_duplicate(p.content, p.namespace, p.domain, log_check=False)
            else:
                outcome.result = store.capture_prepared(outcome.prepared)
        except SubcogError as e:
            outcome.error = e
            if isinstance(e, DatabaseError):  # locked, read-only, full: the rest waits for the next run
                for later in outcomes[outcome.index + 1:]:
                    later.handled = later.error is not None
                break
    return outcomes

EMBED_CHUNK = 32
BLOCK = 512   # rows of the similarity matrix computed at once


def mark_exact_repeats(outcomes: Sequence["Outcome"]) -> None:
    """A text repeated word for word (same normalized hash, same scope) repeats its first occurrence."""
    first: dict[tuple[str, str, str], int] = {}
    for o in outcomes:
        p = o.prepared
        key = (p.domain, p.namespace, p.content_hash)
        if key in first:
            o.repeat_of = first[key]
        else:
            first[key] = o.index


def needs_vector(store: "Store", outcome: "Outcome") -> bool:
    p = outcome.prepared
    if len(" ".join(p.content.split())) < int(store.settings.dedup_min_semantic_length):
        return False
    return exact_tier(store.con, p.content_hash, p.namespace, p.domain) is None


def embed_needed(store: "Store", outcomes: Sequence["Outcome"], deadline: float | None,
                 clock: Callable[[], float]) -> int | None:
    """Embed, in order and in chunks, the texts that need a vector. Returns None when all are ready, else the
    index of the first request whose text could not be embedded before the deadline."""
    if not store.settings.dedup_semantic_enabled:
        return None
    todo = [o for o in outcomes if needs_vector(store, o)]
    for start in range(0, len(todo), EMBED_CHUNK):
        chunk = todo[start:start + EMBED_CHUNK]
        if deadline is not None and clock() > deadline:
            return chunk[0].index
        store.embed_many([o.prepared.content for o in chunk], [o.prepared.content_hash for o in chunk])
        if store.embedder is None:  # no model: the text tier stands in, nothing to embed
            return None
    return None


def mark_semantic_repeats(store: "Store", outcomes: Sequence["Outcome"]) -> None:
    """A text that says what an earlier one of the batch says (same scope, the duplicate rule) repeats it."""
    import numpy as np

    groups: dict[tuple[str, str], list["Outcome"]] = {}
    for o in outcomes:
        if store.cached_vector(o.prepared.content_hash) is not None and needs_length(store, o):
            groups.setdefault((o.prepared.domain, o.prepared.namespace), []).append(o)
    phrase_similarity = store.phrase_similarity()
    for (_, namespace), members in groups.items():
        if len(members) < 2:
            continue
        threshold = store.settings.threshold(namespace)
        vectors = np.stack([store.cached_vector(o.prepared.content_hash) for o in members])
        kept = np.ones(len(members), dtype=bool)
        for start in range(0, len(members), BLOCK):
            sims = vectors[start:start + BLOCK] @ vectors[:start + BLOCK].T
            for row, i in enumerate(range(start, min(start + BLOCK, len(members)))):
                earlier = np.nonzero((sims[row, :i] >= threshold) & kept[:i])[0]
                for j in sorted(earlier, key=lambda j: -sims[row, j]):
                    older, newer = members[j].prepared.content, members[i].prepared.content
                    if judge(older, newer, float(sims[row, j]), phrase_similarity).agrees:
                        members[i].repeat_of, members[i].similarity = members[j].index, float(sims[row, j])
                        kept[i] = False
                        break


def needs_length(store: "Store", outcome: "Outcome") -> bool:
    return len(" ".join(outcome.prepared.content.split())) >= int(store.settings.dedup_min_semantic_length)
