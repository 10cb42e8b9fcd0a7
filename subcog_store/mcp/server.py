"""`subcog-store mcp`: the memory tools over MCP on stdio, in plain Python (no SDK import: the server answers its
first message in tens of milliseconds, where importing the official SDK alone took 1.5 s and more on a busy
machine, longer than the client's first probe waits).

The read loop answers everything but `tools/call` at once (`protocol.Protocol`); tool calls run one at a time in a
worker thread, so pings and listings are answered during a first model load, and a call the client cancels
(`notifications/cancelled`) gets no reply. A tool that fails answers a tool error (`isError`); a line that is not
valid JSON-RPC is answered by `wire`. The protocol's stdout and stdin are private copies: fd 1 points at stderr and
fd 0 at /dev/null while serving, so stray output of a library can never corrupt a message. The server embeds in
its own process and does not use the warm worker: it is itself long-lived and keeps the model loaded after the
first call that needs it. It serves until the client closes its stdin.
"""
# Lazy imports: the server answers `initialize` before the store's parts load.
from __future__ import annotations

import logging
import os
import queue
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO, Callable

from subcog_store.mcp.protocol import Protocol, ToolCall
from subcog_store.mcp.tools import TOOLS, ToolError, Tools
from subcog_store.mcp.wire import WireError, encode, error, parse, read_line

log = logging.getLogger("subcog_store.mcp")
NAME = "subcog"


def package_version() -> str:
    from subcog_store import __version__

    return __version__


def tool_list() -> list[dict[str, Any]]:
    """The tools as the client lists them (descriptions and schemas from `tools.TOOLS`)."""
    listing = []
    for name, (description, schema, read_only) in TOOLS.items():
        entry: dict[str, Any] = {"name": name, "description": description, "inputSchema": schema}
        if read_only:
            entry["annotations"] = {"readOnlyHint": True}
        listing.append(entry)
    return listing


class Server:
    """One connection: reads `stdin`, writes `stdout`, runs tool calls on `tools` in a worker thread."""

    def __init__(self, tools: Tools, stdin: BinaryIO, stdout: BinaryIO):
        self.tools, self.stdin, self.stdout = tools, stdin, stdout
        self.protocol = Protocol(NAME, package_version(), tool_list())
        self._calls: queue.Queue[ToolCall | None] = queue.Queue()
        self._lock = threading.Lock()            # one writer at a time; guards the two sets
        self._pending: set[Any] = set()          # ids of calls queued or running
        self._cancelled: set[Any] = set()

    def send(self, message: dict[str, Any]) -> None:
        data = encode(message)
        with self._lock:
            self.stdout.write(data)
            self.stdout.flush()

    def serve(self, prepare: Callable[[], None] | None = None) -> None:
        """Serve until stdin ends, then finish the calls already received. `prepare` runs first in the calls'
        thread (what only tool calls need is set up while the first messages are answered)."""
        worker = threading.Thread(target=self._run_calls, args=(prepare,), name="subcog-mcp-calls", daemon=True)
        worker.start()
        try:
            while True:
                line, size = read_line(self.stdin)
                if line is None:
                    break
                if line.strip():
                    self._receive(line, size)
        finally:
            self._calls.put(None)
            worker.join()

    def _receive(self, line: bytes, size: int) -> None:
        try:
            message = parse(line, size)
        except WireError as e:
            log.warning("refused a message: %s", e.message)
            self.send(error(e.request_id, e.code, e.message))
            return
        if message.method == "notifications/cancelled":
            self._cancel((message.params or {}).get("requestId"))
            return
        reply = self.protocol.handle(message)
        if isinstance(reply, ToolCall):
            with self._lock:
                self._pending.add(reply.request_id)
            self._calls.put(reply)
        elif reply is not None:
            self.send(reply)

    def _cancel(self, request_id: Any) -> None:
        with self._lock:
            if request_id in self._pending:
                self._cancelled.add(request_id)

    def _run_calls(self, prepare: Callable[[], None] | None) -> None:
        if prepare is not None:
            try:
                prepare()
            except Exception:  # noqa: BLE001 - an optimisation: the calls are served without it
                log.exception("setting up the tool calls failed")
        while (call := self._calls.get()) is not None:
            with self._lock:
                skip = call.request_id in self._cancelled
            if not skip:
                text, is_error = self._call(call)
            with self._lock:
                self._pending.discard(call.request_id)
                skip = skip or call.request_id in self._cancelled
                self._cancelled.discard(call.request_id)
            if not skip:
                try:
                    self.send(call.reply(text, is_error))
                except (OSError, ValueError):   # the client is gone: nothing more to say
                    return

    def _call(self, call: ToolCall) -> tuple[str, bool]:
        try:
            return self.tools.call(call.name, call.arguments), False
        except ToolError as e:
            return str(e), True
        except Exception as e:  # noqa: BLE001 - Tools.call raises only ToolError; anything else is still answered
            log.exception("tools/call %s failed", call.name)
            return f"internal error ({type(e).__name__})", True


def _claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Private copies of stdin and stdout for the protocol; fd 0 reads /dev/null and fd 1 writes to stderr."""
    sys.stdout.flush()
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return os.fdopen(proto_in, "rb"), os.fdopen(proto_out, "wb")


def main(db: Path) -> int:
    """Run the server on this process's stdio for the database `db` and the project of the working directory."""
    stdin, stdout = _claim_stdio()
    tools = Tools(db)

    def prepare() -> None:   # numpy and the store: imported while the first messages are answered
        from subcog_store.db import bitcache

        bitcache.enable_from_settings()   # long-lived: a large scope's sign bits are worth holding
        tools.open()

    try:
        Server(tools, stdin, stdout).serve(prepare)
    except KeyboardInterrupt:
        pass
    finally:
        tools.close()
    return 0
