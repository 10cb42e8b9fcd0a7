"""What a capture keeps, end to end through the hook and a real store with the real model (issue 25):
nothing dropped silently, one memory per fact in a project, the user's words, preferences that follow the
developer, status left out, and every session's text searchable below the curated memories."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import read_rows, scrub_environ
from subcog_store.claude_code.handlers import pre_compact
from subcog_store.capture.session import HookOptions
from subcog_store.claude_code.recall_hooks import user_prompt_submit
from subcog_store.scope import USER_DOMAIN, domain_for
from subcog_store.store import Store

SERVICES = ["billing", "auth", "search", "checkout", "inventory", "shipping", "email", "reports", "gateway", "media"]


@pytest.fixture(autouse=True)
def hook_env(monkeypatch, tmp_path):
    scrub_environ(monkeypatch)
    monkeypatch.setenv("SUBCOG_HOOK_LOG", str(tmp_path / "hook.log"))
    monkeypatch.setenv("SUBCOG_WORKER_ENABLED", "false")
    for name in ("shop", "blog"):
        (tmp_path / name).mkdir()


def project(tmp_path: Path, name: str = "shop") -> str:
    """The domain of a project folder (as the hooks derive it from the client's cwd)."""
    return domain_for(tmp_path / name)


def record(kind: str, text: str, n: int) -> str:
    content = text if kind == "user" else [{"type": "text", "text": text}]
    return json.dumps({"type": kind, "uuid": f"{kind}-{n}", "sessionId": "s", "isSidechain": False,
                       "timestamp": f"2026-11-20T09:{n:02d}:00Z", "message": {"role": kind, "content": content}}) + "\n"


def transcript(tmp_path: Path, turns: list[tuple[str, str]], name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(record(kind, text, i) for i, (kind, text) in enumerate(turns)))
    return path


def capture(db: Path, path: Path, folder: str = "shop", session: str = "sess-1"):
    """The pre-compact hook on `path`, run in the project folder `folder` next to it."""
    raw = json.dumps({"session_id": session, "transcript_path": str(path),
                      "cwd": str(path.parent / folder)}).encode()
    return pre_compact(raw, HookOptions(db=db, budget_secs=120))


def rows(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    return read_rows(db, sql, params)


def memories(db: Path) -> list[dict]:
    names = ("id", "domain", "namespace", "content", "status", "successor_id")
    return [dict(zip(names, r)) for r in rows(db, f"select {', '.join(names)} from memories order by seq")]


# -- nothing dropped silently ------------------------------------------------------------------------------------

def test_the_billing_and_auth_timeouts_are_two_memories(tmp_path):
    db = tmp_path / "m.db"
    path = transcript(tmp_path, [
        ("assistant", "We decided that the billing service uses a 30 second timeout for its upstream calls, because "
                      "Stripe is slow at month end."),
        ("assistant", "Now let me look at the auth client."),
        ("assistant", "The auth service uses a 5 second timeout for its upstream calls because the identity provider "
                      "answers in under 100 ms."),
    ])
    run = capture(db, path)
    texts = [m["content"] for m in memories(db) if m["status"] == "active"]
    assert any("billing" in t and "30 second" in t for t in texts), run.report()
    assert any("auth" in t and "5 second" in t for t in texts), run.report()
    assert all(m["successor_id"] is None for m in memories(db))   # different subjects: nothing is outdated


def test_twenty_decisions_about_ten_services_are_all_kept(tmp_path):
    db = tmp_path / "m.db"
    turns = []
    for i, svc in enumerate(SERVICES):
        turns.append(("assistant", f"We decided that the {svc} service retries failed upstream calls {i + 2} times "
                                   f"with exponential backoff, because its dependencies drop connections under load."))
        turns.append(("assistant", f"Decision: the {svc} service caches its configuration for {10 * (i + 1)} "
                                   f"minutes, since configuration changes are rare."))
    capture(db, transcript(tmp_path, turns))
    active = [m["content"] for m in memories(db) if m["status"] == "active"]
    for i, svc in enumerate(SERVICES):
        assert any(svc in t and f"{i + 2} times" in t for t in active), svc
        assert any(svc in t and f"{10 * (i + 1)} minutes" in t for t in active), svc


def test_a_later_correction_links_the_earlier_statement_as_outdated(tmp_path):
    db = tmp_path / "m.db"
    path = transcript(tmp_path, [
        ("assistant", "Important: the Redis session cache for the login flow keeps entries for 5 minutes."),
        ("assistant", "Let me check the login flow once more."),
        ("assistant", "Important: the Redis session cache for the login flow keeps entries for 10 minutes."),
    ])
    capture(db, path)
    old = [m for m in memories(db) if "5 minutes" in m["content"]]
    new = [m for m in memories(db) if "10 minutes" in m["content"]]
    assert len(old) == len(new) == 1 and old[0]["successor_id"] == new[0]["id"]   # kept, marked as outdated
    logged = rows(db, "select decision from dedup_log where memory_id = ?", (new[0]["id"],))
    assert ("changed_fact",) in logged


# -- one memory per fact in a project -----------------------------------------------------------------------------

ROOT_CAUSE = "The root cause is that the Redis container listens on 10.0.3.7:6380, not localhost:6379."
SAID_AGAIN = ("Diagnosed the 502 errors: the cache client pointed at localhost:6379 while Redis actually runs at "
              "10.0.3.7:6380.")   # cosine 0.75 with ROOT_CAUSE: the same subject, said again in other words


def test_a_finding_said_again_in_other_words_is_one_memory(tmp_path):
    """Within one run (its candidates meet in the batch): the restatement names the same host and port and says
    mostly the same words, so it is a repeat although its cosine is under 0.85."""
    capture(tmp_path / "m.db", transcript(tmp_path, [
        ("assistant", ROOT_CAUSE), ("user", "ok, and the login page?"),
        ("assistant", "Decision: the login form uses max-width instead of a fixed 640 px width, because it must fit "
                      "phones."),
        ("assistant", SAID_AGAIN)]))
    texts = [m["content"] for m in memories(tmp_path / "m.db")]
    assert sum("10.0.3.7:6380" in t for t in texts) == 1 and any("640 px" in t for t in texts), texts


def test_the_items_of_one_list_are_one_memory(tmp_path):
    """A finding told as a lead-in and its parts (modelled on a held-out review: "This is wrong, in two ways:" then
    eight items, stored eight times with the lead-in) is one memory holding every part, one a line; a second list
    of the session is its own memory."""
    capture(tmp_path / "m.db", transcript(tmp_path, [
        ("assistant", "The retry policy of the upload worker is wrong in three ways:\n\n"
                      "- It retries a 413 from the proxy, which can never succeed with the same body.\n"
                      "- It resets the backoff to 1 second after every success, so a flapping proxy is hammered.\n"
                      "- It does not honour the Retry-After header that the storage API sends with a 503.\n"),
        ("user", "and the cache?"),
        ("assistant", "The cache settings we decided on for the thumbnail service:\n\n"
                      "- Thumbnails are cached in Redis for 24 hours, because regenerating one costs 300 ms.\n"
                      "- The cache key includes the image's content hash, so a replaced image is never served stale.\n"),
    ]))
    texts = [m["content"] for m in memories(tmp_path / "m.db")]
    retry = [t for t in texts if "413" in t or "Retry-After" in t or "backoff" in t]
    cache = [t for t in texts if "24 hours" in t or "content hash" in t]
    assert len(retry) == 1 and all(w in retry[0] for w in ("413", "backoff", "Retry-After")), texts
    assert retry[0].startswith("The retry policy of the upload worker is wrong in three ways:\n- ")
    assert len(cache) == 1 and "24 hours" in cache[0] and "content hash" in cache[0], texts


CORS_FOUND = "The default CORS allow-list of the API is localhost:5173 and localhost:4173, but Vite started on 5177."
CORS_SUMMED = "Default CORS allow-list only had localhost:5173/localhost:4173."   # cosine 0.73 with CORS_FOUND


def summary_record(text: str, n: int) -> str:
    return json.dumps({"type": "user", "uuid": f"summary-{n}", "sessionId": "s", "isSidechain": False,
                       "isCompactSummary": True, "timestamp": f"2026-11-20T09:{n:02d}:00Z",
                       "message": {"role": "user", "content": text}}) + "\n"


@pytest.mark.parametrize("in_summary", [True, False])
def test_a_summarys_line_that_restates_the_session_is_a_repeat(tmp_path, in_summary):
    """Modelled on cipherbox-phase12-mfa.jsonl (training): a compaction summary's line restates in its own words a
    finding the assistant's text already gave (cosine 0.70-0.75, the same allow-list named): one memory. The same
    words said by the assistant again are not a summary's restatement and stay under SUBJECT_REPEAT: two."""
    said = ("This session is being continued from a previous conversation.\n\nSummary:\n"
            f"4. Errors and fixes:\n   - {CORS_SUMMED}\n") if in_summary else CORS_SUMMED
    path = tmp_path / "t.jsonl"
    path.write_text(record("assistant", CORS_FOUND, 0) + record("user", "ok, go on", 1)
                    + (summary_record(said, 2) if in_summary else record("assistant", said, 2)))
    run = capture(tmp_path / "m.db", path)
    texts = [m["content"] for m in memories(tmp_path / "m.db")]
    assert sum("4173" in t for t in texts) == (1 if in_summary else 2), (texts, run.report())
    if in_summary:   # the repeat is logged against the memory it restates, not dropped silently
        assert any("4173" in s["content"] for s in run.report()["skipped"]), run.report()


def test_a_summarys_line_is_a_repeat_from_summary_repeat_a_changed_value_is_not():
    from subcog_store.dedup.session_repeat import SUMMARY_REPEAT, is_session_repeat

    assert is_session_repeat(CORS_FOUND, CORS_SUMMED, 0.73, from_summary=True)
    assert not is_session_repeat(CORS_FOUND, CORS_SUMMED, 0.73)   # the assistant's own words: SUBJECT_REPEAT
    assert not is_session_repeat(CORS_FOUND, CORS_SUMMED, SUMMARY_REPEAT - 0.01, from_summary=True)
    # another value on both sides is a changed fact, kept (and linked as outdated) whoever says it
    assert not is_session_repeat(CORS_FOUND, "Default CORS allow-list only had localhost:5173/localhost:3000.",
                                 0.73, from_summary=True)


def test_a_short_restatement_is_a_repeat_too(tmp_path):
    """Modelled on cipherbox-phase12-mfa.jsonl (training): a restatement shorter than the semantic tier's 50
    characters (cosine 0.84, the same subject) met no comparison at all and was stored twice; within its run it
    meets the session-repeat rule (only that rule: the duplicate rule still ignores texts that short)."""
    capture(tmp_path / "m.db", transcript(tmp_path, [
        ("assistant", "The root cause is that Keycloak caches the JWKS, so token checks use an old public key."),
        ("user", "how do we fix it?"),
        ("assistant", "Root cause: Keycloak caching the old JWKS.")]))
    texts = [m["content"] for m in memories(tmp_path / "m.db")]
    assert sum("JWKS" in t for t in texts) == 1, texts


def test_a_restatement_of_the_same_subject_is_a_repeat_a_changed_value_is_not():
    from subcog_store.dedup.session_repeat import is_session_repeat

    assert is_session_repeat(ROOT_CAUSE, SAID_AGAIN, 0.75)
    # the same subject with another value on both sides: a changed fact, kept (and linked as outdated)
    assert not is_session_repeat("The cache TTL in config/cache.yaml is 5 minutes for sessions.",
                                 "The cache TTL in config/cache.yaml is 10 minutes for sessions.", 0.80)
    # no identifier in common: cosine alone does not make a repeat under 0.85
    assert not is_session_repeat("The billing service uses a 30 second timeout for its upstream calls.",
                                 "The auth service uses a 5 second timeout for its upstream calls.", 0.80)
    assert not is_session_repeat(ROOT_CAUSE, SAID_AGAIN, 0.74)   # under SUBJECT_REPEAT


def test_a_value_only_one_restatement_states_does_not_keep_a_close_repeat_apart():
    """Modelled on the training pairs of cipherbox-phase12-mfa.jsonl (a default URL said twice, the second time
    with the setting's other name first; the cause of the upload 500s said with and without the status code):
    close restatements (cosine 0.85 and above) where a number, an order or a negation appears on one side only."""
    from subcog_store.dedup.session_repeat import is_session_repeat

    assert is_session_repeat("The upload failures come from the proxy's request body limit.",
                             "The upload failures (HTTP 413) come from the proxy's request body limit.", 0.91)
    assert is_session_repeat("The worker queue defaults: QUEUE_URL is localhost:6379 and QUEUE_BACKEND is redis.",
                             "QUEUE_BACKEND is redis and QUEUE_URL defaults to localhost:6379.", 0.90)
    # a value on both sides, or a statement negated, is still a changed fact
    assert not is_session_repeat("The upload limit of the proxy is 10 MB.", "The upload limit of the proxy is 50 MB.",
                                 0.95)
    assert not is_session_repeat("The session cache is enabled for the login flow.",
                                 "The session cache is not enabled for the login flow.", 0.95)


def test_a_name_written_with_and_without_its_call_arguments_does_not_keep_a_close_repeat_apart():
    """Modelled on ctxeval-plan-first-remediation.jsonl (training, cosine 0.92): the guard's only veto is one
    identifier written as "buildMinimalContext(input)" and as "buildMinimalContext()". Another name, or another
    word in the same slot, still keeps two close statements apart."""
    from subcog_store.dedup.session_repeat import SESSION_REPEAT, is_session_repeat

    older = ("The prompt builders render the agent description twice: once in the Role section and again inside "
             "buildMinimalContext(input), which renders the same elements.")
    newer = ("The prompt builders were rendering the agent description twice, in the Role section and again via "
             "buildMinimalContext().")
    assert is_session_repeat(older, newer, 0.92)
    assert not is_session_repeat(older, newer, SESSION_REPEAT - 0.01)   # under SESSION_REPEAT: the subject rule
    assert not is_session_repeat("The list waits in waitForUsersLoaded() before it renders the table rows.",
                                 "The list waits in waitForItemsLoaded() before it renders the table rows.", 0.95)
    assert not is_session_repeat("The session store uses redis for caching.",
                                 "The session store uses memcached for caching.", 0.90)


def test_items_under_one_long_lead_in_are_not_repeats_of_each_other():
    """Modelled on ctxeval-agents-claude-md-coexistence.jsonl's "Summary: ... through 4 layers of protection:"
    list (items at cosine 0.85-0.94 to each other, each a different layer): the longest lead-in they share, not
    the first colon, makes them siblings; the lead-in said alone is not a repeat of an item either."""
    from subcog_store.dedup.session_repeat import is_session_repeat

    lead = "Summary: the config merge is guarded in the build pipeline through 3 layers of checks:"
    first = f"{lead} Schema check (step 1.5): unknown keys are rejected before the merge."
    second = f"{lead} Path filter (step 2): files under vendor/ never enter the merge."
    assert not is_session_repeat(first, second, 0.93)
    assert not is_session_repeat(first, lead, 0.90)
    # a short shared start is not a lead-in: a restatement after "Note: " is still a repeat
    assert is_session_repeat("Note: the worker retries a failed upload three times with a 2 s backoff.",
                             "Note: the worker retries a failed upload three times, with a 2 s backoff.", 0.97)


def test_a_hook_capture_matches_an_active_memory_of_another_namespace(tmp_path):
    db = tmp_path / "m.db"
    with Store(db) as store:
        first = store.capture("Decision: the release pipeline signs every artifact with the cosign key kept in the "
                              "vault, and the deploy job rejects unsigned artifacts.", "security", project(tmp_path))
    run = capture(db, transcript(tmp_path, [   # the hook's namespace guess for it: decisions
        ("assistant", "Decision: the release pipeline signs every artifact with the cosign key kept in the vault, "
                      "and the deploy job rejects unsigned artifacts."),
    ]))
    assert len([m for m in memories(db) if m["status"] == "active"]) == 1
    skipped = run.report()["skipped"]
    assert skipped and skipped[0]["matched_urn"] == first.urn   # reported with the memory's URN


def test_an_explicit_capture_keeps_the_namespace_scope(tmp_path):
    with Store(tmp_path / "m.db") as store:
        text = "The release pipeline signs every artifact with the cosign key kept in the vault."
        assert store.capture(text, "security", "shop").stored
        assert store.capture(text, "decisions", "shop").stored   # CLI / MCP: scope is (domain, namespace)


# -- status is not a memory; the user's words are -------------------------------------------------------------------

def test_status_lines_are_not_memories(tmp_path):
    db = tmp_path / "m.db"
    capture(db, transcript(tmp_path, [
        ("assistant", "The checkout module currently has a compile error in the cart reducer."),
        ("assistant", "The migration for the orders table is NOT committed yet."),
        ("assistant", "All 212 tests pass and lint is clean after the refactor of the cart reducer."),
        ("assistant", "PR #75 is merged into main with the timeout fix for the gateway."),
    ]))
    assert memories(db) == []


STATUS_FACT = ("Root cause: the Redis container listens on 10.0.3.7:6380, not localhost:6379, and the fix landed in "
               "3096d26b.")   # the scorer keeps it (a diagnosis); the commit hash makes it status


def test_a_status_line_judged_a_fact_is_logged_not_stored_and_reversible(tmp_path):
    from subcog_store import review

    db = tmp_path / "m.db"
    path = transcript(tmp_path, [("assistant", STATUS_FACT)])
    capture(db, path)
    capture(db, path, session="sess-2")   # the same text read again: logged once
    assert memories(db) == []
    logged = rows(db, "select id, decision, policy, new_content, reasoning from dedup_log")
    assert len(logged) == 1 and logged[0][1:3] == ("auto_reject", "status") and "10.0.3.7:6380" in logged[0][3]
    assert "commit" in logged[0][4]
    with Store(db) as store:
        assert review.reverse(store.core, logged[0][0]).changed   # reversible: the text is stored
    (stored,) = memories(db)
    assert "10.0.3.7:6380" in stored["content"] and stored["domain"] == project(tmp_path)


def test_the_users_choices_are_decisions_in_words_that_stand_alone(tmp_path):
    db = tmp_path / "m.db"
    capture(db, transcript(tmp_path, [
        ("user", "Let's get started on the shop API. I want to use FastAPI with PostgreSQL, Redis for caching, and "
                 "run everything in Docker. Python 3.12."),
        ("assistant", "Sounds good, I'll set it up."),
        ("user", "can you look at the failing test?"),
    ]))
    decisions = [m for m in memories(db) if m["namespace"] == "decisions"]
    assert len(decisions) == 1 and decisions[0]["content"].startswith("The project uses FastAPI with PostgreSQL")
    assert "Python 3.12" in decisions[0]["content"] and decisions[0]["domain"] == project(tmp_path)


def test_preferences_follow_the_developer_and_project_facts_stay_home(tmp_path):
    db = tmp_path / "m.db"
    capture(db, transcript(tmp_path, [
        ("user", "Always add type hints to Python functions."),
        ("assistant", "Decision: the shop API stores carts in Redis hashes keyed by user id with a 7 day TTL."),
    ]))
    prefs = [m for m in memories(db) if m["domain"] == USER_DOMAIN]
    assert [m["content"] for m in prefs] == ["Developer preference: always add type hints to Python functions."]
    # another project: the preference comes back, the shop's cart decision never does
    payload = {"session_id": "other-1", "prompt": "should I add type hints to the Python functions here?",
               "cwd": str(tmp_path / "blog")}
    out = user_prompt_submit(payload, db, use_model=True)
    cart = user_prompt_submit({**payload, "prompt": "how are carts stored in Redis and for how long?"}, db,
                              use_model=True)
    assert "type hints" in out and "Redis" not in cart


def test_a_plan_the_user_pasted_keeps_its_decisions_in_words_that_stand_alone_and_a_request_is_not_kept(tmp_path):
    db = tmp_path / "m.db"
    plan = ("Implement the following plan:\n\n# Plan: Billing Retries\n\n## Context\n\nFailed card charges are "
            "retried three times with exponential backoff, starting at 30 seconds.\n\n## Design Decisions (from "
            "user)\n\n- Retry storage: a retry_count column on the charges table, not a separate queue\n\n"
            "## Changes\n\n### 1. Add the column\n\nAdd retry_count to the charges table in the next migration.\n")
    capture(db, transcript(tmp_path, [("user", plan), ("assistant", "On it."),
                                      ("user", "Use your best guess on what looks cleanest.")]))
    stored = [m["content"] for m in memories(db) if m["namespace"] == "decisions"]
    assert stored == ["Billing Retries, Context: Failed card charges are retried three times with exponential "
                      "backoff, starting at 30 seconds.",
                      "Billing Retries, Design Decisions (from user): Retry storage: a retry_count column on the "
                      "charges table, not a separate queue."]
    assert not any("best guess" in m["content"] or "next migration" in m["content"] for m in memories(db))
    payload = {"session_id": "later-1", "prompt": "where do we keep the retry count of a failed charge?",
               "cwd": str(tmp_path / "shop")}
    out = json.loads(user_prompt_submit(payload, db, use_model=True))["hookSpecificOutput"]["additionalContext"]
    assert "retry_count column on the charges table" in out, out


def test_a_stack_and_a_changed_setting_the_user_states_are_kept_and_answer_later_questions(tmp_path):
    db = tmp_path / "m.db"
    capture(db, transcript(tmp_path, [
        ("user", "Stack: Go 1.22 with the chi router, TimescaleDB for storage and NATS JetStream for ingest."),
        ("assistant", "Got it."),
        ("user", "Also lower the wave alert threshold to 3.5 metres, the harbour master asked for earlier warnings."),
    ]))
    from subcog_store.recall.session_search import search_all

    assert [(m["namespace"], m["content"][:22]) for m in memories(db)] == [
        ("decisions", "Stack: Go 1.22 with th"), ("decisions", "Decision: lower the wa")]
    with Store(db) as store:
        found = search_all(store, "which database does the service store its readings in?",
                           domain=project(tmp_path)).items
    assert found[0].kind == "memory" and "TimescaleDB" in found[0].text
    payload = {"session_id": "later-1", "prompt": "what wave height triggers an alert?", "cwd": str(tmp_path / "shop")}
    assert "3.5 metres" in user_prompt_submit(payload, db, use_model=True)


# -- every session's text searchable ---------------------------------------------------------------------------------

def test_what_extraction_misses_is_found_in_the_sessions_text_below_the_memories(tmp_path):
    from subcog_store.recall.session_search import search_all

    db = tmp_path / "m.db"
    turns = [("user", "hmm the nightly export job keeps dying, any idea?"),
             ("assistant", "Looked at it: the box only has 512 MB, and the export peaks around 900 MB when the "
                           "archive is zipped in memory. Streaming the zip fixed it."),
             ("assistant", "Decision: the nightly export streams the zip archive to disk instead of building it in "
                           "memory, because the box only has 512 MB.")]
    capture(db, transcript(tmp_path, turns))
    capture(db, transcript(tmp_path, turns, "again.jsonl"), session="sess-2")   # the same text read again
    assert rows(db, "select count(*) from session_text")[0][0] == 2   # by turn, stored once, linked to sess-1
    assert {r[0] for r in rows(db, "select session_id from session_text")} == {"sess-1"}
    with Store(db) as store:
        found = search_all(store, "how much memory does the export peak at when zipping?",
                           domain=project(tmp_path)).items
        assert found[0].kind == "memory"                                          # the curated memory first ...
        assert any(f.kind == "session" and "900 MB" in f.text for f in found)  # ... the session's words below
        assert search_all(store, "export", domain=project(tmp_path, "blog")).items == []   # never another's


def test_a_capture_stores_the_sessions_text_and_its_vectors_come_later(tmp_path):
    """The capture hook embeds none of the sessions' text (its words find it at once); `embed_waiting` (the warm
    worker between requests, `reembed`) embeds it all later, and then a question in other words finds it."""
    from subcog_store.capture.session_text import embed_waiting, waiting
    from subcog_store.recall.session_search import search_session_text

    db = tmp_path / "m.db"
    capture(db, transcript(tmp_path, [
        ("user", "the nightly export keeps dying, any idea?"),
        ("assistant", "The box only has 512 MB, and the export peaks around 900 MB when the archive is zipped in "
                      "memory; streaming the zip to disk fixed it."),
        ("user", "ok thanks, also the login page looks odd on phones"),
        ("assistant", "The login form had a fixed width of 640 px; it now uses max-width so it fits small screens.")]))
    texts = rows(db, "select count(*) from session_text")[0][0]
    assert texts == 4 and rows(db, "select count(*) from session_text where embedded = 1") == [(0,)]
    question = "what RAM does the box have?"   # no word of the answer's turn but "box"
    with Store(db) as store:
        assert waiting(store.core) == 4
        assert embed_waiting(store.core, lambda: False) == 0               # asked first: nothing done
        calls = iter([True, True])
        assert embed_waiting(store.core, lambda: next(calls, False), batch=1) == 2   # a batch per yes
        assert embed_waiting(store.core, lambda: True, batch=1) == 2 and waiting(store.core) == 0
        hits = search_session_text(store, question, domain=project(tmp_path), limit=1)
    assert rows(db, "select count(*) from session_text where embedded = 1") == [(4,)]
    assert "512 MB" in hits[0].content and hits[0].vector_rank == 1   # found by its meaning too


def test_the_sessions_text_is_searched_by_its_rarest_words(tmp_path, monkeypatch):
    """As the memories' search (`search.rarest`): the full-text query asks only for the prompt's TEXT_TERMS rarest
    words that some text holds; a text holding only a common word of the prompt is no candidate then."""
    from subcog_store.recall import search
    from subcog_store.recall.session_search import search_session_text

    db = tmp_path / "m.db"
    capture(db, transcript(tmp_path, [
        ("user", "the nightly export keeps dying on the staging box, any idea?"),
        ("assistant", "The staging box has 512 MB and the export zips the archive in memory, peaking near 900 MB."),
        ("user", "ok, and the staging deploy is slow too"),
        ("assistant", "The staging deploy pulls every image again; caching the layers would make it quicker.")]))
    question = "staging export memory"   # "staging": every text; "export": two; "memory": one
    with Store(db) as store:
        monkeypatch.setattr(search, "TEXT_TERMS", 1)
        only_rarest = search_session_text(store, question, domain=project(tmp_path), limit=8, use_model=False)
        monkeypatch.setattr(search, "TEXT_TERMS", 3)
        every_word = search_session_text(store, question, domain=project(tmp_path), limit=8, use_model=False)
    assert [h.content for h in only_rarest] == [every_word[0].content] and "900 MB" in only_rarest[0].content
    assert len(every_word) == 4 and every_word[0].coverage > every_word[-1].coverage > 0   # coverage: every word


def test_the_sessions_text_is_redacted(tmp_path):
    db = tmp_path / "m.db"
    key = "sk-ant-abcdefghijklmnopqrstuvwxyz123456"
    capture(db, transcript(tmp_path, [("user", f"use this key for the test run: {key} thanks"),
                                      ("assistant", "Got it, running the suite with the key from the vault.")]))
    texts = " ".join(r[0] for r in rows(db, "select content from session_text"))
    assert key not in texts and "[REDACTED]" in texts


def test_japanese_decisions_are_captured(tmp_path):
    db = tmp_path / "m.db"
    capture(db, transcript(tmp_path, [
        ("assistant", "出力フォーマットは JSON と NDJSON に統一することに決定しました。"),
        ("assistant", "まず、既存のコードベースを調査します。"),
    ]))
    texts = [m["content"] for m in memories(db)]
    assert any("NDJSON" in t for t in texts) and not any("調査します" in t for t in texts)


def test_search_with_sessions_on_the_command_line(tmp_path, monkeypatch, capsys):
    from helpers import cli_in_process

    db = tmp_path / "m.db"
    capture(db, transcript(tmp_path, [
        ("user", "why does the nightly export die?"),
        ("assistant", "The box only has 512 MB, and the export peaks around 900 MB when the archive is zipped in "
                      "memory; I switched the job to stream the zip to disk."),
    ]))
    code, out, _ = cli_in_process(monkeypatch, capsys, "--db", str(db), "search", "--sessions", "--json",
                                  "--domain", project(tmp_path), "how much memory does the nightly export need?")
    results = json.loads(out)["results"]
    assert code == 0 and any(r["kind"] == "session" and "900 MB" in r["content"] for r in results)
    code, out, _ = cli_in_process(monkeypatch, capsys, "--db", str(db), "search", "--json", "--domain",
                                  project(tmp_path), "how much memory does the nightly export need?")
    assert code == 0 and all("urn" in r for r in json.loads(out)["results"])   # without --sessions: memories only


@pytest.mark.parametrize("kept", [True, False])
def test_the_prompt_hook_offers_the_sessions_text_below_a_memory_that_leaves_room(tmp_path, kept):
    from subcog_store.capture.session_text import embed_waiting

    db = tmp_path / "m.db"
    capture(db, transcript(tmp_path, [
        ("user", "hmm the nightly export job keeps dying, any idea?"),
        ("assistant", "Decision: the nightly export streams the zip archive to disk instead of building it in "
                      "memory, because the box only has 512 MB.\n\nBefore the change the export peaked at about "
                      "900 MB of memory while zipping, so the kernel killed it."),
    ]))
    peak = [m["id"] for m in memories(db) if "900 MB" in m["content"]]
    assert len(peak) == 1 and len(memories(db)) == 2
    with Store(db) as store:
        embed_waiting(store.core, lambda: True)   # as the warm worker does between requests
        if not kept:   # as if extraction had missed it: only the session's text still holds it
            store.forget(peak[0])
    payload = {"session_id": "later-1", "prompt": "how much memory did the nightly export peak at while zipping?",
               "cwd": str(tmp_path / "shop")}
    out = json.loads(user_prompt_submit(payload, db, use_model=True))["hookSpecificOutput"]["additionalContext"]
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if "streams the zip archive to disk" in line)
    passages = [i for i, line in enumerate(lines) if "[earlier session" in line]
    if kept:   # no passage repeats what the memories above it say
        assert any("900 MB" in line for line in lines[:first + 2]) and passages == [], out
    else:      # the session's own words, in the place the memory left, without the memory's sentence
        assert len(passages) == 1 and first < passages[0], out
        assert "900 MB" in lines[passages[0]] and "streams the zip archive" not in lines[passages[0]], out
    assert user_prompt_submit({**payload, "session_id": "later-2", "prompt": "which CSS framework do we use?"},
                              db, use_model=True) == ""


def test_the_prompt_hook_offers_the_users_own_words_but_never_a_question_they_asked(tmp_path):
    from subcog_store.capture.session_text import embed_waiting

    db = tmp_path / "m.db"
    capture(db, transcript(tmp_path, [
        ("user", "For the shop API the staging proxy listens on port 8443 and forwards to the billing service "
                 "over mutual TLS."),
        ("assistant", "Noted."),
        ("user", "which port does the preview server of the blog use?"),
    ]))
    with Store(db) as store:
        embed_waiting(store.core, lambda: True)
        for m in memories(db):   # as if extraction had kept nothing: only the sessions' text holds it
            store.forget(m["id"])
    payload = {"session_id": "later-1", "prompt": "what port does the staging proxy listen on?",
               "cwd": str(tmp_path / "shop")}
    out = json.loads(user_prompt_submit(payload, db, use_model=True))["hookSpecificOutput"]["additionalContext"]
    assert "[earlier session, user" in out and "8443" in out, out
    asked = user_prompt_submit({**payload, "session_id": "later-2",
                                "prompt": "which port does the preview server of the blog use?"}, db, use_model=True)
    assert "preview server" not in asked, asked   # the user's question answers nothing


def test_a_text_two_processes_embed_at_once_keeps_one_vector(tmp_path):
    """A worker and the in-process fallback of the same capture both embed the session's text: the second
    writer finds it embedded under its lock and leaves it (was: a UNIQUE error and the run's text not kept)."""
    import numpy as np

    from subcog_store.db import session_text
    from subcog_store.extraction.session_chunks import Chunk

    db = tmp_path / "m.db"
    first, second = Store(db), Store(db)
    try:
        chunks = [Chunk("assistant", f"u{i}", 0, f"The cache of service {i} keeps entries for an hour.", None)
                  for i in range(3)]
        assert session_text.store_chunks(first.con, "p", "s", chunks, "2026-11-26T00:00:00Z") == 3
        seen_first, seen_second = session_text.to_embed(first.con, 10), session_text.to_embed(second.con, 10)
        assert len(seen_first) == len(seen_second) == 3
        rng = np.random.default_rng(0)
        vectors = {i: (rng.standard_normal(384), rng.standard_normal(384)) for i, _, _ in seen_first}
        session_text.store_vectors(first.con, [(i, d, vectors[i][0]) for i, d, _ in seen_first[:2]])
        session_text.store_vectors(second.con, [(i, d, vectors[i][1]) for i, d, _ in seen_second])
        assert first.con.execute("select count(*) from session_text_vectors").fetchone()[0] == 3
        assert session_text.to_embed(first.con, 10) == []
        kept = session_text.vector_of(first.con, seen_first[0][0])
        assert kept == vectors[seen_first[0][0]][0].astype("float32").tobytes()   # the first writer's vector
    finally:
        first.close()
        second.close()
