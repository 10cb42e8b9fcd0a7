"""Issue 29, item 5: rewordings of one fact captured at the same moment by two processes are stored once, as one
at a time. The semantic tier is checked again under the write lock against the memories written since the check
(a few rows): when one is near, the capture rolls back, checks and plans again, and sees it.

With the real model (the judgement is the duplicate rule's) and real processes: one that stores a rewording
between another's check and its write, and many started together at a barrier."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from helpers import read_rows
from conftest import clean_environ, cli_command
from subcog_store.store import Store
from subcog_store.dedup import write

PAIRS = [
    ("We decided to use PgBouncer in transaction mode for the checkout database because the pool ran out of "
     "connections during the load test.",
     "We chose PgBouncer in transaction mode for the checkout database, since the connection pool ran out during "
     "the load test."),
    ("Learned that the CI runner image ships an old OpenSSL, so the TLS tests fail only in CI.",
     "The CI runner image ships an outdated OpenSSL, which is why the TLS tests fail only on CI."),
    ("Every repository class takes a Connection in its constructor and never opens its own, so tests can pass an "
     "in-memory database.",
     "Repository classes receive a Connection through their constructor and never open one themselves, so tests "
     "can hand them an in-memory database."),
    ("The retry middleware also retried POST requests, which caused the double charges on the payment provider.",
     "The double charges at the payment provider came from the retry middleware retrying POST requests too."),
]
DOMAIN = "shop"
WRITER = """
import json, os, sys, time
from subcog_store.store import Store
db, text, ready, go = sys.argv[1:5]
store = Store(db)
store.embed(text)                       # the model loaded and the text embedded before the barrier
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
result = store.capture(text, "decisions", "shop")
print(json.dumps({"stored": result.stored, "decision": result.decision}))
"""


def active(db: Path) -> list[str]:
    return [r[0] for r in read_rows(db, "select content from memories where status = 'active' and domain = ?",
                                    (DOMAIN,))]


def test_a_rewording_stored_between_the_check_and_the_write_is_caught(make_store, tmp_path, monkeypatch):
    """Deterministic: another process stores the rewording after this capture's check, before its write."""
    db = tmp_path / "m.db"
    store = make_store(path=db)
    store.capture("Deploys go out from the release branch only.", "decisions", DOMAIN)
    env = clean_environ({"SUBCOG_WORKER_ENABLED": "false", "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log")})
    real_apply, interleaved = write._apply, []

    def another_process_first(*args, **kwargs):
        if not interleaved:
            interleaved.append(subprocess.run([*cli_command(), "--db", str(db), "capture", "-n", "decisions",
                                               "--domain", DOMAIN, PAIRS[0][1]], env=env, capture_output=True,
                                              timeout=300))
        return real_apply(*args, **kwargs)

    monkeypatch.setattr(write, "_apply", another_process_first)
    result = store.capture(PAIRS[0][0], "decisions", DOMAIN)
    assert interleaved[0].returncode == 0, interleaved[0]
    assert not result.stored and result.decision == "semantic_skip", result.to_dict()
    assert sorted(active(db)) == sorted(["Deploys go out from the release branch only.", PAIRS[0][1]])
    logged = store.con.execute("select decision from dedup_log order by id").fetchall()
    assert [d for (d,) in logged] == ["stored", "stored", "semantic_skip"]   # the rolled-back try left nothing


def test_rewordings_captured_at_the_same_moment_are_stored_once(tmp_path):
    db = tmp_path / "m.db"
    Store(db).close()
    env = clean_environ({"SUBCOG_WORKER_ENABLED": "false"})
    go = tmp_path / "go"
    texts = [text for pair in PAIRS for text in pair]
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), text, str(tmp_path / f"ready{i}"), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for i, text in enumerate(texts)]
    try:
        deadline = time.monotonic() + 600
        while not all((tmp_path / f"ready{i}").exists() for i in range(len(texts))):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a writer did not start"
            time.sleep(0.02)
        go.touch()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err.decode()[-2000:]
            results.append(json.loads(out))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert sum(r["stored"] for r in results) == len(PAIRS), results
    stored = active(db)
    assert len(stored) == len(PAIRS)
    assert all(sum(text in stored for text in pair) == 1 for pair in PAIRS), stored
