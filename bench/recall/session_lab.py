"""The sessions' text search with the full-text query over every content word of the prompt, or its rarest only.

`recall.session_search` asks FTS5 for the prompt's `search.TEXT_TERMS` rarest content words (`search.rarest`, as
the memories' search); before, it asked for up to 32. Both are run here on the same stores, in one process (the
constant changed between passes), so capture under load cannot make the two differ: stores captured by
`bench/capture/bench_heldout.py` (held-out projects, never tuned on: each project's session-end hook, the sessions'
text embedded later; copy `<tmp>/new/<project>/memories.db` while it runs, or keep its `--dump` stores), their
questions from `bench/capture/heldout` (every key group of the answer in the text). Per project and pass: the
top 8 of `search_all` (memories, then the sessions' text) holds the answer, the user-prompt-submit hook (a new
session per prompt, in process, the model loaded) injects it, stays silent when nothing answers; and the
sessions' text search's own time.

    .venv/bin/python -m bench.recall.session_lab STORE_DIR   # STORE_DIR/<project>.db, e.g. cli.db, gitsync.db
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

PASSES = {"every word (32)": 32, "rarest 4 (shipped)": 4}


def measure(db: Path, project: str, questions: list) -> dict:
    """Both passes on one store (a copy: the hook writes its recall log)."""
    from subcog_store.claude_code.entry import run
    from subcog_store.claude_code.request import HookRequest
    from subcog_store.recall import search
    from subcog_store.recall.session_search import search_all, search_session_text
    from subcog_store.store import Store

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="session-lab-") as tmp:
        work = Path(tmp) / "m.db"
        shutil.copyfile(db, work)
        environ = {**os.environ, "SUBCOG_DB": str(work), "SUBCOG_HOOK_DOMAIN": project,
                   "SUBCOG_WORKER_ENABLED": "false", "SUBCOG_HOOK_BUDGET_SECS": "600",
                   "SUBCOG_HOOK_LOG": str(Path(tmp) / "hook.log")}
        for name, k in PASSES.items():
            search.TEXT_TERMS = k
            top8 = injected = silent = answerable = 0
            cpu: list[float] = []
            with Store(work, fetch_model=False) as store:
                for q in questions:
                    text = " \n".join(f.text for f in search_all(store, q.text, domain=project, limit=8).items)
                    c0 = time.process_time()
                    search_session_text(store, q.text, domain=project, limit=8)
                    cpu.append((time.process_time() - c0) * 1000)
                    raw = json.dumps({"session_id": str(uuid.uuid4()), "prompt": q.text, "cwd": "/nonexistent",
                                      "hook_event_name": "UserPromptSubmit"}).encode()
                    reply = run(HookRequest.of("user-prompt-submit", {}, raw, environ, db=str(work), use_model=True))
                    context = json.loads(reply)["hookSpecificOutput"]["additionalContext"] if reply else ""
                    if q.answerable:
                        answerable += 1
                        top8 += q.held_by(text)
                        injected += q.held_by(context)
                    else:
                        silent += not context.strip()
            out[name] = {"answerable": answerable, "top8": top8, "injected": injected,
                         "unanswerable": len(questions) - answerable, "silent": silent,
                         "session_search_cpu_p50_ms": float(np.percentile(cpu, 50)) if cpu else None}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stores", type=Path, help="a folder of <project>.db stores")
    args = parser.parse_args(argv)
    from bench.capture.heldout import load_questions

    questions = load_questions()
    res = {}
    for db in sorted(args.stores.glob("*.db")):
        project = db.stem
        qs = [q for q in questions if q.project == project]
        if not qs:
            print(f"{project}: no questions, skipped", file=sys.stderr)
            continue
        res[project] = measure(db, project, qs)
        for name, r in res[project].items():
            print(f"{project} {name}: top-8 {r['top8']}/{r['answerable']}, injected {r['injected']}/"
                  f"{r['answerable']}, silent {r['silent']}/{r['unanswerable']}, session search CPU p50 "
                  f"{r['session_search_cpu_p50_ms']:.1f} ms", flush=True)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
