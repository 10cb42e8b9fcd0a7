"""Shared fixtures: one real embedder per test session, fresh stores with a controllable clock.

Everything is real: SQLite through apsw, sqlite-vec's vec0, the int8 all-MiniLM-L6-v2 model. Nothing is mocked;
the only stand-ins are the clock (a plain object the test moves forward) and the environment (a dict).
"""
from __future__ import annotations

import functools
import importlib.util

import os
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, settings as hypothesis_settings

from helpers import ANSWER_WHEN_DONE, clean_environ, cli_command  # noqa: F401 - re-exported: the suite's one copy
from subcog_store.model.embedder import Embedder
from subcog_store.store import Store

REPO_ROOT = Path(__file__).resolve().parents[1]
START_TIME = 1_800_000_000.0  # a fixed unix time, so stored timestamps are reproducible

# Hypothesis times each example (200 ms deadline) and each input's generation (the too_slow health check) by the
# wall clock: a busy machine failed tests that were right. Neither is a property of the code under test; examples
# are counted, not timed. Tests that set their own settings inherit this profile. The examples are the same on every
# run (derandomize): `make test` passes or fails on the code, not on the draw. `make explore` draws new ones on each
# run (1000 where a test does not set its own count) to look for what the fixed draw misses; a counterexample it finds
# is fixed and pinned with `@example`.
hypothesis_settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                                     derandomize=True, database=None)
hypothesis_settings.register_profile("explore", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                                     max_examples=1000)
hypothesis_settings.load_profile(os.environ.get("SUBCOG_HYPOTHESIS_PROFILE", "suite"))


def settings_env(**settings: object) -> dict[str, str]:
    """`settings_env(dedup_time_window_secs=60)` -> {"SUBCOG_DEDUP_TIME_WINDOW_SECS": "60"} (bools as true/false)."""
    out = {}
    for key, value in settings.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        out["SUBCOG_" + key.upper()] = value if isinstance(value, str) else repr(value)
    return out


class FakeClock:
    """A clock the test controls: `clock()` returns `clock.now` (unix seconds); `advance(s)` moves it on."""

    def __init__(self, now: float = START_TIME):
        self.now = float(now)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def shared_path() -> Path:
    """Where ../shared is (or $SUBCOG_SHARED_DIR), present or not."""
    return Path(os.environ.get("SUBCOG_SHARED_DIR") or Path(__file__).resolve().parents[2] / "shared")


@functools.lru_cache(maxsize=1)
def _contract_checker():
    tool = shared_path() / "tools" / "check_hook_output.py"
    if not tool.is_file():
        return None
    spec = importlib.util.spec_from_file_location("check_hook_output", tool)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hook_output_problems(event: str, text: str) -> list[str]:
    """check_hook_output.problems from ../shared/tools; the calling test skips when the tool is absent."""
    checker = _contract_checker()
    if checker is None:
        pytest.skip(f"{shared_path() / 'tools' / 'check_hook_output.py'} not present")
    return checker.problems(event, text)


def worker_pids(run_dir_prefix: str) -> list[int]:
    """Live worker processes whose XDG_RUNTIME_DIR starts with `run_dir_prefix` (read from /proc)."""
    from subcog_store.worker.lifecycle import MARKER

    found = []
    for entry in (e for e in os.listdir("/proc") if e.isdigit()):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if MARKER.encode() not in cmdline or state == b"Z":
            continue
        runtime = next((e[len(b"XDG_RUNTIME_DIR="):] for e in environ if e.startswith(b"XDG_RUNTIME_DIR=")), b"")
        if runtime.decode(errors="replace").startswith(run_dir_prefix):
            found.append(int(entry))
    return found


@pytest.fixture(scope="session", autouse=True)
def private_worker_world(tmp_path_factory):
    """The suite's warm worker lives in a private XDG_RUNTIME_DIR and is stopped at the end; this process (the
    tests calling the library directly) embeds in process (a Store's default), the CLI and hook subprocesses may
    use the worker."""
    runtime = tmp_path_factory.mktemp("runtime")
    runtime.chmod(0o700)
    old = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    yield runtime
    import subprocess

    subprocess.run([*cli_command(), "worker", "stop"], capture_output=True, env=clean_environ(), timeout=60)
    left = worker_pids(str(tmp_path_factory.getbasetemp()))
    for pid in left:
        os.kill(pid, 9)
    assert not left, f"stray workers left running: {left}"
    if old is None:
        os.environ.pop("XDG_RUNTIME_DIR", None)
    else:
        os.environ["XDG_RUNTIME_DIR"] = old


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared reference directory (../shared or $SUBCOG_SHARED_DIR); tests using it skip when absent."""
    path = shared_path()
    if not path.is_dir():
        pytest.skip(f"shared directory {path} not present")
    return path


class TinyEmbedder:
    """A deterministic stand-in for tests that only need vectors (doctor, undo, storage): a bag of hashed words
    scaled to unit length. Texts sharing words are close; meaning plays no part, so behaviour that depends on
    meaning is tested with the real model."""

    dimensions = 384
    loaded = True

    def load(self) -> None:
        pass

    def embed_batch(self, texts):
        import hashlib

        import numpy as np

        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self.dimensions] += 1.0
            norm = float(np.linalg.norm(out[row]))
            out[row] = out[row] / norm if norm else out[row]
        return out


@pytest.fixture
def no_lexicon(monkeypatch):
    """The guard without WordNet (no models/wordnet-3.0): what it judges with the model alone."""
    from subcog_store.text import guard_lexicon

    guard_lexicon.clear_caches()
    monkeypatch.setattr(guard_lexicon, "_root", lambda: None)
    yield
    monkeypatch.undo()
    guard_lexicon.clear_caches()


@pytest.fixture
def tiny_embedder() -> TinyEmbedder:
    return TinyEmbedder()


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real embedder, loaded once for the whole session."""
    e = Embedder()
    e.load()
    return e


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def env() -> Callable[..., dict[str, str]]:
    """The settings-environment helper: `env(dedup_threshold_decisions=0.5)`."""
    return settings_env


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "sqlite_only(why): in a BOTH_BACKENDS module, a test of SQLite itself "
                                       "(its file, pragmas, migrations, apsw): run on SQLite only")


def pytest_generate_tests(metafunc) -> None:
    """A module that sets BOTH_BACKENDS = True runs each test that opens a store on SQLite and on PostgreSQL
    (a test marked sqlite_only on SQLite only)."""
    if "backend" in metafunc.fixturenames and getattr(metafunc.module, "BOTH_BACKENDS", False):
        only = metafunc.definition.get_closest_marker("sqlite_only")
        metafunc.parametrize("backend", ["sqlite"] if only else ["sqlite", "postgresql"], indirect=True)


@pytest.fixture
def backend(request) -> str:
    """Where `make_store` puts its stores: "sqlite" (a file in tmp_path), or "postgresql" (a fresh database on
    the test server for each distinct path a test asks for) in a BOTH_BACKENDS module."""
    return getattr(request, "param", "sqlite")


@pytest.fixture
def store_target(backend: str, tmp_path: Path, request):
    """`target(path)`: where a store for `path` lives on this test's backend (None: the test's default store)."""
    made: dict[str, str] = {}

    def target(path: Path | str | None = None) -> Path | str:
        if backend == "sqlite":
            return path or tmp_path / "memories.db"
        if path is not None and str(path) in made.values():
            return str(path)
        key = str(path or "default")
        if key not in made:
            made[key] = request.getfixturevalue("pg_server").database()
        return made[key]

    yield target
    if made:
        server = request.getfixturevalue("pg_server")
        for url in made.values():
            server.drop(url)


@pytest.fixture
def make_store(store_target, embedder: Embedder, clock: FakeClock):
    """A factory of stores: `make_store(environ={...}, path=..., embedder=..., **settings)`; all closed at the end.

    `environ` defaults to an empty dict (the developer's os.environ never leaks in); keyword settings are merged
    in through settings_env(). In a BOTH_BACKENDS module each path is a database of its own on PostgreSQL.
    """
    opened: list[Store] = []

    def make(environ: dict[str, str] | None = None, path: Path | str | None = None, embedder_=None,
             use_shared_embedder: bool = True, readonly: bool = False, **settings: object) -> Store:
        merged = dict(environ or {})
        merged.update(settings_env(**settings))
        chosen = embedder_ if embedder_ is not None else (embedder if use_shared_embedder else None)
        store = Store(store_target(path), embedder=chosen, clock=clock, environ=merged, readonly=readonly)
        opened.append(store)
        return store

    yield make
    for store in opened:
        try:
            store.close()
        except Exception:
            pass


@pytest.fixture
def store(make_store) -> Store:
    """A fresh store in tmp_path with the shared embedder, the fake clock and default settings."""
    return make_store()


def count_rows(store_or_con, table: str) -> int:
    con = getattr(store_or_con, "con", store_or_con)
    return con.execute(f"select count(*) from {table}").fetchone()[0]


def all_counts(store_or_con) -> dict[str, int]:
    """Row counts of every table a capture or check may write."""
    return {t: count_rows(store_or_con, t) for t in
            ("memories", "memory_vectors", "recent_captures", "dedup_checks", "dedup_log", "settings")}


# -- PostgreSQL (issue 26): one server for the session, a fresh database per test ---------------------------------
_PG: dict[str, object] = {}


@pytest.fixture(scope="session")
def pg_server():
    """The bundled PostgreSQL 16 + pgvector of the pgserver wheel (or SUBCOG_TEST_POSTGRES_URL's server), started
    once; a test that needs it skips, saying why, only where it cannot start. Stopped at the end of the session."""
    from subcog_store.postgres.local_server import ServerUnavailable, start

    if "skip" in _PG:
        pytest.skip(str(_PG["skip"]))
    try:
        server = start()
    except ServerUnavailable as e:
        _PG["skip"] = f"no PostgreSQL for the tests: {e}"
        pytest.skip(str(_PG["skip"]))
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server) -> str:
    """The URL of a new, empty UTF8 database on the test server (dropped after the test)."""
    url = pg_server.database()
    yield url
    pg_server.drop(url)
