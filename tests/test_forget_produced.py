"""`forget --session ID` and `forget --source S`: everything one session or one source produced is retired in one
logged decision, which `reverse` undoes whole; the facts they had updated are current again meanwhile."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import clean_environ, cli_command
from subcog_store.errors import InvalidInput
from subcog_store.maintenance import forget_produced
from subcog_store.review import reverse

DOMAIN = "proj"


@pytest.fixture
def filled(make_store):
    store = make_store()
    old = store.capture("The Redis session cache TTL is 5 minutes for every checkout session.", "decisions", DOMAIN,
                        source="pre-compact-hook", session_id="good").memory_id
    bad = [store.capture(text, "learnings", DOMAIN, source="session-end-hook", session_id="bad").memory_id
           for text in ("The deploy script deletes the staging database on every run.",
                        "Tests pass only when the network is disabled entirely.")]
    changed = store.capture("The Redis session cache TTL is 10 minutes for every checkout session.", "decisions",
                            DOMAIN, source="session-end-hook", session_id="bad")
    other = store.capture("The deploy script deletes the staging database on every run.", "learnings", "elsewhere",
                          source="session-end-hook", session_id="bad").memory_id
    return store, old, bad + [changed.memory_id], other


def test_forget_a_session_and_bring_it_back(filled):
    store, old, bad, other = filled
    assert store.get(old).successor_id == bad[-1]           # the bad session updated a good fact
    dry = forget_produced(store, DOMAIN, session_id="bad", dry_run=True)
    assert dry["forgotten"] == bad and dry["current_again"] == [old] and store.get(bad[0]).status == "active"
    done = forget_produced(store, DOMAIN, session_id="bad", reason="the session went wrong")
    assert [store.get(m).status for m in bad] == ["deleted"] * 3
    assert store.get(old).successor_id is None and store.get(other).status == "active"   # other projects untouched
    assert not {h.memory.id for h in store.search("staging database deploy", domain=DOMAIN).hits} & set(bad)
    row = store.con.execute("select decision, policy, reasoning from dedup_log where id = ?",
                            (done["decision_id"],)).fetchone()
    assert row[:2] == ("forgotten", "forget") and row[2].startswith("the session went wrong")
    members = store.con.execute("select memory_id, role from decision_members where decision_id = ?",
                                (done["decision_id"],)).fetchall()
    assert sorted(members) == sorted([(m, "retired") for m in bad] + [(old, "outdated")])
    report = reverse(store, done["decision_id"])
    assert report.changed
    assert [store.get(m).status for m in bad] == ["active"] * 3 and store.get(old).successor_id == bad[-1]


def test_forget_a_source(filled):
    store, old, bad, other = filled
    done = forget_produced(store, DOMAIN, source="pre-compact-hook")
    assert done["forgotten"] == [old] and store.get(old).status == "deleted"
    assert forget_produced(store, DOMAIN, source="pre-compact-hook")["forgotten"] == []    # nothing left
    with pytest.raises(InvalidInput):
        forget_produced(store, DOMAIN)


def test_the_command(filled, tmp_path):
    store, old, bad, other = filled
    run = [*cli_command(), "--db", str(store.path), "forget", "--session", "bad", "-d", DOMAIN]
    out = subprocess.run(run + ["--dry-run", "--json"], capture_output=True, text=True, env=clean_environ())
    assert out.returncode == 0 and json.loads(out.stdout)["forgotten"] == bad
    out = subprocess.run(run, capture_output=True, text=True, env=clean_environ())
    assert out.returncode == 0 and "forgot 3 memories of session bad" in out.stdout and "reverse" in out.stdout
    both = subprocess.run([*cli_command(), "--db", str(store.path), "forget", old, "--session", "x"],
                          capture_output=True, text=True, env=clean_environ())
    assert both.returncode == 2
