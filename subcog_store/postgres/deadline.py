"""A hook's deadline on its PostgreSQL connection, kept by the client: at the deadline a timer closes the
connection's socket for reading and writing, so a statement waiting for the server ends at once with an error,
whatever the server does (hung, stopped, behind a partition, or waiting for a lock a maintenance job holds); then
it asks the server to cancel what it was running (libpq's cancel request, bounded by CANCEL_SECS), so a
statement waiting for a lock there gives up its place too. A server-side statement_timeout could do neither for
a server that does not run, and a `-c statement_timeout` in the connection's options is refused or leaks through
a connection pooler such as PgBouncer.

Past the deadline the connection is lost for good (every later statement fails at once): the hook answers
without its store, the cause in its log. What a transaction had not committed is rolled back by the server when
it finds the connection gone.
"""
from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

CANCEL_SECS = 2.0   # the most the cancel request may take (it opens a connection of its own to the server)


class Deadline:
    """The instant (`time.monotonic()`) past which one connection stops waiting for its server."""

    def __init__(self, at: float):
        self.at = at
        self.expired = False
        self._raw: "psycopg.Connection | None" = None
        self._done = False
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def left(self) -> float:
        """Seconds from now to the deadline (0 when it is past)."""
        return max(0.0, self.at - time.monotonic())

    def arm(self, raw: "psycopg.Connection") -> None:
        """Watch `raw` from now on (once it is open)."""
        self._raw = raw
        self._timer = threading.Timer(self.left(), self._expire)
        self._timer.daemon = True   # a process never waits for it to exit
        self._timer.start()

    def disarm(self) -> None:
        """The connection is being closed: the timer does nothing any more (its socket may be another's soon)."""
        with self._lock:
            self._done = True
        if self._timer is not None:
            self._timer.cancel()

    def words(self, shown: str) -> str:
        return (f"{shown}: the server did not answer by the hook's deadline; stopped waiting and closed the "
                "connection (what was not committed is not kept)")

    def _expire(self) -> None:
        """The timer's thread: never raises (a thread's traceback would reach stderr, which a hook keeps clean)."""
        import socket   # here: a SQLite hook imports this module (db/connection) and never needs it

        with self._lock:   # the connection cannot be closed (its socket number reused) meanwhile
            raw = self._raw
            if self._done or raw is None or raw.closed:
                return
            self.expired = True
            cancel = _cancel_request(raw)
            try:
                with socket.socket(fileno=os.dup(raw.pgconn.socket)) as sock:
                    sock.shutdown(socket.SHUT_RDWR)
            except Exception:  # noqa: BLE001 - the connection broke already (no socket any more): nothing waits
                pass
        if cancel is not None:
            _send(cancel)


def _cancel_request(raw: "psycopg.Connection"):
    """libpq's cancel request for what `raw` runs, made while the connection is surely open (None: not possible)."""
    try:
        return raw.pgconn.cancel_conn()
    except Exception:  # noqa: BLE001 - a libpq before 17, or a connection already broken: the socket is enough
        return None


def _send(cancel) -> None:
    """Send the cancel request, waiting at most CANCEL_SECS for the server to take it."""
    import selectors

    from psycopg import pq

    until = time.monotonic() + CANCEL_SECS
    try:
        cancel.start()
        with selectors.DefaultSelector() as selector:
            while True:
                status = cancel.poll()
                if status in (pq.PollingStatus.OK, pq.PollingStatus.FAILED):
                    return
                wanted = selectors.EVENT_READ if status == pq.PollingStatus.READING else selectors.EVENT_WRITE
                selector.register(cancel.socket, wanted)
                ready = selector.select(max(0.0, until - time.monotonic()))
                selector.unregister(cancel.socket)
                if not ready:
                    return
    except Exception:  # noqa: BLE001 - best effort: the server ends the statement when it finds the client gone
        pass
    finally:
        try:
            cancel.finish()
        except Exception:  # noqa: BLE001
            pass
