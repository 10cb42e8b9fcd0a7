"""The code-aware hooks as Claude Code runs them (a `subcog-store hook ...` process, JSON on stdin), through the
warm worker and in process: recall on touch (post-tool-use), on a failed command (post-tool-use-failure), the
code check at session start, citations at capture. Whatever the input, a hook exits 0, prints output the client
accepts, writes nothing on stderr, and puts the cause of a problem in its log."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import code_repo
from conftest import hook_output_problems as problems
from helpers import clean_environ, wait_for
from subcog_store.code.record import cite_captured
from subcog_store.db import citations
from subcog_store.scope import domain_for

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
SCRIPT = Path(sys.executable).parent / "subcog-store"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "subcog_store"]
MODE_ENV = {"worker": {}, "in-process": {"SUBCOG_WORKER_ENABLED": "false"}}
CI = ("Learned that the integration tests need the Postgres 16 service container; on Postgres 15 the test of the "
      "generated columns fails.")
EVENTS = {"post-tool-use": "PostToolUse", "post-tool-use-failure": "PostToolUseFailure",
          "session-start": "SessionStart"}


@pytest.fixture(params=sorted(MODE_ENV))
def mode(request):
    return MODE_ENV[request.param]


@pytest.fixture
def project(tmp_path, store, clock):
    """A repository at its first commit and a store whose memories of it are cited."""
    root = tmp_path / "repo"
    code_repo.init(root)
    domain = domain_for(root)
    clock.now = time.time()
    ids = {key: store.capture(text, ns, domain).memory_id for key, (ns, text) in code_repo.MEMORIES.items()}
    ids["ci"] = store.capture(CI, "learnings", domain).memory_id
    cite_captured(store, list(ids.values()), root, domain, time.monotonic() + 3600)
    return root, domain, ids


def hook(tmp_path, db, sub: str, payload: dict | bytes, mode: dict, **env: str) -> tuple[str, str]:
    """(stdout, the hook log) of one hook run, after checking it exited 0, quietly, with accepted output."""
    environ = clean_environ({"SUBCOG_HOOK_LOG": str(tmp_path / "hook.log"), **mode, **env})
    stdin = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    proc = subprocess.run([*CLI, "--db", str(db), "hook", sub], input=stdin, capture_output=True, env=environ,
                          timeout=120)
    assert proc.returncode == 0 and proc.stderr == b"", proc
    out = proc.stdout.decode()
    assert problems(EVENTS[sub], out) == []
    log = (tmp_path / "hook.log").read_text() if (tmp_path / "hook.log").exists() else ""
    return out, log


def logged(store, n: int) -> list[tuple]:
    """The recall log's rows once it holds `n` (the worker answers a recall hook first and writes its row after:
    wait for that state, never for a time)."""
    query = "select hook, memory_ids, reason from recall_log order by id"
    wait_for(lambda: len(store.con.execute(query).fetchall()) >= n)
    return store.con.execute(query).fetchall()


def touched(root: Path, rel: str, tool: str = "Read", session: str = "s1", **tool_input) -> dict:
    return {"session_id": session, "cwd": str(root), "hook_event_name": "PostToolUse", "tool_name": tool,
            "tool_input": {"file_path": str(root / rel), **tool_input}, "tool_response": {}, "tool_use_id": "t"}


def context(out: str) -> str:
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


def test_a_read_of_a_cited_file_brings_its_current_memories_once(tmp_path, store, project, mode):
    root, domain, ids = project
    out, _ = hook(tmp_path, store.path, "post-tool-use", touched(root, "config/app.yaml"), mode)
    text = context(out)
    assert text.startswith("Memories from earlier sessions of this project about config/app.yaml (subcog):")
    assert json.loads(out)["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    given = [key for key in ("ttl", "pool", "log", "timeout") if ids[key] in text]
    assert len(given) == 3       # SUBCOG_RECALL_TOUCH_LIMIT
    again, _ = hook(tmp_path, store.path, "post-tool-use", touched(root, "config/app.yaml"), mode)
    rest = context(again)
    assert [key for key in ("ttl", "pool", "log", "timeout") if ids[key] in rest] == \
        [key for key in ("ttl", "pool", "log", "timeout") if key not in given]      # once per memory per session
    other, _ = hook(tmp_path, store.path, "post-tool-use", touched(root, "docs/notes.md", session="s2"), mode)
    assert ids["docs"] in context(other) and ids["ttl"] not in context(other)
    nothing, _ = hook(tmp_path, store.path, "post-tool-use", touched(root, "lib/__init__.py"), mode)
    assert nothing == ""
    rows = logged(store, 4)
    assert [r[0] for r in rows] == ["post-tool-use:Read"] * 4
    assert rows[-1][2] == "no current memory cites this file"


def test_an_edit_that_changes_a_cited_value_marks_its_memory_at_once(tmp_path, store, project, mode):
    root, domain, ids = project
    app = root / "config/app.yaml"
    app.write_text(app.read_text().replace("session_ttl: 90", "session_ttl: 120"))
    out, log = hook(tmp_path, store.path, "post-tool-use",
                    touched(root, "config/app.yaml", tool="Edit", old_string="90", new_string="120"), mode)
    assert ids["ttl"] not in context(out) and ids["pool"] in context(out)
    assert citations.marks(store.con, [ids["ttl"]]) == {
        ids["ttl"]: "`session_ttl` is 120 in config/app.yaml, the memory says 90"}
    assert "edit of a cited file: 1 memories marked" in log


def test_a_failed_command_brings_the_memory_that_explains_it(tmp_path, store, project, mode):
    root, domain, ids = project
    payload = {"session_id": "s1", "cwd": str(root), "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
               "tool_input": {"command": "make test"}, "tool_use_id": "t", "is_interrupt": False,
               "error": "Exit code 2\nrunning tests...\nERROR: the generated columns test fails on this Postgres 15"
                        " service container"}
    out, _ = hook(tmp_path, store.path, "post-tool-use-failure", payload, mode)
    assert context(out).startswith("Memories from earlier sessions of this project that may explain this error")
    assert ids["ci"] in context(out)
    unrelated, _ = hook(tmp_path, store.path, "post-tool-use-failure",
                        {**payload, "session_id": "s2", "error": "zsh: command not found: frobnicate"}, mode)
    assert unrelated == ""
    interrupted, _ = hook(tmp_path, store.path, "post-tool-use-failure",
                          {**payload, "session_id": "s3", "is_interrupt": True}, mode)
    assert interrupted == ""


@pytest.mark.parametrize("payload", [
    b"", b"not json", b"[1]", b'{"tool_name": "Read"}',
    b'{"tool_name": "Read", "tool_input": "x", "cwd": "/tmp"}',
    b'{"tool_name": "Read", "tool_input": {"file_path": 7}, "cwd": "/tmp"}',
    b'{"tool_name": "Grep", "tool_input": {"file_path": "/tmp/x"}, "cwd": "/tmp"}',
    b'{"tool_name": "Read", "tool_input": {"file_path": "/etc/passwd"}, "cwd": "/tmp/no/such/dir"}',
    b'{"tool_name": "Read", "tool_input": {"file_path": "a\\u0000b"}, "cwd": "/tmp"}',
])
def test_bad_tool_hook_input_prints_nothing(tmp_path, store, payload, mode):
    out, _ = hook(tmp_path, store.path, "post-tool-use", payload, mode)
    assert out == ""
    out, _ = hook(tmp_path, store.path, "post-tool-use-failure", payload, mode)
    assert out == ""


def test_a_file_outside_the_project_and_a_huge_error(tmp_path, store, project, mode):
    root, domain, ids = project
    out, _ = hook(tmp_path, store.path, "post-tool-use", {**touched(root, "x"), "tool_input": {
        "file_path": "/etc/hosts"}}, mode)
    assert out == ""
    assert [r[2] for r in logged(store, 1)] == ["the file is outside the project"]
    big = {"session_id": "s9", "cwd": str(root), "tool_name": "Bash", "tool_input": {}, "tool_use_id": "t",
           "error": "x" * 5_000_000}
    out, _ = hook(tmp_path, store.path, "post-tool-use-failure", big, mode)
    assert out == ""


def test_session_start_checks_the_code_and_answers_on_bad_trees(tmp_path, store, project, mode):
    root, domain, ids = project
    code_repo.advance(root)
    (root / "config/app.yaml").write_bytes(b"\0binary now\0" * 10)       # the cited file became binary
    os.symlink("loop", root / "loop")
    start = {"session_id": "s1", "source": "startup", "cwd": str(root), "hook_event_name": "SessionStart"}
    out, log = hook(tmp_path, store.path, "session-start", start, mode)
    marks = citations.marks(store.con, ids.values())
    assert marks[ids["render"]] == code_repo.STALE["render"] and marks[ids["export"]] == code_repo.STALE["export"]
    assert ids["ttl"] not in marks              # its file cannot be read now: nothing concluded
    assert "config/app.yaml is binary" in log and "code check at session start" in log
    assert ids["render"] not in context(out) and ids["pool"] in context(out)


def test_session_start_outside_git_and_past_its_time(tmp_path, store, mode):
    plain = tmp_path / "plain"
    code_repo.write(plain, code_repo.FILES_1)
    start = {"session_id": "s1", "source": "startup", "cwd": str(plain), "hook_event_name": "SessionStart"}
    out, log = hook(tmp_path, store.path, "session-start", start, mode, SUBCOG_CODE_CHECK_SECS="0.000001")
    assert "code check at session start" in log


def test_a_capture_hook_cites_what_its_memories_name(tmp_path, store, mode):
    root = tmp_path / "repo"
    code_repo.init(root)
    transcript = tmp_path / "t.jsonl"
    text = ("Learned that `session_ttl` is 90 in config/app.yaml, so idle sessions expire after ninety seconds.\n\n"
            "Decision: render_page() in lib/render.py must escape the request body before it is shown.")
    transcript.write_text(json.dumps({"type": "assistant", "isSidechain": False, "sessionId": "s", "uuid": "u",
                                      "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}})
                          + "\n")
    environ = clean_environ({"SUBCOG_HOOK_LOG": str(tmp_path / "hook.log"), **mode})
    payload = {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(root),
               "hook_event_name": "PreCompact", "trigger": "manual"}
    proc = subprocess.run([*CLI, "--db", str(store.path), "hook", "pre-compact"], input=json.dumps(payload).encode(),
                          capture_output=True, env=environ, timeout=120)
    assert proc.returncode == 0 and proc.stderr == b""
    log = (tmp_path / "hook.log").read_text()
    rows = store.con.execute("select c.kind, c.path, c.name, c.value, mc.commit_sha from citations c join "
                             "memory_code mc using (memory_id) order by c.id").fetchall()
    head = code_repo.git(root, "rev-parse", "HEAD").strip()
    assert ("value", "config/app.yaml", "session_ttl", "90", head) in rows, log
    assert ("symbol", "lib/render.py", "render_page", None, head) in rows
    assert "citations: 2 of 2 new memories cite the code" in (tmp_path / "hook.log").read_text()
