"""No secret of the corpus (tests/secret_corpus.py) gets out: end to end through the real CLI.

A transcript whose assistant messages state a lasting fact with each secret goes through `hook pre-compact`;
then `hook session-start`, `list`, `show`, `review --all` and `stats` run on the store. No secret may appear in
the database file or its -wal (read as they are, never checkpointed), the FTS index, any command's stdout or
stderr, or the hook log.
Every capture path redacts on the way in (`inputs.prepare`), and `list`, `show`, `review` and the hooks' context
redact again on the way out, for a secret that reached the store some other way (an older version, `sql`).
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from helpers import clean_environ, read_rows, run_cli
from secret_corpus import SECRETS, Secret

CLI = [sys.executable, "-m", "subcog_store"]
SESSION = "sess-secret-leaks"
TIMEOUT = 900


def statement(i: int, case: Secret) -> str:
    """A lasting fact the capture keeps ("Decision: ..."), with a marker to find it again."""
    return f"Decision: for the {case.kind} setup (ref K{i:03d}) we keep this: {case.text}"


STATEMENTS = [statement(i, c) for i, c in enumerate(SECRETS)]
_PUBLIC = " ".join(s.replace(c.secret, " ") for s, c in zip(STATEMENTS, SECRETS)).lower()


def needles(case: Secret) -> tuple[list[bytes], list[str]]:
    """What a leak of `case` looks like: the secret, its long alphanumeric runs as they are and lower-cased
    (FTS terms are lower case, a folded PEM body loses its newlines); and its FTS terms (runs of 6+)."""
    runs = [r for r in re.findall(r"[A-Za-z0-9]+", case.secret) if r.lower() not in _PUBLIC]
    blobs = {case.secret.encode()} | {v.encode() for r in runs if len(r) >= 12 for v in (r, r.lower())}
    return sorted(blobs), sorted({r.lower() for r in runs if len(r) >= 6})


class Leak(AssertionError):
    """A secret of the corpus was found where it must not be."""


def assert_no_leak(data: bytes, where: str, cases: list[Secret] = SECRETS) -> None:
    found = [c.kind for c in cases if any(n in data for n in needles(c)[0])]
    if found:
        raise Leak(f"{where}: {', '.join(found)}")


def env(tmp_path: Path) -> dict[str, str]:
    return clean_environ({"SUBCOG_DB": str(tmp_path / "s.db"), "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log"),
                          "SUBCOG_HOOK_BUDGET_SECS": "600"})


def cli(tmp_path: Path, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return run_cli(*args, stdin=stdin, env=env(tmp_path), timeout=TIMEOUT, argv=CLI)


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
    return proc


def record(text: str, role: str = "assistant", n: int = 0) -> str:
    content = [{"type": "text", "text": text}] if role == "assistant" else text
    return json.dumps({"type": role, "isSidechain": False, "sessionId": SESSION, "uuid": f"u-{role}-{n}",
                       "cwd": "/home/dev/shop", "message": {"role": role, "content": content}}) + "\n"


def write_transcript(path: Path, texts: list[str]) -> Path:
    path.write_text(record("Set up the integrations and remember the settings.", "user")
                    + "".join(record(t, n=i) for i, t in enumerate(texts)), encoding="utf-8")
    return path


def pre_compact(tmp_path: Path, transcript: Path, *args: str) -> subprocess.CompletedProcess:
    payload = {"session_id": SESSION, "transcript_path": str(transcript), "hook_event_name": "PreCompact",
               "trigger": "auto", "cwd": "/home/dev/shop", "custom_instructions": None}
    return ok(cli(tmp_path, "hook", "pre-compact", *args, stdin=json.dumps(payload).encode()))


def session_start(tmp_path: Path) -> subprocess.CompletedProcess:
    payload = {"session_id": SESSION, "source": "compact", "hook_event_name": "SessionStart", "cwd": "/home/dev/shop"}
    return ok(cli(tmp_path, "hook", "session-start", stdin=json.dumps(payload).encode()))


def store_files(tmp_path: Path) -> dict[str, bytes]:
    """The database, its -wal and -shm, byte for byte, as they are now."""
    return {p.name: p.read_bytes() for p in sorted(tmp_path.glob("s.db*"))}


def query(db: Path, sql: str) -> list[tuple]:
    """Read-only: never checkpoints or changes the files."""
    return read_rows(db, sql)


def fts_terms(db: Path) -> set[str]:
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        con.execute("create virtual table temp.terms using fts5vocab(main, memories_fts, row)")
        return {t for (t,) in con.execute("select term from temp.terms")}
    finally:
        con.close()


# -- the hook path redacts: nothing leaks anywhere --------------------------------------------------------------
def test_hook_path_never_leaks(tmp_path):
    transcript = write_transcript(tmp_path / "t.jsonl", STATEMENTS)
    outputs: dict[str, subprocess.CompletedProcess] = {}
    outputs["pre-compact --dry-run --format subcog"] = pre_compact(tmp_path, transcript, "--dry-run",
                                                                    "--format", "subcog")
    reports = []
    while not reports or reports[-1]["truncated"]:   # a loaded machine may stop a run at the client's timeout
        name = "pre-compact" + (f" (run {len(reports) + 1})" if reports else "")
        outputs[name] = pre_compact(tmp_path, transcript)
        reports.append(json.loads(query(tmp_path / "s.db", "select report from hook_runs order by id desc "
                                               "limit 1")[0][0]))
        assert reports[-1]["captured"] or reports[-1]["skipped"], "a run made no progress"
        n = reports[-1]["redacted"]
        assert not n or f"redacted {n} secret{'' if n == 1 else 's'}" in outputs[name].stdout.decode()
    # every run's report, the worker's turns on a deferred capture between the hook's runs included
    reports = [json.loads(r) for (r,) in query(tmp_path / "s.db", "select report from hook_runs order by id")]
    assert not any(r["dry_run"] for r in reports)
    outputs["session-start"] = session_start(tmp_path)
    for args in (["list", "--status", "all", "--limit", "1000"], ["review", "--all", "--limit", "1000"], ["stats"]):
        outputs[" ".join(args)] = ok(cli(tmp_path, *args))
        outputs[" ".join(args) + " --json"] = ok(cli(tmp_path, *args, "--json"))
    memories = json.loads(outputs["list --status all --limit 1000 --json"].stdout)
    for m in memories[:: max(1, len(memories) // 12)]:  # a dozen, each CLI start costs ~0.3 s
        outputs[f"show {m['id']}"] = ok(cli(tmp_path, "show", m["id"]))
    outputs["show --json"] = ok(cli(tmp_path, "show", memories[-1]["id"], "--json"))
    files = store_files(tmp_path)  # before any connection of this test touches them
    assert "memory report" in outputs["session-start"].stdout.decode()  # the report was handed over

    # the capture kept every statement (stored, or skipped as a repeat: both in the runs' reports), each with its
    # secret redacted, except that a key block on lines of its own is no sentence and is left out altogether
    kept = [e["content"] for report in reports for e in report["captured"] + report["skipped"]]
    missing = [i for i in range(len(SECRETS)) if not any(
        f"(ref K{i:03d})" in k and ("[REDACTED]" in k or "-----BEGIN" in SECRETS[i].text or "PuTTY" in SECRETS[i].text)
        for k in kept)]
    assert not missing, ([SECRETS[i].kind for i in missing], [r["errors"] for r in reports],
                         [r["truncated"] for r in reports])
    markers = [sum(e["content"].count("[REDACTED]") for e in r["captured"] + r["skipped"]) for r in reports]
    assert sum(markers) >= len(SECRETS) - 5
    # a run's count is of the candidates it extracted: one stopped early also counts those left to the next run
    assert all(r["redacted"] >= n for r, n in zip(reports, markers))
    assert len(reports) > 1 or reports[0]["redacted"] == markers[0]

    for name, data in files.items():
        assert_no_leak(data, name)
    terms = fts_terms(tmp_path / "s.db")
    in_index = [c.kind for c in SECRETS if terms & set(needles(c)[1])]
    if in_index:
        raise Leak(f"FTS index: {', '.join(in_index)}")
    for name, proc in outputs.items():
        assert_no_leak(proc.stdout, f"stdout of {name}")
        assert_no_leak(proc.stderr, f"stderr of {name}")
    log = tmp_path / "hook.log"
    assert log.exists()
    assert_no_leak(log.read_bytes(), "hook log")


# -- the capture command, and stored secrets on their way out ----------------------------------------------------
_BY_KIND = {c.kind: c for c in SECRETS}
# short statements first: `list` and `review` show the first 100 characters, the session-start report 80
CANARIES = [_BY_KIND[k] for k in ("gitlab-pat", "prose-password-is", "slack-incoming-webhook", "sendgrid-api-key",
                                  "azure-storage-account-key")]


def test_capture_command_redacts(tmp_path):
    outputs = [ok(cli(tmp_path, "capture", "-n", "decisions", statement(i, c))) for i, c in enumerate(CANARIES[:3])]
    lines = "".join(json.dumps({"content": statement(i, c), "namespace": "decisions"}) + "\n"
                    for i, c in enumerate(CANARIES[3:], start=3))
    outputs.append(ok(cli(tmp_path, "capture", "--jsonl", stdin=lines.encode())))
    for name, data in store_files(tmp_path).items():
        assert_no_leak(data, name, CANARIES)
    for proc in outputs:
        assert_no_leak(proc.stdout + proc.stderr, " ".join(proc.args[3:5]), CANARIES)


@pytest.fixture
def planted(tmp_path) -> tuple[Path, str]:
    """A store whose memory, decision log and pending hook report hold secrets that got past redaction (as
    from an older version or `sql`): written with SQL, whatever the capture paths do."""
    from subcog_store.store import Store

    transcript = write_transcript(tmp_path / "t.jsonl", [
        "We decided to use PgBouncer in transaction mode because the app opens a session per request."])
    pre_compact(tmp_path, transcript)
    secret_text = " ".join(c.text for c in CANARIES)
    with Store(tmp_path / "s.db") as store:
        (memory_id,) = store.con.execute("select id from memories").fetchone()
        store.con.execute("update memories set content = ? || ' ' || content", (secret_text,))
        store.con.execute("update dedup_log set new_content = ? || ' ' || new_content", (secret_text,))
        for run_id, report in list(store.con.execute("select id, report from hook_runs")):
            data = json.loads(report)
            for entry in data["captured"]:
                entry["content"] = f"{secret_text} {entry['content']}"
            store.con.execute("update hook_runs set report = ? where id = ?", (json.dumps(data), run_id))
    return tmp_path, memory_id


@pytest.mark.parametrize("command", ["list", "list --json", "show", "show --json", "review --all",
                                     "review --all --json", "hook session-start"])
def test_outbound_commands_redact(planted, command):
    tmp_path, memory_id = planted
    if command == "hook session-start":
        proc = session_start(tmp_path)
    else:
        args = command.split()
        proc = ok(cli(tmp_path, *args[:1], *([memory_id] if args[0] == "show" else []), *args[1:]))
    assert proc.stdout.strip()
    assert_no_leak(proc.stdout + proc.stderr, command, CANARIES)


def test_the_redact_command_clears_the_file(planted):
    """`redact` applies today's rules to a stored database: afterwards no canary is in the file or its WAL, the
    memory reads redacted, it is logged with the count, and a second run finds nothing."""
    tmp_path, memory_id = planted
    db = tmp_path / "s.db"
    with pytest.raises(Leak):   # the planted secrets are really in the file
        assert_no_leak(db.read_bytes() + (Path(f"{db}-wal").read_bytes() if Path(f"{db}-wal").exists() else b""),
                       "before", CANARIES)
    dry = json.loads(ok(cli(tmp_path, "redact", "--dry-run", "--json")).stdout)
    assert dry["memories"] == 1 and dry["secrets"] >= len(CANARIES) and dry["decisions"] >= 1 \
        and dry["hook_runs"] >= 1
    done = ok(cli(tmp_path, "redact"))
    assert f"redacted {dry['secrets']} secrets in 1 memories" in done.stdout.decode() and b"file rewritten" in done.stdout
    wal = Path(f"{db}-wal")
    assert_no_leak(db.read_bytes() + (wal.read_bytes() if wal.exists() else b""), "after redact", CANARIES)
    shown = json.loads(ok(cli(tmp_path, "show", memory_id, "--json")).stdout)
    assert "[REDACTED]" in shown["content"]
    con = apsw.Connection(str(db))
    rows = con.execute("select memory_id, reasoning, review_status, undo from dedup_log "
                       "where decision = 'redacted'").fetchall()
    con.close()
    assert rows == [(memory_id, f"{dry['secrets']} secrets redacted by the current rules", "confirmed", None)]
    again = json.loads(ok(cli(tmp_path, "redact", "--json")).stdout)
    assert (again["secrets"], again["memories"], again["decisions"], again["hook_runs"]) == (0, 0, 0, 0)
    assert "FAIL" not in ok(cli(tmp_path, "doctor")).stdout.decode()


def test_redact_merges_texts_that_become_the_same_and_cannot_be_reversed(make_store, tiny_embedder):
    """Two active memories that differed only in their secret become one text: the later one is merged into the
    earlier (its scope keeps one active copy); a redaction decision refuses `reverse`."""
    from subcog_store import review
    from subcog_store.db import memories as writer
    from subcog_store.db.connection import immediate
    from subcog_store.doctor import diagnose
    from subcog_store.errors import InvalidInput
    from subcog_store.maintenance import redact_store

    store = make_store(embedder_=tiny_embedder)
    gitlab = _BY_KIND["gitlab-pat"]
    texts = [f"Deploys use the GITLAB token {token} with the api scope." for token in
             (gitlab.secret, gitlab.secret[:-4] + "QzX9")]
    ids = []
    with immediate(store.con):   # stored as an older version would have, without redaction
        for text in texts:
            ids.append(writer.new_id(store.con))
            writer.insert(store.con, memory_id=ids[-1], domain="project", namespace="decisions", content=text,
                          importance=0.5, tags=[], source=None, session_id=None, created_at="2026-01-01T00:00:00Z",
                          now="2026-01-01T00:00:00Z", captured_at=0.0,
                          vector=tiny_embedder.embed_batch([text])[0].tobytes())
    counts = redact_store(store)
    assert (counts["memories"], counts["merged"], counts["secrets"]) == (2, 1, 2)
    first, second = store.get(ids[0]), store.get(ids[1])
    assert first.status == "active" and "[REDACTED]" in first.content and gitlab.secret not in first.content
    assert (second.status, second.successor_id, second.content) == ("merged", ids[0], first.content)
    assert all(f.ok for f in diagnose(store.con)), [f for f in diagnose(store.con) if not f.ok]
    decision_id = store.con.execute("select max(id) from dedup_log where decision = 'redacted'").fetchone()[0]
    with pytest.raises(InvalidInput, match="redaction"):
        review.reverse(store, decision_id)
