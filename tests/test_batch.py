"""Batch deduplication (`dedup`) and its undo (`unmerge`), on real stores with the real embedder."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

BOTH_BACKENDS = True   # each test that opens a store runs on SQLite and on PostgreSQL (conftest.make_store)

import helpers
from helpers import clean_environ
from subcog_store.batch.run import dedup, unmerge
from subcog_store.batch.clusters import clusters
from subcog_store.cli import batch_cmds
from subcog_store.doctor import diagnose
from subcog_store.model.embedder import Embedder
from subcog_store.errors import InvalidInput, NotFound
from subcog_store.text.guard import changed_fact
from subcog_store.dedup.plugins import builtin_merge
from subcog_store.store import Store

REPO = Path(__file__).resolve().parents[1]

# Distinct facts, each with a close rewording (cosine well above 0.92 with the int8 MiniLM).
FACTS = [
    ("The billing service stores invoices in PostgreSQL 16 because it supports partial indexes.",
     "Billing service: invoices are stored in PostgreSQL 16 because it supports partial indexes."),
    ("Run make lint before pushing, otherwise the pre-merge checks reject the branch.",
     "Run make lint before you push; otherwise the pre-merge checks reject the branch."),
    ("The search indexer reads from Kafka with a prefetch of 32 messages.",
     "The search indexer reads from Kafka using a prefetch of 32 messages."),
    ("Secrets for the gateway come from the vault at start-up and need a restart to rotate.",
     "Gateway secrets come from the vault at start-up and need a restart to rotate."),
    ("Use ruff instead of flake8 in the analytics repository; it is much faster.",
     "In the analytics repository use ruff instead of flake8, it is much faster."),
    ("Feature flag checkout_v3 gates the new checkout flow until the rollout finishes.",
     "The feature flag checkout_v3 gates the new checkout flow until rollout finishes."),
    ("Health check of the media service is GET /healthz and must answer quickly.",
     "The media service health check is GET /healthz and it must answer quickly."),
    ("Never call the payments API from inside a database transaction.",
     "Never call the payments API from within a database transaction."),
]


@pytest.fixture(scope="module")
def model() -> Embedder:
    e = Embedder()
    e.load()
    return e


class Clock:
    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def open_store(path: Path, model: Embedder | None, clock: Clock | None = None, **environ: str) -> Store:
    """A store whose store-time check is off, so planted duplicates are stored as they are."""
    return Store(path, embedder=model, clock=clock or Clock(), environ={"SUBCOG_DEDUP_ENABLED": "false", **environ})


def capture(store: Store, text: str, namespace: str = "decisions", domain: str | None = None, **kw) -> str:
    result = store.capture(text, namespace, domain, policy="skip", **kw)
    assert result.stored, (text, result.decision)
    store.clock.now += 60  # type: ignore[attr-defined]
    return result.memory_id


def active(store: Store) -> dict[str, str]:
    return dict(store.con.execute("select id, content from memories where status = 'active'").fetchall())


def dump(store: Store) -> dict:
    """Every row a merge may touch, as stored."""
    con = store.con
    return {
        "memories": con.execute("select * from memories order by seq").fetchall(),
        "vectors": con.execute("select memory_seq, namespace, domain, embedding from memory_vectors "
                               "order by memory_seq").fetchall(),
        "retired": con.execute("select * from retired_vectors order by memory_seq").fetchall(),
        "recent": con.execute("select * from recent_captures order by id").fetchall(),
        "fts": con.execute("select rowid, content from memories_fts where memories_fts match 'billing OR invoices OR kafka' "
                           "order by rowid").fetchall(),
    }


def doctor_ok(store: Store) -> None:
    bad = [f for f in diagnose(store.con) if not f.ok]
    assert not bad, bad


def planted_store(path: Path, model: Embedder, n: int = len(FACTS)) -> tuple[Store, list[tuple[str, str]]]:
    store = open_store(path, model)
    pairs = []
    for older, newer in FACTS[:n]:
        pairs.append((capture(store, older), capture(store, newer)))
    return store, pairs


# ------------------------------------------------------------------------------------------------ clusters

def test_planted_pairs_found_exactly_and_guard_keeps_changed_facts_apart(tmp_path, model):
    store, pairs = planted_store(tmp_path / "x.db", model)
    a = capture(store, "The session cache TTL in the auth service is 5 minutes.")
    b = capture(store, "The session cache TTL in the auth service is 10 minutes.")
    report = dedup(store)
    found = {frozenset(c.members) for c in report.clusters}
    assert found == {frozenset(p) for p in pairs}
    assert any({g["a"], g["b"]} == {a, b} and g["reason"].startswith("number") for g in report.guarded)
    assert a in active(store) and b in active(store)
    assert len(active(store)) == len(FACTS) + 2
    doctor_ok(store)


def test_transitive_chain_is_one_cluster(tmp_path, model):
    # Paraphrases (the guard's shared-content rule passes every link), the ends further apart than the links.
    texts = ["Deploy the billing service with three replicas behind the gateway.",
             "Deploy the billing service with three replicas behind the API gateway.",
             "The billing service is deployed with three replicas behind the API gateway."]
    vectors = model.embed_batch(texts)
    s01, s12, s02 = (float(vectors[i] @ vectors[j]) for i, j in ((0, 1), (1, 2), (0, 2)))
    assert s02 < min(s01, s12), (s01, s12, s02)
    threshold = (s02 + min(s01, s12)) / 2
    store = open_store(tmp_path / "x.db", model)
    ids = [capture(store, t) for t in texts]
    report = dedup(store, threshold=threshold)
    assert [sorted(c.members) for c in report.clusters] == [sorted(ids)]
    assert len(report.clusters[0].edges) == 2  # the chain's two links, not the weak end-to-end pair


def test_chain_does_not_join_memories_the_guard_keeps_apart(model):
    a, b, c = ("The upload worker pool uses 8 threads in production.",
               "The upload worker pool uses several threads in production.",
               "The upload worker pool uses 16 threads in production.")
    assert changed_fact(a, c).changed
    guarded: list[dict] = []
    found = clusters([f"{i:012x}" for i in range(3)], [a, b, c], [(0, 1, 0.97), (1, 2, 0.96)], guarded)
    joined = [set(g) for g, _ in found]
    assert {0, 2} not in [j & {0, 2} for j in joined]  # 8 threads and 16 threads never in one cluster
    assert guarded


def test_namespaces_and_domains_are_never_mixed(tmp_path, model):
    store = open_store(tmp_path / "x.db", model)
    older, newer = FACTS[0]
    capture(store, older, "decisions")
    capture(store, newer, "patterns")
    capture(store, newer, "decisions", "other-project")
    capture(store, older, "patterns", "other-project")
    report = dedup(store, threshold=0.5)
    assert report.clusters == []
    assert len(active(store)) == 4
    capture(store, newer, "decisions")
    report = dedup(store, threshold=0.5)
    assert len(report.clusters) == 1 and report.clusters[0].namespace == "decisions"
    assert report.clusters[0].domain == "project"


# ------------------------------------------------------------------------------------------------ merge rules

def test_survivor_is_highest_importance_tags_union_newest_time(tmp_path, model):
    store = open_store(tmp_path / "x.db", model)
    older, newer = FACTS[1]
    high = capture(store, older, importance=0.9, tags=["ci"])
    low = capture(store, newer, importance=0.4, tags=["lint", "ci"])
    newest_time = store.get(low).created_at
    report = dedup(store)
    (cluster,) = report.clusters
    assert cluster.survivor == high and cluster.content_source == "survivor"
    memory = store.get(high)
    assert memory.content == older and memory.importance == 0.9
    assert memory.tags == ["ci", "lint"] and memory.created_at == newest_time
    gone = store.get(low)
    assert gone.status == "merged" and gone.successor_id == high
    assert store.con.execute("select count(*) from memory_vectors where memory_seq = ?", (gone.seq,)).fetchone()[0] == 0
    assert store.con.execute("select count(*) from retired_vectors where memory_seq = ?", (gone.seq,)).fetchone()[0] == 1
    doctor_ok(store)


def test_equal_importance_merges_contents_with_the_builtin_merger(tmp_path, model):
    store = open_store(tmp_path / "x.db", model)
    older, newer = FACTS[3]
    first = capture(store, older, importance=0.5)
    second = capture(store, newer, importance=0.5)
    report = dedup(store)
    (cluster,) = report.clusters
    assert cluster.survivor == second and cluster.content_source == "builtin"
    assert store.get(second).content == builtin_merge(older, newer)
    # the survivor was re-embedded with its new text
    vec = store.con.execute("select embedding from memory_vectors where memory_seq = ?",
                            (store.get(second).seq,)).fetchone()[0]
    assert vec == model.embed(store.get(second).content).tobytes()
    log = store.con.execute("select policy, decision, memory_id, matched_memory_id, similarity, new_content "
                            "from dedup_log where id = ?", (cluster.decision_id,)).fetchone()
    assert log[:4] == ("batch", "merged", second, first) and log[4] >= 0.9 and log[5] == cluster.merged_content
    doctor_ok(store)


def test_merge_command_is_used_when_set(tmp_path, model):
    script = tmp_path / "merger.py"
    script.write_text("import json, sys\nd = json.load(sys.stdin)\n"
                      "print(json.dumps({'content': 'MERGED: ' + d['newer']['content']}))\n")
    store = open_store(tmp_path / "x.db", model, SUBCOG_MERGE_CMD=f"{sys.executable} {script}")
    older, newer = FACTS[4]
    capture(store, older)
    survivor = capture(store, newer)
    (cluster,) = dedup(store).clusters
    assert cluster.content_source == "SUBCOG_MERGE_CMD"
    assert store.get(survivor).content == "MERGED: " + newer


def test_no_cascading_merges_each_memory_in_at_most_one_merge(tmp_path, model):
    store, pairs = planted_store(tmp_path / "x.db", model)
    extra = capture(store, "Never call the payments API from inside any database transaction.")
    report = dedup(store)
    seen: list[str] = []
    for cluster in report.clusters:
        seen += cluster.members
    assert len(seen) == len(set(seen))
    rows = store.con.execute("select id, memory_id from dedup_log where policy = 'batch'").fetchall()
    assert len(rows) == len(report.clusters)
    members = store.con.execute("select decision_id, memory_id from v_decision_members").fetchall()
    touched = [survivor for _, survivor in rows] + [m for _, m in members]
    assert len(touched) == len(set(touched))
    assert any(extra in c.members and len(c.members) == 3 for c in report.clusters)


# ------------------------------------------------------------------------------------------------ safety

def file_digest(path: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.parent.glob(path.name + "*"))}


def test_dry_run_changes_nothing(tmp_path, model):
    path = tmp_path / "x.db"
    store, _ = planted_store(path, model, 3)
    store.close()
    before = file_digest(path)
    store = open_store(path, model)
    report = dedup(store, dry_run=True, hard_delete=True)
    text = batch_cmds.report_text(report)
    store.close()
    assert file_digest(path) == before
    assert len(report.clusters) == 3 and report.run_id is None
    assert "dry run, nothing changed" in text and "survivor" in text and report.removed == 3


RUNNER = """
import sys
from subcog_store.model.embedder import Embedder
from subcog_store.store import Store
from subcog_store.batch.run import dedup
store = Store(sys.argv[1], embedder=Embedder(), environ={})
dedup(store)
"""


def test_killed_run_leaves_a_consistent_store_and_the_next_run_finishes(tmp_path, model):
    path = tmp_path / "x.db"
    store, pairs = planted_store(path, model)
    store.close()
    reference = tmp_path / "ref.db"
    shutil.copy(path, reference)
    env = clean_environ({"SUBCOG_BATCH_TEST_SLEEP": "0.4", "PYTHONPATH": str(REPO)}, answer_when_done=False)
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(path)], env=env)
    watcher = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    deadline = time.monotonic() + 300   # bounds a broken run only
    try:
        while time.monotonic() < deadline:
            done = watcher.execute("select count(*) from dedup_log where policy = 'batch'").fetchone()[0]
            if done >= 1:
                break
            assert proc.poll() is None, "the run ended before it could be killed"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        watcher.close()
    store = open_store(path, model)
    first = store.con.execute("select count(*) from dedup_log where policy = 'batch'").fetchone()[0]
    assert 1 <= first < len(pairs)
    assert store.con.execute("select status from dedup_runs").fetchall() == [("running",)]
    doctor_ok(store)
    second = dedup(store)
    assert first + len(second.clusters) == len(pairs)
    assert store.con.execute("select status from dedup_runs order by id").fetchall() == [("interrupted",),
                                                                                         ("finished",)]
    doctor_ok(store)
    ref = open_store(reference, model)
    assert len(dedup(ref).clusters) == len(pairs)
    assert active(store) == active(ref)


# ------------------------------------------------------------------------------------------------ unmerge

@pytest.mark.parametrize("hard", [False, True])
def test_unmerge_restores_byte_for_byte(tmp_path, model, hard):
    store = open_store(tmp_path / "x.db", model)
    older, newer = FACTS[0]
    first = capture(store, older, importance=0.5, tags=["db"])
    capture(store, newer, importance=0.5, tags=["billing"])
    capture(store, FACTS[2][0])
    # a retired predecessor that points at `first` (what --hard-delete removes with it)
    old = store.get(capture(store, "Billing stores invoices in PostgreSQL 15."))
    store.con.execute("update memories set status = 'superseded', successor_id = ? where id = ?", (first, old.id))
    store.con.execute("insert into retired_vectors select memory_seq, embedding from memory_vectors "
                      "where memory_seq = ?", (old.seq,))
    store.con.execute("delete from memory_vectors where memory_seq = ?", (old.seq,))
    store.con.execute("delete from memory_bits where memory_seq = ?", (old.seq,))
    before = dump(store)
    report = dedup(store, hard_delete=hard)
    (cluster,) = report.clusters
    assert dump(store) != before
    if hard:
        assert store.con.execute("select count(*) from memories where id = ?", (first,)).fetchone()[0] == 0
    doctor_ok(store)
    result = unmerge(store, cluster.decision_id)
    assert dump(store) == before
    assert result.restored == [first]
    doctor_ok(store)
    assert store.con.execute("select review_status from dedup_log where id = ?",
                             (cluster.decision_id,)).fetchone()[0] == "reversed"
    with pytest.raises(InvalidInput, match="already reversed"):
        unmerge(store, cluster.decision_id)


def test_unmerge_refuses_unknown_other_and_conflicting_decisions(tmp_path, model):
    store = open_store(tmp_path / "x.db", model)
    older, newer = FACTS[5]
    merged_away = capture(store, older, importance=0.3)
    capture(store, newer, importance=0.8)
    with pytest.raises(NotFound):
        unmerge(store, 999)
    store_decision = store.con.execute("select max(id) from dedup_log").fetchone()[0]
    with pytest.raises(InvalidInput, match="not a batch merge"):
        unmerge(store, store_decision)
    (cluster,) = dedup(store).clusters
    assert store.get(merged_away).status == "merged"
    store.capture(older, "decisions", policy="skip")   # the merged-away text is active again
    before = dump(store)
    with pytest.raises(InvalidInput, match="active twice"):
        unmerge(store, cluster.decision_id)
    assert dump(store) == before


# ------------------------------------------------------------------------------------------------ modes

def test_text_fallback_without_the_model(tmp_path):
    empty = tmp_path / "no-model"
    empty.mkdir()
    store = open_store(tmp_path / "x.db", Embedder(directory=empty))
    a = capture(store, "Deploy the billing service with three replicas behind the gateway.")
    b = capture(store, "The billing service: deploy three replicas behind the gateway!")
    capture(store, "Deploy the search service with two replicas behind the load balancer.")
    assert store.embedder is None
    report = dedup(store)
    assert report.method == "text" and report.knn == "fts5"
    assert [sorted(c.members) for c in report.clusters] == [sorted([a, b])]
    assert report.clusters[0].similarity >= 0.8


def test_auto_runs_only_past_ten_memories_and_once_a_day(tmp_path, model):
    clock = Clock()
    store = open_store(tmp_path / "x.db", model, clock)
    for older, _ in FACTS:
        capture(store, older)
    assert "8 active memories" in dedup(store, auto=True).skipped
    for _, newer in FACTS[:3]:
        capture(store, newer)
    first = dedup(store, auto=True)
    assert first.skipped is None and len(first.clusters) == 3
    for text in ("The export job writes Parquet files to the data lake at 02:00 UTC.",
                 "The rate limit of the admin API is 100 requests per minute per key.",
                 "Logs from the email service go to the central collector."):
        capture(store, text)
    assert "24 h" in dedup(store, auto=True).skipped
    clock.now += 25 * 3600
    assert dedup(store, auto=True).skipped is None
    assert store.con.execute("select value from settings where key = 'dedup_last_run_at'").fetchone()[0] == \
        f"{clock.now:.3f}"


def test_run_is_recorded_with_figures_and_warnings(tmp_path, model):
    store, _ = planted_store(tmp_path / "x.db", model, 2)
    report = dedup(store)
    row = store.con.execute("select status, memories_before, memories_after, clusters, removed, removal_rate, "
                            "duration_s, warnings from dedup_runs").fetchone()
    assert row[:6] == ("finished", 4, 2, 2, 2, 0.5)
    assert row[6] >= 0
    assert report.removal_rate == 0.5 and not any("removal rate" in w for w in report.warnings)
    store3, _ = planted_store(tmp_path / "z.db", model, 2)
    capture(store3, FACTS[0][1].replace("Billing service:", "Billing service -"))
    report = dedup(store3)
    assert report.removal_rate == pytest.approx(3 / 5)
    assert any("removal rate 60% exceeds 50%" in w for w in report.warnings)
    assert "removal rate" in store3.con.execute("select warnings from dedup_runs").fetchone()[0]


def test_threshold_from_the_environment_is_validated(tmp_path, model, monkeypatch):
    store, _ = planted_store(tmp_path / "x.db", model, 1)
    monkeypatch.setenv("SUBCOG_DEDUP_BATCH_THRESHOLD", "high")
    with pytest.raises(InvalidInput, match="SUBCOG_DEDUP_BATCH_THRESHOLD"):
        dedup(store)
    monkeypatch.setenv("SUBCOG_DEDUP_BATCH_THRESHOLD", "1.5")
    with pytest.raises(InvalidInput, match="out of range"):
        dedup(store)
    monkeypatch.setenv("SUBCOG_DEDUP_BATCH_THRESHOLD", "0.999")
    assert dedup(store, dry_run=True).clusters == []
    assert dedup(store, dry_run=True, threshold=0.5).thresholds == {"decisions/project": 0.5}


def test_vec0_knn_finds_the_same_clusters(tmp_path, model):
    store, pairs = planted_store(tmp_path / "x.db", model)
    matrix = dedup(store, dry_run=True)
    vec0 = dedup(store, dry_run=True, knn="vec0")
    assert {frozenset(c.members) for c in matrix.clusters} == {frozenset(c.members) for c in vec0.clusters} \
        == {frozenset(p) for p in pairs}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    code = "import sys; from subcog_store.cli.main import main; sys.exit(main(sys.argv[1:]))"
    return helpers.run_cli(*args, environ=clean_environ(answer_when_done=False), argv=[sys.executable, "-c", code],
                           cwd=REPO, text=True)


def test_cli_dedup_and_unmerge(tmp_path, model):
    path = tmp_path / "x.db"
    store, pairs = planted_store(path, model, 2)
    store.close()
    dry = run_cli("--db", str(path), "dedup", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would merge 2 memories" in dry.stdout and "dry run, nothing changed" in dry.stdout
    assert run_cli("--db", str(path), "dedup", "--threshold", "2").returncode == 2
    done = run_cli("--db", str(path), "dedup", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["merged_clusters"] == 2 and data["removed"] == 2
    decision = data["clusters"][0]["decision_id"]
    assert run_cli("--db", str(path), "unmerge", "12345").returncode == 7
    back = run_cli("--db", str(path), "unmerge", str(decision), "--json")
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["decision_id"] == decision
    assert run_cli("--db", str(path), "unmerge", str(decision)).returncode == 2
