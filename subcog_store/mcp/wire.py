"""The server's wire: one JSON-RPC 2.0 message a line, each line bounded, and the errors it answers itself.

A line is read up to MAX_MESSAGE_BYTES (the rest of a longer line is skipped unread into memory); a line that is
too long, not UTF-8, not JSON (a lone surrogate escape included: it cannot become text), a batch or not a JSON-RPC
2.0 message is answered with a JSON-RPC error (the request's id when it can be read, else null). Responses and
valid messages go on; standard library only (the server starts in a few tens of milliseconds).
"""
from __future__ import annotations

import json
import re
from typing import Any, BinaryIO, NamedTuple

MAX_MESSAGE_BYTES = 1 << 20     # content is at most 64 KiB (about 400 KiB escaped): 1 MiB is ample
SKIP_CHUNK = 1 << 16
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
UNSUPPORTED_PROTOCOL_VERSION = -32022
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,15}|"(?:[^"\\]|\\.){0,200}")')
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


class Message(NamedTuple):   # not a dataclass: `dataclasses` imports `inspect`, ~10 ms of every server start
    """A valid message: a request (`id` set), a notification, or a response to us (`is_response`)."""

    method: str | None
    id: str | int | None
    params: dict[str, Any] | None
    is_response: bool = False

    @property
    def is_request(self) -> bool:
        return self.method is not None and self.id is not None


class WireError(Exception):
    """A line answered with a JSON-RPC error: `code`, `message`, the request's `id` if it could be read."""

    def __init__(self, code: int, message: str, request_id: Any = None):
        super().__init__(message)
        self.code, self.message, self.request_id = code, message, request_id


def error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response."""
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def encode(message: dict[str, Any]) -> bytes:
    """One line on the wire (compact, UTF-8)."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def read_line(stream: BinaryIO, limit: int = MAX_MESSAGE_BYTES) -> tuple[bytes | None, int]:
    """The next line (None at the end) and its full size; of a line over `limit`, only its start."""
    line = stream.readline(limit + 1)
    if not line:
        return None, 0
    size = len(line)
    if size > limit and not line.endswith(b"\n"):
        while chunk := stream.readline(SKIP_CHUNK):
            size += len(chunk)
            if chunk.endswith(b"\n"):
                break
    return line, size


def parse(line: bytes, size: int, limit: int = MAX_MESSAGE_BYTES) -> Message:
    """The message on `line`; raises WireError with the error to answer."""
    if size > limit:
        raise WireError(INVALID_REQUEST, f"message of {size} bytes refused: the limit is {limit} bytes",
                        _peek_id(line))
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise WireError(PARSE_ERROR, f"parse error: not UTF-8 (byte {e.start})", _peek_id(line)) from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise WireError(PARSE_ERROR, f"parse error: {str(e)[:160]}", _peek_id(line)) from None
    if isinstance(data, list):
        raise WireError(INVALID_REQUEST, "batches are not supported: send one message a line")
    if not isinstance(data, dict):
        raise WireError(INVALID_REQUEST, "not a JSON-RPC 2.0 message (not an object)")
    request_id = data.get("id")
    good_id = isinstance(request_id, (str, int)) and not isinstance(request_id, bool)
    if "\\u" in text and _has_surrogate(data):
        raise WireError(PARSE_ERROR, "parse error: a lone surrogate escape is not text", request_id if good_id
                        else None)
    problem = _shape_problem(data, good_id)
    if problem:
        raise WireError(INVALID_REQUEST, f"not a JSON-RPC 2.0 message ({problem})", request_id if good_id else None)
    if "method" not in data:
        return Message(None, request_id, None, is_response=True)
    return Message(data["method"], request_id if "id" in data else None, data.get("params"))


def _shape_problem(data: dict[str, Any], good_id: bool) -> str | None:
    if data.get("jsonrpc") != "2.0":
        return "jsonrpc: must be \"2.0\""
    if "method" in data:
        if not isinstance(data["method"], str):
            return "method: must be a string"
        if "id" in data and not good_id:
            return "id: must be a string or an integer"
        if "params" in data and not isinstance(data["params"], dict):
            return "params: must be an object"
        return None
    if not good_id and data.get("id") is not None:
        return "id: must be a string or an integer"
    if ("result" in data) == ("error" in data):
        return "a response has exactly one of result and error"
    return None


def _has_surrogate(value: Any, depth: int = 0) -> bool:
    """A string anywhere in `value` holding a lone surrogate (JSON allows the escape; text cannot hold it)."""
    if isinstance(value, str):
        return bool(_LONE_SURROGATE.search(value))
    if depth > 64:
        return False
    if isinstance(value, dict):
        return any(_has_surrogate(k, depth + 1) or _has_surrogate(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v, depth + 1) for v in value)
    return False


def _peek_id(line: bytes) -> Any:
    """The id of a message that cannot be parsed, when its start shows it (`{"jsonrpc":"2.0","id":7,...`)."""
    match = _ID.search(line[:512])
    if not match:
        return None
    try:
        return json.loads(match.group(1))
    except ValueError:
        return None
