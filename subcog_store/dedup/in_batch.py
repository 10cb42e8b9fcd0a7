"""Capturing many texts at once (a hook run, a JSONL file): each request validated on its own, repeats within
the batch found (the same hash, or the same meaning by the duplicate rule) and logged, only the texts that need
a vector embedded (long enough for the semantic tier and not already stored word for word, so a batch of
repeats never loads the model), in chunks, and the whole bounded by a deadline."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from subcog_store.core import Core
from subcog_store.db import locks
from subcog_store.dedup import write
from subcog_store.dedup.check import exact_tier, long_enough
from subcog_store.dedup.session_repeat import REPEAT_FLOOR, is_session_repeat
from subcog_store.errors import DatabaseError, InvalidInput, SubcogError
from subcog_store.inputs import CaptureRequest, Prepared, prepare_all

if TYPE_CHECKING:
    from subcog_store.config import Settings
    from subcog_store.dedup.check import CheckResult
    from subcog_store.dedup.write import CaptureResult

EMBED_CHUNK = 32   # texts embedded (then captured) at once
LATE_CHUNK = 8     # ... past the deadline (the minimum's work): short steps, so its limit is kept closely


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


def capture_many(core: Core, requests: Sequence[CaptureRequest], *, deadline: float | None = None,
                 dry_run: bool = False, dedupe_batch: bool = True, minimum: int = 0, limit: float | None = None,
                 at_least: int = 0, clock: Callable[[], float] = time.monotonic,
                 chunk: int = EMBED_CHUNK) -> list[Outcome]:
    """Capture (or, dry run, check) many texts: a bad request gets its error and the others go on; repeats within
    the batch are skipped and logged unless `dedupe_batch` is False (then each text meets only the store, in
    order). Stops cleanly at `deadline` (`clock()` seconds) once `minimum` requests are handled (a minimum of
    work), and at `limit` (None: none) even short of it once `at_least` are: later requests come back with
    `handled=False`. Past the deadline only texts the minimum still needs are embedded, LATE_CHUNK at a time; the
    model is loaded before a chunk is sized (its start-up can take the rest of the time). `chunk`: texts embedded at
    once before the deadline (smaller: the run stops sooner once its clock says so)."""
    outcomes = [Outcome(i) for i in range(len(requests))]
    for outcome, item in zip(outcomes, prepare_all(requests)):
        if isinstance(item, InvalidInput):
            outcome.error = item
        else:
            outcome.prepared = item
    if dedupe_batch:
        mark_exact_repeats([o for o in outcomes if o.prepared])
    kept = _Kept(core) if dedupe_batch else None
    handled = 0

    def due() -> int | None:
        """How many requests must be handled by now whatever the time (None: the time has not run out)."""
        if _over(limit, clock):
            return at_least
        return minimum if _over(deadline, clock) else None

    def stop() -> bool:
        return (needed := due()) is not None and handled >= needed

    start = 0
    while start < len(outcomes):   # embed a chunk, then capture it: progress comes in chunks
        if not stop() and not core.vectors.loaded and \
                any(_wants_vector(core, o) for o in outcomes[start:start + chunk]):
            core.vectors.embedder   # the model's start-up first (seconds on a busy machine): the chunk is sized after
        step = outcomes[start:start + (chunk if due() is None else min(chunk, LATE_CHUNK))]
        start += len(step)
        if not stop():
            wanted = [o.prepared for o in step if _wants_vector(core, o)]
            if (needed := due()) is not None:   # the minimum's: a text not embedded here is on its own if reached
                wanted = wanted[:needed - handled]
            core.vectors.embed_many([p.content for p in wanted], [p.content_hash for p in wanted])
        for outcome in step:
            if outcome.error:
                continue
            if stop():
                _leave(outcomes, outcome.index)
                return outcomes
            if kept is not None and outcome.repeat_of is None:
                kept.judge(outcome)
            handled += 1
            try:
                _handle(core, outcomes, outcome, dry_run, deadline, clock, handled <= max(minimum, at_least))
            except SubcogError as e:
                outcome.error = e
                if isinstance(e, DatabaseError):  # locked, read-only, full: the rest waits for the next run
                    _leave(outcomes, outcome.index + 1)
                    return outcomes
    return outcomes


def _over(deadline: float | None, clock: Callable[[], float]) -> bool:
    return deadline is not None and clock() > deadline


def _leave(outcomes: list[Outcome], first: int) -> None:
    """Requests from `first` on are not handled this time (an error of their own stays reported)."""
    for later in outcomes[first:]:
        later.handled = later.error is not None


def _wants_vector(core: Core, outcome: Outcome) -> bool:
    return outcome.prepared is not None and outcome.repeat_of is None and needs_vector(core, outcome)


def _handle(core: Core, outcomes: list[Outcome], outcome: Outcome, dry_run: bool, deadline: float | None,
            clock: Callable[[], float], required: bool = False) -> None:
    """Log a repeat, check (dry run) or capture one request; a write waits for the lock only as long as the
    deadline allows (a `required` one, of the minimum of work, briefly even past it)."""
    if deadline is not None:
        locks.at_most(core.con, max(deadline - clock(), locks.BEST_EFFORT_SECS if required else 0.0))
    if outcome.repeat_of is not None:
        if not dry_run:
            first = outcomes[outcome.repeat_of]
            matched = first.result.memory_id if first.result else None
            outcome.decision_id = write.log_repeat(core, outcome.prepared, first.prepared, matched,
                                                   outcome.similarity)
    elif dry_run:
        p = outcome.prepared
        outcome.check = write.check_duplicate(core, p.content, p.namespace, p.domain, log_check=False)
    else:
        outcome.result = write.capture_prepared(core, outcome.prepared)


class _Kept:
    """The vectors of the texts kept so far in this batch, per scope: a new text that says what one of them
    says (the duplicate rule) repeats it. One growing matrix per scope: each text costs one matrix-vector product."""

    def __init__(self, core: Core):
        self.core = core
        self.groups: dict[tuple[str, str], tuple[list[Outcome], list]] = {}

    def judge(self, outcome: Outcome) -> None:
        p = outcome.prepared
        vector = self.core.vectors.cached(p.content_hash) if _compared(p, self.core.settings) else None
        if vector is None:  # not embedded (an exact repeat, or no model): numpy is not even imported
            return
        import numpy as np

        from subcog_store.dedup.rule import judge   # here: loads only when a batch holds vectors to compare
        members, box = self.groups.setdefault(_scope(p), ([], [np.zeros((64, len(vector)), dtype=np.float32)]))
        matrix = box[0]
        if members:
            sims = matrix[:len(members)] @ vector
            threshold = self.core.settings.threshold(p.namespace)
            same_session = p.project_wide and p.session_id   # a hook capture: a session's restatements repeat
            floor = min(threshold, REPEAT_FLOOR) if same_session else threshold
            phrases = self.core.vectors.phrase_similarity()
            for j in np.argsort(-sims):
                if sims[j] < floor:
                    break
                older, sim = members[j].prepared.content, float(sims[j])
                semantic = long_enough(older, self.core.settings) and long_enough(p.content, self.core.settings)
                if (semantic and sim >= threshold and judge(older, p.content, sim, phrases).agrees) or \
                        (same_session and is_session_repeat(older, p.content, sim, phrases, p.from_summary)):
                    outcome.repeat_of, outcome.similarity = members[j].index, sim
                    return
        if len(members) == len(matrix):
            box[0] = matrix = np.concatenate([matrix, np.zeros_like(matrix)])
        matrix[len(members)] = vector
        members.append(outcome)


def mark_exact_repeats(outcomes: Sequence["Outcome"]) -> None:
    """A text repeated word for word (same normalized hash, same scope) repeats its first occurrence."""
    first: dict[tuple[str, str, str], int] = {}
    for o in outcomes:
        p = o.prepared
        key = (*_scope(p), p.content_hash)
        if key in first:
            o.repeat_of = first[key]
        else:
            first[key] = o.index


def _scope(p: Prepared) -> tuple[str, str]:
    """Where repeats of a batch are looked for: its namespace, or the whole domain for a project-wide capture."""
    return (p.domain, "*" if p.project_wide else p.namespace)


def _compared(p: Prepared, settings: "Settings") -> bool:
    """Compared by meaning with the batch's other texts: long enough for the semantic tier, or a hook capture
    (a session's short restatement, "The problem is Web3Auth caching the old JWKS.", still meets the session-repeat
    rule; only that rule, not the duplicate rule, judges a text under the semantic tier's length)."""
    return long_enough(p.content, settings) or bool(p.project_wide and p.session_id)


def needs_vector(core: Core, outcome: "Outcome") -> bool:
    """Compared by meaning (`_compared`), and not stored word for word already."""
    p = outcome.prepared
    return _compared(p, core.settings) and exact_tier(core.con, p.content_hash, p.namespace, p.domain) is None
