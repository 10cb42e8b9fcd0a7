"""Store-time policies (skip, verify, replace, merge): every zone boundary (inclusive lower bounds, measured with the
real model), configuration by environment and settings table, replace and merge semantics, the built-in merger,
and the changed-fact guard under every policy. `doctor` must pass after every operation."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

BOTH_BACKENDS = True   # each test that opens a store runs on SQLite and on PostgreSQL (conftest.make_store)

from subcog_store.dedup import plugins
from subcog_store.config import Settings
from subcog_store.doctor import diagnose
from subcog_store.errors import ConfigError, InvalidInput
from subcog_store.text.guard import changed_fact
from subcog_store.db import vectors as db_vectors
from subcog_store.store import Store
from subcog_store.text.textsim import word_overlap
from policy_texts import PLUGINS, NS, A, NEAR, GRAY, MERGEABLE, MERGED, FAR


# Changed facts: high cosine, different fact. (older, newer, guard reason)
CHANGED = {
    "number": ("The cache TTL is set to 5 minutes for the session tokens in production.",
               "The cache TTL is set to 10 minutes for the session tokens in production.", "number"),
    "version": ("The deploy pipeline requires Python 3.11 on every build agent we run.",
                "The deploy pipeline requires Python 3.12 on every build agent we run.", "version"),
    "unit": ("The HTTP client timeout for the payments provider is 30 seconds in production.",
             "The HTTP client timeout for the payments provider is 30 minutes in production.", "unit"),
    "date": ("Deployments to production happen every Tuesday after the change review meeting.",
             "Deployments to production happen every Thursday after the change review meeting.", "date"),
    "negation": ("Feature flags are enabled by default in the staging environment for all teams.",
                 "Feature flags are not enabled by default in the staging environment for all teams.", "negation"),
    "always-never": ("The API gateway should always retry idempotent requests on a timeout.",
                     "The API gateway should never retry idempotent requests on a timeout.", "negation"),
    "participants": ("The billing service calls the inventory service before confirming an order.",
                     "The inventory service calls the billing service before confirming an order.", "participants"),
}
# True paraphrases: the guard must let them match.
PARAPHRASES = {
    "reordered": ("The frontend team prefers React with TypeScript for all new dashboard components.",
                  "For all new dashboard components the frontend team prefers React with TypeScript."),
    "reworded": ("We store uploaded images in S3 and serve them through CloudFront with signed URLs.",
                 "Uploaded images live in S3 and are served via CloudFront using signed URLs."),
    "restructured": GRAY,
}


# ------------------------------------------------------------------------------------------------ helpers

def assert_doctor(store: Store) -> None:
    bad = [f for f in diagnose(store.con) if not f.ok]
    assert not bad, bad


def env_of(**settings: object) -> dict[str, str]:
    return {"SUBCOG_" + k.upper(): (v if isinstance(v, str) else repr(v)) for k, v in settings.items()}


class Stores:
    """Fresh stores, each in its own file, all closed at the end."""

    def __init__(self, target, embedder, clock):
        self.target, self.embedder, self.clock, self.opened, self.n = target, embedder, clock, [], 0

    def __call__(self, **settings: object) -> Store:
        self.n += 1
        store = Store(self.target(f"s{self.n}.db"), embedder=self.embedder, clock=self.clock,
                      environ=env_of(**settings))
        self.opened.append(store)
        return store


@pytest.fixture
def stores(store_target, tmp_path: Path, embedder, clock):
    s = Stores(lambda name: store_target(tmp_path / name), embedder, clock)
    yield s
    for store in s.opened:
        store.close()


@pytest.fixture(scope="module")
def similarity_on(tmp_path_factory, embedder, request):
    """similarity_on(backend)(older, newer): the similarity the store itself computes on that backend (SQLite:
    vec0 L2 distance -> 1 - d²/2 in float32; PostgreSQL: pgvector's inner product; they may differ in the last
    float32 bit, so a boundary is tested with the backend's own figure)."""
    caches: dict[str, dict[tuple[str, str], float]] = {}
    opened: dict[str, Store] = {}

    def on(backend: str):
        cache = caches.setdefault(backend, {})
        if backend not in opened:
            target = tmp_path_factory.mktemp("sims") / "sims.db" if backend == "sqlite" else \
                request.getfixturevalue("pg_server").database(migrated=True)
            opened[backend] = Store(target, embedder=embedder, environ={})
        store = opened[backend]

        def measure(older: str, newer: str) -> float:
            if (older, newer) not in cache:
                domain = f"pair{len(cache)}"  # one scope per pair: no other memory is near
                older_id = store.capture(older, NS, domain).memory_id
                check = store.check_duplicate(newer, NS, domain, log_check=False)
                [n] = [n for n in check.neighbours if n.memory_id == older_id]
                cache[(older, newer)] = n.similarity
            return cache[(older, newer)]
        return measure
    yield on
    for store in opened.values():
        store.close()


@pytest.fixture
def similarity(similarity_on, backend):
    """similarity(older, newer) on this test's backend."""
    return similarity_on(backend)


LOG_COLUMNS = ("id", "decided_at", "domain", "namespace", "policy", "decision", "new_content", "new_hash",
               "matched_memory_id", "matched_content", "similarity", "memory_id", "reasoning", "review_status",
               "reviewed_at", "undo")


def log_rows(store: Store) -> list[dict]:
    rows = store.con.execute(f"select {', '.join(LOG_COLUMNS)} from dedup_log order by id").fetchall()
    return [dict(zip(LOG_COLUMNS, r)) for r in rows]


def active_contents(store: Store) -> set[str]:
    return {m.content for m in store.memories(status="active")}


def in_search(store: Store, memory_id: str) -> bool:
    seq = store.get(memory_id).seq
    return db_vectors.searchable(store.con, seq) is not None


def capture_pair(store: Store, pair: tuple[str, str], policy: str | None = None, domain: str | None = None, **kw):
    """Capture the older text, then the newer one (in `domain`: a scope of their own); doctor after each."""
    first = store.capture(pair[0], NS, domain, policy=policy)
    assert first.decision == "stored"
    assert_doctor(store)
    second = store.capture(pair[1], NS, domain, policy=policy, **kw)
    assert_doctor(store)
    return first, second


def active_in(store: Store, domain: str) -> set[str]:
    return {m.content for m in store.memories(domain=domain, status="active")}


# --------------------------------------------------------------------------------------- zone boundaries

ZONES = [
    # id, policy, pair, settings (SIM = the pair's measured similarity), decision at SIM, decision just below
    ("skip-semantic", "skip", GRAY, {"dedup_threshold_decisions": "SIM"}, "semantic_skip", "stored"),
    ("verify-auto-reject", "verify", NEAR, {"verify_reject_threshold": "SIM", "verify_gray_threshold": 0.5},
     "auto_reject", "fallback_keep"),
    ("verify-gray", "verify", GRAY, {"verify_reject_threshold": 1.0, "verify_gray_threshold": "SIM",
                                     "verify_fallback": "reject"}, "fallback_reject", "stored"),
    ("replace-replace", "replace", GRAY, {"replace_threshold": "SIM", "replace_merge_threshold": 0.5},
     "replaced", "merged"),
    ("replace-merge", "replace", GRAY, {"replace_threshold": 1.0, "replace_merge_threshold": "SIM"},
     "merged", "stored"),
    ("merge", "merge", GRAY, {"merge_threshold": "SIM"}, "merged", "stored"),
]
STORES_NEW = {"stored", "fallback_keep", "replaced", "merged", "verifier_keep", "changed_fact"}


@pytest.mark.parametrize("zone_id,policy,pair,settings,upper,lower", ZONES, ids=[z[0] for z in ZONES])
@pytest.mark.parametrize("side", ["at", "below"])
def test_zone_boundary_is_inclusive(stores, similarity, zone_id, policy, pair, settings, upper, lower,
                                    side) -> None:
    sim = similarity(*pair)
    assert not changed_fact(*pair).changed
    at = sim if side == "at" else math.nextafter(sim, 1.0)
    configured = {k: (at if v == "SIM" else v) for k, v in settings.items()}
    store = stores(**configured)
    assert [float(store.settings.values[k]) for k, v in settings.items() if v == "SIM"] == [at]
    first, second = capture_pair(store, pair, policy)
    expected = upper if side == "at" else lower
    assert second.decision == expected, (zone_id, side, sim, second.reasoning)
    assert second.stored == (expected in STORES_NEW)
    row = log_rows(store)[-1]
    assert row["decision"] == expected and row["policy"] == policy
    if expected != "stored":
        assert row["similarity"] == sim  # the log keeps the exact similarity the decision used
        assert row["matched_memory_id"] == first.memory_id and row["matched_content"] == pair[0]
    older = store.get(first.memory_id)
    if expected in ("replaced", "merged"):
        assert older.status == ("superseded" if expected == "replaced" else "merged")
        assert older.successor_id == second.memory_id
        assert not in_search(store, older.id)
    else:
        assert older.status == "active" and in_search(store, older.id)
    if second.stored:
        assert in_search(store, second.memory_id)


# Without any threshold setting the default zones hold: 0.98 / 0.88 (verify), 0.95 / 0.90 (replace), 0.90 (merge).
DEFAULT_ZONES = [
    ("verify", NEAR, "auto_reject"), ("verify", GRAY, "fallback_keep"), ("verify", FAR, "stored"),
    ("replace", NEAR, "replaced"), ("replace", MERGEABLE, "merged"), ("replace", FAR, "stored"),
    ("merge", GRAY, "merged"), ("merge", MERGEABLE, "merged"), ("merge", FAR, "stored"),
    ("skip", NEAR, "semantic_skip"), ("skip", FAR, "stored"),
]


def test_default_zones(stores, similarity) -> None:
    store = stores()
    for i, (policy, pair, expected) in enumerate(DEFAULT_ZONES):
        sim = similarity(*pair)
        zone = {"auto_reject": sim >= 0.98, "fallback_keep": 0.88 <= sim < 0.98, "replaced": sim >= 0.95,
                "merged": 0.90 <= sim < (0.95 if policy == "replace" else 2.0), "semantic_skip": sim >= 0.92,
                "stored": sim < {"verify": 0.88, "replace": 0.90, "merge": 0.90, "skip": 0.92}[policy]}[expected]
        assert zone, f"the model moved: similarity {sim} is not in the {expected} zone of {policy}"
        _, second = capture_pair(store, pair, policy, domain=f"case{i}")
        assert (policy, second.decision) == (policy, expected)


def test_auto_reject_needs_near_identical_text(stores, similarity) -> None:
    """Above the reject threshold but with other words: not auto-rejected, the verifier (here: fallback) decides."""
    assert word_overlap(*GRAY) < 0.9
    store = stores(verify_reject_threshold=0.5, verify_gray_threshold=0.4)
    _, second = capture_pair(store, GRAY, "verify")
    assert second.decision == "fallback_keep"
    assert "no verifier" in second.reasoning
    store = stores(verify_reject_threshold=0.5, verify_gray_threshold=0.4)
    _, second = capture_pair(store, NEAR, "verify")
    assert second.decision == "auto_reject" and not second.stored


@pytest.mark.parametrize("fallback,decision", [("keep", "fallback_keep"), ("reject", "fallback_reject")])
def test_gray_zone_without_verifier_uses_the_fallback(stores, fallback, decision) -> None:
    store = stores(verify_fallback=fallback)
    first, second = capture_pair(store, GRAY, "verify")
    assert second.decision == decision and second.stored == (fallback == "keep")
    assert active_contents(store) == ({GRAY[0], GRAY[1]} if fallback == "keep" else {GRAY[0]})
    row = log_rows(store)[-1]
    assert row["review_status"] == "unreviewed" and "SUBCOG_VERIFY_CMD" in row["reasoning"]


# ------------------------------------------------------------------------------------------ configuration

def test_default_policy_is_skip(stores) -> None:
    store = stores()
    assert store.settings.policy(NS) == "skip"
    _, second = capture_pair(store, NEAR)
    assert second.decision == "semantic_skip"
    assert log_rows(store)[-1]["policy"] == "skip"


def test_policy_from_namespace_env_and_default_env(stores) -> None:
    store = stores(dedup_policy_decisions="replace", dedup_policy_default="verify")
    assert store.settings.policy("decisions") == "replace"
    assert store.settings.policy("patterns") == "verify"
    _, second = capture_pair(store, NEAR)
    assert second.decision == "replaced" and log_rows(store)[-1]["policy"] == "replace"
    a, b = store.capture(NEAR[0], "patterns"), store.capture(NEAR[1], "patterns")
    assert (a.decision, b.decision) == ("stored", "auto_reject")
    assert log_rows(store)[-1]["policy"] == "verify"


def test_policy_from_settings_table_and_env_wins(tmp_path: Path, embedder, clock) -> None:
    path = tmp_path / "cfg.db"
    with Store(path, embedder=embedder, clock=clock, environ={}) as store:
        store.con.execute("insert into settings (key, value) values ('dedup_policy_decisions', 'replace')")
    with Store(path, embedder=embedder, clock=clock, environ={}) as store:
        assert store.settings.policy(NS) == "replace" and store.settings.origins["dedup_policy_decisions"] == \
            "settings"
    with Store(path, embedder=embedder, clock=clock, environ={"SUBCOG_DEDUP_POLICY_DECISIONS": "merge"}) as store:
        assert store.settings.policy(NS) == "merge"
        capture_pair(store, GRAY)
        assert log_rows(store)[-1]["decision"] == "merged"
    # zone thresholds come from the settings table too
    with Store(path, embedder=embedder, clock=clock, environ={}) as store:
        store.con.execute("insert into settings (key, value) values ('merge_threshold', '0.99')")
    with Store(path, embedder=embedder, clock=clock, environ={"SUBCOG_DEDUP_POLICY_DECISIONS": "merge"}) as store:
        assert store.settings.merge_threshold == 0.99
        _, second = capture_pair(store, GRAY, domain="strict")
        assert second.decision == "stored"


def test_policy_argument_overrides_configuration(stores) -> None:
    store = stores(dedup_policy_decisions="replace")
    _, second = capture_pair(store, NEAR, policy="skip")
    assert second.decision == "semantic_skip"
    with pytest.raises(InvalidInput):
        store.capture(FAR[1], NS, policy="append")


@pytest.mark.parametrize("key,value", [("dedup_policy_decisions", "delete"), ("dedup_policy_default", "x"),
                                       ("verify_fallback", "maybe"), ("verify_reject_threshold", "1.5"),
                                       ("merge_threshold", "-0.1"), ("plugin_timeout_secs", "0")])
def test_bad_policy_settings_raise_config_error(key, value) -> None:
    with pytest.raises(ConfigError, match="SUBCOG_" + key.upper()):
        Settings.load({}, {"SUBCOG_" + key.upper(): value})


# ------------------------------------------------------------------------------------ replace and merge

def test_replace_supersedes_and_links_the_old_memory(stores, clock) -> None:
    store = stores()
    first = store.capture(NEAR[0], NS, importance=0.9, tags=["db"])
    clock.advance(60)
    second = store.capture(NEAR[1], NS, policy="replace", importance=0.3, tags=["new"], source="cli")
    assert_doctor(store)
    assert second.decision == "replaced" and second.stored and second.retired == [first.memory_id]
    old, new = store.get(first.memory_id), store.get(second.memory_id)
    assert old.status == "superseded" and old.successor_id == new.id and old.content == NEAR[0]
    assert (new.content, new.importance, new.tags, new.source) == (NEAR[1], 0.3, ["new"], "cli")
    # out of search: neither tier finds the old memory any more, but it is kept (with its vector set aside)
    assert not in_search(store, old.id)
    assert store.con.execute("select count(*) from retired_vectors where memory_seq = ?", (old.seq,)).fetchone()[0]
    check = store.check_duplicate(NEAR[0], NS)
    assert old.id not in [n.memory_id for n in check.neighbours]
    assert check.matched_memory_id == new.id
    retired = store.con.execute("select id, status, successor_id, successor_content from v_retired").fetchall()
    assert retired == [(old.id, "superseded", new.id, NEAR[1])]
    row = log_rows(store)[-1]
    assert (row["decision"], row["matched_memory_id"], row["memory_id"], row["review_status"]) == \
        ("replaced", old.id, new.id, "unreviewed")


def test_merge_with_the_builtin_merger(stores, clock) -> None:
    store = stores()
    first = store.capture(MERGEABLE[0], NS, importance=0.9, tags=["db", "billing"], source="old", session_id="s1")
    clock.advance(60)
    second = store.capture(MERGEABLE[1], NS, policy="merge", importance=0.2, tags=["billing", "reports"],
                           source="new", session_id="s2")
    assert_doctor(store)
    expected = plugins.builtin_merge(MERGEABLE[0], MERGEABLE[1])
    assert expected == MERGED  # the older text's second sentence is not covered by the newer text
    assert second.decision == "merged" and second.reasoning == "merged with the built-in merger"
    merged, old = store.get(second.memory_id), store.get(first.memory_id)
    assert merged.content == expected
    assert merged.importance == 0.9                                  # the highest importance
    assert merged.tags == ["db", "billing", "reports"]               # the union of tags
    assert (merged.source, merged.session_id) == ("new", "s2")       # the newest one's metadata
    assert merged.created_at == store.get(second.memory_id).created_at
    assert old.status == "merged" and old.successor_id == merged.id and not in_search(store, old.id)
    assert in_search(store, merged.id)
    assert active_contents(store) == {expected}
    row = log_rows(store)[-1]
    assert row["new_content"] == MERGEABLE[1] and row["memory_id"] == merged.id
    undo = json.loads(row["undo"])
    assert undo["candidate"]["content"] == MERGEABLE[1] and undo["stored"] == merged.id


def test_merge_takes_highest_importance_even_when_merged_text_equals_newer(stores) -> None:
    store = stores()
    assert plugins.builtin_merge(*GRAY) == GRAY[1]  # every older sentence is covered: the merge is the newer text
    first = store.capture(GRAY[0], NS, importance=0.9, tags=["db"])
    second = store.capture(GRAY[1], NS, policy="merge", importance=0.2, tags=["billing"])
    assert_doctor(store)
    assert second.decision == "merged"
    merged = store.get(second.memory_id)
    assert store.get(first.memory_id).status == "merged"
    assert merged.importance == 0.9 and merged.tags == ["db", "billing"]


def test_builtin_merger_is_deterministic() -> None:
    older = "The API uses JWT tokens. Tokens expire after one hour. Refresh tokens are stored in Redis."
    newer = "The API uses JWT tokens for authentication. Refresh tokens are stored in Redis!"
    merged = plugins.builtin_merge(older, newer)
    assert merged.startswith(newer)
    assert merged == newer + " Tokens expire after one hour."
    assert plugins.builtin_merge(older, newer) == merged
    assert plugins.builtin_merge("Same text.", "Same text.") == "Same text."
    assert plugins.builtin_merge("Older fact", "Newer fact without stop") == "Newer fact without stop. Older fact"


def test_exact_hash_repeat_is_hash_exact_under_every_policy(stores) -> None:
    store = stores()
    for policy in ("skip", "verify", "replace", "merge"):
        first = store.capture(A, NS, policy, policy=policy)
        again = store.capture("  " + A.upper() + " ", NS, policy, policy=policy)
        assert again.decision == "hash_exact" and not again.stored and again.memory_id == first.memory_id
        assert log_rows(store)[-1]["review_status"] == "confirmed"
        assert active_in(store, policy) == {A}
        assert_doctor(store)


# ----------------------------------------------------------------------------------- changed-fact guard

@pytest.mark.parametrize("name", list(CHANGED))
def test_changed_fact_is_never_a_duplicate(stores, similarity, plugin_cmd, name) -> None:
    older, newer, reason = CHANGED[name]
    sim = similarity(older, newer)
    assert sim >= 0.92, "the pair must be above every default threshold for this test to mean something"
    verdict = changed_fact(older, newer)
    assert verdict.changed and verdict.reason == reason
    # a verifier that would call everything a duplicate: the guard must decide before it is asked
    store = stores(verify_cmd=plugin_cmd("verifier.py", "duplicate"))
    for policy in ("skip", "verify", "replace", "merge"):
        check_changed_fact(store, older, newer, reason, policy)


def check_changed_fact(store: Store, older: str, newer: str, reason: str, policy: str) -> None:
    first, second = capture_pair(store, (older, newer), policy, domain=policy)
    assert second.decision == "changed_fact", second.reasoning
    assert second.stored and store.get(second.memory_id).content == newer
    assert reason in second.reasoning
    row = log_rows(store)[-1]
    assert row["decision"] == "changed_fact" and row["matched_memory_id"] == first.memory_id
    assert reason in row["reasoning"]
    old = store.get(first.memory_id)
    if policy == "replace":  # an update: the new memory supersedes the old one, logged as such
        assert old.status == "superseded" and old.successor_id == second.memory_id
        assert second.retired == [first.memory_id] and row["reasoning"].startswith("update:")
        assert active_in(store, policy) == {newer}
    elif policy in ("skip", "verify"):
        assert old.status == "active" and active_in(store, policy) == {older, newer}
    else:  # merge: never merged into one text
        assert newer in active_in(store, policy)
        assert not any(older in c and newer in c for c in active_in(store, policy))


@pytest.mark.parametrize("name", list(PARAPHRASES))
def test_true_paraphrases_still_match(stores, similarity, name) -> None:
    older, newer = PARAPHRASES[name]
    assert not changed_fact(older, newer).changed
    assert similarity(older, newer) >= 0.92
    store = stores()
    first, second = capture_pair(store, (older, newer), domain="skip")
    assert second.decision == "semantic_skip" and second.memory_id == first.memory_id
    _, second = capture_pair(store, (older, newer), "replace", domain="replace")
    assert second.decision in ("replaced", "merged")


def test_changed_fact_is_logged_under_skip_with_the_guard_reason(stores) -> None:
    older, newer, _ = CHANGED["number"]
    store = stores()
    check_first = store.capture(older, NS)
    result = store.check_duplicate(newer, NS)
    assert not result.is_duplicate
    assert [n.memory_id for n in result.neighbours if n.changed_fact] == [check_first.memory_id]
    capture = store.capture(newer, NS)
    assert capture.decision == "changed_fact" and "5 minutes vs 10 minutes" in capture.reasoning
    rows = store.con.execute("select decision, reasoning from v_decisions order by id").fetchall()
    assert rows[-1][0] == "changed_fact" and "number" in rows[-1][1]
    assert_doctor(store)


GRAY_CHANGED = ("The payment worker must always validate the webhook signature before processing events.",
                "The payment worker must never validate the webhook signature before processing events.")  # ~0.895


def test_guard_applies_in_the_verify_gray_zone_below_the_semantic_threshold(stores, similarity) -> None:
    sim = similarity(*GRAY_CHANGED)
    assert 0.88 <= sim < 0.92 and changed_fact(*GRAY_CHANGED).changed
    store = stores(verify_fallback="reject")
    _, second = capture_pair(store, GRAY_CHANGED, "verify")
    assert second.decision == "changed_fact" and second.stored


def test_guard_applies_in_the_merge_zone_below_the_semantic_threshold(stores, similarity) -> None:
    older, newer, _ = CHANGED["version"]
    assert 0.90 <= similarity(older, newer) < 0.99
    store = stores(dedup_threshold_decisions=0.99)
    _, second = capture_pair(store, (older, newer), "merge")
    assert second.decision == "changed_fact"
    assert store.get(second.memory_id).content == newer


# ------------------------------------------------------------------------------------ plugin fixture



@pytest.fixture
def plugin_cmd():
    import shlex
    import sys

    def make(script: str, mode: str) -> str:
        return f"{shlex.quote(sys.executable)} {shlex.quote(str(PLUGINS / script))} {mode}"
    return make
