"""Issue 29, item 3: pending captures are read row by row. A row that cannot be read (a torn payload, a payload
that is not a hook input) is logged by its fingerprint and set aside for `doctor`; the captures beside it are
still redone; `doctor` reports both the unreadable rows and the readable ones left pending."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import apsw
import pytest

from conftest import clean_environ, cli_command
from subcog_store.doctor import diagnose
from subcog_store.text.normalize import fingerprint

REPO = Path(__file__).resolve().parents[1]
CLI = cli_command()
LONG_AGO = "2000-01-01T00:00:00.000Z"
BAD = ["{truncated", "[1, 2]", '{"session_id": "x"}', '{"transcript_path": 7}', '{"transcript_path": ""}']


@pytest.fixture
def world(tmp_path):
    env = clean_environ({"SUBCOG_HOOK_LOG": str(tmp_path / "hook.log"), "SUBCOG_WORKER_ENABLED": "false",
                         "SUBCOG_HOOK_DOMAIN": "shop", "SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"})
    return tmp_path, tmp_path / "m.db", env


def hook(env: dict, db: Path, transcript: Path, session: str) -> None:
    payload = {"session_id": session, "transcript_path": str(transcript), "cwd": "/", "trigger": "manual",
               "hook_event_name": "PreCompact"}
    proc = subprocess.run([*CLI, "--db", str(db), "hook", "pre-compact"], input=json.dumps(payload).encode(),
                          capture_output=True, env=env, timeout=120)
    assert proc.returncode == 0 and proc.stderr == b"", proc


def doctor(db: Path) -> dict[str, list[str]]:
    from subcog_store.db.connection import connect

    con = connect(db, migrate=False)
    try:
        return {f.check: f.examples for f in diagnose(con) if not f.ok}
    finally:
        con.close()


def test_a_bad_row_is_set_aside_and_the_capture_beside_it_is_redone(world):
    tmp, db, env = world
    small = tmp / "small.jsonl"
    small.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n")
    hook(env, db, small, "first")                  # the store exists
    left = tmp / "a.jsonl"
    left.write_bytes((REPO / "samples" / "session-a.jsonl").read_bytes())
    with apsw.Connection(str(db)) as con:          # a dead worker left one valid and several unreadable rows
        for i, bad in enumerate(BAD):
            con.execute("insert into hook_pending (session_id, transcript_path, payload, queued_at) values (?, ?, ?, ?)", (f"bad{i}", f"/t/{i}.jsonl", bad, LONG_AGO))
        con.execute("insert into hook_pending (session_id, transcript_path, payload, queued_at) values ('left', ?, ?, ?)", (str(left), json.dumps(
            {"session_id": "left", "transcript_path": str(left), "cwd": "/", "event": "pre-compact"}), LONG_AGO))
    found = doctor(db)
    assert found["no_capture_left_pending"] == [f"left {left}"]
    assert len(found["no_unreadable_pending_capture"]) == len(BAD)

    for session in ("second", "third"):            # one hook sets them aside and redoes the rest; the next is quiet
        hook(env, db, small, session)
    with apsw.Connection(str(db)) as con:
        active = con.execute("select count(*) from memories where status = 'active'").fetchone()[0]
        kept = sorted(r[0] for r in con.execute("select payload from hook_pending_set_aside"))
        waiting = con.execute("select count(*) from hook_pending").fetchone()[0]
    assert active == 7 and waiting == 0          # session-a's seven, redone from the saved offset (none saved)
    assert kept == sorted(BAD)
    log = (tmp / "hook.log").read_text()
    assert "pending captures not read" not in log
    assert log.count("set aside") == len(BAD), log
    for bad in BAD:
        assert fingerprint(bad) in log and bad not in log.replace(fingerprint(bad), "")
    found = doctor(db)
    assert "no_capture_left_pending" not in found
    assert sorted(found["no_unreadable_pending_capture"]) == sorted(
        f"bad{i} /t/{i}.jsonl ({fingerprint(b)})" for i, b in enumerate(BAD))[:5]
