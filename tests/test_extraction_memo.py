"""Texts extraction found nothing in are not extracted again (extraction/memo.py, capture/known_empty.py): a
repeat of a transcript extracts only the texts that hold candidates, and its captures, decisions and report are
those of extracting everything; a text is recognised only with the same code, floor and kind."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from subcog_store.capture.session import EMPTY_KEPT_SECS, HookOptions
from subcog_store.claude_code.handlers import pre_compact
from subcog_store.db import hook_state
from subcog_store.db.connection import connect, immediate
from subcog_store.extraction import extract, memo
from subcog_store.extraction.transcript import read_assistant_texts
from subcog_store.store import Store
from helpers import REPO_ROOT, read_rows, scrub_environ

SESSION_A = REPO_ROOT / "samples" / "session-a.jsonl"
NO_MODEL = {"SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"}


@pytest.fixture(autouse=True)
def no_settings(monkeypatch):
    scrub_environ(monkeypatch)


def capture(db: Path, transcript: Path, session: str, tmp_path: Path, **options):
    raw = json.dumps({"session_id": session, "transcript_path": str(transcript), "hook_event_name": "PreCompact",
                      "trigger": "manual", "cwd": "/"}).encode()
    return pre_compact(raw, HookOptions(db, budget_secs=600.0, environ={
        **NO_MODEL, "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log")}, **options))


def extracted_texts(monkeypatch) -> list[str]:
    """The texts each extraction call of the capture is given, in order."""
    seen: list[str] = []
    real = extract.extract_candidates

    def recording(texts, **kw):
        seen.extend(t.text for t in texts)
        return real(texts, **kw)

    monkeypatch.setattr(extract, "extract_candidates", recording)
    return seen


def comparable(run) -> dict:
    """A run's report without what depends on when it ran."""
    report = run.report()
    report["skipped"] = [{k: v for k, v in s.items() if k != "seconds_ago"} for s in report["skipped"]]
    return report


def written(db: Path) -> list[list[tuple]]:
    """What a run leaves in the store but its times: decisions, checks, memories, the session's text."""
    return [read_rows(db, sql) for sql in (
        "select decision, domain, namespace, new_content, matched_memory_id, similarity, memory_id, review_status "
        "from dedup_log order by id",
        "select domain, namespace, result, reason, method, similarity, matched_memory_id, tiers_run, tier_errors "
        "from dedup_checks order by id",
        "select id, domain, namespace, content, tags, importance, status from memories order by id",
        "select domain, session_id, record_uuid, role, piece, content from session_text order by id")]


def test_a_repeat_extracts_only_the_texts_that_hold_candidates_and_reports_the_same(tmp_path, monkeypatch):
    texts = read_assistant_texts(SESSION_A, include_user=True).texts
    holding = [t.text for t in texts if extract.extract_candidates([t])]
    empty = {t.text for t in texts} - set(holding)
    assert holding and empty
    first = tmp_path / "first.db"
    seen = extracted_texts(monkeypatch)
    assert capture(first, SESSION_A, "one", tmp_path).captured
    assert seen == [t.text for t in texts]                        # a new store knows nothing: everything extracted
    assert read_rows(first, "select count(*) from extraction_memo") == [(len(empty),)]
    with_memo, without = tmp_path / "memo.db", tmp_path / "none.db"
    shutil.copyfile(first, with_memo)
    shutil.copyfile(first, without)
    con = apsw.Connection(str(without))
    con.execute("delete from extraction_memo")
    con.close()

    seen.clear()
    repeat = capture(with_memo, SESSION_A, "two", tmp_path)
    assert seen == holding                                          # the texts known empty are left out
    seen.clear()
    again = capture(without, SESSION_A, "two", tmp_path)
    assert seen == [t.text for t in texts]
    assert repeat.skipped and not repeat.captured and not repeat.errors
    assert comparable(repeat) == comparable(again)
    assert written(with_memo) == written(without)
    assert read_rows(with_memo, "select count(*) from extraction_memo") == [(len(empty),)]


def test_a_text_is_known_only_with_the_same_code_floor_and_kind(tmp_path, monkeypatch):
    version = memo.code_version()
    assert version is not None and memo.code_version() is version   # read once a process
    one = memo.fingerprint(version, "Let me look at the tests.", "assistant", None)
    assert one == memo.fingerprint(version, "Let me look at the tests.", "assistant", None)
    assert len({one, memo.fingerprint(version, "Let me look at the tests.", "user", None),
                memo.fingerprint(version, "Let me look at the tests.", "assistant", 0.5),
                memo.fingerprint(version, "Let me look at the tests!", "assistant", None),
                memo.fingerprint(b"another code version", "Let me look at the tests.", "assistant", None)}) == 5
    db = tmp_path / "s.db"
    capture(db, SESSION_A, "one", tmp_path)
    texts = [t.text for t in read_assistant_texts(SESSION_A, include_user=True).texts]
    seen = extracted_texts(monkeypatch)
    capture(db, SESSION_A, "two", tmp_path, min_confidence=0.5)     # another floor: nothing is known
    assert seen == texts
    seen.clear()
    monkeypatch.setattr(memo, "code_version", lambda: b"the extraction code changed")
    capture(db, SESSION_A, "three", tmp_path)                       # other code: nothing is known
    assert seen == texts


def test_the_code_version_follows_every_file_extraction_loads(tmp_path, monkeypatch):
    """Every module extraction loads is read into the version (a change to any gives other fingerprints, so no
    text is recognised by what older code found); the version is of the files' names and bytes, not their place."""
    probe = ("import sys, subcog_store.extraction.extract\n"
             "print('\\n'.join(m.__file__ for n, m in list(sys.modules.items())\n"
             "                 if n.startswith('subcog_store') and getattr(m, '__file__', None)))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                            cwd=REPO_ROOT).stdout.split()
    package = memo.PACKAGE.parent
    read = {p.resolve() for p in memo.PACKAGE.iterdir() if p.is_file()} | \
        {(package / s).resolve() for s in memo.OTHER_SOURCES}
    version_only = (package / "__init__.py").resolve()   # the package's version string: no part of extraction
    left = [f for f in (Path(p).resolve() for p in loaded) if f not in read and f != version_only
            and f.read_text().strip()]
    assert not left, f"extraction loads modules its code version does not read (memo.OTHER_SOURCES): {left}"

    shutil.copytree(memo.PACKAGE, tmp_path / "extraction", ignore=shutil.ignore_patterns("__pycache__"))
    for source in memo.OTHER_SOURCES:
        (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package / source, tmp_path / source)
    monkeypatch.setattr(memo, "PACKAGE", tmp_path / "extraction")
    assert memo.code_version.__wrapped__() == memo.code_version()
    status, redact = tmp_path / "extraction" / "status.py", tmp_path / "text" / "redact.py"
    status.write_text(status.read_text() + "\n# one more line\n")
    changed = memo.code_version.__wrapped__()
    assert changed != memo.code_version()
    redact.write_text(redact.read_text() + "\n# one more line\n")
    assert memo.code_version.__wrapped__() not in (changed, memo.code_version())
    redact.unlink()
    assert memo.code_version.__wrapped__() is None                  # a source gone: nothing is recognised


def remembered_and_pruned(con) -> None:
    """Fingerprints (the whole signed 64-bit range) kept, found, and pruned by age when new ones are added."""
    with immediate(con):
        hook_state.remember_empty(con, [1, -2, 2**63 - 1, -2**63], 1_000_000, EMPTY_KEPT_SECS)
    assert hook_state.known_empty(con, [1, 3, -2**63, 2**63 - 1]) == {1, -2**63, 2**63 - 1}
    assert hook_state.known_empty(con, []) == set()
    with immediate(con):
        hook_state.remember_empty(con, [5], 1_000_000 + EMPTY_KEPT_SECS, EMPTY_KEPT_SECS)
    assert hook_state.known_empty(con, [1, -2, 5]) == {1, -2, 5}     # a window old: kept
    with immediate(con):
        hook_state.remember_empty(con, [6], 1_000_001 + EMPTY_KEPT_SECS, EMPTY_KEPT_SECS)
    assert hook_state.known_empty(con, [1, -2, 5, 6]) == {5, 6}


def test_fingerprints_are_pruned_by_age_when_new_ones_are_added(tmp_path):
    con = connect(tmp_path / "s.db")
    try:
        remembered_and_pruned(con)
    finally:
        con.close()


def test_fingerprints_on_postgresql(pg_url):
    con = connect(pg_url)
    try:
        remembered_and_pruned(con)
    finally:
        con.close()


def test_a_dry_run_remembers_nothing(tmp_path):
    db = tmp_path / "s.db"
    capture(db, SESSION_A, "one", tmp_path, dry_run=True)
    assert not db.exists() or read_rows(db, "select count(*) from extraction_memo") == [(0,)]
    Store(db, environ=NO_MODEL).close()
    capture(db, SESSION_A, "two", tmp_path, dry_run=True)
    assert read_rows(db, "select count(*) from extraction_memo") == [(0,)]
