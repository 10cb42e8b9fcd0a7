"""Issue 29, items 2 and 7: the MCP server is long-lived. It notices that the file at its database path is no
longer the one it opened (deleted, or replaced by another) and follows the path instead of writing into a file
nobody will read again; and it answers every request it has read before it exits at the end of its input (a
script that pipes its requests all at once gets every answer)."""
from __future__ import annotations

import json
import os
import select
import subprocess
from pathlib import Path

import pytest

from helpers import read_rows
from conftest import cli_command

NO_MODEL = {"SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"}
INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


@pytest.fixture
def setup(tmp_path: Path) -> dict:
    proj = tmp_path / "proj"
    proj.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SUBCOG_", "CLAUDE_"))}
    env.update(SUBCOG_DB=str(tmp_path / "m.db"), SUBCOG_WORKER_ENABLED="false", SUBCOG_HOOK_DOMAIN="proj",
               XDG_STATE_HOME=str(tmp_path / "state"), **NO_MODEL)
    return {"proj": proj, "db": tmp_path / "m.db", "env": env, "tmp": tmp_path}


def request(rid: int, method: str, params: dict | None = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params else {})}
                      ).encode() + b"\n"


def call(rid: int, name: str, arguments: dict) -> bytes:
    return request(rid, "tools/call", {"name": name, "arguments": arguments})


INITIALIZED = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'


class Server:
    def __init__(self, setup: dict):
        self.proc = subprocess.Popen([*cli_command(), "mcp"], cwd=setup["proj"], env=setup["env"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.next_id = 0
        assert self.ask("initialize", INIT)["result"]["serverInfo"]["name"] == "subcog"
        self.proc.stdin.write(INITIALIZED)

    def ask(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        self.proc.stdin.write(request(self.next_id, method, params))
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)
        assert ready, "no answer"
        answer = json.loads(self.proc.stdout.readline())
        assert answer["id"] == self.next_id, answer
        return answer

    def tool(self, name: str, **arguments) -> tuple[bool, str]:
        result = self.ask("tools/call", {"name": name, "arguments": arguments})["result"]
        return result["isError"], result["content"][0]["text"]

    def close(self) -> None:
        self.proc.stdin.close()
        assert self.proc.wait(60) == 0
        self.proc.stdout.close()
        self.proc.stderr.close()


def contents(db: Path) -> list[str]:
    return [r[0] for r in read_rows(db, "select content from memories where status = 'active' order by seq")]


def integrity(db: Path) -> list[tuple]:
    return read_rows(db, "pragma integrity_check")


FACT = "We decided to keep the nightly export on the build host because it needs 40 GB of scratch space."
OTHER = "Retries use exponential backoff starting at two hundred milliseconds, capped at ten seconds."


def test_a_deleted_database_is_not_written_into_silently(setup):
    server = Server(setup)
    try:
        assert server.tool("remember", content=FACT, namespace="decisions")[1].startswith("stored ")
        for suffix in ("", "-wal", "-shm"):
            Path(f"{setup['db']}{suffix}").unlink(missing_ok=True)
        error, said = server.tool("remember", content=OTHER, namespace="patterns")
        assert not error and said.startswith("stored "), said
        error, found = server.tool("search", query="exponential backoff retries")
        assert "exponential backoff" in found and "scratch space" not in found, found
    finally:
        server.close()
    assert contents(setup["db"]) == [OTHER]   # in the file at the path, not in the deleted one


def test_a_replaced_database_is_followed(setup):
    other = setup["tmp"] / "other.db"
    subprocess.run([*cli_command(), "--db", str(other), "capture", "-n", "learnings", "--domain", "proj",
                    "The staging cluster runs on spot instances, so long jobs must checkpoint every ten minutes."],
                   env=setup["env"], check=True, capture_output=True, timeout=120)
    server = Server(setup)
    try:
        for i in range(3):   # the old file's numbering would say log #4
            server.tool("remember", content=f"{FACT} (case {i})", namespace="decisions")
        os.replace(other, setup["db"])
        error, said = server.tool("remember", content=OTHER, namespace="patterns")
        assert not error and said.startswith("stored ") and "log #2)" in said, said   # the new file's numbering
        assert "spot instances" in server.tool("search", query="staging spot instances checkpoint")[1]
        assert "scratch space" not in server.tool("search", query="nightly export scratch space")[1]
    finally:
        server.close()
    assert contents(setup["db"]) == [
        "The staging cluster runs on spot instances, so long jobs must checkpoint every ten minutes.", OTHER]
    assert integrity(setup["db"]) == [("ok",)]


def test_every_request_read_before_the_end_of_input_is_answered(setup):
    """Three requests and the end of input in one write: three answers (it used to give one)."""
    piped = (request(1, "initialize", INIT) + INITIALIZED + request(2, "tools/list")
             + call(3, "remember", {"content": FACT, "namespace": "decisions"})
             + call(4, "search", {"query": "nightly export scratch space"}) + request(5, "ping"))
    proc = subprocess.run([*cli_command(), "mcp"], cwd=setup["proj"], env=setup["env"], input=piped,
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    answers = {a["id"]: a for a in map(json.loads, proc.stdout.decode().splitlines())}
    assert sorted(answers) == [1, 2, 3, 4, 5], proc.stdout.decode()
    assert answers[3]["result"]["content"][0]["text"].startswith("stored ")
    assert contents(setup["db"]) == [FACT]
