"""The Claude Code plugin's files, generated from what `install-hooks` registers (one source of truth).

The repository is a one-plugin marketplace (`.claude-plugin/marketplace.json`) whose plugin lives in `plugin/`:
its manifest, its hooks file and its MCP server entry are rendered here from `install.EVENTS` (through the same
function that writes a settings file's hooks) and `mcp.register`, so an event added to the table appears in both.
Every command runs `plugin/scripts/subcog`, which runs the installed `subcog-store` (or says how to install it).

    python -m subcog_store.claude_code.plugin --check    # exit 1 when a committed file differs from what is rendered
    python -m subcog_store.claude_code.plugin --write    # rewrite them (`make plugin`)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from subcog_store.claude_code import install
from subcog_store.claude_code.installed import MARKETPLACE_NAME, PLUGIN_NAME
from subcog_store.mcp import register

ROOT = Path(__file__).resolve().parents[2]          # the checkout (the files are generated in a checkout only)
PLUGIN_DIR = "plugin"
LAUNCHER = "${CLAUDE_PLUGIN_ROOT}/scripts/subcog"   # the client expands it; quoted for a path with spaces
DESCRIPTION = ("Memories for Claude Code that are never stored twice: hooks capture a session's decisions, "
               "learnings and patterns, deduplicated, and bring the relevant ones back in later sessions; an MCP "
               "server lets the model search and remember. Runs the installed subcog-store command.")
AUTHOR = {"name": "subcog-store"}


def version() -> str:
    """The package version: the plugin's version follows it (the client updates a plugin when it changes)."""
    from subcog_store import __version__

    return __version__


def hook_commands() -> dict[str, str]:
    """The plugin's hook command of every event `install-hooks` registers."""
    return {event: f'"{LAUNCHER}" hook {sub}' for event, (sub, _, _) in install.EVENTS.items()}


def hooks_file() -> dict[str, Any]:
    """`plugin/hooks/hooks.json`: the entries `install-hooks` writes into an empty settings file (its own merge
    function), with the plugin's commands."""
    entries: dict[str, Any] = {}
    install._merge_hooks(entries, hook_commands())
    return {"description": "subcog-store: capture on compaction and session end, recall at session start, on "
                           "each prompt and when a file is read or edited or a command fails (the same hooks as "
                           "`subcog-store install-hooks`)",
            "hooks": entries}


def mcp_file() -> dict[str, Any]:
    """`plugin/.mcp.json`: the MCP server `install-hooks` registers, started through the launcher."""
    return {"mcpServers": {register.NAME: register.server_entry([LAUNCHER])}}


def manifest() -> dict[str, Any]:
    """`plugin/.claude-plugin/plugin.json`."""
    return {"name": PLUGIN_NAME, "version": version(), "description": DESCRIPTION, "author": AUTHOR,
            "keywords": ["memory", "deduplication", "sqlite", "hooks", "mcp"]}


def marketplace() -> dict[str, Any]:
    """`.claude-plugin/marketplace.json` at the repository root: a marketplace of this one plugin."""
    return {"name": MARKETPLACE_NAME, "owner": AUTHOR,
            "description": "subcog-store: a memory store for Claude Code that never stores the same thing twice",
            "plugins": [{"name": PLUGIN_NAME, "source": f"./{PLUGIN_DIR}", "description": DESCRIPTION,
                         "version": version()}]}


def files() -> dict[str, str]:
    """Every generated file: path relative to the checkout -> its text."""
    def dump(data: dict[str, Any]) -> str:
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"

    return {f"{PLUGIN_DIR}/hooks/hooks.json": dump(hooks_file()), f"{PLUGIN_DIR}/.mcp.json": dump(mcp_file()),
            f"{PLUGIN_DIR}/.claude-plugin/plugin.json": dump(manifest()),
            ".claude-plugin/marketplace.json": dump(marketplace())}


def stale(root: Path = ROOT) -> list[str]:
    """The generated files that are missing or differ from what is rendered now."""
    out = []
    for rel, text in files().items():
        path = root / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            out.append(rel)
    return out


def write(root: Path = ROOT) -> list[str]:
    """Rewrite the stale files; returns them."""
    changed = stale(root)
    rendered = files()
    for rel in changed:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered[rel], encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--write"]:
        changed = write()
        print("\n".join(f"wrote {rel}" for rel in changed) or "plugin files up to date")
        return 0
    if argv == ["--check"]:
        changed = stale()
        for rel in changed:
            print(f"{rel} differs from what `make plugin` renders", file=sys.stderr)
        return 1 if changed else 0
    print("usage: python -m subcog_store.claude_code.plugin --check | --write", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
