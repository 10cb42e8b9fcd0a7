"""Compaction summaries: the lasting-facts section the PreCompact hook asks for, and the summary format's sections."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subcog_store.extraction.sentences import split_units
from subcog_store.extraction.summary import (KNOWN_SECTIONS, LASTING_FACTS_HEADING, SKIP_SECTIONS, SUMMARY_INSTRUCTION,
                                       facts_section, split_sections, summary_facts)
from subcog_store.extraction.transcript import read_assistant_texts

TRAIN = Path(os.environ.get("SUBCOG_SHARED_DIR") or Path(__file__).resolve().parents[2] / "shared") / "samples" / "real" / "train"
TRAILER = ("If you need specific details from before compaction (like exact code snippets), read the full transcript "
           "at: /home/dev/.claude/projects/x.jsonl\nPlease continue the conversation from where we left off.")
FACTS = ["PgBouncer runs in transaction mode because every request opens its own session.",
         "The Redis session cache TTL is 10 minutes.",
         "Migration files are named YYYYMMDD_HHMM_description.sql."]


def summary(section: str, before: str = "Summary:\n1. Primary Request and Intent:\n   The user wants pooling.\n\n"
            "8. Current Work:\n   Finishing the migration.\n\n") -> str:
    return f"This session is being continued from a previous conversation.\n\n{before}{section}\n\n{TRAILER}"


def test_instruction_names_the_heading_and_is_short():
    assert f'"{LASTING_FACTS_HEADING}:"' in SUMMARY_INSTRUCTION
    assert len(SUMMARY_INSTRUCTION) < 800 and "\n" not in SUMMARY_INSTRUCTION
    for asked in ("decisions", "causes of bugs", "conventions", "constraints", "values", "one per line",
                  "No narration", "15"):
        assert asked in SUMMARY_INSTRUCTION


@pytest.mark.parametrize("heading", [
    f"{LASTING_FACTS_HEADING}:", f"9. {LASTING_FACTS_HEADING}:", f"**{LASTING_FACTS_HEADING}:**",
    f"## {LASTING_FACTS_HEADING}", f"10. **{LASTING_FACTS_HEADING}**:", "Lasting facts:",
])
def test_the_section_is_read_whatever_the_heading_markup(heading):
    text = summary(heading + "\n" + "\n".join(f"- {f}" for f in FACTS))
    assert summary_facts(text) == FACTS


def test_bullets_numbers_markdown_and_plain_lines():
    section = (f"{LASTING_FACTS_HEADING}:\n- **PgBouncer** runs in `transaction` mode for pooling.\n"
               "  * nested: the pool size is now 20 connections\n2. Redis TTL is 10 minutes for sessions\n"
               "- [x] the webhook must answer within 3 seconds")
    assert summary_facts(summary(section)) == [
        "PgBouncer runs in transaction mode for pooling.", "nested: the pool size is now 20 connections",
        "Redis TTL is 10 minutes for sessions", "the webhook must answer within 3 seconds"]
    plain = f"{LASTING_FACTS_HEADING}:\n" + "\n".join(FACTS)
    assert summary_facts(summary(plain)) == FACTS


def test_the_section_ends_at_the_next_section_a_paragraph_or_the_trailer():
    after = summary(f"{LASTING_FACTS_HEADING}:\n- {FACTS[0]}\n\n- {FACTS[1]}\n\n9. Optional Next Step:\n   Run it.")
    assert summary_facts(after) == FACTS[:2]
    para = summary(f"{LASTING_FACTS_HEADING}:\n- {FACTS[0]}\n\nThe rest of this text is an ordinary paragraph.")
    assert summary_facts(para) == FACTS[:1]
    plain = summary(f"{LASTING_FACTS_HEADING}:\n{FACTS[0]}\n\nAn ordinary paragraph after a blank line.")
    assert summary_facts(plain) == FACTS[:1]
    assert not any("continue" in f or "transcript" in f for f in summary_facts(summary(
        f"{LASTING_FACTS_HEADING}:\n" + "\n".join(FACTS))))


def test_none_group_labels_and_fragments_are_not_facts():
    assert facts_section(summary(f"{LASTING_FACTS_HEADING}:\n- none")) == []
    assert facts_section(summary(f"{LASTING_FACTS_HEADING}:\n- None.\n- n/a")) == []
    grouped = summary(f"{LASTING_FACTS_HEADING}:\nDecisions:\n- {FACTS[0]}\nValues:\n- {FACTS[1]}\n- ok\n- yes")
    assert summary_facts(grouped) == FACTS[:2]


def test_no_section_gives_none_and_the_last_section_wins():
    assert facts_section(summary("9. Optional Next Step:\n   Keep going.")) is None
    assert summary_facts(summary("9. Optional Next Step:\n   Keep going.")) == []
    assert summary_facts("") == [] and facts_section("") is None
    quoted = f"{LASTING_FACTS_HEADING}:\n- {FACTS[0]}\n\n5. Problem Solving:\n   x\n\n{LASTING_FACTS_HEADING}:\n- {FACTS[2]}"
    assert summary_facts(summary(quoted)) == [FACTS[2]]


def test_at_most_max_facts():
    from subcog_store.extraction.summary import MAX_FACTS

    many = f"{LASTING_FACTS_HEADING}:\n" + "\n".join(f"- fact number {i} about the cache" for i in range(100))
    assert len(summary_facts(summary(many))) == MAX_FACTS


def test_sections_of_the_summary_format():
    text = summary("9. Optional Next Step:\n   Run the migration on staging.")
    parts = split_sections(text)
    assert "".join(chunk for _, chunk in parts) == text
    assert [t for t, _ in parts] == ["", "summary", "primary request and intent", "current work",
                                     "optional next step"]
    assert {"current work", "optional next step", "pending tasks", "all user messages", "files and code sections",
            "primary request and intent"} == SKIP_SECTIONS
    assert SKIP_SECTIONS < KNOWN_SECTIONS
    # a numbered line of the chronological analysis is not a section title
    assert [t for t, _ in split_sections("Analysis:\n2. The system loaded several files as context:\n")] == [
        "analysis"]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab :-*#\n19.()LastingfcsSumry"), max_size=300) | st.text(max_size=200))
def test_any_text_parses(text):
    assert "".join(chunk for _, chunk in split_sections(text)) == text
    facts = summary_facts(text)
    assert isinstance(facts, list) and all(f and f == f.strip() and "\n" not in f for f in facts)


@pytest.mark.skipif(not TRAIN.is_dir(), reason=f"{TRAIN} not present")
def test_recorded_summaries_have_the_format_sections_and_no_facts_section():
    seen = 0
    for path in sorted(TRAIN.glob("*.jsonl")):
        for t in read_assistant_texts(path).texts:
            if t.kind != "summary":
                continue
            seen += 1
            parts = split_sections(t.text)
            titles = {title for title, _ in parts}
            assert {"summary", "key technical concepts", "pending tasks"} <= titles, titles
            assert facts_section(t.text) is None  # recorded before the PreCompact hook asked for it
            # splitting by section leaves the labelled units as they are
            assert [u.sha for _, chunk in parts for u in split_units(chunk)] == [u.sha for u in split_units(t.text)]
    assert seen == 5
