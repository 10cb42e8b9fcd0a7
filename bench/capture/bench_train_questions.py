"""The prompt hook on the TRAINING sessions' stores: where it loses the answers the search finds.

    cd <checkout> && nice -n 10 .venv/bin/python -m bench.capture.bench_train_questions capture STORES [--set S]
    .venv/bin/python -m bench.capture.bench_train_questions ask STORES OUT.json [--tree DIR] [--set S]
    .venv/bin/python -m bench.capture.bench_train_questions score OUT.json [OUT.json ...] [--examples] [--set S]

Two TRAIN sets (`--set`, SETS): `long`, the 18 long real training sessions (../shared/samples/real/train) and
`train_questions/`; `short`, the 20 short invented sessions of `train_short/` (a user who states the stack and the
choices) and their questions. `capture` builds one store per project of the set (the file name's first word) as
`bench_heldout` builds the held-out ones: the session-end hook of this checkout on every session of the project
(worker off, the model loaded, `run_tree.py`), the sessions' text embedded after it, into `STORES/<project>/`
(kept, so rules can be compared on the same stores). `ask` sends the set's questions
through `--tree`'s search (top 8) and user-prompt-submit hook (a new session per prompt), with and without the
sessions' text, against a copy of each store (nothing captured again). `score` prints, per result, the figures
`bench_heldout` prints (top 8 holds the answer, the hook injects it, silent when nothing answers; memories only)
and where the hook loses:

- answerable, answer in the top 8, not injected: the hook said nothing (`gated out, silent`), or injected only
  lines that do not answer (`gated out, a memory` / `... a passage` by what it injected);
- answerable, not in the top 8 (`not found`), and of those how many got an injection that does not answer;
- nothing answers, something injected: `a memory` or `a passage of the sessions' text` (the first line's kind).

This set is TRAIN: rules of the prompt hook on capture stores are chosen here and judged held out (bench_heldout).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from bench.capture.bench_heldout import REPO, run_tree
from bench.capture.heldout import Question

HERE = Path(__file__).resolve().parent
SETS = {   # name: (the sessions' folder, the questions)
    "long": (REPO.parent / "shared" / "samples" / "real" / "train", HERE / "train_questions" / "questions.jsonl"),
    "short": (HERE / "train_short" / "sessions", HERE / "train_short" / "questions.jsonl"),
}
PASSAGE = "- [earlier session,"


def load(which: str = "long") -> list[Question]:
    out = []
    for line in SETS[which][1].read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out.append(Question(row["q"], row["project"], row["keys"], row.get("session")))
    return out


def projects(which: str = "long") -> dict[str, list[Path]]:
    """The set's sessions by project (the file name's first word), each project's in the order of their names."""
    out: dict[str, list[Path]] = defaultdict(list)
    for path in sorted(SETS[which][0].glob("*.jsonl")):
        out[path.name.split("-")[0]].append(path)
    return dict(out)


def capture(stores: Path, which: str) -> None:
    for project, paths in projects(which).items():
        work = stores / project
        if (work / "memories.db").exists():
            print(f"{project}: kept", file=sys.stderr)
            continue
        result = run_tree(REPO, project, [(p.stem, p) for p in paths], [], work)
        print(f"{project}: {len(result['memories'])} memories, capture CPU "
              f"{sum(c['cpu'] for c in result['captures']):.1f} s", file=sys.stderr)


def ask(stores: Path, out: Path, tree: Path, which: str) -> None:
    questions = load(which)
    results = {}
    with tempfile.TemporaryDirectory(prefix="subcog-trainq-") as tmp:
        for project in projects(which):
            work = Path(tmp) / project
            work.mkdir()
            for f in (stores / project).glob("memories.db*"):
                shutil.copy2(f, work / f.name)
            qs = [q.text for q in questions if q.project == project]
            results[project] = run_tree(tree, project, [], qs, work)
            print(f"{project}: {len(qs)} questions", file=sys.stderr)
    out.write_text(json.dumps({"tree": str(tree), "results": results}), encoding="utf-8")


def kind_of(prompt: str) -> str:
    """What a prompt's injection holds: '' (nothing), 'memory', 'passage' or 'both'."""
    lines = [ln for ln in prompt.splitlines() if ln.startswith("- [")]
    kinds = {"passage" if ln.startswith(PASSAGE) else "memory" for ln in lines}
    return "" if not kinds else "both" if len(kinds) == 2 else kinds.pop()


def breakdown(path: Path, examples: bool, which: str) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    questions = load(which)
    c: Counter = Counter()
    shown = []
    for project, result in data["results"].items():
        qs = [q for q in questions if q.project == project]
        without = result.get("without_session_text") or {}
        for i, q in enumerate(qs):
            hits = " \n".join(h["text"] for h in result["searches"][i])
            prompt = result["prompts"][i]["text"]
            hits0 = " \n".join(h["text"] for h in (without.get("searches") or result["searches"])[i])
            prompt0 = (without.get("prompts") or result["prompts"])[i]["text"]
            c["prompts"] += 1
            c["chars"] += len(prompt)
            kind = kind_of(prompt)
            if q.answerable:
                c["answerable"] += 1
                top8, injected = q.held_by(hits), q.held_by(prompt)
                c["top8"] += top8
                c["injected"] += injected
                c["top8 memories only"] += q.held_by(hits0)
                c["injected memories only"] += q.held_by(prompt0)
                if injected:
                    c[f"injected by {kind_of_answer(q, prompt)}"] += 1
                    continue
                where = "top 8" if top8 else "not found"
                c[f"{where}: {('injected ' + kind + ', not the answer') if kind else 'silent'}"] += 1
                shown.append((where, kind, q, prompt))
            else:
                c["unanswerable"] += 1
                c["silent"] += not prompt.strip()
                c["silent memories only"] += not prompt0.strip()
                if kind:
                    c[f"nothing answers: injected {kind}"] += 1
                    shown.append(("nothing answers", kind, q, prompt))
    if examples:
        for where, kind, q, prompt in shown:
            print(f"\n### {where} / {kind or 'silent'}: {q.text}  keys={q.keys}\n{prompt[:900]}")
    return dict(c)


def kind_of_answer(q: Question, prompt: str) -> str:
    """Which lines of an injection hold the answer: a memory, a passage, or only both together."""
    lines = [ln for ln in prompt.splitlines() if ln.startswith("- [")]
    mem = " ".join(ln for ln in lines if not ln.startswith(PASSAGE))
    pas = " ".join(ln for ln in lines if ln.startswith(PASSAGE))
    return "memory" if q.held_by(mem) else "passage" if q.held_by(pas) else "both together"


def render(name: str, c: dict) -> str:
    a, u = c.get("answerable", 0), c.get("unanswerable", 0)
    lines = [f"{name}: top 8 {c.get('top8', 0) / a:.3f} of {a} (memories only {c.get('top8 memories only', 0) / a:.3f}),"
             f" injects {c.get('injected', 0) / a:.3f} (memories only {c.get('injected memories only', 0) / a:.3f}),"
             f" silent {c.get('silent', 0) / u:.3f} of {u} (memories only {c.get('silent memories only', 0) / u:.3f}),"
             f" chars per prompt {c.get('chars', 0) / max(c.get('prompts', 1), 1):.0f}"]
    for k in sorted(c):
        if ":" in k or k.startswith("injected by"):
            lines.append(f"  {k}: {c[k]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("capture")
    p.add_argument("stores", type=Path)
    p = sub.add_parser("ask")
    p.add_argument("stores", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--tree", type=Path, default=REPO)
    p = sub.add_parser("score")
    p.add_argument("results", type=Path, nargs="+")
    p.add_argument("--examples", action="store_true")
    for p in sub.choices.values():
        p.add_argument("--set", dest="which", choices=sorted(SETS), default="long", help="the TRAIN set (SETS)")
    args = ap.parse_args(argv)
    if args.cmd == "capture":
        capture(args.stores.resolve(), args.which)
    elif args.cmd == "ask":
        ask(args.stores.resolve(), args.out, args.tree.resolve(), args.which)
    else:
        for path in args.results:
            print(render(path.name, breakdown(path, args.examples, args.which)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
