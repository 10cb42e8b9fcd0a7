"""Review of the decision log: confirm, reverse each kind of decision (no decision is irreversible), the same-hash
safety check, the CLI (`review`, `confirm`, `reverse` and their exit codes), and the audit views read from the stock
sqlite3 shell without the extension. `doctor` must pass after every operation."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

BOTH_BACKENDS = True   # each test that opens a store runs on SQLite and on PostgreSQL (conftest.make_store)

import helpers
from conftest import all_counts, clean_environ
from helpers import scrub_environ
from subcog_store.cli import main as cli
from subcog_store import review
from subcog_store.clock import iso
from subcog_store.doctor import diagnose
from subcog_store.errors import InvalidInput, NotFound
from subcog_store.db import vectors as db_vectors
from subcog_store.store import Store
from policy_texts import NS, A, NEAR, GRAY, MERGEABLE, MERGED, cmd

CHANGED = ("The cache TTL is set to 5 minutes for the session tokens in production.",
           "The cache TTL is set to 10 minutes for the session tokens in production.")
SHORT = "Use WAL mode"  # below the semantic minimum length: only the exact and recent tiers see it
ALL_DECISIONS = {"hash_exact", "semantic_skip", "recent_capture", "auto_reject", "verifier_reject", "verifier_keep",
                 "fallback_reject", "fallback_keep", "replaced", "merged", "changed_fact", "stored"}


def assert_doctor(store: Store) -> None:
    bad = [f for f in diagnose(store.con) if not f.ok]
    assert not bad, bad


def in_search(store: Store, memory_id: str) -> bool:
    seq = store.get(memory_id).seq
    return db_vectors.searchable(store.con, seq) is not None


def active(store: Store, domain: str | None = None) -> dict[str, str]:
    """id -> content of the active memories (of one domain)."""
    return {m.id: m.content for m in store.memories(domain=domain, status="active")}


def snapshot(store: Store) -> tuple:
    """Everything a reverse may touch."""
    return (all_counts(store),
            store.con.execute("select id, status, successor_id, importance, tags from memories order by seq").fetchall(),
            store.con.execute("select memory_seq from memory_vectors order by memory_seq").fetchall(),
            store.con.execute("select memory_seq from retired_vectors order by memory_seq").fetchall(),
            store.con.execute("select id, review_status, reviewed_at from dedup_log order by id").fetchall())


@pytest.fixture
def stores(store_target, tmp_path: Path, embedder, clock):
    """stores(name, **settings): a Store on tmp_path/name.db (several with different settings may share a file)."""
    opened: list[Store] = []

    def make(name: str = "review", **settings: object) -> Store:
        environ = {"SUBCOG_PLUGIN_TIMEOUT_SECS": "5"}
        environ.update({"SUBCOG_" + k.upper(): str(v) for k, v in settings.items()})
        store = Store(store_target(tmp_path / f"{name}.db"), embedder=embedder, clock=clock, environ=environ)
        opened.append(store)
        return store
    yield make
    for store in opened:
        store.close()


# ------------------------------------------------------------------------------------------------- confirm

def test_exact_hash_decisions_are_confirmed_automatically(stores, clock) -> None:
    store = stores()
    store.capture(A, NS)
    again = store.capture(A.upper(), NS)
    assert again.decision == "hash_exact"
    entry = review.decision(store, again.decision_id)
    assert entry["review_status"] == "confirmed" and entry["reviewed_at"] == iso(clock.now)
    assert review.unreviewed(store) == []
    assert store.con.execute("select count(*) from v_unreviewed").fetchone()[0] == 0
    assert_doctor(store)


def test_confirm(stores, clock) -> None:
    store = stores()
    store.capture(NEAR[0], NS)
    skipped = store.capture(NEAR[1], NS)
    assert skipped.decision == "semantic_skip"
    listed = review.unreviewed(store)
    assert [r["id"] for r in listed] == [skipped.decision_id]
    assert listed[0]["matched_content"] == NEAR[0] and listed[0]["new_content"] == NEAR[1]
    assert store.con.execute("select id, decision from v_unreviewed").fetchall() == \
        [(skipped.decision_id, "semantic_skip")]
    before = snapshot(store)
    clock.advance(120)
    entry = review.confirm(store, skipped.decision_id)
    assert entry["review_status"] == "confirmed" and entry["reviewed_at"] == iso(clock.now)
    assert review.unreviewed(store) == []
    assert [r["id"] for r in review.unreviewed(store, include_all=True)] == [skipped.decision_id, 1]
    assert store.con.execute("select count(*) from v_unreviewed").fetchone()[0] == 0
    assert snapshot(store)[:4] == before[:4]  # confirming changes no memory
    assert_doctor(store)
    # a confirmed decision can still be reversed: no decision is final
    report = review.reverse(store, skipped.decision_id)
    assert report.changed and report.stored
    assert_doctor(store)
    with pytest.raises(InvalidInput, match="reversed"):
        review.confirm(store, skipped.decision_id)
    with pytest.raises(NotFound):
        review.confirm(store, 9999)
    with pytest.raises(NotFound):
        review.reverse(store, 9999)


# ------------------------------------------------------------------------------------- reverse a rejection

def make_rejection(stores, kind: str):
    """A store whose last decision is the rejection `kind`, of a candidate with its own metadata."""
    settings = {"auto_reject": {}, "verifier_reject": {"verify_cmd": cmd("verifier.py", "duplicate")},
                "fallback_reject": {"verify_fallback": "reject"}}.get(kind, {})
    store = stores(**settings)
    meta = {"importance": 0.7, "tags": ["candidate"], "source": "cli", "session_id": "sess-2"}
    if kind == "recent_capture":
        store.record_capture(SHORT, NS)
        older, newer = None, SHORT
        result = store.capture(SHORT, NS, **meta)
    else:
        pair = NEAR if kind in ("semantic_skip", "auto_reject") else GRAY
        older, newer = pair
        store.capture(older, NS, importance=0.2, tags=["older"])
        result = store.capture(newer, NS, policy="skip" if kind == "semantic_skip" else "verify", **meta)
    assert result.decision == kind and not result.stored
    return store, older, newer, result


@pytest.mark.parametrize("kind", ["semantic_skip", "recent_capture", "auto_reject", "verifier_reject",
                                  "fallback_reject"])
def test_reverse_a_rejection_stores_the_text(stores, clock, kind) -> None:
    store, older, newer, rejected = make_rejection(stores, kind)
    assert_doctor(store)
    clock.advance(60)
    report = review.reverse(store, rejected.decision_id)
    assert_doctor(store)
    assert report.changed and report.stored and report.stored in report.message
    stored = store.get(report.stored)
    assert (stored.content, stored.status) == (newer, "active")
    assert (stored.importance, stored.tags, stored.source, stored.session_id) == (0.7, ["candidate"], "cli",
                                                                                  "sess-2")
    assert in_search(store, stored.id)
    assert set(active(store).values()) == ({older, newer} if older else {newer})
    check = store.check_duplicate(newer, NS)
    assert (check.reason, check.matched_memory_id) == ("exact_match", stored.id)
    entry = review.decision(store, rejected.decision_id)
    assert entry["review_status"] == "reversed" and entry["reviewed_at"] == iso(clock.now)
    assert rejected.decision_id not in [r["id"] for r in review.unreviewed(store)]
    # reversing twice changes nothing
    before = snapshot(store)
    again = review.reverse(store, rejected.decision_id)
    assert not again.changed and "already reversed" in again.message
    assert snapshot(store) == before
    assert_doctor(store)


def test_reverse_a_rejection_refused_when_the_same_text_is_active_by_then(stores) -> None:
    store = stores()
    store.capture(NEAR[0], NS)
    skipped = store.capture(NEAR[1], NS)
    assert skipped.decision == "semantic_skip"
    # meanwhile the same text gets in (here: as the replacement of the older memory)
    replaced = store.capture(NEAR[1], NS, policy="replace")
    assert replaced.decision == "replaced"
    assert_doctor(store)
    before = snapshot(store)
    report = review.reverse(store, skipped.decision_id)
    assert not report.changed and report.stored is None
    assert "same content" in report.message and replaced.memory_id in report.message
    assert snapshot(store) == before  # nothing changed, not even the review status
    assert review.decision(store, skipped.decision_id)["review_status"] == "unreviewed"
    assert_doctor(store)


def test_reverse_an_exact_hash_decision_changes_nothing(stores) -> None:
    store = stores()
    first = store.capture(A, NS)
    again = store.capture(A + "  ", NS)
    assert again.decision == "hash_exact"
    before = snapshot(store)
    report = review.reverse(store, again.decision_id)
    assert not report.changed and first.memory_id in report.message
    assert snapshot(store) == before
    assert_doctor(store)


# ------------------------------------------------------------------------------ reverse a replace or merge

@pytest.mark.parametrize("policy,pair,decision", [("replace", NEAR, "replaced"), ("merge", MERGEABLE, "merged"),
                                                   ("replace", CHANGED, "changed_fact"),
                                                   ("merge", GRAY, "merged")],
                         ids=["replace", "merge", "update", "merge-same-text"])
def test_reverse_restores_the_old_memory_and_retires_the_result(stores, clock, policy, pair, decision) -> None:
    store = stores()
    first = store.capture(pair[0], NS, importance=0.4, tags=["old"])
    old_before = store.get(first.memory_id)
    assert_doctor(store)
    clock.advance(60)
    result = store.capture(pair[1], NS, policy=policy, importance=0.8, tags=["new"])
    assert result.decision == decision and result.retired == [first.memory_id]
    assert_doctor(store)
    assert not in_search(store, first.memory_id)
    clock.advance(60)
    report = review.reverse(store, result.decision_id)
    assert_doctor(store)
    assert report.changed and report.restored == [first.memory_id] and report.retired == [result.memory_id]
    # the old memory is back exactly as it was, with its vector back in search
    old = store.get(first.memory_id)
    assert old == old_before
    assert in_search(store, old.id)
    # the result is out of search, kept as retired
    new = store.get(result.memory_id)
    assert new.status == "deleted" and not in_search(store, new.id)
    assert active(store) == {old.id: pair[0]}  # the state before the decision
    assert (new.id, "deleted") in store.con.execute("select id, status from v_retired").fetchall()
    # both tiers find the old memory again
    exact = store.check_duplicate(pair[0], NS)
    assert (exact.reason, exact.matched_memory_id) == ("exact_match", old.id)
    semantic = store.check_duplicate(pair[1], NS)
    assert old.id in [n.memory_id for n in semantic.neighbours]
    assert new.id not in [n.memory_id for n in semantic.neighbours]
    assert review.decision(store, result.decision_id)["review_status"] == "reversed"
    # twice: a no-op
    before = snapshot(store)
    assert not review.reverse(store, result.decision_id).changed
    assert snapshot(store) == before
    # and the old memory can be replaced again afterwards
    clock.advance(3600)  # past the recent window: the tiers see only the restored memory
    again = store.capture(pair[1], NS, policy=policy)
    assert again.decision == decision and again.retired == [old.id]
    assert_doctor(store)


@pytest.mark.parametrize("kind", ["verifier_keep", "fallback_keep", "changed_fact"])
def test_reverse_a_kept_memory_retires_it(stores, kind) -> None:
    settings = {"verifier_keep": {"verify_cmd": cmd("verifier.py", "keep")}}.get(kind, {})
    store = stores(**settings)
    pair = CHANGED if kind == "changed_fact" else GRAY
    first = store.capture(pair[0], NS)
    kept = store.capture(pair[1], NS, policy="skip" if kind == "changed_fact" else "verify")
    assert kept.decision == kind and kept.stored
    assert_doctor(store)
    report = review.reverse(store, kept.decision_id)
    assert_doctor(store)
    # a changed fact also marked the older memory as outdated by the new one: the reverse clears that link
    reverted = [first.memory_id] if kind == "changed_fact" else []
    assert report.changed and report.retired == [kept.memory_id] and report.restored == []
    assert report.reverted == reverted
    assert active(store) == {first.memory_id: pair[0]}
    assert store.get(first.memory_id).successor_id is None
    assert not in_search(store, kept.memory_id)


def test_reverse_refused_when_restoring_would_duplicate_an_active_memory(stores) -> None:
    store = stores()
    first = store.capture(NEAR[0], NS)
    replaced = store.capture(NEAR[1], NS, policy="replace")
    # the old text comes back on its own (replacing its replacement)
    back = store.capture(NEAR[0], NS, policy="replace")
    assert (replaced.decision, back.decision) == ("replaced", "replaced")
    assert active(store) == {back.memory_id: NEAR[0]}
    assert_doctor(store)
    before = snapshot(store)
    report = review.reverse(store, replaced.decision_id)
    assert not report.changed and first.memory_id in report.message and back.memory_id in report.message
    assert snapshot(store) == before
    assert_doctor(store)
    # the later decision can still be undone; then the first one can be too
    assert review.reverse(store, back.decision_id).changed
    assert active(store) == {replaced.memory_id: NEAR[1]}
    assert_doctor(store)
    assert review.reverse(store, replaced.decision_id).changed
    assert active(store) == {first.memory_id: NEAR[0]}
    assert_doctor(store)


# ---------------------------------------------------------------------------- the whole log, and the views

def every_decision(stores, clock) -> tuple[Path, dict[str, int]]:
    """One database holding every kind of decision (each in its own domain); returns decision -> log id."""
    ids: dict[str, int] = {}

    def pair(store: Store, domain: str, older: str, newer: str, policy: str) -> None:
        assert store.capture(older, NS, domain, policy=policy).decision == "stored"
        clock.advance(1)
        result = store.capture(newer, NS, domain, policy=policy)
        ids[result.decision] = result.decision_id
        assert_doctor(store)

    store = stores("all")
    first = store.capture(A, NS, "exact")
    ids["stored"] = first.decision_id
    ids["hash_exact"] = store.capture(A.upper(), NS, "exact").decision_id
    pair(store, "skip", *NEAR, "skip")
    store.record_capture(SHORT, NS, "recent")
    ids["recent_capture"] = store.capture(SHORT, NS, "recent").decision_id
    pair(store, "auto", *NEAR, "verify")
    pair(store, "replace", *NEAR, "replace")
    pair(store, "merge", *MERGEABLE, "merge")
    pair(store, "changed", *CHANGED, "skip")
    pair(store, "fallback-keep", *GRAY, "verify")
    pair(stores("all", verify_fallback="reject"), "fallback-reject", *GRAY, "verify")
    pair(stores("all", verify_cmd=cmd("verifier.py", "duplicate")), "verifier-reject", *GRAY, "verify")
    pair(stores("all", verify_cmd=cmd("verifier.py", "keep")), "verifier-keep", *GRAY, "verify")
    assert set(ids) == ALL_DECISIONS
    return Path(store.path), ids


def test_every_decision_is_in_the_log_and_reversible(stores, clock) -> None:
    path, ids = every_decision(stores, clock)
    store = stores("all")
    rows = store.con.execute("select id, decision, policy, review_status, reasoning from v_decisions").fetchall()
    assert {r[1] for r in rows} == ALL_DECISIONS
    status = {r[1]: r[3] for r in rows}
    assert {d for d, s in status.items() if s == "confirmed"} == {"hash_exact", "stored"}
    unreviewed = {r[0] for r in store.con.execute("select id from v_unreviewed")}
    assert unreviewed == {ids[d] for d in ALL_DECISIONS - {"hash_exact", "stored"}}
    assert {r["id"] for r in review.unreviewed(store)} == unreviewed
    reasons = {r[1]: r[4] for r in rows}
    assert reasons["verifier_reject"].startswith("scripted:") and "number" in reasons["changed_fact"]
    assert reasons["fallback_keep"] == reasons["fallback_reject"] == "no verifier configured (SUBCOG_VERIFY_CMD)"
    # every decision can be reversed (or, for an exact hit, says why nothing changes); doctor after each
    for decision in sorted(ALL_DECISIONS):
        report = review.reverse(store, ids[decision])
        assert report.changed == (decision != "hash_exact"), (decision, report.message)
        assert_doctor(store)
    status_of = dict(store.con.execute("select id, review_status from v_decisions").fetchall())
    final = {d: status_of[ids[d]] for d in ALL_DECISIONS}   # the decisions reversed (one row of each kind)
    assert final == {d: ("confirmed" if d == "hash_exact" else "reversed") for d in ALL_DECISIONS}
    assert store.con.execute("select count(*) from v_unreviewed").fetchone()[0] == 0


def test_recent_hit_without_a_memory_logs_no_matched_memory(stores) -> None:
    store = stores()
    store.record_capture(SHORT, NS)
    result = store.capture(SHORT, NS)
    assert result.decision == "recent_capture" and result.memory_id is None
    row = store.con.execute("select l.matched_memory_id, l.matched_content, v.matched_urn from dedup_log l "
                            "join v_decisions v using (id) where id = ?", (result.decision_id,)).fetchone()
    assert row == (None, None, None)


def stock_sqlite3(path: Path, sql: str) -> list[list[str]]:
    exe = shutil.which("sqlite3")
    if exe is None:
        pytest.skip("the sqlite3 shell is not installed")
    out = subprocess.run([exe, "-readonly", "-json", str(path), sql], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout or "[]")


@pytest.mark.sqlite_only("the sqlite3 shell")
def test_views_readable_from_the_stock_sqlite3_shell(stores, clock) -> None:
    path, ids = every_decision(stores, clock)
    store = stores("all")
    replaced = review.decision(store, ids["replaced"])
    store.close()
    decisions = stock_sqlite3(path, "select id, decision, review_status, policy, similarity, matched_urn, "
                                    "memory_urn, reasoning from v_decisions order by id")
    assert {d["decision"] for d in decisions} == ALL_DECISIONS
    by_kind = {d["decision"]: d for d in decisions}
    assert by_kind["replaced"]["memory_urn"] == f"subcog://replace/{NS}/{replaced['memory_id']}"
    assert by_kind["replaced"]["matched_urn"] == f"subcog://replace/{NS}/{replaced['matched_memory_id']}"
    assert by_kind["verifier_keep"]["reasoning"] == "scripted: the newer text adds information"
    assert by_kind["hash_exact"]["review_status"] == "confirmed"
    unreviewed = stock_sqlite3(path, "select id, decision from v_unreviewed")
    assert {u["decision"] for u in unreviewed} == ALL_DECISIONS - {"hash_exact", "stored"}
    retired = stock_sqlite3(path, "select id, status, successor_id, successor_content from v_retired order by id")
    assert {(r["status"], r["successor_content"]) for r in retired} == {
        ("superseded", NEAR[1]), ("merged", MERGED)}
    assert any(r["id"] == replaced["matched_memory_id"] and r["successor_id"] == replaced["memory_id"]
               for r in retired)
    assert stock_sqlite3(path, "select count(*) as n from v_memories")[0]["n"] == len(active(stores("all")))


# --------------------------------------------------------------------------------------------------- CLI

def run_cli(capsys, monkeypatch, path: Path, *argv: str) -> tuple[int, str]:
    scrub_environ(monkeypatch)
    code = cli.main(["--db", str(path), *argv])
    return code, capsys.readouterr().out


def test_cli_review_confirm_reverse(stores, capsys, monkeypatch) -> None:
    store = stores("cli")
    store.capture(NEAR[0], NS)
    skipped = store.capture(NEAR[1], NS)
    store.capture(GRAY[0], NS, "other")
    replaced = store.capture(GRAY[1], NS, "other", policy="merge")
    path = Path(store.path)
    store.close()

    code, out = run_cli(capsys, monkeypatch, path, "review", "--json")
    listed = json.loads(out)
    assert code == 0 and [r["id"] for r in listed] == [replaced.decision_id, skipped.decision_id]
    assert all("undo" not in r for r in listed)
    code, out = run_cli(capsys, monkeypatch, path, "review")
    assert code == 0 and f"#{skipped.decision_id} " in out and "semantic_skip" in out

    code, out = run_cli(capsys, monkeypatch, path, "confirm", str(skipped.decision_id), "--json")
    assert code == 0 and json.loads(out)["review_status"] == "confirmed"
    code, out = run_cli(capsys, monkeypatch, path, "reverse", str(replaced.decision_id), "--json")
    report = json.loads(out)
    assert code == 0 and report["changed"] and report["retired"] == [replaced.memory_id]
    code, out = run_cli(capsys, monkeypatch, path, "reverse", str(replaced.decision_id))
    assert code == 0 and "already reversed" in out
    code, out = run_cli(capsys, monkeypatch, path, "review", "--json")
    assert json.loads(out) == []
    code, out = run_cli(capsys, monkeypatch, path, "review", "--all", "--json")
    assert {r["review_status"] for r in json.loads(out)} == {"confirmed", "reversed"}

    assert run_cli(capsys, monkeypatch, path, "confirm", str(replaced.decision_id))[0] == 2  # reversed: refused
    assert run_cli(capsys, monkeypatch, path, "confirm", "9999")[0] == 7
    assert run_cli(capsys, monkeypatch, path, "reverse", "9999")[0] == 7
    assert run_cli(capsys, monkeypatch, path, "doctor")[0] == 0


def test_cli_as_a_process(stores) -> None:
    store = stores("proc")
    store.capture(NEAR[0], NS)
    skipped = store.capture(NEAR[1], NS)
    path = str(store.path)
    store.close()
    env = clean_environ()

    def run(*argv: str) -> subprocess.CompletedProcess:
        return helpers.run_cli(*argv, db=path, environ=env, timeout=60, text=True)

    out = run("review", "--json")
    assert out.returncode == 0 and [r["id"] for r in json.loads(out.stdout)] == [skipped.decision_id]
    out = run("reverse", "9999")
    assert out.returncode == 7 and "9999" in out.stderr
    out = run("reverse", str(skipped.decision_id), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["stored"]
    assert run("doctor").returncode == 0
