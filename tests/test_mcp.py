"""`subcog-store mcp`: a real stdio session (the official SDK's client, and raw JSON-RPC for bad input) against
the server in its own process, on a real store. The server keeps serving whatever the client sends."""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from subcog_store.mcp.tools import TOOLS, ToolError, Tools, check_arguments
from subcog_store.scope import domain_for
from subcog_store.store import Store
from helpers import clean_environ, cli_command

OTHER = "billing-svc-0badc0de"
REDIS = ("We decided to use Redis for the session cache with a TTL of 5 minutes, because sessions are read on every "
         "request and Postgres was the bottleneck.")
POOL = "We chose PgBouncer in transaction mode for Postgres connection pooling because the app opens many sessions."
SECRET = "glpat-" + "FAKEa1b2c3d4e5f6g7h8"


@pytest.fixture
def setup(tmp_path: Path, embedder, store_target) -> dict:
    """A project folder, its domain, and a store holding one memory of another project (a SQLite file, or a
    PostgreSQL database where the test's `backend` is "postgresql")."""
    proj = tmp_path / "proj"
    proj.mkdir()
    db = store_target()
    with Store(db, embedder=embedder, environ={}) as store:
        other = store.capture("The invoices service retries failed card payments three times.", "decisions", OTHER)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SUBCOG_", "CLAUDE_"))}
    env.update(SUBCOG_DB=str(db), SUBCOG_WORKER_ENABLED="false", XDG_STATE_HOME=str(tmp_path / "state"))
    return {"proj": proj, "db": db, "env": env, "domain": domain_for(str(proj), {}), "other": other}


def text(result) -> str:
    return "\n".join(c.text for c in result.content)


# -- a session with the SDK's client ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["sqlite", "postgresql"], indirect=True)
def test_a_session_with_every_tool(setup: dict, backend: str) -> None:
    """The same session on a SQLite file and on PostgreSQL (`SUBCOG_DB=postgresql://...`, the server started by
    `subcog-store mcp` in its own process, a hook's capture from a third process seen by the next search)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    domain, other = setup["domain"], setup["other"]
    cmd = cli_command()
    server_env = {k: v for k, v in setup["env"].items() if k != "SUBCOG_DB"}   # the store named by --db alone
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "--db", str(setup["db"]), "mcp"], env=server_env,
                                   cwd=str(setup["proj"]))
    out: dict = {}

    async def session() -> None:
        with open(setup["proj"].parent / "server.err", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
                init = await client.initialize()
                out["server"] = init.server_info.name
                out["tools"] = (await client.list_tools()).tools
                call = client.call_tool
                out["stored"] = text(await call("remember", {"content": REDIS, "namespace": "decisions",
                                                             "tags": ["cache"], "importance": 0.8}))
                out["again"] = text(await call("remember", {"content": REDIS, "namespace": "decisions"}))
                out["changed"] = text(await call("remember", {"content": REDIS.replace("5 minutes", "10 minutes"),
                                                              "namespace": "decisions"}))
                out["pool"] = text(await call("remember", {"content": POOL, "namespace": "Decisions"}))
                out["search"] = text(await call("search", {"query": "Redis session cache TTL", "limit": 5}))
                out["ns"] = text(await call("search", {"query": "PgBouncer", "namespace": "patterns"}))
                out["cross"] = text(await call("search", {"query": "invoices card payments retries"}))
                pool_urn = next(w for w in out["pool"].split() if w.startswith("subcog://"))
                out["show_urn"] = text(await call("show", {"id": pool_urn}))
                out["show_id"] = text(await call("show", {"id": pool_urn.rsplit("/", 1)[1]}))
                out["show_other"] = await call("show", {"id": other.urn})
                out["show_other_id"] = await call("show", {"id": other.memory_id})
                out["forget_other"] = await call("forget", {"id": other.memory_id})
                out["forget"] = text(await call("forget", {"id": pool_urn, "reason": "moved to pgcat"}))
                out["after"] = text(await call("search", {"query": "PgBouncer transaction mode"}))
                # a hook (another process) writes meanwhile: the next call sees it
                subprocess.run([*cmd, "capture", "-n", "learnings", "--domain", domain,
                                "The nightly export job needs 40 GB of scratch space on the build host."],
                               env=setup["env"], check=True, capture_output=True, timeout=60)
                out["fresh"] = text(await call("search", {"query": "scratch space nightly export"}))
                out["pool_urn"] = pool_urn

    anyio.run(session)
    assert out["server"] == "subcog"
    tools = {t.name: t for t in out["tools"]}
    assert list(tools) == ["search", "show", "remember", "forget"]
    assert sum(len(t.description) for t in tools.values()) < 700     # read by the model every session
    assert tools["search"].input_schema["properties"]["limit"]["maximum"] == 20
    assert tools["search"].annotations.read_only_hint and not tools["remember"].annotations

    assert out["stored"].startswith(f"stored subcog://{domain}/decisions/") and "why:" in out["stored"]
    assert out["again"].startswith("not stored (decision hash_exact; existing memory subcog://")
    assert "why: the same text is already stored" in out["again"]
    assert "decision changed_fact" in out["changed"] and "marked as outdated" in out["changed"]
    lines = out["search"].splitlines()
    assert lines[0].startswith("3 memories of this project (hybrid")   # no floor: the model reads the scores
    assert "10 minutes" in lines[1] and "OUTDATED" not in lines[1] and "[decisions]" in lines[1]
    assert "5 minutes" in lines[2] and "OUTDATED (updated by" in lines[2] and " cos 0." in lines[2]
    assert out["ns"].startswith("0 memories")
    assert "invoices" not in out["cross"] and OTHER not in out["cross"]
    assert out["show_urn"] == out["show_id"] and out["show_urn"].startswith(out["pool_urn"])
    assert "source mcp" in out["show_urn"] and out["show_urn"].endswith(POOL)
    for key in ("show_other", "show_other_id", "forget_other"):
        assert out[key].is_error and "this project" in text(out[key]), key
    assert out["forget"].startswith(f"forgot {out['pool_urn']} (decision ")
    assert "PgBouncer" not in out["after"] and "scratch space" in out["fresh"]

    with Store(setup["db"], environ={}) as store:
        assert store.get(other.memory_id).status == "active"
        pool = store.get(out["pool_urn"].rsplit("/", 1)[1])
        assert pool.status == "deleted" and pool.source == "mcp"
        rows = store.con.execute("select hook, domain, tokens from recall_log").fetchall()
    assert [r[0] for r in rows] == ["mcp-search"] * 5 and {r[1] for r in rows} == {domain}
    decision = out["forget"].split("decision ")[1].split(";")[0]
    undo = subprocess.run([*cli_command(), "reverse", decision], env=setup["env"], capture_output=True, text=True)
    assert undo.returncode == 0, undo.stderr
    with Store(setup["db"], environ={}) as store:
        assert store.get(pool.id).status == "active"


# -- bad input, raw JSON-RPC ------------------------------------------------------------------------------------

class Raw:
    """The server in its own process, spoken to line by line."""

    def __init__(self, setup: dict, env: dict | None = None):
        self.proc = subprocess.Popen([*cli_command(), "mcp"], cwd=setup["proj"], env={**setup["env"], **(env or {})},
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.next_id = 100

    def send(self, message: object) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv(self, timeout: float = 60) -> dict:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "no answer"
        return json.loads(self.proc.stdout.readline())

    def ask(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, **({"params": params} if params else {})})
        answer = self.recv()
        assert answer["id"] == self.next_id
        return answer

    def call(self, name: str, arguments: object) -> tuple[bool, str]:
        result = self.ask("tools/call", {"name": name, "arguments": arguments})["result"]
        return result["isError"], result["content"][0]["text"]

    def close(self) -> tuple[int, str]:
        self.proc.stdin.close()
        code = self.proc.wait(30)
        return code, self.proc.stderr.read().decode()


def test_bad_input_is_answered_and_the_server_keeps_serving(setup: dict) -> None:
    raw = Raw(setup, {"SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"})
    try:
        init = raw.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                      "clientInfo": {"name": "raw", "version": "1"}})
        assert init["result"]["serverInfo"]["name"] == "subcog"
        raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for line, code, answer_id in [
            (b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list"\n', -32700, 7),     # torn JSON: its id is read
            (b"{not json\n", -32700, None),
            (b"\xff\xfe\n", -32700, None),
            (b'[{"jsonrpc": "2.0", "id": 8, "method": "ping"}]\n', -32600, None),
            (b'{"id": 9, "method": "ping"}\n', -32600, 9),
            (b'{"jsonrpc": "2.0", "id": 10, "method": 5}\n', -32600, 10),
            (b'{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "'
             + b"x" * (2 << 20) + b'"}}}\n', -32600, 11),
        ]:
            raw.send(line)
            answer = raw.recv()
            assert answer["error"]["code"] == code and answer["id"] == answer_id, (line[:60], answer)
        lone = {"jsonrpc": "2.0", "id": 12, "method": "tools/call",
                "params": {"name": "remember", "arguments": {"content": "\ud800", "namespace": "decisions"}}}
        raw.send(lone)                                      # a lone surrogate: JSON, but not text
        answer = raw.recv()
        assert answer["id"] == 12 and answer["error"]["code"] == -32700, answer
        raw.send(b"\n")                                     # blank lines are skipped
        assert raw.ask("nosuch/method")["error"]["code"] == -32601
        assert raw.ask("tools/call", {"name": "search", "arguments": "query"})["error"]["code"] == -32602
        assert raw.ask("tools/call")["error"]["code"] == -32602
        for name, arguments, message in [
            ("nope", {}, "unknown tool 'nope'; the tools are: search, show, remember, forget"),
            ("search", {"query": 5}, "query must be a string, not integer"),
            ("search", {"query": "x", "limit": True}, "limit must be an integer, not boolean"),
            ("search", {"query": "x", "limit": 50}, "limit must be from 1 to 20"),
            ("search", {"query": "x", "limit": 2.5}, "limit must be an integer, not number"),
            ("search", {"query": "   "}, "the query is empty"),
            ("search", {"query": "x", "depth": 3}, "unknown argument 'depth'; search takes: query, limit, namespace"),
            ("search", {}, "missing argument 'query'"),
            ("search", {"query": "x", "namespace": "nope"}, "unknown namespace 'nope'"),
            ("remember", {"content": "y " * 60_000, "namespace": "decisions"}, "content is over 65536 bytes"),
            ("remember", {"content": "x", "namespace": "decisions", "importance": 7}, "importance 7.0 is out of range"),
            ("remember", {"content": "x", "namespace": "decisions", "tags": ["a", 3]}, "invalid tag 3"),
            ("remember", {"content": "x", "namespace": "decisions", "tags": "a"}, "tags must be an array, not string"),
            ("show", {"id": "z" * 100_000}, "no such memory"),
            ("show", {"id": "subcog://x/decisions/abc"}, "is not a memory of this project"),
            ("show", {"id": "abc"}, "no memory abc in this project"),
            ("forget", {"id": ["abc"]}, "id must be a string, not array"),
        ]:
            is_error, message_text = raw.call(name, arguments)
            assert is_error and message in message_text, (name, arguments, message_text)
        is_error, found = raw.call("search", {"query": "q " * 200_000, "limit": 3})    # 400 KB: cut, answered
        assert not is_error and found.startswith("0 memories of this project (text")
        is_error, stored = raw.call("remember", {"content": "Deploys go out from the release branch only, "
                                                            f"token {SECRET}.", "namespace": "config"})
        assert not is_error and "1 secret(s) replaced by [REDACTED]" in stored and SECRET not in stored
        assert raw.ask("ping")["result"] == {}
    finally:
        code, err = raw.close()
    assert code == 0 and "Traceback" not in err, err
    assert "refused a message" in err


def test_outputs_are_redacted_and_failures_are_tool_errors(setup: dict) -> None:
    """A memory stored before a redaction rule existed is redacted on the way out; a database that cannot be
    opened is a tool error, and the next call, once it can, is served."""
    with Store(setup["db"], environ={}) as store:
        stored = store.capture("The staging deploy uses the CI token stored in the vault.", "config",
                               setup["domain"])
        store.con.execute("update memories set content = content || ' Token: ' || ? where id = ?",
                          (SECRET, stored.memory_id))
    raw = Raw(setup, {"SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"})
    try:
        raw.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "raw", "version": "1"}})
        for name, args in (("search", {"query": "staging deploy token"}), ("show", {"id": stored.memory_id})):
            is_error, answer = raw.call(name, args)
            assert not is_error and "[REDACTED]" in answer and SECRET not in answer, answer
    finally:
        assert raw.close()[0] == 0

    setup["env"]["SUBCOG_DB"] = str(setup["proj"] / "not-yet" / "m.db")
    raw = Raw(setup, {"SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"})
    try:
        raw.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "raw", "version": "1"}})
        is_error, answer = raw.call("search", {"query": "anything"})
        assert is_error and "does not exist" in answer
        (setup["proj"] / "not-yet").mkdir()
        assert raw.call("search", {"query": "anything"}) == (False, "0 memories of this project (text; "
                                                                    "semantic tier disabled: text side only).")
    finally:
        assert raw.close()[0] == 0


# -- in process: the argument rules, the domain, the layout -----------------------------------------------------

@pytest.mark.parametrize("name, arguments, ok", [
    ("search", {"query": "x", "limit": 3, "namespace": None}, {"query": "x", "limit": 3}),
    ("remember", {"content": "x", "namespace": "decisions", "importance": 1}, None),
    ("remember", {"content": "x"}, "missing argument 'namespace'"),
    ("show", None, "missing argument 'id'"),
    ("forget", [], "arguments must be an object"),
])
def test_check_arguments(name: str, arguments: object, ok: object) -> None:
    if isinstance(ok, str):
        with pytest.raises(ToolError, match=ok):
            check_arguments(name, arguments)
    else:
        assert check_arguments(name, arguments) == (ok or arguments)
    assert set(TOOLS) == {"search", "show", "remember", "forget"}


def test_the_domain_is_the_hooks_and_the_override_wins(tmp_path: Path) -> None:
    assert Tools(tmp_path / "m.db", cwd=str(tmp_path), environ={}).domain == domain_for(str(tmp_path), {})
    assert Tools(tmp_path / "m.db", cwd=str(tmp_path), environ={"SUBCOG_HOOK_DOMAIN": "mine"}).domain == "mine"
    tools = Tools(tmp_path / "m.db", cwd=str(tmp_path), environ={"SUBCOG_HOOK_DOMAIN": "a/b"})
    with pytest.raises(ToolError, match="SUBCOG_HOOK_DOMAIN"):
        tools.call("search", {"query": "x"})


def test_hooks_and_other_commands_never_import_the_sdk(tmp_path: Path) -> None:
    env = clean_environ({"SUBCOG_DB": str(tmp_path / "m.db"), "SUBCOG_WORKER_ENABLED": "false",
                         "XDG_STATE_HOME": str(tmp_path)}, answer_when_done=False)
    payload = json.dumps({"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit",
                          "prompt": "How do we pool Postgres connections?"})
    for argv, stdin in ((["hook", "user-prompt-submit"], payload), (["hook", "session-start"], payload),
                        (["install-hooks", "--project", str(tmp_path), "--dry-run"], ""), (["domain"], "")):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "subcog_store", *argv], input=stdin,
                              capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr[-2000:]
        imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
        assert not {m for m in imported if m.split(".")[0] in ("mcp", "mcp_types", "pydantic", "starlette")}, argv


def test_the_server_starts_without_a_usable_database() -> None:
    """The store is opened on the first tool call: `initialize` is answered whatever the database."""
    proc = subprocess.Popen([*cli_command(), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={k: v for k, v in os.environ.items() if k != "SUBCOG_DB"}
                            | {"SUBCOG_DB": os.devnull + ".nope/m.db"})
    try:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
                         .encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
    finally:
        proc.stdin.close()
        assert proc.wait(30) == 0


def test_a_postgresql_server_that_ends_the_connection_costs_one_call(pg_server, pg_url, embedder,
                                                                     tmp_path: Path) -> None:
    """A restart (here: the server ends the MCP server's connection): the call that meets it is a tool error in
    words, nothing half-written; the next call opens the store anew and works, without restarting the server."""
    import psycopg

    with Store(pg_url, embedder=embedder, environ={}):
        pass
    tools = Tools(pg_url, cwd=str(tmp_path), environ={})
    assert tools.call("remember", {"content": REDIS, "namespace": "decisions"}).startswith("stored ")
    with psycopg.connect(pg_server.url, autocommit=True) as admin:
        admin.execute("select pg_terminate_backend(%s)", (tools.store.con.raw.info.backend_pid,))
    with pytest.raises(ToolError, match="connection to the server was lost"):
        tools.call("remember", {"content": POOL, "namespace": "decisions"})
    assert tools.call("remember", {"content": POOL, "namespace": "decisions"}).startswith("stored ")
    found = tools.call("search", {"query": "PgBouncer transaction mode", "limit": 5})
    assert found.startswith("2 memories") and found.count("PgBouncer") == 1
    tools.close()
