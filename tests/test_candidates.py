"""From assistant text to memory candidates."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subcog_store.hook.extract import Candidate, extract_candidates, split_paragraphs
from subcog_store.hook.transcript import AssistantText, read_assistant_texts

SHARED = Path(os.environ.get("SUBCOG_SHARED_DIR") or Path(__file__).resolve().parents[2] / "shared")
SAMPLES = SHARED / "samples"
needs_samples = pytest.mark.skipif(not SAMPLES.is_dir(), reason=f"{SAMPLES} not present")


def captured(path: Path) -> list[tuple[str, str]]:
    return [(c.namespace, c.text) for c in extract_candidates(read_assistant_texts(path).texts)]


# --- markdown ----------------------------------------------------------------------------------------------

def test_split_on_blank_lines_and_fold_whitespace():
    assert split_paragraphs("one\ntwo   three\n\n\n  four\t five \n \n") == ["one two three", "four five"]
    assert split_paragraphs("a\r\nb\r\n\r\nc") == ["a b", "c"]
    assert split_paragraphs("") == [] and split_paragraphs("\n\n   \n") == []


def test_markdown_noise_is_removed():
    text = (
        "## The **cache** decision ##\n\n"
        "We chose `Redis` over [Memcached](https://memcached.org) because of __persistence__.\n\n"
        "> Note: *quoted* text ~~old~~\n\n"
        "![diagram](d.png) shows it."
    )
    assert split_paragraphs(text) == [
        "The cache decision",
        "We chose Redis over Memcached because of persistence.",
        "Note: quoted text old",
        "diagram shows it.",
    ]


def test_lists_give_one_paragraph_per_item():
    text = "Changes:\n- first item\n  continues here\n* second\n1. third\n2) fourth\n- [x] done box"
    assert split_paragraphs(text) == ["Changes:", "first item continues here", "second", "third", "fourth",
                                      "done box"]


def test_code_blocks_tables_and_rules_are_dropped():
    text = (
        "Before.\n```python\nx = 1\n\ny = 2\n```\nAfter.\n\n"
        "| a | b |\n|---|:-:|\n| 1 | 2 |\n\n---\n\n~~~\nunterminated fence\n\nstill code"
    )
    assert split_paragraphs(text) == ["Before.", "After."]


def test_code_spans_keep_their_text_and_snake_case_survives():
    assert split_paragraphs("Call `__init__` and my_var_name, not *this*.") == [
        "Call __init__ and my_var_name, not this."]
    assert split_paragraphs("Use ``a `b` c`` here") == ["Use a `b` c here"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab #*-_`|>[]()!~\n1. "), max_size=300) | st.text(max_size=300))
def test_split_paragraphs_never_raises_and_is_folded(text):
    for p in split_paragraphs(text):
        assert p and p == " ".join(p.split())


# --- extraction --------------------------------------------------------------------------------------------

def test_extract_thresholds_and_source():
    t = AssistantText(text="Now let me run the tests.\n\nGotcha: the CI runner has a case-insensitive filesystem.\n\n"
                           "TIL: short.", uuid="u1", timestamp=None, session_id=None, line_no=1, is_sidechain=False)
    got = extract_candidates([t])
    assert got == [Candidate("Gotcha: the CI runner has a case-insensitive filesystem.", "learnings", 0.9, "u1")]
    assert extract_candidates([t], min_chars=5)[-1].text == "TIL: short."
    assert extract_candidates([t], min_confidence=0.95) == []


def test_extract_strips_narration_and_secrets():
    got = extract_candidates(["Great! We decided to use the token=sk-abcdefghijklmnopqrstuvwx123 service key "
                              "stored in Vault. Let me commit that."])
    assert len(got) == 1 and got[0].namespace == "decisions"
    assert got[0].text == "We decided to use the token=[REDACTED] service key stored in Vault."


@needs_samples
def test_session_a():
    got = captured(SAMPLES / "transcripts" / "session-a.jsonl")
    assert [ns for ns, _ in got] == ["decisions", "learnings", "patterns", "blockers", "context", "decisions",
                                     "decisions", "learnings"]
    starts = ["We decided to use PostgreSQL connection pooling through PgBouncer", "Turns out the ORM",
              "Pattern: every repository class", "Fixed the issue with the checkout timeouts",
              "Important: the payment webhook must answer within 3 seconds", "We decided to use Redis",
              "We decided to use PostgreSQL connection pooling through PgBouncer",
              "Learned that the load balancer health check"]
    assert all(text.startswith(s) for (_, text), s in zip(got, starts))
    texts = " ".join(text for _, text in got)
    for absent in ("I'll update the settings next", "Yes, two things", "Subagent notes", "The pool is tiny"):
        assert absent not in texts
    assert all(t != "ok" for _, t in got)


@needs_samples
def test_session_b():
    got = captured(SAMPLES / "transcripts" / "session-b.jsonl")
    assert got == [
        ("decisions", got[0][1]), ("decisions", got[1][1]), ("patterns", got[2][1]),
        ("learnings", got[3][1]), ("decisions", got[4][1]), ("patterns", got[5][1]),
    ]
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
    assert len(got) <= 1, got
    for _, text in got:
        assert not text.lower().startswith(("now ", "let me", "i'll", "done", "all tests"))
