"""Constants of search and the prompt hook chosen through the real store, on TRAIN, reported on TEST.

For each labelled set and filler size a store is built once as bench_sets.py builds it (filler planted, then the
set captured through the real path); then each variant of the constants below runs every query through
`Store.search` and the user-prompt-submit hook (a new session per prompt and variant) and is scored as
bench_sets.py scores it. A variant is a change of module constants in this process:

- `recall.search.TEXT_TERMS`: how many of the prompt's content words (the rarest held by some memory) the
  full-text query asks for (its cost grows with every common word; 32 asks for all, as before).
- `recall.inject.MARGIN_SCALE` (`--variants margin`): the gate's margin fixed (a scale so large that
  `inject.gate_margin` stays GATE_MARGIN, as before) beside the shipped narrowing in a large project; chosen by
  scale_lab.py on TRAIN, run here through the real hook to check the simulation (no choice made here).

`choose` picks on TRAIN only: the fewest words (of those tried) whose every TRAIN figure (recall@5, MRR@10, answers
injected, silence) equals asking for all of them in every (set, size) group: it is a cost, not a quality knob.
TEST is printed beside it, never used to choose.

    .venv/bin/python -m bench.recall.store_lab [--filler 0,200,10000] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from bench.recall import sets
from bench.recall.bench_sets import OUT, Borrowed, _hooks, plant_filler, score

ALL_WORDS = {"TEXT_TERMS": 32}     # every content word (the query is cut at 32), as before
VARIANTS = [ALL_WORDS, {"TEXT_TERMS": 8}, {"TEXT_TERMS": 6}, {"TEXT_TERMS": 4}]
FIXED_MARGIN = {"MARGIN_SCALE": 1e9}   # gate_margin = GATE_MARGIN at every size (before the narrowing)
MARGIN_VARIANTS = [FIXED_MARGIN, {"MARGIN_SCALE": 0.50}]


def label(variant: dict) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in variant.items())


def apply(variant: dict) -> None:
    from subcog_store.recall import inject, search

    for name, value in variant.items():
        setattr(search if name == "TEXT_TERMS" else inject, name, value)


def run_set(set_name: str, filler: int, variants: list[dict]) -> dict:
    """Every variant over one set at one filler size: bench_sets.score's figures per variant."""
    from subcog_store.model.embedder import Embedder
    from subcog_store.store import Store

    rows, queries = sets.load(sets.SETS[set_name])
    path = OUT / f"store-lab-{set_name}-{filler}-{os.getpid()}.db"
    embedder = Embedder()
    embedder.load()
    projects = sorted({r.project for r in rows})
    if filler:
        Store(path, embedder=embedder, environ=sets.clean_environ(), fetch_model=False).close()
        plant_filler(path, projects, filler)
    built = sets.build(path, rows, embedder, existing=bool(filler))
    store = built.store
    hooks = _hooks()
    facts = {}
    for mid, fact in built.id_to_fact.items():
        m = store.get(mid)
        facts[mid] = {"fact": fact, "key": built.id_to_key[mid], "successor": m.successor_id, "domain": m.domain}
    from subcog_store.recall import search as product_search

    from subcog_store.recall import inject as product_inject

    shipped = {"TEXT_TERMS": product_search.TEXT_TERMS, "MARGIN_SCALE": product_inject.MARGIN_SCALE}
    out = {}
    try:
        for v, variant in enumerate(variants):
            apply(variant)
            res = {"queries": {}, "successors": {}, "facts": facts, "sessions": {}}
            for q in queries:
                hits = store.search(q.query, domain=q.project, limit=10).hits
                os.environ["SUBCOG_HOOK_DOMAIN"] = q.project
                payload = {"session_id": f"lab-{v}-{q.qid}", "prompt": q.query, "cwd": "/nowhere",
                           "hook_event_name": "UserPromptSubmit"}
                hooks.user_prompt_submit(payload, Path(store.path), use_model=True,
                                         store_factory=lambda _: Borrowed(store))
                ids, tokens = store.con.execute(
                    "select memory_ids, tokens from recall_log order by id desc limit 1").fetchone()
                res["queries"][q.qid] = {"ids": [h.memory.id for h in hits],
                                         "domains": [h.memory.domain for h in hits],
                                         "injected": json.loads(ids), "tokens": tokens}
            out[label(variant)] = score(set_name, res)
            t, tr = out[label(variant)]["test"], out[label(variant)]["train"]
            print(f"{set_name} +{filler} {label(variant)}: train answers {tr['hook_answers']:.3f} silent "
                  f"{tr['hook_silent']:.3f} r@5 {tr['recall5']:.3f} | test answers {t['hook_answers']:.3f} silent "
                  f"{t['hook_silent']:.3f} r@5 {t['recall5']:.3f} MRR {t['mrr10']:.3f} para "
                  f"{t['recall5_paraphrase']:.3f}", flush=True)
    finally:
        apply(shipped)
        store.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
    return out


def choose(results: dict) -> dict:
    """The variant chosen on TRAIN (see the module docstring)."""
    groups = list(results)
    figures = ("recall5", "mrr10", "hook_answers", "hook_silent")

    def same(name: str) -> bool:
        return all(abs(results[g][name]["train"][f] - results[g][label(ALL_WORDS)]["train"][f]) < 1e-9
                   for g in groups for f in figures)
    return min((v for v in VARIANTS if same(label(v))), key=lambda v: v["TEXT_TERMS"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filler", default="0,200,10000")
    parser.add_argument("--sets", default="set1,set2")
    parser.add_argument("--json", type=Path, default=OUT / "store_lab-last.json")
    parser.add_argument("--rescore", action="store_true", help="choose again from the figures in --json")
    parser.add_argument("--variants", choices=("text-terms", "margin"), default="text-terms")
    args = parser.parse_args(argv)
    if args.variants == "margin":
        return check_margin(args)
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if args.rescore:
        results = json.loads(args.json.read_text())["results"]
    else:
        results = {f"{s} | {f}": run_set(s, int(f), VARIANTS)
                   for f in args.filler.split(",") for s in args.sets.split(",")}
    picked = choose(results)
    chosen = label(picked)
    print(f"chosen on TRAIN: {chosen}")
    for g, r in results.items():
        for name in dict.fromkeys([label(ALL_WORDS), chosen]):
            t = r[name]["test"]
            print(f"  TEST {g} {name}: answers {t['hook_answers']:.3f} silent {t['hook_silent']:.3f} recall@5 "
                  f"{t['recall5']:.3f} MRR@10 {t['mrr10']:.3f} paraphrase {t['recall5_paraphrase']:.3f} "
                  f"outdated above {t['outdated_above']}/{t['touch_changed']} tokens/prompt "
                  f"{t['tokens_per_prompt']:.1f}")
    if not args.rescore:
        args.json.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                         "load": os.getloadavg(), "seconds": round(time.perf_counter() - started),
                                         "chosen": picked, "results": results}, indent=1))
    return 0


def check_margin(args) -> int:
    """The gate's margin fixed beside narrowed, through the real hook (TRAIN and TEST printed; nothing chosen)."""
    started = time.perf_counter()
    results = {f"{s} | {f}": run_set(s, int(f), MARGIN_VARIANTS)
               for f in args.filler.split(",") for s in args.sets.split(",")}
    args.json.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                     "load": os.getloadavg(), "seconds": round(time.perf_counter() - started),
                                     "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
