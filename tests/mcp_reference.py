"""The official MCP SDK (the protocol's reference implementation) serving the same tools over stdio: what
`subcog_store.mcp.server` is checked against in tests/test_mcp_protocol.py. Not part of the package.

    python tests/mcp_reference.py DB     (the project is the working directory, as for `subcog-store mcp`)
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from subcog_store.mcp.server import NAME, package_version, tool_list
from subcog_store.mcp.tools import ToolError, Tools


def build(tools: Tools) -> Server:
    listing = types.ListToolsResult(tools=[types.Tool(
        name=t["name"], description=t["description"], input_schema=t["inputSchema"],
        annotations=types.ToolAnnotations(read_only_hint=True) if t.get("annotations") else None)
        for t in tool_list()])

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return listing

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            text, error = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments), False
        except ToolError as e:
            text, error = str(e), True
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)

    return Server(NAME, version=package_version(), on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(tools: Tools) -> None:
    server = build(tools)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    tools = Tools(Path(sys.argv[1]))
    try:
        anyio.run(serve, tools)
    finally:
        tools.close()
