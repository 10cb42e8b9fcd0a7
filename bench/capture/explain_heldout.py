"""Why the held-out repeats and stale memories are there: the ones `bench_heldout` counts, grouped by cause.

    cd <checkout> && nice -n 10 .venv/bin/python -m bench.capture.bench_heldout --dump DIR ...
    SUBCOG_MIRROR_DIR=<mirror> nice -n 10 .venv/bin/python -m bench.capture.explain_heldout DIR TREE [--examples N]

TREE is the name a dump file starts with (`DIR/TREE-PROJECT.json`: the baseline commit or `new`). A memory is a
repeat or stale exactly as in `bench_heldout` (the same tracing). Each repeat is compared with the first memory of
its session that held its facts, whole and line by line (a list kept as one memory holds one fact a line), with
this checkout's session-repeat rule (`dedup/session_repeat.py`), and put in the first group that fits:

- `cross-language`: one side mostly CJK, the other not (MiniLM is English-only: such pairs sit near 0.1-0.3);
- `rule-whole`: the rule calls the two whole memories a repeat (the store's look-up did not meet them together);
- `rule-line`: the rule calls one line of one a repeat of a line of the other (a per-line comparison would);
- `declined`: the best cosine reaches the rule's floor (REPEAT_FLOOR) but the rule declines (a changed value, no
  shared subject, a shared lead-in);
- `below-floor`: the best cosine is under the floor: distinct statements the labels count as one finding.

Stale memories are grouped by their label (`status`, `corrected`). Prints counts per project and group, then up to
N examples per group (held-out text is printed, never written to the repository).
"""
from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from bench.capture.bench_heldout import labelled_units, traced
from bench.capture.heldout import load_sessions

GROUPS = ("cross-language", "rule-whole", "rule-line", "declined", "below-floor")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def mostly_cjk(text: str) -> bool:
    """More than a fifth of the non-space characters are CJK."""
    chars = [c for c in text if not c.isspace()]
    return bool(chars) and sum(bool(_CJK.match(c)) for c in chars) > len(chars) / 5


def lines(text: str) -> list[str]:
    """The lines of a memory, list markers removed; a lead-in line ("Lead:") is prefixed to each item."""
    parts = [ln.strip().removeprefix("- ").strip() for ln in text.splitlines() if ln.strip()]
    if len(parts) < 2:
        return parts or [text]
    lead = parts[0] if parts[0].endswith(":") else ""
    return [f"{lead} {p}".strip() for p in (parts[1:] if lead else parts)]


def cause(first: str, later: str, embed) -> tuple[str, float]:
    """The group of a repeat (see the module docstring) and the best cosine seen."""
    from subcog_store.dedup.session_repeat import REPEAT_FLOOR, is_session_repeat

    whole = float(embed([first])[0] @ embed([later])[0])
    la, lb = lines(first), lines(later)
    va, vb = embed(la), embed(lb)
    pairs = [(float(va[i] @ vb[j]), la[i], lb[j]) for i in range(len(la)) for j in range(len(lb))]
    best = max([whole] + [s for s, _, _ in pairs])
    if mostly_cjk(first) != mostly_cjk(later):
        return "cross-language", best
    if is_session_repeat(first, later, whole):
        return "rule-whole", best
    if any(is_session_repeat(a, b, s) for s, a, b in pairs if len(la) > 1 or len(lb) > 1):
        return "rule-line", best
    return ("declined" if best >= REPEAT_FLOOR else "below-floor"), best


def _walk(dump: Path, tree: str, sessions: dict, embed, counts: dict, shown: dict) -> None:
    """Count (and keep examples of) each project's repeats by cause and stale memories by kind."""
    for path in sorted(dump.glob(f"{tree}-*.json")):
        project = path.stem.removeprefix(f"{tree}-")
        by_session: dict[str, list[dict]] = defaultdict(list)
        for m in json.loads(path.read_text(encoding="utf-8"))["memories"]:
            by_session[m["session_id"]].append(m)
        for name, memories in by_session.items():
            if name not in sessions:
                continue
            units, seen = labelled_units(sessions[name]), {}
            for m in memories:
                held_units = traced(m["content"], units)
                held = {u.fact for u in held_units if u.label == 1}
                counts[project]["stored"] += 1
                if held and held <= set(seen):
                    first = seen[next(iter(sorted(held)))]["content"]
                    group, best = cause(first, m["content"], embed)
                    counts[project][group] += 1
                    shown[group].append(f"  {name} cos {best:.2f}\n    A: {first[:160]!r}\n"
                                        f"    B: {m['content'][:160]!r}")
                elif not held and m["status"] == "active" and not m.get("successor_id") \
                        and any(u.stale for u in held_units):
                    kind = next(u.stale for u in held_units if u.stale)
                    counts[project][f"stale-{kind}"] += 1
                    shown[f"stale-{kind}"].append(f"  {name}: {m['content'][:160]!r}")
                for fact in held:
                    seen.setdefault(fact, m)


def explain(dump: Path, tree: str, examples: int) -> str:
    from subcog_store.model.embedder import Embedder

    embedder = Embedder()
    embed = embedder.embed_batch
    counts: dict[str, Counter] = defaultdict(Counter)
    shown: dict[str, list[str]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:   # the sessions' files live there while they are read
        sessions = {s.name: s for s in load_sessions(Path(tmp))}
        if not sessions:
            raise SystemExit("no held-out session found: set SUBCOG_MIRROR_DIR or SUBCOG_HELDOUT_DIR "
                             "(bench/capture/heldout.py)")
        _walk(dump, tree, sessions, embed, counts, shown)
    keys = ["stored", *GROUPS, "stale-status", "stale-corrected"]
    total = Counter()
    out = ["project".ljust(10) + "".join(k.rjust(16) for k in keys)]
    for project, c in sorted(counts.items()):
        total.update(c)
        out.append(project.ljust(10) + "".join(str(c[k]).rjust(16) for k in keys))
    out.append("all".ljust(10) + "".join(str(total[k]).rjust(16) for k in keys))
    for group in [*GROUPS, "stale-status", "stale-corrected"]:
        if shown[group] and examples:
            out.append(f"\n{group}:")
            out.extend(shown[group][:examples])
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dump", type=Path, help="a folder written by bench_heldout --dump")
    ap.add_argument("tree", help="the tree whose memories to explain (a dump file's name before -PROJECT.json)")
    ap.add_argument("--examples", type=int, default=3, help="examples printed per group (0: counts only)")
    args = ap.parse_args(argv)
    if not any(args.dump.glob(f"{args.tree}-*.json")):
        ap.error(f"no {args.tree}-*.json in {args.dump}")
    print(explain(args.dump, args.tree, args.examples))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
