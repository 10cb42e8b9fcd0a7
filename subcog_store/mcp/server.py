"""`subcog-store mcp`: the memory tools over MCP on stdio, served by the official SDK's low-level server.

The SDK is imported here (and in `wire`) only, never on the hook path. Each tool call runs in a worker thread
(the event loop keeps reading, so pings and cancellations are answered during a first model load), one call at a
time on the store. A tool that fails answers a tool error (`isError`); a message that is not valid JSON-RPC is
answered by `wire.Lines`; unknown methods and malformed parameters by the SDK: the server keeps serving until
the client closes its stdin. The server embeds in its own process and does not use the warm worker: it is itself
long-lived and keeps the model loaded after the first call that needs it.
"""
from __future__ import annotations

import logging
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from subcog_store.mcp.tools import TOOLS, ToolError, Tools
from subcog_store.mcp.wire import Lines

log = logging.getLogger("subcog_store.mcp")
NAME = "subcog"


def _version() -> str:
    try:
        return version("subcog-store")
    except PackageNotFoundError:
        return "0"


def tool_list() -> list[types.Tool]:
    """The tools as the client lists them (descriptions and schemas from `tools.TOOLS`)."""
    return [types.Tool(name=name, description=description, input_schema=schema,
                       annotations=types.ToolAnnotations(read_only_hint=True) if read_only else None)
            for name, (description, schema, read_only) in TOOLS.items()]


def _result(text: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def build(tools: Tools) -> Server:
    """The low-level server: `tools/list` and `tools/call` over `tools`."""
    listing = types.ListToolsResult(tools=tool_list())

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return listing

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            return _result(await anyio.to_thread.run_sync(tools.call, params.name, params.arguments))
        except ToolError as e:
            return _result(str(e), error=True)
        except Exception as e:  # noqa: BLE001 - Tools.call raises only ToolError; anything else is still answered
            log.exception("tools/call %s failed", params.name)
            return _result(f"internal error ({type(e).__name__})", error=True)

    return Server(NAME, version=_version(), on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(tools: Tools, stdin: BinaryIO | None = None) -> None:
    """Serve until the client closes stdin (stdout carries the protocol; stray output goes to stderr)."""
    lines = Lines(stdin or sys.stdin.buffer)
    server = build(tools)
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.attach(write_stream)
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(db: Path) -> int:
    """Run the server on this process's stdio for the database `db` and the project of the working directory."""
    from subcog_store.db import bitcache
    from subcog_store.model import provider

    provider.use_local()
    bitcache.enable_from_settings()   # long-lived: a large scope's sign bits are worth holding
    tools = Tools(db)
    try:
        anyio.run(serve, tools)
    finally:
        tools.close()
    return 0
