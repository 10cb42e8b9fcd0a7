"""Incremental reading of a Claude Code transcript (JSONL): the assistant's own text since the last run, and the
compaction summaries the client wrote (records with `isCompactSummary: true`, `kind` "summary").

The file is streamed in binary, one line at a time; each line is decoded and parsed on its own, so a bad line
costs only itself. Offsets are byte offsets at line boundaries, safe to store and resume from.
"""
from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass, field

__all__ = ["AssistantText", "ReadResult", "TranscriptError", "read_assistant_texts"]

MAX_LINE = 32 << 20  # a longer line is skipped as bad without being held in memory
_CHUNK = 1 << 20


class TranscriptError(Exception):
    """The transcript file cannot be opened or read."""


@dataclass(frozen=True)
class AssistantText:
    """The text blocks of one assistant record (or compaction summary record), joined by blank lines."""

    text: str
    uuid: str | None
    timestamp: str | None
    session_id: str | None
    line_no: int  # 1-based, counted from the start offset of the read
    is_sidechain: bool
    offset: int = 0  # byte offset where the record's line starts (a run that stops before it resumes there)
    kind: str = "assistant"  # "summary": the client's compaction summary (an `isCompactSummary` record)
    char_start: int = 0  # where `text` starts in the record's whole text (a piece of a long record)


@dataclass
class ReadResult:
    """What one read found, and where the next read resumes."""

    texts: list[AssistantText] = field(default_factory=list)
    next_offset: int = 0  # line boundary; a torn last line is not consumed
    records: int = 0  # complete non-blank lines consumed (bad ones included)
    bad_lines: int = 0  # not UTF-8, not JSON, not a JSON object, or longer than MAX_LINE
    truncated: bool = False  # stopped early on max_bytes or deadline


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _valid_text(text: str) -> str:
    """JSON may carry lone surrogates (a torn emoji, "\\ud83d"); they cannot be stored: make them '?'."""
    return text.encode("utf-8", "replace").decode("utf-8")


def _text_of(message: object) -> str:
    """Joined `text` blocks of a message; every other block kind is ignored."""
    return _valid_text(_raw_text_of(message))


def _raw_text_of(message: object) -> str:
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    parts = [
        b["text"].strip()
        for b in content
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    return "\n\n".join(p for p in parts if p)


def _parse(raw: bytes) -> dict | None:
    """The JSON object on one line, or None when the line is not one."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _skip_rest_of_line(f) -> tuple[int, bool]:
    """Consume up to and including the next newline; returns (bytes read, newline found)."""
    total = 0
    while True:
        chunk = f.readline(_CHUNK)
        total += len(chunk)
        if not chunk:
            return total, False
        if chunk.endswith(b"\n"):
            return total, True


def read_assistant_texts(
    path: str | os.PathLike[str],
    start_offset: int = 0,
    *,
    include_sidechain: bool = False,
    max_bytes: int = 64 << 20,
    deadline: float | None = None,
) -> ReadResult:
    """Read assistant text from `path` starting at byte `start_offset`.

    Only `type == "assistant"` records (main thread unless `include_sidechain`) and their `text` blocks count,
    plus compaction summaries (`isCompactSummary: true`, whatever their type or sidechain flag: `kind="summary"`).
    A start offset past the end of the file (file replaced or truncated) restarts at 0. Reading stops, with
    `truncated=True`, once `max_bytes` have been consumed (at least one line is always read) or when
    `time.monotonic()` passes `deadline`. Raises TranscriptError when the file cannot be opened or read.
    """
    try:  # non-blocking: a FIFO or device must not hang the hook before the regular-file check
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise TranscriptError(f"cannot open transcript {os.fspath(path)!r}: {e.strerror or e}") from e
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise TranscriptError(f"cannot open transcript {os.fspath(path)!r}: not a regular file")
        f = os.fdopen(fd, "rb")
    except OSError as e:
        os.close(fd)
        raise TranscriptError(f"cannot open transcript {os.fspath(path)!r}: {e.strerror or e}") from e
    try:
        with f:
            size = info.st_size
            start = start_offset if 0 <= start_offset <= size else 0
            f.seek(start)
            return _read(f, start, size, include_sidechain, max_bytes, deadline)
    except OSError as e:
        raise TranscriptError(f"cannot read transcript {os.fspath(path)!r}: {e.strerror or e}") from e


def _read(
    f, start: int, size: int, include_sidechain: bool, max_bytes: int, deadline: float | None
) -> ReadResult:
    result = ReadResult(next_offset=start)
    pos = start
    line_no = 0
    while True:
        over = pos - start >= max_bytes or (deadline is not None and time.monotonic() > deadline)
        if over and start < pos < size:
            result.truncated = True
            break
        raw = f.readline(MAX_LINE)
        if not raw:
            break
        line_no += 1
        complete = raw.endswith(b"\n")
        if not complete and len(raw) == MAX_LINE:  # over-long line: skip it without holding it
            extra, complete = _skip_rest_of_line(f)
            if not complete:  # still being written: leave it for a later run
                break
            pos += len(raw) + extra
            result.records += 1
            result.bad_lines += 1
            result.next_offset = pos
            continue
        body = raw.strip()
        record = _parse(body) if body else None
        if not complete and body and record is None:
            break  # torn last line: do not consume
        line_start = pos
        pos += len(raw)
        result.next_offset = pos
        if not body:
            continue
        result.records += 1
        if record is None:
            result.bad_lines += 1
            continue
        _collect(record, line_no, line_start, include_sidechain, result.texts)
    return result


def _collect(record: dict, line_no: int, offset: int, include_sidechain: bool, out: list[AssistantText]) -> None:
    sidechain = record.get("isSidechain") is True
    if record.get("isCompactSummary") is True:
        kind = "summary"
    elif record.get("type") != "assistant" or (sidechain and not include_sidechain):
        return
    else:
        kind = "assistant"
    text = _text_of(record.get("message"))
    if text:
        out.append(
            AssistantText(
                text=text,
                uuid=_str(record.get("uuid")),
                timestamp=_str(record.get("timestamp")),
                session_id=_str(record.get("sessionId")),
                line_no=line_no,
                is_sidechain=sidechain,
                offset=offset,
                kind=kind,
            )
        )
