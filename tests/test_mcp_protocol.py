"""The plain-Python MCP server against the official SDK: the same messages get the same replies, in both protocol
eras (the 2025 handshake and the 2026-07-28 envelope Claude Code 2.1.328 speaks); a tool call runs off the read
loop (pings are answered meanwhile) and a cancelled one gets no reply."""
from __future__ import annotations

import io
import json
import os
import re
import select
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from subcog_store.mcp.server import Server
from helpers import clean_environ, cli_command

ROOT = Path(__file__).resolve().parents[1]
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
POOL = "We chose PgBouncer in transaction mode for Postgres connection pooling."


def req(i, method, params=None):
    return {"jsonrpc": "2.0", "id": i, "method": method, **({} if params is None else {"params": params})}


def note(method, params=None):
    return {"jsonrpc": "2.0", "method": method, **({} if params is None else {"params": params})}


HANDSHAKE = [
    req(1, "initialize", INIT), note("notifications/initialized"), req(2, "tools/list"), req(3, "ping"),
    req(4, "tools/call", {"name": "remember", "arguments": {"content": POOL, "namespace": "decisions"}}),
    req(5, "tools/call", {"name": "search", "arguments": {"query": "PgBouncer"}}),
    req(6, "tools/call", {"name": "nope", "arguments": {}}), req(7, "tools/call", {"name": "search"}),
    req(8, "tools/call", {}), req(9, "resources/list"), req(10, "logging/setLevel", {"level": "info"}),
    req(11, "server/discover", {"_meta": META}), req(12, "tools/list", {"cursor": "abc"}),
    req(13, "initialize", INIT), req("s", "ping", {}), note("notifications/cancelled", {"requestId": 99}),
    req(14, "tools/call", {"name": "search", "arguments": {"query": 5}}),
    req(15, "tools/call", {"name": "show", "arguments": {"id": "nope"}}), req(16, "prompts/list"),
    {"jsonrpc": "2.0", "id": 17, "result": {}},
]
MODERN = [
    req("probe-1", "server/discover", {"_meta": META}), req(0, "tools/list", {"_meta": META}),
    req(1, "tools/call", {"_meta": META, "name": "remember", "arguments": {"content": POOL, "namespace": "decisions"}}),
    req(2, "tools/call", {"_meta": META, "name": "search", "arguments": {"query": "PgBouncer"}}),
    req(3, "ping", {"_meta": META}), req(4, "tools/list"),
    req(5, "tools/list", {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2030-01-01"}}),
    req(6, "initialize", {**INIT, "protocolVersion": "2026-07-28"}),
    req(7, "server/discover", {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2025-06-18"}}),
    req(8, "tools/call", {"_meta": META, "name": "show", "arguments": {"id": "nope"}}),
    req(9, "tools/call", {"_meta": META}), note("notifications/initialized"),
    req(10, "resources/list", {"_meta": META}),
]
BEFORE_INITIALIZE = [
    req(1, "tools/list"), req(2, "ping"), req(3, "initialize", {**INIT, "protocolVersion": "1999-01-01"}),
    req(4, "initialize", {**INIT, "protocolVersion": "2024-11-05"}), req(5, "initialize", {"capabilities": {}}),
]


def exchange(cmd: list[str], messages: list[dict], env: dict, cwd: Path) -> list[dict]:
    """Send each message; collect the reply of each request (in order)."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            cwd=cwd)
    replies = []
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            if "method" in message and "id" in message:
                ready, _, _ = select.select([proc.stdout], [], [], 120)
                assert ready, f"no reply to {message}"
                replies.append(json.loads(proc.stdout.readline()))
    finally:
        proc.stdin.close()
        assert proc.wait(60) == 0
    return replies


def normalised(replies: list[dict]) -> str:
    return re.sub(r"\b[0-9a-f]{12}\b", "ID", json.dumps(replies, sort_keys=True))


@pytest.mark.parametrize("battery", [HANDSHAKE, MODERN, BEFORE_INITIALIZE], ids=["handshake", "modern", "early"])
def test_every_reply_is_the_official_sdks(tmp_path: Path, battery: list[dict]) -> None:
    pytest.importorskip("mcp.server.lowlevel")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SUBCOG_", "CLAUDE_"))}
    env.update(SUBCOG_WORKER_ENABLED="false", SUBCOG_DEDUP_SEMANTIC_ENABLED="false", SUBCOG_HOOK_DOMAIN="proj",
               PYTHONPATH=str(ROOT))
    got = {}
    for name, cmd in (("ours", [*cli_command(), "mcp"]),
                      ("sdk", [sys.executable, str(ROOT / "tests" / "mcp_reference.py"), str(tmp_path / "sdk.db")])):
        env["SUBCOG_DB"] = str(tmp_path / f"{name}.db")
        got[name] = exchange(cmd, battery, env, tmp_path)
    assert normalised(got["ours"]) == normalised(got["sdk"])
    assert len(got["ours"]) == sum(1 for m in battery if "method" in m and "id" in m)


class Pipe:
    """A byte stream the test writes and the server reads (blocking, like stdin)."""

    def __init__(self):
        r, w = os.pipe()
        self.reader, self.writer = os.fdopen(r, "rb"), os.fdopen(w, "wb")

    def send(self, message: dict) -> None:
        self.writer.write(json.dumps(message).encode() + b"\n")
        self.writer.flush()


class Lines(io.RawIOBase):
    """The server's stdout: complete lines, waited for by a condition (no sleeps)."""

    def __init__(self):
        self.lines: list[dict] = []
        self.cond = threading.Condition()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        with self.cond:
            self.lines += [json.loads(x) for x in bytes(data).splitlines() if x.strip()]
            self.cond.notify_all()
        return len(data)

    def wait_for(self, pred, timeout: float = 30) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: pred(self.lines), timeout)


class Blocking:
    """Tools whose `search` waits until released; every call is recorded."""

    def __init__(self):
        self.started, self.release = threading.Event(), threading.Event()
        self.calls: list[str] = []

    def call(self, name: str, arguments: object) -> str:
        self.calls.append(name)
        if name == "search":
            self.started.set()
            assert self.release.wait(30)
        return f"{name} done"


def test_pings_are_answered_during_a_call_and_a_cancelled_call_gets_no_reply() -> None:
    tools, pipe, out = Blocking(), Pipe(), Lines()
    server = Server(tools, pipe.reader, out)   # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve)
    thread.start()
    try:
        pipe.send(req(1, "initialize", INIT))
        pipe.send(req(2, "tools/call", {"name": "search", "arguments": {"query": "x"}}))   # blocks
        assert tools.started.wait(30)
        pipe.send(req(3, "tools/call", {"name": "show", "arguments": {"id": "a"}}))        # queued behind it
        pipe.send(note("notifications/cancelled", {"requestId": 3, "reason": "user"}))
        pipe.send(req(4, "ping"))
        assert out.wait_for(lambda lines: any(x.get("id") == 4 for x in lines))
        assert [x["id"] for x in out.lines] == [1, 4] and tools.calls == ["search"]
        tools.release.set()
        pipe.send(req(5, "tools/call", {"name": "forget", "arguments": {"id": "b"}}))
        assert out.wait_for(lambda lines: any(x.get("id") == 5 for x in lines))
    finally:
        tools.release.set()
        pipe.writer.close()
        thread.join(30)
    assert [x["id"] for x in out.lines] == [1, 4, 2, 5] and tools.calls == ["search", "forget"]
    assert out.lines[2]["result"]["content"][0]["text"] == "search done"


def test_the_server_answers_before_importing_the_sdk_numpy_or_the_store(tmp_path: Path) -> None:
    """What `subcog-store mcp` imports before it can answer: no SDK (pydantic, anyio), no numpy, no store (they
    load in the calls' thread, after the main thread is serving)."""
    env = clean_environ(answer_when_done=False)
    env.update(SUBCOG_DB=str(tmp_path / "m.db"), SUBCOG_WORKER_ENABLED="false")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "subcog_store", "mcp"], env=env, cwd=tmp_path,
                          input=json.dumps(req(1, "server/discover", {"_meta": META})).encode() + b"\n",
                          capture_output=True, timeout=120)
    assert proc.returncode == 0 and json.loads(proc.stdout.splitlines()[0])["id"] == 1
    lines = proc.stderr.decode().splitlines()
    served = next(i for i, line in enumerate(lines) if line.rstrip().endswith("| subcog_store.mcp.server"))
    before = {line.rsplit("|", 1)[-1].strip() for line in lines[:served] if "|" in line}
    after = {line.rsplit("|", 1)[-1].strip() for line in lines if "|" in line}
    heavy = {"mcp", "mcp_types", "pydantic", "anyio", "starlette", "numpy", "apsw", "subcog_store.store", "argparse"}
    assert not {m for m in before if m.split(".")[0] in heavy or m in heavy}
    assert not {m for m in after if m.split(".")[0] in ("mcp", "mcp_types", "pydantic", "anyio")}
