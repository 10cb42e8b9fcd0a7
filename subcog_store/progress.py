"""Progress of a long command: a bar on a terminal (stderr), nothing when stderr is not a terminal or `--quiet`.

    with bar(total, "import-history", unit="MB", scale=1 << 20, quiet=args.quiet) as p:
        for item in items:
            ...
            p.advance(size)

Redrawn at most every REDRAW_SECS, on one line (carriage return); `note` prints a line above the bar. The clock is
injectable so tests need no sleep. Imports nothing heavy (a hook never uses it, a command always may).
"""
from __future__ import annotations

import io
import os
import sys
import time
from typing import Callable, TextIO

REDRAW_SECS = 0.1
WIDTH = 28


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


class Progress:
    """A progress bar; a no-op unless `enabled`. `total` 0 or None: a count without a bar."""

    def __init__(self, total: float | None, label: str, *, unit: str = "", scale: float = 1,
                 stream: TextIO | None = None, enabled: bool = True, clock: Callable[[], float] = time.monotonic):
        self.total, self.label, self.unit, self.scale = total or 0, label, unit, scale
        self.stream = stream if stream is not None else sys.stderr
        self.enabled, self.clock = enabled, clock
        self.done = 0.0
        self.detail = ""
        self.started = clock()
        self._drawn_at: float | None = None
        self._width = 0

    # -- use ----------------------------------------------------------------------------------------------------
    def advance(self, amount: float = 1, detail: str | None = None) -> None:
        self.set(self.done + amount, detail)

    def set(self, done: float, detail: str | None = None) -> None:
        self.done = done
        if detail is not None:
            self.detail = detail
        if self.enabled:
            now = self.clock()
            if self._drawn_at is None or now - self._drawn_at >= REDRAW_SECS:
                self._draw(now)

    def update(self, done: float, total: float) -> None:
        """A `(done, total)` callback of the library (reembed, redact, move-domain, eval-pairs)."""
        self.total = total
        self.set(done)

    def note(self, text: str) -> None:
        """A line printed above the bar (or plainly, without one)."""
        if self.enabled:
            self._clear()
            print(text, file=self.stream, flush=True)
            self._draw(self.clock())
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        if self.enabled and self._drawn_at is not None:
            self._draw(self.clock())
            self.stream.write("\n")
            self.stream.flush()
            self._drawn_at = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- drawing ------------------------------------------------------------------------------------------------
    def line(self, now: float | None = None) -> str:
        """The text of the bar as it is now."""
        elapsed = (self.clock() if now is None else now) - self.started
        amount = f"{self.done / self.scale:,.0f}" if self.scale != 1 else f"{self.done:,.0f}"
        if self.total:
            share = min(max(self.done / self.total, 0.0), 1.0)
            filled = int(share * WIDTH)
            total = f"{self.total / self.scale:,.0f}" if self.scale != 1 else f"{self.total:,.0f}"
            eta = ""
            if 0 < share < 1 and elapsed >= 1:
                eta = f" eta {_duration(elapsed * (1 - share) / share)}"
            text = (f"{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}] {share:4.0%} {amount}/{total}"
                    f"{(' ' + self.unit) if self.unit else ''} {_duration(elapsed)}{eta}")
        else:
            text = f"{self.label} {amount}{(' ' + self.unit) if self.unit else ''} {_duration(elapsed)}"
        return text + (f"  {self.detail}" if self.detail else "")

    def _draw(self, now: float) -> None:
        text = self.line(now)
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns or 100   # 0: a terminal of no size yet
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            columns = 100
        text = text[: max(columns - 1, 10)]
        pad = " " * max(self._width - len(text), 0)
        self.stream.write("\r" + text + pad)
        self.stream.flush()
        self._width = len(text)
        self._drawn_at = now

    def _clear(self) -> None:
        if self._drawn_at is not None:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()


class Stages:
    """A `(done, total, what)` callback (batch dedup's): one bar per stage, each on its own line."""

    def __init__(self, label: str, enabled: bool, stream: TextIO | None = None):
        self.label, self.enabled, self.stream = label, enabled, stream
        self.what: str | None = None
        self.bar: Progress | None = None

    def __call__(self, done: int, total: int, what: str) -> None:
        if not self.enabled or total <= 0:
            return
        if what != self.what or self.bar is None:
            self.close()
            self.what, self.bar = what, Progress(total, f"{self.label}: {what}", stream=self.stream)
        self.bar.update(done, total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


def wanted(quiet: bool = False, stream: TextIO | None = None) -> bool:
    """A bar is drawn: stderr (or `stream`) is a terminal and the command is not `--quiet`."""
    return not quiet and _is_terminal(stream if stream is not None else sys.stderr)


def bar(total: float | None, label: str, *, unit: str = "", scale: float = 1, quiet: bool = False,
        stream: TextIO | None = None) -> Progress:
    """A bar on stderr when it is a terminal and not `quiet`; otherwise one that draws nothing."""
    stream = stream if stream is not None else sys.stderr
    return Progress(total, label, unit=unit, scale=scale, stream=stream, enabled=wanted(quiet, stream))
