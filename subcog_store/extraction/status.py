"""Status is not a memory: the state of the work at the moment it was written ("currently has a compile error",
"NOT committed", "all 20 tests pass", "PR #75 is merged", "Task 6 is blocked") is false or useless a week later.

`is_status(sentence)` is a fixed rule, written from the labelling guideline and the issue's examples before it
was measured (the held-out sessions only judge it); it vetoes a sentence whatever the scorer says.
"""
from __future__ import annotations

import re

from subcog_store.text.lazy_regex import LazyPattern

__all__ = ["is_status"]

_I = re.IGNORECASE
_STATE = LazyPattern(
    r"\b(?:currently|at the moment|right now|as of (?:now|today)|so far"
    r"|not (?:yet )?(?:been )?(?:committed|pushed|merged|deployed|released|tested|run|verified|fixed|implemented)"
    r"|(?:has|have)n't (?:yet )?been (?:run|tested|committed|pushed|merged|verified)|(?:is|are) (?:now )?(?:un)?staged\b"
    r"|(?:un|not )(?:committed|staged|tracked) changes|uncommitted|unstaged|still (?:failing|broken|red|running|open"
    r"|pending|in progress|waiting|unresolved)|in progress|pending (?:review|merge)|ready for review"
    r"|(?:is|are) (?:now )?(?:pending|done|complete|finished)\b(?! by default| when| if| once)"
    r"|(?:all|both|the)? ?(?:\d+ )?(?:unit |integration |e2e )?tests? (?:now )?(?:pass(?:es|ed|ing)?|fail(?:s|ed|ing)?"
    r"|are (?:passing|failing|green))|lint(?:s|ing|er)? (?:is )?(?:clean|passes|passing)|0 issues"
    r"|builds? (?:passes|succeeds|succeeded|is green|is clean)|compiles? cleanly|ci (?:is )?(?:green|red|passing|failing)"
    r"|(?:committed|pushed|amended|merged|rebased)(?: (?:and|&) pushed)? (?:as|in|to|at|onto) \S*[0-9a-f]{7}"
    r"|(?:pr|pull request|issue|ticket|epic) #?\d+ (?:is |was |has been )?(?:now )?(?:merged|open|opened|created|closed"
    r"|approved|resolved|updated|ready)|(?:pr|pull request) (?:created|opened|merged|is up)"
    r"|\d+ commits? (?:ahead|behind)|ahead of (?:origin|main)|behind (?:origin|main)|up to date with)\b", _I)
_TASK = LazyPattern(r"^(?:task|step|todo|t|phase|milestone|m)\s*#?\d+(?:\.\d+)?\b[^.]{0,40}\b(?:is |are )?"
                    r"(?:blocked|done|complete|completed|pending|in progress|started|finished|next)\b", _I)
_TRACKER = LazyPattern(r"\b[A-Z][A-Z0-9]+-\d+\b[^.]{0,30}\b(?:is |was )?(?:in review|in progress|done|closed|open"
                       r"|merged|blocked|resolved)\b")
# Japanese: done, finished, succeeded, passed, created / committed / merged / pushed (a report of what just happened)
_CJK_STATE = LazyPattern(r"(?:完了(?:しました|です|済み)?|済み|成功しました|パスしました|通過(?:しました|済み)|作成しました"
                         r"|コミットしました|マージ(?:しました|済み)|プッシュしました|push しました|未コミット|進行中|対応中"
                         r"|現在[、の]|現状[、は])")


def is_status(sentence: str) -> bool:
    """True when the sentence reports the state of the work (see the module docstring)."""
    return bool(_STATE.search(sentence) or _TASK.search(sentence) or _TRACKER.search(sentence)
                or (not sentence.isascii() and _CJK_STATE.search(sentence)))   # every word of it is Japanese
