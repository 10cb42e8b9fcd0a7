"""From assistant text and compaction summaries to memory candidates (subcog_store/extraction/extract.py)."""
from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subcog_store.extraction.extract import (FACTS_CONFIDENCE, LIST_CHARS, SIGNAL_CONFIDENCE, Candidate,
                                             extract_candidates, judge, load_scorer, signal_of)
from subcog_store.extraction.scorer import features
from subcog_store.extraction.sentences import split_units
from subcog_store.extraction.summary import LASTING_FACTS_HEADING
from subcog_store.extraction.transcript import AssistantText, read_assistant_texts
from subcog_store.text.namespaces import NAMESPACES

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SUBCOG_SHARED_DIR") or REPO.parent / "shared")
SAMPLES = SHARED / "samples"
TRAIN = SAMPLES / "real" / "train"
needs_samples = pytest.mark.skipif(not SAMPLES.is_dir(), reason=f"{SAMPLES} not present")
needs_train = pytest.mark.skipif(not TRAIN.is_dir(), reason=f"{TRAIN} not present")


def text(body: str, uuid: str = "u1", offset: int = 0, kind: str = "assistant") -> AssistantText:
    return AssistantText(body, uuid, None, None, 1, False, offset, kind)


def captured(path: Path, **kw) -> list[tuple[str, str]]:
    return [(c.namespace, c.text) for c in extract_candidates(read_assistant_texts(path).texts, **kw)]


def texts_of(cands: list[Candidate]) -> list[str]:
    return [c.text for c in cands]


# --- sentences, not paragraphs --------------------------------------------------------------------------------

def test_each_sentence_is_judged_and_narration_is_dropped():
    got = extract_candidates([text("Now let me run the tests.\n\nGotcha: the CI runner has a case-insensitive "
                                    "filesystem. I'll rename the fixture next.", "u1", 120)])
    assert got == [Candidate("Gotcha: the CI runner has a case-insensitive filesystem.", "learnings",
                             SIGNAL_CONFIDENCE, "u1", 120, char_start=27)]   # where its paragraph starts


def test_a_diagnosis_without_signal_words_is_captured():
    body = ("Found it. The revoke endpoint returns 204 No Content and `customInstance.ts` calls `response.json()` on "
            "the empty body, which throws a JSON parse error.")
    got = extract_candidates([body])
    assert [c.text for c in got] == [body.split("Found it. ")[1].replace("`", "")]
    assert got[0].confidence >= load_scorer().threshold and got[0].source_uuid is None and got[0].offset == 0


@pytest.mark.parametrize("chatter", [
    "Let me note that we decided to use Redis for the session cache.",  # narration is never rescued
    "Should we decide to use Redis for the session cache instead of Memcached?",
    "We probably decided to use Redis for the session cache, I think.",
    "Want me to write down that we decided to use Redis for the cache?",
    "All 1290 tests pass, lint is clean and typecheck passes.",
    "Task 6 is blocked by 4 and 5, so I'll start with task 7 now.",
    "Now let me run the tests to see if everything compiles.",
])
def test_narration_questions_hedges_and_status_are_not_captured(chatter):
    assert extract_candidates([chatter]) == []


@pytest.mark.parametrize("sentence,namespace", [
    ("Decision: the session cache lives in Redis, not in Postgres.", "decisions"),
    ("We decided to use PgBouncer in transaction mode for connection pooling.", "decisions"),
    ("Used Result<T, E> instead of raising exceptions for factorial().", "decisions"),
    ("Turns out the ORM keeps a session open for the whole request.", "learnings"),
    ("Learned that the load balancer health check hits /healthz every second.", "learnings"),
    ("Convention: migration files are named YYYYMMDD_HHMM_description.sql.", "patterns"),
    ("Important: the payment webhook must answer within 3 seconds.", "context"),
    ("TODO: the retry loop never backs off after a 429 response.", "tech-debt"),
    ("Fixed the issue with the checkout timeouts: the pool size is now 20.", "blockers"),
])
def test_explicit_signals_are_kept_in_their_namespace(sentence, namespace):
    (c,) = extract_candidates([sentence])
    assert (c.text, c.namespace, c.confidence) == (sentence, namespace, SIGNAL_CONFIDENCE)
    assert namespace in NAMESPACES


def test_todo_counts_only_as_a_marker():
    unit = split_units("This is a TODO app built with React, so the list re-renders on every keystroke.")[0]
    assert signal_of(unit.text, features(unit)) is None
    assert all(c.namespace != "tech-debt" for c in extract_candidates([unit.text]))
    assert signal_of("We have not decided to use Redis yet for the cache.", {}) is None


def test_the_items_of_one_list_are_one_candidate_under_their_lead_in():
    body = ("## Root cause\n\nDone. Two problems in the zsh integration:\n\n"
            "1. **`zvm_select_vi_mode`** early-returns when the mode looks unchanged, so the cursor never resets.\n"
            "2. Gotcha: the widget re-enters `recursive-edit` through `$rawfunc`.\n")
    got = texts_of(extract_candidates([body], min_confidence=0.0))
    assert got[-1] == ("Two problems in the zsh integration:\n"   # lead-in: its last sentence; no markdown left
                       "- zvm_select_vi_mode early-returns when the mode looks unchanged, so the cursor never resets.\n"
                       "- Gotcha: the widget re-enters recursive-edit through $rawfunc."), got
    assert not any("**" in t or t.startswith("Done") for t in got)
    # a single item keeps its lead-in inline
    one = extract_candidates(["Two problems in the zsh integration:\n\n- The widget re-enters recursive-edit "
                              "through its raw function."], min_confidence=0.0)
    assert texts_of(one)[-1] == "Two problems in the zsh integration: The widget re-enters recursive-edit through " \
                                "its raw function."
    # a narrated lead-in is dropped, and items without a lead-in stay one a candidate
    narrated = extract_candidates(["Let me check these files:\n- The config loader reads SUBCOG_DB before the XDG "
                                   "data path, so a stale variable wins.\n- The worker reads SUBCOG_WORKER_SOCKET "
                                   "only at start-up, so a changed socket path needs a restart."],
                                  min_confidence=0.0)
    assert texts_of(narrated)[-2:] == [
        "The config loader reads SUBCOG_DB before the XDG data path, so a stale variable wins.",
        "The worker reads SUBCOG_WORKER_SOCKET only at start-up, so a changed socket path needs a restart."]


def test_a_lead_in_of_bold_code_groups_its_items_too():
    # "**`file.ts`**": the bold wraps a code span, so the lead-in kept its "**" and never matched its items' text
    body = ("Two limits on the upload path:\n\n- **`services/upload.ts`** (read)\n"
            "  - `startUpload()` retries each chunk three times with a 2 second backoff.\n"
            "  - The gateway rejects bodies over 10 MB with a 413 status.\n")
    assert texts_of(extract_candidates([body])) == [
        "services/upload.ts (read):\n- startUpload() retries each chunk three times with a 2 second backoff.\n"
        "- The gateway rejects bodies over 10 MB with a 413 status."]


def test_a_long_list_is_cut_into_candidates_of_at_most_list_chars_losing_no_item():
    items = [f"The service number {i} listens on port {10000 + i} and answers health checks on /healthz/{i}."
             for i in range(40)]
    body = "The ports of the fleet, decided in the capacity review:\n\n" + "".join(f"- {t}\n" for t in items)
    got = [c for c in texts_of(extract_candidates([body], min_confidence=0.0)) if "\n- " in c]
    lead = "The ports of the fleet, decided in the capacity review:"
    assert len(got) > 1 and all(c.startswith(lead + "\n- ") for c in got)
    assert all(len(c) <= LIST_CHARS for c in got)
    assert [line[2:] for c in got for line in c.splitlines()[1:]] == items   # every item, once, in order


def test_the_kept_sentences_of_one_paragraph_are_one_candidate():
    body = ("The root cause is that the upload worker reads S3_BUCKET_URL at import time, before the settings "
            "module loads the .env file. This is why the worker only fails when it starts before the API.\n\n"
            "Decision: the deploy job pins the worker image to the API image's digest, because the two must ship "
            "together.")
    got = texts_of(extract_candidates([text(body)], min_confidence=0.0))
    assert len(got) == 2, got
    assert "import time" in got[0] and "This is why" in got[0] and "digest" in got[1]


@needs_train
def test_a_training_session_gives_one_candidate_per_paragraph_and_loses_no_kept_sentence():
    """ohmyposh-issue5992-investigation.jsonl (training): every sentence the extractor keeps is in a candidate of
    its record, and the candidates of one record never come from the same paragraph twice; the items of a list
    under a lead-in are together, one a line."""
    texts = read_assistant_texts(TRAIN / "ohmyposh-issue5992-investigation.jsonl", include_user=True).texts
    scorer = load_scorer()
    kept = [v for v in judge(texts, scorer, scorer.threshold) if v.keep]
    cands = extract_candidates(texts)
    paragraphs = defaultdict(list)
    for v in kept:
        holders = [c for c in cands if v.text in members(c.text) and c.source_uuid == texts[v.source].uuid]
        assert len(holders) == 1, v.text
        if v.unit is not None and v.unit.kind == "para" and v.kind != "user" and v.why != "intent":
            paragraphs[(v.source, v.unit.block)].append(v)
    merged = [group for group in paragraphs.values() if len(group) > 1]
    lists = [c for c in cands if "\n- " in c.text]
    items = sum(c.text.count("\n- ") - 1 for c in lists)
    assert merged and lists and len(cands) == len(kept) - sum(len(g) - 1 for g in merged) - items


def members(candidate: str) -> str:
    """A candidate's text with each item of a list it holds written back with its lead-in ("Lead: item")."""
    lead, *items = candidate.split("\n- ")
    return "\n".join([lead] + [f"{lead.removesuffix(':')}: {item}" for item in items])


def test_min_confidence_is_a_probability_floor():
    body = ("The revoke endpoint returns 204 No Content and customInstance calls response.json() on the empty body.\n\n"
            "Gotcha: the CI runner has a case-insensitive filesystem.\n\nNow let me run the tests again.")
    probs = [v.confidence for v in judge([body], load_scorer(), 0.0)]
    assert len(extract_candidates([body], min_confidence=0.0)) == len(probs) == 3
    assert len(extract_candidates([body])) == sum(p >= load_scorer().threshold for p in probs)
    assert max(probs[0], probs[2]) < SIGNAL_CONFIDENCE <= probs[1]
    assert texts_of(extract_candidates([body], min_confidence=SIGNAL_CONFIDENCE)) == [
        "Gotcha: the CI runner has a case-insensitive filesystem."]
    assert extract_candidates([body], min_confidence=0.95) == []


def test_scorer_is_loaded_once():
    assert load_scorer() is load_scorer()


# --- secrets ------------------------------------------------------------------------------------------------------

def test_secrets_are_redacted_before_markdown_cleanup_and_counted():
    got = extract_candidates(["Great! We decided to use the token=sk-abcdefghijklmnopqrstuvwx123 service key "
                              "stored in Vault. Let me commit that."])
    assert [(c.text, c.namespace, c.redacted) for c in got] == [
        ("We decided to use the token=[REDACTED] service key stored in Vault.", "decisions", 1)]
    # A key block spans lines, which the splitter makes separate units: redacting units would leak its body.
    pem = ("We keep the deploy key for the staging box here:\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
           "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
           "-----END OPENSSH PRIVATE KEY-----\nDecision: the staging box only accepts this key from the bastion.")
    everything = extract_candidates([pem], min_confidence=0.0)
    assert everything and not any("b3BlbnNz" in c.text or "PRIVATE KEY" in c.text for c in everything)
    # a [REDACTED] already in the text is kept, not counted
    (c,) = extract_candidates(["Decision: the webhook secret is **[REDACTED]** in the vault, rotated monthly."])
    assert c.text == "Decision: the webhook secret is [REDACTED] in the vault, rotated monthly." and c.redacted == 0


# --- corrections ----------------------------------------------------------------------------------------------------

def test_a_later_correction_drops_nothing_both_statements_are_candidates_in_order():
    first = text("Important: the Redis session TTL for the login cache is 5 minutes.", "a")
    noise = text("Now let me look at the login flow.", "b")
    later = text("Turns out the Redis session TTL for the login cache is 10 minutes.", "c")
    # both kept, in order: the store's changed-fact check links the older as outdated (logged, reversible)
    assert [c.source_uuid for c in extract_candidates([first, noise, later])] == ["a", "c"]
    billing = text("We decided that the billing service uses a 30 second timeout for its upstream calls, because "
                   "Stripe is slow at month end.", "d")
    auth = text("The auth service uses a 5 second timeout for its upstream calls because the identity provider "
                "answers in under 100 ms.", "e")
    assert [c.source_uuid for c in extract_candidates([billing, noise, auth])] == ["d", "e"]
    same = text("Important: the SQLite database is not required for session discovery.", "d")
    again = text("Gotcha: the SQLite database is not required for session discovery.", "e")
    assert [c.source_uuid for c in extract_candidates([same, again])] == ["d", "e"]  # repeats: the store's job


# --- compaction summaries -------------------------------------------------------------------------------------------

SUMMARY = """This session is being continued from a previous conversation that ran out of context.

Summary:
1. Primary Request and Intent:
   The user asked me to run the e2e tests locally.

2. Key Technical Concepts:
   - **Lazy key rotation**: folder keys rotate on the next upload after a revoke
   - Throttler: 10 req/s and 100 req/min per IP

4. Errors and fixes:
   - The revoke endpoint returns 204 and `customInstance.ts` called `response.json()` on the empty body.

6. All user messages:
   - "The revoke endpoint returns 204, please check the client code path in customInstance.ts."

7. Pending Tasks:
   - The checkAndRotateIfNeeded function in folder.service.ts is never called anywhere.
"""


def test_a_summary_without_the_facts_section_is_judged_by_sentence():
    got = extract_candidates([text(SUMMARY, "s1", 900, "summary")])
    texts = texts_of(got)
    assert "Lazy key rotation: folder keys rotate on the next upload after a revoke" in texts  # no section lead
    assert "Throttler: 10 req/s and 100 req/min per IP" in texts
    assert "The revoke endpoint returns 204 and customInstance.ts called response.json() on the empty body." in texts
    assert not any("please check" in t or "never called" in t or "asked me" in t for t in texts)  # skipped sections
    assert not any(t.startswith(("Key Technical Concepts", "Errors and fixes", "Summary")) for t in texts)
    assert all(c.source_uuid == "s1" and c.offset == 900 for c in got)


def test_a_summary_with_the_facts_section_yields_its_lines_only():
    facts = ["Decision: PgBouncer runs in transaction mode because every request opens a session.",
             "The Redis session cache TTL is 10 minutes.",
             "The revoke endpoint returns 204 No Content with an empty body."]
    body = SUMMARY + f"\n9. {LASTING_FACTS_HEADING}:\n" + "".join(f"- {f}\n" for f in facts) + "- Let me know.\n"
    got = extract_candidates([text(body, "s1", 900, "summary")])
    assert texts_of(got) == facts
    assert [c.namespace for c in got][0] == "decisions"
    assert all(c.confidence == FACTS_CONFIDENCE and c.namespace in NAMESPACES for c in got)
    assert extract_candidates([text(body, kind="summary")], min_confidence=0.95) == []
    assert extract_candidates([text(SUMMARY + f"\n{LASTING_FACTS_HEADING}:\n- none\n", kind="summary")]) == []
    # an assistant text with the same words is not a summary: judged by sentence
    assert texts_of(extract_candidates([text(body)])) != facts


@needs_train
def test_recorded_summaries_yield_candidates():
    for path in sorted(TRAIN.glob("*.jsonl")):
        summaries = [t for t in read_assistant_texts(path).texts if t.kind == "summary"]
        for s in summaries:
            got = extract_candidates([s])
            assert 5 <= len(got) <= 60, (path.name, len(got))
            assert not any(c.text.startswith(("User:", "Please continue", "If you need specific")) for c in got)


# --- the synthetic samples: behaviour kept --------------------------------------------------------------------------

@needs_samples
@pytest.mark.parametrize("floor", [None, 0.5])
def test_session_a(floor):
    got = captured(SAMPLES / "transcripts" / "session-a.jsonl", min_confidence=floor)
    assert [ns for ns, _ in got] == ["decisions", "learnings", "patterns", "blockers", "context", "decisions",
                                     "decisions", "learnings"]
    starts = ["We decided to use PostgreSQL connection pooling through PgBouncer", "Turns out the ORM",
              "Pattern: every repository class", "Fixed the issue with the checkout timeouts",
              "Important: the payment webhook must answer within 3 seconds", "We decided to use Redis",
              "We decided to use PostgreSQL connection pooling through PgBouncer",
              "Learned that the load balancer health check"]
    assert all(text.startswith(s) for (_, text), s in zip(got, starts))
    texts = " ".join(text for _, text in got)
    for absent in ("I'll update the settings next", "Yes, two things", "Subagent notes", "The pool is tiny",
                   "The connection pool is capped at 5"):
        assert absent not in texts


@needs_samples
@pytest.mark.parametrize("floor", [None, 0.5])
def test_session_b(floor):
    got = captured(SAMPLES / "transcripts" / "session-b.jsonl", min_confidence=floor)
    assert [ns for ns, _ in got] == ["decisions", "decisions", "patterns", "learnings", "decisions", "patterns"]
    assert got[0][1].startswith("We chose PgBouncer in transaction mode")
    assert "TTL of 10 minutes" in got[1][1]
    assert got[3][1].startswith("Discovered that the retry middleware")
    assert got[4][1].startswith("We decided to never retry non-idempotent requests")
    assert got[5][1].startswith("Convention: migration files are named")
    assert not any("Recap" in t for _, t in got)


@needs_samples
@pytest.mark.parametrize("name", ["coverage-test-fix.jsonl", "python-to-rust-port.jsonl"])
def test_recorded_narration_is_not_captured(name):
    got = captured(SAMPLES / "real" / name)
    assert len(got) <= 3, got
    for _, t in got:
        assert not t.lower().startswith(("now ", "let me", "i'll", "done", "all tests")), t
    if name.startswith("python"):
        assert any(t.endswith("Used Result<T, E> instead of raising exceptions for factorial()") for _, t in got)


# --- the labelled real sessions -------------------------------------------------------------------------------------

@needs_train
def test_labelled_sessions_precision_and_recall():
    """In-sample (the shipped weights saw these sessions): a guard against regressions, not the held-out figure
    (bench/capture/bench_capture.py has that)."""
    scorer = load_scorer()
    tp = fp = fn = 0
    for path in sorted(TRAIN.glob("*.jsonl")):
        labels = defaultdict(list)
        for row in (REPO / "bench/capture/labels" / f"{path.stem}.jsonl").read_text().splitlines():
            r = json.loads(row)
            labels[(r["uuid"], r["sentence_sha"])].append(r["label"])
        texts = [t for t in read_assistant_texts(path).texts if t.kind == "assistant"]
        for v in judge(texts, scorer, scorer.threshold):
            y = labels[(texts[v.source].uuid, v.unit.sha)].pop(0)
            tp, fp, fn = tp + (v.keep and y), fp + (v.keep and not y), fn + (not v.keep and y)
    assert tp / (tp + fp) >= 0.6 and tp / (tp + fn) >= 0.4, (tp, fp, fn)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab #*-_`|>[]()!~\n1. :DecisionTODO"), max_size=300) | st.text(max_size=300))
def test_any_text_extracts_without_error(body):
    for kind in ("assistant", "summary"):
        for c in extract_candidates([text(body, kind=kind)], min_confidence=0.0):
            assert c.text and c.namespace in NAMESPACES and 0.0 <= c.confidence <= 1.0
