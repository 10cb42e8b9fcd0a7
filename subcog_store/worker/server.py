"""The worker process: holds the modules, the ONNX session (one per model directory) and the guard's tables warm,
and runs whole hooks (`claude_code.entry.run`, the same function a hook runs in process) and embeddings for fresh
processes, one at a time, over a Unix socket only its user can open.

A hook request runs as `worker.hooks` says (the caller's environment, directory and umask; a hook may answer
before it has finished). The worker exits after SUBCOG_WORKER_IDLE_SECS without a request, when its code or
model files change (checked every VERSION_CHECK_SECS), when its socket is removed or replaced, on
SIGTERM/SIGINT/SIGHUP and on `stop`; it removes its socket and pid file on the way out. It never opens a port.
"""
# Lazy imports: the worker listens before it loads the store, the model and the hooks (preload, a thread).
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from subcog_store.worker import hooks, protocol as wire
from subcog_store.worker.backlog import Backlog

log = logging.getLogger("subcog_store.worker")
READ_SECS = 5.0              # a client must send its whole request within this
GO_SECS = 2.0                # ... and its "go" within this after "ready"
TICK_SECS = 0.25
VERSION_CHECK_SECS = 2.0
MAX_CONNECTIONS = 32
STOP_WAIT_SECS = 5.0         # an in-flight request may finish within this on stop
MAX_WAIT_SECS = 30.0
SWITCH_SECS = 0.001          # the GIL's switch interval (Python's default 5 ms): a hook's answer is not held up
#                              behind the capture still running in another thread
MAX_RSS_MB = 1024            # grown past this (a huge transcript's buffers stay with the allocator): exit, a fresh
#                              one starts on the next call
WARM_TEXTS = ["We decided to use PgBouncer in transaction mode for the checkout database because the pool ran "
              "out of connections during the load test.", "Retries use exponential backoff.",
              "Learned that the CI runner image ships an old OpenSSL, so the TLS tests fail only in CI."] * 7


class Worker:
    def __init__(self, paths: wire.Paths, lock_fd: int, idle_secs: float):
        self.paths, self.lock_fd, self.idle_secs = paths, lock_fd, idle_secs
        self.key = wire.version_key()
        self.run_lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.stopping = threading.Event()
        self.reason = ""
        self.busy = 0
        self.wanting = 0             # requests waiting for the run lock (the backlog gives way to them)
        self.counter = threading.Lock()
        self.backlog = Backlog()
        self.last = time.monotonic()
        self.started = time.time()
        self.requests = 0
        self.listener: socket.socket | None = None
        self.inode = 0

    # -- life ---------------------------------------------------------------------------------------------------
    def stop(self, reason: str) -> None:
        if not self.stopping.is_set():
            self.reason = reason
            self.stopping.set()

    def preload(self) -> None:
        """Import what hooks use, open an in-memory store (sqlite-vec loaded) and load and warm the default model."""
        started = time.perf_counter()
        try:
            from subcog_store.claude_code import entry, handlers  # noqa: F401
            from subcog_store.model import provider
            from subcog_store.store import Store

            for name in ("subcog_store.capture.session", "subcog_store.claude_code.recall_hooks",
                         "subcog_store.extraction.extract", "subcog_store.recall.search", "subcog_store.recall.inject",
                         "subcog_store.dedup.in_batch", "subcog_store.dedup.policies", "subcog_store.text.guard",
                         "subcog_store.text.redact", "subcog_store.text.shown_parts"):
                try:
                    __import__(name)
                except ImportError:
                    pass
            extract = sys.modules.get("subcog_store.extraction.extract")
            for loader in ("load_scorer", "load_user_scorer"):   # the assistant's and the user's judges
                try:
                    getattr(extract, loader)()
                except Exception:  # noqa: BLE001 - warming only (no module, or weights that do not load)
                    pass
            Store(":memory:", fetch_model=False).close()
            embedder = provider.shared(None)
            embedder.load()
            embedder.embed_batch(WARM_TEXTS)
        except Exception as e:  # noqa: BLE001 - a model that does not load is reported per request, in the hook log
            log.warning("worker %d: preload incomplete: %s: %s", os.getpid(), type(e).__name__, e)
        log.info("worker %d: ready in %.0f ms (version %s)", os.getpid(), (time.perf_counter() - started) * 1000,
                 self.key)

    def bind(self) -> None:
        """Listen on a fresh socket, renamed over the path (a stale or foreign file there is replaced)."""
        tmp = f"{self.paths.sock}.{os.getpid()}"
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with wire.Address(tmp) as address:
            listener.bind(address)
        os.chmod(tmp, 0o600)
        listener.listen(64)
        os.replace(tmp, self.paths.sock)
        self.inode = os.stat(self.paths.sock).st_ino
        self.listener = listener

    def write_pid(self) -> None:
        """The pid file, written before the model loads so `stop` can end a worker that is still starting."""
        try:
            with open(self.paths.pid + ".tmp", "w", encoding="utf-8") as f:
                json.dump({"pid": os.getpid(), "key": self.key, "started": self.started}, f)
            os.replace(self.paths.pid + ".tmp", self.paths.pid)
        except OSError as e:   # a full disk: the pid file is a convenience (stop asks over the socket first)
            log.warning("worker %d: no pid file: %s", os.getpid(), e)
            try:
                os.unlink(self.paths.pid + ".tmp")
            except OSError:
                pass

    def serve(self) -> None:
        assert self.listener is not None
        self.listener.settimeout(TICK_SECS)
        self.last = time.monotonic()
        next_check = time.monotonic() + VERSION_CHECK_SECS
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except (TimeoutError, InterruptedError):
                conn = None
            if conn is not None:
                if self.slots.acquire(blocking=False):
                    threading.Thread(target=self._connection, args=(conn,), daemon=True).start()
                else:
                    conn.close()
            now = time.monotonic()
            if not self.busy and not self.stopping.is_set():
                self.backlog.start(self.run_lock, self._free)
            if not self.busy and now - self.last > self.idle_secs:
                self.stop(f"idle for {self.idle_secs:.0f} s")
            if now >= next_check:
                next_check = now + VERSION_CHECK_SECS
                self._check_files()

    def _check_files(self) -> None:
        if wire.version_key() != self.key:
            self.stop("its code or model files changed")
        try:
            if os.stat(self.paths.sock).st_ino != self.inode:
                self.stop("its socket was replaced")
        except OSError:
            self.stop("its socket was removed")

    def shutdown(self) -> None:
        if self.listener is not None:
            self.listener.close()
        deadline = time.monotonic() + STOP_WAIT_SECS
        while self.busy and time.monotonic() < deadline:
            time.sleep(0.02)
        self.backlog.wait(max(0.0, deadline - time.monotonic()))   # its batch under way (it stops after it)
        try:
            if os.stat(self.paths.sock).st_ino == self.inode:
                os.unlink(self.paths.sock)
        except OSError:
            pass
        try:
            with open(self.paths.pid, encoding="utf-8") as f:
                mine = json.load(f).get("pid") == os.getpid()
            if mine:
                os.unlink(self.paths.pid)
        except (OSError, ValueError, AttributeError):
            pass
        log.info("worker %d: exiting (%s) after %d requests", os.getpid(), self.reason or "stopped", self.requests)
        os.close(self.lock_fd)

    # -- one connection -----------------------------------------------------------------------------------------
    def _connection(self, conn: socket.socket) -> None:
        try:
            if wire.peer_uid(conn) not in (-1, os.getuid()):
                return
            header, blob = wire.recv(conn, time.monotonic() + READ_SECS)
            self._request(conn, header, blob)
        except wire.ProtocolError as e:
            log.info("worker %d: dropped a request: %s", os.getpid(), e)
            try:
                wire.send(conn, {"ok": False, "error": "bad request"}, timeout=0.5)
            except OSError:
                pass
        except Exception as e:  # noqa: BLE001 - one bad connection never ends the worker
            log.info("worker %d: connection ended: %s: %s", os.getpid(), type(e).__name__, e)
        finally:
            conn.close()
            self.slots.release()

    def _request(self, conn: socket.socket, header: dict, blob: bytes) -> None:
        op = header.get("op")
        if op == "status":
            wire.send(conn, {"ok": True, **self.status()})
            return
        if op == "stop":
            wire.send(conn, {"ok": True, "pid": os.getpid()})
            self.stop("asked to stop")
            return
        if header.get("v") != wire.PROTOCOL or header.get("key") != self.key:
            wire.send(conn, {"ok": False, "error": "version"})
            self._check_files()
            return
        if op == "note":   # a capture hook ran in process: its store may hold a deferred capture (not answered)
            self.backlog.note(header)
            return
        if op not in ("hook", "embed", "load"):
            wire.send(conn, {"ok": False, "error": "unknown request"})
            return
        wait = slot_wait(header.get("wait"))
        if wait is None:
            wire.send(conn, {"ok": False, "error": "bad request: wait must be a number of seconds"})
            return
        self._want(1)
        try:
            got = self.run_lock.acquire(blocking=False)
            if not got:
                behind = self.backlog.capturing   # a turn on a deferred capture: it gives way within a short step
                wire.send(conn, {"st": "queued", **({"behind": "backlog"} if behind else {})})
                got = self.run_lock.acquire(timeout=wait + (wire.BACKLOG_GIVE_WAY_SECS if behind else 0.0))
        finally:
            self._want(-1)
        if not got:
            wire.send(conn, {"ok": False, "error": "busy"})
            return
        self.busy += 1
        try:
            if self.stopping.is_set():
                wire.send(conn, {"ok": False, "error": "stopping"})
                return
            wire.send(conn, {"st": "ready"})
            if op == "hook":
                go, _ = wire.recv(conn, time.monotonic() + GO_SECS)
                if go.get("go") is True:
                    hooks.run(header, blob, go.get("budget"), hooks.Answer(conn))
                    self.backlog.note(header)
            else:
                answer, data = self._model(op, header)
                wire.send(conn, answer, data, timeout=10.0)
        finally:
            self.requests += 1
            self.last = time.monotonic()
            self.busy -= 1
            self.run_lock.release()
            if rss_mb() > MAX_RSS_MB:
                self.stop(f"its memory grew past {MAX_RSS_MB} MB")

    def _want(self, step: int) -> None:
        with self.counter:
            self.wanting += step

    def _free(self) -> bool:
        """No request runs or waits, and the worker is not stopping: the backlog may take a batch."""
        return not (self.busy or self.wanting or self.stopping.is_set())

    def _model(self, op: str, header: dict) -> tuple[dict, bytes]:
        from subcog_store.model import provider

        directory = header.get("model_dir")
        texts = header.get("texts", [])
        if not isinstance(directory, str) or not isinstance(texts, list) or \
                not all(isinstance(t, str) for t in texts):
            return {"ok": False, "error": "bad request"}, b""
        try:
            embedder = provider.shared(Path(directory))
            embedder.load()
            if op == "load":
                return {"ok": True, "dim": embedder.dimensions}, b""
            vectors = embedder.embed_batch(texts)
        except Exception as e:  # noqa: BLE001 - the caller loads the model itself and meets the same error
            return {"ok": False, "error": f"{type(e).__name__}: {e}"[:500]}, b""
        return {"ok": True, "n": len(texts), "dim": int(vectors.shape[1])}, vectors.astype("<f4").tobytes()

    def status(self) -> dict:
        from subcog_store.model import provider

        return {"pid": os.getpid(), "key": self.key, "started": self.started, "uptime_secs": round(
            time.time() - self.started, 1), "idle_secs": round(time.monotonic() - self.last, 1),
            "idle_limit_secs": self.idle_secs, "requests": self.requests, "busy": bool(self.busy),
            "session_texts_embedded": self.backlog.embedded, "capture_turns": self.backlog.turns,
            "models": provider.loaded_dirs(), "rss_mb": rss_mb(), "python": sys.version.split()[0],
            "package": wire.PACKAGE}


def slot_wait(value: object) -> float | None:
    """How long a request may wait for the run lock: a finite number of seconds (absent: 0), clamped to
    [0, MAX_WAIT_SECS]; None when it is anything else."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) == float("inf"):
        return None
    return min(max(float(value), 0.0), MAX_WAIT_SECS)


def rss_mb() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // (1 << 20)
    except (OSError, ValueError, IndexError):
        return 0


def _own_log() -> None:
    """The worker's own lines go to the hook log of the environment that started it."""
    from subcog_store.config import hook_log_path, send_to_hook_log

    send_to_hook_log(log, hook_log_path(fallback=True))   # no log: the worker runs anyway


def main(argv: list[str]) -> int:
    """Run the worker until it stops (started by lifecycle.start_detached with the lock already held)."""
    from subcog_store.config import process_setting_or_default

    os.chdir("/")   # never hold on to the starter's directory (each request enters its caller's)
    sys.setswitchinterval(SWITCH_SECS)
    _own_log()
    paths = wire.Paths()
    lock_fd = int(argv[argv.index("--lock-fd") + 1]) if "--lock-fd" in argv else None
    if lock_fd is None:
        from subcog_store.worker.lifecycle import _try_lock

        if wire.unsafe_dir(paths.dir, create=True) or (lock_fd := _try_lock(paths.lock)) is None:
            return 0
    os.set_inheritable(lock_fd, False)
    idle = float(process_setting_or_default("worker_idle_secs",   # type: ignore[arg-type]
                                            lambda why: log.warning("worker: %s", why)))
    problem = wire.unsafe_dir(paths.dir, create=True)
    if problem:
        log.warning("worker: not started: %s", problem)
        return 1
    from subcog_store.db import bitcache

    bitcache.enable_from_settings()   # long-lived: a large scope's sign bits are worth holding
    worker = Worker(paths, lock_fd, idle)
    worker.write_pid()
    worker.preload()   # a signal now ends it at once (nothing to clean but the pid file, which `stop` removes)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: worker.stop(f"signal {signal.Signals(signum).name}"))
    try:
        if not worker.stopping.is_set():
            worker.bind()
            worker.serve()
    except OSError as e:
        log.warning("worker %d: cannot listen on %s: %s", os.getpid(), paths.sock, e)
        return 1
    finally:
        worker.shutdown()
    return 0
