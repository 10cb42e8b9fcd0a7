"""Run one checkout's hooks on a project's sessions and report what they stored and what recall answers.

    PYTHONPATH=<tree> python bench/capture/run_tree.py < job.json > result.json

Runs under another checkout's code (the baseline of `bench_heldout.py`), so it imports only what every version
has: the hooks' entry `run` (`claude_code.entry`, earlier `hook.entry`: the hook as the client runs it, in this one
process like the warm worker)
and `subcog_store.store.Store` (`memories`, `search`). The job (JSON on stdin):

    {"db": PATH, "domain": NAME, "sessions": [{"name": ..., "path": ...}], "questions": [TEXT, ...],
     "search_limit": 8}

Each session is captured by the session-end hook (the whole transcript, summaries included, as when a session
ends without compacting; again while a run stopped early by its time makes progress: `_progress`); where the tree embeds the sessions' text off the hook's path, that is done next, timed
apart ("later"); then every question is searched (the top `search_limit`: `recall.session_search.search_all`
where the tree has it, memories then sessions' text, else `Store.search`) and sent to the user-prompt-submit hook as
a new session's prompt. Where the tree keeps the sessions' text, both are done again with it switched off
(`SUBCOG_SESSION_TEXT_ENABLED=false`): the figures with and without it. The environment (database, domain, budget,
worker off, model directory, log) is set by the caller.
"""
from __future__ import annotations

import json
import os
import sys
import time
import uuid


def _hit_text(hit) -> str:
    """A search hit's text, whatever the version calls it (a memory's content, a session chunk's text)."""
    for owner in (hit, getattr(hit, "memory", None), getattr(hit, "chunk", None)):
        for name in ("content", "text"):
            value = getattr(owner, name, None)
            if isinstance(value, str):
                return value
    return str(hit)


MAX_RUNS = 50   # session-end runs per session at most (a guard: runs repeat only while they make progress)


def _progress(db: str) -> tuple | None:
    """How far the captures in `db` got: the decision log's rows and the stored memories (every candidate a run
    handles leaves a decision). A session-end run its time stopped early (the machine loaded: the hook's budget
    or the client's timeout) saves its place; the bench runs the hook again, as the next hook of the session would,
    until a run adds nothing, so the figures do not depend on the machine's load."""
    import sqlite3
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        return tuple(con.execute(f"select count(*) from {t}").fetchone()[0] for t in ("dedup_log", "memories"))
    except sqlite3.Error:
        return None
    finally:
        con.close()


def _context(output: str) -> str:
    if not output:
        return ""
    try:
        return json.loads(output)["hookSpecificOutput"]["additionalContext"]
    except (ValueError, KeyError, TypeError):
        return output


def _runner():
    """`run(event, raw, db, environ)` of this tree's hook entry, whatever its signature."""
    try:
        from subcog_store.claude_code.entry import run
    except ImportError:   # a tree from before the hook folder split
        from subcog_store.hook.entry import run
    try:
        from subcog_store.claude_code.request import HookRequest
    except ImportError:   # a tree from before the explicit hook request: settings from the process's environment
        def old(event: str, raw: bytes, db: str, environ: dict) -> str:
            saved = dict(os.environ)
            os.environ.update(environ)
            try:
                return run(event, {}, raw, db, use_model=True)
            finally:
                os.environ.clear()
                os.environ.update(saved)
        return old

    def new(event: str, raw: bytes, db: str, environ: dict) -> str:
        return run(HookRequest.of(event, {}, raw, {**os.environ, **environ}, db=db, use_model=True))
    return new


def main() -> int:
    job = json.load(sys.stdin)
    run = _runner()
    from subcog_store.store import Store

    db, domain = job["db"], job["domain"]
    captures = []
    for s in job["sessions"]:
        raw = json.dumps({"session_id": s["name"], "transcript_path": s["path"], "cwd": "/nonexistent",
                          "hook_event_name": "SessionEnd", "reason": "exit"}).encode()
        t0, c0 = time.perf_counter(), time.process_time()
        runs, before = 0, ("not run",)
        while runs < MAX_RUNS and (now := _progress(db)) != before:   # a run its time stopped: the next goes on
            before = now
            run("session-end", raw, db, {})
            runs += 1
        captures.append({"name": s["name"], "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                         "runs": runs - 1})
    later = _embed_later(db)
    try:
        from subcog_store.recall.session_search import search_all
    except ImportError:   # a tree without the sessions' text
        search_all = None
    with Store(db, fetch_model=False) as store:
        memories = [{"id": m.id, "namespace": m.namespace, "content": m.content, "session_id": m.session_id,
                     "source": m.source, "status": m.status, "successor_id": getattr(m, "successor_id", None),
                     "domain": m.domain}
                    for m in store.memories(domain=None, status=None, limit=1_000_000)]
        searches = _searches(store, job, search_all)
    without = {}
    if search_all is not None:
        off = {"SUBCOG_SESSION_TEXT_ENABLED": "false"}
        os.environ.update(off)
        with Store(db, fetch_model=False) as store:
            without["searches"] = _searches(store, job, search_all)
        del os.environ["SUBCOG_SESSION_TEXT_ENABLED"]
        without["prompts"] = _prompts(run, db, job, off)
    prompts = _prompts(run, db, job)
    json.dump({"captures": captures, "memories": memories, "searches": searches, "prompts": prompts,
               "without_session_text": without, "later": later}, sys.stdout)
    return 0


def _embed_later(db: str) -> dict | None:
    """Where the tree embeds the sessions' text off the hook's path (the warm worker between requests, `reembed`):
    all of it now, before the questions, timed apart from the captures. None for a tree that has no such step."""
    try:
        from subcog_store.capture.session_text import embed_waiting
    except ImportError:
        return None
    from subcog_store.store import Store

    t0, c0 = time.perf_counter(), time.process_time()
    with Store(db, fetch_model=False) as store:
        n = embed_waiting(store.core, lambda: True)
    return {"embedded": n, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}


def _searches(store, job: dict, search_all) -> list[list[dict]]:
    out = []
    for q in job["questions"]:
        try:
            if search_all is not None:
                found = search_all(store, q, domain=job["domain"], limit=job.get("search_limit", 8)).items
                out.append([{"text": f.text, "kind": f.kind} for f in found])
            else:
                hits = store.search(q, domain=job["domain"], limit=job.get("search_limit", 8)).hits
                out.append([{"text": _hit_text(h), "kind": "memory"} for h in hits])
        except Exception as e:  # noqa: BLE001 - a question the search refuses counts as unanswered
            out.append([{"text": "", "kind": f"error: {type(e).__name__}"}])
    return out


def _prompts(run, db: str, job: dict, environ: dict | None = None) -> list[dict]:
    out = []
    for q in job["questions"]:
        raw = json.dumps({"session_id": str(uuid.uuid4()), "prompt": q, "cwd": "/nonexistent",
                          "hook_event_name": "UserPromptSubmit"}).encode()
        t0 = time.perf_counter()
        output = run("user-prompt-submit", raw, db, environ or {})
        out.append({"text": _context(output), "wall": time.perf_counter() - t0})
    return out


if __name__ == "__main__":
    raise SystemExit(main())
