"""The server's stdin: one JSON-RPC message a line, each line bounded, bad ones answered here.

The SDK's stdio transport reads a line of any length and drops a line it cannot parse without an answer (the
client then waits for nothing). `Lines` reads at most MAX_MESSAGE_BYTES of a line (the rest of a longer line is
skipped unread into memory), and answers a line that is too long, not UTF-8, not JSON, a batch or not a JSON-RPC
2.0 message with a JSON-RPC error (the request's id when it can be read, else null); only valid messages reach the
SDK, which answers unknown methods and bad parameters itself.
"""
from __future__ import annotations

import json
import logging
import re
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = logging.getLogger("subcog_store.mcp")
MAX_MESSAGE_BYTES = 1 << 20     # content is at most 64 KiB (about 400 KiB escaped): 1 MiB is ample
SKIP_CHUNK = 1 << 16
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")')


class Lines:
    """An async iterator of the valid JSON-RPC lines of `stream`, for the SDK's `stdio_server(stdin=...)`; the
    rest is answered through the write stream given to `attach`."""

    def __init__(self, stream: BinaryIO, limit: int = MAX_MESSAGE_BYTES):
        self._in, self.limit = stream, limit
        self._out: Any = None
        self._ready = anyio.Event()

    def attach(self, write_stream: Any) -> None:
        self._out = write_stream
        self._ready.set()

    def __aiter__(self) -> "Lines":
        return self

    async def __anext__(self) -> str:
        while True:
            line, size = await anyio.to_thread.run_sync(self._read, abandon_on_cancel=True)
            if line is None:
                raise StopAsyncIteration
            if not line.strip():
                continue
            text, error = self._check(line, size)
            if error is None:
                return text
            log.warning("refused a message: %s", error[2])
            await self._ready.wait()
            await self._out.send(SessionMessage(types.JSONRPCError(
                jsonrpc="2.0", id=error[0], error=types.ErrorData(code=error[1], message=error[2]))))

    def _read(self) -> tuple[bytes | None, int]:
        """The next line (None at the end) and its full size; of a line over the limit, only its start."""
        line = self._in.readline(self.limit + 1)
        if not line:
            return None, 0
        size = len(line)
        if size > self.limit and not line.endswith(b"\n"):
            while chunk := self._in.readline(SKIP_CHUNK):
                size += len(chunk)
                if chunk.endswith(b"\n"):
                    break
        return line, size

    def _check(self, line: bytes, size: int) -> tuple[str, tuple[Any, int, str] | None]:
        """The line as text, or (id, code, message) of the error to answer."""
        if size > self.limit:
            return "", (_peek_id(line), types.INVALID_REQUEST,
                        f"message of {size} bytes refused: the limit is {self.limit} bytes")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as e:
            return "", (_peek_id(line), types.PARSE_ERROR, f"parse error: not UTF-8 (byte {e.start})")
        try:
            data = json.loads(text)
        except ValueError as e:
            return "", (_peek_id(line), types.PARSE_ERROR, f"parse error: {e}")
        if isinstance(data, list):
            return "", (None, types.INVALID_REQUEST, "batches are not supported: send one message a line")
        try:
            types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        except ValidationError as e:
            first = (e.errors() or [{"type": "", "msg": str(e)}])[0]
            if first["type"] == "json_invalid":    # what json.loads lets through: a lone surrogate escape
                return "", (_request_id(data), types.PARSE_ERROR, f"parse error: {first['msg'][:120]}")
            where = ".".join(str(p) for p in first.get("loc", ()))
            return "", (_request_id(data), types.INVALID_REQUEST,
                        f"not a JSON-RPC 2.0 message ({where}: {first['msg'][:120]})")
        return text, None


def _request_id(data: object) -> Any:
    value = data.get("id") if isinstance(data, dict) else None
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def _peek_id(line: bytes) -> Any:
    """The id of a message that cannot be parsed, when its start shows it (`{"jsonrpc":"2.0","id":7,...`)."""
    match = _ID.search(line[:512])
    if not match:
        return None
    try:
        return json.loads(match.group(1))
    except ValueError:
        return None
