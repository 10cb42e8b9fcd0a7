"""The MCP server (`subcog-store mcp`): the memory tools for Claude Code over stdio.

`register` (where the client reads MCP servers; used by `install-hooks`, light imports), `tools` (the tools in
plain Python), `wire` (the stdio framing: bounded lines, JSON-RPC errors for bad messages), `server` (the SDK's
low-level server). Only `server` and `wire` import the MCP SDK; nothing on the hook path imports this package's
server.
"""
