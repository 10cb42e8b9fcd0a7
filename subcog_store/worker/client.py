"""The caller's side: run a whole hook in the worker, embed there, ask its status or stop it.

Every call raises `Unavailable` (with the reason, for the log) when the worker cannot serve it: absent, starting,
busy, wedged, of another version, unsafe, or killed mid-request. The caller then does the work in process. A
hook imports this module, so it imports only the standard library's lightest modules.

A hook request is a handshake: the worker answers "queued" while another request runs, then "ready" when this
one may start (or "busy" after the wait the caller allowed); only after the caller's "go" does it run, so either
the worker or the caller runs a hook, never both (unless the worker dies mid-run: then what it committed is
found by the store's exact tier and skipped as a duplicate, and the offset it never saved is read again).
"""
# Lazy imports: the hook command's warm path: the standard library only; settings are parsed only when the
# hook's environment sets them.
from __future__ import annotations

import os
import time

from subcog_store.worker import protocol as wire

CONNECT_SECS = 0.02             # a Unix socket connects at once or not at all
# A live worker answers "ready" or "queued" at once; a hook that hears nothing for a while takes the worker as wedged
# and runs in process. This is a speed fallback, not a correctness rule: the worker runs a hook only after the
# caller's "go", so a late first frame means the caller runs it and the worker drops the abandoned request (the
# same memories either way, tests/test_worker.py). No state shows a slow live worker from a wedged one but its
# answer, so the wait is a share of the hook's budget: 0.5 s at the default 20 s (a wedged worker costs every hook
# that much), longer for a larger budget (a loaded machine can keep a live worker silent past 0.5 s).
FIRST_FRAME_SECS = 0.5
FIRST_FRAME_SHARE, FIRST_FRAME_MAX_SECS = 0.025, 5.0
HOOK_SLOT_SECS = 1.0            # how long a busy worker may queue a hook before the caller runs it itself
EMBED_SLOT_SECS = 5.0
RESERVE_SHARE, RESERVE_MAX_SECS = 0.25, 5.0   # of the hook's budget, kept for running in process after a failure
ANSWER_GRACE_SECS = 0.75        # the hook's save grace (0.5 s) plus the answer's way back
EMBED_SECS_PER_TEXT = 0.05
EMBED_BATCH = 64                # texts per request: a hook waits behind at most one such batch


class Unavailable(Exception):
    """The worker cannot serve this call. `spawn`: starting one may help next time; `stale`: the worker is of
    another version (it exits on its own; a new one may start once it has); `quiet`: not worth a log line (the
    worker is disabled)."""

    def __init__(self, reason: str, spawn: bool = False, quiet: bool = False, stale: bool = False):
        super().__init__(reason)
        self.reason, self.spawn, self.quiet, self.stale = reason, spawn or stale, quiet, stale


def enabled(environ: "Mapping[str, str] | None" = None) -> bool:   # (typing is not imported: the warm path)
    """SUBCOG_WORKER_ENABLED of `environ` (default os.environ; true when unset; config is imported only when the
    variable is set)."""
    environ = os.environ if environ is None else environ
    if not environ.get("SUBCOG_WORKER_ENABLED"):
        return True
    from subcog_store.config import process_setting
    from subcog_store.errors import ConfigError

    try:
        return bool(process_setting("worker_enabled", environ))
    except ConfigError:
        return False   # the in-process path never reads it: a bad value simply means no worker


def hook_budget() -> tuple[float, bool]:
    """The hook's budget and whether it parsed (when not, the worker's run reports the bad setting itself)."""
    if not os.environ.get("SUBCOG_HOOK_BUDGET_SECS"):
        return wire.HOOK_BUDGET_SECS, True
    from subcog_store.config import process_setting
    from subcog_store.errors import ConfigError

    try:
        return float(process_setting("hook_budget_secs")), True   # type: ignore[arg-type]
    except ConfigError:
        return wire.HOOK_BUDGET_SECS, False


def connect(paths: wire.Paths | None = None, timeout: float = CONNECT_SECS):
    """A connected socket to this user's worker of this install, after checking who owns what."""
    import _socket

    paths = paths or wire.Paths()
    problem = wire.unsafe_dir(paths.dir)
    if problem:
        raise Unavailable("no worker" if problem == "absent" else f"worker directory unsafe: {problem}",
                          spawn=problem == "absent")
    problem = wire.unsafe_socket(paths.sock)
    if problem:   # a new worker renames its own socket over a stale or foreign one
        raise Unavailable("no worker" if problem == "absent" else f"worker socket not used: {problem}", spawn=True)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        with wire.Address(paths.sock) as address:
            sock.connect(address)
        uid = wire.peer_uid(sock)
        if uid not in (-1, os.getuid()):
            raise Unavailable(f"worker socket served by uid {uid}")
        return sock
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        raise Unavailable("no worker (stale socket)", spawn=True) from None
    except TimeoutError:
        sock.close()
        raise Unavailable("worker not accepting connections (wedged?)") from None
    except OSError as e:
        sock.close()
        raise Unavailable(f"cannot connect to the worker: {e.strerror or e}", spawn=True) from None
    except BaseException:
        sock.close()
        raise


def first_frame_secs(budget: float) -> float:
    """How long a hook with this budget waits for the worker's first frame before taking it as wedged."""
    return min(FIRST_FRAME_MAX_SECS, max(FIRST_FRAME_SECS, budget * FIRST_FRAME_SHARE))


def _start(sock, header: dict, blob: bytes, slot_secs: float, first_frame: float = FIRST_FRAME_SECS) -> dict:
    """Send a request and wait until the worker may run it; returns its "ready" (or final) frame."""
    header.update(v=wire.PROTOCOL, key=wire.version_key(), wait=slot_secs)
    wire.send(sock, header, blob)
    reply, _ = wire.recv(sock, time.monotonic() + first_frame)
    if reply.get("st") == "queued":   # behind the worker's own backlog work: that gives way, waited for longer
        extra = wire.BACKLOG_GIVE_WAY_SECS if reply.get("behind") == "backlog" else 0.0
        reply, _ = wire.recv(sock, time.monotonic() + slot_secs + extra + first_frame)
    if reply.get("error"):
        error = str(reply["error"])
        raise Unavailable({"version": "worker of another version (it exits; a new one starts)",
                           "busy": "worker busy"}.get(error, f"worker refused: {error}"), stale=error == "version")
    return reply


def _failed(e: BaseException) -> Unavailable:
    if isinstance(e, Unavailable):
        return e
    if isinstance(e, TimeoutError):
        return Unavailable("worker did not answer in time")
    if isinstance(e, (wire.ProtocolError, ConnectionError)):   # a worker that died mid-request: EOF, or a reset
        return Unavailable(f"worker connection lost ({e})", spawn=True)   # when it died with our frame unread
    return Unavailable(f"worker connection failed: {type(e).__name__}: {e}", spawn=True)


def answer_wait(event: str | None, share: float, budget: float) -> float:
    """How long the caller waits for the worker's answer once it said go: its share of the budget and the save's
    grace, and for a capture hook the time its minimum of work may run past the budget (until TIMEOUT_MARGIN_SECS
    before the client's timeout, counted as the worker counts it: the caller spent `budget - share`). Given up
    earlier, the caller ran the capture in process too, past the client's timeout."""
    wait = share + ANSWER_GRACE_SECS
    if event in wire.CAPTURE_EVENTS:
        timeout = wire.CAPTURE_TIMEOUT_SECS
        if os.environ.get("SUBCOG_HOOK_TIMEOUT_SECS"):
            from subcog_store.config import process_setting_or_default

            timeout = float(process_setting_or_default("hook_timeout_secs", lambda _: None))  # type: ignore[arg-type]
        wait += max(0.0, timeout - budget - wire.TIMEOUT_MARGIN_SECS)
    return wait


def run_hook(event: str | None, opts: dict, raw: bytes, db: str | None, started: float) -> str:
    """The hook's output as the worker computed it (raises Unavailable: run it in process then)."""
    if not enabled():
        raise Unavailable("disabled", quiet=True)
    budget, parsed = hook_budget()
    sock = connect()
    try:
        mask = os.umask(0o077)
        os.umask(mask)
        header = {"op": "hook", "event": event, "dry_run": bool(opts.get("dry_run")), "format": opts.get("format"),
                  "db": db, "cwd": os.getcwd(), "umask": mask, "env": dict(os.environ)}
        reply = _start(sock, header, raw, min(HOOK_SLOT_SECS, budget / 4), first_frame_secs(budget))
        if reply.get("st") != "ready":
            raise Unavailable(f"worker sent {str(reply)[:80]}")
        reserve = min(budget * RESERVE_SHARE, RESERVE_MAX_SECS)   # kept whole for running it here after all
        share = max(0.1, budget - reserve - ANSWER_GRACE_SECS - (time.monotonic() - started))
        wire.send(sock, {"go": True, "budget": round(share, 3) if parsed else None})
        answer, _ = wire.recv(sock, time.monotonic() + answer_wait(event, share, budget))
        if answer.get("ok") is not True or not isinstance(answer.get("out"), str):
            raise Unavailable(f"worker could not run the hook: {str(answer.get('error'))[:200]}")
        return answer["out"]
    except Exception as e:  # noqa: BLE001 - every failure means: run it in process
        raise _failed(e) from None
    finally:
        sock.close()


def note_capture(event: str | None, db: str | None) -> None:
    """Tell the worker that a capture hook on this store ran in process (the worker was busy): it goes on with a
    capture deferred there while it is idle (capture/deferred.py). Sent and not waited for: it costs the hook a
    connection; raises Unavailable."""
    if not enabled():
        raise Unavailable("disabled", quiet=True)
    sock = connect()
    try:
        wire.send(sock, {"op": "note", "v": wire.PROTOCOL, "key": wire.version_key(), "event": event, "db": db,
                         "cwd": os.getcwd(), "env": dict(os.environ)})
    except Exception as e:  # noqa: BLE001
        raise _failed(e) from None
    finally:
        sock.close()


def request(op: str, fields: dict | None = None, slot_secs: float = EMBED_SLOT_SECS, answer_secs: float = 30.0,
            paths: wire.Paths | None = None) -> tuple[dict, bytes]:
    """One non-hook request ("load", "embed", "status", "stop"); returns the answer frame."""
    sock = connect(paths)
    try:
        reply = _start(sock, {"op": op, **(fields or {})}, b"", slot_secs)
        blob = b""
        if reply.get("st") == "ready":
            reply, blob = wire.recv(sock, time.monotonic() + answer_secs)
        if reply.get("ok") is not True:
            raise Unavailable(f"worker: {str(reply.get('error'))[:300]}")
        return reply, blob
    except Exception as e:  # noqa: BLE001
        raise _failed(e) from None
    finally:
        sock.close()


def embed(texts: list[str], model_dir: str) -> bytes:
    """float32 vectors, one row of 384 per text, as the worker's embedder computed them."""
    out = []
    for start in range(0, len(texts), EMBED_BATCH):
        chunk = texts[start:start + EMBED_BATCH]
        answer, blob = request("embed", {"texts": chunk, "model_dir": model_dir},
                               answer_secs=10.0 + EMBED_SECS_PER_TEXT * len(chunk))
        if answer.get("n") != len(chunk) or len(blob) != len(chunk) * 4 * int(answer.get("dim", 0)):
            raise Unavailable("worker sent vectors of the wrong shape")
        out.append(blob)
    return b"".join(out)
