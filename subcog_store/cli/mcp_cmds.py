"""`mcp`: the MCP server Claude Code starts (registered by `install-hooks` and the plugin)."""
# Lazy imports: each command imports what it runs (only `mcp` imports the server).
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse


def register(sub, add) -> None:
    add("mcp", "serve this project's memories to Claude Code over MCP on stdio (search, show, remember, forget)",
        cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    from subcog_store.cli.app import db_path

    return _run(db_path(args))


def serve(db: str | None) -> int:
    """`subcog-store [--db DB] mcp` without the parser (the entry point's fast path): the same database rules,
    the same messages on stderr (a bad setting: exit 3, as any command)."""
    from subcog_store import config
    from subcog_store.errors import SubcogError

    config.log_to_stderr()
    try:
        path = config.db_target(db) if db else config.default_db_path()
    except SubcogError as e:
        config.tell_user(str(e))
        return e.exit_code
    except OSError as e:
        config.tell_user(str(e))
        return 4
    return _run(path)


def _run(db) -> int:
    from subcog_store.mcp.server import main

    return main(db)
