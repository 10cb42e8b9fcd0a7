"""The few questions asked of git, each a bounded subprocess that fails open (None, and the cause in the log):
the commit checked out, the project's files, where words occur, what was renamed or deleted since a commit, the
commit a past moment was at, and a file's content at a commit.

Run without the caller's GIT_* variables, with GIT_OPTIONAL_LOCKS=0 (a status or diff never writes the index a
user's git may be writing) and no prompt.
"""
from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

log = logging.getLogger("subcog_store.code")
MAX_OUTPUT = 32 << 20      # bytes of a command's output read at most (a grep of a common word stops there)
DEFAULT_TIMEOUT = 5.0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_CONFIG_NOSYSTEM="1")
    return env


def is_repository(root: Path) -> bool:
    """`root` holds a `.git` directory or file (a worktree, a submodule)."""
    try:
        return (Path(root) / ".git").exists()
    except OSError:
        return False


def run(root: Path, args: list[str], timeout: float = DEFAULT_TIMEOUT, ok_codes: tuple[int, ...] = (0,),
        stdin: bytes | None = None) -> bytes | None:
    """`git -C root ARGS`'s output, or None when git is missing, fails, or outlasts `timeout` (the cause is
    logged). Output past MAX_OUTPUT is cut (`truncated` is logged)."""
    if timeout <= 0:
        log.info("git %s: no time left", args[0])
        return None
    try:
        proc = subprocess.Popen(["git", "-C", str(root), "-c", "core.quotepath=off", *args], env=_env(),
                                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        log.info("git unavailable: %s", e)
        return None
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        log.info("git %s: gave up after %.1f s", args[0], timeout)
        return None
    if proc.returncode not in ok_codes:
        log.info("git %s failed (exit %s): %s", args[0], proc.returncode,
                 err.decode("utf-8", "replace").strip()[:200])
        return None
    if len(out) > MAX_OUTPUT:
        log.info("git %s: output cut at %d bytes", args[0], MAX_OUTPUT)
        out = out[:MAX_OUTPUT]
    return out


def head(root: Path, timeout: float = DEFAULT_TIMEOUT) -> str | None:
    """The commit checked out (also on a detached HEAD); None outside a repository or before its first commit."""
    if not is_repository(root):
        return None
    out = run(root, ["rev-parse", "--verify", "-q", "HEAD"], timeout, ok_codes=(0, 1))
    text = out.decode().strip() if out else ""
    return text if len(text) in (40, 64) else None


def list_files(root: Path, timeout: float = DEFAULT_TIMEOUT) -> list[str] | None:
    """The project's files: tracked, and untracked ones not ignored (repository-relative, '/'-separated)."""
    out = run(root, ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], timeout)
    return None if out is None else sorted({p for p in out.decode("utf-8", "replace").split("\0") if p})


def tree_files(root: Path, commit: str, timeout: float = DEFAULT_TIMEOUT) -> list[str] | None:
    """The files of a commit."""
    out = run(root, ["ls-tree", "-r", "-z", "--name-only", commit], timeout)
    return None if out is None else [p for p in out.decode("utf-8", "replace").split("\0") if p]


def grep(root: Path, words: list[str], commit: str | None = None, timeout: float = DEFAULT_TIMEOUT
         ) -> list[tuple[str, str]] | None:
    """(path, line) of every text line holding one of `words` as a whole word, in the working tree (tracked and
    untracked files not ignored) or at `commit`."""
    if not words:
        return []
    args = ["grep", "-I", "-z", "-w", "-F", "--no-color", "--full-name"]
    args += ["--untracked"] if commit is None else []
    for word in words:
        args += ["-e", word]
    args += [commit] if commit else []
    out = run(root, args, timeout, ok_codes=(0, 1))
    if out is None:
        return None
    found = []
    prefix = f"{commit}:" if commit else ""
    for row in out.decode("utf-8", "replace").split("\n"):
        path, _, line = row.partition("\0")
        if line or path:
            found.append((path[len(prefix):] if prefix and path.startswith(prefix) else path, line))
    return found


def has_commit(root: Path, commit: str, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """The commit is in this repository (a shallow clone or a rewritten history may have lost it)."""
    return run(root, ["cat-file", "-e", f"{commit}^{{commit}}"], timeout, ok_codes=(0,)) is not None


def moves_since(root: Path, commit: str, timeout: float = DEFAULT_TIMEOUT) -> dict[str, str | None] | None:
    """Files renamed (old -> new) or deleted (old -> None) between `commit` and the working tree."""
    out = run(root, ["diff", "-z", "--name-status", "-M", "--diff-filter=DR", commit, "--"], timeout)
    if out is None:
        return None
    parts = out.decode("utf-8", "replace").split("\0")
    moves: dict[str, str | None] = {}
    i = 0
    while i < len(parts) and parts[i]:
        status = parts[i]
        if status.startswith("R") and i + 2 < len(parts):
            moves[parts[i + 1]] = parts[i + 2]
            i += 3
        else:
            if i + 1 < len(parts):
                moves[parts[i + 1]] = None
            i += 2
    return moves


def commits_touching(root: Path, commit: str, path: str, timeout: float = DEFAULT_TIMEOUT) -> int | None:
    """How many commits since `commit` changed `path` (for a report)."""
    out = run(root, ["rev-list", "--count", f"{commit}..HEAD", "--", path], timeout)
    try:
        return int(out.decode().strip()) if out else None
    except ValueError:
        return None


def show(root: Path, commit: str, paths: list[str], max_bytes: int, timeout: float = DEFAULT_TIMEOUT
         ) -> dict[str, bytes | None]:
    """The content of each path at `commit` (None: absent, or larger than `max_bytes`), in one `cat-file`."""
    if not paths:
        return {}
    sizes = run(root, ["cat-file", "--batch-check=%(objectsize)"], timeout,
                stdin="".join(f"{commit}:{p}\n" for p in paths).encode())
    out: dict[str, bytes | None] = {p: None for p in paths}
    if sizes is None:
        return out
    wanted = [p for p, line in zip(paths, sizes.decode().splitlines())
              if line.strip().isdigit() and int(line) <= max_bytes]
    if not wanted:
        return out
    data = run(root, ["cat-file", "--batch"], timeout, stdin="".join(f"{commit}:{p}\n" for p in wanted).encode())
    pos = 0
    for path in wanted:
        if data is None:
            break
        end = data.find(b"\n", pos)
        header = data[pos:end].split()
        if end < 0 or len(header) < 3 or not header[2].isdigit():
            break
        size = int(header[2])
        out[path] = data[end + 1:end + 1 + size]
        pos = end + 1 + size + 1
    return out


def history(root: Path, limit: int = 100_000, timeout: float = DEFAULT_TIMEOUT
            ) -> list[tuple[str, float]] | None:
    """HEAD's first-parent history, newest first: (commit, commit time in unix seconds)."""
    out = run(root, ["log", "--first-parent", f"--max-count={limit}", "--format=%H %ct", "HEAD"], timeout)
    if out is None:
        return None
    rows = []
    for line in out.decode().splitlines():
        sha, _, when = line.partition(" ")
        if when.strip().isdigit():
            rows.append((sha, float(when)))
    return rows
