"""How long a write waits for another process's write lock: decided here and nowhere else.

SQLite lets one writer in at a time; a connection that wants the lock waits (its busy timeout), then fails with
"database is locked". Three waits, by what the write is for:
- `DEFAULT_SECS` (10 s): a command's own work; after that it reports the database as locked (exit 4);
- `best_effort(con)` (0.25 s, then the default again): bookkeeping nobody waits for (a check's log row, the MCP
  server's search log, marking a killed batch run); it is dropped, with a line in the log, rather than hold
  the caller up behind another process's capture;
- `within(con, deadline)`: a hook keeps to its time budget; `grace` lets it save where it stopped even when the
  budget is spent (progress is never lost to the last second).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import apsw

DEFAULT_SECS = 10.0
BEST_EFFORT_SECS = 0.25


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _set(con: "apsw.Connection", seconds: float) -> None:
    con.setbusytimeout(_ms(seconds))


def default(con: "apsw.Connection") -> None:
    """The default wait (a newly opened connection has it)."""
    _set(con, DEFAULT_SECS)


def at_most(con: "apsw.Connection", seconds: float) -> None:
    """The next writes wait at most `seconds`, never more than the default."""
    _set(con, min(max(seconds, 0.0), DEFAULT_SECS))


def within(con: "apsw.Connection", deadline: float, grace: float = 0.0, clock=time.monotonic) -> None:
    """The next writes wait no longer than what is left until `deadline` (`clock()` seconds), or `grace` when
    that is longer."""
    _set(con, max(deadline - clock(), grace, 0.0))


class best_effort:   # noqa: N801 - used as a function (`with best_effort(con):`); a class is ~1 us cheaper a use
    """Writes inside wait BEST_EFFORT_SECS at most; the default wait comes back after."""

    __slots__ = ("con",)

    def __init__(self, con: "apsw.Connection") -> None:
        self.con = con

    def __enter__(self) -> None:
        self.con.setbusytimeout(_BEST_EFFORT_MS)

    def __exit__(self, *exc: object) -> None:
        self.con.setbusytimeout(_DEFAULT_MS)   # default(con)


_BEST_EFFORT_MS, _DEFAULT_MS = _ms(BEST_EFFORT_SECS), _ms(DEFAULT_SECS)   # a check's log row sets both
