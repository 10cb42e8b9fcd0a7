"""The project a hook or tool runs in, as a domain: memories of one repository never meet another's.

The domain is the git top-level of the working directory (else the directory itself), named
`<folder>-<8 hex of its real path>`: readable, stable, and different for two repositories with the same folder
name. SUBCOG_HOOK_DOMAIN overrides it. Stores written before domains were per project hold their memories under
`project`; `subcog-store move-domain project <domain>` moves them. USER_DOMAIN holds the developer's preferences
(how they like to work), captured from their words in any project and recalled beside every project's memories;
a project domain always ends in 8 hex digits, so no project is ever named like it.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from subcog_store.config import process_setting
from subcog_store.text.digests import sha256

LEGACY_DOMAIN = "project"
USER_DOMAIN = "user"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_DEPTH = 64


def project_root(cwd: str | os.PathLike | None) -> Path | None:
    """The git top-level holding `cwd` (a `.git` directory or file, as in worktrees), else `cwd` itself; None
    when there is no usable directory."""
    if not cwd:
        return None
    try:
        start = Path(os.path.realpath(os.fspath(cwd)))
    except (OSError, ValueError, TypeError):
        return None
    if not start.is_dir():
        return None
    here = start
    for _ in range(MAX_DEPTH):
        try:
            if (here / ".git").exists():
                return here
        except OSError:
            break
        if here.parent == here:
            break
        here = here.parent
    return start


def domain_for(cwd: str | os.PathLike | None, environ: dict[str, str] | None = None) -> str:
    """The domain of the project `cwd` belongs to (SUBCOG_HOOK_DOMAIN wins; `project` when there is no cwd)."""
    override = process_setting("hook_domain", environ)
    if override:
        return str(override)
    root = project_root(cwd)
    if root is None:
        return LEGACY_DOMAIN
    return _named(root.name, str(root))


def _named(folder: str, path: str) -> str:
    name = _UNSAFE.sub("-", folder).strip("-.")[:60] or "root"
    return f"{name}-{sha256(os.fsencode(path)).hexdigest()[:8]}"


def domain_for_recorded(cwd: str | None, environ: dict[str, str] | None = None) -> str:
    """The domain of a working directory a transcript recorded, as the hooks derived it while it existed: that of
    `domain_for` when the folder is still there; when it is gone, the git top-level among its ancestors that still
    exist (a deleted subfolder of a repository), else the folder itself (its real path as far as it exists); a path
    of another system (`D:\\repo`, relative) by its own text. SUBCOG_HOOK_DOMAIN wins."""
    override = process_setting("hook_domain", environ)
    if override or not cwd:
        return str(override) if override else LEGACY_DOMAIN
    if not cwd.startswith("/") or "\\" in cwd:
        return _named(re.split(r"[\\/]", cwd.rstrip("\\/"))[-1], cwd)
    path = Path(os.path.realpath(cwd))
    if path.is_dir():
        return domain_for(path, environ)
    for ancestor in list(path.parents)[:MAX_DEPTH]:
        try:
            if (ancestor / ".git").exists():
                return _named(ancestor.name, str(ancestor))
        except OSError:
            break
    return _named(path.name, str(path))
