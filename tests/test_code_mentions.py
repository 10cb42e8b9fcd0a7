"""What a memory's text names in code (code/mentions.py) and what a file says about it (code/claims.py): pure
functions, no project, no store."""
from __future__ import annotations

import pytest

from subcog_store.code import claims
from subcog_store.code.mentions import MAX_MENTIONS, Mention, extract


def kinds(text: str, kind: str) -> list:
    return [(m.name, m.value) if kind == "value" else m.name for m in extract(text) if m.kind == kind]


@pytest.mark.parametrize("text, paths", [
    ("`session_ttl` is 90 in config/app.yaml.", ["config/app.yaml"]),
    ("See `lib/render.py:12:3` and ./bin/run, then app.yaml.", ["lib/render.py", "./bin/run", "app.yaml"]),
    ("subcog_store.hook.capture calls it", ["subcog_store/hook/capture"]),
    ("The `Makefile` target", ["Makefile"]),
    ("e.g. version v1.2.3 or 3.14, see https://example.com/docs/page.html or mail a@b.io", []),
    ("/etc/hosts and ~/notes/todo.txt", ["/etc/hosts", "~/notes/todo.txt"]),
])
def test_paths(text, paths):
    assert kinds(text, "path") == paths


def test_symbols_qualified_and_plain():
    found = extract("`TranscriptRenderer.render/2` takes `session_cwd`; ReviewTokenStore keeps tokens; "
                    "call capture_many() and MAX_RETRIES.")
    names = [m.name for m in found if m.kind == "symbol"]
    assert names[:3] == ["TranscriptRenderer", "render", "session_cwd"]
    assert {"ReviewTokenStore", "capture_many", "MAX_RETRIES"} <= set(names)
    render = next(m for m in found if m.name == "render")
    assert render.owner == "TranscriptRenderer"


def test_common_words_are_never_symbols():
    assert kinds("`true`, `self`, `return`, `id`, `os`", "symbol") == []


@pytest.mark.parametrize("text, values", [
    ("`session_ttl` is 90 in config/app.yaml", [("session_ttl", "90")]),
    ("The pool_size setting is 20 connections.", [("pool_size", "20")]),
    ("TTL_SECONDS is 90.", [("TTL_SECONDS", "90")]),
    ("We set max_connections to 200 in postgresql.conf", [("max_connections", "200")]),
    ("`log_level` is info in config/app.yaml; debug is noisy.", [("log_level", "info")]),
    ("`DEBUG = false`, `retries: 3`", [("DEBUG", "false"), ("retries", "3")]),
    ("the timeout is 30s", [("timeout", "30s")]),
    ("`mode` is important in config/app.yaml", []),            # a predicate, not a value
    ("`render` is slow.", []),
    ("see config/app.yaml:12", []),                             # a line number, not a value
])
def test_values(text, values):
    assert kinds(text, "value") == values


def test_plain_word_keys_are_not_code():
    by_name = {m.name: m for m in extract("the timeout is 30 and `request_timeout` is 30") if m.kind == "value"}
    assert not by_name["timeout"].ticked and by_name["request_timeout"].ticked


def test_a_text_naming_a_thousand_files_yields_at_most_the_cap():
    text = " ".join(f"src/module_{i}/file_{i}.py" for i in range(1000))
    found = extract(text)
    assert sum(m.kind == "path" for m in found) == MAX_MENTIONS
    assert all(isinstance(m, Mention) for m in found)


@pytest.mark.parametrize("text, key, values", [
    ("# c\nsession_ttl: 120\nother: 1\n", "session_ttl", ["120"]),
    ('export SESSION_TTL="90"\n', "SESSION_TTL", ["90"]),
    ('  "pool_size": 20,\n', "pool_size", ["20"]),
    ('{"pool_size":20}', "pool_size", ["20"]),
    ("POOL: int = 20  # comment\n", "POOL", ["20"]),
    ("  @ttl 90_000\n", "ttl", ["90_000"]),
    ("const TTL = 90;\n", "TTL", ["90"]),
    ('log_level = "info"\n', "log_level", ["info"]),
    ("database:\n  pool_size: 5\n", "database.pool_size", ["5"]),
    ("ttl = 90 * 60\n", "ttl", []),                   # computed: not a literal
    ("ttl := 30 * time.Second\n", "ttl", []),
    ("if ttl == 5:\n", "ttl", []),                    # a comparison, not an assignment
])
def test_values_of(text, key, values):
    assert claims.values_of(text, key) == values


@pytest.mark.parametrize("said, found, same", [
    ("90", "90", True), ("90 s", "90000", True), ("90 seconds", "90", True), ("10 minutes", "600", True),
    ("30s", "30", True), ("true", "yes", True), ("enabled", "true", True), ("info", '"info"', True),
    ("INFO", "info", True), ("1,000", "1000", True), ("2 GB", "2048", True), ("v1.2", "1.2", True),
    ("90", "120", False), ("10 minutes", "601", False), ("info", "debug", False), ("true", "false", False),
    ("5", "50", False),
])
def test_same_value_reads_a_value_every_way_it_may_be_written(said, found, same):
    assert claims.same_value(said, found) is same


def test_value_problem_words():
    assert claims.value_problem("session_ttl: 120\n", "session_ttl", "90", "config/app.yaml") == \
        "`session_ttl` is 120 in config/app.yaml, the memory says 90"
    assert claims.value_problem("session_ttl: 90\n", "session_ttl", "90", "config/app.yaml") is None
    assert claims.value_problem("other: 1\n", "session_ttl", "90", "config/app.yaml") == \
        "`session_ttl` is no longer set in config/app.yaml"


def test_definitions():
    assert claims.defines("def render_page(x):", "render_page")
    assert claims.defines("defmodule MyApp.ReviewTokenStore do", "ReviewTokenStore")
    assert claims.defines("MAX_RETRIES = 3", "MAX_RETRIES")
    assert not claims.defines("x = render_page(y)", "render_page")
    assert claims.appears("x = render_page(y)", "render_page") and not claims.appears("render_pages", "render_page")
