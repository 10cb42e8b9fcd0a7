"""onnxruntime session options under CPU contention (issue #13): embedding latency of one sentence and of a
batch of 20 with the default options vs intra_op_num_threads 1/2, inter_op 1, session.intra_op.allow_spinning
0/1 and sequential execution, on the machine as it is ("quiet") and with two CPU-bound processes beside it
("loaded": `python -c 'while True: pass'` x2, killed at the end whatever happens).

The pipeline is the store's (subcog_store.model.embedder.Embedder: tokenize, run, mean-pool, normalize); only
the SessionOptions differ. Variants are measured in rotating order, several rounds, so drift in the shared
machine's load spreads over all of them; `cpu ms` is this process's CPU time per call (spinning threads burn it).

    python -m bench.bench_onnx_threads [--rounds 5] [--singles 30] [--batches 6] [--load-procs 2]
"""
from __future__ import annotations

import argparse
import atexit
import os
import resource
import signal
import subprocess
import sys
import time

import numpy as np

from subcog_store.model.embedder import Embedder
from subcog_store.model.files import model_dir, verify

VARIANTS = {
    "default (no options)": {},
    "intra=1": {"intra": 1},
    "intra=2": {"intra": 2},
    "intra=2; spinning=0": {"intra": 2, "spin": "0"},
    "default threads; spinning=0": {"spin": "0"},
    "intra=1; inter=1; sequential": {"intra": 1, "inter": 1, "sequential": True},
    "intra=2; inter=1; sequential; spinning=0": {"intra": 2, "inter": 1, "sequential": True, "spin": "0"},
}
_children: list[subprocess.Popen] = []


def start_load(n: int) -> None:
    for _ in range(n):
        _children.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))


def stop_load() -> None:
    while _children:
        p = _children.pop()
        try:
            p.terminate()
            p.wait(timeout=5)
        except Exception:  # noqa: BLE001
            p.kill()
            p.wait()


def _on_signal(signum, frame):
    stop_load()
    sys.exit(128 + signum)


class Configured(Embedder):
    """The store's embedder with explicit SessionOptions."""

    def __init__(self, opts: dict):
        super().__init__()
        self.opts = opts

    def load(self) -> None:
        if self._session is not None:
            return
        import onnxruntime
        from tokenizers import Tokenizer

        directory = verify(model_dir())
        tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(256)
        o = onnxruntime.SessionOptions()
        o.log_severity_level = 3
        if "intra" in self.opts:
            o.intra_op_num_threads = self.opts["intra"]
        if "inter" in self.opts:
            o.inter_op_num_threads = self.opts["inter"]
        if self.opts.get("sequential"):
            o.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        if "spin" in self.opts:
            o.add_session_config_entry("session.intra_op.allow_spinning", self.opts["spin"])
        self._session = onnxruntime.InferenceSession(str(directory / "model.onnx"), o,
                                                     providers=["CPUExecutionProvider"])
        self._input_names = {i.name for i in self._session.get_inputs()}
        self._tokenizer = tokenizer


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure_block(emb: Configured, sentences: list[str], singles: int, batches: int, out: dict) -> None:
    for s in sentences[:3]:
        emb.embed(s)
    for s in sentences[3:3 + singles]:
        w0, c0 = time.perf_counter(), cpu_s()
        emb.embed(s)
        out["single"].append((time.perf_counter() - w0) * 1000)
        out["single_cpu"].append((cpu_s() - c0) * 1000)
    pool = sentences[3 + singles:]
    for b in range(batches):
        batch = pool[(b * 20) % max(1, len(pool) - 20):][:20]
        w0, c0 = time.perf_counter(), cpu_s()
        emb.embed_batch(batch)
        out["batch"].append((time.perf_counter() - w0) * 1000)
        out["batch_cpu"].append((cpu_s() - c0) * 1000)


def run_condition(embedders: dict, sentences: list[str], cfg) -> dict:
    res = {name: {"single": [], "single_cpu": [], "batch": [], "batch_cpu": []} for name in embedders}
    names = list(embedders)
    loads = [os.getloadavg()[0]]
    for r in range(cfg.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            time.sleep(0.05)  # let the previous session's worker threads stop spinning
            measure_block(embedders[name], sentences, cfg.singles, cfg.batches, res[name])
        loads.append(os.getloadavg()[0])
    res["_load"] = f"{min(loads):.1f}-{max(loads):.1f}"
    return res


def p50_95(v) -> str:
    return f"{np.percentile(v, 50):.1f} / {np.percentile(v, 95):.1f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--singles", type=int, default=30, help="single-sentence calls per variant and round")
    parser.add_argument("--batches", type=int, default=6, help="batches of 20 per variant and round")
    parser.add_argument("--load-procs", type=int, default=2)
    parser.add_argument("--only", default="", help="comma-separated variant names (default: all)")
    cfg = parser.parse_args(argv)
    atexit.register(stop_load)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)

    from bench import corpus as corpus_mod

    corpus = corpus_mod.build(100_000)
    sentences = corpus.fresh[:3 + cfg.singles + 200]
    variants = {k: v for k, v in VARIANTS.items() if not cfg.only or k in cfg.only.split(",")}
    embedders = {}
    for name, opts in variants.items():
        emb = Configured(opts)
        t0 = time.perf_counter()
        emb.load()
        embedders[name] = emb
        print(f"  loaded {name} in {(time.perf_counter() - t0) * 1000:.0f} ms", file=sys.stderr, flush=True)
    import onnxruntime

    results = {}
    try:
        print(f"quiet (load {os.getloadavg()[0]:.1f}) ...", file=sys.stderr, flush=True)
        results["quiet"] = run_condition(embedders, sentences, cfg)
        start_load(cfg.load_procs)
        time.sleep(2)
        print(f"loaded (+{cfg.load_procs} busy loops, load {os.getloadavg()[0]:.1f}) ...", file=sys.stderr, flush=True)
        results["loaded"] = run_condition(embedders, sentences, cfg)
    finally:
        stop_load()
    print(f"## onnxruntime {onnxruntime.__version__} session options, {os.cpu_count()} cores; "
          f"{cfg.rounds} rounds x ({cfg.singles} single sentences + {cfg.batches} batches of 20) per variant and "
          f"condition; quiet: 1-min load {results['quiet']['_load']}; loaded (+{cfg.load_procs} busy loops): "
          f"{results['loaded']['_load']}")
    print()
    print("| variant | quiet: 1 sentence ms p50 / p95 | quiet: batch of 20 ms | loaded: 1 sentence ms | "
          "loaded: batch of 20 ms | cpu ms per sentence (quiet / loaded) | cpu ms per batch (quiet / loaded) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in variants:
        q, lo = results["quiet"][name], results["loaded"][name]
        print(f"| {name} | {p50_95(q['single'])} | {p50_95(q['batch'])} | {p50_95(lo['single'])} | "
              f"{p50_95(lo['batch'])} | {np.median(q['single_cpu']):.1f} / {np.median(lo['single_cpu']):.1f} | "
              f"{np.median(q['batch_cpu']):.0f} / {np.median(lo['batch_cpu']):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
