"""The PostgreSQL schema (issue 26): the content hash equal to SQLite's for every text, migrations recorded and
refused when newer, every SQLite table and view with its PostgreSQL counterpart, the recent window's pruning."""
from __future__ import annotations

import random
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from subcog_store.db.connection import connect as connect_sqlite
from subcog_store.db.sqlfiles import dialect_dir
from subcog_store.errors import DatabaseError, NotASubcogDatabase
from subcog_store.postgres import casefold
from subcog_store.postgres.connection import connect, display, latest_version, schema_version
from subcog_store.text.normalize import content_hash, normalize

psycopg = pytest.importorskip("psycopg")

WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + \
    "\u2028\u2029\u202f\u205f\u3000"
NOT_WHITESPACE = "\x1c\x1d\x1e\x1f\u200b\u180e\ufeff\u2060"
CORPUS = [
    "Use PostgreSQL", "  use   POSTGRESQL  ", "ÜNÏCÖDÉ FAÇADE", "Ünïcödé façade", "e\u0301 E\u0301 É é",
    "İstanbul", "İ", "ISTANBUL ıi", "Straße STRASSE ß ẞ", "ǅ ǆ Ǆ ǈ", "ﬁle ﬂow", "K Ω Å (Kelvin, Ohm, Ångström)",
    "ΟΔΟΣ", "ΣΙΣΥΦΟΣ ΣΟΦΟΣ", "Σ", "AΣ", "AΣΣ", "ΑΣ'", "ΑΣ'Β", "ΑΣ\u0301", "Α\u0301Σ", "ΑΣ.Β", "1Σ", "Σ1", "ΑΣ Β",
    "ΑΣ\u0345", "\u0345Σ", "ΑΣ\u200dΒ", "ΑΣ\u00adΒ", "ΑΣ:Β",
    "Привет МИР", "ՀԱՅԵՐԵՆ", "ᏣᎳᎩ", "ႠႡႢ", "𐐀𐐁 Deseret", "𞤀 Adlam", "ＦＵＬＬ ＷＩＤＴＨ", "Ⓐ Ⓑ", "Ⅻ ⅻ",
    "数据库使用 PostgreSQL", "データベース", "한국어 텍스트", "😀 emoji 👍🏽 👨‍👩‍👧 🇫🇷", "🅰 🆎",
    "tab\tnew\nline\r\ncr", "vertical\x0bform\x0cfeed", "nbsp\xa0here", "ideo\u3000space", "line\u2028para\u2029",
    "", "   ", "\u3000\xa0", "x" * 5000, "Mixed ΑΒΓ абв ABC ÀÉÎ 中文 😀",
] + [f"a{c}b{c}{c}c{c}" for c in WHITESPACE] + [f"a{c}b" for c in NOT_WHITESPACE]


def pg_hashes(con, texts: list[str]) -> list[str]:
    rows = con.execute("select subcog_content_hash(t) from unnest(%s::text[]) with ordinality u (t, n) order by n",
                       (texts,)).fetchall()
    return [r[0] for r in rows]


@pytest.fixture
def pg(pg_url):
    con = connect(pg_url)
    yield con
    con.close()


def test_the_hash_migration_matches_this_python() -> None:
    path = dialect_dir("postgresql") / "schema" / "001_content_hash.sql"
    assert path.read_text(encoding="utf-8") == casefold.migration_sql(), (
        f"{path} was generated from other Unicode tables than Python {unicodedata.unidata_version}'s: regenerate it "
        "with `python -m subcog_store.postgres.casefold` in a new migration")


def test_the_stored_hash_equals_sqlite_for_the_corpus(pg, tmp_path) -> None:
    sqlite = connect_sqlite(tmp_path / "m.db")
    for i, text in enumerate(CORPUS):
        if not text.strip():
            continue
        pg.execute("insert into memories (id, namespace, content, created_at, updated_at) "
                   "values (%s, %s, %s, '', '')", (f"{i:012x}", f"n{i}", text))
    stored = dict(pg.execute("select content, content_hash from memories").fetchall())
    assert stored and all(stored[t] == content_hash(t) for t in stored)
    assert pg_hashes(pg, CORPUS) == [content_hash(t) for t in CORPUS]
    lite = [sqlite.execute("select subcog_content_hash(?)", (t,)).fetchone()[0] for t in CORPUS]
    assert lite == [content_hash(t) for t in CORPUS]


def test_every_code_point_of_the_cased_planes_lowers_as_in_python(pg) -> None:
    """Every character of planes 0 and 1 (every cased letter lives there), alone and in each sigma context."""
    chars = [chr(cp) for cp in range(1, 0x20000) if not 0xD800 <= cp < 0xE000]
    got = pg.execute("select string_agg(subcog_lower(t), '' order by n) from unnest(%s::text[]) "
                     "with ordinality u (t, n)", (chars,)).fetchone()[0]
    assert got == "".join(c.lower() for c in chars)
    cased, ignorable = casefold.sigma_classes()
    probes = sorted(set(cased[::7] + ignorable[::5] + [0x27, 0x2E, 0x3A, 0x301, 0x345, 0x20, 0x31, 0x4E00]))
    texts = [t for cp in probes for t in ("A" + chr(cp) + "Σ", chr(cp) + "Σ", "ΑΣ" + chr(cp), "ΑΣ" + chr(cp) + "Β")]
    rows = pg.execute("select subcog_lower(t) from unnest(%s::text[]) with ordinality u (t, n) order by n",
                      (texts,)).fetchall()
    assert [r[0] for r in rows] == [t.lower() for t in texts]


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=60)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(_TEXT | st.builds(lambda a, b: a + "Σ" + b, _TEXT, _TEXT), min_size=1, max_size=20))
def test_random_texts_hash_alike(pg, texts) -> None:
    assert pg_hashes(pg, texts) == [content_hash(t) for t in texts]
    norms = pg.execute("select subcog_normalize(t) from unnest(%s::text[]) with ordinality u (t, n) order by n",
                       (texts,)).fetchall()
    assert [r[0] for r in norms] == [normalize(t) for t in texts]
