"""Starting, finding and stopping the worker.

Exactly one starts: the starter takes the install's lock file (fcntl.flock, non-blocking) and hands the locked
descriptor to the worker it spawns (a new session, stdin/stdout/stderr on /dev/null, no other descriptor), so
the lock is held without a gap from the start until the worker exits; a concurrent starter finds it held and
starts nothing. A live worker is exactly "the lock is held"; a socket without a held lock is stale.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

from subcog_store.worker import client, protocol as wire

BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from subcog_store.worker.server import main; " \
       "sys.exit(main(sys.argv[2:]))"
MARKER = "subcog_store.worker.server"


def _try_lock(path: str) -> int | None:
    """The lock file's descriptor, locked, or None when another process holds it."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except OSError:
        os.close(fd)
        return None


def running(paths: wire.Paths) -> bool:
    """A worker (or a starter about to exec one) holds the lock."""
    if wire.unsafe_dir(paths.dir):
        return False
    try:
        fd = _try_lock(paths.lock)
    except OSError:
        return False
    if fd is None:
        return True
    os.close(fd)
    return False


def start_detached(paths: wire.Paths | None = None, wait: float = 0.0) -> bool:
    """Start the worker in the background unless one runs or is starting; True when this call started it.
    Returns at once (the worker loads on its own; this caller does its own work in process). `wait`: how long
    an exiting worker (of an older version) may hold the lock before this call gives up.

    posix_spawn (vfork: ~1 ms) in a new session, not a double fork: forking a hook process that holds the ONNX
    session copies its page tables (15-40 ms measured). The worker is reparented to init when its starter exits."""
    paths = paths or wire.Paths()
    if wire.unsafe_dir(paths.dir, create=True):
        return False
    deadline = time.monotonic() + wait
    while (fd := _try_lock(paths.lock)) is None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    try:
        os.set_inheritable(fd, True)
        actions = [(os.POSIX_SPAWN_OPEN, target, os.devnull, os.O_RDWR, 0) for target in (0, 1, 2)]
        actions += [(os.POSIX_SPAWN_CLOSE, other) for other in _inherited_fds() if other not in (0, 1, 2, fd)]
        argv = [sys.executable, "-c", BOOT, os.path.dirname(wire.PACKAGE), "--lock-fd", str(fd)]
        os.posix_spawn(sys.executable, argv, dict(os.environ), file_actions=actions, setsid=True,
                       setsigdef=(signal.SIGTERM, signal.SIGINT, signal.SIGHUP))
    finally:
        os.close(fd)   # the worker holds the lock through its inherited copy
    return True


def _inherited_fds() -> list[int]:
    """Descriptors a child would inherit (set inheritable by whoever started this process)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return []
    out = []
    for fd in fds:
        try:
            if os.get_inheritable(fd):
                out.append(fd)
        except OSError:
            pass
    return out


def wait_ready(paths: wire.Paths, timeout: float = 60.0) -> dict | None:
    """The worker's status once it answers; None when it did not within `timeout` or died starting."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return client.request("status", paths=paths, answer_secs=2.0)[0]
        except client.Unavailable:
            if not running(paths):
                return None
        time.sleep(0.05)
    return None


def read_pid(paths: wire.Paths) -> int | None:
    try:
        with open(paths.pid, encoding="utf-8") as f:
            pid = int(json.load(f)["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pid if is_worker(pid) else None


def is_worker(pid: int) -> bool:
    """A live (not zombie) process of this user running the worker of this install."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().split(b"\0")
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        owner = os.stat(f"/proc/{pid}").st_uid
    except (OSError, IndexError):
        return False
    return state != b"Z" and owner == os.getuid() and MARKER.encode() in b" ".join(cmdline) and \
        os.path.dirname(wire.PACKAGE).encode() in cmdline


def _gone(pid: int | None, paths: wire.Paths, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not running(paths) and (pid is None or not is_worker(pid)):
            return True
        time.sleep(0.02)
    return False


def _signal(pid: int, sig: signal.Signals, result: dict) -> bool:
    result.update(was_running=True, how=sig.name)
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def stop(paths: wire.Paths | None = None, timeout: float = 10.0) -> dict:
    """Stop this install's worker and leave no process, socket or pid file behind. Asks it first; a worker
    that does not answer or exit gets SIGTERM, then SIGKILL."""
    paths = paths or wire.Paths()
    result: dict = {"was_running": False, "pid": None, "how": None, "removed": []}
    problem = wire.unsafe_dir(paths.dir)
    if problem:
        result["how"] = "no worker directory" if problem == "absent" else f"not touched: {problem}"
        return result
    pid = read_pid(paths)
    signals = [signal.SIGTERM, signal.SIGKILL]
    try:
        pid = client.request("stop", paths=paths, slot_secs=0.0, answer_secs=2.0)[0].get("pid") or pid
        result.update(was_running=True, how="asked")
    except client.Unavailable:   # starting (no socket yet) or wedged: a signal at once
        deadline = time.monotonic() + 2.0
        while pid is None and running(paths) and time.monotonic() < deadline:   # it writes its pid file first
            time.sleep(0.02)
            pid = read_pid(paths)
        if pid is not None and running(paths):
            _signal(pid, signals.pop(0), result)
    if not _gone(pid, paths, timeout / 2):
        for sig in signals:
            if pid is None or not is_worker(pid) or not _signal(pid, sig, result) or _gone(pid, paths, timeout / 4):
                break
    result["pid"] = pid
    fd = _try_lock(paths.lock)   # only with the lock held: a worker starting now keeps its files
    if fd is not None:
        try:
            for path in (paths.sock, paths.pid):
                try:
                    os.unlink(path)
                    result["removed"].append(os.path.basename(path))
                except FileNotFoundError:
                    pass
        finally:
            os.close(fd)
    result["stopped"] = not running(paths) and not (pid is not None and is_worker(pid))
    return result


def state(paths: wire.Paths | None = None) -> dict:
    """What `worker status` and `doctor` report: running (with the worker's own status), stale, absent, unsafe."""
    paths = paths or wire.Paths()
    info: dict = {"socket": paths.sock, "install": wire.install_id(), "enabled": client.enabled()}
    problem = wire.unsafe_dir(paths.dir)
    if problem and problem != "absent":
        return {**info, "state": "unsafe", "problem": problem}
    try:
        status = client.request("status", paths=paths, answer_secs=2.0)[0]
    except client.Unavailable as e:
        if running(paths):
            return {**info, "state": "starting or not answering", "problem": e.reason, "pid": read_pid(paths)}
        stale = os.path.exists(paths.sock)
        return {**info, "state": "stale socket" if stale else "not running"}
    current = status.get("key") == wire.version_key()
    return {**info, "state": "running" if current else "running, of another version (it exits on its own)",
            **{k: v for k, v in status.items() if k != "ok"}}
