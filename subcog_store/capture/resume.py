"""Where a capture that stopped inside a transcript goes on (`Resume`: a record, a piece of it, how many of the
piece's candidates are done): a piece as it was extracted, never a candidate's own paragraph, so the next run
extracts it again whole and gets the same candidates, and the pieces after it are cut where they were: the
memories do not depend on where the runs stopped (issue 29.10)."""
from __future__ import annotations

import logging
from dataclasses import replace

from subcog_store.db.hook_state import Resume
from subcog_store.text.normalize import fingerprint

log = logging.getLogger("subcog_store.hook.capture")


def parts_of(candidates: list, group: list) -> list[tuple[int, int]]:
    """The part (record offset, piece start) each candidate was extracted from: where a run that stops among
    them goes on. A piece, not the candidate's paragraph: the next run extracts that piece again whole, so its
    candidates come out the same (a paragraph read without what precedes it loses its lead-in and its heading),
    and the pieces after it are cut where they were, however the runs were split."""
    keys, i = [], 0
    for c in candidates:
        while i + 1 < len(group) and (group[i + 1].offset, group[i + 1].char_start) <= (c.offset, c.char_start):
            i += 1
        keys.append((group[i].offset, group[i].char_start))
    return keys


def skip_done(candidates: list, keys: list, at: Resume) -> tuple[list, list, int]:
    """The candidates (and their parts) without those of the resumed piece the last run handled (`at.done` of
    them, the last one's fingerprint `at.mark`); when the piece no longer gives the same ones, all of them (the
    duplicate check keeps what was stored from being stored twice). Returns them and how many were left out."""
    if not at.done:
        return candidates, keys, 0
    here = [i for i, key in enumerate(keys) if key == (at.offset, at.chars)]
    if len(here) < at.done or fingerprint(candidates[here[at.done - 1]].text) != at.mark:
        log.info("resume mark not found: the piece is read again whole")
        return candidates, keys, 0
    left_out = set(here[:at.done])
    kept = [i for i in range(len(candidates)) if i not in left_out]
    return [candidates[i] for i in kept], [keys[i] for i in kept], at.done


def resume_at(candidates: list, keys: list, stopped: int, at: Resume, skipped: int) -> Resume:
    """Where to go on from the first candidate not handled (`stopped`): its piece, and how many of that piece's
    candidates are handled (those left out as done before this run included)."""
    piece = keys[stopped]
    handled = [c for c, key in zip(candidates[:stopped], keys) if key == piece]
    before = skipped if piece == (at.offset, at.chars) else 0
    if not handled and not before:
        return Resume(*piece)
    mark = fingerprint(handled[-1].text) if handled else at.mark
    return Resume(*piece, before + len(handled), mark)


def read_before(parts: list, resume: Resume) -> list:
    """The parts of the texts read that lie before where the next run resumes (what this run is done with)."""
    out = []
    for part in parts:
        if (part.offset, part.char_start) >= resume[:2]:
            break
        end = resume[1] - part.char_start if part.offset == resume[0] else len(part.text)
        out.append(part if end >= len(part.text) else replace(part, text=part.text[:end]))
    return out
