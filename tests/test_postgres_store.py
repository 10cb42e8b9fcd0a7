"""A store on PostgreSQL through the user's own paths (issue 26): the CLI with `--db postgresql://...` and SUBCOG_DB,
the hooks (in process and through the warm worker), `doctor`, each beside the same run on SQLite with the same
answers; every named query the data layer runs has a PostgreSQL form the server accepts; a connection string
holding a password is refused and never echoed. (The store, dedup, policy, review, batch and recall suites run on
both backends too: BOTH_BACKENDS in their modules.)"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import hook_output_problems
from helpers import NO_WORKER, clean_environ, run_cli, run_hook
from subcog_store.db.sqlfiles import queries
from subcog_store.postgres import adapter

psycopg = pytest.importorskip("psycopg")

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
A = "We decided to use PostgreSQL 16 with pgvector as the team's shared memory store."
REWORDED = "We chose PostgreSQL 16 with pgvector as the team's shared memory store."
OTHER = "The frontend team prefers React with TypeScript for all new user interface work."
SECRET = "hunter2-Sup3rS3cret"
# Queries PostgreSQL never runs: SQLite's own file, migrations, vec0's candidates and the sign-bit cache's log
# (db/bitcache.py reads PostgreSQL's vector_log with queries of its own).
SQLITE_ONLY = {"create_migrations_table", "record_migration", "count_schema_objects", "vacuum",
               "checkpoint_truncate", "quick_check", "sign_bits",
               "bits_log_newest", "bits_log_entry", "bits_since", "scope_bits", "salvage_memories",
               "salvage_memory"}
# Search's in-memory vectors (db/vectorcache.py) serve SQLite stores only.
SQLITE_ONLY |= {"domain_size", "domain_vectors", "domain_vectors_since", "rescore_domain_candidates"}
# The sessions' text (db/session_text.py) is kept and searched in SQLite stores only for now (FTS5 and vec0).
SQLITE_ONLY |= {name for name in queries() if "session_text" in name or name == "session_term_document_counts"}


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path) -> str:
    """A store on each backend: a file, or a fresh migrated database on the test server."""
    if request.param == "sqlite":
        return str(tmp_path / "m.db")
    return request.getfixturevalue("pg_server").database(migrated=True)


def cli(db: str, *args: str, env: dict | None = None):
    return run_cli(*args, "--json", db=db, env={**NO_WORKER, **(env or {})}, text=True)


def test_every_query_the_data_layer_runs_has_a_postgresql_form_the_server_accepts(pg_url) -> None:
    """Each named query (PostgreSQL's own text, else SQLite's translated) is planned by the server (EXPLAIN,
    parameters as NULL of no type): its tables, columns and functions all exist there."""
    con = adapter.connect(pg_url)
    refused = {}
    try:
        for name, sql in sorted(queries().items()):
            if name in SQLITE_ONLY or not re.match(r"\s*(with|select|insert|update|delete)\b", sql, re.I):
                continue
            text = re.sub(r"%\((\w+)\)s|%s", "null", adapter.postgres_text(name, sql)).replace("%%", "%")
            try:
                con.raw.execute("explain " + text, prepare=False)
            except psycopg.Error as e:
                refused[name] = str(e).splitlines()[0]
    finally:
        con.close()
    assert not refused, refused


def test_capture_check_search_stats_doctor_answer_alike_on_both(db) -> None:
    first = json.loads(cli(db, "capture", "-n", "decisions", A).stdout)
    again = json.loads(cli(db, "capture", "-n", "decisions", "  " + A.upper() + " ").stdout)
    near = json.loads(cli(db, "capture", "-n", "decisions", REWORDED).stdout)
    other = json.loads(cli(db, "capture", "-n", "decisions", OTHER).stdout)
    assert first["stored"] and first["decision"] == "stored"
    assert not again["stored"] and again["decision"] == "hash_exact" and again["memory_id"] == first["memory_id"]
    assert not near["stored"] and near["decision"] == "semantic_skip" and near["memory_id"] == first["memory_id"]
    assert other["stored"]
    check = json.loads(cli(db, "check", "-n", "decisions", REWORDED).stdout)
    assert check["is_duplicate"] and check["matched_urn"] == first["urn"]
    found = json.loads(cli(db, "search", "-d", "project", "which database holds the team's memories").stdout)
    assert [r["urn"] for r in found["results"]][:1] == [first["urn"]]
    stats = json.loads(cli(db, "stats").stdout)
    assert json.dumps(stats).count("semantic_similar") >= 1
    doctor = cli(db, "doctor")
    assert doctor.returncode == 0 and json.loads(doctor.stdout)["ok"], doctor.stdout
    log = json.loads(cli(db, "review", "--all").stdout)
    assert {d["decision"] for d in log} >= {"stored", "hash_exact", "semantic_skip"}


def test_subcog_db_names_the_store_too(db) -> None:
    proc = run_cli("capture", "-n", "learnings", "--json", A, env={**NO_WORKER, "SUBCOG_DB": db}, text=True)
    assert proc.returncode == 0 and json.loads(proc.stdout)["stored"], proc.stderr
    listed = run_cli("list", "--json", env={**NO_WORKER, "SUBCOG_DB": db}, text=True)
    assert A in listed.stdout


@pytest.mark.parametrize("worker", [False, True], ids=["in-process", "worker"])
def test_hooks_capture_and_recall_on_both(db, tmp_path, worker) -> None:
    """PreCompact captures the sample transcript; SessionStart after the compaction hands its memories back; the
    same memories on both backends."""
    transcript = tmp_path / "session-a.jsonl"
    shutil.copyfile(SAMPLES / "session-a.jsonl", transcript)
    env = clean_environ({"SUBCOG_HOOK_LOG": str(tmp_path / "hook.log"), **({} if worker else NO_WORKER)})
    payload = {"session_id": "sess-pg", "cwd": "/home/dev/shop", "transcript_path": str(transcript),
               "hook_event_name": "PreCompact", "trigger": "manual"}
    captured = run_hook("pre-compact", json.dumps(payload).encode(), db=db, environ=env)
    assert captured.returncode == 0 and captured.stderr == b"", captured.stderr
    assert hook_output_problems("PreCompact", captured.stdout.decode()) == []
    start = {**payload, "hook_event_name": "SessionStart", "source": "compact"}
    recalled = run_hook("session-start", json.dumps(start).encode(), db=db, environ=env)
    out = recalled.stdout.decode()
    assert recalled.returncode == 0 and recalled.stderr == b"" and hook_output_problems("SessionStart", out) == []
    assert "We decided to use PostgreSQL" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    memories = json.loads(run_cli("list", "--json", db=db, env=NO_WORKER, text=True).stdout)
    assert len(memories) >= 2


def test_a_hook_on_an_unreachable_server_exits_0_within_its_budget(tmp_path) -> None:
    """No server at the socket: the hook says so in a few words, exit 0, valid output, the cause in the log."""
    db = f"postgresql://nobody@/subcog?host={tmp_path}&connect_timeout=2"
    env = clean_environ({"SUBCOG_HOOK_LOG": str(tmp_path / "hook.log"), **NO_WORKER})
    payload = {"session_id": "s", "cwd": "/x", "transcript_path": str(tmp_path / "none.jsonl"),
               "hook_event_name": "SessionStart", "source": "startup"}
    proc = run_hook("session-start", json.dumps(payload).encode(), db=db, environ=env)
    assert proc.returncode == 0 and proc.stderr == b"" and b"Traceback" not in proc.stdout
    assert hook_output_problems("SessionStart", proc.stdout.decode()) == []


@pytest.mark.parametrize("event, payload", [
    ("user-prompt-submit", {"hook_event_name": "UserPromptSubmit", "prompt": "which cache did we choose?"}),
    ("pre-compact", {"hook_event_name": "PreCompact", "trigger": "manual"}),
], ids=["prompt", "pre-compact"])
def test_a_hook_on_a_silent_server_gives_up_within_its_budget(event, payload, tmp_path) -> None:
    """A server that takes the connection and never answers (packets dropped past a proxy, a hung host): the hook
    waits for it CONNECT_SHARE of its budget (libpq's connect_timeout, derived from the HookRequest's budget: not
    the commands' 10 s), then answers without the store: exit 0, valid output, nothing on stderr, the cause and
    the time it allowed in the log."""
    import socket

    from subcog_store.claude_code.request import CONNECT_SHARE, MIN_BUDGET_SECS

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    log = tmp_path / "hook.log"
    env = clean_environ({"SUBCOG_HOOK_LOG": str(log), "SUBCOG_HOOK_BUDGET_SECS": "1.5", **NO_WORKER})
    payload = {"session_id": "s", "cwd": "/x", "transcript_path": str(SAMPLES / "session-a.jsonl"), **payload}
    try:
        proc = run_hook(event, json.dumps(payload).encode(), db=f"postgresql://alice@127.0.0.1:"
                        f"{listener.getsockname()[1]}/team", environ=env)
    finally:
        listener.close()
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    assert hook_output_problems(payload["hook_event_name"], proc.stdout.decode()) == []
    allowed = re.search(r"no answer in the ([0-9.]+) s its connect_timeout allows", log.read_text())
    assert allowed, log.read_text()
    # CONNECT_SHARE of what is left of the budget when the store opens (the budget counts the process's start-up)
    assert MIN_BUDGET_SECS * CONNECT_SHARE <= float(allowed[1]) <= 1.5 * CONNECT_SHARE


def _faulty_store(fault: str, pg_server) -> str:
    """A URL on which opening the store fails as `fault` says (the database left as the fault found it)."""
    from tests.test_postgres_schema import _role

    from subcog_store.postgres.connection import latest_version

    if fault == "pgvector missing":   # a new database, and a role that may create tables but not the extension
        url = pg_server.database()
        member = _role(pg_server, "subcog_cli_member", url, "grant all on database {db} to {role}")
        with psycopg.connect(url, autocommit=True) as con:
            con.execute("grant all on schema public to subcog_cli_member")
        return member
    url = pg_server.database(migrated=True)
    if fault == "role without rights":
        return _role(pg_server, "subcog_cli_stranger", url, "grant connect on database {db} to {role}")
    with psycopg.connect(url, autocommit=True) as con:   # "newer schema": a later version migrated it
        con.execute("insert into schema_migrations (version, name) values (%s, 'from_the_future')",
                    (latest_version() + 1,))
    return url


@pytest.mark.parametrize("fault, words", [
    ("pgvector missing", "an administrator runs `create extension vector`"),
    ("role without rights", "this role may not use the store"),
    ("newer schema", "newer than this subcog-store knows"),
])
def test_a_store_that_cannot_be_used_is_exit_4_for_commands_and_exit_0_for_hooks(fault, words, pg_server,
                                                                                  tmp_path) -> None:
    """Each fault the issue names at open: a command exits 4 with the cause in words, no traceback; a hook exits
    0 with valid output and nothing on stderr, the cause in its log; nothing is written to the store."""
    url = _faulty_store(fault, pg_server)
    proc = run_cli("capture", "-n", "decisions", A, db=url, env=NO_WORKER, text=True)
    assert proc.returncode == 4 and words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    log = tmp_path / "hook.log"
    env = clean_environ({"SUBCOG_HOOK_LOG": str(log), **NO_WORKER})
    payload = {"session_id": "s", "cwd": "/x", "transcript_path": str(SAMPLES / "session-a.jsonl"),
               "hook_event_name": "PreCompact", "trigger": "manual"}
    hook = run_hook("pre-compact", json.dumps(payload).encode(), db=url, environ=env)
    assert hook.returncode == 0 and hook.stderr == b"", hook.stderr
    assert hook_output_problems("PreCompact", hook.stdout.decode()) == []
    assert words in log.read_text()
    from subcog_store.postgres.local_server import with_database

    dbname = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    with psycopg.connect(with_database(pg_server.url, dbname), autocommit=True) as con:
        exists = con.execute("select to_regclass('memories')").fetchone()[0]
        assert exists is None or con.execute("select count(*) from memories").fetchone()[0] == 0
    pg_server.drop(with_database(pg_server.url, dbname))   # with it, the role's rights on it


def test_a_server_restart_mid_capture_is_exit_4_and_nothing_of_it_is_kept(pg_server, monkeypatch, capsys) -> None:
    """The server ends the connection after the capture wrote its memory and vector, before the rest of its
    transaction (a restart, a failover): the command exits 4 with the cause in words; no memory, vector, recent
    row or decision of it is kept; the same capture run again stores it once."""
    from helpers import cli_in_process
    from subcog_store.db import memories
    from subcog_store.postgres.local_server import with_database

    url = pg_server.database(migrated=True)
    admin_url = with_database(pg_server.url, psycopg.conninfo.conninfo_to_dict(url)["dbname"])
    insert = memories.insert

    def insert_then_restart(con, **row):
        insert(con, **row)
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute("select pg_terminate_backend(%s)", (con.raw.info.backend_pid,))

    monkeypatch.setattr(memories, "insert", insert_then_restart)
    code, _, err = cli_in_process(monkeypatch, capsys, "--db", url, "capture", "-n", "decisions", A)
    assert code == 4 and "connection to the server was lost" in err and "Traceback" not in err, err
    counts = "select (select count(*) from memories), (select count(*) from memory_vectors), " \
             "(select count(*) from recent_captures), (select count(*) from dedup_log)"
    with psycopg.connect(admin_url, autocommit=True) as con:
        assert con.execute(counts).fetchone() == (0, 0, 0, 0)
    monkeypatch.setattr(memories, "insert", insert)
    code, out, err = cli_in_process(monkeypatch, capsys, "--db", url, "capture", "-n", "decisions", A)
    assert code == 0, err
    with psycopg.connect(admin_url, autocommit=True) as con:
        assert con.execute(counts).fetchone()[:3] == (1, 1, 1)


def test_a_statement_timeout_the_database_sets_is_exit_4_for_commands_and_exit_0_for_hooks(pg_server,
                                                                                        tmp_path) -> None:
    """The administrator set a statement timeout on the database, and a statement runs past it (here: a table
    locked by maintenance): a command exits 4 saying the server did not answer in time; a hook exits 0 with valid
    output, the cause in its log; the capture that met it kept nothing."""
    from subcog_store.postgres.local_server import with_database

    url = pg_server.database(migrated=True)
    dbname = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    admin_url = with_database(pg_server.url, dbname)
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'alter database "{dbname}" set statement_timeout = 300')
    log = tmp_path / "hook.log"
    payload = {"session_id": "s", "cwd": "/x", "transcript_path": str(SAMPLES / "session-a.jsonl"),
               "hook_event_name": "PreCompact", "trigger": "manual"}
    with psycopg.connect(admin_url) as maintenance:   # holds the lock until the block ends (rolled back)
        maintenance.execute("lock table memories in access exclusive mode")
        proc = run_cli("capture", "-n", "decisions", A, db=url, env=NO_WORKER, text=True)
        hook = run_hook("pre-compact", json.dumps(payload).encode(), db=url,
                        environ=clean_environ({"SUBCOG_HOOK_LOG": str(log), **NO_WORKER}))
    assert proc.returncode == 4 and "did not answer in time" in proc.stderr and "Traceback" not in proc.stderr, \
        proc.stderr
    assert hook.returncode == 0 and hook.stderr == b"", hook.stderr
    assert hook_output_problems("PreCompact", hook.stdout.decode()) == []
    assert "did not answer in time" in log.read_text()
    with psycopg.connect(admin_url, autocommit=True) as admin:
        assert admin.execute("select count(*) from memories").fetchone()[0] == 0


def test_the_connect_timeout_is_found_where_libpq_finds_it(tmp_path) -> None:
    """The string's own connect_timeout, else its service's in the service file, else PGCONNECT_TIMEOUT; a value
    that is not positive is no limit (libpq's meaning) and the next place is asked."""
    from subcog_store.postgres.connection import connect_timeout_of, within

    services = tmp_path / "pg_service.conf"
    services.write_text("# the team's services\n[team]\nhost=db.example\nconnect_timeout=0.4\n\n[slow]\n"
                        "host=db.example\nconnect_timeout=0\n", encoding="utf-8")
    environ = {"HOME": str(tmp_path / "nowhere"), "PGSERVICEFILE": str(services), "PGCONNECT_TIMEOUT": "0.7"}
    assert connect_timeout_of("service=team connect_timeout=0.2", 9, environ) == 0.2
    assert connect_timeout_of("service=team", 9, environ) == 0.4
    assert connect_timeout_of("postgresql://db.example/m", 9, {**environ, "PGSERVICE": "team"}) == 0.4
    assert connect_timeout_of("service=slow", 9, environ) == 0.7
    assert connect_timeout_of("service=absent", 9, environ) == 0.7
    assert connect_timeout_of("host=db.example", 9, {"HOME": str(tmp_path)}) == 9
    assert connect_timeout_of("host=db.example connect_timeout=-1", 9, {"PGCONNECT_TIMEOUT": "x"}) == 9
    assert "connect_timeout=0.400" in within("service=team", 1.0, environ)       # the lowest of them
    assert "connect_timeout=0.250" in within("service=team", 0.25, environ)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".pg_service.conf").write_text("[team]\nconnect_timeout=0.3\n", encoding="utf-8")
    assert connect_timeout_of("service=team", 9, {"HOME": str(tmp_path / "home")}) == 0.3


@pytest.mark.parametrize("how", ["PGCONNECT_TIMEOUT", "service file"])
def test_a_hook_waits_no_longer_than_libpqs_own_connect_timeout_when_it_is_shorter(how, tmp_path) -> None:
    """A user's shorter connect_timeout (the environment's or the service's) wins over the hook's share of its
    budget, on a server that takes the connection and never answers: the log names the time it allowed. The
    budget is one no start-up uses up (the budget counts the process's start-up: with 4 s, a start-up of 3.4 s
    at load made the share the shorter), so the user's 0.3 s is the shorter at any load."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    log = tmp_path / "hook.log"
    env = clean_environ({"SUBCOG_HOOK_LOG": str(log), "SUBCOG_HOOK_BUDGET_SECS": "600", **NO_WORKER})
    if how == "PGCONNECT_TIMEOUT":
        env["PGCONNECT_TIMEOUT"] = "0.3"
        db = f"postgresql://alice@127.0.0.1:{port}/team"
    else:
        services = tmp_path / "pg_service.conf"
        services.write_text(f"[team]\nhost=127.0.0.1\nport={port}\ndbname=team\nuser=alice\n"
                            "connect_timeout=0.3\n", encoding="utf-8")
        env["PGSERVICEFILE"] = str(services)
        db = "service=team"
    payload = {"hook_event_name": "UserPromptSubmit", "prompt": "which cache did we choose?", "session_id": "s",
               "cwd": "/x", "transcript_path": str(SAMPLES / "session-a.jsonl")}
    try:
        proc = run_hook("user-prompt-submit", json.dumps(payload).encode(), db=db, environ=env)
    finally:
        listener.close()
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    assert hook_output_problems("UserPromptSubmit", proc.stdout.decode()) == []
    allowed = re.search(r"no answer in the ([0-9.]+) s its connect_timeout allows", log.read_text())
    assert allowed and float(allowed[1]) == 0.3, log.read_text()


@pytest.mark.parametrize("given", [
    f"postgresql://team:{SECRET}@db.example/memories",
    f"postgresql://team@db.example/memories?password={SECRET}",
    f"host=db.example dbname=memories user=team password={SECRET}",
])
def test_a_connection_string_with_a_password_is_refused_and_never_echoed(given, tmp_path) -> None:
    for proc in (run_cli("list", db=given, env=NO_WORKER, text=True),
                 run_cli("list", env={**NO_WORKER, "SUBCOG_DB": given}, text=True),
                 run_cli("install-hooks", "--project", str(tmp_path), db=given, env=NO_WORKER,
                         text=True)):
        assert proc.returncode == 3, proc
        assert SECRET not in proc.stdout + proc.stderr
        assert "PGPASSWORD" in proc.stderr and ".pgpass" in proc.stderr and "service=" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / ".claude").exists()


def test_a_wrong_or_unreachable_url_is_a_clear_error(tmp_path) -> None:
    proc = run_cli("list", db=f"postgresql://nobody@/subcog?host={tmp_path}&connect_timeout=2", env=NO_WORKER,
                   text=True)
    assert proc.returncode == 4 and "cannot be reached" in proc.stderr and "Traceback" not in proc.stderr
    bad = run_cli("list", db="postgresql://[::1", env=NO_WORKER, text=True)
    assert bad.returncode == 3 and "not a usable PostgreSQL connection string" in bad.stderr


def _contents(db: str) -> dict:
    """What a copy must keep of each current memory: text and hash, scope, importance, tags, session, date, the
    text of its successor, and its vector."""
    from subcog_store.core import Core
    from subcog_store.db import memories, vectors

    core = Core(db, readonly=True, fetch_model=False)
    try:
        active = memories.listed(core.con, status="active", limit=1000)
        by_id = {m.id: m for m in active}
        return {m.content: (m.content_hash, m.domain, m.namespace, m.importance, m.tags, m.session_id, m.created_at,
                            by_id[m.successor_id].content if m.successor_id else None,
                            vectors.of_memory(core.con, m.id)) for m in active}
    finally:
        core.close()


def test_copy_sqlite_to_postgresql_and_back_keeps_every_memory_once(tmp_path, pg_server, make_store, clock) -> None:
    source = tmp_path / "source.db"
    store = make_store(path=source)
    store.capture("The cache TTL is set to 5 minutes for the session tokens in production.", "decisions",
                  session_id="s1", importance=0.7, tags=["cache"])
    clock.advance(60)
    store.capture("The cache TTL is set to 10 minutes for the session tokens in production.", "decisions",
                  session_id="s2")
    store.capture(A, "decisions", "billing")
    store.capture(OTHER, "patterns", "billing", importance=0.9)
    retired = store.capture("Learned that the retry middleware retries POST requests, causing double charges.",
                            "learnings")
    store.forget(retired.memory_id)
    store.close()
    pg, back = pg_server.database(migrated=True), str(tmp_path / "back.db")

    first = run_cli("copy", str(source), pg, "--json", env=NO_WORKER, text=True)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["copied"] == 4 and report["retired_left_out"] == 1 and report["errors"] == []
    again = json.loads(run_cli("copy", str(source), pg, "--json", env=NO_WORKER, text=True).stdout)
    assert again["copied"] == 0 and again["decisions"] == {"hash_exact": 4}
    assert json.loads(run_cli("copy", pg, back, "--json", env=NO_WORKER, text=True).stdout)["copied"] == 4
    original = _contents(str(source))
    assert _contents(pg) == original and _contents(back) == original
    assert sum(1 for v in original.values() if v[7]) == 1   # the changed fact's link came along
    only_billing = str(tmp_path / "billing.db")
    assert json.loads(run_cli("copy", pg, only_billing, "--domain", "billing", "--json", env=NO_WORKER,
                              text=True).stdout)["copied"] == 2
    assert {v[1] for v in _contents(only_billing).values()} == {"billing"}
    for log in (cli(pg, "review", "--all"), cli(back, "review", "--all")):
        assert {d["decision"] for d in json.loads(log.stdout)} >= {"stored", "changed_fact"}
