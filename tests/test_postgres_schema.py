"""The PostgreSQL schema (issue 26): the content hash equal to SQLite's for every text, migrations recorded and
refused when newer, every SQLite table and view with its PostgreSQL counterpart, the recent window's pruning."""
from __future__ import annotations

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


# SQLite objects without a PostgreSQL table or view of the same name, each with the reason. Anything else a
# migration of sql/schema/ adds must come with its counterpart in sql/postgresql/schema/ (this test fails until).
NO_COUNTERPART = {
    "memories_fts": "the FTS5 index is memories.fts (a generated tsvector) with a GIN index",
    "memory_bits": "sign-bit candidates for vec0; PostgreSQL scans a scope's vectors exactly with pgvector",
    "bits_log": "feeds the in-memory sign-bit cache of db/bitcache.py, which the PostgreSQL KNN does not use",
    "session_text_fts": "the FTS5 index is session_text.fts (a generated tsvector) with a GIN index",
}
# Columns of SQLite tables that PostgreSQL keeps elsewhere (table -> column -> reason).
COLUMN_DIFFERENCES = {("memory_vectors", "embedding"): "vector(384) instead of vec0's float[384]"}


def sqlite_objects(path: Path) -> dict[str, list[str]]:
    """Tables and views of a fresh, fully migrated SQLite store (virtual tables' shadow tables left out)."""
    con = connect_sqlite(path)
    names = [r[0] for r in con.execute("select name from sqlite_master where type in ('table', 'view') "
                                       "and name not like 'sqlite_%'")]
    virtual = [r[0] for r in con.execute("select name from sqlite_master where sql like 'create virtual table%'")]
    names = [n for n in names if not any(n.startswith(v + "_") for v in virtual)]
    return {n: [r[1] for r in con.execute(f"pragma table_info({n})")] for n in names}


def pg_objects(con) -> dict[str, list[str]]:
    rows = con.execute("select table_name, column_name from information_schema.columns "
                       "where table_schema = current_schema() order by table_name, ordinal_position").fetchall()
    out: dict[str, list[str]] = {}
    for table, column in rows:
        out.setdefault(table, []).append(column)
    return out


def test_every_sqlite_table_and_view_has_a_postgresql_counterpart(pg, tmp_path) -> None:
    lite, post = sqlite_objects(tmp_path / "m.db"), pg_objects(pg)
    missing = sorted(set(lite) - set(post) - set(NO_COUNTERPART))
    assert not missing, f"SQLite tables or views with no PostgreSQL counterpart in sql/postgresql/schema/: {missing}"
    assert set(NO_COUNTERPART) <= set(lite), "a listed exception no longer exists in SQLite: drop it from the list"
    for name in sorted(set(lite) & set(post)):
        gone = [c for c in lite[name] if c not in post[name] and (name, c) not in COLUMN_DIFFERENCES]
        assert not gone, f"{name}: SQLite columns missing in PostgreSQL: {gone}"
    views = [r[0] for r in connect_sqlite(tmp_path / "m.db").execute("select name from sqlite_master "
                                                                       "where type = 'view'")]
    for view in views:
        assert post[view] == lite[view], f"view {view}: columns differ"


def test_views_read_from_psql(pg, pg_url) -> None:
    """The audit views answer in the stock psql of the bundled server (no extension or function of ours needed)."""
    import shutil
    import subprocess

    pg.execute("insert into memories (id, namespace, content, created_at, updated_at) "
               "values ('0123456789ab', 'decisions', 'Use PgBouncer', '2026-01-01T00:00:00.000Z', '')")
    psql = shutil.which("psql") or _bundled("psql")
    if psql is None:
        pytest.skip("no psql binary (neither on PATH nor in the pgserver wheel)")
    out = subprocess.run([psql, pg_url, "-At", "-c", "select urn, hash_tag from v_memories"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"subcog://project/decisions/0123456789ab|hash:sha256:{content_hash('Use PgBouncer')[:16]}"
    for view in ("v_check_counts", "v_skip_counts", "v_check_durations", "v_recent_window", "v_decisions",
                 "v_unreviewed", "v_decision_members", "v_retired", "v_namespace_counts", "v_recall",
                 "v_recall_sessions"):
        out = subprocess.run([psql, pg_url, "-At", "-c", f"select * from {view}"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, (view, out.stderr)


def _bundled(name: str) -> str | None:
    try:
        import pgserver
    except ImportError:
        return None
    path = Path(pgserver.__file__).parent / "pginstall" / "bin" / name
    return str(path) if path.exists() else None


def test_migrations_are_recorded_and_a_second_open_applies_nothing(pg, pg_url) -> None:
    rows = pg.execute("select version, name from schema_migrations order by version").fetchall()
    assert [r[0] for r in rows] == list(range(1, latest_version() + 1))
    assert [r[1] for r in rows][:2] == ["content_hash", "store"]
    assert schema_version(pg) == latest_version()
    again = connect(pg_url)
    assert again.execute("select count(*) from schema_migrations").fetchone()[0] == latest_version()
    again.close()


def test_a_newer_schema_is_refused(pg, pg_url) -> None:
    pg.execute("insert into schema_migrations (version, name) values (%s, 'from_the_future')", (latest_version() + 1,))
    with pytest.raises(DatabaseError, match="newer than this subcog-store knows"):
        connect(pg_url)


def test_a_schema_of_another_program_is_left_untouched(pg_server) -> None:
    url = pg_server.database()
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("create table invoices (id int)")
    with pytest.raises(NotASubcogDatabase, match="left untouched"):
        connect(url)
    with psycopg.connect(url, autocommit=True) as con:
        assert con.execute("select to_regclass('memories')").fetchone()[0] is None
    pg_server.drop(url)


def test_the_recent_window_is_pruned_by_age_and_capacity_with_the_session_override(pg) -> None:
    insert = "insert into recent_captures (content_hash, namespace, domain, captured_at) values (%s, 'n', 'd', %s)"
    pg.execute("update settings set value = '60' where key = 'dedup_time_window_secs'")
    for i, at in enumerate([1000.0, 1029.0, 1059.0]):
        pg.execute(insert, (f"h{i}", at))
    assert pg.execute("select count(*) from recent_captures").fetchone()[0] == 3
    pg.execute(insert, ("h3", 1090.0))              # 1000 and 1030 are now older than 60 s
    assert [r[0] for r in pg.execute("select content_hash from recent_captures order by id")] == ["h2", "h3"]
    pg.execute("update settings set value = '3' where key = 'dedup_cache_capacity'")
    for i in range(4, 8):
        pg.execute(insert, (f"h{i}", 1090.0 + i))
    assert [r[0] for r in pg.execute("select content_hash from recent_captures order by id")] == ["h5", "h6", "h7"]
    pg.execute("set subcog.dedup_time_window_secs = '1'")   # this session's override, never the shared table
    pg.execute(insert, ("h8", 1097.5))
    assert [r[0] for r in pg.execute("select content_hash from recent_captures order by id")] == ["h7", "h8"]
    assert pg.execute("select value from settings where key = 'dedup_time_window_secs'").fetchone()[0] == "60"


def test_the_password_never_shows(pg_server) -> None:
    url = "postgresql://alice:s3cret-pw@db.example:5433/team?sslmode=require"
    assert "s3cret" not in display(url) and display(url) == "postgresql://alice@db.example:5433/team"
    assert "s3cret" not in display("host=db.example user=alice password=s3cret-pw dbname=team")
    assert "s3cret" not in display("postgresql://alice@db.example/team?password=s3cret-pw")
    assert display("service=team") == "service=team"
    assert "s3cret" not in display("postgresql://alice:s3cret-pw@[bad")
    bad = pg_server.url.replace("postgres:", "postgres:s3cret-pw", 1).replace("/postgres?", "/no_such_db?", 1)
    with pytest.raises(DatabaseError) as caught:
        connect(bad)
    assert "s3cret" not in str(caught.value) and "no_such_db" in str(caught.value)


def test_a_server_that_is_down_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(DatabaseError, match="cannot be reached") as caught:
        connect(f"postgresql://alice:pw-123@/team?host={tmp_path}")
    assert "pw-123" not in str(caught.value)


def test_a_silent_server_costs_at_most_the_connect_timeout() -> None:
    """A host that accepts the connection and never answers (a hung server, a black-holing proxy): the open
    gives up after its connect timeout, to the fraction of a second (libpq's own rounds up to 2 s), so a hook
    can keep to its budget. The timeout a URL names wins over the default."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    try:
        with pytest.raises(DatabaseError, match="cannot be reached") as caught:
            connect(f"postgresql://alice@127.0.0.1:{port}/team", connect_timeout=0.3)
        assert "no answer in the 0.3 s its connect_timeout allows" in str(caught.value)
        with pytest.raises(DatabaseError, match="no answer in the 0.2 s"):
            connect(f"postgresql://alice@127.0.0.1:{port}/team?connect_timeout=0.2")
    finally:
        listener.close()


def test_a_connect_timeout_is_the_urls_own_else_the_default_and_within_takes_the_shorter() -> None:
    from subcog_store.postgres.connection import CONNECT_TIMEOUT_SECS, connect_timeout_of, within

    assert connect_timeout_of("postgresql://a@db.example/team") == CONNECT_TIMEOUT_SECS == 10
    assert connect_timeout_of("postgresql://a@db.example/team?connect_timeout=30") == 30
    assert connect_timeout_of("host=db.example connect_timeout=0") == CONNECT_TIMEOUT_SECS   # libpq's "forever"
    assert connect_timeout_of(within("postgresql://a@db.example/team", 0.75)) == 0.75
    assert connect_timeout_of(within("postgresql://a@db.example/team?connect_timeout=2", 7.5)) == 2
    assert "db.example" in within("service=team host=db.example", 1) and "service=team" in within("service=team", 1)


def _role(pg_server, name: str, database_url: str, *grants: str) -> str:
    """A login role on the test server with `grants` ({db} is the database's name); returns `database_url` as
    that role."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    dbname = conninfo_to_dict(database_url)["dbname"]
    with psycopg.connect(pg_server.url, autocommit=True) as con:
        con.execute(f"drop role if exists {name}")
        con.execute(f"create role {name} login")
        for grant in grants:
            con.execute(grant.format(db=f'"{dbname}"', role=name))
    return make_conninfo(**(conninfo_to_dict(database_url) | {"user": name}))


def test_a_role_that_may_not_enable_pgvector_is_told_who_can(pg_server) -> None:
    url = pg_server.database()
    member = _role(pg_server, "subcog_member", url, "grant all on database {db} to {role}")
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("grant all on schema public to subcog_member")
    with pytest.raises(DatabaseError, match="an administrator runs `create extension vector`"):
        connect(member)
    with psycopg.connect(url, autocommit=True) as con:
        assert con.execute("select to_regclass('memories')").fetchone()[0] is None   # nothing half-written
    pg_server.drop(url)


def test_a_role_without_rights_on_the_store_gets_a_clear_error(pg_server, pg_url) -> None:
    connect(pg_url).close()          # the store exists, created by its owner
    stranger = _role(pg_server, "subcog_stranger", pg_url, "grant connect on database {db} to {role}")
    with pytest.raises(DatabaseError, match="this role may not use the store"):
        connect(stranger)


def test_the_readme_role_setup_works(pg_server) -> None:
    """The README's minimal role setup, run as written: two members share one store, neither a superuser."""
    import re
    import uuid

    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from subcog_store.postgres.local_server import with_database

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = re.search(r"```sql\n(-- as a superuser, once per team.*?)```", readme, re.S).group(1)
    tag = uuid.uuid4().hex[:8]
    block = block.replace("team_memory", f"team_{tag}").replace("subcog_team", f"team_role_{tag}")
    block = block.replace("alice", f"alice_{tag}")
    before, after = block.split(f"\\c team_{tag}\n")
    with psycopg.connect(pg_server.url, autocommit=True) as con:
        for statement in _statements(before):
            con.execute(statement)
    with psycopg.connect(with_database(pg_server.url, f"team_{tag}"), autocommit=True) as con:
        for statement in _statements(after):
            con.execute(statement)
        con.execute(f"create role bob_{tag} login in role team_role_{tag}")
        con.execute(f"alter role bob_{tag} in database team_{tag} set role team_role_{tag}")
    pg_server.made.append(f"team_{tag}")
    urls = [make_conninfo(**(conninfo_to_dict(with_database(pg_server.url, f"team_{tag}")) | {"user": user}))
            for user in (f"alice_{tag}", f"bob_{tag}")]
    alice = connect(urls[0])                  # the first member creates the store
    alice.execute("insert into memories (id, namespace, content, created_at, updated_at) "
                  "values ('00000000000a', 'decisions', 'Use PgBouncer', '', '')")
    bob = connect(urls[1])
    assert bob.execute("select content from memories").fetchone()[0] == "Use PgBouncer"
    bob.execute("update memories set importance = 0.9")
    assert bob.execute("select rolsuper from pg_roles where rolname = current_user").fetchone()[0] is False
    alice.close()
    bob.close()
    pg_server.drop(with_database(pg_server.url, f"team_{tag}"))
    with psycopg.connect(pg_server.url, autocommit=True) as con:   # roles belong to the server: leave none
        for role in (f"alice_{tag}", f"bob_{tag}", f"team_role_{tag}"):
            con.execute(f"drop role {role}")


def _statements(sql: str) -> list[str]:
    lines = [line.split("--")[0] for line in sql.splitlines()]
    return [s.strip() for s in " ".join(lines).split(";") if s.strip()]


def test_a_statement_past_the_budget_is_cancelled_with_a_clear_error(pg, pg_url) -> None:
    from subcog_store.postgres.connection import describe_error, transaction, wait_at_most

    wait_at_most(pg, 0.5)
    with pytest.raises(psycopg.errors.QueryCanceled) as caught:
        with transaction(pg, ("team", "decisions")):
            pg.execute("insert into settings (key, value) values ('half', 'written')")
            pg.execute("select pg_sleep(5)")
    error = describe_error(pg_url, caught.value)
    assert isinstance(error, DatabaseError) and "did not answer in time" in str(error)
    assert pg.execute("select count(*) from settings where key = 'half'").fetchone()[0] == 0   # rolled back
    holder = connect(pg_url)
    with transaction(holder, ("team", "decisions")):           # another writer holds the scope's lock
        with pytest.raises(psycopg.errors.LockNotAvailable) as caught:
            with transaction(pg, ("team", "decisions")):
                pass
    assert "held the lock past the time allowed" in str(describe_error(pg_url, caught.value))
    holder.close()


def test_a_server_restart_mid_transaction_loses_nothing_committed(pg_server, pg, pg_url) -> None:
    """The server ends the connection mid-capture (a restart, a failover): the half-done transaction is gone,
    what was committed stays, the caller gets a clear error, and a new connection works."""
    from subcog_store.postgres.connection import describe_error, transaction

    pg.execute("insert into settings (key, value) values ('kept', 'committed')")
    with psycopg.connect(pg_server.url, autocommit=True) as admin:
        with pytest.raises(psycopg.OperationalError) as caught:
            with transaction(pg, ("team", "decisions")):
                pg.execute("insert into settings (key, value) values ('half', 'written')")
                admin.execute("select pg_terminate_backend(%s)", (pg.info.backend_pid,))
                pg.execute("select 1")
    assert "connection to the server was lost" in str(describe_error(pg_url, caught.value))
    fresh = connect(pg_url)
    assert dict(fresh.execute("select key, value from settings where key in ('kept', 'half')").fetchall()) == \
        {"kept": "committed"}
    fresh.close()
