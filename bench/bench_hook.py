"""Hook benchmark: wall time of the whole `subcog-store hook ...` process, start to exit.

A generated 2,000-record transcript (user turns, assistant tool calls, tool results, progress records, narration,
and 20 assistant paragraphs that classify as decisions / learnings / patterns) is fed to the real hook process
against stores of 1k and 10k memories (bulk-inserted through the store's own SQL from bench/corpus.py sentences
and their cached embeddings), in two cases:

- (a) every candidate new: the store file is copied fresh before each run, fresh session id, so all are
  checked semantically and stored (the model is loaded);
- (b) every candidate a repeat: they were captured once beforehand; each run uses a new session id (so the
  offset does not skip them) on a fresh copy of that store; all are exact matches, the model is never loaded.

These rows run in process (SUBCOG_WORKER_ENABLED=false: the path every hook took before the warm worker). The
worker section (issue #13, the largest store) measures, interleaved run by run so the shared machine's drift
spreads over all of them: today's in-process path; the first call (no worker yet: it runs in process and starts
one); the warm worker; for pre-compact (a) and (b), session-start (source startup: the project index) and
user-prompt-submit; with the interpreter floor beside them. The worker rows run the hook as `install-hooks`
registers it (`python -S -P .../subcog_store/claude_code/command.py EVENT`). A warm pre-compact answers before its
capture has finished (SUBCOG_HOOK_ANSWER_SECS): the bench waits for the capture to finish before the next run,
reports when it did, and checks what the run saved. `--tree DIR` runs the hooks from another copy of the source
(PYTHONPATH), e.g. one with a change not yet in this checkout.

Baselines measured in the same run: the interpreter floor (`python -c "import json,sys; json.load(sys.stdin)"`)
and the hook with SUBCOG_DEDUP_ENABLED=false. A phase breakdown (imports, store open, transcript read, model load,
embedding, SQL) is measured in a cold subprocess with time.perf_counter, and the import tree with -X importtime.
Everything is written to a temporary directory and deleted; nothing is saved in the repository.

    python -m bench.bench_hook [--reps 15] [--sizes 1000,10000] [--quick] [--tree DIR] [--no-worker]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sys.executable).parent / "subcog-store"
CLI = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "subcog_store"]
NAMESPACE, DOMAIN = "decisions", "project"
TARGET_REPEAT_MS, TARGET_NEW_MS, DESIGN_MS = 200.0, 1000.0, 100.0

# 20 lasting statements, varied enough that none is a paraphrase of another
CANDIDATES = [
    "We decided to use PgBouncer in transaction mode for the checkout database, because every request opened its "
    "own session and the pool ran out of connections during the load test.",
    "Learned that the ORM keeps a transaction open for the whole request even when the handler only reads from "
    "the cache, which leaves connections idle in transaction.",
    "Pattern: every repository class takes a Connection in its constructor and never opens its own, so tests can "
    "pass an in-memory database.",
    "We decided to cache user sessions in Redis with a TTL of 5 minutes, because sessions are read on every "
    "request and Postgres was the bottleneck.",
    "Discovered that the retry middleware retried POST requests as well, which is what caused the double charges "
    "on the payment provider.",
    "We decided to never retry non-idempotent requests in the HTTP client; only GET and HEAD are retried, with "
    "exponential backoff capped at four attempts.",
    "Convention: migration files are named YYYYMMDD_HHMM_description.sql and each one runs inside its own "
    "transaction.",
    "Turns out the load balancer health check hits /healthz every second on every node, which alone was eight "
    "percent of all database queries.",
    "We chose Kafka for the order events instead of RabbitMQ because consumers must be able to replay a week of "
    "history after an outage.",
    "Learned that the CI runner image ships an old OpenSSL, so the TLS 1.3 integration tests fail only in CI and "
    "never on laptops.",
    "Pattern: feature flags are read once per request through the FlagContext object and never queried directly "
    "from inside business logic.",
    "We decided to store money as integer cents in a bigint column, never as floating point, after the rounding "
    "bug in the invoice totals.",
    "Discovered that the nightly export job holds a share lock on the orders table for up to ten minutes, which "
    "blocks the schema migrations.",
    "Convention: every public API endpoint returns errors as a JSON body with a machine-readable code field and "
    "a human-readable message.",
    "We opted for server-side rendering of the product pages with a CDN cache of sixty seconds, since search "
    "engines did not index the client-rendered version.",
    "Learned that the image resizing worker leaks file descriptors when a download times out, so it is restarted "
    "every thousand jobs.",
    "Best practice here: log a request id on every line and pass it to downstream services in the X-Request-Id "
    "header.",
    "We decided to pin the Python base image by digest in the Dockerfile, because a silent upstream update broke "
    "the build twice last month.",
    "Turns out the mobile app sends timestamps in local time without an offset, so the API converts them using the "
    "user's stored time zone.",
    "Pattern: background jobs are idempotent and keyed by a deterministic job id, so enqueuing the same work twice "
    "runs it once.",
]
NARRATION = ["Now let me run the tests.", "Let me check the configuration file.", "I'll look at the logs next.",
             "Great, that worked.", "Let me search for the call sites.", "Now I'll update the handler."]
USER_TURNS = ["Can you look at the failing test?", "Sounds good, go ahead.", "What about the cache?",
              "Please also check the migrations.", "Thanks, continue."]


# -- inputs ---------------------------------------------------------------------------------------------------
def make_transcript(path: Path, records: int = 2000, seed: int = 1) -> None:
    """`records` JSONL records, realistic mix, with the 20 candidates spread evenly through it."""
    rng = random.Random(seed)
    sid = "bench-session"
    slots = set(range(records // 20 // 2, records, records // 20))
    lines, parent, cand = [], None, 0

    def rec(kind: str, message: dict | None = None, **extra) -> None:
        nonlocal parent
        u = str(uuid.UUID(int=rng.getrandbits(128)))
        data = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/shop",
                "sessionId": sid, "version": "2.1.300", "gitBranch": "main", "type": kind, "uuid": u,
                "timestamp": "2026-11-20T09:00:00Z", **extra}
        if message is not None:
            data["message"] = message
        lines.append(json.dumps(data))
        parent = u

    lines.append(json.dumps({"type": "file-history-snapshot", "messageId": "m0", "snapshot": {
        "messageId": "m0", "trackedFileBackups": {}, "timestamp": "2026-11-20T09:00:00Z"}, "isSnapshotUpdate": False}))
    while len(lines) < records:
        i = len(lines)
        if i in slots and cand < len(CANDIDATES):
            text = f"{rng.choice(NARRATION)}\n\n{CANDIDATES[cand]}"
            cand += 1
            rec("assistant", {"role": "assistant", "type": "message", "model": "claude-sonnet-4-5",
                              "content": [{"type": "thinking", "thinking": "Consider the options. " * 5},
                                          {"type": "text", "text": text}]})
            continue
        r = rng.random()
        if r < 0.30:
            tid = f"toolu_{i}"
            rec("assistant", {"role": "assistant", "content": [
                {"type": "tool_use", "id": tid, "name": rng.choice(["Bash", "Read", "Edit", "Grep"]),
                 "input": {"command": f"grep -rn pool_size src/ # {i}"}}]})
        elif r < 0.60:
            out = "\n".join(f"src/module_{rng.randrange(100)}.py:{rng.randrange(500)}: value = {rng.random()}"
                            for _ in range(rng.randrange(5, 60)))
            rec("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i - 1}",
                                                      "content": out}]}, toolUseResult={"stdout": out[:200]})
        elif r < 0.75:
            rec("progress", None, data={"type": "hook_progress", "hookEvent": "PostToolUse"})
        elif r < 0.90:
            rec("assistant", {"role": "assistant", "content": [{"type": "text", "text": rng.choice(NARRATION)}]})
        else:
            rec("user", {"role": "user", "content": rng.choice(USER_TURNS)})
    assert cand == len(CANDIDATES), cand
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def corpus_vectors(n: int, log) -> tuple[list[str], np.ndarray, str]:
    """n realistic sentences and unit vectors: bench/corpus.py with its embedding cache when every chunk is
    cached; chunks not cached get a cached vector plus noise (the KNN scan costs the same), said in the output."""
    from bench import corpus as corpus_mod

    corpus = corpus_mod.build(100_000, n_queries=10, n_fresh=10)
    sentences = corpus.sentences[:n]
    chunks = [sentences[i:i + corpus_mod.CHUNK] for i in range(0, n, corpus_mod.CHUNK)]
    cached = [c for c in chunks if corpus_mod._cached_chunk(c) is not None]
    if len(cached) == len(chunks):
        vectors, _ = corpus_mod.embed_cached(sentences, log=log)
        return sentences, vectors, "corpus embeddings (cached)"
    if not cached:
        rng = np.random.default_rng(0)
        base = rng.standard_normal((n, 384)).astype(np.float32)
        source = "random unit vectors (no embedding cache in bench/out)"
    else:
        have = np.concatenate([np.load(corpus_mod._cached_chunk(c)) for c in cached])
        rng = np.random.default_rng(0)
        base = have[rng.integers(0, len(have), n)] + 0.05 * rng.standard_normal((n, 384)).astype(np.float32)
        base[:len(have)] = have[:n]
        source = f"corpus embeddings for {min(len(have), n)} rows, cached vectors + noise for the rest"
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    return sentences, base.astype(np.float32), source


def build_store(path: Path, sentences: list[str], vectors: np.ndarray) -> None:
    """A store of these memories, built by the code the hooks run (with --tree, that tree's, in a subprocess:
    a store of a newer schema is refused by older code)."""
    if TREE:
        np.save(path.with_suffix(".npy"), vectors)
        path.with_suffix(".json").write_text(json.dumps(sentences), encoding="utf-8")
        code = ("import json, sys, numpy as np; from bench.bench_hook import build_store; from pathlib import Path; "
                "p = Path(sys.argv[1]); build_store(p, json.loads(p.with_suffix('.json').read_text()), "
                "np.load(p.with_suffix('.npy')))")
        environ = {**os.environ, "PYTHONPATH": f"{TREE}{os.pathsep}{ROOT}"}
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, env=environ, cwd=tempfile.gettempdir())
        return
    _build_store(path, sentences, vectors)


def _build_store(path: Path, sentences: list[str], vectors: np.ndarray) -> None:
    from subcog_store.clock import iso
    from subcog_store.db.connection import connect, immediate
    from subcog_store.db.memories import add_vector
    from subcog_store.db.sqlfiles import q

    con = connect(path)
    now = time.time()
    with immediate(con):
        for i, text in enumerate(sentences):
            at = iso(now - 86400 - (len(sentences) - i) * 60)
            seq, _ = con.execute(q("insert_memory"), {
                "id": f"{i:012x}", "domain": DOMAIN, "namespace": NAMESPACE, "content": text, "importance": 0.5,
                "tags": "[]", "source": "bench", "session_id": None, "created_at": at, "now": at}).fetchone()
            add_vector(con, seq, NAMESPACE, DOMAIN, vectors[i].tobytes())
    con.execute("pragma wal_checkpoint(truncate)")
    con.close()


def fresh_copy(src: Path, dst: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(str(dst) + suffix).unlink(missing_ok=True)
    shutil.copyfile(src, dst)



def payload(transcript: Path, session: str) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": str(transcript), "cwd": "/home/dev/shop",
                       "hook_event_name": "PreCompact", "trigger": "auto"}).encode()


def start_payload(session: str) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": "/x.jsonl", "cwd": "/home/dev/shop",
                       "hook_event_name": "SessionStart", "source": "startup"}).encode()


def prompt_payload(session: str) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": "/x.jsonl", "cwd": "/home/dev/shop",
                       "hook_event_name": "UserPromptSubmit",
                       "prompt": "Why does the checkout database run out of connections under load?"}).encode()


TREE: Path | None = None   # --tree (also the hooks' working directory: `python -m` puts it first on sys.path)


def cli() -> list[str]:
    return [sys.executable, "-m", "subcog_store"] if TREE else CLI


def hook_argv(installed: bool) -> list[str]:
    """The hook as `install-hooks` registers it (python -S -P .../claude_code/command.py, or a --tree's from before
    the hook folder was split, .../hook/command.py; `installed`), or through the full command line (`subcog-store
    hook`, the path every hook took before the warm worker; also a --tree that has no hook script yet)."""
    package = (TREE or ROOT) / "subcog_store"
    script = next((p for p in (package / "claude_code" / "command.py", package / "hook" / "command.py")
                   if p.is_file()), None)
    if installed and script is not None:
        return [sys.executable, "-S", "-P", str(script)]
    return [*cli(), "hook"]


def env(tmp: Path, worker: bool = False, **extra: str) -> dict[str, str]:
    """A clean environment: the bench's own log and worker directory; the worker only when asked for."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
    e.update(SUBCOG_HOOK_LOG=str(tmp / "hook.log"), SUBCOG_HOOK_DOMAIN=DOMAIN, XDG_RUNTIME_DIR=str(tmp / "run"))
    if not worker:
        e["SUBCOG_WORKER_ENABLED"] = "false"
    if TREE:
        e["PYTHONPATH"] = str(TREE)
    e.update(extra)
    return e


# -- measuring ------------------------------------------------------------------------------------------------
def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def run_process(cmd: list[str], stdin: bytes, environ: dict[str, str], cpu: list[float] | None = None
                ) -> tuple[float, str, str]:
    """Run a process to its end: its wall time (ms), stdout, stderr; its CPU time (user + system ms, the figure
    a loaded machine changes least) appended to `cpu` when given."""
    t0, c0 = time.perf_counter(), _children_cpu()
    # the timeout bounds a broken run only: a cold process took over 120 s at load 20
    proc = subprocess.run(cmd, input=stdin, capture_output=True, env=environ, timeout=900, cwd=TREE)
    ms = (time.perf_counter() - t0) * 1000
    if cpu is not None:
        cpu.append((_children_cpu() - c0) * 1000)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} exited {proc.returncode}: {proc.stderr[-500:]!r}")
    return ms, proc.stdout.decode(), proc.stderr.decode()


def said(out: str) -> str:
    """The status line a pre-compact hook printed (plain text, or the systemMessage of --format json)."""
    text = out.strip()
    if text.startswith("{"):
        return str(json.loads(text).get("systemMessage", ""))
    return text.splitlines()[0].rstrip(".") if text else ""


def run_hook(db: Path, stdin: bytes, environ: dict[str, str], event: str = "pre-compact",
             installed: bool = False, cpu: list[float] | None = None) -> tuple[float, str]:
    """One hook process: its wall time (ms) and what it said (a pre-compact's status line); its CPU time (ms)
    appended to `cpu` when given."""
    ms, out, _ = run_process([*hook_argv(installed), "--db", str(db), event], stdin, environ, cpu)
    return ms, said(out) if event == "pre-compact" else out[:80]


def hook_runs(tmp: Path, base_db: Path, transcript: Path, reps: int, environ: dict[str, str],
              expect: str) -> tuple[list[float], str, int, list[float]]:
    """`reps` runs on fresh copies of `base_db`: their times, the last run's words (a miss's, if any missed),
    how many did the whole capture within their budget (said `expect`), and their CPU times. A run that missed
    (on a loaded machine a capture may stop at its budget and leave the rest for the next run) is a figure, not an
    error."""
    db = tmp / "run.db"
    times, message, complete, missed, cpu = [], "", 0, "", []
    for i in range(reps):
        fresh_copy(base_db, db)
        ms, message = run_hook(db, payload(transcript, f"bench-{uuid.uuid4().hex}"), environ, cpu=cpu)
        times.append(ms)
        if expect in message:
            complete += 1
        else:
            missed = message
    return times, missed or message, complete, cpu


COUNT = """
import json, sys
try:
    from subcog_store.extraction.extract import extract_candidates
    from subcog_store.extraction.transcript import read_assistant_texts
except ImportError:   # a tree from before the hook folder was split
    from subcog_store.hook.extract import extract_candidates
    from subcog_store.hook.transcript import read_assistant_texts
read = read_assistant_texts(sys.argv[1])
print(json.dumps([read.records, len(read.texts), len(extract_candidates(read.texts))]))
"""


def count_candidates(transcript: Path) -> tuple[int, int, int]:
    """Records, assistant texts and capture candidates of the transcript, by the code the hooks run (a --tree's
    extraction may find other candidates than this checkout's)."""
    _, out, _ = run_process([sys.executable, "-c", COUNT, str(transcript)], b"", env(transcript.parent))
    records, texts, candidates = json.loads(out)
    return records, texts, candidates


def prepared_store(tmp: Path, base: Path, n: int, transcript: Path) -> Path:
    """`base` with the transcript's candidates captured once (case (b)'s store), by a run given all the time it
    needs (a loaded machine must not leave some of them out), checkpointed."""
    import apsw

    pre = tmp / f"store-{n}-pre.db"
    fresh_copy(base, pre)
    _, words = run_hook(pre, payload(transcript, "pre"), env(tmp, SUBCOG_HOOK_BUDGET_SECS="600"))
    with apsw.Connection(str(pre)) as con:
        con.execute("pragma wal_checkpoint(truncate)")
    return pre


def worker_cli(action: str, environ: dict[str, str]) -> dict:
    proc = subprocess.run([*cli(), "worker", action, "--json"], capture_output=True, env=environ, timeout=120,
                          cwd=TREE)
    return json.loads(proc.stdout or b"{}")


def _worker_ms(log_file: Path, mark: int) -> float | None:
    """The worker's own time for the request logged after `mark` (its "answered in" line), None if it did not
    answer (the hook then ran in process: counted as a fallback)."""
    with open(log_file, "rb") as f:
        f.seek(mark)
        found = re.findall(r": \S+ answered in (\d+) ms", f.read().decode(errors="replace"))
    return float(found[-1]) if found else None


def _settled_ms(log_file: Path, mark: int, timeout: float = 120.0) -> float | None:
    """Wait until the worker has finished the pre-compact logged after `mark` (it may answer first and finish
    the capture after); returns its time from the request to the capture's end (None: it did not run it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_file, "rb") as f:
            f.seek(mark)
            text = f.read().decode(errors="replace")
        if found := re.search(r": pre-compact finished in the background (\d+) ms", text):
            return float(found.group(1))
        answered = re.search(r": pre-compact answered in (\d+) ms(.*)", text)
        if answered and "background" not in answered.group(2):
            return float(answered.group(1))
        if "running pre-compact in process" in text:
            return None
        time.sleep(0.005)
    raise RuntimeError(f"the worker did not finish the capture within {timeout:.0f} s")


def stored_result(db: Path) -> str:
    """What the last capture run saved (the worker's answer may come before it)."""
    import apsw

    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        captured, skipped = con.execute("select captured, skipped from hook_runs order by id desc limit 1").fetchone()
    finally:
        con.close()
    return f"captured {captured} memories, skipped {skipped} duplicates"


def worker_section(tmp: Path, base: Path, pre: Path, transcript: Path, reps: int, n_cands: int,
                   log) -> tuple[list[list[object]], dict, list[str]]:
    """Today's in-process path and the warm worker, interleaved run by run (one worker, warmed up first); then
    the first call with no worker yet beside the in-process path. Returns table rows, p50s by key, notes.

    A warm pre-compact answers before its capture has finished (SUBCOG_HOOK_ANSWER_SECS): each run waits for the
    worker to finish (nothing else runs meanwhile), times that too, and checks what the run saved."""
    local, wenv = env(tmp), env(tmp, worker=True)
    new_msg, rep_msg = f"captured {n_cands} memories", f"skipped {n_cands} duplicates"
    keys = ["floor", "a_local", "a_first", "a_warm", "b_local", "b_warm", "start_local", "start_warm",
            "prompt_local", "prompt_warm"]
    times: dict[str, list[float]] = {k: [] for k in keys}
    inside: dict[str, list[float]] = {k: [] for k in keys}   # the worker's own time (from its log line)
    complete: dict[str, list[float]] = {k: [] for k in keys}   # request to the capture's end, in the worker
    said_by: dict[str, str] = {}
    whole: dict[str, list[bool]] = {k: [] for k in keys}   # the run did all its work within its budget
    log_file = tmp / "hook.log"
    copies = itertools.count()

    def fresh(source: Path) -> Path:
        """A copy of `source` under a name of its own: the worker may still write the last one in the background
        (the session texts it embeds later), and a store file copied over under a writer is a corrupt store."""
        path = tmp / f"w-{next(copies)}.db"
        fresh_copy(source, path)
        return path

    fallbacks = 0
    reasons: dict[str, int] = {}

    def warm(key: str, db_path: Path, stdin: bytes, event: str = "pre-compact", expect: str | None = None) -> None:
        nonlocal fallbacks
        mark = log_file.stat().st_size if log_file.exists() else 0
        ms, said = run_hook(db_path, stdin, wenv, event, installed=True)
        times[key].append(ms)
        worker_ms = _worker_ms(log_file, mark)
        if worker_ms is None:
            fallbacks += 1
            with open(log_file, "rb") as f:
                f.seek(mark)
                why = re.findall(r"worker: (.*?); running \S+ in process", f.read().decode(errors="replace"))
            reason = f"{key}: {why[-1] if why else 'no reason logged'}"
            reasons[reason] = reasons.get(reason, 0) + 1
        else:
            inside[key].append(worker_ms)
        said_by[key] = said[:80]
        if event == "pre-compact":
            done_ms = _settled_ms(log_file, mark)
            if done_ms is not None:
                complete[key].append(done_ms)
            result = stored_result(db_path)
            whole[key].append(expect is None or expect in result)
            said_by[key] = f"{said.rstrip('.')}; then saved: {result}"

    worker_cli("stop", wenv)
    status = worker_cli("start", wenv)
    for source in (base, pre, base, pre):   # its first requests (not measured)
        db = fresh(source)
        mark = log_file.stat().st_size if log_file.exists() else 0
        run_hook(db, payload(transcript, f"warmup-{uuid.uuid4().hex}"), wenv, installed=True)
        _settled_ms(log_file, mark)
    for i in range(reps):
        log(f"  worker section: warm run {i + 1} of {reps} (load {os.getloadavg()[0]:.1f})")
        times["floor"].append(run_process([sys.executable, "-c", "import json,sys; json.load(sys.stdin)"], b"{}",
                                          local)[0])
        db = fresh(base)
        ms, said_by["a_local"] = run_hook(db, payload(transcript, f"l-{i}"), local)
        times["a_local"].append(ms)
        whole["a_local"].append(new_msg in said_by["a_local"])
        db = fresh(base)
        warm("a_warm", db, payload(transcript, f"w-{i}"), expect=new_msg)
        db = fresh(pre)
        ms, said_by["b_local"] = run_hook(db, payload(transcript, f"lb-{i}"), local)
        times["b_local"].append(ms)
        whole["b_local"].append(rep_msg in said_by["b_local"])
        warm("b_warm", db, payload(transcript, f"wb-{i}"), expect=rep_msg)
        times["start_local"].append(run_hook(db, start_payload(f"s-{i}"), local, "session-start")[0])
        warm("start_warm", db, start_payload(f"t-{i}"), "session-start")
        times["prompt_local"].append(run_hook(db, prompt_payload(f"s-{i}"), local, "user-prompt-submit")[0])
        warm("prompt_warm", db, prompt_payload(f"t-{i}"), "user-prompt-submit")
    status = worker_cli("status", wenv)
    worker_cli("stop", wenv)
    first_reps = max(3, min(reps, 6))
    for i in range(first_reps):
        log(f"  worker section: first call {i + 1} of {first_reps} (load {os.getloadavg()[0]:.1f})")
        db = fresh(base)
        ms, words = run_hook(db, payload(transcript, f"fl-{i}"), local)
        times["a_local"].append(ms)
        whole["a_local"].append(new_msg in words)
        db = fresh(base)
        ms, said_by["a_first"] = run_hook(db, payload(transcript, f"f-{i}"), wenv, installed=True)
        times["a_first"].append(ms)
        whole["a_first"].append(new_msg in said_by["a_first"])
        worker_cli("stop", wenv)   # it started one: stop it (while it loads) so the next run starts cold again
    p50 = {k: pct(v, 50) for k, v in times.items()}
    label = {"floor": "interpreter floor: bare `python -c json.load`",
             "a_local": f"(a) {n_cands} new: in process (today's path)",
             "a_first": f"(a) {n_cands} new: first call, no worker yet (runs in process, starts one)",
             "a_warm": f"(a) {n_cands} new: worker warm",
             "b_local": f"(b) {n_cands} repeats: in process (today's path)",
             "b_warm": f"(b) {n_cands} repeats: worker warm",
             "start_local": "session-start (startup, index): in process",
             "start_warm": "session-start (startup, index): worker warm",
             "prompt_local": "user-prompt-submit: in process (text side only: the model is not loaded)",
             "prompt_warm": "user-prompt-submit: worker warm (hybrid: the model is loaded there)"}
    rows = [[label[k], len(v), f"{pct(v, 50):.0f}", f"{pct(v, 95):.0f}",
             f"{sum(whole[k])}/{len(whole[k])}" if whole[k] else "-",
             f"{pct(inside[k], 50):.0f}" if inside[k] else "-", f"{pct(complete[k], 50):.0f}" if complete[k] else "-",
             said_by.get(k, "-")] for k, v in times.items()]
    notes = [f"worker memory after the warm rows: {status.get('rss_mb', '?')} MB RSS, "
             f"{status.get('requests', '?')} requests served",
             f"warm runs that fell back in process (no 'answered' line in the hook log): {fallbacks}"
             + "".join(f"; {why} ({n})" for why, n in reasons.items())]
    return rows, p50, notes


PHASES = r"""
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from subcog_store.store import Store
try:
    from subcog_store.extraction.transcript import read_assistant_texts
    from subcog_store.extraction.extract import extract_candidates
except ImportError:   # a --tree from before the hook folder was split
    from subcog_store.hook.transcript import read_assistant_texts
    from subcog_store.hook.extract import extract_candidates
t1, c1 = time.perf_counter(), time.process_time()
store = Store(sys.argv[1])
t2, c2 = time.perf_counter(), time.process_time()
read = read_assistant_texts(sys.argv[2])
cands = extract_candidates(read.texts)
t3, c3 = time.perf_counter(), time.process_time()
emb = store.embedder
t4, c4 = time.perf_counter(), time.process_time()
if emb is not None:
    store.embed_many([c.text for c in cands])
t5, c5 = time.perf_counter(), time.process_time()
for c in cands:   # vectors cached: this is the SQL (check tiers + insert) and Python around it
    store.capture(c.text, c.namespace, "project", tags=["auto-captured", "pre-compact"], source="bench")
t6, c6 = time.perf_counter(), time.process_time()
store.close()
print(json.dumps({"imports": t1 - t0, "store_open": t2 - t1, "read+extract": t3 - t2, "model_load": t4 - t3,
                  "embed_all": t5 - t4, "sql_captures": t6 - t5, "imports (CPU)": c1 - c0,
                  "store_open (CPU)": c2 - c1, "read+extract (CPU)": c3 - c2, "model_load (CPU)": c4 - c3,
                  "embed_all (CPU)": c5 - c4, "sql_captures (CPU)": c6 - c5, "candidates": len(cands)}))
"""


def phases(tmp: Path, base_db: Path, transcript: Path, reps: int) -> dict[str, float]:
    db = tmp / "phase.db"
    found: dict[str, list[float]] = {}
    for _ in range(reps):
        fresh_copy(base_db, db)
        _, out, _ = run_process([sys.executable, "-c", PHASES, str(db), str(transcript)], b"", env(tmp))
        for k, v in json.loads(out).items():
            found.setdefault(k, []).append(v)
    return {k: statistics.median(v) for k, v in found.items()}


def import_tree(tmp: Path, base_db: Path, transcript: Path, environ: dict[str, str]) -> tuple[dict[str, float], bool]:
    """Cumulative import times (ms) of the top-level modules in a real hook run, and whether onnxruntime loaded."""
    db = tmp / "imp.db"
    fresh_copy(base_db, db)
    _, _, err = run_process([sys.executable, "-X", "importtime", "-m", "subcog_store", "--db", str(db), "hook",
                             "pre-compact"], payload(transcript, f"bench-{uuid.uuid4().hex}"), environ)
    tops: dict[str, float] = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cum, name = (p.strip() for p in line[len("import time:"):].split("|"))
        if not cum.isdigit() or name.startswith(" "):
            continue
        raw_name = line.split("|")[2]
        depth = (len(raw_name) - len(raw_name.lstrip())) // 2
        if depth <= 1:
            top = name.split(".")[0]
            tops[top] = tops.get(top, 0.0) + int(cum) / 1000
    onnx = "onnxruntime" in err
    return dict(sorted(tops.items(), key=lambda kv: -kv[1])[:8]), onnx


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(values), p))


def md_table(header: list[str], rows: list[list[object]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def phase_and_import_tables(tmp: Path, probe: dict, transcript: Path, size: int, verdicts: list) -> None:
    print("\nPhases, in a cold process (median of 5, ms), store of", size, "memories, case (a):\n")
    ph = phases(tmp, probe["a"][0], transcript, 5)
    print(md_table(["phase", "ms"], [[k, f"{v * 1000:.0f}"] for k, v in ph.items() if k != "candidates"]))
    for case in ("a", "b"):
        tops, onnx = import_tree(tmp, probe[case][0], transcript, probe[case][1])
        print(f"\n-X importtime, case ({case}): onnxruntime imported: {onnx}; top-level cumulative ms: "
              + ", ".join(f"{k} {v:.0f}" for k, v in tops.items()))
        if case == "b":
            verdicts.append(("(b) the model is never loaded (onnxruntime not imported)", not onnx, None))


def main(argv: list[str] | None = None) -> int:
    global TREE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--quick", action="store_true", help="5 repetitions, 1k store only")
    parser.add_argument("--tree", type=Path, help="run the hooks from this source tree (PYTHONPATH)")
    parser.add_argument("--no-worker", action="store_true", help="skip the warm-worker section")
    parser.add_argument("--worker-only", action="store_true",
                        help="only the warm-worker section (largest size): no per-size rows, phases or import tree")
    args = parser.parse_args(argv)
    TREE = args.tree.resolve() if args.tree else None
    reps = 5 if args.quick else args.reps
    sizes = [1000] if args.quick else [int(s) for s in args.sizes.split(",")]
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731

    import compileall   # hooks run from byte-compiled modules, as installed (`make setup` compiles them too)

    compileall.compile_dir(str((TREE or ROOT) / "subcog_store"), quiet=1)
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "run").mkdir(mode=0o700)
        transcript = tmp / "transcript.jsonl"
        make_transcript(transcript)
        records, n_texts, n_cands = count_candidates(transcript)
        sentences, vectors, vec_source = corpus_vectors(max(sizes), log)
        print(f"transcript: {records} records, {transcript.stat().st_size / 1e6:.1f} MB, {n_texts} "
              f"assistant texts, {n_cands} candidates; store vectors: {vec_source}; {reps} runs per row; "
              f"{os.cpu_count()} cores, load avg at start {os.getloadavg()[0]:.2f}"
              + (f"; hooks run from {TREE}" if TREE else "") + "\n")
        new_msg, rep_msg = f"captured {n_cands} memories", f"skipped {n_cands} duplicates"

        rows, verdicts = [], []
        floor_cpu: list[float] = []
        floor_ms = [run_process([sys.executable, "-c", "import json,sys; json.load(sys.stdin)"], b"{}",
                                env(tmp), floor_cpu)[0] for _ in range(reps)]
        rows.append(["baseline: bare `python -c json.load`", "-", f"{pct(floor_ms, 50):.0f}",
                     f"{pct(floor_ms, 95):.0f}", f"{pct(floor_cpu, 50):.0f}", "-", "-"])
        probe = {}
        for n in sizes[-1:] if args.worker_only else sizes:
            log(f"building the {n}-memory store ...")
            base = tmp / f"store-{n}.db"
            build_store(base, sentences[:n], vectors[:n])
            if args.worker_only:
                pre = prepared_store(tmp, base, n, transcript)
                probe = {"a": (base, env(tmp)), "b": (pre, env(tmp))}
                continue
            new_ms, msg_a, done_a, new_cpu = hook_runs(tmp, base, transcript, reps, env(tmp), new_msg)
            rows.append(["(a) every candidate new", n, f"{pct(new_ms, 50):.0f}", f"{pct(new_ms, 95):.0f}",
                         f"{pct(new_cpu, 50):.0f}", f"{done_a}/{reps}", msg_a])
            verdicts.append((f"(a) {n}: p50 < {TARGET_NEW_MS:.0f} ms", pct(new_ms, 50) < TARGET_NEW_MS,
                             pct(new_ms, 50)))
            off_ms, msg_off, done_off, off_cpu = hook_runs(tmp, base, transcript, reps,
                                                           env(tmp, SUBCOG_DEDUP_ENABLED="false"), new_msg)
            rows.append(["baseline: (a) with SUBCOG_DEDUP_ENABLED=false", n, f"{pct(off_ms, 50):.0f}",
                         f"{pct(off_ms, 95):.0f}", f"{pct(off_cpu, 50):.0f}", f"{done_off}/{reps}", msg_off])
            pre = prepared_store(tmp, base, n, transcript)
            rep_ms, msg_b, done_b, rep_cpu = hook_runs(tmp, pre, transcript, reps, env(tmp), rep_msg)
            rows.append(["(b) every candidate an exact repeat", n, f"{pct(rep_ms, 50):.0f}", f"{pct(rep_ms, 95):.0f}",
                         f"{pct(rep_cpu, 50):.0f}", f"{done_b}/{reps}", msg_b])
            verdicts.append((f"(b) {n}: p50 < {TARGET_REPEAT_MS:.0f} ms", pct(rep_ms, 50) < TARGET_REPEAT_MS,
                             pct(rep_ms, 50)))
            if n == sizes[-1]:
                probe = {"a": (base, env(tmp)), "b": (pre, env(tmp))}
        if not args.worker_only:
            print(md_table(["case (in process)", "memories", "p50 ms", "p95 ms", "p50 CPU ms",
                            "complete within budget", "hook said"], rows))

        if not args.no_worker:
            base, pre = probe["a"][0], probe["b"][0]
            w_rows, p50, notes = worker_section(tmp, base, pre, transcript, reps, n_cands, log)
            print(f"\nWarm worker (issue #13), store of {sizes[-1]} memories, interleaved runs, "
                  f"load avg now {os.getloadavg()[0]:.2f}:\n")
            print(md_table(["case", "runs", "p50 ms", "p95 ms", "complete within budget", "worker's answer, p50 ms",
                            "worker's capture done, p50 ms", "hook said"], w_rows))
            for note in notes:
                print(f"- {note}")
            verdicts += [
                ("worker warm, (a) new: p50 < 100 ms", p50["a_warm"] < 100, p50["a_warm"]),
                ("first call no slower than today's path (p50)", p50["a_first"] <= p50["a_local"] * 1.05,
                 p50["a_first"]),
                ("worker warm, (b) repeats: p50 < 60 ms", p50["b_warm"] < 60, p50["b_warm"]),
                ("worker warm, session-start: p50 < 50 ms", p50["start_warm"] < 50, p50["start_warm"]),
                ("worker warm, user-prompt-submit: p50 < 50 ms", p50["prompt_warm"] < 50, p50["prompt_warm"])]

        if not args.worker_only:
            phase_and_import_tables(tmp, probe, transcript, sizes[-1], verdicts)

        print("\nTargets:\n")
        for name, ok, value in verdicts:
            extra = f" (p50 {value:.0f} ms; {value / DESIGN_MS:.1f}x the original design's 100 ms hook budget, " \
                    f"{value - DESIGN_MS:+.0f} ms)" if value is not None else ""
            print(f"- {'PASS' if ok else 'MISS'}: {name}{extra}")
        print(f"- interpreter floor p50 {pct(floor_ms, 50):.0f} ms is "
              f"{pct(floor_ms, 50) / DESIGN_MS:.0%} of the 100 ms design budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
