"""Time: an injectable clock (unix seconds) and the ISO-8601 form stored in the database."""
from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Callable

Clock = Callable[[], float]
system_clock: Clock = time.time


def iso(ts: float) -> str:
    """Unix seconds as ISO-8601 UTC with milliseconds, e.g. 2026-11-22T01:35:52.123Z."""
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_iso(text: str) -> float:
    """The stored form back to unix seconds (fromisoformat: ~10x faster than strptime, which ranking calls
    for every candidate)."""
    if not text.endswith("Z") or "T" not in text:
        raise ValueError(f"not a stored timestamp: {text!r}")
    return datetime.fromisoformat(text[:-1]).replace(tzinfo=timezone.utc).timestamp()
