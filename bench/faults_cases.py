"""The cases of bench/faults.py: each builds its own throw-away store, injects one fault of issue 29 the way it was
found, and counts what came of it (a Row)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import apsw

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
DOMAIN = "shop"
CLIENT_TIMEOUT = {"session-start": 10.0, "user-prompt-submit": 5.0}
PROMPT = "How do we pool the Postgres connections, PgBouncer in transaction mode?"
LOCKER = """
import sys, time, apsw
con = apsw.Connection(sys.argv[1])
con.execute("begin immediate")
con.execute("update settings set value = value where key = 'dedup_time_window_secs'")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""
# Twelve facts and a rewording of each (each rewording is caught one at a time: the case checks it first).
REWORDINGS = [
    ("We decided to use PgBouncer in transaction mode for the checkout database because the pool ran out of "
     "connections during the load test.",
     "We chose PgBouncer in transaction mode for the checkout database, since the connection pool ran out during "
     "the load test."),
    ("Learned that the CI runner image ships an old OpenSSL, so the TLS tests fail only in CI.",
     "The CI runner image ships an outdated OpenSSL, which is why the TLS tests fail only on CI."),
    ("Every repository class takes a Connection in its constructor and never opens its own, so tests can pass an "
     "in-memory database.",
     "Repository classes receive a Connection through their constructor and never open one themselves, so tests "
     "can hand them an in-memory database."),
    ("The retry middleware also retried POST requests, which caused the double charges on the payment provider.",
     "The double charges at the payment provider came from the retry middleware retrying POST requests too."),
    ("Migration files are named by date and time with a description, and each one runs inside its own transaction.",
     "Each migration file is named with its date, time and a description, and runs in its own transaction."),
    ("The staging cluster runs on spot instances, so long batch jobs must write a checkpoint every ten minutes.",
     "Because staging runs on spot instances, long batch jobs have to write a checkpoint every ten minutes."),
    ("Feature flags are read from LaunchDarkly at start-up and cached for the life of the process.",
     "Feature flags are loaded from LaunchDarkly at start-up and cached for the whole life of the process."),
    ("The search service keeps the mapping of its Elasticsearch index in the search-schema repository.",
     "The mapping of the search service's Elasticsearch index is kept in the search-schema repository."),
    ("The API caps request bodies at 25 megabytes because the CDN rejects larger uploads.",
     "Request bodies are capped at 25 megabytes by the API, since larger uploads are rejected by the CDN."),
    ("Integration tests run against a throwaway Postgres container started by testcontainers instead of the "
     "shared database.",
     "The integration tests use a throwaway Postgres container started by testcontainers instead of the shared "
     "database."),
    ("The mobile app pins the TLS certificate of the API, so rotating the certificate needs an app release first.",
     "Because the mobile app pins the API's TLS certificate, rotating that certificate needs an app release "
     "first."),
    ("Background jobs are queued in Sidekiq with Redis as the backend, and every job must be idempotent.",
     "Background jobs are queued in Sidekiq backed by Redis, and each job has to be idempotent."),
]
WRITER = """
import json, os, sys, time
from subcog_store.store import Store
db, ready, go, texts = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
store = Store(db)
store.embed_many(texts)                   # the model (or the worker) ready, every text embedded
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
for text in texts:
    try:
        r = store.capture(text, "decisions", "shop")
        print(json.dumps({"text": text, "stored": r.stored, "id": r.memory_id, "decision": r.decision}), flush=True)
    except Exception as e:
        print(json.dumps({"text": text, "error": f"{type(e).__name__}: {e}"}), flush=True)
"""
LOOPER = """
import json, random, sys, time
from subcog_store.store import Store
db, seed, secs, pairs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])
rng, store, n = random.Random(seed), Store(db), 0
store.embed_many([t for p in pairs for t in p])
end = time.monotonic() + secs
while time.monotonic() < end:
    kind = rng.choice(("repeat", "rewording", "new"))
    if kind == "new":
        n += 1
        job = rng.choice(["billing", "search", "auth", "export"])
        text = f"Note {seed}-{n}: the {job} job {seed * 1000 + n} keeps its state in table t{seed}_{n}."
    else:
        text = rng.choice(pairs)[0 if kind == "repeat" else 1]
    try:
        r = store.capture(text, "decisions", "shop")
        print(json.dumps({"text": text, "stored": r.stored, "id": r.memory_id}), flush=True)
    except Exception as e:
        print(json.dumps({"text": text, "error": f"{type(e).__name__}: {e}"}), flush=True)
"""


@dataclass
class Row:
    name: str
    trials: int = 0
    within_budget: int = 0
    lost: int = 0
    twice: int = 0
    errors: int = 0
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def note(self, text: str) -> None:
        if len(self.notes) < 8:
            self.notes.append(text[:300])

    def line(self) -> str:
        return (f"{self.name}: trials {self.trials}, within budget {self.within_budget}, lost {self.lost}, "
                f"twice {self.twice}, errors {self.errors}")


class Ctx:
    """One case's directory, environment (no SUBCOG_* of the caller; homes, log and runtime directory inside),
    and the processes it started (all ended by `close`)."""

    def __init__(self, work: Path, args, python: str = sys.executable):
        self.work, self.args, self.python = work, args, python   # `python`: another tree's (the baseline)
        script = Path(python).parent / "subcog-store"
        self.cli_cmd = [str(script)] if script.exists() else [python, "-m", "subcog_store"]
        work.mkdir(parents=True)
        base = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
        for name in ("XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"):
            (work / name.lower()).mkdir(mode=0o700)
            base[name] = str(work / name.lower())
        base.update(SUBCOG_HOOK_LOG=str(work / "hook.log"), SUBCOG_HOOK_DOMAIN=DOMAIN,
                    SUBCOG_HOOK_ANSWER_SECS="600", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        self.base = base
        self.procs: list[subprocess.Popen] = []
        self.worker = False

    def env(self, worker: bool = False, **extra: str) -> dict[str, str]:
        return {**self.base, "SUBCOG_WORKER_ENABLED": "true" if worker else "false", **extra}

    def cli(self, *args: str, stdin: bytes = b"", worker: bool = False, timeout: float = 300, **extra: str
            ) -> subprocess.CompletedProcess:
        return subprocess.run([*self.cli_cmd, *args], input=stdin, capture_output=True, env=self.env(worker, **extra),
                              timeout=timeout, cwd=self.work)

    def hook(self, db: Path, event: str, payload: dict, worker: bool = False
             ) -> tuple[subprocess.CompletedProcess, float]:
        started = time.monotonic()
        proc = self.cli("--db", str(db), "hook", event, stdin=json.dumps(payload).encode(), worker=worker)
        return proc, time.monotonic() - started

    def start_worker(self) -> None:
        proc = self.cli("worker", "start", worker=True)
        if proc.returncode != 0:
            raise RuntimeError(f"worker did not start: {proc.stderr.decode()[-300:]}")
        self.worker = True

    def popen(self, args: list[str], worker: bool = False, **kw) -> subprocess.Popen:
        proc = subprocess.Popen(args, env=self.env(worker), cwd=self.work, **kw)
        self.procs.append(proc)
        return proc

    def seed(self, db: Path, sample: str = "session-a", session: str = "earlier") -> None:
        """A store holding a sample session's memories (captured in process)."""
        path = self.work / f"{sample}.jsonl"
        shutil.copyfile(SAMPLES / f"{sample}.jsonl", path)
        proc, _ = self.hook(db, "pre-compact", capture_payload(path, session))
        if proc.returncode != 0 or b"captured" not in proc.stdout:
            raise RuntimeError(f"seeding failed: {proc}")

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for stream in (proc.stdout, proc.stderr, proc.stdin):
                if stream:
                    stream.close()
        if self.worker:
            self.cli("worker", "stop", worker=True)


def capture_payload(path: Path, session: str) -> dict:
    return {"session_id": session, "transcript_path": str(path), "cwd": "/", "trigger": "manual",
            "hook_event_name": "PreCompact"}


def rows(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    con.setbusytimeout(30_000)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def twins(db: Path) -> int:
    return rows(db, "select count(*) from (select 1 from memories where status = 'active' group by domain, "
                    "namespace, content_hash having count(*) > 1)")[0][0]


def wait_until(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return predicate()


# ------------------------------------------------------------------------------------------- 1. recall, locked
def recall_under_lock(ctx: Ctx) -> Row:
    row = Row("1 recall while another process holds the write lock")
    for way in ("in-process", "worker"):
        db = ctx.work / f"{way}.db"
        ctx.seed(db)
        worker = way == "worker"
        if worker and not ctx.worker:
            ctx.start_worker()
        locker = ctx.popen([ctx.python, "-c", LOCKER, str(db), str(ctx.args.lock_secs)], stdout=subprocess.PIPE)
        if locker.stdout.readline().strip() != b"locked":
            raise RuntimeError("the locker did not take the lock")
        until, n, worst = time.monotonic() + ctx.args.lock_secs - 2, 0, 0.0
        while time.monotonic() < until:
            n += 1
            for event, payload in (("session-start", {"session_id": f"{way}-s{n}", "cwd": "/", "source": "startup",
                                                      "hook_event_name": "SessionStart"}),
                                   ("user-prompt-submit", {"session_id": f"{way}-p{n}", "cwd": "/", "prompt": PROMPT,
                                                           "hook_event_name": "UserPromptSubmit"})):
                proc, elapsed = ctx.hook(db, event, payload, worker)
                row.trials += 1
                worst = max(worst, elapsed)
                ok = proc.returncode == 0 and proc.stderr == b""
                context = _context(proc.stdout) if ok else None
                if not ok or context is None:
                    row.errors += 1
                    row.note(f"{way} {event}: exit {proc.returncode}, stderr {proc.stderr[:80]!r}")
                elif "PgBouncer" not in context:
                    row.lost += 1
                    row.note(f"{way} {event}: answered without its memories in {elapsed:.1f} s")
                elif elapsed <= CLIENT_TIMEOUT[event]:
                    row.within_budget += 1
        locker.kill()
        locker.wait()
        ctx.hook(db, "user-prompt-submit", {"session_id": "after", "cwd": "/", "prompt": "weather",
                                            "hook_event_name": "UserPromptSubmit"}, worker)
        due = 2 * n + 1
        if not wait_until(lambda: rows(db, "select count(*) from recall_log")[0][0] >= due):
            written = rows(db, "select count(*) from recall_log")[0][0]
            row.lost += due - written
            row.note(f"{way}: {due - written} recall_log rows never written after the lock was released")
        row.note(f"{way}: {2 * n} hooks while locked, slowest {worst:.2f} s")
    return row


def _context(stdout: bytes) -> str | None:
    """The additionalContext of a recall hook's output ("" for none), None when the output is not valid."""
    text = stdout.decode("utf-8", "replace").strip()
    if not text:
        return ""
    try:
        return json.loads(text)["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        return None


# ------------------------------------------------------------------------------------------- 2 and 7: MCP
class Mcp:
    """The server in its own process (SUBCOG_DB in the case's environment), spoken to line by line."""

    def __init__(self, ctx: Ctx):
        self.proc = ctx.popen([*ctx.cli_cmd, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
        self.next = 0
        self.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "faults", "version": "1"}})
        self.proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')

    def ask(self, method: str, params: dict) -> dict:
        self.next += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}
                                         ).encode() + b"\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def tool(self, name: str, **arguments) -> tuple[bool, str]:
        result = self.ask("tools/call", {"name": name, "arguments": arguments}).get("result", {})
        return bool(result.get("isError", True)), (result.get("content") or [{"text": ""}])[0]["text"]


def mcp_file_replaced(ctx: Ctx) -> Row:
    row = Row("2 MCP server: its file deleted, then replaced")
    db = ctx.work / "m.db"
    ctx.base["SUBCOG_DB"] = str(db)
    ctx.base["SUBCOG_DEDUP_SEMANTIC_ENABLED"] = "false"
    server = Mcp(ctx)
    server.tool("remember", content=REWORDINGS[0][0], namespace="decisions")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    other = ctx.work / "other.db"
    ctx.cli("--db", str(other), "capture", "-n", "learnings", "--domain", DOMAIN, REWORDINGS[1][0])
    for step, fact in (("deleted", REWORDINGS[2][0]), ("replaced", REWORDINGS[3][0])):
        if step == "replaced":
            os.replace(other, db)
        error, said = server.tool("remember", content=fact, namespace="decisions")
        row.trials += 1
        if error:
            row.errors += 1
            row.note(f"{step}: {said[:120]}")
            continue
        row.within_budget += 1
        if not rows(db, "select count(*) from memories where content = ?", (fact,))[0][0]:
            row.lost += 1
            row.note(f"{step}: acknowledged but not in the file at the path")
    row.trials += 1
    if REWORDINGS[1][0][:30] in server.tool("search", query="CI runner OpenSSL TLS tests")[1]:
        row.within_budget += 1
    else:
        row.lost += 1
        row.note("replaced: the new file's memory not found")
    if rows(db, "pragma integrity_check") != [("ok",)]:
        row.errors += 1
        row.note("the file at the path fails its integrity check")
    server.proc.stdin.close()
    server.proc.wait(60)
    return row


def mcp_piped(ctx: Ctx) -> Row:
    row = Row("7 MCP server: requests and the end of input at once")
    db = ctx.work / "m.db"
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "faults", "version": "1"}}
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "remember", "arguments": {"content": REWORDINGS[4][0], "namespace": "decisions"}}},
             {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
              "params": {"name": "search", "arguments": {"query": "migration files"}}}]
    proc = subprocess.run([*ctx.cli_cmd, "mcp"], input=b"".join(json.dumps(m).encode() + b"\n" for m in lines),
                          capture_output=True, env=ctx.env(SUBCOG_DB=str(db), SUBCOG_DEDUP_SEMANTIC_ENABLED="false"),
                          timeout=300, cwd=ctx.work)
    answered = {json.loads(line).get("id") for line in proc.stdout.decode().splitlines() if line.strip()}
    row.trials = 4
    row.within_budget = len(answered & {1, 2, 3, 4})
    row.lost = 4 - row.within_budget
    row.errors = int(proc.returncode != 0)
    if row.lost:
        row.note(f"answered {sorted(answered)} of [1, 2, 3, 4]")
    return row


# ------------------------------------------------------------------------------------------- 3. pending rows
def bad_pending_row(ctx: Ctx) -> Row:
    row = Row("3 an unreadable pending-capture record beside a valid one")
    db = ctx.work / "m.db"
    small = ctx.work / "small.jsonl"
    small.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n")
    ctx.hook(db, "pre-compact", capture_payload(small, "first"))
    left = ctx.work / "left.jsonl"
    shutil.copyfile(SAMPLES / "session-a.jsonl", left)
    with apsw.Connection(str(db)) as con:
        # the columns named: later migrations add some (015: deferred, the piece resume) with defaults
        insert = "insert into hook_pending (session_id, transcript_path, payload, queued_at) values (?, ?, ?, ?)"
        con.execute(insert, ("bad", "/t/x.jsonl", "{truncated", "2000-01-01T00:00:00Z"))
        con.execute(insert, ("left", str(left), json.dumps({"session_id": "left", "transcript_path": str(left),
                                                             "cwd": "/"}), "2000-01-01T00:00:00.000Z"))
    doctor = ctx.cli("--db", str(db), "doctor")
    row.trials += 1
    if b"FAIL no_unreadable_pending_capture" in doctor.stdout and b"FAIL no_capture_left_pending" in doctor.stdout:
        row.within_budget += 1
    else:
        row.errors += 1
        row.note("doctor did not report both the unreadable and the left pending record")
    for session in ("second", "third"):
        proc, _ = ctx.hook(db, "pre-compact", capture_payload(small, session))
        row.errors += int(proc.returncode != 0 or proc.stderr != b"")
    stored = rows(db, "select count(*) from memories where status = 'active'")[0][0]
    row.trials += 7
    row.within_budget += min(stored, 7)
    row.lost += max(7 - stored, 0)
    row.twice += twins(db)
    if "pending captures not read" in (ctx.work / "hook.log").read_text():
        row.errors += 1
    return row


# ------------------------------------------------------------------------------------------- 4. the clock
CLOCK = """
import json, sys
from subcog_store.store import Store
fact, other = sys.argv[1], sys.argv[2]
now = [1_800_000_000.0]
with Store(sys.argv[3], clock=lambda: now[0], environ={"SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"}) as store:
    first = store.capture(fact, "decisions", "shop")
    now[0] += 900
    store.forget(first.memory_id)
    now[0] -= 3600
    again = store.capture(fact, "decisions", "shop")
env = {"SUBCOG_DEDUP_SEMANTIC_ENABLED": "false", "SUBCOG_DEDUP_CACHE_CAPACITY": "3"}
with Store(sys.argv[4], clock=lambda: now[0], environ=env) as store:
    texts = [f"{other} (service {i})" for i in range(5)]
    for i, text in enumerate(texts):
        now[0] -= 120 if i == 3 else 0
        store.record_capture(text, "decisions", "shop")
        now[0] += 1
    newest = store.check_duplicate(texts[4], "decisions", "shop").reason
print(json.dumps({"stored": again.stored, "decision": again.decision, "newest": newest}))
"""


def clock_back(ctx: Ctx) -> Row:
    row = Row("4 a clock that jumps back an hour (injected)")
    proc = subprocess.run([ctx.python, "-c", CLOCK, REWORDINGS[5][0], REWORDINGS[6][0], str(ctx.work / "m.db"),
                           str(ctx.work / "p.db")], capture_output=True, env=ctx.env(), timeout=300, cwd=ctx.work)
    out = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    row.trials = 2
    row.within_budget = int(out["stored"]) + int(out["newest"] == "recent_capture")
    row.lost = row.trials - row.within_budget
    if not out["stored"]:
        row.note(f"the capture after the jump refused: {out['decision']}")
    if out["newest"] != "recent_capture":
        row.note("the newest recent capture was pruned after the jump")
    return row


# ------------------------------------------------------------------------------------------- 5. rewordings
def rewordings_together(ctx: Ctx) -> Row:
    from subcog_store.store import Store

    row = Row("5 twelve rewordings stored at once by 24 processes (half via the worker)")
    caught = one_at_a_time(ctx, row)
    ctx.start_worker()
    for round_ in range(2):
        db = ctx.work / f"r{round_}.db"
        Store(db, environ={}).close()
        go = ctx.work / f"go{round_}"
        texts = [text for pair in caught for text in pair]
        procs = [ctx.popen([ctx.python, "-c", WRITER, str(db), str(ctx.work / f"ready{round_}-{i}"), str(go),
                            json.dumps([text])], worker=i % 2 == 1, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for i, text in enumerate(texts)]
        if not wait_until(lambda: all((ctx.work / f"ready{round_}-{i}").exists() for i in range(len(texts))), 600):
            raise RuntimeError("the writers did not get ready")
        go.touch()
        results = _collect(procs, row)
        row.trials += len(caught)
        active = {c for c, in rows(db, "select content from memories where status = 'active'")}
        for pair in caught:
            kept = sum(text in active for text in pair)
            row.twice += int(kept > 1)
            row.lost += int(kept == 0)
            row.within_budget += int(kept == 1)
        row.errors += sum("error" in r for r in results)
    return row


def one_at_a_time(ctx: Ctx, row: Row) -> list[tuple[str, str]]:
    """The pairs whose rewording the store catches when they come one at a time (the answer to match)."""
    from subcog_store.store import Store

    with Store(ctx.work / "control.db", environ={}) as store:
        caught = [pair for pair in REWORDINGS if store.capture(pair[0], "decisions", DOMAIN).stored
                  and not store.capture(pair[1], "decisions", DOMAIN).stored]
    if len(caught) < len(REWORDINGS):
        row.note(f"one at a time {len(caught)} of {len(REWORDINGS)} rewordings are caught; only those count")
    return caught


def _collect(procs: list[subprocess.Popen], row: Row) -> list[dict]:
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            row.errors += 1
            row.note(f"a writer failed: {err.decode()[-200:]}")
        results += [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    for r in results:
        if "error" in r:
            row.note(r["error"])
    return results


def eight_writers(ctx: Ctx) -> Row:
    from subcog_store.store import Store

    row = Row(f"5 eight processes looping {ctx.args.loop_secs:.0f} s (repeats, rewordings, new texts)")
    caught = one_at_a_time(ctx, row)
    ctx.start_worker()
    db = ctx.work / "m.db"
    Store(db, environ={}).close()
    procs = [ctx.popen([ctx.python, "-c", LOOPER, str(db), str(i + 1), str(ctx.args.loop_secs),
                        json.dumps(REWORDINGS)], worker=i % 2 == 1, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for i in range(8)]
    results = _collect(procs, row)
    acked = {r["id"] for r in results if r.get("stored")}
    active = {i: (c, s) for i, c, s in rows(db, "select id, content, successor_id from memories "
                                                "where status = 'active'")}
    row.trials = len(results)
    row.errors += sum("error" in r for r in results)
    row.within_budget = sum("error" not in r for r in results)
    row.lost = len(acked - set(active))
    row.twice = twins(db)
    if row.twice:
        row.note(f"{row.twice} texts active twice word for word")
    by_text = {c: (i, s) for i, (c, s) in active.items()}
    for fact, rewording in caught:
        if fact in by_text and rewording in by_text:
            (a, a_next), (b, b_next) = by_text[fact], by_text[rewording]
            if a_next != b and b_next != a:
                row.twice += 1
                row.note(f"both active, not linked: {fact[:50]}")
    return row


# ------------------------------------------------------------------------------------------- 6. damage
def damaged_file(ctx: Ctx) -> Row:
    row = Row("6 a database with a damaged data page")
    db = ctx.work / "m.db"
    ctx.seed(db)
    con = apsw.Connection(str(db))
    con.execute("pragma wal_checkpoint(TRUNCATE)")
    pages = [p for p, in con.execute("select pageno from dbstat where name = 'memory_vectors_vector_chunks00' and "
                                     "pagetype = 'overflow' order by pageno")]
    size = con.execute("pragma page_size").fetchone()[0]
    con.close()
    with open(db, "r+b") as f:
        f.seek((pages[len(pages) // 4] - 1) * size)
        f.write(b"\xde\xad\xbe\xef" * (size // 4))
    before = rows(db, "select count(*) from memories")[0][0]
    steps = [("search", ["--db", str(db), "search", "-d", DOMAIN, "how do we pool connections"], 8),
             ("capture", ["--db", str(db), "capture", "-n", "decisions", "--domain", DOMAIN, REWORDINGS[7][0]], 8)]
    for name, args, code in steps:
        proc = ctx.cli(*args)
        row.trials += 1
        if proc.returncode == code and b"salvage" in proc.stderr:
            row.within_budget += 1
        else:
            row.errors += 1
            row.note(f"{name}: exit {proc.returncode} {proc.stderr[-120:]!r}")
    path = ctx.work / "b.jsonl"
    shutil.copyfile(SAMPLES / "session-b.jsonl", path)
    proc, _ = ctx.hook(db, "pre-compact", capture_payload(path, "b"))
    row.trials += 1
    if proc.returncode == 0 and proc.stderr == b"" and b"damaged" in proc.stdout:
        row.within_budget += 1
    else:
        row.errors += 1
        row.note(f"hook: exit {proc.returncode}, {proc.stdout[:100]!r}")
    written = rows(db, "select count(*) from memories")[0][0] - before
    if written:
        row.errors += written
        row.note(f"{written} memories written into the damaged file")
    salvaged = ctx.cli("--db", str(db), "salvage")
    row.trials += 1
    fresh = ctx.work / "new.db"
    ctx.cli("--db", str(fresh), "capture", "--jsonl", stdin=salvaged.stdout)
    if rows(fresh, "select count(*) from memories where status = 'active'")[0][0] == before:
        row.within_budget += 1
    else:
        row.lost += 1
        row.note("salvage did not bring every memory into a new store")
    return row


# ------------------------------------------------------------------------------------------- 9. worker wait
WAITER = """
import json, socket, sys, time
from subcog_store.worker import protocol
paths = protocol.Paths()
for wait in ("abc", [1], {"s": 1}, True, "1"):
    s = socket.socket(socket.AF_UNIX)
    try:
        with protocol.Address(paths.sock) as address:
            s.connect(address)
        s.sendall(protocol.encode({"op": "embed", "v": protocol.PROTOCOL, "key": protocol.version_key(),
                                   "texts": ["x"], "model_dir": "/", "wait": wait}))
        answer, _ = protocol.recv(s, time.monotonic() + 10)
        print(json.dumps({"wait": wait, "answer": answer}))
    except Exception as e:
        print(json.dumps({"wait": wait, "error": f"{type(e).__name__}: {e}"}))
    finally:
        s.close()
"""


def worker_wait(ctx: Ctx) -> Row:
    row = Row("9 worker requests whose wait is not a number")
    ctx.start_worker()
    proc = subprocess.run([ctx.python, "-c", WAITER], capture_output=True, env=ctx.env(True), timeout=120,
                          cwd=ctx.work)
    for line in proc.stdout.decode().splitlines():
        result = json.loads(line)
        row.trials += 1
        answer = result.get("answer") or {}
        if answer.get("ok") is False and "wait" in str(answer.get("error")):
            row.within_budget += 1
        else:
            row.errors += 1
            row.note(f"wait {result['wait']!r}: {result.get('error') or answer}")
    return row


# ------------------------------------------------------------------------------------------- 8 and 10 (issue 22's)
def huge_record(ctx: Ctx, paragraphs: int = 3000, worker: bool = True) -> Row:
    """One assistant record of 3,000 decision paragraphs captured by successive pre-compact runs (default
    budget, the model, the machine's load) until a run finds nothing new. Each run must answer within the client's
    timeout and the record move on by at least the minimum (MIN_CAPTURES candidates, or what is left) from one run
    to the next, so the record is done within ceil(paragraphs / MIN_CAPTURES) runs plus the last one that finds
    nothing new: the bound, whatever the load. `worker`: the default set-up, a warm worker (which also goes on with
    a deferred capture between the hooks, capture/deferred.py); else in process only (SUBCOG_WORKER_ENABLED=false:
    each run pays the imports and the model's start-up). Stops at the bound, or after --case-minutes (then what
    is left is counted lost)."""
    import math
    import statistics

    from bench.torture import decision, record
    from subcog_store.capture.session import MIN_CAPTURES
    from subcog_store.claude_code.request import CAPTURE_TIMEOUT_SECS

    row = Row(f"8 a {paragraphs:,}-paragraph record over successive runs, "
              + ("a warm worker (the default)" if worker else "in process (worker off)"))
    path, db = ctx.work / "huge.jsonl", ctx.work / "m.db"
    if worker:
        ctx.start_worker()
    path.write_bytes(record("\n\n".join(decision(800_000 + i) for i in range(paragraphs)), "h0"))
    bound = math.ceil(paragraphs / MIN_CAPTURES) + 1
    began, before, added, seconds, done = time.monotonic(), 0, [], [], False
    while row.trials < bound and time.monotonic() - began < ctx.args.case_minutes * 60:
        proc, elapsed = ctx.hook(db, "pre-compact", capture_payload(path, "huge"), worker=worker)
        row.trials += 1
        row.errors += int(proc.returncode != 0 or proc.stderr != b"")
        now = rows(db, "select count(*) from memories where status = 'active'")[0][0]
        if b"nothing new" in proc.stdout:
            row.within_budget += int(elapsed <= CAPTURE_TIMEOUT_SECS)
            done = True
            break
        row.within_budget += int(elapsed <= CAPTURE_TIMEOUT_SECS and now - before >= min(MIN_CAPTURES,
                                                                                          paragraphs - before))
        added.append(now - before)
        seconds.append(elapsed)
        before = now
    captured = rows(db, "select count(*) from memories where status = 'active'")[0][0]
    row.lost = max(paragraphs - captured, 0)
    row.twice = twins(db)
    minutes = (time.monotonic() - began) / 60
    state = f"done in {row.trials} runs" if done else f"not done after {row.trials} runs ({minutes:.0f} min)"
    row.note(f"{captured} of {paragraphs} captured, {state}; the bound {bound} runs (ceil({paragraphs} / "
             f"MIN_CAPTURES {MIN_CAPTURES}) + the last); memories a run: min {min(added, default=0)}, median "
             f"{statistics.median(added) if added else 0:.0f}, max {max(added, default=0)}; seconds a run: median "
             f"{statistics.median(seconds) if seconds else 0:.1f}, max {max(seconds, default=0):.1f} (timeout "
             f"{CAPTURE_TIMEOUT_SECS:.0f})")
    return row


def both_paths(ctx: Ctx, sessions: int = 12) -> Row:
    """Twelve real transcripts, each through pre-compact then session-start (compact): in process, and through a
    warm worker that served other stores first; the two stores must hold the same memories."""
    shared = Path(os.environ.get("SUBCOG_SHARED_DIR") or REPO.parent / "shared") / "samples" / "real" / "train"
    found = sorted(shared.glob("*.jsonl"))[:sessions]
    row = Row(f"10 {len(found)} real transcripts in process and through a worker with a history")
    if not found:
        row.note(f"skipped: {shared} not present")
        return row
    ctx.start_worker()
    for warm_up in range(3):   # the worker's history: other stores' captures and recalls
        other = ctx.work / f"other{warm_up}.db"
        ctx.hook(other, "pre-compact", capture_payload(found[-1 - warm_up], f"w{warm_up}"), worker=True)
    stores = {}
    for way in ("in-process", "worker"):
        db = ctx.work / f"{way}.db"
        for i, transcript in enumerate(found):
            path = ctx.work / f"{way}-{transcript.name}"
            shutil.copyfile(transcript, path)
            for _ in range(10):   # a capture deferred for its budget is completed by the next runs
                proc, _ = ctx.hook(db, "pre-compact", capture_payload(path, f"s{i}"), worker=way == "worker")
                row.errors += int(proc.returncode != 0 or proc.stderr != b"")
                if b"nothing new" in proc.stdout or b"stopped early" not in proc.stdout:
                    break
            ctx.hook(db, "session-start", {"session_id": f"s{i}", "cwd": "/", "source": "compact",
                                           "hook_event_name": "SessionStart"}, worker=way == "worker")
        stores[way] = {c for c, in rows(db, "select content from memories where status = 'active'")}
    row.trials = len(stores["in-process"])
    row.within_budget = len(stores["in-process"] & stores["worker"])
    row.lost = len(stores["in-process"] - stores["worker"])
    row.twice = len(stores["worker"] - stores["in-process"])
    row.note(f"in process {len(stores['in-process'])} memories, through the worker {len(stores['worker'])}")
    return row


# Issue 22's engineer owns 8 and 10: run with --with-22 until they have landed.
def huge_record_in_process(ctx: Ctx) -> Row:
    return huge_record(ctx, worker=False)


ISSUE_22_CASES = {"huge-record": huge_record, "huge-record-in-process": huge_record_in_process,
                  "both-paths": both_paths}
CASES = {"recall-lock": recall_under_lock, "mcp-replaced": mcp_file_replaced, "pending": bad_pending_row,
         "clock": clock_back, "rewordings": rewordings_together, "eight-writers": eight_writers,
         "damaged": damaged_file, "mcp-piped": mcp_piped, "worker-wait": worker_wait}


# ------------------------------------------------------------------------------------------- item 5's price
def recheck_cost(work: Path, size: int = 10_000, captures: int = 400) -> str:
    """Capture p50 with and without the re-check under the write lock (alternating, same process and store), and
    the re-check's own statement with no new row and with five written since the check."""
    import numpy as np

    from subcog_store.dedup import check as check_mod
    from subcog_store.store import Store

    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(29)

    class Vectors:   # random unit vectors: every text unique, the KNN's cost real
        dimensions, loaded = 384, True

        def load(self) -> None:
            pass

        def embed_batch(self, texts):
            v = rng.standard_normal((len(texts), 384)).astype(np.float32)
            return v / np.linalg.norm(v, axis=1, keepdims=True)

    store = Store(work / "cost.db", embedder=Vectors(), environ={"SUBCOG_DEDUP_CACHE_CAPACITY": "100"})
    from subcog_store.store import CaptureRequest

    store.capture_many([CaptureRequest(f"Seeded fact number {i} about component c{i} and its owner.", "decisions")
                        for i in range(size)], dedupe_batch=False)
    # The re-check runs in dedup/check.revalidate (called by dedup/write under the write lock): off = a no-op there.
    real, times = check_mod.check_again, {"with": [], "without": []}
    try:
        for i in range(captures):
            way = "with" if i % 2 == 0 else "without"
            check_mod.check_again = real if way == "with" else (lambda *a, **k: None)
            started = time.perf_counter()
            store.capture(f"A new fact number {i} about service s{i} and the queue it reads from.", "decisions")
            times[way].append((time.perf_counter() - started) * 1000)
    finally:
        check_mod.check_again = real
    inputs = check_mod.CheckInputs("probe text for the cost of the re-check", "0" * 64, "decisions", "project",
                                   time.time())
    vector = Vectors().embed_batch(["x"])[0]
    result = check_mod.CheckResult(False, None, None, None, None, 0.0, "0" * 64, "project", "decisions",
                                   tiers_run=["exact", "semantic"], threshold=0.92)
    top = store.con.execute("select max(seq) from memories").fetchone()[0]   # the bench reads; never writes
    alone = {}
    for label, seen in (("no row written since", top), ("5 rows written since", top - 5)):
        result.seen_seq, spent = seen, []
        for _ in range(200):
            started = time.perf_counter()
            check_mod.new_neighbours(store.con, inputs, result, store.settings, vector)
            spent.append((time.perf_counter() - started) * 1000)
        alone[label] = float(np.median(spent))
    store.close()
    p50 = {k: float(np.median(v)) for k, v in times.items()}
    return (f"Item 5's re-check on the capture path ({size:,} memories in the scope, random vectors, {captures} "
            f"captures alternating): capture p50 {p50['with']:.2f} ms with it, {p50['without']:.2f} ms without it "
            f"(ratio {p50['with'] / p50['without']:.3f}); the re-check's statement alone "
            + ", ".join(f"{v * 1000:.0f} µs with {k}" for k, v in alone.items()) + ".")
