"""Print every sentence unit of a transcript for labelling, and turn a labeller's short notes into label rows.

    python -m bench.capture.label_units dump SESSION.jsonl > units.txt
    python -m bench.capture.label_units rows SESSION.jsonl NOTES.txt > labels/NAME.jsonl

`dump` lists the units of the assistant text, what the user typed and the compaction summaries, in transcript
order, with the labelling prefilter (`split_units(lenient=True)`: a superset of what any capture prefilter keeps),
one line each: `#n kind record-line heading/lead | sentence`. `rows` reads notes of the form

    n  fact-id  namespace        a lasting fact (the same fact-id for every restatement of one fact)
    n  status                    transient state (status, progress, task ids): stale when stored
    n  corrected  [fact-id]      a belief the session later corrects (stale when stored; the fact it corrects)

(`n-m` for a range, `#` comments); every other unit is 0. Rows name the unit by record uuid and sentence hash
only (LABELING.md): no transcript text is written.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from subcog_store.extraction.sentences import split_units
from subcog_store.extraction.transcript import read_assistant_texts

__all__ = ["session_units", "parse_notes"]


def session_units(path: str | Path) -> list[tuple]:
    """(n, kind, text record, unit) for every unit of the transcript, numbered from 1 in transcript order."""
    out = []
    for t in read_assistant_texts(path, include_user=True).texts:
        if t.is_sidechain:
            continue
        for u in split_units(t.text, lenient=True):
            out.append((len(out) + 1, t.kind, t, u))
    return out


def dump(path: str) -> None:
    for n, kind, t, u in session_units(path):
        ctx = f"[{u.heading[:40]}]" if u.heading else ""
        if u.kind == "item" and u.lead:
            ctx += f" <{u.lead[:70]}>"
        print(f"#{n} {kind[0]}{t.line_no} {ctx} | {u.text}")


_NOTE = re.compile(r"^(\d+)(?:-(\d+))?\s+(\S+)(?:\s+(\S+))?")


def parse_notes(lines) -> dict[int, dict]:
    """Unit number -> its label fields, from a labeller's notes (see the module docstring)."""
    out: dict[int, dict] = {}
    for line in lines:
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not line:
            continue
        m = _NOTE.match(line)
        if not m:
            raise ValueError(f"cannot read note {line!r}")
        first, last, a, b = int(m.group(1)), int(m.group(2) or m.group(1)), m.group(3), m.group(4)
        for n in range(first, last + 1):
            if a == "status":
                out[n] = {"label": 0, "stale": "status"}
            elif a == "corrected":
                out[n] = {"label": 0, "stale": "corrected", **({"corrected_by": b} if b else {})}
            else:
                out[n] = {"label": 1, "fact": a, "namespace": b or "learnings"}
    return out


def rows(path: str, notes: str) -> None:
    labels = parse_notes(Path(notes).read_text(encoding="utf-8").splitlines())
    name = Path(path).name
    for n, kind, t, u in session_units(path):
        row = {"file": name, "source": kind, "uuid": t.uuid, "sentence_sha": u.sha, "index": u.index, "n": n}
        row.update(labels.get(n, {"label": 0}))
        print(json.dumps(row))


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "dump":
        dump(argv[1])
    elif len(argv) >= 3 and argv[0] == "rows":
        rows(argv[1], argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
