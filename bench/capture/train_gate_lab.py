"""The prompt hook's gate on capture stores, simulated on the TRAINING questions: what each candidate rule injects.

    cd <checkout> && nice -n 10 .venv/bin/python -m bench.capture.train_gate_lab \
        --set long STORES CASES.json [--set short STORES CASES.json] [--all]

Each `--set NAME STORES CASES`: a TRAIN set of `bench_train_questions` (`long`, `short`), its stores
(`bench_train_questions capture --set NAME`, one per project) and the cache of its cases. For every question of
the set the lab reads, with this checkout's search (in one process, the model loaded),
what `recall.inject.prompt_context` reads: the memory candidates (cosine, IDF-weighted coverage, the prompt's level
and bar, the store's size) and the session texts it may offer (`search_session_text`, similarity, share of the
prompt's words, text rank, role), and whether each holds the answer (the shown line: a memory cut at LINE_CHARS, a
passage's excerpt). It then replays the hook's choice under each rule of the grid (`GRID`; this checkout's rule
first, which must give `ask`'s figures) and prints answers injected / silent on the questions nothing answers,
pooled over the sets given and per set, and picks by `pick` (the criterion of RESULTS.md, session 13: the most
answers plus silences pooled, ties to the plainer); `--all` prints every rule, else the best 25 and the reference
rules. Cases are cached in CASES (a json, read when present) so rules can be replayed without the model.

This set is TRAIN: a rule is chosen here and judged on the held-out projects (bench_heldout).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bench.capture.bench_train_questions import load, projects

LIMIT = 3   # recall_prompt_limit (config default)


def gather(stores: Path, which: str) -> list[dict]:
    """Every question's candidates as the prompt hook sees them (see the module docstring)."""
    from subcog_store.db import memories as db_memories
    from subcog_store.recall import inject
    from subcog_store.recall.scopes import search_with_user_scope
    from subcog_store.recall.session_search import excerpt, search_session_text
    from subcog_store.store import Store
    from subcog_store.text.redact import shown_line

    questions = load(which)
    cases = []
    for project in projects(which):
        db = stores / project / "memories.db"
        with Store(db, fetch_model=False) as store:
            core = store.core
            s = core.settings
            for q in (q for q in questions if q.project == project):
                found = search_with_user_scope(core, q.text, domain=project, use_model=True,
                                               limit=max(3 * int(s.recall_prompt_limit), 10))
                size = db_memories.active_in_domain(core.con, project) if found.vector_scores else None
                level = inject.prompt_level(found.vector_scores)
                bar = inject.prompt_bar(found.vector_scores, float(s.recall_min_similarity), size) \
                    if found.method == "hybrid" else None
                mems = [{"sim": h.similarity, "cov": h.coverage, "outdated_by": h.outdated_by, "id": h.memory.id,
                         "answers": q.held_by(shown_line(h.memory.content, inject.LINE_CHARS)),
                         "content": h.memory.content} for h in found.hits]
                texts = []
                for h in search_session_text(core, q.text, domain=project, limit=8, use_model=bar is not None):
                    texts.append({"sim": h.similarity, "match": h.text_match, "text_rank": h.text_rank,
                                  "role": h.role, "cov": h.coverage, "score": h.score, "content": h.content,
                                  "answers_excerpt": q.held_by(excerpt(h.content, q.text)),
                                  "answers_whole": q.held_by(h.content)})
                cases.append({"set": which, "project": project, "q": q.text, "keys": q.keys,
                              "answerable": q.answerable, "method": found.method, "size": size, "level": level,
                              "bar": bar, "min_text_match": float(s.recall_min_text_match),
                              "floor": float(s.recall_min_similarity), "memories": mems, "texts": texts})
            print(f"{project}: {sum(c['project'] == project for c in cases)} questions", file=sys.stderr)
    return cases


@dataclass
class Rule:
    """One way to choose what a prompt gets: memories by `memory_ok`, then passages by `text_ok` in the places
    left (`texts_when`: 'shipped' = when a memory was injected or none passed; 'always'; 'never')."""

    name: str
    memory_ok: Callable[[dict, dict], bool]
    text_ok: Callable[[dict, dict], bool]
    texts_when: str = "shipped"
    text_limit: int = LIMIT   # how many session texts the hook asks for (the shipped hook: recall_prompt_limit)


def replay(c: dict, rule: Rule) -> tuple[list[dict], list[dict]]:
    """The memories and passages `rule` injects for case `c` (the hook's order and limit; the token budget and
    the cut of the memories' sentences out of a passage are left out)."""
    gate = [m for m in c["memories"] if rule.memory_ok(c, m)]
    answered_before = bool(gate)
    chosen = {m["id"] for m in gate}
    gate = [m for m in gate if not (m["outdated_by"] and m["outdated_by"] in chosen)][:LIMIT]
    passages: list[dict] = []
    if rule.texts_when == "always" or (rule.texts_when == "shipped" and (gate or not answered_before)):
        for t in c["texts"][: rule.text_limit]:
            if len(gate) + len(passages) >= LIMIT:
                break
            if rule.text_ok(c, t):
                passages.append(t)
    return gate, passages


def figures(cases: list[dict], rule: Rule) -> dict:
    f: Counter = Counter()
    for c in cases:
        mems, texts = replay(c, rule)
        if c["answerable"]:
            f["answerable"] += 1
            f["injected"] += any(m["answers"] for m in mems) or any(t["answers_excerpt"] for t in texts)
        else:
            f["unanswerable"] += 1
            f["silent"] += not (mems or texts)
        f["lines"] += len(mems) + len(texts)
    return dict(f)


def fmt(f: dict) -> str:
    return (f"{f.get('injected', 0) / max(f.get('answerable', 1), 1):.3f} / "
            f"{f.get('silent', 0) / max(f.get('unanswerable', 1), 1):.3f}")


def passage_rule(margin: float | None, match: float, user: bool) -> Callable[[dict, dict], bool]:
    """A passage passes with `match` of the prompt's words and a cosine `margin` above the prompt's level (None:
    the memories' bar); `user`: the user's own words may be offered too (not a question)."""
    def ok(c: dict, t: dict) -> bool:
        if t["role"] == "user" and (not user or t["content"].rstrip().endswith("?")):
            return False
        if t["match"] < match or t["text_rank"] is None:
            return False
        if c["bar"] is None:
            return True
        need = c["bar"] if margin is None else max(float(c["floor"]), (c["level"] or 0.0) + margin)
        return (t["sim"] or -1.0) >= need
    return ok


def memory_floor(floor: float) -> Callable[[dict, dict], bool]:
    """The shipped memory gate with a cosine floor for captured memories (`inject.captured_bar`; every memory of
    the training stores was taken from a transcript); 0.40, the gate's own floor, is no floor."""
    def ok(c: dict, m: dict) -> bool:
        from subcog_store.recall.inject import holds_the_words
        if c["bar"] is None:
            return False
        return (m["sim"] or -1.0) >= max(floor, c["bar"]) or holds_the_words(m["cov"], m["sim"], c["level"])
    return ok


MAIN = (0.46, 0.06, 0.50, True, 3)   # main's rule before session 13 (6dcfdc9): CAPTURED_FLOOR, PASSAGE_MARGIN,
#                                      PASSAGE_MATCH, the user's words, texts asked (what the tie-break counts from)


def rule(floor: float, margin: float | None, match: float, user: bool, limit: int) -> Rule:
    """One point of the grid: the captured floor, the passages' margin (None: the memories' bar) and match, the
    user's words offered or not, the texts asked."""
    return Rule(f"floor {floor:.2f}, margin {margin}, match {match}, user {user}, asked {limit}",
                memory_floor(floor), passage_rule(margin, match, user), text_limit=limit)


def checkout_rule() -> Rule:
    """This checkout's constants (inject.CAPTURED_FLOOR, PASSAGE_MARGIN, PASSAGE_MATCH; the user's words offered;
    recall_prompt_limit texts asked)."""
    from subcog_store.recall.inject import CAPTURED_FLOOR, PASSAGE_MARGIN, PASSAGE_MATCH
    r = rule(CAPTURED_FLOOR, PASSAGE_MARGIN, PASSAGE_MATCH, True, LIMIT)
    r.name = "this checkout: " + r.name
    return r


GRID = [(floor, margin, match, user, limit)
        for floor in (0.40, 0.42, 0.44, 0.46, 0.48, 0.50, 0.52)
        for margin in (None, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12)
        for match in (0.4, 0.5, 0.6) for user in (False, True) for limit in (3, 5, 8)]
REFERENCE = {MAIN: "main before session 13", (0.40, None, 0.4, False, 3): "6b2367f (before session 12)",
             (0.40, 0.06, 0.50, True, 3): "main without the captured floor"}


def plainness(point: tuple) -> tuple:
    """The tie-break (fixed with the criterion): fewer settings changed from main's, the lower floor, fewer texts."""
    return (sum(a != b for a, b in zip(point, MAIN)), point[0], point[4])


def pick(scored: list[tuple[tuple, dict]]) -> tuple[tuple, dict]:
    """The criterion (RESULTS.md, session 13): the most answers injected plus silences, ties to the plainer (a tie
    `plainness` leaves: the first in GRID's order)."""
    return min(scored, key=lambda ps: (-(ps[1].get("injected", 0) + ps[1].get("silent", 0)), plainness(ps[0])))


def counts(f: dict) -> str:
    return (f"{f.get('injected', 0)} / {f.get('silent', 0)} of {f.get('answerable', 0)} / "
            f"{f.get('unanswerable', 0)} ({fmt(f)})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", nargs=3, action="append", metavar=("NAME", "STORES", "CASES"), required=True,
                    help="a TRAIN set, its stores and its cases' cache (read when present, else gathered and written)")
    ap.add_argument("--all", action="store_true", help="print every rule of the grid")
    args = ap.parse_args(argv)
    cases: list[dict] = []
    for which, stores, cache in args.set:
        cache = Path(cache)
        if cache.exists():
            got = json.loads(cache.read_text(encoding="utf-8"))
        else:
            got = gather(Path(stores).resolve(), which)
            cache.write_text(json.dumps(got), encoding="utf-8")
        cases += [{**c, "set": which} for c in got]
    groups = defaultdict(list)
    for c in cases:
        groups[c["set"]].append(c)
        groups[f"{c['set']}/{c['project']}"].append(c)
    sets = [name for name, _, _ in args.set]
    mine = checkout_rule()
    print(f"{mine.name} | pooled {counts(figures(cases, mine))} | "
          + " | ".join(f"{name} {counts(figures(groups[name], mine))}" for name in sets))
    scored = [(point, figures(cases, rule(*point))) for point in GRID]
    best = pick(scored)
    ranked = sorted(scored, key=lambda ps: (-(ps[1].get("injected", 0) + ps[1].get("silent", 0)), plainness(ps[0])))
    shown = ranked if args.all else ranked[:25] + [ps for ps in ranked[25:] if ps[0] in REFERENCE]
    print("rule | pooled: answers / silences | " + " | ".join(sets))
    for point, f in shown:
        r = rule(*point)
        tag = f" [{REFERENCE[point]}]" if point in REFERENCE else ""
        print(f"{r.name}{tag} | {counts(f)} | "
              + " | ".join(counts(figures(groups[name], r)) for name in sets))
    point, f = best
    print(f"\npicked: {rule(*point).name} | pooled {counts(f)}")
    for name in sorted(g for g in groups if "/" in g):
        print(f"  {name}: {counts(figures(groups[name], rule(*point)))}"
              f" (before session 13 {counts(figures(groups[name], rule(*MAIN)))})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
