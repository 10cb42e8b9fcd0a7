"""Where Claude Code reads MCP servers, and our entry merged into those files.

Pure edits of parsed JSON (the files themselves are read, backed up and written by `hook.install`):
- project scope: `DIR/.mcp.json` `{"mcpServers": {"subcog": {...}}}`; the client starts such a server only once it
  is approved: interactively (a dialog on first start), or by `enabledMcpjsonServers` /
  `enableAllProjectMcpServers` in a settings file it trusts (a project's `.claude/settings.json` counts only in a
  folder whose trust dialog was accepted), or without asking in `claude -p`;
- user scope: `mcpServers` of the client's global config, `$CLAUDE_CONFIG_DIR/.claude.json`, else
  `~/.claude.json` (no approval needed).
Imports nothing heavy: `install-hooks` uses it, never the MCP SDK.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping

NAME = "subcog"
_OURS = re.compile(r"subcog[-_]store")


def user_settings_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The client's user configuration directory: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    environ = os.environ if environ is None else environ
    if environ.get("CLAUDE_CONFIG_DIR"):
        return Path(environ["CLAUDE_CONFIG_DIR"]).absolute()
    home = environ.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude"


def user_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The client's global config, which holds the user-scope MCP servers: `$CLAUDE_CONFIG_DIR/.claude.json`,
    else `~/.claude.json`."""
    environ = os.environ if environ is None else environ
    if environ.get("CLAUDE_CONFIG_DIR"):
        return Path(environ["CLAUDE_CONFIG_DIR"]).absolute() / ".claude.json"
    home = environ.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude.json"


def server_entry(argv: list[str]) -> dict[str, Any]:
    """Our server's registration: the executable (no shell) and `mcp`."""
    return {"command": argv[0], "args": [*argv[1:], "mcp"]}


def is_ours(entry: Any, wanted: dict[str, Any] | None = None) -> bool:
    """An entry that runs subcog-store (any path, `python -m subcog_store`), or exactly `wanted`."""
    if not isinstance(entry, dict):
        return False
    if wanted is not None and entry.get("command") == wanted["command"] and entry.get("args") == wanted["args"]:
        return True
    parts = [entry.get("command")] + (entry.get("args") if isinstance(entry.get("args"), list) else [])
    return any(isinstance(p, str) and _OURS.search(p) for p in parts)


def validate(data: Any) -> None:
    """Raise ValueError (what is wrong) when the file's shape is not one we can merge into."""
    if not isinstance(data, dict):
        raise ValueError("the top level must be a JSON object")
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ValueError('"mcpServers" must be an object')
    if NAME in servers and not isinstance(servers[NAME], dict):
        raise ValueError(f'"mcpServers.{NAME}" must be an object')


def add(data: dict[str, Any], entry: dict[str, Any]) -> str:
    """Register `entry` as `mcpServers.subcog` (other servers kept; our keys updated in place, the entry's other
    keys such as `env` kept). Returns added | updated | unchanged; ValueError when another program's server
    already has the name."""
    servers = data.setdefault("mcpServers", {})
    old = servers.get(NAME)
    if old is None:
        servers[NAME] = dict(entry)
        return "added"
    if not is_ours(old, entry):
        raise ValueError(f'"mcpServers.{NAME}" is another program\'s server ({str(old.get("command"))[:80]!r}); '
                         "rename or remove it first")
    merged = {**old, **entry}
    if merged == old:
        return "unchanged"
    servers[NAME] = merged
    return "updated"


def remove(data: dict[str, Any]) -> bool:
    """Remove our server (only if it is ours); the other servers stay."""
    servers = data.get("mcpServers")
    if isinstance(servers, dict) and is_ours(servers.get(NAME)):
        del servers[NAME]
        return True
    return False


def _names(settings: dict[str, Any], key: str) -> list[Any] | None:
    value = settings.get(key)
    if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ValueError(f'"{key}" must be a list of server names')
    return value


def approve(settings: dict[str, Any]) -> str:
    """Approve our project server in a project's settings (`enabledMcpjsonServers`), unless the user refused it
    (`disabledMcpjsonServers`, left as it is) or approves every project server already. Returns what was done."""
    enabled = _names(settings, "enabledMcpjsonServers")
    if NAME in (_names(settings, "disabledMcpjsonServers") or []):
        return f"not approved: {NAME!r} is in disabledMcpjsonServers (left as it is)"
    if settings.get("enableAllProjectMcpServers") is True:
        return "approved by enableAllProjectMcpServers"
    if enabled is not None and NAME in enabled:
        return "approved in enabledMcpjsonServers"
    settings["enabledMcpjsonServers"] = [*(enabled or []), NAME]
    return "approved: added to enabledMcpjsonServers"


def unapprove(settings: dict[str, Any]) -> bool:
    """Take our server out of `enabledMcpjsonServers` (the key goes when nothing is left in it)."""
    enabled = _names(settings, "enabledMcpjsonServers")
    if not enabled or NAME not in enabled:
        return False
    rest = [n for n in enabled if n != NAME]
    if rest:
        settings["enabledMcpjsonServers"] = rest
    else:
        del settings["enabledMcpjsonServers"]
    return True
