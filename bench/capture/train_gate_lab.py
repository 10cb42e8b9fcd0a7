"""The prompt hook's gate on capture stores, simulated on the TRAINING questions: what each candidate rule injects.

    cd <checkout> && nice -n 10 .venv/bin/python -m bench.capture.train_gate_lab STORES [--cases CASES.json]

STORES: `bench_train_questions capture`'s stores (one per training project). For every question of
`train_questions/questions.jsonl` the lab reads, with this checkout's search (in one process, the model loaded),
what `recall.inject.prompt_context` reads: the memory candidates (cosine, IDF-weighted coverage, the prompt's level
and bar, the store's size) and the session texts it may offer (`search_session_text`, similarity, share of the
prompt's words, text rank, role), and whether each holds the answer (the shown line: a memory cut at LINE_CHARS, a
passage's excerpt). It then replays the hook's choice under each rule of RULES (the shipped rule first: it must
give `ask`'s figures) and prints answers injected / silent on the questions nothing answers, for the whole set and
per project. Cases are cached in CASES (a json) so rules can be replayed without the model.

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


def gather(stores: Path) -> list[dict]:
    """Every question's candidates as the prompt hook sees them (see the module docstring)."""
    from subcog_store.db import memories as db_memories
    from subcog_store.recall import inject
    from subcog_store.recall.scopes import search_with_user_scope
    from subcog_store.recall.session_search import excerpt, search_session_text
    from subcog_store.store import Store
    from subcog_store.text.redact import shown_line

    questions = load()
    cases = []
    for project in projects():
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
                cases.append({"project": project, "q": q.text, "keys": q.keys, "answerable": q.answerable,
                              "method": found.method, "size": size, "level": level, "bar": bar,
                              "min_text_match": float(s.recall_min_text_match),
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


def shipped_memory(c: dict, m: dict) -> bool:
    from subcog_store.recall.inject import holds_the_words
    if c["bar"] is None:
        return False
    return (m["sim"] or -1.0) >= c["bar"] or holds_the_words(m["cov"], m["sim"], c["level"])


def shipped_text(c: dict, t: dict) -> bool:
    by_words = t["match"] >= c["min_text_match"] and t["text_rank"] is not None
    return by_words and (c["bar"] is None or (t["sim"] or -1.0) >= c["bar"]) and t["role"] != "user"


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
    """The shipped memory gate with another cosine floor."""
    def ok(c: dict, m: dict) -> bool:
        from subcog_store.recall.inject import GATE_MARGIN, holds_the_words
        if c["bar"] is None:
            return False
        bar = max(floor, c["bar"]) if c["level"] is None else max(floor, c["level"] + GATE_MARGIN)
        return (m["sim"] or -1.0) >= bar or holds_the_words(m["cov"], m["sim"], c["level"])
    return ok


def chosen_memory(c: dict, m: dict) -> bool:
    """This checkout's memory gate on a capture store: the shipped one, and CAPTURED_FLOOR (every memory of the
    training stores was taken from a transcript)."""
    from subcog_store.recall.inject import CAPTURED_FLOOR
    return memory_floor(CAPTURED_FLOOR)(c, m)


def chosen_text(c: dict, t: dict) -> bool:
    from subcog_store.recall.inject import PASSAGE_MARGIN, PASSAGE_MATCH
    return passage_rule(PASSAGE_MARGIN, PASSAGE_MATCH, True)(c, t)


RULES = [Rule("shipped (6b2367f)", shipped_memory, shipped_text), Rule("this checkout", chosen_memory, chosen_text)]
for user in (False, True):
    for limit in (3, 8):
        for margin in (None, 0.14, 0.12, 0.10, 0.08, 0.06, 0.04):
            for match in (0.4, 0.5, 0.6):
                RULES.append(Rule(f"passages: user {user}, asked {limit}, margin {margin}, match {match}",
                                  shipped_memory, passage_rule(margin, match, user), text_limit=limit))
for floor in (0.42, 0.44, 0.46, 0.48, 0.50, 0.52):
    RULES.append(Rule(f"memory floor {floor}", memory_floor(floor), shipped_text))
    for user in (False, True):
        for margin in (0.10, 0.06):
            RULES.append(Rule(f"memory floor {floor}; passages: user {user}, asked 8, margin {margin}, match 0.5",
                              memory_floor(floor), passage_rule(margin, 0.5, user), text_limit=8))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stores", type=Path)
    ap.add_argument("--cases", type=Path, help="cache of the gathered cases (read when present, else written)")
    args = ap.parse_args(argv)
    if args.cases and args.cases.exists():
        cases = json.loads(args.cases.read_text(encoding="utf-8"))
    else:
        cases = gather(args.stores.resolve())
        if args.cases:
            args.cases.write_text(json.dumps(cases), encoding="utf-8")
    by_project = defaultdict(list)
    for c in cases:
        by_project[c["project"]].append(c)
    print("rule | all (answers injected / silent) | " + " | ".join(by_project))
    for rule in RULES:
        print(f"{rule.name} | {fmt(figures(cases, rule))} | "
              + " | ".join(fmt(figures(cs, rule)) for cs in by_project.values()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
