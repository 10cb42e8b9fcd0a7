"""The `subcog-store` command line, run as a real process: output, JSON lines, exit codes, the stock shell."""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import apsw
import pytest

from helpers import run_cli
from subcog_store.cli import main as cli
from subcog_store.db.connection import latest_version
from subcog_store.text.normalize import content_hash

LONG = "We decided to use PostgreSQL as the primary database for the billing service."
NEAR = "For the billing service we decided to use PostgreSQL as the primary database."
SHORT = "Use WAL mode"


def run(db: Path | str | None, *args: str, stdin: bytes | str | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return run_cli(*args, db=db, stdin=stdin, env=env)


def jsonl(*objects: object) -> bytes:
    return b"".join((o if isinstance(o, bytes) else json.dumps(o).encode()) + b"\n" for o in objects)


def lines(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout_text.splitlines() if line.strip()]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memories.db"


# ---------------------------------------------------------------------------------------------- help

def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def nested(parser: argparse.ArgumentParser, prefix: list[str]):
    """Every (sub)command path under `parser`, with its parser and the help line its parent gives it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield prefix + [name], sub, helps.get(name)
                yield from nested(sub, prefix + [name])


CORE = {"init", "capture", "check", "list", "show", "stats", "doctor", "reembed", "sql"}


def test_every_command_has_help_text(capsys) -> None:
    commands = subcommands()
    assert CORE <= set(commands)
    handlers = {(): None}
    for path, sub, _ in nested(cli.build_parser(), []):   # a group's handler serves its subcommands too
        handlers[tuple(path)] = sub.get_default("handler") or handlers[tuple(path[:-1])]
        groups = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        assert groups or callable(handlers[tuple(path)]), f"{' '.join(path)} has a parser but no implementation"

    for path, sub, help_line in nested(cli.build_parser(), []):
        assert help_line and len(help_line) > 10, f"{' '.join(path)} has no help line in its parent's list"
        with pytest.raises(SystemExit) as exit_info:
            cli.main(path + ["--help"])
        assert exit_info.value.code == 0, path
        out = capsys.readouterr().out
        assert out.startswith("usage: subcog-store " + " ".join(path)), path
        if sub.description:
            assert " ".join(sub.description.split()) in " ".join(out.split()), path
        if path[0] in CORE:
            assert sub.description and "--json" in out, path


def test_top_level_help_lists_exit_codes() -> None:
    proc = run(None, "--help")
    assert proc.returncode == 0
    for code in ("2 invalid input", "3 bad configuration", "4 database unusable", "5 not a subcog-store database",
                 "6 doctor", "7 no such memory"):
        assert code in " ".join(proc.stdout_text.split()), code


# ---------------------------------------------------------------------------------------------- capture / check

def test_capture_and_check_text(db: Path) -> None:
    first = run(db, "capture", LONG, "--namespace", "decisions", "--tag", "db", "--importance", "0.8")
    assert first.returncode == 0, first.stderr_text
    match = re.fullmatch(r"stored (subcog://project/decisions/([0-9a-f]{12})) \(stored\)\n", first.stdout_text)
    assert match, first.stdout_text
    urn, memory_id = match.groups()

    again = run(db, "capture", "  " + LONG.upper(), "-n", "decisions")
    assert again.returncode == 0
    assert again.stdout_text.startswith("not stored (hash_exact): duplicate: exact_match via hash")
    assert urn in again.stdout_text

    near = run(db, "check", NEAR, "-n", "decisions")
    assert near.returncode == 0
    assert near.stdout_text.startswith("duplicate: semantic_similar via embedding, similarity 0.9")
    assert urn in near.stdout_text

    other = run(db, "check", NEAR, "-n", "patterns")
    assert other.returncode == 0 and other.stdout_text.startswith("unique (tiers: exact, semantic, recent;")

    shown = run(db, "show", memory_id, "--json")
    assert shown.returncode == 0
    memory = json.loads(shown.stdout_text)
    assert memory["content"] == LONG and memory["urn"] == urn and memory["tags"] == ["db"]
    assert memory["content_hash"] == content_hash(LONG) and memory["importance"] == 0.8

    listed = run(db, "list", "--json")
    assert [m["id"] for m in json.loads(listed.stdout_text)] == [memory_id]


def test_json_output_parses(db: Path) -> None:
    captured = run(db, "capture", SHORT, "-n", "techdebt", "--json")
    assert captured.returncode == 0, captured.stderr_text
    data = json.loads(captured.stdout_text)
    assert data["stored"] is True and data["namespace"] == "tech-debt" and data["decision"] == "stored"
    assert data["urn"] == f"subcog://project/tech-debt/{data['memory_id']}"
    assert data["tiers_run"] == ["exact", "semantic:skipped_short", "recent"]

    checked = run(db, "check", SHORT, "-n", "tech_debt", "--json")
    data2 = json.loads(checked.stdout_text)
    assert data2["is_duplicate"] is True and data2["reason"] == "exact_match"
    assert data2["matched_urn"] == data["urn"] and data2["similarity_score"] == 1.0
    assert isinstance(data2["check_duration_ms"], float)

    stats = json.loads(run(db, "stats", "--json").stdout_text)
    assert stats["recent_window"]["entries"] == 1
    assert {(r["namespace"], r["result"]) for r in stats["checks"]} == {("tech-debt", "unique"),
                                                                          ("tech-debt", "duplicate")}
    init = json.loads(run(db, "init", "--json").stdout_text)
    assert init["schema_version"] == latest_version()


def test_text_from_stdin(db: Path) -> None:
    proc = run(db, "capture", "-", "-n", "learnings", stdin="Learned: vec0 rejects INSERT OR REPLACE.\n")
    assert proc.returncode == 0 and proc.stdout_text.startswith("stored subcog://project/learnings/")
    check = run(db, "check", "-", "-n", "learnings", stdin="learned:   vec0 rejects insert or replace.")
    assert check.stdout_text.startswith("duplicate: exact_match")
    bad = run(db, "check", "-", "-n", "learnings", stdin=b"caf\xc3 \xff")
    assert bad.returncode == 2 and "UTF-8" in bad.stderr_text


def test_capture_jsonl(db: Path) -> None:
    stdin = jsonl(
        {"content": LONG, "namespace": "decisions", "tags": ["db"]},
        b"{not json",
        {"content": NEAR, "namespace": "decisions"},
        {"content": SHORT, "namespace": "gossip"},
        {"content": "   ", "namespace": "decisions"},
        b"",
        {"content": SHORT, "namespace": "decisions", "domain": "app"},
        {"namespace": "decisions"},
        b'{"content": "caf\xc3 broken", "namespace": "decisions"}',
        {"content": "x" * (64 * 1024 + 1), "namespace": "decisions"},
        {"content": LONG, "namespace": "decisions"},
    )
    proc = run(db, "capture", "--jsonl", stdin=stdin)
    assert proc.returncode == 2, proc.stderr_text
    out = lines(proc)
    assert [o["line"] for o in out] == [1, 2, 3, 4, 5, 7, 8, 9, 10, 11]  # order kept, the blank line skipped
    assert [o["ok"] for o in out] == [True, False, True, False, False, True, False, False, False, True]
    assert out[0]["stored"] and out[0]["decision"] == "stored"
    assert not out[2]["stored"] and out[2]["decision"] == "semantic_skip"
    assert out[2]["matched_urn"] == out[0]["urn"]
    assert out[5]["stored"] and out[5]["urn"].startswith("subcog://app/decisions/")
    assert out[9]["decision"] == "hash_exact" and out[9]["memory_id"] == out[0]["memory_id"]
    for bad in (o for o in out if not o["ok"]):
        assert bad["error"] and bad["exit_code"] == 2
    assert "not JSON" in out[1]["error"] and "gossip" in out[3]["error"] and "UTF-8" in out[7]["error"]
    assert "64 KiB" in out[8]["error"]
    listed = json.loads(run(db, "list", "--json", "--status", "all").stdout_text)
    assert sorted(m["content"] for m in listed) == sorted([LONG, SHORT])


def test_check_jsonl_all_good_exits_0(db: Path) -> None:
    assert run(db, "capture", SHORT, "-n", "decisions").returncode == 0
    proc = run(db, "check", "--jsonl", stdin=jsonl({"content": SHORT, "namespace": "decisions"},
                                                    {"content": LONG, "namespace": "decisions"}))
    assert proc.returncode == 0, proc.stderr_text
    out = lines(proc)
    assert [(o["line"], o["is_duplicate"]) for o in out] == [(1, True), (2, False)]
    listed = json.loads(run(db, "list", "--json").stdout_text)
    assert [m["content"] for m in listed] == [SHORT]  # check stores nothing


def test_check_jsonl_bad_line_exits_2(db: Path) -> None:
    proc = run(db, "check", "--jsonl", stdin=jsonl({"content": SHORT, "namespace": "decisions"},
                                                    {"content": 5, "namespace": "decisions"},
                                                    {"content": LONG, "namespace": "nope"},
                                                    {"content": LONG, "namespace": "decisions"}))
    assert proc.returncode == 2
    assert [(o["line"], o["ok"]) for o in lines(proc)] == [(1, True), (2, False), (3, False), (4, True)]


def test_capture_jsonl_bad_tags_line(db: Path) -> None:
    proc = run(db, "capture", "--jsonl", stdin=jsonl({"content": "first note", "namespace": "decisions"},
                                                      {"content": "second note", "namespace": "decisions", "tags": 5},
                                                      {"content": "third note", "namespace": "decisions"}))
    assert "Traceback" not in proc.stderr_text
    assert proc.returncode == 2
    assert [(o["line"], o["ok"]) for o in lines(proc)] == [(1, True), (2, False), (3, True)]


def test_capture_jsonl_bad_domain_line(db: Path) -> None:
    proc = run(db, "capture", "--jsonl", stdin=jsonl({"content": "first note", "namespace": "decisions"},
                                                      {"content": "second note", "namespace": "decisions", "domain": 5},
                                                      {"content": "third note", "namespace": "decisions"}))
    assert "Traceback" not in proc.stderr_text
    assert proc.returncode == 2
    assert [(o["line"], o["ok"]) for o in lines(proc)] == [(1, True), (2, False), (3, True)]


@pytest.mark.parametrize("command", ["check", "capture"])
def test_jsonl_lone_surrogate_in_long_line(db: Path, command: str) -> None:
    surrogate = b'{"content": "a long line of text that is clearly over fifty characters \\ud800 here", ' \
                b'"namespace": "decisions"}'
    proc = run(db, command, "--jsonl", stdin=jsonl({"content": "first note", "namespace": "decisions"},
                                                    surrogate, {"content": "third note", "namespace": "decisions"}))
    assert "Traceback" not in proc.stderr_text
    assert proc.returncode == 2
    assert [(o["line"], o["ok"]) for o in lines(proc)] == [(1, True), (2, False), (3, True)]


def test_jsonl_lone_surrogate_in_short_line(db: Path) -> None:
    proc = run(db, "check", "--jsonl", stdin=jsonl({"content": "first note", "namespace": "decisions"},
                                                    b'{"content": "short \\ud800", "namespace": "decisions"}'))
    assert proc.returncode == 2
    out = lines(proc)
    assert [(o["line"], o["ok"]) for o in out] == [(1, True), (2, False)] and "surrogate" in out[1]["error"]


# ---------------------------------------------------------------------------------------------- exit codes

@pytest.mark.parametrize("args", [["capture", "", "-n", "decisions"], ["capture", "   ", "-n", "decisions"],
                                  ["check", "hello", "-n", "gossip"], ["capture", "hello"],
                                  ["capture", "hello", "-n", "decisions", "--importance", "2"]])
def test_exit_2_invalid_input(db: Path, args: list[str]) -> None:
    proc = run(db, *args)
    assert proc.returncode == 2, (proc.stdout_text, proc.stderr_text)
    assert proc.stderr_text.startswith("subcog-store: ") and "Traceback" not in proc.stderr_text
    if db.exists():
        con = apsw.Connection(str(db))
        assert con.execute("select count(*) from memories").fetchone()[0] == 0


@pytest.mark.parametrize("variable, value", [("SUBCOG_DEDUP_THRESHOLD_DEFAULT", "abc"),
                                             ("SUBCOG_DEDUP_ENABLED", "perhaps"),
                                             ("SUBCOG_DEDUP_CACHE_CAPACITY", "-5")])
def test_exit_3_bad_config(db: Path, variable: str, value: str) -> None:
    proc = run(db, "check", SHORT, "-n", "decisions", env={variable: value})
    assert proc.returncode == 3
    assert variable in proc.stderr_text and "Traceback" not in proc.stderr_text


def test_exit_4_missing_directory(tmp_path: Path) -> None:
    proc = run(tmp_path / "no" / "such" / "memories.db", "capture", SHORT, "-n", "decisions")
    assert proc.returncode == 4 and "does not exist" in proc.stderr_text
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("kind", ["random", "other-sqlite"])
def test_exit_5_not_a_subcog_database(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "other.db"
    if kind == "random":
        path.write_bytes(os.urandom(4096))
    else:
        con = apsw.Connection(str(path))
        con.execute("create table t (x); insert into t values (1)")
        con.close()
    before = path.read_bytes()
    for args in (["check", SHORT, "-n", "decisions"], ["capture", SHORT, "-n", "decisions"], ["doctor"]):
        proc = run(path, *args)
        assert proc.returncode == 5, (args, proc.stderr_text)
        assert "untouched" in proc.stderr_text
    assert path.read_bytes() == before


def test_exit_6_doctor_failure_and_0_when_ok(db: Path) -> None:
    assert run(db, "capture", SHORT, "-n", "decisions").returncode == 0
    assert run(db, "doctor").returncode == 0
    con = apsw.Connection(str(db))
    con.execute("delete from memory_vectors_rowids")  # the vector index forgets the memory (no vec0 needed)
    con.close()
    proc = run(db, "doctor")
    assert proc.returncode == 6 and "FAIL active_memory_has_vector" in proc.stdout_text


def test_exit_7_show_unknown_id(db: Path) -> None:
    assert run(db, "init").returncode == 0
    proc = run(db, "show", "0123456789ab")
    assert proc.returncode == 7 and "0123456789ab" in proc.stderr_text


# ---------------------------------------------------------------------------------------------- sql and the stock shell

def test_sql_print(db: Path) -> None:
    assert run(db, "init").returncode == 0
    proc = run(db, "sql", "--print")
    assert proc.returncode == 0
    argv = shlex.split(proc.stdout_text)
    assert argv[0] == "sqlite3" and argv[1] == "-cmd" and argv[2].startswith(".load ") and argv[3] == str(db)
    library = argv[2].split(" ", 1)[1]
    assert Path(library).exists() or any(Path(library + s).exists() for s in (".so", ".dylib", ".dll"))
    with_query = shlex.split(run(db, "sql", "--print", "select count(*) from v_memories").stdout_text)
    assert with_query[-1] == "select count(*) from v_memories"


def test_sql_on_missing_database(tmp_path: Path) -> None:
    proc = run(tmp_path / "absent.db", "sql", "--print")
    assert proc.returncode == 7 and not (tmp_path / "absent.db").exists()


@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="the stock sqlite3 shell is not installed")
def test_stock_shell_reads_views_without_the_extension(db: Path) -> None:
    captured = json.loads(run(db, "capture", LONG, "-n", "decisions", "-d", "app", "--json").stdout_text)
    memory_id = captured["memory_id"]
    plain = subprocess.run(["sqlite3", "-batch", "-separator", "|", str(db),
                            "select id, urn, content_hash, hash_tag from v_memories;"
                            "select content_hash from memories;"
                            "select count(*) from v_decisions; select entries from v_recent_window;"],
                           capture_output=True, text=True, timeout=30)
    assert plain.returncode == 0, plain.stderr
    digest = content_hash(LONG)
    assert plain.stdout.splitlines() == [
        f"{memory_id}|subcog://app/decisions/{memory_id}|{digest}|hash:sha256:{digest[:16]}", digest, "1", "1"]

    # The printed command (with vec0 loaded) can read the vectors too.
    argv = shlex.split(run(db, "sql", "--print", "select count(*) from memory_vectors;").stdout_text)
    loaded = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if loaded.returncode != 0 and "load" in loaded.stderr.lower():
        pytest.skip(f"this sqlite3 build cannot load extensions: {loaded.stderr.strip()}")
    assert loaded.returncode == 0 and loaded.stdout.strip() == "1", loaded.stderr
