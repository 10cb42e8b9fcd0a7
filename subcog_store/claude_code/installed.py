"""Where the client runs this store's hooks from: `install-hooks` entries in its settings files, and the plugin
enabled there (`enabledPlugins`). Both at once run every hook twice: two captures of each compaction and the same
memories injected twice into one request."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from subcog_store.claude_code.install import EVENTS, is_ours
from subcog_store.mcp import register

PLUGIN_NAME = "subcog"
MARKETPLACE_NAME = "subcog-store"
PLUGIN_ID = f"{PLUGIN_NAME}@{MARKETPLACE_NAME}"   # as the client names it in enabledPlugins


@dataclass
class Installed:
    """The settings files (of the user and of one project) that enable the plugin, and those holding our hooks."""
    plugin: list[Path]
    hooks: list[Path]

    @property
    def twice(self) -> bool:
        return bool(self.plugin and self.hooks)

    def describe(self) -> str:
        """One line for `doctor`: which of the two runs the hooks of a session in this folder."""
        if self.twice:
            return self.warning().removeprefix("warning: ")
        if self.plugin:
            return f"the {PLUGIN_ID} plugin ({', '.join(map(str, self.plugin))})"
        if self.hooks:
            return f"install-hooks' entries ({', '.join(map(str, self.hooks))})"
        return "no hook of ours is set up for a session in this folder (the plugin or install-hooks)"

    def warning(self) -> str:
        """What to tell the user when both are active (empty when not)."""
        if not self.twice:
            return ""
        return (f"warning: the {PLUGIN_ID} plugin is enabled ({', '.join(map(str, self.plugin))}) and the hooks are "
                f"installed ({', '.join(map(str, self.hooks))}): every hook would run twice. Keep one: "
                f"`claude plugin uninstall {PLUGIN_ID}`, or `subcog-store install-hooks --uninstall` with the "
                f"same --user/--project")


def settings_files(project: Path | None = None) -> list[Path]:
    """The settings files the client reads for a session in `project` (default: the working directory), the
    later ones overriding the earlier: the user's, the project's, the project's local one."""
    folder = Path(project if project is not None else Path.cwd()).absolute() / ".claude"
    return [register.user_settings_dir() / "settings.json", folder / "settings.json", folder / "settings.local.json"]


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):   # missing, unreadable or not JSON: the client reads nothing from it either
        return {}
    return data if isinstance(data, dict) else {}


def _has_our_hooks(data: dict[str, Any]) -> bool:
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    for event, (sub, _, _) in EVENTS.items():
        groups = hooks.get(event)
        for group in groups if isinstance(groups, list) else []:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if any(is_ours(h, sub) for h in (entries if isinstance(entries, list) else [])):
                return True
    return False


def installed(project: Path | None = None) -> Installed:
    """Where the plugin is enabled and where our hooks are installed, for a session in `project`."""
    found = Installed([], [])
    seen: set[Path] = set()
    for path in settings_files(project):
        if path.resolve() in seen:   # the user's folder is the project's `.claude` when run from home
            continue
        seen.add(path.resolve())
        data = _read(path)
        plugins = data.get("enabledPlugins")
        enabled = plugins.get(PLUGIN_ID) if isinstance(plugins, dict) else None
        if isinstance(enabled, bool):   # a later file's choice overrides an earlier one's
            found.plugin = [path] if enabled else []
        if _has_our_hooks(data):
            found.hooks.append(path)
    return found
