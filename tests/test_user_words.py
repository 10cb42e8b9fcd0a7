"""The user's words as facts (`extraction/user_words.py`): which sentences the user typed are kept, in what words,
in which namespace and scope. Plain pattern tests; what the capture and the prompt hook make of them, with the real
model, is in test_capture_facts.py."""
from __future__ import annotations

import pytest

from subcog_store.extraction.extract import extract_candidates, load_user_scorer
from subcog_store.extraction.sentences import split_units
from subcog_store.extraction.transcript import AssistantText
from subcog_store.extraction.user_words import PROJECT, USER, document_title, user_fact

PLAN = """Implement the following plan:

# Plan: Billing Retries

## Context

Failed card charges are retried three times with exponential backoff, starting at 30 seconds.

## Design Decisions (from user)

- Retry storage: a retry_count column on the charges table, not a separate queue
- Give-up rule: after the third failure the invoice is marked uncollectible

## Changes

### 1. Add the column

Add retry_count to the charges table in the next migration.

## Verification

- Run the billing tests
"""


def facts(text: str) -> list:
    title = document_title(text)
    return [user_fact(u, title) for u in split_units(text, lenient=True)]


def kept(text: str) -> list[str]:
    return [f.text for f in facts(text) if f is not None]


def test_a_pasted_plan_keeps_its_context_and_decisions_with_its_title_not_its_steps():
    got = [f for f in facts(PLAN) if f is not None]
    assert [f.text for f in got] == [
        "Billing Retries, Context: Failed card charges are retried three times with exponential backoff, starting "
        "at 30 seconds.",
        "Billing Retries, Design Decisions (from user): Retry storage: a retry_count column on the charges table, "
        "not a separate queue.",
        "Billing Retries, Design Decisions (from user): Give-up rule: after the third failure the invoice is "
        "marked uncollectible.",
    ]
    assert {(f.namespace, f.scope) for f in got} == {("decisions", PROJECT)}


def test_a_plan_without_a_title_keeps_the_heading_alone_and_a_question_under_it_is_not_a_fact():
    text = "## Goal\n\nExports are streamed to disk, never built in memory.\n\nShould the zip be streamed too?\n"
    assert kept(text) == ["Goal: Exports are streamed to disk, never built in memory."]


@pytest.mark.parametrize("text, title", [("# Plan: Billing Retries\n\ntext", "Billing Retries"),
                                         ("intro\n\n# Remediation Impact Evaluation #\n", "Remediation Impact Evaluation"),
                                         ("## Context only\n\ntext", ""), ("no heading at all", "")])
def test_the_title_of_a_pasted_document(text, title):
    assert document_title(text) == title


@pytest.mark.parametrize("text", [
    "Use your best guess on what looks cleanest.",           # a request for this turn (TRAIN: 1 fact in 8)
    "Use the writing clearly and concisely skill.",
    "Use this when a scanner reports the authMd check is failing.",
    "can you look at the failing test?",
    "commit and push all changes",
])
def test_requests_and_an_imperative_use_are_not_kept(text):
    assert kept(text) == []


def test_the_shipped_choices_and_preferences_still_stand_alone():
    (stack,) = facts("I want to use FastAPI with PostgreSQL, Redis for caching, and Docker. Python 3.12.")
    assert stack.text == "The project uses FastAPI with PostgreSQL, Redis for caching, and Docker, Python 3.12."
    assert (stack.namespace, stack.scope) == ("decisions", PROJECT)
    (hints,) = facts("Always add type hints to Python functions.")
    assert hints.text == "Developer preference: always add type hints to Python functions."
    assert (hints.namespace, hints.scope) == ("patterns", USER)
    (wrap,) = facts("yes and do not wrap long lines in the markdown as that ruins the rendering on GitHub")
    assert wrap.text.startswith("Developer preference: do not wrap long lines") and wrap.scope == USER
    (named,) = facts("Never edit src/config/default.go by hand.")
    assert named.scope == PROJECT                              # names a file of this project: stays home


@pytest.mark.parametrize("text, stored, namespace, scope", [
    ("Stack: Expo SDK 51 with React Native, TypeScript in strict mode, and Supabase for auth.",
     "Stack: Expo SDK 51 with React Native, TypeScript in strict mode, and Supabase for auth.", "decisions", PROJECT),
    ("House rules: PSR-12 formatting with Pint, money stored as integer cents.",
     "House rules: PSR-12 formatting with Pint, money stored as integer cents.", "patterns", PROJECT),
    ("Code style I care about: named exports only, no default exports.",
     "Code style I care about: named exports only, no default exports.", "patterns", USER),
    ("Let's build ferrotrack, a command-line time tracker for freelancers.",
     "The project: ferrotrack, a command-line time tracker for freelancers.", "context", PROJECT),
    ("Also lower the wave alert threshold to 3.5 metres, the harbour master asked for it.",
     "Decision: lower the wave alert threshold to 3.5 metres, the harbour master asked for it.", "decisions", PROJECT),
    ("Para los pagos vamos a usar Stripe Checkout.", "Para los pagos vamos a usar Stripe Checkout.", "decisions",
     PROJECT),
])
def test_the_forms_the_training_sessions_chose(text, stored, namespace, scope):
    (fact,) = facts(text)
    assert (fact.text, fact.namespace, fact.scope) == (stored, namespace, scope)


@pytest.mark.parametrize("text", [
    "What's the stack: Go or Rust?",                       # a question, whatever its form
    "Can you change the timeout to 30 seconds?",
    "change it back",                                      # no value: a request
    "I want you to do an analysis of the gradient segment.",
])
def test_questions_and_requests_in_the_chosen_forms_are_not_kept(text):
    assert kept(text) == []


def test_bad_input_gives_no_error_and_no_fact_from_code_or_a_dump():
    code = "```python\n" + "\n".join(f"def handler_{i}(request):\n    return {i}" for i in range(200)) + "\n```"
    assert kept(code) == []
    dump = "## Context\n\nThe cache key is " + " and ".join(f"field{i}" for i in range(8000)) + "."
    assert len(dump.encode()) >= 64 << 10
    (long_fact,) = kept(dump)        # kept by the rule; the extractor's MAX_CHARS decides it is a dump
    assert long_fact.startswith("Context: The cache key is field0 and")
    assert kept("ログは常にJSON形式で出力する。") == ["開発者の方針: ログは常にJSON形式で出力する。"]
    assert kept("ログをJSON形式で出力してください。") == []        # a request for this turn


def said(*texts: str) -> list[str]:
    """What a capture keeps of the user's messages `texts` (the rules, then the learned judge)."""
    return [c.text for c in extract_candidates([AssistantText(t, f"u{i}", None, "s", i + 1, False, kind="user")
                                                for i, t in enumerate(texts)])]


def test_the_learned_judge_keeps_a_stated_fact_the_rules_miss_as_typed_and_never_a_request():
    judge = load_user_scorer()
    assert 0.5 <= judge.threshold < 1 and judge.meta["trained_on"]["script"].endswith("train_user_words.py learn")
    fact = "internal changes are never breaking changes, only configuration behaviour is."
    assert user_fact(split_units(fact, lenient=True)[0]) is None                     # no rule's form
    assert said(fact, "commit and push all changes", "can you look at the failing test?",
                "Read the output file to retrieve the result: /tmp/tasks/b1.output") == [fact]
