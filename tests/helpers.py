"""What many test files need, written once: the environment scrub, the CLI as a process (and in this process),
a hook run as Claude Code runs it, a read-only look at a store, and waiting for a state instead of sleeping.

Test files keep thin wrappers for their own defaults (a log path, the worker off); the subprocess call, the
scrub of the developer's SUBCOG_* settings and the waiting live here only.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterable, Mapping

import apsw

REPO_ROOT = Path(__file__).resolve().parents[1]

# A capture hook the warm worker runs answers when it is done (not after SUBCOG_HOOK_ANSWER_SECS's 10 ms), so a
# test reads the store right after the hook; tests/test_worker.py tests the answer before the capture finishes.
ANSWER_WHEN_DONE = {"SUBCOG_HOOK_ANSWER_SECS": "600"}
NO_WORKER = {"SUBCOG_WORKER_ENABLED": "false"}
# A budget and a client's timeout no load uses up, for the tests that check exactly what a run captures or which
# way (worker, in process) served it: at load 15 and more a hook's start-up alone ate the default budget (it counts
# from the process's start) and the run stopped early, or the caller gave up on a worker still running its request.
# What a run does when its time runs out is checked on fake clocks (tests/test_faults.py).
UNHURRIED = {"SUBCOG_HOOK_BUDGET_SECS": "600", "SUBCOG_HOOK_TIMEOUT_SECS": "3600"}
BROKEN_RUN_SECS = 900   # a subprocess timeout for an unhurried run: bounds a broken run only


def cli_command() -> list[str]:
    """How to run the CLI: the console script beside this interpreter, else `python -m subcog_store`."""
    script = Path(sys.executable).parent / "subcog-store"
    return [str(script)] if script.exists() else [sys.executable, "-m", "subcog_store"]


CLI = cli_command()


def clean_environ(extra: Mapping[str, str] | None = None, *, base: Mapping[str, str] | None = None,
                  keep: Iterable[str] = (), answer_when_done: bool = True) -> dict[str, str]:
    """`base` (default os.environ) without any SUBCOG_* variable but those in `keep` (a developer's settings must
    not leak into a test), with ANSWER_WHEN_DONE unless told otherwise, plus `extra`."""
    kept = set(keep)
    source = os.environ if base is None else base
    environ = {k: v for k, v in source.items() if not k.startswith("SUBCOG_") or k in kept}
    if answer_when_done:
        environ.update(ANSWER_WHEN_DONE)
    environ.update(extra or {})
    return environ


def scrub_environ(monkeypatch, **env: str) -> None:
    """This process's environment without any SUBCOG_* variable, plus `env` (undone by monkeypatch)."""
    for key in [k for k in os.environ if k.startswith("SUBCOG_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def run_cli(*args: str, db: Path | str | None = None, stdin: bytes | str | None = None,
            env: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None,
            cwd: Path | str | None = None, timeout: float = 120, background: bool = False,
            argv: list[str] | None = None, text: bool = False):
    """The CLI as a process: `subcog-store [--db DB] ARGS` with a scrubbed environment plus `env`, or exactly
    `environ` (one a test built already). Returns the CompletedProcess (with `stdout_text`, `stderr_text`), or with
    `background` the Popen (stdin from a file, so a slow start never blocks the test on a pipe). `argv` replaces
    the command (an interpreter with flags); `text`: stdout and stderr as str."""
    command = [*(argv or CLI), *(["--db", str(db)] if db is not None else []), *args]
    environ = dict(environ) if environ is not None else clean_environ(env)
    data = stdin.encode() if isinstance(stdin, str) else stdin
    if background:
        source = Path(os.environ.get("TMPDIR", "/tmp")) / f"subcog-test-stdin-{os.getpid()}-{time.monotonic_ns()}"
        source.write_bytes(data or b"")
        try:
            with open(source, "rb") as f:
                return subprocess.Popen(command, stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=environ, cwd=cwd)
        finally:
            source.unlink()
    proc = subprocess.run(command, input=data, capture_output=True, env=environ, cwd=cwd, timeout=timeout)
    proc.stdout_text = proc.stdout.decode("utf-8", errors="replace")  # type: ignore[attr-defined]
    proc.stderr_text = proc.stderr.decode("utf-8", errors="replace")  # type: ignore[attr-defined]
    if text:
        proc.stdout, proc.stderr = proc.stdout_text, proc.stderr_text  # type: ignore[attr-defined]
    return proc


def run_hook(event: str, stdin: bytes, *args: str, db: Path | str | None = None,
             env: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None,
             cwd: Path | str | None = None, timeout: float = 60, background: bool = False):
    """A hook as Claude Code runs it: `subcog-store [--db DB] hook EVENT ARGS`, the hook input on stdin."""
    return run_cli("hook", event, *args, db=db, stdin=stdin, env=env, environ=environ, cwd=cwd, timeout=timeout,
                   background=background)


def cli_in_process(monkeypatch, capsys, *argv: str, stdin: bytes = b"", **env: str) -> tuple[int, str, str]:
    """The CLI in this process (fast): exit code, stdout, stderr. An exception that escapes is a test error.
    The environment is scrubbed and the worker kept off (no detached process may outlive the test)."""
    from subcog_store.cli.main import main

    scrub_environ(monkeypatch, **{**NO_WORKER, **env})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    try:
        code = main(list(argv))
    except SystemExit as e:          # argparse
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


READ_BUSY_MS = 30_000   # bounds a broken run only: a passing one waits a few milliseconds at most


def read_rows(db: Path | str, sql: str, params: tuple = ()) -> list[tuple]:
    """The rows of `sql` on a read-only connection that never changes the store's files. Another process (a
    worker writing its backlog after its answer, a checkpoint) may hold a short exclusive moment: the reader
    waits for it instead of failing with "database is locked" on a loaded machine."""
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY, vfs="unix")   # never a test's fault VFS
    con.setbusytimeout(READ_BUSY_MS)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def wait_for(predicate: Callable[[], object], timeout: float = 300.0, step: float = 0.02) -> bool:
    """Poll `predicate` until it is true (True) or `timeout` seconds pass (False): a test waits for a state,
    never for a fixed time. The timeout is a bound for a broken run, not a figure a passing run gets near."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
