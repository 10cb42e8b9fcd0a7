"""The user's words on TRAIN: how many of the users' labelled units are lasting facts, how many `user_fact` keeps,
and what candidate patterns would add (RESULTS.md, session 13).

    SUBCOG_MIRROR_DIR=<mirror> python -m bench.capture.train_user_words measure [--show]
    SUBCOG_MIRROR_DIR=<mirror> python -m bench.capture.train_user_words candidates [--show]
    SUBCOG_MIRROR_DIR=<mirror> python -m bench.capture.train_user_words learn [--write]

The labelled user units: the 18 training sessions' (`labels_user/`), the `train_more/` sessions' (their rows with
source `user`, read from the mirror as `train_stale` reads them) and the short sessions of `train_short/` when they
are there (their own labels). A unit is kept as `extract` keeps it: `user_fact` says a fact and the status rule does
not veto it. `--show` prints the texts (kept, misses, candidate hits) for reading; nothing is written.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from bench.capture import train_scorer as ts
from bench.capture.heldout import load_sessions
from bench.capture.label_units import session_units
from subcog_store.extraction.extract import load_scorer, load_user_scorer
from subcog_store.extraction.scorer import namespace_of, record_features
from subcog_store.extraction.sentences import Unit, split_units
from subcog_store.extraction.status import status_rule
from subcog_store.extraction import user_words as uw
from subcog_store.extraction.user_words import UserFact, document_title, user_fact

HERE = Path(__file__).resolve().parent
MORE, SHORT = HERE / "train_more", HERE / "train_short"
_I = re.IGNORECASE


@dataclass
class UserUnit:
    session: str
    unit: Unit
    label: int
    namespace: str
    record: str = ""  # the whole text of the user's record the unit comes from


def _rows(path: Path) -> dict:
    rows: dict = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else ():
        row = json.loads(line)
        if row.get("source", "user") == "user":
            rows[(row["uuid"], row["sentence_sha"])].append(row)
    return rows


def _labelled(name: str, transcript: Path, rows: dict) -> list[UserUnit]:
    out = []
    for _, kind, t, u in session_units(transcript):
        if kind == "user" and (pending := rows.get((t.uuid, u.sha))):
            row = pending.pop(0)
            out.append(UserUnit(name, u, row["label"], row.get("namespace", ""), t.text))
    return out


def user_units(cache: Path) -> list[UserUnit]:
    """Every labelled user unit of the training sessions that can be found."""
    out = []
    for transcript in sorted(ts.DATA.glob("*.jsonl")) if ts.DATA.is_dir() else ():
        out += _labelled(transcript.stem, transcript, _rows(HERE / "labels_user" / transcript.name))
    for s in load_sessions(cache, MORE):
        rows = {k: [r for r in v if r.get("source") == "user"] for k, v in s.labels.items()}
        out += _labelled(s.name, s.path, rows)
    if (SHORT / "sessions").is_dir():
        for transcript in sorted((SHORT / "sessions").glob("*.jsonl")):
            out += _labelled(transcript.stem, transcript, _rows(SHORT / "labels_user" / transcript.name))
    return out


def kept(u: UserUnit):
    fact = user_fact(u.unit, document_title(u.record))
    return fact if fact is not None and not status_rule(u.unit.text) else None


def shipped_form(text: str, heading: str = "") -> str:
    """Which of `user_fact`'s forms a sentence meets first (the order `user_fact` tries them), "" for none."""
    s = " ".join(text.split())
    if uw.is_cjk(s):
        return "japanese"
    if uw._ASKING.search(s):
        return ""
    for name, pattern in (("choice", uw._CHOICE), ("going-with", uw._GOING_WITH), ("prefer", uw._PREFER)):
        if pattern.match(s):
            return name
    if uw._PLAN_SECTION.search(heading):
        return "plan-section"
    if (m := uw._RULE.match(s)) and not (m.group("verb").lower() in ("use", "prefer")
                                         and uw._TASK_AFTER_RULE.match(m.group("rest"))):
        return "rule-" + m.group("verb").lower().replace("'", "").replace("do not", "dont")
    return "only" if uw._ONLY.match(s) else "declared" if uw._declared(s) else "learned"


def kept_by_capture(u: UserUnit):
    """What `extract` keeps of the unit: the rules' fact, else the learned judge's (the sentence as typed)."""
    if (fact := kept(u)) or status_rule(u.unit.text):
        return fact
    judge = load_user_scorer()
    f = _record_features(u.record)[u.unit.index]
    p = judge.probability(f)
    return UserFact(u.unit.text, namespace_of(f), uw.PROJECT) if p >= max(judge.threshold, load_scorer().threshold) \
        else None


def measure(units: list[UserUnit], show: bool) -> str:
    facts = sum(u.label for u in units)
    hits = [(u, f) for u in units if (f := kept_by_capture(u))]
    good = sum(u.label for u, _ in hits)
    lines = [f"user units {len(units)} in {len({u.session for u in units})} sessions, lasting facts {facts}; "
             f"kept {len(hits)}, of them facts {good} (precision {good / max(len(hits), 1):.2f}, "
             f"recall {good / max(facts, 1):.2f})",
             "kept by scope: " + str(Counter(f.scope for _, f in hits)),
             "kept by namespace: " + str(Counter(f.namespace for _, f in hits))]
    forms: dict[str, list[int]] = defaultdict(list)
    for u, _ in hits:
        forms[shipped_form(u.unit.text, u.unit.heading)].append(u.label)
    lines.append("kept by form (facts / kept): " + ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in sorted(forms.items())))
    if show:
        for u, f in hits:
            lines.append(f"KEPT {u.label} {f.scope} {f.namespace} {u.session}: {u.unit.text[:200]!r} -> {f.text[:200]!r}")
        for u in units:
            if u.label and not kept_by_capture(u):
                lines.append(f"MISS {u.namespace} {u.session}: {u.unit.text[:300]!r}")
    return "\n".join(lines)


# Candidate forms, written from the misses of `measure --show` read by form before any was counted (RESULTS.md,
# session 13); "document" is not a pattern: a user's message that is a pasted document (a markdown heading, or 12
# lines and more) judged unit by unit by the learned scorer at its threshold, as the assistant's text is.
_F = r"^(?:(?:ok(?:ay)?|so|yes|yeah|alright|right|well|actually|hmm+|also|plus|but|and|then)[,.!]*\s+)*"
CANDIDATES: dict[str, re.Pattern] = {
    # "(I think) we should / need to / must / would want to ...": a first-person plural obligation or intention
    "we-should": re.compile(_F + r"(?:i think (?:that )?|i feel (?:like )?|ideally,? |for now,? )*(?:we|i)(?:'d| would)?"
                            r" (?:should|need to|must|have to|want to|would want to|'d want to)\b", _I),
    # "I think it's better (not) to ...", "it's best to ...": a judged option
    "better-to": re.compile(r"\b(?:it'?s|it is|its) (?:better|best) (?:not )?to\b", _I),
    # "I use X", "we use X", "we deploy with X", "I sign in with X": how the developer's setup is, present tense
    "i-use": re.compile(_F + r"(?:i|we) (?:use|run|deploy|host|sign in with|work (?:on|in|with)|push)\b", _I),
    # "X is our repo", "the config is at ~/...": where things are
    "is-our-at": re.compile(r"\b(?:is|are) (?:our|at [~/.]|in [~/.])", _I),
    # "always" / "never" / "ever" anywhere in a sentence that is not a question
    "always-never": re.compile(r"^(?!.*\?\s*$).*\b(?:always|never|ever)\b", _I),
    # main's imperative "use X" form (dropped by this count: RESULTS.md, session 13), counted to see it again on new data
    "main-use": re.compile(r"^(?:(?:ok(?:ay)?|so|yes|yeah|yep|alright|right|good|great|fine|sure|hmm+|well|actually|then"
                           r"|and|but)[,.!]*\s+)*(?:please\s+)?use\s+(?!(?:" + uw._TASK_VERBS + r")\b)\S", _I),
    # -- second batch, written from the misses of train_short (landed 15:19) after its units were labelled, before
    #    any of these was counted; counted on every training session's user units --
    # "Stack: ...", "House rules: ...", "Two hard rules: ...", "Code style I care about: ...": a labelled list of choices
    "labelled-list": re.compile(_F + r"(?:[\w'-]+ ){0,3}(?:stack|rules?|conventions?|code style|style|policy|policies"
                                r"|requirements?)\b[^:?]{0,45}:\s+\S", _I),
    # "Invoice numbers should be like ...", "The UI has to be bilingual": a requirement stated of a thing, not a person
    "thing-must": re.compile(_F + r"(?!(?:i|we|you|it|this|that|there|can|could|would|should)\b)(?:[\w'./-]+ ){1,5}"
                             r"(?:should|must|has to|have to|needs? to)\b(?!.*\?\s*$)", _I),
    # "We'll deploy on Fly.io", "It'll be hosted on ...": where and how the project runs, future tense
    "we-will-run": re.compile(_F + r"(?:we|it)(?:'ll| will)(?: be)? (?:deploy|deployed|host|hosted|run|use|store|stored"
                              r"|target|ship|support)\b", _I),
    # "we're moving to / switching to / leaving / adding / dropping ...": a change of the project's setup
    "we-are-moving": re.compile(r"\bwe(?:'re| are) (?:moving|switching|migrating|leaving|dropping|adding)\b", _I),
    # "I want it in Go 1.22 ...", "I need X": a want that is not a request to the assistant ("I want you to ...")
    "i-want": re.compile(_F + r"(?:i|we) (?:want|need)\b(?! (?:you|to (?:know|understand|see|ask|check|create|make"
                         r"|do|get|try|be)\b))(?!.*\?\s*$)", _I),
    # "I've decided to drop Zustand", "we decided to ..."
    "decided": re.compile(r"\b(?:i|we)(?:'ve| have)? decided\b", _I),
    # "... from now on"
    "from-now-on": re.compile(r"\bfrom now on\b", _I),
    # "Let's build X, a ...", "I'm starting a new service called X", "New app: X": what the project is
    "project-is": re.compile(_F + r"(?:let'?s build|i'?m (?:starting|building)|new (?:app|service|project|tool)\b)", _I),
    # "Change the rounding from 15 to 6 minutes", "lower the threshold to 3.5 metres": a setting's new value
    "change-to-value": re.compile(_F + r"(?:change|set|lower|raise|increase|decrease|shorten|lengthen|bump|reduce)\b"
                                  r".*\bto \d", _I),
    # the same choices in French, Spanish, German ("vamos a usar", "on passe à", "je veux", "sollen")
    "romance-german": re.compile(r"\b(?:vamos a usar|usaremos|on passe à|on utilise|je veux|nous utilisons"
                                 r"|wir (?:nutzen|verwenden)|sollen|soll)\b", _I),
    # a line of a pasted plan under a heading that holds its reasons and choices
    "plan-context": re.compile(r"(?!)"),
    "document": re.compile(r"(?!)"),
}
_PLAN_HEADINGS = re.compile(r"\b(?:context|goal|design decisions?|decisions?|constraints?|edge cases)\b", _I)
_DOCUMENT = re.compile(r"^#{1,6}\s", re.M)


@lru_cache(maxsize=64)
def _probabilities(record: str) -> list[float]:
    """The learned scorer's P(lasting fact) of each unit of a user's record, read as the assistant's text is."""
    return [load_scorer().probability(f) for f in record_features(split_units(record, lenient=True))]


def _candidate_hit(name: str, u: UserUnit, scorer, threshold: float) -> bool:
    if name == "plan-context":
        return bool(u.unit.heading and _PLAN_HEADINGS.search(u.unit.heading))
    if name == "document":
        if not (_DOCUMENT.search(u.record) or len(u.record.strip().splitlines()) >= 12):
            return False
        return _probabilities(u.record)[u.unit.index] >= threshold
    return bool(CANDIDATES[name].search(" ".join(u.unit.text.split())))


def candidates(units: list[UserUnit], show: bool) -> str:
    lines = []
    scorer = load_scorer()
    threshold = scorer.threshold
    for name in CANDIDATES:
        hit = [u for u in units if _candidate_hit(name, u, scorer, threshold)]
        new = [u for u in hit if not kept(u) and not status_rule(u.unit.text)]   # the status rule vetoes as in extract
        f_all, f_new = sum(u.label for u in hit), sum(u.label for u in new)
        ok = len(new) >= 3 and (len(new) - f_new) * 5 <= len(new)
        lines.append(f"{name}: hits {len(hit)} (facts {f_all}); new keeps {len(new)} (facts {f_new}, not "
                     f"{len(new) - f_new}) -> {'PASSES' if ok else 'fails'}")
        if show:
            lines += [f"   {u.label} {u.session}: {u.unit.text[:200]!r}" for u in new]
    return "\n".join(lines)


USER_WEIGHTS = Path(__file__).resolve().parents[2] / "subcog_store" / "extraction" / "user_scorer_weights.json"


@lru_cache(maxsize=None)
def _record_features(record: str) -> list[dict]:
    return record_features(split_units(record, lenient=True))


def learn(units: list[UserUnit], write: bool) -> str:
    """A learned judge of the user's units beside the rules (RESULTS.md, session 13, criterion fixed before fitting):
    outer leave-one-project-out probabilities, the threshold whose new keeps are at least 3, at most one in five not
    a lasting fact, with the most new facts (ties: the higher); then fitted on every unit and, with `write`, shipped."""
    import numpy as np

    feats = [_record_features(u.record)[u.unit.index] for u in units]
    y = np.array([u.label for u in units], dtype=float)
    projects = [u.session.split("-")[0] for u in units]
    ruled = np.array([kept(u) is not None or bool(status_rule(u.unit.text)) for u in units])
    oof = np.zeros(len(units))
    for held in sorted(set(projects)):
        te = np.array([i for i, p in enumerate(projects) if p == held])
        tr = np.array([i for i, p in enumerate(projects) if p != held])
        oof[te] = ts.predict(ts.fit_fold(feats, y, projects, tr), feats, te)
    lines, best = [], None
    for t in ts.GRID:
        new = (oof >= t) & ~ruled
        n, f = int(new.sum()), int(y[new].sum())
        if n >= 3 and (n - f) * 5 <= n and (best is None or (f, t) > (best[1], best[0])):
            best = (t, f, n)
        if n:
            lines.append(f"t={t}: new keeps {n}, facts {f}, not {n - f}")
    if best is None:
        return "\n".join(lines + ["no threshold passes: not adopted"])
    lines.append(f"adopted at t={best[0]}: {best[2]} new keeps, {best[1]} facts (out of fold)")
    if write:
        fold = ts.fit_fold(feats, y, projects, np.arange(len(units)))
        weights = ts.export(fold, len(units), sorted(set(projects)))
        weights["threshold"] = best[0]
        weights["trained_on"].update(labels="bench/capture/labels_user, train_more/labels, train_short/labels_user",
                                     script="bench/capture/train_user_words.py learn")
        USER_WEIGHTS.write_text(json.dumps(weights, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        lines.append(f"written {USER_WEIGHTS.name}: {len(weights['weights'])} weights, words {fold.words}, "
                     f"lambda {fold.lam}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["measure", "candidates", "learn"])
    p.add_argument("--show", action="store_true")
    p.add_argument("--write", action="store_true", help="learn: write the weights file when adopted")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="subcog-user-words-") as tmp:
        units = user_units(Path(tmp))
        print(measure(units, a.show) if a.command == "measure" else candidates(units, a.show)
              if a.command == "candidates" else learn(units, a.write))
    return 0


if __name__ == "__main__":
    sys.exit(main())
