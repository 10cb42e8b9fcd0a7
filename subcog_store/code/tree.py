"""A project's files, read safely: the working tree (the truth) or the tree of a past commit (what an older
memory was written against).

Every read is bounded and never follows the project out of itself: a file must be a regular file inside the
project's real path, at most MAX_FILE_BYTES (a larger or binary file is there, but its text is not checked), and
a FIFO, a device, a symlink loop or a link out of the project is "unreadable" with the cause. Listing uses git
when the project is a repository (tracked and untracked files, ignored ones left out), else a walk that never
follows links, skips the usual build and dependency folders and stops at MAX_WALK_FILES or the deadline.
"""
from __future__ import annotations

import errno
import logging
import os
import re
import stat
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from subcog_store.code import git
from subcog_store.scope import project_root

log = logging.getLogger("subcog_store.code")
MAX_FILE_BYTES = 1 << 20       # a file's text is checked up to this size
MAX_WALK_FILES = 50_000
READ_CACHE = 256               # files' texts a working tree keeps while it is used (one operation)
MAX_GREP_BYTES = 64 << 20      # text read by the walk's own grep at most
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
                       ".pytest_cache", ".tox", ".cache", "dist", "build", "target", "_build", "deps", ".idea",
                       ".next", "vendor"})


def code_root(cwd: str | os.PathLike | None) -> Path | None:
    """The project whose code memories cite (`scope.project_root`: the git top-level holding `cwd`, else `cwd`),
    or None when there is none or it is the file system's root, the home directory or above it (a session
    started there has no project: its files are never walked nor searched)."""
    root = project_root(cwd)
    if root is None:
        return None
    try:
        home = Path(os.path.realpath(os.path.expanduser("~")))
    except (OSError, ValueError):
        home = None
    if root.parent == root or (home is not None and (root == home or root in home.parents)):
        log.info("no project: %s is the file system root or the home directory (or above it)",
                 "/" if root.parent == root else "the home directory")
        return None
    return root


@dataclass
class Content:
    """A file as read: its text, or why there is none (`missing`: no such file)."""

    text: str | None = None
    problem: str | None = None
    missing: bool = False


def _binary(data: bytes) -> bool:
    return b"\0" in data[:8192]


def decode(data: bytes, path: str) -> Content:
    """Bytes as a file's text (binary or too large: no text, with the reason)."""
    if len(data) > MAX_FILE_BYTES:
        return Content(problem=f"{path} is too large to check ({len(data) >> 10} KiB)")
    if _binary(data):
        return Content(problem=f"{path} is binary")
    return Content(text=data.decode("utf-8", "replace"))


class Tree:
    """The files of a project at one state; `locate` resolves a path as a text names it."""

    def __init__(self, root: Path, deadline: float | None = None):
        self.root = Path(os.path.realpath(root))
        self.deadline = deadline if deadline is not None else time.monotonic() + 30.0
        self._files: set[str] | None = None
        self._by_name: dict[str, list[str]] | None = None
        self._by_stem: dict[str, list[str]] | None = None

    # -- what a subclass provides ------------------------------------------------------------------------------
    def _list(self) -> list[str]:
        raise NotImplementedError

    def read(self, rel: str) -> Content:
        raise NotImplementedError

    def grep(self, words: list[str]) -> list[tuple[str, str]]:
        raise NotImplementedError

    def prefetch(self, paths: list[str]) -> None:
        """Read several files at once where that is cheaper (a commit's tree: one git process)."""

    # -- shared ------------------------------------------------------------------------------------------------
    def left(self) -> float:
        return self.deadline - time.monotonic()

    def files(self) -> set[str]:
        if self._files is None:
            self._files = set(self._list())
        return self._files

    def relative(self, text: str) -> str | None:
        """A path as written (`./a/b.py`, `/abs/path`, `a/b.py:12`) relative to the root, or None when it points
        outside the project."""
        path = text.strip()
        if path.startswith("~"):
            return None
        if path.startswith("/"):
            try:
                rel = os.path.relpath(os.path.realpath(path), self.root)
            except (OSError, ValueError):
                return None
            return None if rel == ".." or rel.startswith("../") else rel.replace(os.sep, "/")
        parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
        if ".." in parts:
            return None
        return "/".join(parts) or None

    def locate(self, text: str) -> list[str]:
        """The project file a mention names: the path itself, else the one file whose path ends with it, else
        (a module, no extension) the one file whose path without its extension ends with it. [] when there is
        none, or several (ambiguous)."""
        rel = self.relative(text)
        if not rel:
            if text.strip().startswith(("/", "~", "..")):
                log.info("a cited path points outside the project: not cited")
            return []
        files = self.files()
        if rel in files:
            return [rel]
        self._index()
        name = rel.rsplit("/", 1)[-1]
        found = [p for p in self._by_name.get(name, []) if p == rel or p.endswith("/" + rel)]
        if not found and "." not in name:
            found = [p for p in self._by_stem.get(name, []) if _stem(p) == rel or _stem(p).endswith("/" + rel)
                     or p.endswith("/" + rel + "/__init__.py") or p == rel + "/__init__.py"]
        return found if len(found) == 1 else []

    def _index(self) -> None:
        if self._by_name is not None:
            return
        self._by_name, self._by_stem = {}, {}
        for path in self.files():
            name = path.rsplit("/", 1)[-1]
            self._by_name.setdefault(name, []).append(path)
            key = name.rsplit(".", 1)[0] if name != "__init__.py" else path.rsplit("/", 2)[-2] if "/" in path else ""
            self._by_stem.setdefault(key, []).append(path)


def _stem(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path


class WorkingTree(Tree):
    """The project as it is on disk."""

    def __init__(self, root: Path, deadline: float | None = None):
        super().__init__(root, deadline)
        self.is_git = git.is_repository(self.root)
        self._prefix = os.path.join(str(self.root), "")
        self._read_cache: OrderedDict[str, Content] = OrderedDict()
        self._real_dirs: dict[str, str] = {}     # a folder's real path, resolved once per operation

    def _list(self) -> list[str]:
        if self.is_git:
            listed = git.list_files(self.root, timeout=min(5.0, self.left()))
            if listed is not None:
                return listed
        return walk(self.root, self.deadline)

    def fingerprint(self, rel: str) -> tuple[int, int] | str:
        """(size, mtime ns) of a cited file, or why there is none ('missing', 'unreadable: ...')."""
        try:
            st = os.stat(self._prefix + rel)      # a string, not a Path: one stat per cited file per check
        except FileNotFoundError:
            return "missing"
        except OSError as e:   # a symlink loop, a permission, a name too long
            return f"unreadable: {errno.errorcode.get(e.errno, e.errno)}"
        if not stat.S_ISREG(st.st_mode):
            return "missing" if stat.S_ISDIR(st.st_mode) else "unreadable: not a regular file"
        return st.st_size, st.st_mtime_ns

    def read(self, rel: str) -> Content:
        """The file's text now (the last READ_CACHE reads are kept: a file many memories cite is read once)."""
        if rel in self._read_cache:
            self._read_cache.move_to_end(rel)
            return self._read_cache[rel]
        content = self._read(rel)
        self._read_cache[rel] = content
        if len(self._read_cache) > READ_CACHE:
            self._read_cache.popitem(last=False)
        return content

    def _read(self, rel: str) -> Content:
        try:
            real = self._realpath(self._prefix + rel)
        except FileNotFoundError:
            return Content(problem=f"{rel} does not exist", missing=True)
        except OSError as e:
            return Content(problem=f"{rel} cannot be read ({errno.errorcode.get(e.errno, e.errno)})")
        if os.path.commonpath([real, str(self.root)]) != str(self.root):
            return Content(problem=f"{rel} points outside the project")
        try:
            st = os.stat(real)
            if stat.S_ISDIR(st.st_mode):
                return Content(problem=f"{rel} is a directory", missing=True)
            if not stat.S_ISREG(st.st_mode):
                return Content(problem=f"{rel} is not a regular file")
            if st.st_size > MAX_FILE_BYTES:
                return Content(problem=f"{rel} is too large to check ({st.st_size >> 10} KiB)")
            fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
        except OSError as e:
            return Content(problem=f"{rel} cannot be read ({errno.errorcode.get(e.errno, e.errno)})")
        return decode(data, rel)

    def _realpath(self, path: str) -> str:
        """`os.path.realpath(path, strict=True)`, its folder's part resolved once (a check reads thousands of
        files of the same few folders): the file's own name is followed only when it is a link."""
        folder, name = os.path.split(path)
        if not name or name in (".", "..") or stat.S_ISLNK(os.lstat(path).st_mode):
            return os.path.realpath(path, strict=True)
        real = self._real_dirs.get(folder)
        if real is None:
            real = self._real_dirs[folder] = os.path.realpath(folder, strict=True)
        return os.path.join(real, name)

    def grep(self, words: list[str]) -> list[tuple[str, str]]:
        if self.is_git:
            found = git.grep(self.root, words, timeout=min(5.0, self.left()))
            if found is not None:
                return found
        return _python_grep(self, words)


class CommitTree(Tree):
    """The project as a past commit has it (files and their text from git)."""

    def __init__(self, root: Path, commit: str, deadline: float | None = None):
        super().__init__(root, deadline)
        self.commit = commit
        self._cache: dict[str, Content] = {}

    def _list(self) -> list[str]:
        return git.tree_files(self.root, self.commit, timeout=min(5.0, self.left())) or []

    def read(self, rel: str) -> Content:
        if rel not in self._cache:
            self.prefetch([rel])
        return self._cache[rel]

    def prefetch(self, paths: list[str]) -> None:
        """Read several files at once (one git process)."""
        wanted = [p for p in dict.fromkeys(paths) if p not in self._cache]
        if not wanted:
            return
        data = git.show(self.root, self.commit, wanted, MAX_FILE_BYTES, timeout=min(5.0, self.left()))
        for path in wanted:
            blob = data.get(path)
            self._cache[path] = decode(blob, path) if blob is not None else Content(
                problem=f"{path} is not in commit {self.commit[:10]} (or too large)", missing=path not in self.files())

    def grep(self, words: list[str]) -> list[tuple[str, str]]:
        return git.grep(self.root, words, commit=self.commit, timeout=min(5.0, self.left())) or []


def walk(root: Path, deadline: float) -> list[str]:
    """A project's files without git: no links followed, the usual build and dependency folders skipped, at most
    MAX_WALK_FILES, until the deadline."""
    out: list[str] = []
    for here, dirs, names in os.walk(root, followlinks=False, onerror=lambda e: log.info("walk: %s", e)):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        rel_dir = os.path.relpath(here, root).replace(os.sep, "/")
        for name in names:
            out.append(name if rel_dir == "." else f"{rel_dir}/{name}")
        if len(out) >= MAX_WALK_FILES or time.monotonic() > deadline:
            log.info("walk of the project stopped at %d files (%s)", len(out),
                     "limit" if len(out) >= MAX_WALK_FILES else "time")
            break
    return out[:MAX_WALK_FILES]


def _python_grep(tree: Tree, words: list[str]) -> list[tuple[str, str]]:
    """The lines of the project's text files holding a word (without git), bounded by MAX_GREP_BYTES and the
    deadline."""
    if not words:
        return []
    pattern = re.compile(r"(?<![\w])(?:" + "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
                         + r")(?![\w])")
    found, read = [], 0
    for rel in sorted(tree.files()):
        if read > MAX_GREP_BYTES or tree.left() <= 0:
            log.info("search of the project stopped after %d KiB (%s)", read >> 10,
                     "limit" if read > MAX_GREP_BYTES else "time")
            break
        content = tree.read(rel)
        if content.text is None:
            continue
        read += len(content.text)
        if pattern.search(content.text):
            found += [(rel, line) for line in content.text.splitlines() if pattern.search(line)]
    return found
