"""The project a hook or tool runs in, as a domain: memories of one repository never meet another's.

The domain is the git top-level of the working directory (else the directory itself), named
`<folder>-<8 hex of its real path>`: readable, stable, and different for two repositories with the same folder
name. SUBCOG_HOOK_DOMAIN overrides it. Stores written before domains were per project hold their memories under
`project`; `subcog-store move-domain project <domain>` moves them.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from subcog_store.config import process_setting

LEGACY_DOMAIN = "project"
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
    name = _UNSAFE.sub("-", root.name).strip("-.")[:60] or "root"
    digest = hashlib.sha256(os.fsencode(str(root))).hexdigest()[:8]
    return f"{name}-{digest}"
