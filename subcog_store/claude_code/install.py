"""Register subcog-store in Claude Code: the hooks in a ``settings.json``, the MCP server beside them.

Merges into existing files (other keys, hooks and servers are kept as they are), is idempotent, writes
atomically and backs up each previous file; the files of one install are all written or none is (a failed second
write puts the first back). The formats are Claude Code's (``settings.json`` ``hooks``: event, matcher, command,
timeout; ``.mcp.json`` / ``.claude.json`` ``mcpServers``, see ``mcp.register``).
"""
from __future__ import annotations

import copy
import json
import logging
import os
import re
import shlex
import stat
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from subcog_store.mcp import register

log = logging.getLogger("subcog_store.install")
AUTO = "auto"
# event -> (sub-command, matcher (None: none; "": all), timeout s). SessionEnd: the client waits max(1.5 s, its largest
# timeout, 60 s at most; CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS overrides). PostToolUse(Failure): code/touch.
EVENTS: dict[str, tuple[str, str | None, int]] = {
    "PreCompact": ("pre-compact", "", 30),
    "PostCompact": ("post-compact", "", 30),
    "SessionStart": ("session-start", "", 10),
    "UserPromptSubmit": ("user-prompt-submit", None, 5),
    "SessionEnd": ("session-end", "", 30),
    "PostToolUse": ("post-tool-use", "Read|Edit|MultiEdit|Write|NotebookEdit", 5),
    "PostToolUseFailure": ("post-tool-use-failure", "Bash", 5),
}


class SettingsError(Exception):
    """The settings file cannot be read, parsed or safely modified (the message names the file)."""


@dataclass
class McpResult:
    """The MCP server's registration in one file. ``approval``: project scope, what was done about the client's
    approval of ``.mcp.json`` servers (None: nothing to do, user scope)."""

    path: Path
    changed: bool
    backup: Path | None
    action: str                     # added | updated | unchanged | removed | absent
    approval: str | None = None


@dataclass
class InstallResult:
    """Outcome of an install/uninstall. ``changed`` is what *would* change when ``dry_run`` (in any file);
    ``backup`` is the settings file's; ``mcp`` the server's registration (None: not registered for this file)."""

    path: Path
    changed: bool
    backup: Path | None
    added: list[str] = field(default_factory=list)    # events that got a new entry
    updated: list[str] = field(default_factory=list)  # events whose existing entry was rewritten/deduplicated
    removed: list[str] = field(default_factory=list)  # events our entries were removed from (uninstall)
    mcp: McpResult | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (paths as strings)."""
        d = asdict(self)
        d["path"], d["backup"] = str(self.path), (str(self.backup) if self.backup else None)
        if self.mcp:
            d["mcp"].update(path=str(self.mcp.path), backup=str(self.mcp.backup) if self.mcp.backup else None)
        return d


def settings_path(project: Path | None = None, user: bool = False) -> Path:
    """``DIR/.claude/settings.json`` for a project (default: cwd), or the user's ``settings.json``
    (``$CLAUDE_CONFIG_DIR``, else ``~/.claude``, as the client reads it) if ``user``."""
    if user and project is not None:
        raise ValueError("give either a project directory or user=True, not both")
    if user:
        return register.user_settings_dir() / "settings.json"
    return Path(project if project is not None else Path.cwd()).absolute() / ".claude" / "settings.json"


def mcp_config_path(settings: Path) -> Path | None:
    """Where the MCP server of the scope ``settings`` belongs to is registered: the user's global config beside
    the user's settings, ``DIR/.mcp.json`` beside ``DIR/.claude/settings.json``; None for any other file."""
    settings = Path(settings).absolute()
    if settings == settings_path(user=True).absolute():
        return register.user_config_path()
    if settings.name == "settings.json" and settings.parent.name == ".claude":
        return settings.parent.parent / ".mcp.json"
    return None


def executable_argv() -> list[str]:
    """How this installation is started: its ``subcog-store`` script, else ``python -m subcog_store``."""
    bindir = Path(os.path.abspath(sys.executable)).parent
    script = next((p for p in (bindir / "subcog-store", bindir / "subcog-store.exe") if p.is_file()), None)
    return [str(script)] if script else [sys.executable, "-m", "subcog_store"]


def hook_commands(executable: str | None = None) -> dict[str, str]:
    """The hook command lines: this interpreter without `site` running `claude_code/command.py` (the fastest
    start), or ``executable``, a command prefix used verbatim (the caller quotes it), followed by ``hook EVENT``."""
    script = Path(__file__).resolve().parent / "command.py"
    prefix = shlex.join([sys.executable, "-S", "-P", str(script)]) if executable is None else f"{executable} hook"
    return {event: f"{prefix} {sub}" for event, (sub, _, _) in EVENTS.items()}


def _ours_re(sub: str) -> re.Pattern[str]:
    # ".../subcog-store hook pre-compact", "'/a b/subcog-store' hook ...", "python -m subcog_store hook ...",
    # "python -S -P .../subcog_store/claude_code/command.py pre-compact" (an earlier install's: .../hook/command.py)
    return re.compile(rf"(?:subcog[-_]store(?:\.exe)?['\"]?\s+hook"
                      rf"|subcog_store[/\\](?:hook|claude_code)[/\\]command\.py['\"]?)"
                      rf"\s+{re.escape(sub)}(?![\w-])")


def is_ours(hook: Any, sub: str, command: str | None = None) -> bool:
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
    for key in ("enabledMcpjsonServers", "disabledMcpjsonServers"):
        if key in data and not (isinstance(data[key], list) and all(isinstance(n, str) for n in data[key])):
            raise bad(f'"{key}"', "a list of server names")
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


def _load(path: Path, anchor: Path | None = None,
          check: Callable[[Path, Any], None] | None = None) -> tuple[dict[str, Any], bytes | None]:
    """Parsed JSON and the raw bytes (None if the file does not exist). Empty file == ``{}``.

    ``anchor`` (default: the directory that holds ``.claude``, the project or the home directory) must exist: a
    mistyped ``--project`` is an error, never a new directory tree."""
    home = anchor if anchor is not None else path.parent.parent
    if not home.is_dir():
        raise SettingsError(f"{home} is not an existing directory; nothing was changed")
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
    (check or _validate)(path, data)
    return data, raw


def _check_mcp(path: Path, data: Any) -> None:
    try:
        register.validate(data)
    except ValueError as e:
        raise SettingsError(f"{path}: {e}; fix it by hand, nothing was changed") from None


def _write(path: Path, text: str, old: bytes | None) -> Path | None:
    """Back up ``old`` (if any) and atomically replace ``path`` (symlinks are followed). Returns the backup. On
    failure nothing is left behind (no backup, no temporary file)."""
    target = Path(os.path.realpath(path))
    backup = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if old is not None:
            mode = stat.S_IMODE(target.stat().st_mode)
            for n in range(10_000):
                candidate = target.with_name(target.name + (".bak" if n == 0 else f".bak.{n}"))
                try:
                    with open(candidate, "xb") as f:
                        backup = candidate
                        f.write(old)
                    os.chmod(backup, mode)
                    break
                except FileExistsError:
                    continue
        else:
            mask = os.umask(0o022)
            os.umask(mask)
            mode = 0o666 & ~mask
        _replace(target, text.encode("utf-8"), mode)
    except OSError as e:
        if backup is not None:
            backup.unlink(missing_ok=True)
        raise SettingsError(f"{path}: cannot write: {e}") from e
    return backup


def _replace(target: Path, data: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass
class _Edit:
    """One file of an install: as read, and as it should be."""

    path: Path
    old: dict[str, Any]
    new: dict[str, Any]
    raw: bytes | None

    @property
    def changed(self) -> bool:
        return _dump(self.new) != _dump(self.old)


def _commit(edits: list[_Edit], dry_run: bool) -> list[Path | None]:
    """Write every changed file (each atomically, with its backup); when one fails, the ones already written
    are put back as they were (and their backups removed) before the error is raised. Returns the backups."""
    backups: list[Path | None] = [None] * len(edits)
    for edit in edits:
        if edit.changed and edit.raw is not None and not os.stat(edit.path).st_mode & 0o222:
            raise SettingsError(f"{edit.path} is read-only; make it writable first, nothing was changed")
    if dry_run:
        return backups
    done: list[int] = []
    try:
        for i, edit in enumerate(edits):
            if edit.changed:
                backups[i] = _write(edit.path, _dump(edit.new), edit.raw)
                done.append(i)
    except SettingsError:
        for i in reversed(done):
            _undo(edits[i], backups[i])
        raise
    return backups


def _undo(edit: _Edit, backup: Path | None) -> None:
    target = Path(os.path.realpath(edit.path))
    try:
        if edit.raw is None:
            target.unlink(missing_ok=True)
        else:
            _replace(target, edit.raw, stat.S_IMODE((backup or target).stat().st_mode))
        if backup is not None:
            backup.unlink(missing_ok=True)
    except OSError as e:  # the error being raised says what failed; this one is logged
        log.warning("%s: could not be put back after a failed install (%s); its backup is %s", edit.path, e, backup)


def _merge_hooks(hooks: dict[str, Any], commands: dict[str, str]) -> tuple[list[str], list[str]]:
    """Add or update our entry of each event in ``hooks`` (in place); returns the events added and updated."""
    added: list[str] = []
    updated: list[str] = []
    for event, command in commands.items():
        sub, matcher, timeout = EVENTS[event]
        groups: list[dict[str, Any]] = hooks.setdefault(event, [])
        before = _dump(groups)
        ours = [(g, h) for g in groups for h in g.get("hooks", []) if is_ours(h, sub, command)]
        keep = next(((g, h) for g, h in ours if matcher is None or g.get("matcher") == matcher), None) or next(
            ((g, h) for g, h in ours if all(is_ours(x, sub, command) for x in g["hooks"])), None)
        keep_h = keep[1] if keep else None
        for g in [g for g, h in ours]:  # drop duplicates, and groups only our duplicates lived in
            if "hooks" in g:
                g["hooks"] = [h for h in g["hooks"] if h is keep_h or not is_ours(h, sub, command)]
        groups[:] = [g for g in groups if g.get("hooks") or not any(g is og for og, _ in ours)]
        if keep:
            if matcher is not None:
                keep[0]["matcher"] = matcher
            keep_h.update(type="command", command=command, timeout=timeout)
            if _dump(groups) != before:
                updated.append(event)
        else:
            entry = {"type": "command", "command": command, "timeout": timeout}
            groups.append({"hooks": [entry]} if matcher is None else {"matcher": matcher, "hooks": [entry]})
            added.append(event)
    return added, updated


def _mcp_edit(settings: Path, mcp: Path | None | str) -> _Edit | None:
    path = mcp_config_path(settings) if mcp == AUTO else mcp
    if path is None:
        return None
    data, raw = _load(Path(path), anchor=Path(path).parent, check=_check_mcp)
    return _Edit(Path(path), data, copy.deepcopy(data), raw)


def _finish(edit: _Edit, mcp: tuple[_Edit, McpResult] | None, dry_run: bool, **events: list[str]) -> InstallResult:
    edits = [edit] + ([mcp[0]] if mcp else [])
    backups = _commit(edits, dry_run)
    if mcp:
        mcp[1].changed, mcp[1].backup = mcp[0].changed, backups[1]
    return InstallResult(edit.path, any(e.changed for e in edits), backups[0], **events, mcp=mcp[1] if mcp else None)


def install_hooks(path: Path, commands: dict[str, str] | None = None, *, dry_run: bool = False,
                  mcp: Path | None | str = AUTO, server: dict[str, Any] | None = None,
                  approve: bool = True) -> InstallResult:
    """Add or update our hook entries in the settings file ``path``, keeping everything else, and register the MCP
    server (``server``, default: this installation's) in ``mcp``: by default the file of the same scope
    (``mcp_config_path``); None: hooks only. In a project, the server is approved in the same settings file
    (``enabledMcpjsonServers``) when ``approve``, unless ``disabledMcpjsonServers`` names it."""
    commands = hook_commands() if commands is None else commands
    if unknown := set(commands) - set(EVENTS):
        raise ValueError(f"unknown hook events: {sorted(unknown)}")
    data, raw = _load(Path(path))
    edit = _Edit(Path(path), data, copy.deepcopy(data), raw)
    added, updated = _merge_hooks(edit.new.setdefault("hooks", {}), commands) if commands else ([], [])
    mcp_edit, mcp = _mcp_edit(edit.path, mcp), None
    if mcp_edit:
        try:
            action = register.add(mcp_edit.new, server or register.server_entry(executable_argv()))
        except ValueError as e:
            raise SettingsError(f"{mcp_edit.path}: {e}; nothing was changed") from None
        approval = (register.approve(edit.new) if approve else "not approved: the client asks") \
            if mcp_edit.path.name == ".mcp.json" else None
        mcp = (mcp_edit, McpResult(mcp_edit.path, False, None, action, approval))
    result = _finish(edit, mcp, dry_run, added=added, updated=updated)
    if mcp and not dry_run and (mcp[1].approval or "").startswith("approved: added"):
        log.warning("approved the MCP server %r of %s in %s (enabledMcpjsonServers): Claude Code starts it in this "
                    "folder, once trusted, without asking; list it in disabledMcpjsonServers to refuse it",
                    register.NAME, mcp_edit.path, edit.path)
    return result


def uninstall_hooks(path: Path, *, dry_run: bool = False, mcp: Path | None | str = AUTO) -> InstallResult:
    """Remove only our entries; drop matcher groups, event lists and ``hooks`` that this leaves empty; remove our
    MCP server from the file of the same scope, and its approval."""
    data, raw = _load(Path(path))
    edit = _Edit(Path(path), data, copy.deepcopy(data), raw)
    hooks = edit.new.get("hooks", {})
    removed: list[str] = []
    for event, (sub, _, _) in EVENTS.items():
        groups = hooks.get(event)
        hit = [g for g in groups or [] if any(is_ours(h, sub) for h in g.get("hooks", []))]
        if not hit:
            continue
        removed.append(event)
        for g in hit:
            g["hooks"] = [h for h in g["hooks"] if not is_ours(h, sub)]
        groups[:] = [g for g in groups if g.get("hooks") or not any(g is x for x in hit)]
        if not groups:
            del hooks[event]
    if removed and not hooks:
        del edit.new["hooks"]
    mcp_edit, mcp = _mcp_edit(edit.path, mcp), None
    if mcp_edit:
        unapproved = register.unapprove(edit.new) if mcp_edit.path.name == ".mcp.json" else False
        action = "removed" if register.remove(mcp_edit.new) else "absent"
        mcp = (mcp_edit, McpResult(mcp_edit.path, False, None, action, "approval removed" if unapproved else None))
    return _finish(edit, mcp, dry_run, removed=removed)
