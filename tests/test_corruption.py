"""Issue 29, item 6: a database with damaged pages is not written into. Its header is intact and a data page of the
vectors is damaged (a real file, damaged on disk): the first error that points to corruption (a search that cannot
read a vector blob, a capture that cannot open one, `doctor`'s integrity check) records the file as damaged;
from then on every write refuses with exit 8, naming `doctor` and the recovery path, and the hooks exit 0 with
the cause in their log. `salvage` prints every memory that can still be read, which a new store takes back."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import apsw
import pytest

from helpers import read_rows
from conftest import clean_environ, cli_command, hook_output_problems

REPO = Path(__file__).resolve().parents[1]
CLI = cli_command()
DOMAIN = "shop"
NEW_FACT = "We decided to run the database migrations from the deploy job, never from the application at start-up."


class World:
    def __init__(self, tmp: Path):
        self.tmp, self.db, self.log = tmp, tmp / "m.db", tmp / "hook.log"
        self.env = clean_environ({"SUBCOG_WORKER_ENABLED": "false", "SUBCOG_HOOK_LOG": str(self.log),
                                  "SUBCOG_HOOK_DOMAIN": DOMAIN})

    def cli(self, *args: str, db: Path | None = None, stdin: bytes = b"") -> subprocess.CompletedProcess:
        return subprocess.run([*CLI, "--db", str(db or self.db), *args], input=stdin, capture_output=True,
                              env=self.env, timeout=300)

    def hook(self, session: str, sample: str) -> subprocess.CompletedProcess:
        path = self.tmp / f"{sample}.jsonl"
        shutil.copyfile(REPO / "samples" / f"{sample}.jsonl", path)
        payload = {"session_id": session, "transcript_path": str(path), "cwd": "/", "trigger": "manual",
                   "hook_event_name": "PreCompact"}
        return self.cli("hook", "pre-compact", stdin=json.dumps(payload).encode())

    def count(self, db: Path | None = None) -> int:
        return read_rows(db or self.db, "select count(*) from memories")[0][0]

    def damage(self, page_kind: str) -> None:
        """Overwrite one page of the vectors' chunk table: its leaf, or one of its overflow pages."""
        con = apsw.Connection(str(self.db))
        con.execute("pragma wal_checkpoint(TRUNCATE)")
        pages = [p for p, in con.execute("select pageno from dbstat where name = 'memory_vectors_vector_chunks00' "
                                         "and pagetype = ? order by pageno", (page_kind,))]
        size = con.execute("pragma page_size").fetchone()[0]
        con.close()
        page = pages[len(pages) // 4]
        with open(self.db, "r+b") as f:
            f.seek((page - 1) * size + (8 if page_kind == "leaf" else 0))
            f.write(b"\xde\xad\xbe\xef" * (size // 8))


@pytest.fixture(scope="module")
def sound(tmp_path_factory) -> Path:
    """A store holding session A's seven memories, with their vectors."""
    world = World(tmp_path_factory.mktemp("sound"))
    proc = world.hook("a", "session-a")
    assert proc.returncode == 0 and b"captured 7" in proc.stdout, proc
    con = apsw.Connection(str(world.db))
    con.execute("pragma wal_checkpoint(TRUNCATE)")
    con.close()
    return world.db


@pytest.fixture
def world(sound, tmp_path) -> World:
    w = World(tmp_path)
    shutil.copyfile(sound, w.db)
    return w


def refused(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 8, proc
    err = proc.stderr.decode()
    assert "damaged" in err and "subcog-store doctor" in err and "salvage" in err and "Traceback" not in err, err
    return err


def test_a_damaged_file_is_not_written_once_a_read_meets_the_damage(world):
    world.damage("overflow")
    refused(world.cli("search", "-d", DOMAIN, "how do we pool database connections"))   # used to exit 4
    before = world.count()
    refused(world.cli("capture", "-n", "decisions", "--domain", DOMAIN, NEW_FACT))     # used to store
    proc = world.hook("b", "session-b")                                                 # used to capture 4
    assert proc.returncode == 0 and proc.stderr == b"", proc
    assert hook_output_problems("PreCompact", proc.stdout.decode()) == []
    assert "the memory store is damaged" in proc.stdout.decode()
    assert "DatabaseDamaged" in world.log.read_text()
    assert world.count() == before
    doctor = world.cli("doctor")
    assert doctor.returncode == 6 and b"FAIL sqlite_integrity" in doctor.stdout and b"salvage" in doctor.stdout


def test_a_capture_that_meets_the_damage_stops_and_says_so(world):
    world.damage("leaf")
    before = world.count()
    refused(world.cli("capture", "-n", "decisions", "--domain", DOMAIN, NEW_FACT))
    refused(world.cli("capture", "-n", "learnings", "--domain", DOMAIN, "Short one."))   # no vector needed
    assert world.count() == before


def test_salvage_saves_what_can_be_read_into_a_new_store(world):
    world.damage("overflow")
    salvaged = world.cli("salvage")
    assert salvaged.returncode == 0, salvaged
    lines = [json.loads(line) for line in salvaged.stdout.decode().splitlines()]
    assert len(lines) == 7 and {line["domain"] for line in lines} == {DOMAIN}
    assert b"salvaged 7 active memories" in salvaged.stderr
    fresh = world.tmp / "new.db"
    assert world.cli("capture", "--jsonl", db=fresh, stdin=salvaged.stdout).returncode == 0
    assert world.count(fresh) == 7
    assert world.cli("doctor", db=fresh).returncode == 0


def test_a_file_restored_at_the_path_is_written_again(world, sound):
    world.damage("overflow")
    refused(world.cli("search", "-d", DOMAIN, "how do we pool database connections"))
    shutil.copyfile(sound, world.tmp / "restored.db")
    (world.tmp / "restored.db").replace(world.db)
    proc = world.cli("capture", "-n", "decisions", "--domain", DOMAIN, NEW_FACT)
    assert proc.returncode == 0 and proc.stdout.startswith(b"stored "), proc


def test_salvage_reads_past_a_damaged_page_of_the_memories(tmp_path):
    """A block that cannot be read is read again row by row: only the rows on the damaged page are lost."""
    from subcog_store.store import CaptureRequest, Store

    world = World(tmp_path)
    texts = [f"Decision {i}: the {['billing', 'search', 'auth'][i % 3]} service {i} keeps its queue in table q{i} "
             f"and retries failed jobs {i % 7 + 2} times." for i in range(400)]
    with Store(world.db, environ={"SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"}) as store:
        store.capture_many([CaptureRequest(t, "decisions", DOMAIN) for t in texts], dedupe_batch=False)
        store.con.execute("pragma wal_checkpoint(TRUNCATE)")
        leaves = [p for p, in store.con.execute("select pageno from dbstat where name = 'memories' and "
                                                "pagetype = 'leaf' order by pageno")]
        size = store.con.execute("pragma page_size").fetchone()[0]
    with open(world.db, "r+b") as f:
        f.seek((leaves[len(leaves) // 2] - 1) * size)
        f.write(b"\xde\xad\xbe\xef" * (size // 4))
    salvaged = world.cli("salvage")
    assert salvaged.returncode == 0, salvaged
    lines = [json.loads(line)["content"] for line in salvaged.stdout.decode().splitlines()]
    assert len(leaves) > 10 and len(texts) - 60 <= len(lines) < len(texts), (len(lines), len(leaves))
    assert set(lines) <= set(texts)
    assert b"rows could not be read" in salvaged.stderr
