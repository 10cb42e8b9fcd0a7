"""The hook's outputs in two checkouts compared: a change meant to make the hook cheaper must not change what it does.

    python -m bench.same_outputs TREE_A TREE_B [--transcripts session-a,session-b,bench]

For each transcript (the shared samples session-a and session-b, bench_hook's generated 2,000-record transcript),
each tree captures it into a fresh store of its own as session one (its candidates new), then again as session two
(every candidate an exact repeat): pre-compact, in process, budget 600 s, the same launcher as
`bench/repeat_cpu.py`. Compared, after each run: the hook's stdout; and at the end the rows of hook_runs (the
report, parsed), dedup_log, dedup_checks, memories, recent_captures, session_text and hook_offsets, and how many
fingerprints extraction_memo holds (their values digest the extraction code, so they differ by design). Left out:
times and durations (columns and report keys named *_at, *_ms, ...), the temporary directory's path, and memory
ids (random: each is replaced by its rank in the store's insertion order). Exit 0 when all is the same, 1 with the
first differences printed.
"""
from __future__ import annotations

import argparse
import difflib
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import apsw

from bench.repeat_cpu import LAUNCHER, environ, payload, transcript_for

TABLES = {  # table: its order
    "memories": "seq", "dedup_log": "id", "dedup_checks": "id", "recent_captures": "id", "session_text": "id",
    "hook_offsets": "session_id, transcript_path", "hook_runs": "id"}
TIME_NAME = re.compile(r"(?:_at|_ms|_ns|_s|_secs|^ms|^elapsed\w*|^duration\w*|^checked_\w+|^seen_at)$")
ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z?")


def run_hook(tree: Path, db: Path, transcript: Path, session: str, work: Path) -> str:
    proc = subprocess.run([str(tree / ".venv" / "bin" / "python"), "-c", LAUNCHER, "--db", str(db), "hook",
                           "pre-compact"], input=payload(transcript, session), capture_output=True,
                          env=environ(work), cwd=work, timeout=1800)
    if proc.returncode != 0 or proc.stderr:
        raise RuntimeError(f"{tree}: hook exited {proc.returncode}, stderr {proc.stderr[-400:]!r}")
    return proc.stdout.decode()


def untimed(value: object) -> object:
    """A report without its times: keys named like times dropped, at any depth."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if not TIME_NAME.search(k)}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def dump(tree: Path, db: Path, work: Path) -> list[str]:
    """The store's rows that matter, as lines of text, times, paths and memory ids made comparable."""
    con = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    ids = {mid: f"<m{n}>" for n, (mid,) in enumerate(con.execute("SELECT id FROM memories ORDER BY seq"))}
    lines = [f"extraction_memo rows: {con.execute('SELECT count(*) FROM extraction_memo').fetchone()[0]}"]
    for table, order in TABLES.items():
        cursor = con.execute(f"SELECT * FROM {table} ORDER BY {order}")
        names = [d[0] for d in cursor.getdescription()]
        for row in cursor:
            kept = {}
            for name, value in zip(names, row):
                if TIME_NAME.search(name):
                    continue
                if name == "report" and isinstance(value, str):
                    value = json.dumps(untimed(json.loads(value)), sort_keys=True)
                kept[name] = value
            lines.append(f"{table}: {json.dumps(kept, sort_keys=True, ensure_ascii=False)}")
    con.close()
    text = ISO_TIME.sub("<time>", "\n".join(lines)).replace(str(work), "<work>")
    for mid, label in ids.items():
        text = text.replace(mid, label)
    return text.splitlines()


def capture_twice(tree: Path, transcript: Path, work: Path) -> list[str]:
    work.mkdir(parents=True)
    (work / "run").mkdir(mode=0o700)
    db = work / "store.db"
    out = []
    for session in ("one", "two"):
        said = run_hook(tree, db, transcript, f"session-{session}", work)
        out += [f"stdout of session {session}: {line}" for line in said.replace(str(work), "<work>").splitlines()]
    return out + dump(tree, db, work)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs=2, type=Path)
    parser.add_argument("--transcripts", default="session-a,session-b,bench")
    opts = parser.parse_args(argv)
    same = True
    with tempfile.TemporaryDirectory(prefix="bench-same-outputs-") as tmp:
        for name in [t.strip() for t in opts.transcripts.split(",") if t.strip()]:
            if name == "session-b":
                transcript = transcript_for("session-a", Path(tmp)).with_name("session-b.jsonl")
            else:
                transcript = transcript_for(name, Path(tmp))
            got = [capture_twice(tree.resolve(), transcript, Path(tmp) / f"{name}-{i}")
                   for i, tree in enumerate(opts.trees)]
            diff = list(difflib.unified_diff(got[0], got[1], str(opts.trees[0]), str(opts.trees[1]), lineterm="",
                                             n=1))
            said = [next(line.split(": ", 1)[1] for line in got[0] if line.startswith(f"stdout of session {s}"))
                    for s in ("one", "two")]
            print(f"{name}: {len(got[0])} lines, {'the same' if not diff else f'{len(diff)} diff lines'}; "
                  f"{' / '.join(said)}", flush=True)
            if diff:
                same = False
                print("\n".join(line[:300] for line in diff[:60]))
    print("all the same" if same else "DIFFERENT")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
