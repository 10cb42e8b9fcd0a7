"""`mcp`: the MCP server Claude Code starts (registered by `install-hooks`)."""
from __future__ import annotations

import argparse

from subcog_store.cli.app import db_path


def register(sub, add) -> None:
    add("mcp", "serve this project's memories to Claude Code over MCP on stdio (search, show, remember, forget)",
        cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    from subcog_store.mcp.server import main

    return main(db_path(args))
