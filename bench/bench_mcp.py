"""MCP server benchmark: start-up and per-call latency of `subcog-store mcp` on a store of 10k memories.

The server runs in its own process, spoken to over its stdin/stdout with raw JSON-RPC lines (no client library in
the timing). Measured, each in the same run:

- the MCP SDK's import (`import mcp.server.lowlevel, mcp.server.stdio`, timed inside a process) beside the
  interpreter floor (`python -c pass`);
- start-up: process start to the `initialize` answer (the 2025 handshake) and to the `server/discover` answer
  (the 2026-07-28 protocol Claude Code 2.1.328 opens with), each then to the `tools/list` answer; with
  `--baseline DIR`, the same for the server of another source tree (e.g. the commit before, checked out with
  `git worktree add --detach`), interleaved run by run in the same loop;
- the first `search` (opens the store, loads the model, embeds the query) and the first `remember`;
- warm calls: `search` (hybrid, 10k memories, varied queries), `show`, `remember` (new texts, the full check),
  `forget`; p50 / p95 per tool;
- the baseline: the same work as fresh CLI processes (`subcog-store search`, `show`, `capture`), which load
  everything each time; and the server's resident memory once warm.

The store is bulk-built from bench/corpus.py sentences (domain `project`, namespace `decisions`) like the hook
benchmark's; the server and the CLI run with SUBCOG_WORKER_ENABLED=false (neither uses the warm worker here).
Everything is written to a temporary directory and deleted.

    python -m bench.bench_mcp [--size 10000] [--reps 30] [--starts 10] [--quick] [--baseline DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.bench_hook import CLI, corpus_vectors, build_store, md_table

QUICK_ARGS = ["--quick"]
QUERIES = ["Why does the checkout database run out of connections under load?", "How long do sessions stay cached?",
           "Which queue do the order events go through?", "What timeout does the payment webhook have?",
           "How are migration files named?", "Where do feature flags get read?", "How is money stored?",
           "Why did the TLS tests fail only in CI?", "What port does the gateway listen on?",
           "Which library parses the config files?"]


# the SDK's import, timed inside the process (its teardown at exit, ~0.5 s more, is not part of a start-up)
SDK_IMPORT = ("import os, time; t = time.perf_counter(); import mcp.server.lowlevel, mcp.server.stdio; "
              "print((time.perf_counter() - t) * 1000, flush=True); os._exit(0)")


META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}


class Server:
    """`subcog-store mcp` in its own process (`tree`: another source tree's); `ask` times one request."""

    def __init__(self, environ: dict[str, str], cwd: Path, tree: Path | None = None):
        self.started = time.perf_counter()
        cmd = [*CLI, "mcp"] if tree is None else [sys.executable, "-m", "subcog_store", "mcp"]
        if tree is not None:
            environ = {**environ, "PYTHONPATH": str(tree)}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=environ, cwd=cwd)
        self.modern = False
        self.next_id = 0

    def ask(self, method: str, params: dict | None = None) -> tuple[float, dict]:
        self.next_id += 1
        t0 = time.perf_counter()
        if self.modern:
            params = {**(params or {}), "_meta": META}
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                          **({"params": params} if params else {})}).encode() + b"\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], 120)
        if not ready:
            raise RuntimeError(f"{method}: no answer in 120 s")
        answer = json.loads(self.proc.stdout.readline())
        if "error" in answer or answer.get("result", {}).get("isError"):
            raise RuntimeError(f"{method} failed: {str(answer)[:300]}")
        return (time.perf_counter() - t0) * 1000, answer["result"]

    def initialize(self) -> float:
        self.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "1"}})
        self.proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        self.proc.stdin.flush()
        return (time.perf_counter() - self.started) * 1000

    def discover(self) -> float:
        """The 2026-07-28 opening (what Claude Code 2.1.328 sends first); later requests carry the envelope."""
        self.modern = True
        self.ask("server/discover")
        return (time.perf_counter() - self.started) * 1000

    def call(self, name: str, arguments: dict) -> tuple[float, str]:
        ms, result = self.ask("tools/call", {"name": name, "arguments": arguments})
        return ms, result["content"][0]["text"]

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


def timed(cmd: list[str], environ: dict[str, str], cwd: Path | None = None) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env=environ, cwd=cwd, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} exited {proc.returncode}: {proc.stderr[-300:]!r}")
    return (time.perf_counter() - t0) * 1000, proc.stdout.decode()


def stats(values: list[float]) -> tuple[str, str]:
    return f"{statistics.median(values):.1f}", f"{float(np.percentile(values, 95)):.1f}"


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    from importlib.metadata import version

    return (f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, mcp {version('mcp')}, "
            f"pydantic {version('pydantic')}, anyio {version('anyio')}, onnxruntime {version('onnxruntime')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=30, help="warm calls per tool")
    parser.add_argument("--starts", type=int, default=10, help="server starts and fresh CLI processes")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--baseline", type=Path, help="also start the server of this source tree, interleaved")
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.reps, args.starts = 1000, 10, 3
    load_start = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    try:
        return run(args, tmp, load_start)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, tmp: Path, load_start: tuple[float, float, float]) -> int:
    sentences, vectors, source = corpus_vectors(args.size, log=lambda *a: None)
    base = tmp / "base.db"
    build_store(base, sentences, vectors)
    db = tmp / "m.db"
    shutil.copyfile(base, db)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
    environ.update(SUBCOG_DB=str(db), SUBCOG_HOOK_DOMAIN="project", SUBCOG_WORKER_ENABLED="false",
                   SUBCOG_HOOK_LOG=str(tmp / "hook.log"))
    rows: list[list[object]] = []

    # Interleaved run by run, so the shared machine's drift spreads over every row.
    floor, sdk, firsts, cli_search = [], [], [], []
    trees = {"this tree": None, **({f"baseline {args.baseline.name}": args.baseline.resolve()}
                                   if args.baseline else {})}
    starts: dict[tuple[str, str], list[float]] = {(t, k): [] for t in trees for k in
                                                  ("initialize", "initialize+list", "discover", "discover+list")}
    for i in range(args.starts):
        floor.append(timed([sys.executable, "-c", "pass"], environ)[0])
        sdk.append(float(timed([sys.executable, "-c", SDK_IMPORT], environ)[1]))
        for name, tree in trees.items():
            for how in ("initialize", "discover"):
                server = Server(environ, tmp, tree)
                starts[name, how].append(server.initialize() if how == "initialize" else server.discover())
                starts[name, how + "+list"].append(starts[name, how][-1] + server.ask("tools/list")[0])
                if tree is None and how == "initialize":
                    firsts.append(server.call("search", {"query": QUERIES[i % len(QUERIES)]})[0])
                server.close()
        cli_search.append(timed([*CLI, "search", "--domain", "project", QUERIES[i % len(QUERIES)]], environ)[0])
    rows += [["baseline: bare `python -c pass`", *stats(floor)], ["import of the MCP SDK (in process)", *stats(sdk)]]
    for name in trees:
        rows += [[f"{name}: process start to `initialize` answered", *stats(starts[name, "initialize"])],
                 [f"{name}: ... and `tools/list` answered", *stats(starts[name, "initialize+list"])],
                 [f"{name}: process start to `server/discover` answered", *stats(starts[name, "discover"])],
                 [f"{name}: ... and `tools/list` answered", *stats(starts[name, "discover+list"])]]
    rows += [["first `search` of a server (store opened, model loaded)", *stats(firsts)]]
    inits = starts["this tree", "initialize"]

    server = Server(environ, tmp)
    server.initialize()
    server.call("search", {"query": QUERIES[0]})
    warm: dict[str, list[float]] = {"search": [], "show": [], "remember": [], "forget": []}
    ids = [f"{i * 37 % args.size:012x}" for i in range(args.reps)]     # bench_hook.build_store's ids, distinct
    for i in range(args.reps):
        ms, found = server.call("search", {"query": QUERIES[i % len(QUERIES)] + f" ({i})", "limit": 5})
        warm["search"].append(ms)
        assert found.splitlines()[1].startswith("- subcog://project/"), found[:200]
    for i in range(args.reps):
        warm["show"].append(server.call("show", {"id": ids[i]})[0])
        text = f"Learned on run {i} that the bench host's {sentences[i * 7 % len(sentences)][:120]}"
        ms, said = server.call("remember", {"content": text, "namespace": "learnings"})
        warm["remember"].append(ms)
    for i in range(args.reps):
        warm["forget"].append(server.call("forget", {"id": ids[i], "reason": "bench"})[0])
    rss = server.rss_mb()
    server.close()
    for name, values in warm.items():
        rows.append([f"warm `{name}` ({len(values)} calls)", *stats(values)])

    shutil.copyfile(base, db)
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    cli_show = [timed([*CLI, "show", ids[i]], environ)[0] for i in range(args.starts)]
    cli_capture = [timed([*CLI, "capture", "-n", "learnings", "--domain", "project",
                          f"Learned on CLI run {i} that {sentences[i * 11 % len(sentences)][:120]}"], environ)[0]
                   for i in range(args.starts)]
    rows += [["baseline: `subcog-store search` (fresh process)", *stats(cli_search)],
             ["baseline: `subcog-store show` (fresh process)", *stats(cli_show)],
             ["baseline: `subcog-store capture` (fresh process)", *stats(cli_capture)]]
    load_end = os.getloadavg()

    print(f"{args.size} memories ({source}); {args.starts} starts / fresh processes, {args.reps} warm calls per "
          f"tool. Machine: {machine()}. Load average (1/5/15 min) at start {load_start[0]:.2f} / "
          f"{load_start[1]:.2f} / {load_start[2]:.2f}, at end {load_end[0]:.2f} / {load_end[1]:.2f} / "
          f"{load_end[2]:.2f}.\n")
    print(md_table(["what", "p50 ms", "p95 ms"], rows))
    print(f"\nServer resident memory once warm (model loaded): {rss:.0f} MB. Last remember said: "
          f"{said.splitlines()[0][:100]!r}")
    speed = statistics.median(cli_search) / statistics.median(warm["search"])
    print(f"\nA warm `search` is {speed:.0f}x faster than a fresh `subcog-store search`; start-up is "
          f"{statistics.median(inits) - statistics.median(floor):.0f} ms over the interpreter floor; the SDK's "
          f"import alone takes {statistics.median(sdk):.0f} ms.")
    for name in list(trees)[1:]:
        for how in ("initialize", "discover", "discover+list"):
            ours, theirs = statistics.median(starts["this tree", how]), statistics.median(starts[name, how])
            print(f"p50 start to `{how}` answered: this tree {ours:.0f} ms, {name} {theirs:.0f} ms "
                  f"({theirs / ours:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
