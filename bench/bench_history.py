"""`import-history` benchmark: time and peak memory over history folders of growing size, and the second run.

Folders are built in a temporary directory from the real transcripts of ../shared/samples/real/train (read at bench
time, never copied into the repository): each copy gets a session id and a working directory of its own (one
project in four gone from disk), so the same text lands in several projects; a last folder adds one transcript of
about 150 MB (the real sessions, repeated, plus tool output the reader skips). Every run is a fresh
`subcog-store import-history` process; its peak resident memory is GNU time's `%M`. Bounded memory means the peak
stays flat while the history grows. The text tier is used for the growing folders (the model's 200 MB would hide
the importer's own growth); one run with the model on the smallest folder gives the time a user sees. The
baseline in the same run is the interpreter importing the package.

    python -m bench.bench_history [--sizes 10,40,160] [--huge-mb 150] [--model]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.bench_hook import CLI, md_table

TRAIN = Path(__file__).resolve().parents[2] / "shared" / "samples" / "real" / "train"


def build(root: Path, megabytes: int, gone_root: Path, live_root: Path) -> int:
    """A projects folder of about `megabytes` of real transcripts; returns the session count."""
    sources = sorted(TRAIN.glob("*.jsonl"))
    written, n = 0, 0
    while written < megabytes << 20:
        source = sources[n % len(sources)]
        project = f"p{n % 7}"
        cwd = (gone_root if n % 4 == 0 else live_root) / project
        if n % 4:
            cwd.mkdir(parents=True, exist_ok=True)
        session = str(uuid.uuid4())
        target = root / f"-{project}" / f"{session}.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(source, "rb") as src, open(target, "wb") as out:
            for line in src:
                try:
                    record = json.loads(line)
                except ValueError:
                    out.write(line)
                    continue
                if isinstance(record, dict):
                    record["sessionId"] = session
                    if "cwd" in record:
                        record["cwd"] = str(cwd)
                out.write(json.dumps(record).encode() + b"\n")
        written += target.stat().st_size
        n += 1
    return n


def huge(root: Path, megabytes: int, live_root: Path) -> None:
    """One transcript of about `megabytes`: the real sessions again and again, with large tool results."""
    session = str(uuid.uuid4())
    target = root / "-huge" / f"{session}.jsonl"
    target.parent.mkdir(parents=True)
    (live_root / "huge").mkdir(parents=True, exist_ok=True)
    filler = json.dumps({"type": "user", "sessionId": session, "cwd": str(live_root / "huge"),
                         "message": {"role": "user", "content": [{"type": "tool_result", "content": "x" * 200_000}]}})
    with open(target, "w") as out:
        while out.tell() < megabytes << 20:
            for source in sorted(TRAIN.glob("*.jsonl")):
                for line in open(source, encoding="utf-8"):
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(record, dict):
                        record.update(sessionId=session, cwd=str(live_root / "huge"))
                        out.write(json.dumps(record) + "\n")
                out.write(filler + "\n")


def run(cmd: list[str], env: dict[str, str], tmp: Path) -> tuple[float, float, dict]:
    """(seconds, peak resident MB of the process, its JSON report), measured by GNU time (`%M`)."""
    peak_file = tmp / "peak.txt"
    t0 = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(peak_file), *cmd], env=env, capture_output=True,
                         text=True, timeout=7200)
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"{cmd[-3:]} exited {out.returncode}: {out.stderr[-400:]}")
    peak = int(peak_file.read_text().split()[-1]) / 1024
    return seconds, peak, json.loads(out.stdout) if out.stdout.startswith("{") else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,40,160", help="history sizes in MB")
    parser.add_argument("--huge-mb", type=int, default=150)
    parser.add_argument("--model", action="store_true", help="also the smallest folder with the model")
    args = parser.parse_args(argv)
    if not TRAIN.is_dir():
        print(f"SKIP: {TRAIN} is not there")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench-history-"))
    load = os.getloadavg()
    rows = []
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
        env.update(SUBCOG_WORKER_ENABLED="false", SUBCOG_DEDUP_SEMANTIC_ENABLED="false")
        seconds, peak, _ = run([sys.executable, "-c", "import subcog_store.capture.history, subcog_store.store"],
                               env, tmp)
        rows.append(["baseline: the interpreter importing the package", "", "", f"{seconds:.1f}", f"{peak:.0f}"])
        sizes = [int(x) for x in args.sizes.split(",")]
        plans = [(f"{mb} MB", mb, 0) for mb in sizes] + ([(f"{sizes[0]} MB + one of {args.huge_mb} MB",
                                                           sizes[0], args.huge_mb)] if args.huge_mb else [])
        for label, mb, huge_mb in plans:
            root = tmp / label.replace(" ", "_")
            sessions = build(root / "projects", mb, tmp / "gone", tmp / "live")
            if huge_mb:
                huge(root / "projects", huge_mb, tmp / "live")
                sessions += 1
            size = sum(p.stat().st_size for p in (root / "projects").rglob("*.jsonl")) / 1e6
            env["SUBCOG_DB"] = str(root / "m.db")
            cmd = [*CLI, "import-history", str(root / "projects"), "--json"]
            seconds, peak, report = run(cmd, env, tmp)
            again, peak2, report2 = run(cmd, env, tmp)
            rows.append([f"{label}: {sessions} sessions, {size:.0f} MB", report.get("captured"),
                         f"{report2.get('up_to_date')} up to date", f"{seconds:.1f} / {again:.1f}",
                         f"{peak:.0f} / {peak2:.0f}"])
            shutil.rmtree(root)
        if args.model:
            root = tmp / "model"
            sessions = build(root / "projects", sizes[0], tmp / "gone", tmp / "live")
            env.pop("SUBCOG_DEDUP_SEMANTIC_ENABLED")
            env["SUBCOG_DB"] = str(root / "m.db")
            seconds, peak, report = run([*CLI, "import-history", str(root / "projects"), "--json"], env, tmp)
            rows.append([f"{sizes[0]} MB with the model: {sessions} sessions", report.get("captured"),
                         f"{report.get('skipped_duplicates')} duplicates", f"{seconds:.1f}", f"{peak:.0f}"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    end = os.getloadavg()
    print(f"Load average at start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}, at end {end[0]:.2f} / {end[1]:.2f} / "
          f"{end[2]:.2f}; {os.cpu_count()} cores.\n")
    print(md_table(["history", "memories captured", "second run", "seconds (first / second)",
                    "peak RSS MB (first / second)"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
