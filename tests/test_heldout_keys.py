"""bench/capture/heldout.Question.held_by: an answer is the question's keys in the text a reader sees, never in
the memory URNs the prompt hook writes beside each memory (their random ids hold short digit runs)."""
from __future__ import annotations

from bench.capture.heldout import Question


def test_a_key_inside_a_memory_urn_is_not_an_answer():
    q = Question("How has product query performance changed?", "devmembench", [["45"]])
    assert not q.held_by("- [performance] Product queries got faster. (subcog://devmembench/performance/3a145e40fa8a)")
    assert q.held_by("- [performance] Product queries are 45% faster with the new index. (subcog://shop/p/0a1b)")


def test_every_key_group_must_be_held_and_ticks_and_case_are_ignored():
    q = Question("Which cache?", "p", [["redis"], ["ttl of 5 minutes", "five minutes"]])
    assert q.held_by("The session cache is `Redis` with a `TTL` of 5 minutes.")
    assert not q.held_by("The session cache is Redis.")
    assert not Question("Nothing answers this", "p", []).held_by("anything")
