"""The texts a store knows extraction finds no candidate in (`extraction/memo.py` fingerprints them, `db/hook_state`
keeps them): a capture that reads one again (a resumed session's copied history, import-history over transcripts
the hooks read, a piece read again) does not extract it again, which would find nothing again, so its candidates,
captures, decisions and report are what extracting everything gives.
"""
# Lazy imports: the extraction pipeline (its patterns compiled at import) loads when a text is extracted.
from __future__ import annotations

from typing import TYPE_CHECKING

from subcog_store.db import hook_state
from subcog_store.extraction import memo

if TYPE_CHECKING:
    import apsw

    from subcog_store.extraction.extract import Candidate
    from subcog_store.extraction.transcript import AssistantText


class KnownEmpty:
    """The texts a store knows extraction finds no candidate in (`extraction/memo.py`): they are not extracted
    again, which would find nothing again; `found`: those this run extracted and found nothing in (`_save` keeps
    them)."""

    def __init__(self, con: "apsw.Connection", min_confidence: float | None):
        self.con, self.floor, self.version = con, min_confidence, memo.code_version()
        self.found: set[int] = set()

    def extract(self, group: "list[AssistantText]") -> "list[Candidate]":
        """The candidates of the texts of `group`, as `extract_candidates` gives them for the whole group."""
        from subcog_store.extraction.extract import extract_candidates

        if self.version is None:
            return extract_candidates(group, min_confidence=self.floor, with_status=True)
        prints = [memo.fingerprint(self.version, part.text, part.kind, self.floor) for part in group]
        known = hook_state.known_empty(self.con, prints) | self.found
        todo = [(part, f) for part, f in zip(group, prints) if f not in known]
        if not todo:
            return []
        candidates = extract_candidates([part for part, _ in todo], min_confidence=self.floor, with_status=True)
        records = {c.offset for c in candidates}   # a record with a candidate: none of its texts is remembered
        self.found.update(f for part, f in todo if part.offset not in records)
        return candidates
