"""Capture on held-out projects: the capture of a baseline commit beside this checkout's, in the same run.

    cd <checkout> && nice -n 10 .venv/bin/python -m bench.capture.bench_heldout [--baseline COMMIT] [--no-devmem]

For each tree (the baseline commit, checked out with `git worktree add --detach` in a temporary folder, and this
checkout) and each held-out project, `run_tree.py` runs that tree's own hooks in a fresh store: the session-end
hook on every session of the project, then every question through `Store.search` (top 8) and the
user-prompt-submit hook (a new session per prompt; the model loaded, as in the warm worker). Then, from the
labelled units of the sessions (`heldout/labels`), the issue's figures:

- precision: stored memories whose sentence is labelled a lasting fact;
- recall: labelled facts (a fact and its restatements share an id) with at least one memory;
- repeated: stored memories whose fact an earlier memory of the same session already holds; beside it the extra
  copies of a fact (the memories holding a labelled fact beyond the first that holds it, summed over the facts:
  restatements counted per fact, which grouping more into one memory cannot hide);
- stale: current memories (not marked outdated) whose sentence is status or a belief the session corrects;
- questions: the top 8 search results hold the answer (every key group of the question in their text); the
  prompt hook injects it; it stays silent on the questions nothing answers;
- time: the session-end hook per transcript (3 MB+ training transcripts included for time only).

A memory is traced to its sentences by text, each sentence of each line on its own (a paragraph or list kept whole
holds several): the longest labelled unit of its session contained in the sentence, else the unit sharing most of its words (at
least MATCH_JACCARD); a memory with no sentence traced is traced whole the same way. A memory is a lasting fact
when one of its sentences is; a repeat when every fact it holds an earlier memory of the session already held;
stale when it holds no fact and one of its sentences is status or corrected. Writes its section of bench/capture/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bench.capture.heldout import HeldOutSession, Question, devmembench, load_questions, load_sessions
from bench.capture.label_units import session_units
from subcog_store.extraction.sentences import split_sentences
from subcog_store.model.files import ModelFilesError, verify

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
BEGIN, END = "<!-- bench_heldout: begin -->", "<!-- bench_heldout: end -->"
BASELINE = "f205264"  # main before issue 25: the capture the issue measured
MATCH_JACCARD = 0.4
TIMING = ["cipherbox-e2e-test-debugging.jsonl", "ohmyposh-gradient-segment-design.jsonl",
          "cipherbox-schema-migration-review.jsonl", "ctxeval-agents-claude-md-coexistence.jsonl"]
_WORDS = re.compile(r"[\w.:/@-]+")


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[`*_]", "", text).lower().split())


@dataclass
class Labelled:
    """A unit of a held-out session with its label row."""

    text: str
    label: int
    fact: str | None
    stale: str | None


def labelled_units(s: HeldOutSession) -> list[Labelled]:
    rows = {k: list(v) for k, v in s.labels.items()}
    out = []
    for _, _, t, u in session_units(s.path):
        pending = rows.get((t.uuid, u.sha))
        if pending:
            row = pending.pop(0)
            out.append(Labelled(u.text, row["label"], row.get("fact"), row.get("stale")))
    return out


def trace(memory: str, units: list[Labelled]) -> Labelled | None:
    """The labelled unit a stored memory comes from (see the module docstring), or None."""
    m = _norm(memory)
    contained = [u for u in units if len(_norm(u.text)) >= 8 and _norm(u.text) in m]
    if contained:
        return max(contained, key=lambda u: len(u.text))
    words = set(_WORDS.findall(m))
    best, score = None, 0.0
    for u in units:
        other = set(_WORDS.findall(_norm(u.text)))
        j = len(words & other) / len(words | other) if words | other else 0.0
        if j > score:
            best, score = u, j
    return best if score >= MATCH_JACCARD else None


def traced(memory: str, units: list[Labelled]) -> list[Labelled]:
    """The labelled units a stored memory comes from: each sentence of each line traced on its own (a paragraph
    or a list kept whole holds several), else the memory traced whole; in order, each once."""
    out: list[Labelled] = []
    for piece in (s for line in memory.splitlines() for s in split_sentences(line.removeprefix("- "))):
        u = trace(piece, units)
        if u is not None and not any(u is o for o in out):
            out.append(u)
    whole = trace(memory, units) if not out else None
    return [whole] if whole is not None else out


@dataclass
class Figures:
    stored: int = 0
    facts_stored: int = 0
    unmatched: int = 0
    repeated: int = 0
    copies: int = 0          # extra copies of a fact (see the module docstring)
    stale: int = 0
    facts: int = 0
    facts_found: int = 0
    answerable: int = 0
    top8: int = 0
    injected: int = 0
    unanswerable: int = 0
    silent: int = 0
    prompt_chars: int = 0
    prompts: int = 0
    top8_memories: int = 0     # the same, with the sessions' text switched off (trees that keep it)
    injected_memories: int = 0
    silent_memories: int = 0
    has_session_text: int = 0
    capture_secs: list = field(default_factory=list)
    capture_cpu: list = field(default_factory=list)
    later_cpu: float = 0.0     # the sessions' text embedded after the captures (trees that defer it)

    def add(self, other: "Figures") -> None:
        for k, v in vars(other).items():
            setattr(self, k, getattr(self, k) + v)


def evaluate(result: dict, sessions: list[HeldOutSession], questions: list[Question]) -> Figures:
    f = Figures(capture_secs=[c["wall"] for c in result["captures"]],
                capture_cpu=[c.get("cpu", 0.0) for c in result["captures"]],
                later_cpu=(result.get("later") or {}).get("cpu", 0.0))
    without = result.get("without_session_text") or {}
    f.has_session_text = int(bool(without))
    by_session = defaultdict(list)
    for m in result["memories"]:
        by_session[m["session_id"]].append(m)
    for s in sessions:
        units = labelled_units(s)
        facts = {u.fact for u in units if u.label == 1}
        found, seen, holders = set(), set(), Counter()
        for m in by_session.get(s.name, []):
            f.stored += 1
            us = traced(m["content"], units)
            if not us:
                f.unmatched += 1
                continue
            current = m["status"] == "active" and not m.get("successor_id")
            held = {u.fact for u in us if u.label == 1}
            if held:
                f.facts_stored += 1
                f.repeated += held <= seen
                holders.update(held)
                seen |= held
                found |= held
            elif any(u.stale for u in us) and current:
                f.stale += 1
        f.facts += len(facts)
        f.facts_found += len(found & facts)
        f.copies += sum(n - 1 for n in holders.values())
    if not sessions:
        f.stored = sum(len(v) for v in by_session.values())
    plain_hits = without.get("searches") or result["searches"]
    plain_prompts = without.get("prompts") or result["prompts"]
    for q, hits, prompt, hits0, prompt0 in zip(questions, result["searches"], result["prompts"], plain_hits,
                                               plain_prompts):
        f.prompts += 1
        f.prompt_chars += len(prompt["text"])
        if q.answerable:
            f.answerable += 1
            f.top8 += q.held_by(" \n".join(h["text"] for h in hits))
            f.injected += q.held_by(prompt["text"])
            f.top8_memories += q.held_by(" \n".join(h["text"] for h in hits0))
            f.injected_memories += q.held_by(prompt0["text"])
        else:
            f.unanswerable += 1
            f.silent += not prompt["text"].strip()
            f.silent_memories += not prompt0["text"].strip()
    return f


def run_tree(tree: Path, domain: str, sessions: list[tuple[str, Path]], questions: list[str], work: Path) -> dict:
    """`run_tree.py` under `tree`'s code in a fresh store; returns its result."""
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBCOG_")}
    env.update(PYTHONPATH=str(tree), SUBCOG_DB=str(work / "memories.db"), SUBCOG_HOOK_DOMAIN=domain,
               SUBCOG_WORKER_ENABLED="false", SUBCOG_HOOK_BUDGET_SECS="600", SUBCOG_MODEL_DIR=str(REPO / "models"),
               SUBCOG_HOOK_LOG=str(work / "hook.log"), XDG_DATA_HOME=str(work), XDG_STATE_HOME=str(work),
               XDG_RUNTIME_DIR=str(work), OMP_NUM_THREADS="1")
    job = {"db": str(work / "memories.db"), "domain": domain, "search_limit": 8, "questions": questions,
           "sessions": [{"name": n, "path": str(p)} for n, p in sessions]}
    got = subprocess.run([sys.executable, str(Path(__file__).with_name("run_tree.py"))], input=json.dumps(job),
                         capture_output=True, text=True, env=env, cwd=str(work))
    if got.returncode != 0:
        raise RuntimeError(f"run_tree under {tree} failed:\n{got.stderr[-3000:]}")
    return json.loads(got.stdout)


def baseline_tree(commit: str, where: Path) -> Path:
    path = where / f"baseline-{commit}"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(path), commit], check=True)
    return path


def pct(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def render(rows: dict, trees: list[str], elapsed: float, timing: dict, baseline: str, later: dict) -> str:
    out = [BEGIN, "## Held-out projects: the issue's figures, baseline beside this checkout (bench_heldout.py)", "",
           f"Generated by `python -m bench.capture.bench_heldout` in {elapsed:.0f} s; baselines = `{baseline}` (the "
           "first: the capture before issue 25), each run from a `git worktree` of that commit in the same run. Each project is "
           "captured into its own fresh store by the session-end hook (worker off, the model loaded in the one "
           "process); questions go through `Store.search` (top 8) and the user-prompt-submit hook (a new session "
           "each). Sessions, labels and questions: `heldout/SOURCES.md`. Nothing here was tuned on these projects.",
           "", "| project | tree | stored | precision | recall | repeated | stale | untraced | top-8 holds answer "
           "| prompt hook injects it | silent when nothing answers | chars per prompt | capture CPU (+ later) |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for project, per_tree in rows.items():
        for tree in trees:
            f = per_tree[tree]
            mem = (f" (memories only: {pct(f.top8_memories, f.answerable)})" if f.has_session_text else "")
            mem_p = (f" ({pct(f.injected_memories, f.answerable)})" if f.has_session_text else "")
            mem_s = (f" ({pct(f.silent_memories, f.unanswerable)})" if f.has_session_text else "")
            out.append(f"| {project} | {tree} | {f.stored} | {pct(f.facts_stored, f.stored)} | "
                       f"{pct(f.facts_found, f.facts)} | {pct(f.repeated, f.stored)} ({f.copies} extra copies) | "
                       f"{pct(f.stale, f.stored)} | "
                       f"{f.unmatched} | {pct(f.top8, f.answerable)} of {f.answerable}{mem} | "
                       f"{pct(f.injected, f.answerable)}{mem_p} | {pct(f.silent, f.unanswerable)} of "
                       f"{f.unanswerable}{mem_s} | {f.prompt_chars / max(f.prompts, 1):.0f} | "
                       f"{sum(f.capture_cpu):.1f} s" + (f" (+ {f.later_cpu:.1f} s)" if f.later_cpu else "") + " |")
    out += ["", "**real** pools the three labelled projects (gitsync, cli, repiq: 8 sessions); precision, recall, "
            "repeated and stale exist only there (DevMemBench has no sentence labels). In parentheses: the same "
            "with the sessions' text switched off (`SUBCOG_SESSION_TEXT_ENABLED=false`), where the tree keeps it.",
            ""]
    if timing:
        out += ["### Time of the session-end hook per transcript", "",
                "| file | size | " + " | ".join(f"{t} wall / CPU" for t in trees) + " |",
                "|---|---:|" + "---:|" * len(trees)]
        for name, (size, per_tree) in timing.items():
            out.append(f"| {name} | {size / 1e6:.1f} MB | " + " | ".join(
                f"{per_tree[t][0]:.1f} s / {per_tree[t][1]:.1f} s" for t in trees) + " |")
        out.append("| CPU of the four, in all | | " + " | ".join(
            f"{sum(p[t][1] for _, p in timing.values()):.1f} s" for t in trees) + " |")
        out.append("| ... and the sessions' text embedded later (off the hook's path) | | " + " | ".join(
            f"{later[t]['cpu']:.1f} s ({later[t]['embedded']} texts)" if later.get(t) else "in the hook"
            for t in trees) + " |")
        out.append("")
        out.append("Each transcript whole, in one run with a 600 s budget (the hook's default is 20 s, "
                   "`SUBCOG_HOOK_BUDGET_SECS`: past it a capture saves its progress and the next run goes on); the first "
                   "file of each tree includes loading the model. CPU is this process's; the machine is shared, so "
                   "wall time depends on the load: compare the two trees in the same run.")
        out.append("")
    out.append(END)
    return "\n".join(out)


def write_section(section: str) -> None:
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    RESULTS.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", nargs="+", default=[BASELINE],
                    help="commits whose capture is measured beside this checkout (the first is the issue's)")
    ap.add_argument("--no-devmem", action="store_true", help="skip DevMemBench")
    ap.add_argument("--no-timing", action="store_true", help="skip the 3 MB+ timing run")
    ap.add_argument("--no-write", action="store_true", help="print the section, leave RESULTS.md alone")
    ap.add_argument("--projects", nargs="*", help="only these projects (gitsync, cli, repiq, devmembench)")
    ap.add_argument("--no-baseline", action="store_true", help="this checkout only (while developing)")
    ap.add_argument("--dump", type=Path, help="write each run's raw result (memories, searches, prompts) here")
    args = ap.parse_args(argv)
    try:   # every tree runs with this checkout's model files: without them the hooks store unembedded, unchecked text
        verify(REPO / "models")
    except ModelFilesError as e:
        print(f"{e} (run `make setup` in {REPO}); nothing measured", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="subcog-heldout-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "sessions").mkdir()
        sessions = load_sessions(tmp / "sessions")
        if not sessions:
            print("held-out sessions not found (see bench/capture/heldout.py); nothing measured", file=sys.stderr)
            return 0
        questions = load_questions()
        groups: dict[str, tuple[list, list, list]] = {}
        for project in sorted({s.project for s in sessions} & set(args.projects or [s.project for s in sessions])):
            ss = [s for s in sessions if s.project == project]
            groups[project] = (ss, [(s.name, s.path) for s in ss], [q for q in questions if q.project == project])
        if not args.no_devmem and (not args.projects or "devmembench" in args.projects):
            (tmp / "devmem").mkdir()
            dm = devmembench(tmp / "devmem")
            if dm is not None:
                groups["devmembench"] = ([], dm[0], dm[1])
        trees = {} if args.no_baseline else {b: baseline_tree(b, tmp) for b in args.baseline}
        trees["new"] = REPO
        try:
            rows: dict = {}
            real: dict = {t: Figures() for t in trees}
            for project, (ss, files, qs) in groups.items():
                rows[project] = {}
                for tree_name, tree in trees.items():
                    result = run_tree(tree, project, files, [q.text for q in qs], tmp / tree_name / project)
                    if args.dump:
                        args.dump.mkdir(parents=True, exist_ok=True)
                        (args.dump / f"{tree_name}-{project}.json").write_text(json.dumps(result), encoding="utf-8")
                    rows[project][tree_name] = evaluate(result, ss, qs)
                    if project != "devmembench":
                        real[tree_name].add(rows[project][tree_name])
                    print(f"{project} {tree_name}: {vars(rows[project][tree_name])}", file=sys.stderr)
            rows["**real**"] = real
            timing: dict = {}
            later: dict = {}
            train = REPO.parent / "shared" / "samples" / "real" / "train"
            if not args.no_timing and train.is_dir():
                files = [(n, train / n) for n in TIMING if (train / n).is_file()]
                for tree_name, tree in trees.items():
                    result = run_tree(tree, "timing", files, [], tmp / tree_name / "timing")
                    later[tree_name] = result.get("later")
                    for (n, p), c in zip(files, result["captures"]):
                        timing.setdefault(n, (p.stat().st_size, {}))[1][tree_name] = (c["wall"], c.get("cpu", 0.0))
        finally:
            for name, tree in trees.items():
                if name != "new":
                    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)])
    section = render(rows, list(trees), time.perf_counter() - t0, timing, ", ".join(args.baseline), later)
    if not (args.no_write or args.no_baseline or args.projects):
        write_section(section)
    print(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
