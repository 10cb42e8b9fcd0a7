"""The MCP protocol of `subcog-store mcp`: both eras a stdio client may speak, as the official SDK serves them.

- The 2025 handshake (protocol versions 2024-11-05 to 2025-11-25): `initialize` negotiates a version, then
  `tools/list`, `tools/call`, `ping`.
- The 2026-07-28 protocol (Claude Code 2.1.328 speaks it): no handshake; `server/discover`, then every request
  carries its own envelope (`params._meta` with the protocol version and the client's capabilities), and every
  result says `resultType` and who answered (`_meta` serverInfo).

The client's first request decides the connection's era once: one carrying the 2026-07-28 envelope (and not
`initialize`) opens a modern connection, anything else a handshake one; a request of the other era is then refused.
Replies match the SDK's (mcp 2.3) on the same messages, which `tests/test_mcp_protocol.py` checks against the SDK
itself. Pure: `Protocol.handle` turns a message into a reply, or into a `ToolCall` the server runs off the read loop.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from subcog_store.mcp.wire import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, \
    UNSUPPORTED_PROTOCOL_VERSION, Message, error

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
CAPABILITIES = {"tools": {"listChanged": False}}
CACHE_HINT = {"ttlMs": 0, "cacheScope": "private"}    # the SDK's default on discover and tools/list results


class ToolCall(NamedTuple):
    """A `tools/call` to run off the read loop; `reply(text, is_error)` is its response in the call's era."""

    request_id: str | int
    name: str
    arguments: dict[str, Any] | None
    reply: Callable[[str, bool], dict[str, Any]]


def _result(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _invalid_params(request_id: Any) -> dict[str, Any]:
    return error(request_id, INVALID_PARAMS, "Invalid request parameters", "")


def _not_found(request_id: Any, method: str) -> dict[str, Any]:
    return error(request_id, METHOD_NOT_FOUND, "Method not found", method)


def _has_envelope(params: dict[str, Any] | None) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and VERSION_KEY in meta


class Protocol:
    """One connection's protocol state. `tools`: the listing (name, description, input schema, read-only)."""

    def __init__(self, name: str, version: str, tools: list[dict[str, Any]]):
        self.server_info = {"name": name, "version": version}
        self.tools = tools
        self.era: str | None = None            # "handshake" | "modern", decided by the first request
        self.initialized = False               # handshake: `initialize` answered

    def handle(self, message: Message) -> dict[str, Any] | ToolCall | None:
        """The reply to `message` (None for a notification or a response), or the tool call to run."""
        if not message.is_request:
            return None
        if self.era is None:
            modern = message.method != "initialize" and _has_envelope(message.params)
            self.era = "modern" if modern else "handshake"
        if self.era == "modern":
            return self._modern(message)
        return self._handshake(message)

    # -- the 2025 handshake -------------------------------------------------------------------------------------
    def _handshake(self, m: Message) -> dict[str, Any] | ToolCall:
        if m.method != "initialize" and _has_envelope(m.params):
            return error(m.id, INVALID_REQUEST, "this connection serves the handshake protocol era; requests "
                                                "carrying the 2026-07-28 envelope are not accepted on it")
        if m.method == "initialize":
            version = _initialize_version(m.params)
            if version is None:
                return _invalid_params(m.id)
            self.initialized = True
            return _result(m.id, {"protocolVersion": version if version in HANDSHAKE_VERSIONS else
                                  HANDSHAKE_VERSIONS[-1], "capabilities": CAPABILITIES,
                                  "serverInfo": dict(self.server_info)})
        if m.method == "ping":
            return _result(m.id, {})
        if m.method not in ("tools/list", "tools/call"):
            return _not_found(m.id, m.method)
        if not self.initialized:
            return _invalid_params(m.id)
        return self._tools(m, lambda result: result)

    # -- the 2026-07-28 protocol ---------------------------------------------------------------------------------
    def _modern(self, m: Message) -> dict[str, Any] | ToolCall:
        supported = list(MODERN_VERSIONS)
        if m.method == "initialize":
            requested = (m.params or {}).get("protocolVersion")
            data = {"supported": supported, **({"requested": requested} if isinstance(requested, str) else {})}
            return error(m.id, UNSUPPORTED_PROTOCOL_VERSION, "connection is serving the 2026-07-28 protocol; the "
                                                             "initialize handshake is not accepted", data)
        meta = (m.params or {}).get("_meta")
        if not (isinstance(meta, dict) and VERSION_KEY in meta and CAPABILITIES_KEY in meta):
            return error(m.id, INVALID_PARAMS, f"params._meta must be an object carrying the required "
                                               f"'{VERSION_KEY}' and '{CAPABILITIES_KEY}' envelope keys")
        requested = meta[VERSION_KEY]
        if requested not in MODERN_VERSIONS:
            return error(m.id, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                         {"supported": supported, "requested": requested})

        def stamp(result: dict[str, Any]) -> dict[str, Any]:
            return {**result, "resultType": "complete", "_meta": {SERVER_INFO_KEY: dict(self.server_info)}}

        if m.method == "server/discover":
            return _result(m.id, stamp({"supportedVersions": supported, "capabilities": CAPABILITIES,
                                        **CACHE_HINT}))
        if m.method not in ("tools/list", "tools/call"):
            return _not_found(m.id, m.method)
        return self._tools(m, stamp)

    # -- tools, in either era ----------------------------------------------------------------------------------
    def _tools(self, m: Message, stamp: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any] | ToolCall:
        params = m.params or {}
        if m.method == "tools/list":
            if "cursor" in params and not isinstance(params["cursor"], (str, type(None))):
                return _invalid_params(m.id)
            listing = {"tools": self.tools}
            return _result(m.id, stamp({**listing, **CACHE_HINT} if self.era == "modern" else listing))
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, (dict, type(None))):
            return _invalid_params(m.id)
        request_id = m.id

        def reply(text: str, is_error: bool) -> dict[str, Any]:
            return _result(request_id, stamp({"content": [{"type": "text", "text": text}], "isError": is_error}))
        return ToolCall(request_id, name, arguments, reply)


def _initialize_version(params: dict[str, Any] | None) -> str | None:
    """The version an `initialize` asks for, or None when its parameters are not an initialize request's."""
    if not isinstance(params, dict):
        return None
    info, version = params.get("clientInfo"), params.get("protocolVersion")
    if not (isinstance(version, str) and isinstance(params.get("capabilities"), dict) and isinstance(info, dict)
            and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)):
        return None
    return version
