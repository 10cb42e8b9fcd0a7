"""Four real processes capture the same 50 texts into one new database at the same moment."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import numpy as np

from conftest import clean_environ
from subcog_store.db.connection import latest_version
from subcog_store.doctor import diagnose
from subcog_store.text.normalize import content_hash
from subcog_store.store import Store

WORKERS = 4

# Long texts (>= 50 characters: the semantic tier runs) and short ones (it is skipped), mutually unrelated
# (max pairwise cosine ~0.6), so each one is stored exactly once whoever wins the race.
LONG = [
    "We decided to use PostgreSQL as the primary database for the billing service.",
    "The frontend team prefers React with TypeScript for all new user interface work.",
    "Deployments to production happen only on weekday mornings after the smoke tests pass.",
    "Every public HTTP endpoint must validate its JSON body against a published schema.",
    "The nightly backup job copies the object storage bucket to a second cloud region.",
    "Feature flags are evaluated on the server so that mobile clients stay lightweight.",
    "Our CI pipeline caches the Rust target directory between runs to speed up builds.",
    "Customer passwords are hashed with argon2id using the library defaults for parameters.",
    "The recommendation engine retrains its model weekly from the anonymised click stream.",
    "Log lines are emitted as structured JSON and shipped to the central search cluster.",
    "Gotcha: the payment provider sandbox silently drops webhooks larger than one megabyte.",
    "Pattern: each repository class receives its database connection through the constructor.",
    "The on-call rotation changes every Monday and the handover happens in the team channel.",
    "Image thumbnails are generated lazily by a worker the first time someone requests them.",
    "Translations live in gettext catalogs that the localisation vendor updates every sprint.",
    "The mobile app stores its offline queue in SQLite and replays it once the network returns.",
    "Learned that Kubernetes liveness probes should never depend on downstream services.",
    "Marketing emails are rendered from MJML templates kept in a separate git repository.",
    "Rate limiting uses a token bucket per API key stored in Redis with a short expiry.",
    "The data warehouse loads events hourly and analysts query it through a BI dashboard.",
    "Accessibility audits run before each release and block it on any critical finding.",
    "Terraform state is kept in a locked remote backend so two engineers cannot apply at once.",
    "The search page debounces keystrokes so the autocomplete service is not flooded with calls.",
    "Invoices are generated as PDF files by a headless browser from an HTML template.",
    "Security patches for base container images are applied automatically every Wednesday night.",
]
SHORT = [f"{w} note" for w in (
    "alpha beta", "gamma delta", "use WAL", "pin numpy", "drop py38", "tabs not", "cache TTL", "retry once",
    "lint first", "no ORM", "UTC only", "log JSON", "pin node", "use uv", "fast CI", "small PRs", "trunk dev",
    "semver", "no mocks", "one db", "vendor fonts", "dark mode", "mono repo", "tag v1", "blue green")]
TEXTS = LONG + SHORT

WORKER = textwrap.dedent("""
    import json, random, sys, time, traceback
    from pathlib import Path
    from subcog_store.model.embedder import Embedder
    from subcog_store.store import Store

    db, texts_file, index, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    texts = json.loads(Path(texts_file).read_text())
    embedder = Embedder()
    embedder.load()                                   # pay for the model before the start line
    Path(str(go) + f".ready{index}").touch()
    while not go.exists():
        time.sleep(0.005)
    order = list(range(len(texts)))
    random.Random(index).shuffle(order)
    out = {"results": [], "errors": []}
    try:
        store = Store(db, embedder=embedder, environ={})  # all four create and migrate the new file at once
        for i in order:
            try:
                r = store.capture(texts[i], "decisions", source=f"worker{index}")
                out["results"].append([i, r.stored, r.decision, r.memory_id, r.check.similarity_score])
                c = store.check_duplicate(texts[i], "decisions")
                out["results"].append([i, "check", c.reason, c.matched_memory_id, c.similarity_score])
            except Exception as e:
                out["errors"].append(f"{i}: {type(e).__name__}: {e}")
        store.close()
    except Exception:
        out["errors"].append(traceback.format_exc())
    print(json.dumps(out))
""")


def test_four_processes_capture_the_same_texts(tmp_path: Path, embedder) -> None:
    vectors = embedder.embed_batch(LONG + SHORT)
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, 0)
    assert similarity.max() < 0.8, "precondition: the texts must be unrelated"
    assert len({content_hash(t) for t in TEXTS}) == 50

    db = tmp_path / "shared.db"
    texts_file = tmp_path / "texts.json"
    texts_file.write_text(json.dumps(TEXTS))
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, str(script), str(db), str(texts_file), str(i), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=clean_environ(), cwd=Path(__file__).resolve().parents[1])
             for i in range(WORKERS)]
    deadline = time.monotonic() + 300   # bounds a broken run only
    while not all((tmp_path / f"go.ready{i}").exists() for i in range(WORKERS)):
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        assert time.monotonic() < deadline, "workers did not load the model in time"
        time.sleep(0.01)
    go.touch()
    outputs = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
        outputs.append(json.loads(stdout.strip().splitlines()[-1]))

    errors = [e for out in outputs for e in out["errors"]]
    assert not errors, errors
    assert not any("locked" in e for e in errors)

    captures = [r for out in outputs for r in out["results"] if r[1] != "check"]
    checks = [r for out in outputs for r in out["results"] if r[1] == "check"]
    assert len(captures) == WORKERS * len(TEXTS)
    stored = Counter(i for i, was_stored, *_ in captures if was_stored)
    assert stored == Counter(range(len(TEXTS))), "each text stored exactly once"
    winner = {i: mid for i, was_stored, _, mid, _ in captures if was_stored}
    for i, was_stored, decision, memory_id, similarity in captures:
        if not was_stored:
            # The tiers share one snapshot and the write re-checks under the lock: a loser always sees the
            # winner's text as an exact match, never as "similar" or "recent".
            assert decision == "hash_exact", (TEXTS[i], decision)
            assert similarity == 1.0, (TEXTS[i], decision, similarity)
        assert memory_id == winner[i]  # the losers point at the winner's memory
    for i, _, reason, memory_id, similarity in checks:
        assert reason == "exact_match" and memory_id == winner[i] and similarity == 1.0

    with Store(db, embedder=embedder, environ={}) as store:
        assert store.con.execute("select count(*) from memories").fetchone()[0] == len(TEXTS)
        assert store.con.execute("select count(distinct content) from memories").fetchone()[0] == len(TEXTS)
        assert store.con.execute("select count(*) from memory_vectors").fetchone()[0] == len(TEXTS)
        assert store.con.execute("select count(*) from dedup_log").fetchone()[0] == WORKERS * len(TEXTS)
        # every capture logs its check in its own transaction; a plain check's row is best effort (it waits at
        # most 250 ms behind another process's capture, so a loaded machine may drop a few)
        checks_logged = store.con.execute("select count(*) from dedup_checks").fetchone()[0]
        assert WORKERS * len(TEXTS) <= checks_logged <= 2 * WORKERS * len(TEXTS)
        assert store.con.execute("select count(*) from schema_migrations").fetchone()[0] == latest_version()
        findings = diagnose(store.con)
        assert all(f.ok for f in findings), [f for f in findings if not f.ok]
