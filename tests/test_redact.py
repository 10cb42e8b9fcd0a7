"""Secrets never reach the store."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subcog_store.hook.redact import REDACTED, redact

# Fake credentials, built from pieces so that secret scanners do not flag this file.
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
GHP = "ghp_" + "0123456789abcdefghijABCDEFGHIJ012345"
GHO = "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a"
GH_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOp"
OPENAI = "sk-" + "proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789"
ANTHROPIC = "sk-ant-" + "api03-AbCdEfGhIjKlMnOpQrStUvWx0123456789-xyz"
JWT = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
HEX = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
B64 = "q8Zr2Lk9Vd0Xw4Yp7Tn3Hs6Jm1Bc5Fg8"


@pytest.mark.parametrize("secret", [AWS, GHP, GHO, GH_PAT, SLACK, OPENAI, ANTHROPIC, JWT])
def test_vendor_tokens(secret):
    out, n = redact(f"use {secret} for the deploy")
    assert (out, n) == (f"use {REDACTED} for the deploy", 1)


def test_private_key_block():
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc+/=\n-----END RSA PRIVATE KEY-----"
    assert redact(f"key:\n{key}\nafter") == (f"key:\n{REDACTED}\nafter", 1)
    assert redact("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA") == (REDACTED, 1)
    assert redact("-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----")[1] == 0


@pytest.mark.parametrize("text,expected", [
    ("postgres://app:s3cr3t@db.internal:5432/shop", "postgres://app:[REDACTED]@db.internal:5432/shop"),
    ("redis://:hunter2@cache:6379/0", "redis://:[REDACTED]@cache:6379/0"),
    ("mysql+pymysql://root:p%40ss@localhost/db", "mysql+pymysql://root:[REDACTED]@localhost/db"),
])
def test_connection_string_passwords(text, expected):
    assert redact(text) == (expected, 1)


@pytest.mark.parametrize("text,expected", [
    ("password=hunter2", "password=[REDACTED]"),
    ("DB_PASSWORD=correcthorse", "DB_PASSWORD=[REDACTED]"),
    ('api_key: "abcd1234"', 'api_key: "[REDACTED]"'),
    ('{"client_secret": "s3cr3t-value"}', '{"client_secret": "[REDACTED]"}'),
    ("secret = 'x9!k'", "secret = '[REDACTED]'"),
    ("GITHUB_TOKEN=abc123def456", "GITHUB_TOKEN=[REDACTED]"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = [REDACTED]"),
    ("Authorization: Bearer abc.def-ghi_jkl12345", "Authorization: Bearer [REDACTED]"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED]"),
    ("curl -H 'Bearer 0123456789abcdef0123'", "curl -H 'Bearer [REDACTED]'"),
])
def test_assignments_and_headers(text, expected):
    assert redact(text) == (expected, 1)


def test_high_entropy_strings_next_to_secret_words():
    assert redact(f"the signing secret is {HEX}") == (f"the signing secret is {REDACTED}", 1)
    assert redact(f"webhook key {B64} rotates monthly") == (f"webhook key {REDACTED} rotates monthly", 1)
    assert redact(f"commit {HEX[:40]} fixed it")[1] == 0  # a SHA in prose, no key word near it


@pytest.mark.parametrize("text", [
    "We decided to use PgBouncer in transaction mode.",
    "See https://example.com:8080/docs?page=2#auth and http://localhost:3000/",
    "Use a Bearer token in the Authorization header; we use Bearer authentication.",
    "password: must be at least 12 characters long",
    "max_tokens=4096, tokenizer=fast, input_tokens: 1200",
    "token=None, password=os.environ['DB_PASSWORD'], secret=${SECRET}, api_key=<your key>",
    "The password reset flow sends a token by email.",
    "git clone git@github.com:org/repo.git and ssh://git@host/repo",
    "Tasks: task-list-abcdefghijklmnopqrstuvwxyz is a slug, ask-me-anything too.",
    "The key insight is that the cache is per process.",
    "token : http://x.org/a (the docs page for tokens)",
])
def test_ordinary_text_is_untouched(text):
    assert redact(text) == (text, 0)


def test_counts_several_and_is_idempotent():
    text = f"keys: {AWS} and {GHP}; db postgres://u:pw123@h/db; password=hunter2"
    out, n = redact(text)
    assert n == 4 and AWS not in out and "hunter2" not in out and "pw123" not in out
    assert redact(out) == (out, 0)


WORDS = ["the", "cache", "is", "fast", "we", "decided", "to", "use", "Redis", "because", "of", "latency",
         "PgBouncer", "tests", "pass", "key", "token", "password", "reset", "flow", "2024", "42", "http://x.org/a",
         "(see", "docs)", "commit", "abc123", "connection", "pool", "-", ",", ".", ":"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=40).map(" ".join))
def test_prose_survives(text):
    assert redact(text) == (text, 0)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_redaction_is_idempotent(text):
    out, _ = redact(text)
    assert redact(out) == (out, 0)
