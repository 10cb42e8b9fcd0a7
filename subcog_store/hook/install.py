"""Register subcog-store's Claude Code hooks in a ``settings.json``.

Merges into an existing file (other keys and hooks are kept as they are), is idempotent, writes atomically and
backs up the previous file. The registration format is Claude Code's (``settings.json`` ``hooks``: event, matcher, command, timeout).
"""
from __future__ import annotations

import copy
import json
import os
import re
import shlex
import stat
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# event -> (hook sub-command, matcher, timeout in seconds)
EVENTS: dict[str, tuple[str, str, int]] = {
    "PreCompact": ("pre-compact", "", 30),
    "SessionStart": ("session-start", "compact", 10),
}


class SettingsError(Exception):
    """The settings file cannot be read, parsed or safely modified (the message names the file)."""


@dataclass
class InstallResult:
    """Outcome of an install/uninstall. ``changed`` is what *would* change when ``dry_run``."""

    path: Path
    changed: bool
    backup: Path | None
    added: list[str] = field(default_factory=list)    # events that got a new entry
    updated: list[str] = field(default_factory=list)  # events whose existing entry was rewritten/deduplicated
    removed: list[str] = field(default_factory=list)  # events our entries were removed from (uninstall)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (paths as strings)."""
        d = asdict(self)
        d["path"], d["backup"] = str(self.path), (str(self.backup) if self.backup else None)
        return d


def settings_path(project: Path | None = None, user: bool = False) -> Path:
    """``DIR/.claude/settings.json`` for a project (default: cwd), or ``$HOME/.claude/settings.json`` if ``user``."""
    if user and project is not None:
        raise ValueError("give either a project directory or user=True, not both")
    if user:
        home = os.environ.get("HOME")
        return (Path(home) if home else Path.home()) / ".claude" / "settings.json"
    return Path(project if project is not None else Path.cwd()).absolute() / ".claude" / "settings.json"


def hook_commands(executable: str | None = None) -> dict[str, str]:
    """The hook command lines. ``executable`` is a command prefix used verbatim (the caller quotes it)."""
    if executable is None:
        bindir = Path(os.path.abspath(sys.executable)).parent
        script = next((p for p in (bindir / "subcog-store", bindir / "subcog-store.exe") if p.is_file()), None)
        executable = shlex.quote(str(script)) if script else f"{shlex.quote(sys.executable)} -m subcog_store"
    return {event: f"{executable} hook {sub}" for event, (sub, _, _) in EVENTS.items()}


def _ours_re(sub: str) -> re.Pattern[str]:
    # matches ".../subcog-store hook pre-compact", "'/a b/subcog-store' hook ...", "python -m subcog_store hook ..."
    return re.compile(rf"subcog[-_]store(?:\.exe)?['\"]?\s+hook\s+{re.escape(sub)}(?![\w-])")


def _is_ours(hook: Any, sub: str, command: str | None = None) -> bool:
    cmd = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(cmd, str) and (cmd == command or bool(_ours_re(sub).search(cmd)))


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _no_dup_keys(path: Path):
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for k, v in pairs:
            if k in d:
                raise SettingsError(f"{path}: duplicate key {k!r}; refusing to rewrite it, nothing was changed")
            d[k] = v
        return d
    return hook


def _bad_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _validate(path: Path, data: Any) -> None:
    def bad(where: str, what: str) -> SettingsError:
        return SettingsError(f"{path}: {where} must be {what}; fix it by hand, nothing was changed")

    if not isinstance(data, dict):
        raise bad("the top level", "a JSON object")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise bad('"hooks"', "an object")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise bad(f"hooks.{event}", "a list")
        if event not in EVENTS:
            continue
        for i, g in enumerate(groups):
            if not isinstance(g, dict):
                raise bad(f"hooks.{event}[{i}]", "an object")
            if not isinstance(g.get("matcher", ""), str):
                raise bad(f"hooks.{event}[{i}].matcher", "a string")
            if not isinstance(g.get("hooks", []), list):
                raise bad(f"hooks.{event}[{i}].hooks", "a list")
            for j, h in enumerate(g.get("hooks", [])):
                if not isinstance(h, dict):
                    raise bad(f"hooks.{event}[{i}].hooks[{j}]", "an object")


def _load(path: Path) -> tuple[dict[str, Any], bytes | None]:
    """Parsed settings and the raw bytes (None if the file does not exist). Empty file == ``{}``."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    except OSError as e:
        raise SettingsError(f"{path}: cannot read: {e}") from e
    try:
        text = raw.decode("utf-8-sig")
        data = json.loads(text, object_pairs_hook=_no_dup_keys(path), parse_constant=_bad_constant) if text.strip() else {}
    except ValueError as e:
        raise SettingsError(f"{path}: not valid JSON ({e}); nothing was changed") from e
    _validate(path, data)
    return data, raw


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write(path: Path, text: str, old: bytes | None) -> Path | None:
    """Back up ``old`` (if any) and atomically replace ``path`` (symlinks are followed). Returns the backup."""
    target = Path(os.path.realpath(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        backup = None
        if old is not None:
            mode = stat.S_IMODE(target.stat().st_mode)
            for n in range(10_000):
                backup = target.with_name(target.name + (".bak" if n == 0 else f".bak.{n}"))
                try:
                    with open(backup, "xb") as f:
                        f.write(old)
                    os.chmod(backup, mode)
                    break
                except FileExistsError:
                    continue
        else:
            mode = 0o666 & ~_umask()
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise SettingsError(f"{path}: cannot write: {e}") from e
    return backup


def _apply(path: Path, data: dict[str, Any], new: dict[str, Any], old_raw: bytes | None,
           dry_run: bool, **events: list[str]) -> InstallResult:
    changed = _dump(new) != _dump(data)
    backup = _write(path, _dump(new), old_raw) if changed and not dry_run else None
    return InstallResult(path, changed, backup, **events)


def install_hooks(path: Path, commands: dict[str, str] | None = None, *, dry_run: bool = False) -> InstallResult:
    """Add or update our PreCompact/SessionStart entries in ``path``, keeping everything else."""
    commands = hook_commands() if commands is None else commands
    if unknown := set(commands) - set(EVENTS):
        raise ValueError(f"unknown hook events: {sorted(unknown)}")
    path = Path(path)
    data, raw = _load(path)
    new = copy.deepcopy(data)
    hooks = new.setdefault("hooks", {}) if commands else {}
    added: list[str] = []
    updated: list[str] = []
    for event, command in commands.items():
        sub, matcher, timeout = EVENTS[event]
        groups: list[dict[str, Any]] = hooks.setdefault(event, [])
        before = _dump(groups)
        ours = [(g, h) for g in groups for h in g.get("hooks", []) if _is_ours(h, sub, command)]
        keep = next(((g, h) for g, h in ours if g.get("matcher") == matcher), None) or next(
            ((g, h) for g, h in ours if all(_is_ours(x, sub, command) for x in g["hooks"])), None)
        keep_h = keep[1] if keep else None
        for g in [g for g, h in ours]:  # drop duplicates, and groups only our duplicates lived in
            if "hooks" in g:
                g["hooks"] = [h for h in g["hooks"] if h is keep_h or not _is_ours(h, sub, command)]
        groups[:] = [g for g in groups if g.get("hooks") or not any(g is og for og, _ in ours)]
        if keep:
            keep[0]["matcher"] = matcher
            keep_h.update(type="command", command=command, timeout=timeout)
            if _dump(groups) != before:
                updated.append(event)
        else:
            groups.append({"matcher": matcher, "hooks": [{"type": "command", "command": command, "timeout": timeout}]})
            added.append(event)
    return _apply(path, data, new, raw, dry_run, added=added, updated=updated)


def uninstall_hooks(path: Path, *, dry_run: bool = False) -> InstallResult:
    """Remove only our entries; drop matcher groups, event lists and ``hooks`` that this leaves empty."""
    path = Path(path)
    data, raw = _load(path)
    new = copy.deepcopy(data)
    hooks = new.get("hooks", {})
    removed: list[str] = []
    for event, (sub, _, _) in EVENTS.items():
        groups = hooks.get(event)
        if not groups:
            continue
        hit = [g for g in groups if any(_is_ours(h, sub) for h in g.get("hooks", []))]
        if not hit:
            continue
        removed.append(event)
        for g in hit:
            g["hooks"] = [h for h in g["hooks"] if not _is_ours(h, sub)]
        groups[:] = [g for g in groups if g.get("hooks") or not any(g is x for x in hit)]
        if not groups:
            del hooks[event]
    if removed and not hooks:
        del new["hooks"]
    return _apply(path, data, new, raw, dry_run, removed=removed)
