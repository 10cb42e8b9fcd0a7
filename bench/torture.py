"""Reliability trials, not part of `make test`: `make torture` (full) or `python -m bench.torture --quick`.

What it does, on throw-away databases in a temporary directory:
- concurrency: 8 processes on one file at once (4 `capture --jsonl` with overlapping texts, 4 pre-compact hooks,
  two of them on the same session);
- SIGKILL trials at a random moment of a capture, a hook, `dedup`, `unmerge`, `reverse` and a schema migration,
  each followed by the checks and by a run to completion that must end where an unkilled run ends;
- hook fuzzing: random, garbage, huge and deeply nested hook inputs, odd transcript files and odd environment
  values, most in driver processes (the hook's entry in process, stdout and the stderr descriptor captured), some
  as real hook processes;
- a 3,000-paragraph session captured by successive runs of the hook, each within its budget.

Counted everywhere: lost (memories reported committed, or that an unkilled run stores, missing at the end),
duplicated (two active memories with one scope and hash), doctor failures (plus a dedup run left 'running'),
invalid hook outputs (exit code, `../shared/tools/check_hook_output.py`), stderr writes of hooks, budget overruns
(a hook past its budget + MARGIN). Target: all zero. Prints a table; writes bench/torture/RESULTS.md.
Warm workers are disabled (SUBCOG_WORKER_ENABLED=false): every process started here ends here.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import apsw

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
RESULTS = REPO / "bench" / "torture" / "RESULTS.md"
SCRIPT = Path(sys.executable).parent / "subcog-store"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "subcog_store"]
MARGIN = 1.5           # past the budget: the hook's 0.5 s grace to save, and starting and ending a process
NO_MODEL = {"SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"}
COLUMNS = ("trials", "lost", "duplicated", "doctor", "invalid", "stderr", "overruns", "uncaptured")


@dataclass(frozen=True)
class Plan:
    rounds: int          # concurrency rounds of 8 processes
    kills: int           # SIGKILL trials per kind
    fuzz_inprocess: int
    fuzz_process: int
    drivers: int = 2


PLANS = {"quick": Plan(rounds=1, kills=6, fuzz_inprocess=800, fuzz_process=40),
         "full": Plan(rounds=5, kills=50, fuzz_inprocess=10_000, fuzz_process=400)}


@dataclass
class Tally:
    name: str
    trials: int = 0
    lost: int = 0
    duplicated: int = 0
    doctor: int = 0
    invalid: int = 0
    stderr: int = 0
    overruns: int = 0
    uncaptured: int = 0      # huge sessions: paragraphs no run ever captured (the hook stopped making progress)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    killed: int = 0          # kill trials whose process was still running when the SIGKILL came
    detail: str = ""

    def note(self, text: str) -> None:
        if len(self.notes) < 12:
            self.notes.append(text[:300])

    def add(self, other: dict) -> None:
        for key in COLUMNS:
            setattr(self, key, getattr(self, key) + int(other.get(key, 0)))
        for text in other.get("notes", []):
            self.note(text)


# ------------------------------------------------------------------------------------------------ processes
LIVE: list[subprocess.Popen] = []


def start(args: list[str], env: dict[str, str], stdin: bytes | None = None, **kw) -> subprocess.Popen:
    proc = subprocess.Popen(args, env=env, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    LIVE.append(proc)
    if stdin is not None:
        try:
            proc.stdin.write(stdin)
            proc.stdin.close()
        except OSError:   # it died (or was killed) before reading everything
            pass
        proc.stdin = None   # communicate() must not touch it again
    return proc


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, bytes, bytes]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    if proc in LIVE:
        LIVE.remove(proc)
    return proc.returncode, out, err


def killed_after(proc: subprocess.Popen, delay: float) -> tuple[bool, bytes]:
    """SIGKILL `proc` after `delay` seconds unless it ended first; returns (killed, stdout)."""
    deadline = time.monotonic() + delay
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    was_running = proc.poll() is None
    if was_running:
        proc.send_signal(signal.SIGKILL)
    _, out, _ = finish(proc)
    return was_running, out


def end_all() -> None:
    for proc in list(LIVE):
        if proc.poll() is None:
            proc.kill()
        finish(proc, timeout=30)


# ------------------------------------------------------------------------------------------------ environment
class Env:
    """Paths and the environment every process gets: no SUBCOG_* of the caller, no worker, homes inside work."""

    def __init__(self, work: Path):
        self.work = work
        base = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
        for name in ("XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"):
            (work / name.lower()).mkdir(mode=0o700, exist_ok=True)
            base[name] = str(work / name.lower())
        base.update(SUBCOG_WORKER_ENABLED="false", SUBCOG_HOOK_LOG=str(work / "hook.log"),
                    OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        self.base = base

    def __call__(self, **extra: str) -> dict[str, str]:
        return {**self.base, **extra}


def cli(env: dict[str, str], *args: str, stdin: bytes | None = None, timeout: float = 300) -> tuple[int, bytes, bytes]:
    return finish(start([*CLI, *args], env, stdin), timeout)


# ------------------------------------------------------------------------------------------------ checks
def ro(db: Path) -> apsw.Connection:
    return apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)


def active(db: Path) -> set[tuple[str, str, str]]:
    con = ro(db)
    try:
        return set(con.execute("select domain, namespace, content_hash from memories where status = 'active'"))
    finally:
        con.close()


def duplicates(db: Path) -> int:
    con = ro(db)
    try:
        return con.execute("select count(*) from (select 1 from memories where status = 'active' "
                           "group by domain, namespace, content_hash having count(*) > 1)").fetchone()[0]
    finally:
        con.close()


def doctor(db: Path, vectors: bool = True) -> list[str]:
    """The doctor's failing checks (without the vector check on a store built without the model)."""
    from subcog_store.db.connection import connect
    from subcog_store.doctor import diagnose

    con = connect(db, migrate=False)
    try:
        return [f"{f.check}: {f.detail}" for f in diagnose(con)
                if not f.ok and (vectors or f.check != "active_memory_has_vector")]
    finally:
        con.close()


def audit(t: Tally, db: Path, vectors: bool, expected: set | None = None, what: str = "") -> None:
    """Duplicates, doctor, and (given the expected active set) memories lost."""
    dup = duplicates(db)
    bad = doctor(db, vectors)
    t.duplicated += dup
    t.doctor += len(bad)
    if bad:
        t.note(f"{what}: doctor: {'; '.join(bad)}")
    if dup:
        t.note(f"{what}: {dup} duplicated scope+hash")
    if expected is not None:
        missing = expected - active(db)
        t.lost += len(missing)
        if missing:
            t.note(f"{what}: {len(missing)} memories lost; {explain(db, missing)}")


def explain(db: Path, missing: set) -> str:
    """What the decision log says about missing memories (first two)."""
    con = ro(db)
    try:
        said = []
        for _, _, digest in sorted(missing)[:2]:
            rows = con.execute("select decision, similarity, substr(reasoning, 1, 80) from dedup_log "
                               "where new_hash = ?", (digest,)).fetchall()
            said.append(f"{digest[:12]}: {rows or 'never attempted'}")
        return "; ".join(said)
    finally:
        con.close()


_CHECKER = None


def hook_problems(event: str, out: str) -> list[str]:
    """check_hook_output.problems from ../shared/tools when present, else a minimal check."""
    global _CHECKER
    if _CHECKER is None:
        tool = Path(os.environ.get("SUBCOG_SHARED_DIR") or REPO.parent / "shared") / "tools" / "check_hook_output.py"
        if tool.is_file():
            spec = importlib.util.spec_from_file_location("check_hook_output", tool)
            _CHECKER = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(_CHECKER)
        else:
            _CHECKER = False
    if _CHECKER:
        return _CHECKER.problems(event, out)
    text = out.strip()
    if not text or (event == "PreCompact" and not text.startswith("{")):
        return []
    try:
        return [] if isinstance(json.loads(text), dict) else ["not an object"]
    except ValueError:
        return ["not JSON"]


def judge_hook(t: Tally, event: str, rc: int, out: bytes, err: bytes, elapsed: float, budget: float,
               what: str, trial: bool = True) -> None:
    t.trials += trial
    try:
        problems = [] if rc == 0 else [f"exit {rc}"]
        problems += hook_problems({"pre-compact": "PreCompact", "session-start": "SessionStart"}.get(
            event, event), out.decode("utf-8"))
    except UnicodeDecodeError:
        problems = ["output not UTF-8"]
    if problems:
        t.invalid += 1
        t.note(f"{what}: invalid output: {problems[:2]} {out[:120]!r}")
    if err:
        t.stderr += 1
        t.note(f"{what}: stderr: {err[:160]!r}")
    if elapsed > budget + MARGIN:
        t.overruns += 1
        t.note(f"{what}: {elapsed:.1f} s, budget {budget:g} s")


def hook(env: dict[str, str], db: Path, payload: dict | bytes, event: str = "pre-compact",
         timeout: float = 120) -> tuple[int, bytes, bytes, float]:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    started = time.monotonic()
    rc, out, err = cli(env, "--db", str(db), "hook", event, stdin=raw, timeout=timeout)
    return rc, out, err, time.monotonic() - started


def status_line(out: bytes) -> str:
    text = out.decode("utf-8", "replace")
    if text.lstrip().startswith("{"):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            return json.loads(text)["systemMessage"]
    return text.splitlines()[0] if text else ""


# ------------------------------------------------------------------------------------------------ texts
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()
SUBJECTS = ["PostgreSQL", "Redis", "Kafka", "the billing service", "the gateway", "nginx", "the scheduler", "S3",
            "GraphQL", "the CLI", "Terraform", "the search index"]


def decision(i: int, rng: random.Random | None = None) -> str:
    rng = rng or random.Random(i)
    w = " ".join(rng.sample(WORDS, 4))
    return f"We decided to use {rng.choice(SUBJECTS)} for component {w} number {i} because it halves the latency."


def record(text: str, uuid: str, session: str = "s") -> bytes:
    return (json.dumps({"type": "assistant", "isSidechain": False, "sessionId": session, "uuid": uuid,
                        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}})
            + "\n").encode()


def transcript(path: Path, start: int, records: int, per_record: int, session: str = "s") -> Path:
    path.write_bytes(b"".join(record("\n\n".join(decision(start + r * per_record + p) for p in range(per_record)),
                                     f"u{start}-{r}", session) for r in range(records)))
    return path


def payload(path: Path, session: str) -> dict:
    return {"session_id": session, "transcript_path": str(path), "hook_event_name": "PreCompact",
            "trigger": "auto", "cwd": "/"}


def jsonl(texts: list[str]) -> bytes:
    return b"".join(json.dumps({"content": t, "namespace": "decisions"}).encode() + b"\n" for t in texts)


# ------------------------------------------------------------------------------------------------ concurrency
def concurrency(env: Env, plan: Plan, rng: random.Random) -> Tally:
    t = Tally("concurrent hooks + captures (8 processes)")
    for n in range(plan.rounds):
        work = env.work / f"conc{n}"
        work.mkdir()
        db = work / "c.db"
        model = n % 2 == 0
        penv = env() if model else env(**NO_MODEL)
        texts = [decision(100_000 + n * 1000 + i) for i in range(60)]
        g1 = transcript(work / "g1.jsonl", 200_000 + n * 1000, 10, 3, "g1")
        g2 = transcript(work / "g2.jsonl", 300_000 + n * 1000, 10, 3, "g2")
        ref = work / "ref.db"                           # the hooks alone, one after the other
        for path, session in ((g1, "g1"), (g2, "g2")):
            hook(penv, ref, payload(path, session))
        procs, captured = [], set()
        for i in range(4):
            chosen = rng.sample(texts, 40)
            captured.update(chosen)
            procs.append(("capture", start([*CLI, "--db", str(db), "capture", "--jsonl"], penv, jsonl(chosen)),
                          time.monotonic()))
        for path, session in ((g1, "g1"), (g1, "g1"), (g2, "g2"), (g2, "g2b")):
            raw = json.dumps(payload(path, session)).encode()
            procs.append(("hook", start([*CLI, "--db", str(db), "hook", "pre-compact"], penv, raw),
                          time.monotonic()))
        for kind, proc, began in procs:
            rc, out, err = finish(proc)
            elapsed = time.monotonic() - began
            if kind == "hook":
                judge_hook(t, "pre-compact", rc, out, err, elapsed, 20.0, f"round {n} hook")
                if "unavailable" in status_line(out) or "failed" in status_line(out):
                    t.invalid += 1
                    t.note(f"round {n} hook: {status_line(out)[:160]}")
            elif rc != 0:
                t.invalid += 1
                t.note(f"round {n} capture exit {rc}: {err[-200:]!r}")
        from subcog_store.text.normalize import content_hash
        expected = {("project", "decisions", content_hash(x)) for x in captured} | active(ref)
        audit(t, db, model, expected, f"round {n}")
    return t


# ------------------------------------------------------------------------------------------------ kill trials
CAPTURE_DRIVER = """
import json, sys
sys.path.insert(0, sys.argv[4])
from bench.torture import decision
from subcog_store.store import Store
db, start, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = Store(db)
store.embed("warm up")                                      # the model (if any) loads before the kill window
print("ready", flush=True)
for i in range(start, start + count):
    text = decision(i) if i % 5 else decision(i - i % 50)      # every fifth a repeat of an earlier text
    r = store.capture(text, "decisions", source="torture")
    print(json.dumps(r.memory_id), flush=True)               # returned: committed (stored, or the match)
store.close()
"""


def kill_capture(env: Env, plan: Plan, rng: random.Random) -> Tally:
    t = Tally("SIGKILL during capture")
    db = env.work / "kcap.db"
    committed: set[str] = set()
    for n in range(plan.kills):
        model = n % 2 == 0
        penv = env() if model else env(**NO_MODEL)
        count = 400 if model else 3000   # a few seconds of captures either way
        proc = start([sys.executable, "-c", CAPTURE_DRIVER, str(db), str(n * 3000), str(count), str(REPO)], penv)
        ready = proc.stdout.readline()
        if ready.strip() != b"ready":
            t.invalid += 1
            t.note(f"trial {n}: driver did not start: {finish(proc)[2][-200:]!r}")
            continue
        was_killed, out = killed_after(proc, rng.uniform(0.0, 1.5))
        t.killed += was_killed
        for line in out.splitlines():
            with contextlib.suppress(ValueError):
                committed.add(json.loads(line))
        t.trials += 1
        con = ro(db)
        try:
            present = {r[0] for r in con.execute("select id from memories where status = 'active'")}
        finally:
            con.close()
        missing = {m for m in committed if m} - present
        t.lost += len(missing)
        if missing:
            t.note(f"trial {n}: committed memories missing: {sorted(missing)[:3]}")
        audit(t, db, vectors=False, what=f"trial {n}")
    return t


def kill_hook(env: Env, plan: Plan, rng: random.Random) -> Tally:
    t = Tally("SIGKILL during the pre-compact hook")
    path = transcript(env.work / "khook.jsonl", 400_000, 20, 3, "kh")
    with path.open("ab") as f:
        f.write((SAMPLES / "session-a.jsonl").read_bytes())
    refs: dict[bool, tuple[set, float]] = {}
    for model in (True, False):
        ref = env.work / f"khook-ref-{model}.db"
        rc, out, err, elapsed = hook(env() if model else env(**NO_MODEL), ref, payload(path, "kh"))
        judge_hook(t, "pre-compact", rc, out, err, elapsed, 20.0, "reference", trial=False)
        refs[model] = (active(ref), elapsed)
    for n in range(plan.kills):
        model = n % 2 == 0
        penv = env() if model else env(**NO_MODEL)
        expected, duration = refs[model]
        db = env.work / f"khook{n}.db"
        for _ in range(1 + n % 2):   # one or two killed runs (odd trials: two), then one to the end
            proc = start([*CLI, "--db", str(db), "hook", "pre-compact"], penv, json.dumps(payload(path, "kh")).encode())
            t.killed += killed_after(proc, rng.uniform(0.0, duration * 1.2))[0]
        lines = []
        for _ in range(3):   # to the end: a run stopped by its budget leaves the rest to the next one
            rc, out, err, elapsed = hook(penv, db, payload(path, "kh"))
            judge_hook(t, "pre-compact", rc, out, err, elapsed, 20.0, f"trial {n}")
            lines.append(f"{elapsed:.1f} s: {status_line(out)[:100]}")
            if "stopped early" not in status_line(out):
                break
        if expected - active(db):
            t.note(f"trial {n}: runs after the kill: {' | '.join(lines)}")
        audit(t, db, model, expected, f"trial {n}")
        drop_db(db)
    return t


def copy_db(source: Path, target: Path) -> Path:
    for suffix in ("", "-wal", "-shm"):
        if Path(str(source) + suffix).exists():
            shutil.copyfile(str(source) + suffix, str(target) + suffix)
    return target


def drop_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", ".dedup-lock"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def seed_pairs(env: Env, db: Path, model: bool) -> None:
    """Pairs of reworded memories (each pair one cluster for `dedup`), stored with deduplication off."""
    topics = [f"{s} for component {' '.join(random.Random(i).sample(WORDS, 3))}" for i, s in
              enumerate(SUBJECTS * 3)]
    texts = []
    for topic in topics:
        texts += [f"We use {topic} in every production region of the platform",
                  f"In every production region of the platform we use {topic}"]
    penv = env(SUBCOG_DEDUP_ENABLED="false", **({} if model else NO_MODEL))
    rc, _, err = cli(penv, "--db", str(db), "capture", "--jsonl", stdin=jsonl(texts))
    assert rc == 0, err


def running_runs(db: Path) -> int:
    con = ro(db)
    try:
        return con.execute("select count(*) from dedup_runs where status = 'running'").fetchone()[0]
    finally:
        con.close()


def kill_dedup(env: Env, plan: Plan, rng: random.Random) -> Tally:
    t = Tally("SIGKILL during dedup")
    seeds: dict[bool, tuple[Path, set, float]] = {}
    for model in (False, True):
        seed = env.work / f"dedup-seed-{model}.db"
        seed_pairs(env, seed, model)
        ref = copy_db(seed, env.work / f"dedup-ref-{model}.db")
        penv = env(SUBCOG_BATCH_TEST_SLEEP="0.03", **({} if model else NO_MODEL))
        began = time.monotonic()
        rc, _, err = cli(penv, "--db", str(ref), "dedup")
        assert rc == 0, err
        seeds[model] = (seed, active(ref), time.monotonic() - began)
    for n in range(plan.kills):
        model = n % 2 == 1
        seed, expected, duration = seeds[model]
        penv = env(SUBCOG_BATCH_TEST_SLEEP="0.03", **({} if model else NO_MODEL))
        db = copy_db(seed, env.work / f"kdedup{n}.db")
        proc = start([*CLI, "--db", str(db), "dedup"], penv)
        t.killed += killed_after(proc, rng.uniform(0.0, duration * 1.1))[0]
        t.trials += 1
        cli(penv, "--db", str(db), "stats")               # any command marks a killed run interrupted
        if running_runs(db):
            t.doctor += 1
            t.note(f"trial {n}: a killed dedup run still 'running' after the next command")
        audit(t, db, model, what=f"trial {n} killed")
        rc, _, err = cli(penv, "--db", str(db), "dedup")
        if rc != 0:
            t.invalid += 1
            t.note(f"trial {n}: dedup after the kill exit {rc}: {err[-200:]!r}")
        audit(t, db, model, expected, f"trial {n}")
        drop_db(db)
    return t


def decision_ids(db: Path, batch: bool) -> list[int]:
    con = ro(db)
    try:
        sql = "select id from dedup_log where policy = 'batch'" if batch else "select id from dedup_log"
        return [r[0] for r in con.execute(sql)]
    finally:
        con.close()


def kill_undo(env: Env, plan: Plan, rng: random.Random, command: str) -> Tally:
    """`unmerge ID` (batch merges) or `reverse ID` (any decision) killed, then run again to the end."""
    t = Tally(f"SIGKILL during {command}")
    seeds = {}
    for model in (False, True):
        seed = env.work / f"{command}-seed-{model}.db"
        seed_pairs(env, seed, model)
        rc, _, err = cli(env(**({} if model else NO_MODEL)), "--db", str(seed), "dedup")
        assert rc == 0, err
        began = time.monotonic()
        cli(env(**({} if model else NO_MODEL)), "--db", str(seed), command, str(10 ** 9))   # no such decision
        seeds[model] = (seed, decision_ids(seed, batch=command == "unmerge"), time.monotonic() - began)
    refs: dict[tuple[bool, int], tuple[set, float]] = {}
    for n in range(plan.kills):
        model = n % 2 == 1
        seed, ids, startup = seeds[model]
        penv = env(**({} if model else NO_MODEL))
        chosen = rng.choice(ids)
        if (model, chosen) not in refs:
            ref = copy_db(seed, env.work / f"{command}-ref.db")
            began = time.monotonic()
            cli(penv, "--db", str(ref), command, str(chosen))
            refs[model, chosen] = (active(ref), time.monotonic() - began)
            drop_db(ref)
        expected, duration = refs[model, chosen]
        db = copy_db(seed, env.work / f"k{command}{n}.db")
        proc = start([*CLI, "--db", str(db), command, str(chosen)], penv)
        t.killed += killed_after(proc, rng.uniform(max(startup - 0.05, 0.0), max(duration, startup) + 0.05))[0]
        t.trials += 1
        audit(t, db, model, what=f"trial {n} killed")
        rc, _, err = cli(penv, "--db", str(db), command, str(chosen))
        if rc not in (0, 2) or b"Traceback" in err:
            t.invalid += 1
            t.note(f"trial {n}: {command} {chosen} again: exit {rc}: {err[-200:]!r}")
        audit(t, db, model, expected, f"trial {n}")
        extra = active(db) - expected
        if extra:
            t.duplicated += len(extra)
            t.note(f"trial {n}: {len(extra)} memories active that the unkilled {command} does not leave")
        drop_db(db)
    return t


def seed_old_schema(db: Path, version: int, memories: int, decisions: int) -> None:
    """A database at an older schema version, full enough that its migration takes a while."""
    import numpy as np

    from subcog_store.db.connection import connect, migrate_to_latest

    con = connect(db, migrate=False)
    try:
        migrate_to_latest(con, target=version)
        rng = np.random.default_rng(7)
        con.execute("begin")
        for i in range(memories):
            seq = con.execute(
                "insert into memories (id, domain, namespace, content, created_at, updated_at) "
                "values (?, 'project', 'decisions', ?, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z') "
                "returning seq", (f"{i:012x}", decision(500_000 + i))).fetchone()[0]
            v = rng.standard_normal(384).astype("float32")
            con.execute("insert into memory_vectors (memory_seq, namespace, domain, embedding) "
                        "values (?, 'decisions', 'project', ?)", (seq, (v / np.linalg.norm(v)).tobytes()))
        for i in range(decisions):
            batch = i % 10 == 0
            con.execute("insert into dedup_log (decided_at, domain, namespace, policy, decision, new_content, "
                        "matched_memory_id, review_status) values ('2026-01-01T00:00:00Z', 'project', "
                        "'decisions', ?, ?, ?, ?, 'confirmed')",
                        ("batch" if batch else "skip", "merged" if batch else "stored", decision(i),
                         f"{i % memories:012x},{(i + 1) % memories:012x}" if batch else None))
        con.execute("commit")
    finally:
        con.close()


def kill_migration(env: Env, plan: Plan, rng: random.Random) -> Tally:
    from subcog_store.db.connection import latest_version

    t = Tally("SIGKILL during schema migration")
    old = 4
    seed = env.work / "migrate-seed.db"
    seed_old_schema(seed, old, memories=5000, decisions=200_000)
    ref = copy_db(seed, env.work / "migrate-ref.db")
    began = time.monotonic()
    rc, _, err = cli(env(**NO_MODEL), "--db", str(ref), "init")
    assert rc == 0, err
    duration = time.monotonic() - began
    began = time.monotonic()
    cli(env(**NO_MODEL), "--db", str(ref), "init")        # nothing to migrate: the start-up alone
    startup = time.monotonic() - began
    con = ro(ref)
    counts = [con.execute(f"select count(*) from {table}").fetchone()[0] for table in ("memories", "dedup_log")]
    con.close()
    versions = [0, 0]
    for n in range(plan.kills):
        db = copy_db(seed, env.work / f"kmigrate{n}.db")
        proc = start([*CLI, "--db", str(db), "init"], env(**NO_MODEL))
        t.killed += killed_after(proc, rng.uniform(startup * 0.9, duration * 1.05))[0]
        t.trials += 1
        con = ro(db)
        try:
            version = con.execute("pragma user_version").fetchone()[0]
            intact = con.execute("pragma quick_check").fetchone()[0] == "ok"
            recorded = con.execute("select max(version) from schema_migrations").fetchone()[0]
        finally:
            con.close()
        versions[version == old] += 1
        if version not in (old, latest_version()) or recorded != version or not intact:
            t.doctor += 1
            t.note(f"trial {n}: after the kill: user_version {version}, recorded {recorded}, quick_check {intact}")
        rc, _, err = cli(env(**NO_MODEL), "--db", str(db), "init")
        if rc != 0:
            t.invalid += 1
            t.note(f"trial {n}: init after the kill: exit {rc}: {err[-200:]!r}")
        audit(t, db, vectors=True, what=f"trial {n}")
        con = ro(db)
        now = [con.execute(f"select count(*) from {table}").fetchone()[0] for table in ("memories", "dedup_log")]
        con.close()
        t.lost += sum(max(a - b, 0) for a, b in zip(counts, now))
        drop_db(db)
    t.detail = (f"init of a version-{old} store ({counts[0]} memories, {counts[1]} decisions) takes {duration:.1f} s "
                f"(start-up {startup:.1f} s); killed at a random moment in between; "
                f"after the kill {versions[1]} were still at version {old}, {versions[0]} migrated")
    return t


# ------------------------------------------------------------------------------------------------ fuzzing
def odd_files(work: Path) -> list[str]:
    """Transcripts nobody should send, and a few good ones."""
    work.mkdir(exist_ok=True)
    rng = random.Random(11)
    files = {
        "sample-a": (SAMPLES / "session-a.jsonl").read_bytes(),
        "sample-b": (SAMPLES / "session-b.jsonl").read_bytes(),
        "empty": b"",
        "garbage": bytes(rng.randrange(256) for _ in range(20_000)),
        "garbage-lines": b"\n".join(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
                                    for _ in range(200)),
        "torn": (SAMPLES / "session-a.jsonl").read_bytes()[:-40],
        "nested": b"[" * 100_000 + b"\n" + b'{"type": "assistant", "message": ' * 5000 + b"\n",
        "long-line": b'{"type": "assistant", "message": {"content": "' + b"x" * (3 << 20) + b'"}}\n',
        "surrogates": record("We decided to use \udcff\ud800 lone surrogates in the decision log format.", "u"),
        "nul": record("We decided that NUL \x00 bytes in a decision are kept verbatim in the store.", "u"),
        "nul-raw": b"\x00" * 5000 + b"\n",
        "many-records": b"".join(record(decision(600_000 + i), f"m{i}") for i in range(300)),
        "medium-record": record("\n\n".join(decision(700_000 + i) for i in range(150)), "mr"),
        "crlf": (SAMPLES / "session-b.jsonl").read_bytes().replace(b"\n", b"\r\n"),
        "bom": b"\xef\xbb\xbf" + (SAMPLES / "session-a.jsonl").read_bytes(),
        "numbers": b'{"type": "assistant", "message": {"content": 1' + b"9" * 6000 + b"}}\n",
    }
    paths = []
    for name, data in files.items():
        (work / name).write_bytes(data)
        paths.append(str(work / name))
    fifo = work / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    (work / "a-dir").mkdir(exist_ok=True)
    loop = work / "loop"
    if not loop.is_symlink():
        loop.symlink_to(work / "loop")
    return paths + [str(fifo), str(work / "a-dir"), str(loop), "/dev/zero", "/dev/null", str(work / "missing"),
                    "", "relative/path.jsonl", "\udcff.jsonl"]


ODD_ENV = {
    "SUBCOG_HOOK_BUDGET_SECS": ["nan", "inf", "-inf", "-1", "0", "0.05", "1e400", "abc", "", " 2 ", "0.5", "1", "3"],
    "SUBCOG_HOOK_MIN_CONFIDENCE": ["nan", "2", "-0.1", "0", "1", "x", "0.3"],
    "SUBCOG_HOOK_INCLUDE_SIDECHAIN": ["maybe", "true", "false", "", "\udcff"],
    "SUBCOG_HOOK_DOMAIN": ["", "/", "a" * 500, "proj", "\udcff", " "],
    "SUBCOG_DEDUP_THRESHOLD_DECISIONS": ["nan", "1.5", "0.5", "x"],
    "SUBCOG_DEDUP_TIME_WINDOW_SECS": ["9" * 40, "-5", "60"],
    "SUBCOG_DEDUP_POLICY_DEFAULT": ["merge", "replace", "verify", "bogus"],
    "SUBCOG_HOOK_LOG": ["/dev/full", "/proc/nope/hook.log", "{work}", "{work}/hook.log/x", ""],
    "SUBCOG_DEDUP_SEMANTIC_ENABLED": ["false", "false", "false", "false", "true", "bogus"],
    "XDG_STATE_HOME": ["/nonexistent-dir", "", "{work}"],
    "HOME": ["/nonexistent-dir", ""],
}


def payload_case(rng: random.Random, files: list[str]) -> bytes:
    pick = rng.random()
    path: object = rng.choice(files)
    if pick < 0.55:
        data = {"session_id": rng.choice(["s1", "s2", "", "x" * 300, "\udcff", None, 5]), "transcript_path": path,
                "hook_event_name": rng.choice(["PreCompact", "SessionStart", 7]), "trigger": rng.choice(
                    ["auto", "manual", None]), "cwd": rng.choice(["/", "/nonexistent", "", None, "/tmp"]),
                "source": rng.choice(["compact", "startup", None])}
        for _ in range(rng.randrange(3)):
            data[rng.choice(["x", "transcript_path", "session_id", "cwd"])] = rng.choice(
                [None, 1, 1.5, [], {}, "y" * rng.randrange(1000), [[[[]]]], True])
        return json.dumps(data, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
    if pick < 0.65:
        depth = rng.choice([50, 1000, 100_000])
        return (b'{"session_id": "s", "transcript_path": "' + str(path).encode("utf-8", "surrogateescape")
                + b'", "x": ' + b"[" * depth + b"]" * depth + b"}")
    if pick < 0.72:
        return b"[" * rng.choice([10, 200_000]) + b"]" * rng.randrange(2)
    if pick < 0.8:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 3000)))
    if pick < 0.85:
        return b'{"session_id": 1' + b"9" * 5000 + b', "transcript_path": "x"}'
    if pick < 0.9:
        return rng.choice([b"", b" ", b"null", b"{}", b'"x"', b"1e999", b"{\"a\":", b"\xef\xbb\xbf{}"])
    if pick < 0.92:
        return b'{"session_id": "s", "transcript_path": "' + b"a" * (17 << 20) + b'"}'   # past the 16 MiB read
    return json.dumps({"session_id": "s", "transcript_path": path, "padding": "p" * rng.randrange(1 << 20)}
                      ).encode("utf-8", "surrogatepass")


def env_case(rng: random.Random, work: Path) -> dict[str, str]:
    env = {}
    for name, values in ODD_ENV.items():
        if rng.random() < 0.06:
            env[name] = rng.choice(values).replace("{work}", str(work))
    env.setdefault("SUBCOG_DEDUP_SEMANTIC_ENABLED", "false")
    env.setdefault("SUBCOG_HOOK_BUDGET_SECS", rng.choice(["1", "2", "5"]))
    return env


def budget_of(env: dict[str, str]) -> float:
    """The budget the hook would use (0 when the setting does not parse: it must answer at once)."""
    from subcog_store.config import process_setting
    from subcog_store.errors import ConfigError

    try:
        return float(process_setting("hook_budget_secs", env))
    except ConfigError:
        return 0.0


def db_case(rng: random.Random, work: Path, shared: list[Path], n: int) -> Path:
    pick = rng.random()
    if pick < 0.8:
        return rng.choice(shared)
    if pick < 0.9:
        return work / f"fresh{n}.db"
    garbage = work / "garbage.db"
    if not garbage.exists():
        garbage.write_bytes(b"not a database " * 100)
    return rng.choice([garbage, work, work / "no-dir" / "x.db", Path("/dev/null")])


@contextlib.contextmanager
def captured_fds(env: dict[str, str], raw: bytes):
    """The process environment replaced, stdin fed, stdout captured, stderr's descriptor sent to a file."""
    import logging

    saved_env = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.BytesIO(raw)))
    out = io.StringIO()
    sys.stdout = out
    err_file = tempfile.TemporaryFile()
    err_fd = os.dup(2)
    sys.stderr.flush()
    os.dup2(err_file.fileno(), 2)
    root = logging.getLogger("subcog_store")
    handlers = list(root.handlers)
    box = {"out": out}
    try:
        yield box
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            with contextlib.suppress(Exception):
                handler.close()
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        os.dup2(err_fd, 2)
        os.close(err_fd)
        sys.stdin, sys.stdout, sys.stderr = saved
        os.environ.clear()
        os.environ.update(saved_env)
        err_file.seek(0)
        box["err"] = err_file.read()
        err_file.close()


def fuzz_driver(seed: int, count: int, work: Path, out_file: Path) -> int:
    """Run `count` hook cases in this process through the hook's entry; write the tally as JSON."""
    from subcog_store.claude_code import entry

    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    files = odd_files(work / "files")
    shared = [work / f"shared{i}.db" for i in range(3)]
    base = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
    base.update(SUBCOG_WORKER_ENABLED="false", SUBCOG_HOOK_LOG=str(work / "hook.log"))
    t = Tally("fuzz")
    for n in range(count):
        event = rng.choices(["pre-compact", "session-start", "bogus", ""], [80, 15, 3, 2])[0]
        raw = payload_case(rng, files)
        env = {**base, **env_case(rng, work)}
        db = db_case(rng, work, shared, n)
        argv = [event] if event else []
        argv += rng.choice([[], [], ["--dry-run"], ["--format", "subcog"], ["--format", "json"], ["--format"]])
        began = time.monotonic()
        rc, crashed = 0, None
        with captured_fds(env, raw) as box:
            try:
                rc = entry.main(argv, db=str(db))
            except BaseException as e:  # noqa: BLE001 - counted: the hook must never raise
                crashed = f"{type(e).__name__}: {e}"
        elapsed = time.monotonic() - began
        what = f"case {seed}/{n} {event} argv={argv[1:]} db={db.name}"
        if crashed:
            t.trials += 1
            t.invalid += 1
            t.note(f"{what}: raised {crashed[:200]}")
            continue
        judged = "SubcogFormat" if "--format" in argv and "subcog" in argv else event
        if judged == "SubcogFormat":   # the original design's report (for tools; the client refuses it)
            t.trials += 1
            text = box["out"].getvalue().strip()
            try:
                if text.startswith("{"):
                    json.loads(text)
            except ValueError:
                t.invalid += 1
                t.note(f"{what}: --format subcog printed broken JSON: {text[:100]!r}")
            if box["err"]:
                t.stderr += 1
                t.note(f"{what}: stderr: {box['err'][:160]!r}")
            continue
        judge_hook(t, event, rc, box["out"].getvalue().encode("utf-8", "surrogateescape"), box["err"], elapsed,
                   budget_of(env), what)
        if event not in ("pre-compact", "session-start") and box["out"].getvalue().strip():
            t.invalid += 1
            t.note(f"{what}: printed something for an unknown event")
    for db in shared:
        if db.exists():
            with contextlib.suppress(Exception):
                bad = doctor(db, vectors=False)
                t.doctor += len(bad)
                t.duplicated += duplicates(db)
                if bad:
                    t.note(f"{db.name}: doctor: {bad}")
    out_file.write_text(json.dumps(t.__dict__))
    return 0


def fuzz(env: Env, plan: Plan, rng: random.Random) -> Tally:
    t = Tally("hook fuzzing")
    per = -(-plan.fuzz_inprocess // plan.drivers)
    procs = []
    for d in range(plan.drivers):
        out = env.work / f"fuzz{d}.json"
        procs.append((out, start([sys.executable, "-m", "bench.torture", "--fuzz-driver", str(rng.randrange(1 << 30)),
                                  str(per), str(env.work / f"fuzz{d}"), str(out)], env(), cwd=REPO)))
    for out, proc in procs:
        rc, _, err = finish(proc, timeout=30 * per + 600)
        if rc != 0 or not out.exists():
            t.invalid += 1
            t.note(f"fuzz driver exit {rc}: {err[-300:]!r}")
            continue
        t.add(json.loads(out.read_text()))
    work = env.work / "fuzzp"
    work.mkdir()
    files = odd_files(work / "files")
    shared = [work / "shared.db"]
    for n in range(plan.fuzz_process):
        event = rng.choices(["pre-compact", "session-start"], [85, 15])[0]
        raw = payload_case(rng, files)
        case_env = {**env(), **env_case(rng, work)}
        db = db_case(rng, work, shared, n)
        began = time.monotonic()
        rc, out, err = finish(start([*CLI, "--db", str(db), "hook", event], case_env, raw), timeout=300)
        judge_hook(t, event, rc, out, err, time.monotonic() - began, budget_of(case_env), f"process case {n}")
    if shared[0].exists():
        audit(t, shared[0], vectors=False, what="process fuzz db")
    return t


# ------------------------------------------------------------------------------------------------ huge session
def huge_session(env: Env, plan: Plan, rng: random.Random, records: int = 1, paragraphs: int = 3000) -> Tally:
    """3,000 paragraphs (in one assistant record, or one per record), the default budget and the model: the hook
    runs until nothing is new; every run within its budget, everything captured, no run without progress."""
    shape = "one record" if records == 1 else f"{records} records"
    t = Tally(f"{paragraphs}-paragraph session ({shape}), successive runs")
    path = env.work / f"huge{records}.jsonl"
    per = paragraphs // records
    path.write_bytes(b"".join(record("\n\n".join(decision(800_000 + r * per + i) for i in range(per)), f"h{r}")
                              for r in range(records)))
    from subcog_store.extraction.extract import extract_candidates
    from subcog_store.extraction.transcript import read_assistant_texts

    expected = len({c.text for c in extract_candidates(read_assistant_texts(path).texts)})
    db = env.work / f"huge{records}.db"
    before = (0, 0)
    for n in range(40):
        rc, out, err, elapsed = hook(env(), db, payload(path, "huge"), timeout=600)
        judge_hook(t, "pre-compact", rc, out, err, elapsed, 20.0, f"run {n + 1}")
        line = status_line(out)
        con = ro(db)
        now = (con.execute("select count(*) from memories where status = 'active'").fetchone()[0],
               con.execute("select coalesce(max(byte_offset), 0) from hook_offsets").fetchone()[0])
        con.close()
        t.note(f"run {n + 1}: {elapsed:.1f} s, {now[0]} memories, offset {now[1]}: {line[:90]}")
        if "nothing new" in line:
            break
        if now == before:
            t.note(f"run {n + 1} made no progress: stopped (the session would be redone forever)")
            break
        before = now
    t.uncaptured += max(expected - active_count(db), 0)
    t.note(f"{active_count(db)} of {expected} candidate paragraphs captured")
    if db.exists():
        audit(t, db, vectors=True, what="huge session")
    return t


def active_count(db: Path) -> int:
    if not db.exists():
        return 0
    con = ro(db)
    try:
        return con.execute("select count(*) from memories where status = 'active'").fetchone()[0]
    finally:
        con.close()


# ------------------------------------------------------------------------------------------------ report
def machine() -> dict[str, str]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    mem = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        mem = f"{int(Path('/proc/meminfo').read_text().split()[1]) >> 20} GiB"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
                            ).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "subcog_store", "sql", "bench/torture.py"],
                           cwd=REPO, capture_output=True, text=True).stdout.strip()
    return {"cpu": f"{cpu} ({os.cpu_count()} cores)", "memory": mem, "os": f"{platform.system()} {platform.release()}",
            "python": platform.python_version(), "sqlite": apsw.sqlite_lib_version(),
            "apsw": apsw.apsw_version(), "commit": commit + (" (with uncommitted changes)" if dirty else "")}


def table(tallies: list[Tally]) -> str:
    head = "| section | " + " | ".join(COLUMNS) + " | seconds |"
    rows = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for t in tallies:
        rows.append(f"| {t.name} | " + " | ".join(str(getattr(t, c)) for c in COLUMNS) + f" | {t.seconds:.0f} |")
    total = {c: sum(getattr(t, c) for t in tallies) for c in COLUMNS}
    rows.append("| **total** | " + " | ".join(f"**{total[c]}**" for c in COLUMNS)
                + f" | {sum(t.seconds for t in tallies):.0f} |")
    return "\n".join(rows)


def scrub(text: str, work: Path) -> str:
    """No machine paths in the committed results."""
    for path, name in ((str(work), "<tmp>"), (str(REPO), "<repo>"), (str(Path.home()), "~")):
        text = text.replace(path, name)
    return text


def write_results(mode: str, tallies: list[Tally], load: tuple[tuple, tuple], seconds: float, work: Path) -> None:
    info = machine()
    lines = [f"# Torture results ({mode})", "",
             "`python -m bench.torture --" + mode + "` (`make torture` runs `--full` under `nice -n 10`). "
             "Every count is a failure; the target is zero everywhere.", "",
             table(tallies), "",
             "Columns: lost (memories reported committed, or that an unkilled run leaves, missing), duplicated (two "
             "active memories with one scope and hash; in the undo trials also memories the unkilled command does "
             "not leave), doctor (failed doctor checks, a dedup run left 'running'), invalid (hook exit code or "
             "output the client rejects; a command that failed after a kill), stderr (hook writes on stderr), "
             "overruns (a hook past its budget + 1.5 s), uncaptured (paragraphs of a huge session that no run "
             "captured: the runs stopped making progress).", "",
             "## Notes (first few per section)", ""]
    for t in tallies:
        if t.notes or t.killed or t.detail:
            lines.append(f"- **{t.name}**" + (f": {t.killed} processes killed while still running"
                                              if t.killed else "") + (f"; {t.detail}" if t.detail else ""))
            lines += [f"  - {scrub(n, work)}" for n in t.notes]
    lines += ["", "## Machine", "",
              f"- {info['cpu']}, {info['memory']}, {info['os']}",
              f"- Python {info['python']}, SQLite {info['sqlite']}, apsw {info['apsw']}; commit {info['commit']}",
              f"- load average (1, 5, 15 min) at the start {load[0]}, at the end {load[1]}; shared with other work",
              f"- {seconds / 60:.1f} minutes", ""]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    old = RESULTS.read_text() if RESULTS.exists() else ""
    begin, end = "<!-- bench.faults: begin -->", "<!-- bench.faults: end -->"   # bench/faults.py's section stays
    kept = old[old.index(begin):old.index(end) + len(end)] if begin in old and end in old else ""
    RESULTS.write_text("\n".join(lines) + (f"\n{kept}\n" if kept else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="a few minutes")
    mode.add_argument("--full", action="store_true", help="the counts the issue asks for (default)")
    parser.add_argument("--only", help="comma-separated sections: concurrency, capture, hook, dedup, unmerge, "
                                       "reverse, migration, fuzz, huge, huge-records")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--fuzz-driver", nargs=4, metavar=("SEED", "COUNT", "WORK", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fuzz_driver:
        seed, count, work, out = args.fuzz_driver
        return fuzz_driver(int(seed), int(count), Path(work), Path(out))
    name = "quick" if args.quick else "full"
    plan = PLANS[name]
    sections = {"concurrency": concurrency, "capture": kill_capture, "hook": kill_hook, "dedup": kill_dedup,
                "unmerge": lambda e, p, r: kill_undo(e, p, r, "unmerge"),
                "reverse": lambda e, p, r: kill_undo(e, p, r, "reverse"),
                "migration": kill_migration, "fuzz": fuzz, "huge": huge_session,
                "huge-records": lambda e, p, r: huge_session(e, p, r, records=3000)}
    chosen = args.only.split(",") if args.only else list(sections)
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="subcog-torture-"))
    env = Env(work)
    load_start = os.getloadavg()
    began = time.monotonic()
    tallies: list[Tally] = []
    try:
        for key in chosen:
            started = time.monotonic()
            print(f"[{time.strftime('%H:%M:%S')}] {key} ...", flush=True)
            try:
                t = sections[key](env, plan, rng)
            except Exception as e:  # noqa: BLE001 - a section that breaks is a finding, the others go on
                t = Tally(key, invalid=1)
                t.note(f"section failed: {type(e).__name__}: {e}")
            t.seconds = time.monotonic() - started
            tallies.append(t)
            print(f"    {t.name}: " + ", ".join(f"{c} {getattr(t, c)}" for c in COLUMNS)
                  + (f" (killed while running: {t.killed})" if t.killed else ""), flush=True)
    finally:
        end_all()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    seconds = time.monotonic() - began
    print()
    print(table(tallies))
    for t in tallies:
        for n in t.notes:
            print(f"  {t.name}: {n}")
    if not args.only:
        write_results(name, tallies, (tuple(round(x, 2) for x in load_start),
                                      tuple(round(x, 2) for x in os.getloadavg())), seconds, work)
        print(f"\nwritten: {RESULTS.relative_to(REPO)}")
    return 0 if all(getattr(t, c) == 0 for t in tallies for c in COLUMNS if c != "trials") else 1


if __name__ == "__main__":
    sys.exit(main())
