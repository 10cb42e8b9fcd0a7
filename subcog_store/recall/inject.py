"""What the hooks hand the model: few memories, relevant, current, and nothing when nothing fits.

- `start_index`: for a new, resumed or cleared session, a compact index of the project's most important current
  memories (one line each, with its URN) within SUBCOG_RECALL_START_TOKENS.
- `prompt_context`: for a prompt, the memories that clear the abstain gate (`prompt_bar`: a cosine of at least
  SUBCOG_RECALL_MIN_SIMILARITY that stands `gate_margin` above the prompt's level in this store (GATE_MARGIN,
  narrower in a large project); or `holds_the_words`:
  the memory holds COVERAGE_GATE of the prompt's IDF-weighted content words and its cosine reaches the prompt's
  level and COVERAGE_FLOOR; without the model a word match >= SUBCOG_RECALL_MIN_TEXT_MATCH), at most
  SUBCOG_RECALL_PROMPT_LIMIT within SUBCOG_RECALL_PROMPT_TOKENS; for most prompts nothing. A memory the hooks
  took from a transcript also needs CAPTURED_FLOOR; passages of the sessions' text fill the places left
  (`_add_session_text`).
A memory is injected once per session; memories the session captured itself stay out until it is compacted; all
hooks of a session share SUBCOG_RECALL_SESSION_TOKENS. Every call is recorded in `recall_log` (ids, scores,
tokens, the query's fingerprint, never its text). Secrets are redacted again on the way out.
"""
# Lazy imports: the secret patterns compile only when something is injected (most prompts get nothing).
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from subcog_store.clock import iso, parse_iso
from subcog_store.db import citations, memories, recall_log
from subcog_store.db.connection import immediate
from subcog_store.db.deferred import Write, write_now
from subcog_store.db.memories import Memory
from subcog_store.recall.scopes import search_with_user_scope
from subcog_store.recall.session_search import excerpt, search_session_text
from subcog_store.scope import USER_DOMAIN
from subcog_store.text.textsim import significant_tokens
from subcog_store.text.normalize import fingerprint

if TYPE_CHECKING:
    from subcog_store.core import Core

PROMPT_HEADER = "Memories from earlier sessions of this project that may bear on this prompt (subcog):"
CHARS_PER_TOKEN = 4
LINE_CHARS = 200             # an index or context line is cut here
INDEX_CANDIDATES = 200
GATE_MARGIN = 0.14           # prompt_bar: chosen by bench/recall/gate_lab.py (train, both sets, three sizes)
MARGIN_SCALE = 0.50          # ... narrowed in a large project (`gate_margin`): scale_lab.py, train, four sizes
SMALL_STORE_FLOOR = 0.37     # ... a store of fewer than six memories: the earlier absolute gate
COVERAGE_GATE = 0.40         # holds_the_words: chosen by bench/recall/scale_lab.py (train, both sets, three sizes)
COVERAGE_FLOOR = 0.34        # ... its cosine floor (same choice)
# On a capture store (memories the hooks took from transcripts, beside the sessions' text), chosen by
# bench/capture/train_gate_lab.py on the TRAINING sessions' questions (bench/capture/train_questions and
# train_short, pooled), judged held out:
CAPTURED_FLOOR = 0.52        # the cosine a memory the hooks took from a transcript needs (besides the bar)
CAPTURED_SOURCES = frozenset({"pre-compact-hook", "session-end-hook", "compact-summary", "import-history"})
PASSAGE_MARGIN = 0.02        # a passage of the sessions' text: this far above the prompt's level (and the floor)
PASSAGE_MATCH = 0.40         # ... holding this share of the prompt's significant words
DECAY_BASE, DECAY_DAYS = 0.95, 30.0      # the session-start index: importance decayed with age (original design)
RECENCY_HALF_LIFE_DAYS = 180.0


def tokens(text: str) -> int:
    """Estimated tokens: 4 characters a token."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass
class Recall:
    """What one hook call hands the model, and why."""

    text: str = ""
    memory_ids: list[str] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    method: str | None = None
    reason: str | None = None

    @property
    def tokens(self) -> int:
        return tokens(self.text)


def line(memory: Memory, outdated: bool = False, code_mark: str | None = None,
         asked: set[str] | frozenset[str] = frozenset()) -> str:
    """One memory as one line: namespace, text (cut: a long memory shows the parts that hold the prompt's words
    `asked`, `text/shown_parts.py`), URN; and why it may be outdated, when it may be."""
    from subcog_store.text.shown_parts import answering_line   # imported when something is injected

    text = answering_line(memory.content, asked, LINE_CHARS)
    note = f" (earlier fact; updated by {memory.successor_id})" if outdated else ""
    if code_mark:
        note += f" (possibly outdated: {code_mark[:LINE_CHARS]})"
    return f"- [{memory.namespace}] {text} ({memory.urn}){note}"


class SessionState:
    """What a session has already been given, and which of its own memories are not yet recallable: the
    database's rows, plus the bookkeeping not written yet (spooled while the store was locked, and `pending`,
    this hook's own)."""

    def __init__(self, store: "Core", session_id: str | None, pending: list[Write] | tuple = ()):
        self.session_id = session_id
        given = recall_log.given(store.con, store.path, session_id, pending) if session_id else None
        self.injected = given.injected if given else set()
        self.used_tokens = given.tokens if given else 0
        compacted = given.compacted_at if given else None
        self.compacted_at = parse_iso(compacted) if compacted else None

    def excluded(self, memory: Memory) -> bool:
        """Already injected, or captured by this session since its last compaction (no feedback loop)."""
        if memory.id in self.injected:
            return True
        if self.session_id and memory.session_id == self.session_id:
            return self.compacted_at is None or parse_iso(memory.created_at) > self.compacted_at
        return False

    def budget(self, store: "Core", per_call: int) -> int:
        return max(0, min(per_call, int(store.settings.recall_session_tokens) - self.used_tokens))


def prompt_bar(vector_scores: list[float], floor: float, memories: int | None = None) -> float:
    """The cosine a memory needs to be injected into a prompt: at least `floor`, and `gate_margin(memories)` above
    what this prompt scores against the memories that are not about it, estimated from the store itself (the mean
    cosine of the vector side's ranks 6-15; with fewer than six memories, the floor alone or SMALL_STORE_FLOOR).
    A fixed cosine abstains less and less as a project grows (more memories, more near misses); this bar rises
    with the store's own level. Chosen by bench/recall/gate_lab.py on TRAIN of both sets at 0, 200 and 10,000
    planted memories (the margin's narrowing: `gate_margin`)."""
    level = prompt_level(vector_scores)
    return max(floor, SMALL_STORE_FLOOR) if level is None else max(floor, level + gate_margin(memories))


def gate_margin(memories: int | None) -> float:
    """How far above the prompt's level the best match must stand in a project of `memories` memories: GATE_MARGIN,
    narrowed to MARGIN_SCALE / sqrt(2 ln memories) in a large project. Among more memories the best of those that
    are not about the prompt stands closer to the level (the gap between the top order statistics of N samples
    shrinks as 1 / sqrt(2 ln N)): the best cosine of a prompt nothing answers stands 0.19-0.25 above its level
    (95th percentile) in the sets' own projects, 0.10-0.14 among 10,000 or 100,000 memories, while the answers
    the fixed margin missed there stood 0.07-0.12 above it. MARGIN_SCALE chosen by bench/recall/scale_lab.py
    (`choose_margin_scale`) on TRAIN of both sets at 0, 200, 10,000 and 100,000 planted memories (0.117 at 10,000,
    0.104 at 100,000; GATE_MARGIN below about 600 memories); unknown size
    (None): GATE_MARGIN."""
    if not memories or memories < 3:
        return GATE_MARGIN
    return min(GATE_MARGIN, MARGIN_SCALE / math.sqrt(2 * math.log(memories)))


def prompt_level(vector_scores: list[float]) -> float | None:
    """What this prompt scores against the memories that are not about it: the mean cosine of the vector side's
    ranks 6-15 (None with fewer than six memories)."""
    tail = vector_scores[5:15]
    return sum(tail) / len(tail) if tail else None


def holds_the_words(coverage: float, similarity: float | None, level: float | None) -> bool:
    """The gate's second way in: a memory that holds COVERAGE_GATE of the prompt's IDF-weighted content words (its
    rare words, `recall.fusion.coverage`) passes with a cosine at the prompt's own level (and COVERAGE_FLOOR)
    rather than GATE_MARGIN above it. Among 10,000 planted memories near misses push the bar up and the answer,
    often a memory that says the prompt's own words, fell below it (answers injected 0.54-0.57 on train); with
    this way in 0.64, silence >= 0.94 in every train group (bench/recall/RESULTS.md). Off in a store of fewer than
    six memories."""
    if level is None or similarity is None:
        return False
    return coverage >= COVERAGE_GATE and similarity >= max(COVERAGE_FLOOR, level)


def prompt_context(store: "Core", prompt: str, domain: str, session_id: str | None, use_model: bool,
                   header: str = PROMPT_HEADER) -> Recall:
    """The memories relevant to a prompt that clear the abstain gate (see the module docstring); `header`
    heads them (a failed command's error is searched the same way)."""
    s = store.settings
    state = SessionState(store, session_id)
    budget = state.budget(store, int(s.recall_prompt_tokens))
    if budget <= 0 or int(s.recall_prompt_limit) <= 0:
        return Recall(reason="token budget used up")
    found = search_with_user_scope(store, prompt, domain=domain, use_model=use_model,
                                   limit=max(3 * int(s.recall_prompt_limit), 10) + len(state.injected))
    bar = level = None
    if found.method == "hybrid":
        size = memories.active_in_domain(store.con, domain) if found.vector_scores else None
        bar = prompt_bar(found.vector_scores, float(s.recall_min_similarity), size)
        level = prompt_level(found.vector_scores)
        gate = [h for h in found.hits if (h.similarity or -1.0) >= captured_bar(h.memory, bar)
                or holds_the_words(h.coverage, h.similarity, level)]
    else:
        gate = [h for h in found.hits if (h.text_match or 0.0) >= float(s.recall_min_text_match)
                and (h.text_rank is not None)]
    answered_before = bool(gate)   # memories answer, perhaps all given earlier in the session
    gate = [h for h in gate if not state.excluded(h.memory)]
    chosen = {h.memory.id for h in gate}
    gate = [h for h in gate if not (h.outdated_by and h.outdated_by in chosen)]  # the successor says it all
    recall = Recall(method=found.method)
    lines: list[str] = []
    shown: list[str] = []
    asked = significant_tokens(prompt)
    for h in gate[: int(s.recall_prompt_limit)]:
        candidate = line(h.memory, outdated=bool(h.outdated_by), code_mark=h.code_mark, asked=asked)
        if tokens("\n".join([header, *lines, candidate])) > budget:
            recall.reason = "token budget"
            break
        lines.append(candidate)
        shown.append(h.memory.content)
        recall.memory_ids.append(h.memory.id)
        recall.scores.append(round(h.similarity if found.method == "hybrid" else (h.text_match or 0.0), 4))
    if recall.reason is None and s.session_text_enabled and (lines or not answered_before):
        passage_bar = bar if bar is None or level is None else max(float(s.recall_min_similarity),
                                                                    level + PASSAGE_MARGIN)
        _add_session_text(store, prompt, domain, state, passage_bar, lines, recall, budget, shown)   # places left
    if lines:
        recall.text = "\n".join([header, *lines])
    elif recall.reason is None:
        recall.reason = "abstained: nothing relevant enough" if found.hits else "abstained: nothing found"
    if found.note and found.method == "text":
        recall.reason = f"{recall.reason + '; ' if recall.reason else ''}{found.note}"
    return recall


def captured_bar(memory: Memory, bar: float) -> float:
    """The cosine `memory` needs: `bar`, and CAPTURED_FLOOR for a memory the hooks took from a transcript (a
    session's sentence, often a list or a paragraph, stands near many prompts of its project)."""
    return max(bar, CAPTURED_FLOOR) if memory.source in CAPTURED_SOURCES else bar


def _add_session_text(store: "Core", prompt: str, domain: str, state: SessionState, bar: float | None,
                      lines: list[str], recall: Recall, budget: int, shown: list[str] = ()) -> None:
    """Into the places the memories left (`recall_prompt_limit` lines; none when the memories that answer were all
    given earlier in this session), the sessions' text that clears `bar` (the floor and PASSAGE_MARGIN above the
    prompt's level; None: the text side alone) and also holds PASSAGE_MATCH of the prompt's words (a long text is
    near many prompts; recall/session_search.py), one passage each, below the memories: the assistant's text, a
    summary or the user's own words (a question the user asked answers nothing: not offered), never the current
    session's own, never one already given in it, and without the sentences of the memories `shown` above it
    (nothing left that holds a word of the prompt: none)."""
    s = store.settings
    hybrid = bar is not None
    asked = significant_tokens(prompt)
    for h in search_session_text(store, prompt, domain=domain, limit=int(s.recall_prompt_limit),
                                 use_model=hybrid, exclude_session=state.session_id):
        by_words = h.text_match >= (PASSAGE_MATCH if hybrid else float(s.recall_min_text_match)) \
            and h.text_rank is not None
        passes = by_words and (not hybrid or (h.similarity or -1.0) >= bar)
        question = h.role == "user" and h.content.rstrip().endswith("?")
        if not passes or question or h.ref in state.injected:
            continue
        if len(lines) >= int(s.recall_prompt_limit):
            break
        rest = without_shown(h.content, shown)
        if not asked & significant_tokens(rest):   # the memories above already say what it holds of the prompt
            continue
        candidate = f"- [earlier session, {h.role}{', ' + h.said_at[:10] if h.said_at else ''}] " \
                    f"{excerpt(rest, prompt)} ({h.ref})"
        if tokens("\n".join([PROMPT_HEADER, *lines, candidate])) > budget:
            recall.reason = "token budget"
            break
        lines.append(candidate)
        recall.memory_ids.append(h.ref)
        recall.scores.append(round(h.similarity if hybrid else h.text_match, 4))


def without_shown(content: str, shown: list[str]) -> str:
    """`content` without the text of the memories `shown` (whitespace folded): what it adds to them."""
    rest = " ".join(content.split())
    for memory in shown:
        rest = rest.replace(" ".join(memory.split()), " ")
    return " ".join(rest.split())


def start_index(store: "Core", domain: str, session_id: str | None, budget_tokens: int | None = None,
                header: str | None = None, pending: list[Write] | tuple = ()) -> Recall:
    """The project's most important current memories, one line each, within the start budget (`pending`: this
    hook's bookkeeping not written yet, see SessionState)."""
    s = store.settings
    state = SessionState(store, session_id, pending)
    budget = state.budget(store, int(s.recall_start_tokens) if budget_tokens is None else budget_tokens)
    if budget <= 0:
        return Recall(method="index", reason="token budget used up")
    now = store.clock()
    rows = [m for scope in dict.fromkeys([domain, USER_DOMAIN])   # the project's, then the preferences
            for m in memories.most_important(store.con, scope, INDEX_CANDIDATES)]
    marked = citations.marks(store.con, [m.id for m in rows])   # the code no longer bears them out
    current = [m for m in rows if not m.successor_id and m.id not in marked and not state.excluded(m)]

    def weight(m: Memory) -> float:
        age_days = max(0.0, now - parse_iso(m.created_at)) / 86400
        return m.importance * DECAY_BASE ** (age_days / DECAY_DAYS) * (1 + 0.1 * 0.5 ** (age_days /
                                                                                        RECENCY_HALF_LIFE_DAYS))
    current.sort(key=weight, reverse=True)
    header = header or ("Memories of this project from earlier sessions (subcog; most important first; "
                        "`subcog-store show <URN>` or the subcog MCP tools for more):")
    recall = Recall(method="index")
    lines: list[str] = []
    for m in current:
        candidate = line(m)
        if tokens("\n".join([header, *lines, candidate])) > budget:
            recall.reason = "token budget"
            break
        lines.append(candidate)
        recall.memory_ids.append(m.id)
        recall.scores.append(round(weight(m), 4))
    if lines:
        recall.text = "\n".join([header, *lines])
    elif recall.reason is None:
        recall.reason = "no memories for this project yet"
    return recall


def log_row(store: "Core", recall: Recall, *, hook: str, domain: str, session_id: str | None,
            query: str | None, started: float) -> Write:
    """The recall_log row of one call (the query's fingerprint, never its text), to write now or defer."""
    return recall_log.entry(recalled_at=iso(store.clock()), session_id=session_id, hook=hook, domain=domain,
                            query_fingerprint=fingerprint(query) if query else None, method=recall.method,
                            memory_ids=recall.memory_ids, scores=recall.scores, tokens=recall.tokens,
                            reason=recall.reason, duration_ms=round((time.perf_counter() - started) * 1000, 3))


def log(store: "Core", recall: Recall, *, hook: str, domain: str, session_id: str | None, query: str | None,
        started: float) -> None:
    """Write one recall_log row now (waiting as the connection's busy timeout says)."""
    row = log_row(store, recall, hook=hook, domain=domain, session_id=session_id, query=query, started=started)
    with immediate(store.con):
        write_now(store.con, [row])


def compaction(store: "Core", session_id: str) -> Write:
    """The session was compacted now: what it captured so far becomes recallable in it."""
    return recall_log.compaction(session_id, iso(store.clock()))


def record_compaction(store: "Core", session_id: str) -> None:
    """Record the compaction now (waiting as the connection's busy timeout says)."""
    with immediate(store.con):
        write_now(store.con, [compaction(store, session_id)])
