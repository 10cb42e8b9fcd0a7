"""Bad input to a capture (issue 25): a transcript of only tool calls, only code, only another language, only
summaries, a summary without sections, a 64 KiB sentence, a list of 5,000 items. Each is captured within the
hook's budget (over successive runs when it is large: each run makes progress), nothing is lost (the transcript
is read to its end, every fact of it stored), nothing is half-written (the store's invariants hold)."""
from __future__ import annotations

import json
from pathlib import Path

import re

import pytest
from hypothesis import given, settings, strategies as st

from helpers import read_rows, scrub_environ
from subcog_store.db.connection import connect
from subcog_store.doctor import diagnose
from subcog_store.claude_code.handlers import pre_compact
from subcog_store.capture.session import PIECE_CHARS, HookOptions, pieces
from subcog_store.extraction.transcript import AssistantText

MAX_RUNS = 200   # a progress criterion bounds the loop: every run but the last must move the offset on
INVARIANTS = {"sqlite_integrity", "stored_hash_matches_content", "one_active_per_hash", "successor_exists",
              "no_capture_left_pending"}


@pytest.fixture(autouse=True)
def hook_env(monkeypatch, tmp_path):
    scrub_environ(monkeypatch)
    monkeypatch.setenv("SUBCOG_HOOK_LOG", str(tmp_path / "hook.log"))
    monkeypatch.setenv("SUBCOG_WORKER_ENABLED", "false")
    monkeypatch.setenv("SUBCOG_DEDUP_SEMANTIC_ENABLED", "false")   # meaning plays no part here: the text tier


def line(kind: str, content, n: int, **extra) -> str:
    return json.dumps({"type": kind, "uuid": f"{kind}-{n}", "sessionId": "s", "isSidechain": False,
                       "timestamp": "2026-11-20T09:00:00Z", "message": {"role": kind, "content": content},
                       **extra}) + "\n"


def text(s: str) -> list[dict]:
    return [{"type": "text", "text": s}]


def capture_until_done(tmp_path: Path, path: Path, budget: float = 10.0) -> tuple[Path, list]:
    """The hook on `path` until a run reads it to the end; every run saves progress or finishes."""
    db = tmp_path / "m.db"
    raw = json.dumps({"session_id": "s", "transcript_path": str(path), "cwd": str(tmp_path)}).encode()
    runs, offsets = [], []
    for _ in range(MAX_RUNS):
        run = pre_compact(raw, HookOptions(db=db, budget_secs=budget))
        runs.append(run)
        assert all(e["detail"] == "budget" for e in run.errors), run.errors
        offsets.append(saved(db))
        if not run.truncated:
            break
        assert len(offsets) < 2 or offsets[-1] > offsets[-2] or len(run.captured) > 0, "a run made no progress"
    else:
        pytest.fail(f"not done after {MAX_RUNS} runs")
    assert saved(db)[0] == path.stat().st_size    # read to the end: nothing left behind
    con = connect(str(db))
    try:
        bad = [f for f in diagnose(con) if f.check in INVARIANTS and not f.ok]
    finally:
        con.close()
    assert bad == []
    return db, runs


def saved(db: Path) -> tuple[int, int]:
    rows = read_rows(db, "select byte_offset, record_chars from hook_offsets")
    return (rows[0][0], rows[0][1]) if rows else (0, 0)


def count(db: Path, sql: str) -> int:
    return read_rows(db, sql)[0][0]


def test_only_tool_calls(tmp_path):
    path = tmp_path / "tools.jsonl"
    body = []
    for i in range(50):
        body.append(line("assistant", [{"type": "tool_use", "id": f"t{i}", "name": "Bash",
                                        "input": {"command": "pytest -q"}}], i))
        body.append(line("user", [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "12 passed"}], i))
    path.write_text("".join(body))
    db, _ = capture_until_done(tmp_path, path)
    assert count(db, "select count(*) from memories") == 0
    assert count(db, "select count(*) from session_text") == 0   # a tool result is not what the session said


def test_only_code(tmp_path):
    path = tmp_path / "code.jsonl"
    code = "```python\n" + "\n".join(f"def handler_{i}(request):\n    return {i}" for i in range(200)) + "\n```"
    path.write_text(line("assistant", text(code), 0))
    db, _ = capture_until_done(tmp_path, path)
    assert count(db, "select count(*) from memories") == 0
    assert count(db, "select count(*) from session_text") > 0    # still searchable: "handler_17"


def test_only_another_language(tmp_path):
    path = tmp_path / "ja.jsonl"
    turns = ["出力フォーマットは JSON と NDJSON に統一することに決定しました。",
             "GitHub REST API は未認証でも 60 req/hour で使えます。",
             "まず、既存のコードベースを調査します。", "确定使用 PostgreSQL 作为主数据库，因为需要事务支持。"]
    path.write_text("".join(line("assistant", text(t), i) for i, t in enumerate(turns)))
    db, _ = capture_until_done(tmp_path, path)
    assert count(db, "select count(*) from memories where content like '%NDJSON%'") == 1
    assert count(db, "select count(*) from memories where content like '%調査します%'") == 0
    assert count(db, "select count(*) from session_text") == 1   # one assistant turn


def test_only_summaries_and_a_summary_without_sections(tmp_path):
    path = tmp_path / "summaries.jsonl"
    sectioned = ("This session is being continued from a previous conversation.\n\nSummary:\n"
                 "4. Errors and fixes:\n   - The webhook handler read the body before the signature check, so "
                 "construct_event got a decoded string instead of raw bytes.\n"
                 "7. Pending Tasks:\n   - Rerun the payment tests.\n")
    plain = ("Decision: carts live in Redis hashes keyed by user id, because the session store dropped carts on "
             "deploys. Let me know if you want the TTL changed.")
    path.write_text(line("user", sectioned, 0, isCompactSummary=True) + line("user", plain, 1, isCompactSummary=True))
    db, _ = capture_until_done(tmp_path, path)
    assert count(db, "select count(*) from memories where content like '%construct_event%'") == 1
    assert count(db, "select count(*) from memories where content like '%Rerun the payment%'") == 0
    assert count(db, "select count(*) from memories where content like '%Redis hashes%'") == 1   # judged by sentence
    assert count(db, "select count(*) from memories where content like '%Let me know%'") == 0
    assert count(db, "select count(*) from session_text where role = 'summary'") == 2


def test_a_64_kib_sentence(tmp_path):
    path = tmp_path / "long.jsonl"
    sentence = "The cache key is " + " and ".join(f"field{i}" for i in range(8000)) + "."
    assert len(sentence.encode()) >= 64 << 10
    path.write_text(line("assistant", text(sentence), 0))
    db, _ = capture_until_done(tmp_path, path)
    assert count(db, "select count(*) from memories") == 0          # a dump, not a memory
    assert count(db, "select sum(length(content)) from session_text") >= len(sentence) - 100   # searchable, whole


def test_the_user_pastes_a_64_kib_plan_line_and_code(tmp_path):
    path = tmp_path / "user.jsonl"
    dump = "## Context\n\nThe cache key is " + " and ".join(f"field{i}" for i in range(8000)) + "."
    code = "```python\n" + "\n".join(f"def handler_{i}(request):\n    return {i}" for i in range(200)) + "\n```"
    assert len(dump.encode()) >= 64 << 10
    path.write_text(line("user", dump, 0) + line("user", code, 1) + line("user", "Never log card numbers.", 2))
    db, _ = capture_until_done(tmp_path, path)
    assert [r[0] for r in read_rows(db, "select content from memories")] == [
        "Developer preference: never log card numbers."]              # the 64 KiB line is a dump, not a memory
    assert count(db, "select sum(length(content)) from session_text where content like '%field7999%'") >= 1
    assert count(db, "select count(*) from session_text where content like '%handler_17(%'") == 1   # searchable


def test_a_list_of_5000_items(tmp_path):
    path = tmp_path / "list.jsonl"
    items = "\n".join(f"- Decision: service {i} listens on port {10000 + i}." for i in range(5000))
    path.write_text(line("assistant", text("The port plan for the fleet:\n\n" + items), 0))
    db, runs = capture_until_done(tmp_path, path, budget=5.0)
    assert count(db, "select count(*) from memories where status = 'active'") == 5000   # every item, once
    assert count(db, "select count(distinct content) from memories") == 5000
    whole = [re.search(r"service (\d+) listens on port (\d+)\.", c)
             for c, in read_rows(db, "select content from memories")]
    assert all(whole)                                                # no item cut in two by a piece's end
    assert sorted(int(m[1]) for m in whole) == list(range(5000))
    assert all(int(m[2]) == 10000 + int(m[1]) for m in whole)


@given(st.lists(st.text(alphabet="ab .\n", min_size=0, max_size=3000), min_size=1, max_size=40),
       st.integers(min_value=0, max_value=30_000))
@settings(max_examples=60, deadline=None)
def test_pieces_end_at_the_last_break_that_fits_and_lose_nothing(paragraphs, skip):
    body = "\n".join(paragraphs)
    skip = min(skip, len(body))
    parts = pieces(AssistantText(body, None, None, "s", 0, False), skip)
    assert "".join(p.text for p in parts) == body[skip:]             # every character once, in order
    assert all(p.char_start == skip + sum(len(q.text) for q in parts[:i]) for i, p in enumerate(parts))
    for p in parts[:-1]:                                             # a line split only when none fits whole
        window = body[p.char_start:p.char_start + PIECE_CHARS]
        assert p.text.endswith("\n") or "\n" not in window[1:]
