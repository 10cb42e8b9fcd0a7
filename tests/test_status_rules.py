"""Status is not a memory (extraction/status.py): each rule on sentences like those its training evidence holds,
and lasting facts that share its words but state no state of the work."""
from __future__ import annotations

import pytest

from subcog_store.extraction.status import is_status, status_rule


@pytest.mark.parametrize(("sentence", "rule"), [
    ("The checkout module currently has a compile error in the cart reducer.", "state"),
    ("The user asked to run the e2e tests locally instead of pushing to GitHub.", "session"),
    ("Was in the middle of investigating the rotation check when the summary was requested.", "session"),
    ("Overall Status: ✅ HEALTHY - no immediate threats detected.", "checks"),
    ("Looks clean: all 3 pre-merge checks passed, no actionable comments.", "checks"),
    ("Both files pass markdownlint and Vale.", "checks"),
    ("Three things need fixing: the schema, the docs and the learnings file.", "pending"),
    ("Now update the render to use the fetched recipients.", "pending"),
    ("Min-width collapse landed in 2e35bd09, verified end to end.", "commit"),
    ("Both fixed and committed, tree clean.", "commit"),
    ("Current Work: debugging the upload 500 errors.", "section"),
    ("The staging environment for the release doesn't exist yet.", "not-yet"),
    ("The MFA phase has not been started: its plan directory is empty.", "not-yet"),
])
def test_a_status_sentence_names_its_rule(sentence, rule):
    assert status_rule(sentence) == rule


def test_an_item_under_a_status_section_is_status():
    assert status_rule("Windows Defender real-time protection is off.", "**Remaining Gaps:**") == "section"
    assert status_rule("Windows Defender real-time protection is off.", "Key findings of the audit:") is None


@pytest.mark.parametrize("sentence", [
    "The user table keeps one row per account, keyed by the email address.",
    "The health endpoint returns 200 while the database answers, else 503.",
    "The loader needs the SUBCOG_DB variable only when no --db flag is given.",
    "Investigations of slow queries use EXPLAIN ANALYZE on a copy of production.",
    "The fix direction matters less than the lock order: always take the scope lock first.",
    "A commit message names the issue it closes.",
])
def test_a_lasting_fact_is_not_status(sentence):
    assert not is_status(sentence)
