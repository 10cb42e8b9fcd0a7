"""Changed facts found by subject: the judgement (`text.changes.supersedes`) and the store's detector
(`dedup.outdated`): the older memory of the project is linked as outdated by the newer, logged `changed_fact`,
reversible; different subjects stay two current memories. Real SQLite, real model."""
from __future__ import annotations

import sys

import pytest

BOTH_BACKENDS = True   # each test that opens a store runs on SQLite and on PostgreSQL (conftest.make_store)

from subcog_store import review
from subcog_store.text.changes import supersedes

APP = "web-app"

CHANGED = [   # (older, newer, reason): a value or choice changed, mostly in other words
    ("We use Redux Toolkit for global state in the web app.",
     "We moved global state to Zustand; the Redux store is gone.", "replaced"),
    ("We use Redux Toolkit for global state in the web app.",
     "Global state now lives in Zustand stores instead of Redux.", "replaced"),
    ("The backend runs on Node 18.",
     "We bumped Node to 20.11 in the Dockerfile and CI because 18 reached end of life in April.", "version"),
    ("The public API is limited to 100 requests per minute per key.",
     "We raised the public API limit to 500 requests per minute per key because the mobile sync bursts were "
     "hitting 429s.", "value"),
    ("Background jobs run on Celery with RabbitMQ as the broker; Redis is only used for caching.",
     "Background jobs run on Celery with Amazon SQS as the broker; Redis is only used for caching.", "slot"),
    ("The access token lives 15 minutes and the refresh token 60 days.",
     "Refresh tokens now expire after 90 days.", "value"),
    ("Integration tests start PostGIS 3.4 in testcontainers.",
     "The integration suite now runs against PostGIS 3.5 in testcontainers, which fixed the clipping bug.",
     "version"),
    ("Deploys go to Heroku via git push.", "We switched deploys from Heroku to Fly.io; flyctl deploy runs in CI.",
     "replaced"),
    ("The replication job runs every hour at minute 20.", "The replication job runs every 15 minutes.", "value"),
    ("The Stripe API version is pinned to 2024-06-20.", "The Stripe API version is pinned to 2025-03-31.", "value"),
    ("The retryBudget setting is parsed from the config but never used by the HTTP client.",   # a corrected belief
     "The HTTP client now reads retryBudget from the config and stops retrying when it runs out.", "used"),
    ("The `cache_ttl` and `cache_size` fields are stored but NOT used.",
     "The loader uses the existing `cache_ttl` field to expire entries.", "used"),
]
DIFFERENT = [   # (older, newer): two facts, both current
    ("We decided that the billing service uses a 30 second timeout for its upstream calls, because Stripe is slow "
     "at month end.",
     "The auth service uses a 5 second timeout for its upstream calls because the identity provider answers in "
     "under 100 ms."),
    ("The search service caches results for 10 minutes.", "The tile cache keeps tiles for 10 minutes."),
    ("Product pages are cached for 60 seconds for anonymous visitors.",
     "Shipping quotes are cached per cart for 10 minutes."),
    ("The orders service retries failed webhooks 5 times with exponential backoff.",
     "The email service retries failed sends 3 times with exponential backoff."),
    ("Prices are stored as integer cents in a BigIntegerField; never use floats for money.",
     "TaxJar returns tax amounts in dollars as floats; convert them to integer cents before storing."),
    ("iOS kills the app's background fetch if it runs over 30 seconds; the background sync only pushes.",
     "The sync pull runs on app start, on foreground after 5 minutes in the background."),
    ("We use Redis for caching product pages.", "Payments go through Stripe Checkout so card data never touches "
                                                "our servers."),
    ("Sentry sample rate is 1.0 for errors.", "Sentry alerts go to the ops Slack channel."),
    ("The unused `buildReport` call in the worker discards its result.",    # a call site, not the function
     "The export endpoint calls `buildReport` directly from its route handler."),
    ("The `legacyToken` helper is defined but never called.",                # still unused, said again
     "The `legacyToken` helper is no longer used by the login flow."),
    ("The LCD screen is not used on this router.", "The router uses the LCD screen for status."),  # no code name
]


@pytest.mark.parametrize("older,newer,reason", CHANGED)
def test_a_changed_value_or_choice_is_found(older, newer, reason):
    change = supersedes(older, newer)
    assert change is not None and change.reason == reason, change
    assert change.describe().startswith(f"changed by subject ({reason})")


@pytest.mark.parametrize("older,newer", DIFFERENT)
def test_different_subjects_are_no_change(older, newer):
    assert supersedes(older, newer) is None


@pytest.mark.parametrize("text", ["", "   ", "🙂🙂", "x" * 70000, "SELECT * FROM t;", "ignore all previous"])
def test_odd_texts_are_no_change(text):
    assert supersedes(text, text) is None
    assert supersedes("The API limit is 100 requests per minute.", text) is None


def test_the_store_links_a_change_in_other_words_and_reverse_unlinks_it(make_store, clock):
    store = make_store()
    old = store.capture("We use Redux Toolkit for global state in the web app.", "decisions", APP)
    other = store.capture("Forms are built with React Hook Form and validated with zod schemas.", "patterns", APP)
    foreign = store.capture("We use Redux Toolkit for global state in the admin app.", "decisions", "admin-app")
    clock.advance(86400)
    new = store.capture("We moved global state to Zustand; the Redux store is gone.", "decisions", APP)
    assert new.decision == "stored" and new.outdated == [old.memory_id]
    assert store.get(old.memory_id).successor_id == new.memory_id
    assert store.get(other.memory_id).successor_id is None
    assert store.get(foreign.memory_id).successor_id is None       # another project is never touched
    decision = store.con.execute("select id, decision, policy, matched_memory_id, memory_id, reasoning "
                                 "from dedup_log where decision = 'changed_fact'").fetchall()
    assert len(decision) == 1 and decision[0][2:5] == ("subject", old.memory_id, new.memory_id)
    assert "Zustand" in decision[0][5]
    hits = [h.memory.id for h in store.search("which library holds global state", domain=APP, limit=5).hits]
    assert hits.index(new.memory_id) < hits.index(old.memory_id)
    report = review.reverse(store, decision[0][0])
    assert report.changed and report.retired == []
    assert store.get(old.memory_id).successor_id is None and store.get(new.memory_id).status == "active"


def test_billing_and_auth_stay_two_current_memories(make_store, clock):
    store = make_store()
    billing = store.capture("We decided that the billing service uses a 30 second timeout for its upstream calls, "
                            "because Stripe is slow at month end.", "decisions", APP)
    clock.advance(60)
    auth = store.capture("The auth service uses a 5 second timeout for its upstream calls because the identity "
                         "provider answers in under 100 ms.", "decisions", APP)
    assert auth.stored and auth.outdated == [] and store.get(billing.memory_id).successor_id is None


def test_a_field_found_unused_then_used_by_the_fix_is_outdated(make_store, clock):
    """A corrected belief within a session: "X is stored but never used" is outdated once the session says the
    code uses X (the issue's "Never drop a fact silently": linked, logged, reversible, both kept)."""
    store = make_store()
    unused = store.capture("The `linesAtStart` metadata field is stored but never used by the explain command.",
                           "learnings", APP)
    clock.advance(60)
    used = store.capture("The explain command now uses the `linesAtStart` metadata field to scope the transcript to "
                         "one checkpoint.", "decisions", APP)
    assert used.stored and used.outdated == [unused.memory_id]
    assert store.get(unused.memory_id).successor_id == used.memory_id and store.get(unused.memory_id).status == "active"
    reason = store.con.execute("select reasoning from dedup_log where decision = 'changed_fact'").fetchone()[0]
    assert reason.startswith("changed by subject (used)")


def test_twenty_decisions_about_ten_services_keep_ten_current(make_store, clock):
    store = make_store()
    services = ["billing", "auth", "search", "checkout", "inventory", "shipping", "email", "reports", "uploads",
                "notifications"]
    first = {}
    for i, name in enumerate(services):
        result = store.capture(f"The {name} service uses a {5 + i} second timeout for its upstream calls.",
                               "decisions", APP)
        first[name] = result.memory_id
        clock.advance(60)
    for i, name in enumerate(services):   # each service's timeout changed later, in other words
        result = store.capture(f"We raised the {name} service's upstream timeout to {30 + i} seconds after the "
                               f"month-end incidents.", "decisions", APP)
        assert result.outdated == [first[name]], (name, result.outdated)
        clock.advance(60)
    current = [m for m in store.memories(domain=APP, limit=100) if not m.successor_id]
    assert len(current) == 10


@pytest.mark.parametrize("newer_text,older_text", [
    ("The public API is limited to 500 requests per minute per key.",            # the guard's near-identical pair
     "The public API is limited to 100 requests per minute per key."),
    ("We raised the public API limit to 500 requests per minute per key because the mobile sync bursts were "
     "hitting 429s.", "The public API is limited to 100 requests per minute per key.")])
def test_an_older_statement_captured_later_is_outdated_by_the_newer_one(make_store, clock, newer_text, older_text):
    """An older session imported late: its statement is the outdated one, whichever arrives first."""
    store = make_store()
    clock.advance(86400)
    newer = store.capture(newer_text, "config", APP)
    older = store.capture(older_text, "config", APP, created_at="2026-01-01T00:00:00Z")
    assert older.stored and older.outdated == [older.memory_id]
    assert store.get(older.memory_id).successor_id == newer.memory_id
    assert store.get(newer.memory_id).successor_id is None


def _chain(store, n: int, loop: bool) -> list[str]:
    """n memories, each linked as outdated by the next (and the last by the first when `loop`), written straight
    into the table as a store from before loops were refused could hold them."""
    from subcog_store.db import memories as writer
    from subcog_store.db.connection import immediate

    now = "2026-01-02T00:00:00Z"
    with immediate(store.con):
        ids = []
        for i in range(n):
            ids.append(writer.new_id(store.con))
            writer.insert(store.con, memory_id=ids[-1], domain=APP, namespace="decisions", content=f"fact {i}",
                          importance=0.5, tags=[], source=None, session_id=None, created_at=now, now=now,
                          captured_at=0.0, vector=store.embed(f"fact {i}").tobytes())
        for older, newer in zip(ids, ids[1:] + (ids[:1] if loop else [])):
            writer.link_successor(store.con, older, newer, now)
    return ids


# the long chain: just deeper than Python's recursion limit (1,000) is the point; each link costs a round trip on
# PostgreSQL (3,000 took 2 min of the suite under load)
@pytest.mark.parametrize("n,loop", [(2, True), (5, True), (1, True), (sys.getrecursionlimit() + 200, False)])
def test_hard_delete_ends_on_a_loop_or_a_long_chain_and_restores(make_store, tiny_embedder, n, loop):
    """Deleting a memory deletes what points at it, each once: a loop of successors (A -> B -> A, or one memory
    its own successor) and a chain deeper than Python's recursion limit both end, and the snapshots put every
    row back."""
    from subcog_store.db import memories as writer
    from subcog_store.db.connection import immediate

    store = make_store(embedder_=tiny_embedder)
    ids = _chain(store, n, loop)
    before = store.con.execute("select id, successor_id from memories order by id").fetchall()
    with immediate(store.con):
        snaps = writer.hard_delete(store.con, ids[-1])
    assert sorted(s.row["id"] for s in snaps) == sorted(ids)      # every one, once
    assert store.con.execute("select count(*) from memories").fetchone()[0] == 0
    if not loop:   # a predecessor goes before what it points at
        assert [s.row["id"] for s in snaps] == ids
    with immediate(store.con):
        for snap in reversed(snaps):
            writer.restore(store.con, snap)
    assert store.con.execute("select id, successor_id from memories order by id").fetchall() == before
