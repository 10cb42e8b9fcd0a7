"""Recall on both labelled sets, the shipped ranking beside this tree's in the same run (issue #24, "Measured").

For each set (`bench/recall/dataset`, `dataset2`) and filler size (0, or N memories of bench/corpus.py's realistic
sentences planted in every project before its labelled memories), a store is built through the real capture
path (dates from `created_at`, as `capture --jsonl`), then every query is asked through `Store.search` and
through the user-prompt-submit hook in process (a new session per prompt, the model loaded as in the warm
worker). The same measurement runs in a subprocess on a baseline tree (`--baseline DIR`: a checkout of the
shipped commit, `git worktree add --detach DIR f205264`), so both rankings see the same data in the same hour.

Figures per set, on TEST (the split no constant was chosen on), and on TRAIN for reference: recall@5 and MRR@10
(all relevant queries; paraphrases), an outdated memory above its successor among the queries that touch a
changed fact, the hook's answers injected on relevant prompts and its silence on prompts nothing answers,
foreign memories (another project's) returned or injected, tokens per prompt and per session.

    .venv/bin/python -m bench.recall.bench_sets --baseline /tmp/h24base [--filler 0,200,10000] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench.recall import sets

OUT = Path(__file__).resolve().parents[1] / "out" / "recall"
REPO = Path(__file__).resolve().parents[2]
KEPT_SETTINGS = ("SUBCOG_BENCH_EMBED_CACHE", "SUBCOG_SHARED_DIR")   # the bench's own, not the product's


# -- one tree's measurement (runs with whatever subcog_store is first on sys.path) ------------------------------
class Borrowed:
    """A store handed to a hook without the hook closing it."""

    def __init__(self, store):
        self.store = store

    def __enter__(self):
        return self.store

    def __exit__(self, *exc) -> None:
        pass

    def __getattr__(self, name):
        return getattr(self.store, name)


def _hooks():
    try:
        from subcog_store.claude_code import recall_hooks
    except ImportError:   # the layout before the hook folder split
        from subcog_store.hook import recall_hooks
    return recall_hooks


def plant_filler(path: Path, domains: list[str], n: int) -> None:
    """n filler memories in each domain, created over the year before the labelled ones (one transaction)."""
    from bench import corpus
    from subcog_store.clock import iso
    from subcog_store.db.connection import connect, immediate
    from subcog_store.db.memories import add_vector
    from subcog_store.db.sqlfiles import q

    c = corpus.build(size=max(n, corpus.FILLER_CORPUS), n_queries=10, n_fresh=10)   # the first n: any size
    vectors, _ = corpus.embed_cached(c.sentences[:n], log=lambda s: None)
    con = connect(path)
    namespaces = ("decisions", "learnings", "patterns", "context", "config")
    with immediate(con):
        for d, domain in enumerate(domains):
            for i in range(n):
                ns = namespaces[i % len(namespaces)]
                stamp = iso(sets.REF_NOW - (365 + 365 * (n - i) / n) * sets.DAY)
                seq, _ = con.execute(q("insert_memory"), {
                    "id": f"f{d:02d}{i:09x}", "domain": domain, "namespace": ns, "content": c.sentences[i],
                    "importance": 0.5, "tags": "[]", "source": "bench-filler", "session_id": None,
                    "created_at": stamp, "now": stamp}).fetchone()
                add_vector(con, seq, ns, domain, vectors[i].tobytes())
    con.close()


def measure(set_name: str, filler: int) -> dict:
    """Every query of a set through search and the prompt hook, on a store with `filler` planted memories."""
    from subcog_store.model.embedder import Embedder

    rows, queries = sets.load(sets.SETS[set_name])
    path = OUT / f"sets-{set_name}-{filler}-{os.getpid()}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    embedder = Embedder()
    embedder.load()
    projects = sorted({r.project for r in rows})
    if filler:
        from subcog_store.store import Store
        Store(path, embedder=embedder, environ=sets.clean_environ(), fetch_model=False).close()   # the schema
        plant_filler(path, projects, filler)
    built = sets.build(path, rows, embedder, existing=bool(filler))
    store = built.store
    hooks = _hooks()
    out = {"queries": {}, "successors": {}, "facts": {}, "sessions": {}}
    for q in queries:
        try:
            hits = store.search(q.query, domain=q.project, limit=10).hits
        except Exception as e:  # noqa: BLE001 - a refused query answers nothing
            hits = []
            out.setdefault("refused", []).append(f"{q.qid}: {type(e).__name__}")
        injected, tokens = _prompt(hooks, store, q.query, q.project, f"s-{q.qid}")
        out["queries"][q.qid] = {"ids": [h.memory.id for h in hits], "domains": [h.memory.domain for h in hits],
                                 "injected": injected, "tokens": tokens}
    for project in projects:   # one session per project: the start index, then its test prompts in order
        session = f"session-{project}"
        payload = {"session_id": session, "source": "startup", "cwd": "/nowhere", "hook_event_name": "SessionStart"}
        os.environ["SUBCOG_HOOK_DOMAIN"] = project
        hooks.session_start(payload, Path(store.path), store_factory=lambda _: Borrowed(store))
        start = _last(store)["tokens"]
        used = [_prompt(hooks, store, q.query, project, session)[1] for q in queries
                if q.project == project and q.split == "test"]
        out["sessions"][project] = {"start": start, "prompts": used}
    for mid, fact in built.id_to_fact.items():
        m = store.get(mid)
        out["facts"][mid] = {"fact": fact, "key": built.id_to_key[mid], "successor": m.successor_id,
                             "domain": m.domain}
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return out


def _last(store) -> dict:
    row = store.con.execute("select memory_ids, tokens from recall_log order by id desc limit 1").fetchone()
    return {"ids": json.loads(row[0]), "tokens": row[1]}


def _prompt(hooks, store, prompt: str, domain: str, session: str) -> tuple[list[str], int]:
    payload = {"session_id": session, "prompt": prompt, "cwd": "/nowhere", "hook_event_name": "UserPromptSubmit"}
    os.environ["SUBCOG_HOOK_DOMAIN"] = domain
    hooks.user_prompt_submit(payload, Path(store.path), use_model=True, store_factory=lambda _: Borrowed(store))
    last = _last(store)
    return last["ids"], last["tokens"]


# -- scoring -----------------------------------------------------------------------------------------------------
def score(set_name: str, res: dict) -> dict:
    """The "Measured" figures of one tree on one set, per split."""
    rows, queries = sets.load(sets.SETS[set_name])
    facts = res["facts"]
    fact = {mid: f["fact"] for mid, f in facts.items()}
    key_to_id = {f["key"]: mid for mid, f in facts.items()}
    by_key = {r.key: r for r in rows}
    # a changed fact: (older fact, newer fact) for each labelled update
    changed = {(by_key[r.updates].fact, r.fact) for r in rows if r.updates}
    out = {}
    for split in ("train", "test"):
        qs = [q for q in queries if q.split == split]
        r5, rr, r5p, ans, silent, inj_tokens, touch, above, foreign, alone = [], [], [], [], [], [], 0, 0, 0, 0
        for q in qs:
            got = res["queries"][q.qid]
            ids = got["ids"]
            foreign += sum(1 for d in got["domains"] if d != q.project)
            foreign += sum(1 for mid in got["injected"] if mid in facts and facts[mid]["domain"] != q.project)
            inj_tokens.append(got["tokens"])
            ranked = []
            for mid in ids:
                f = fact.get(mid, "?" + mid)
                if f not in ranked:
                    ranked.append(f)
            injected = {fact.get(mid, "?") for mid in got["injected"]}
            if not q.is_relevant:
                silent.append(not got["injected"])
                continue
            hit5 = len(q.answers & set(ranked[:5])) / len(q.answers)
            r5.append(hit5)
            rr.append(next((1 / (i + 1) for i, f in enumerate(ranked[:10]) if f in q.answers), 0.0))
            if q.kind == "paraphrase":
                r5p.append(hit5)
            ans.append(len(q.answers & injected) / len(q.answers))
            for old, new in changed:   # questions that touch a changed fact
                if new in q.relevant or old in q.relevant:
                    touch += 1
                    pos = {f: i for i, f in enumerate(ranked)}
                    if old in pos and (new not in pos or pos[old] < pos[new]):
                        above += 1
                    if old in injected and new not in injected:
                        alone += 1
        out[split] = {"recall5": _mean(r5), "mrr10": _mean(rr), "recall5_paraphrase": _mean(r5p),
                      "n_relevant": len(r5), "n_paraphrase": len(r5p), "hook_answers": _mean(ans),
                      "hook_silent": _mean(silent), "n_irrelevant": len(silent), "touch_changed": touch,
                      "outdated_above": above, "outdated_injected_alone": alone, "foreign": foreign,
                      "tokens_per_prompt": _mean(inj_tokens)}
    sess = res["sessions"]
    out["session_tokens"] = {p: s["start"] + sum(s["prompts"]) for p, s in sess.items()}
    out["linked_updates"] = sum(1 for r in rows if r.updates and r.updates in key_to_id and r.key in key_to_id
                                and facts[key_to_id[r.updates]]["successor"] == key_to_id[r.key])
    out["updates"] = sum(1 for r in rows if r.updates)
    out["refused"] = res.get("refused", [])
    return out


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


# -- running both trees ------------------------------------------------------------------------------------------
def run_in(tree: Path | None, set_name: str, filler: int) -> dict:
    """`measure` in a subprocess whose subcog_store comes from `tree` (None: this checkout)."""
    try:
        return run_code(tree, f"from bench.recall.bench_sets import measure; "
                              f"json.dump(measure({set_name!r}, {filler}), sys.stdout)")
    except RuntimeError as e:
        raise RuntimeError(f"{tree or 'this tree'} {set_name} {filler}: {e}") from None


def run_code(tree: Path | None, code: str) -> dict:
    """Python `code` (json and sys imported; it prints one JSON value) in a subprocess whose subcog_store and sql/
    come from `tree` (None: this checkout); bench/ is this checkout's. Returns the value."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_") or k in KEPT_SETTINGS}
    env["SUBCOG_MODEL_DIR"] = str(REPO / "models")
    if tree is not None:
        shim = OUT / "baseline-shim"
        shim.mkdir(parents=True, exist_ok=True)
        for name in ("subcog_store", "sql"):
            link = shim / name
            if link.is_symlink() and link.resolve() != (tree / name).resolve():
                link.unlink()
            if not link.exists():
                link.symlink_to((tree / name).resolve())
        env["PYTHONPATH"] = f"{shim}{os.pathsep}{REPO}"
    else:
        env["PYTHONPATH"] = str(REPO)
    cwd = OUT / "baseline-shim" if tree is not None else REPO   # `python -c` puts its working directory first
    proc = subprocess.run([sys.executable, "-c", "import json, sys; " + code], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of the shipped commit")
    parser.add_argument("--filler", default="0", help="comma-separated filler sizes per project, e.g. 0,200,10000")
    parser.add_argument("--sets", default="set1,set2")
    parser.add_argument("--json", type=Path, default=OUT / "bench_sets-last.json")
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                     "load_start": os.getloadavg(), "runs": {}}
    trees = {"this tree": None} | ({"shipped": args.baseline} if args.baseline else {})
    for filler in (int(x) for x in args.filler.split(",")):
        for set_name in args.sets.split(","):
            for label, tree in trees.items():
                print(f"{label}: {set_name}, filler {filler}", flush=True)
                scored = score(set_name, run_in(tree, set_name, filler))
                results["runs"][f"{label} | {set_name} | {filler}"] = scored
                t = scored["test"]
                print(f"  test recall@5 {t['recall5']:.3f} MRR@10 {t['mrr10']:.3f} "
                      f"paraphrase {t['recall5_paraphrase']:.3f}"
                      f" | outdated above {t['outdated_above']}/{t['touch_changed']} | hook answers "
                      f"{t['hook_answers']:.3f} silent {t['hook_silent']:.3f} | foreign {t['foreign']} | "
                      f"tokens/prompt {t['tokens_per_prompt']:.1f} | linked {scored['linked_updates']}/"
                      f"{scored['updates']}", flush=True)
    results["seconds"] = round(time.perf_counter() - started)
    results["load_end"] = os.getloadavg()
    args.json.write_text(json.dumps(results, indent=1))
    print(f"wrote {args.json} ({results['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
