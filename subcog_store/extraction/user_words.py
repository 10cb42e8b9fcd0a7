"""The user's words as facts: a choice, a requirement or a preference the user states is a decision or a
preference, kept in words that stand alone.

What the user typed is mostly requests ("can you look at ...", "commit this") and questions; those are never
kept. A sentence is kept when it states a choice ("let's use X", "I want to use X", "we're going with X",
"let's stick to X"), a rule or preference ("always ...", "never ...", "don't ...", "avoid ...", "I prefer ...",
"X only") or, in Japanese, the same (〜にしよう, 〜を使う, 常に, 必ず, 〜しないで). It is rewritten to stand on its
own: "I want to use FastAPI with PostgreSQL" -> "The project uses FastAPI with PostgreSQL"; "always add type
hints" -> "Developer preference: always add type hints". A preference about how the developer works (no file,
path or identifier of this project in it) goes to the user scope, recalled in every project; a choice for the
project stays in the project.

Measured on the training sessions' labelled user units (bench/capture/RESULTS.md, session 13: `train_user_words.py`),
by a criterion fixed before counting, these forms were added: a line of a plan the user pasted ("Implement the
following plan: # Plan: ...") under its context, goal, decisions, constraints or edge-cases heading, stored with the
plan's title and the heading ("Plan-First Remediation Pipeline, Design Decisions (from user): Plan format: free-form
markdown."); a labelled list of choices ("Stack: ...", "House rules: ...", "Code style I care about: ..."); what the
project is ("Let's build ferrotrack, a ..." -> "The project: ferrotrack, a ..."); a setting's new value ("lower the
alert threshold to 3.5 metres" -> "Decision: lower ..."); a choice said in Spanish, French or German, kept as typed.
The imperative "use X" form was dropped by it (1 lasting fact among the 8 training units it kept: "Use your best
guess ...", a pasted document's "Use this when ..."). The other forms were written from the issue's examples.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from subcog_store.text.lazy_regex import LazyPattern

from .cjk import is_cjk
from .sentences import Unit

__all__ = ["UserFact", "user_fact", "document_title", "PROJECT", "USER"]

PROJECT, USER = "project", "user"
_I = re.IGNORECASE
_FILLER = r"(?:(?:ok(?:ay)?|so|yes|yeah|yep|alright|right|good|great|fine|sure|hmm+|well|actually|then|and|but)[,.!]*\s+)*"
_TASK_VERBS = (r"implement|fix|commit|push|pull|merge|rebase|revert|look|check|review|create|add|update|remove|delete"
               r"|write|make|help|show|explain|tell|try|test|run|build|deploy|open|close|move|rename|start|stop|do|go "
               r"back|continue|proceed|see|find|investigate|debug|refactor|clean|document|draft|prepare|file|post")
_CHOICE = LazyPattern(
    rf"^{_FILLER}(?:i (?:want|would like|'d like) to|let'?s|let us|we(?:'ll| will| should| are going to|'re going to)"
    rf"|i(?:'ll| will) (?:go with|use))\s+(?P<verb>use|keep|stick (?:to|with)|go with|switch to|adopt|move to"
    rf"|standardi[sz]e on|rely on|target|support|require|name|call)\s+(?P<rest>\S.*)$", _I)
_GOING_WITH = LazyPattern(rf"^{_FILLER}(?:we(?:'re| are) going with|(?:let'?s )?go with|we(?:'ll| will) go with"
                          rf"|we (?:chose|picked|decided on))\s+(?P<rest>\S.*)$", _I)
_PREFER = LazyPattern(rf"^{_FILLER}(?:i|we) (?:prefer|'d prefer|would prefer|'d rather|would rather|like to|always"
                      rf"|never)\s+(?P<rest>\S.*)$", _I)
_RULE = LazyPattern(rf"^{_FILLER}(?:please\s+)?(?P<verb>always|never|don'?t|do not|avoid|prefer)\s+(?P<rest>\S.*)$", _I)
_ONLY = LazyPattern(r"^(?P<rest>[\w@./+#-]+(?:\s+[\w@./+#-]+){0,3})\s+only[.!]?$", _I)  # "functional components only"
# Forms chosen on the training sessions' user units (RESULTS.md, session 13), each as it was counted there.
_LEAD_IN = r"^(?:(?:ok(?:ay)?|so|yes|yeah|alright|right|well|actually|hmm+|also|plus|but|and|then)[,.!]*\s+)*"
_LABELLED_LIST = LazyPattern(_LEAD_IN + r"(?:[\w'-]+ ){0,3}(?P<label>stack|rules?|conventions?|code style|style|policy"
                             r"|policies|requirements?)\b[^:?]{0,45}:\s+\S", _I)   # "Stack: ...", "House rules: ..."
_PROJECT_IS = LazyPattern(_LEAD_IN + r"(?P<lead>let'?s build|i'?m (?:starting|building)|new (?:app|service|project"
                          r"|tool)\b)\s*:?\s*(?P<rest>\S.*)$", _I)      # "Let's build X, a ...", "New app: X, ..."
_CHANGE_TO_VALUE = LazyPattern(_LEAD_IN + r"(?:change|set|lower|raise|increase|decrease|shorten|lengthen|bump|reduce)"
                               r"\b.*\bto \d", _I)                     # "lower the wave alert threshold to 3.5 metres"
_OTHER_LANGUAGE = LazyPattern(r"\b(?:vamos a usar|usaremos|on passe à|on utilise|je veux|nous utilisons"
                              r"|wir (?:nutzen|verwenden)|sollen|soll)\b", _I)   # Spanish, French, German choices
_PLAN_SECTION = LazyPattern(r"\b(?:context|goal|design decisions?|decisions?|constraints?|edge cases)\b", _I)
_TITLE = LazyPattern(r"^#\s+(?:plan:\s*)?(?P<title>\S.*?)\s*#*\s*$", _I | re.M)
_TASK_AFTER_RULE = LazyPattern(rf"^(?:{_TASK_VERBS})\b", _I)
_ASKING = LazyPattern(r"\?\s*$|^(?:can|could|would|will|should|shall|do|does|did|is|are|was|were|what|why|how|where"
                      r"|when|which|who|any idea)\b", _I)
_PROJECT_THING = LazyPattern(r"[\w-]+\.(?:go|py|ts|tsx|js|jsx|rs|md|json|ya?ml|toml|sh|sql|rb)\b|(?:[\w.-]+/)+[\w.-]+"
                             r"|\b[a-z]+[A-Z]\w*\b|\b\w+_\w+\b|`")
# Japanese: a decision (〜にしよう, 〜にする, 〜でいこう, 〜を使う/使おう, 〜で進めて), a rule (常に, 必ず, 〜しないで, 禁止).
_JA_CHOICE = LazyPattern(r"(?:にしよう|にしたい|にする|でいこう|でいく|を使う|を使おう|を使いたい|で進めて|を採用|に統一|にして"
                         r"(?:ください|ほしい)?)[。!！]?$")
_JA_RULE = LazyPattern(r"常に|必ず|しないで|禁止|してはいけない|しないように")
_JA_ASK = LazyPattern(r"[？?]$|(?:ですか|ますか|かな|だっけ|でしょうか)[？?。]?$|(?:して|て)(?:ください|くれる|ほしい)[？?。]?$")


@dataclass(frozen=True)
class UserFact:
    """A sentence of the user's, rewritten to stand alone."""

    text: str
    namespace: str  # decisions (a choice) or patterns (a rule, a preference)
    scope: str      # PROJECT or USER


_THIRD_PERSON = {"use": "uses", "keep": "keeps", "stick to": "sticks to", "stick with": "sticks with",
                 "go with": "goes with", "switch to": "switches to", "adopt": "adopts", "move to": "moves to",
                 "standardize on": "standardizes on", "standardise on": "standardises on", "rely on": "relies on",
                 "target": "targets", "support": "supports", "require": "requires", "name": "names", "call": "calls"}


def _fragment_after(unit: Unit) -> str:
    """A short verbless fragment right after the sentence in its paragraph ("... in Docker. Python 3.12."): part of
    the same choice, appended (", Python 3.12")."""
    at = unit.context.find(unit.text)
    rest = unit.context[at + len(unit.text):].strip() if at >= 0 else ""
    fragment = re.split(r"(?<=[.!?。])\s+", rest, maxsplit=1)[0].rstrip(".!。 ") if rest else ""
    if not 2 <= len(fragment) <= 30 or len(fragment.split()) > 4 or _ASKING.search(fragment):
        return ""
    return ", " + fragment


def _clean(rest: str) -> str:
    return rest.strip().rstrip(".!").strip()


def _scope(sentence: str) -> str:
    """A preference that names nothing of this project (a file, a path, an identifier) follows the developer."""
    return PROJECT if _PROJECT_THING.search(sentence) else USER


def document_title(text: str) -> str:
    """The title of a document the user pasted (its first "# " heading, without a "Plan:" prefix), "" for none."""
    m = _TITLE.search(text)
    return m.group("title") if m else ""


def user_fact(unit: Unit, title: str = "") -> UserFact | None:
    """The fact a sentence the user typed states (see the module docstring), or None (a request, a question,
    an answer, chatter). `title`: the title of the document the sentence is in (`document_title`), if any."""
    s = " ".join(unit.text.split())
    if is_cjk(s):
        return _japanese(s)
    if _ASKING.search(s):
        return None
    if unit.heading and _PLAN_SECTION.search(unit.heading):
        where = f"{title}, {unit.heading}" if title else unit.heading
        return UserFact(f"{where}: {_clean(s)}.", "decisions", PROJECT)
    if m := _CHOICE.match(s):
        verb = _THIRD_PERSON.get(" ".join(m.group("verb").lower().split()), m.group("verb").lower())
        rest = _clean(m.group("rest")) + _fragment_after(unit)
        return UserFact(f"The project {verb} {rest}.", "decisions", PROJECT)
    if m := _GOING_WITH.match(s):
        return UserFact(f"Decision: go with {_clean(m.group('rest'))}.", "decisions", PROJECT)
    if m := _PREFER.match(s):
        if re.match(rf"^{_FILLER}(?:i|we) (?:prefer|'d prefer|would prefer)\s", s, _I):
            return UserFact(f"The developer prefers {_clean(m.group('rest'))}.", "patterns", _scope(s))
        return UserFact(f"Developer preference: {_lower_first(s)}", "patterns", _scope(s))
    if (m := _RULE.match(s)) and not (m.group("verb").lower() == "prefer" and _TASK_AFTER_RULE.match(m.group("rest"))):
        return UserFact(f"Developer preference: {_lower_first(s)}", "patterns", _scope(s))
    if m := _ONLY.match(s):
        return UserFact(f"Developer preference: {_clean(m.group('rest'))} only.", "patterns", _scope(s))
    return _declared(s)


def _declared(s: str) -> UserFact | None:
    """The forms the training sessions' user units chose: a labelled list of choices ("Stack: ...", "House rules:
    ...": a rule list is a pattern, a style the developer cares about follows the developer), what the project is, a
    setting's new value, a choice said in Spanish, French or German."""
    if m := _LABELLED_LIST.match(s):
        label = m.group("label").lower()
        rule = not label.startswith(("stack", "requirement"))
        scope = _scope(s) if "style" in label else PROJECT
        return UserFact(_sentence(re.sub(_LEAD_IN, "", s, flags=_I)), "patterns" if rule else "decisions", scope)
    if m := _PROJECT_IS.match(s):
        return UserFact(f"The project: {_clean(m.group('rest'))}.", "context", PROJECT)
    if _CHANGE_TO_VALUE.match(s):
        return UserFact(f"Decision: {_lower_first(re.sub(_LEAD_IN, '', s, flags=_I))}", "decisions", PROJECT)
    if _OTHER_LANGUAGE.search(s):
        return UserFact(_sentence(s), "decisions", PROJECT)
    return None


def _sentence(s: str) -> str:
    s = s.strip()
    return s[:1].upper() + s[1:] + ("" if s.endswith((".", "!")) else ".")


def _lower_first(s: str) -> str:
    s = s.strip()
    s = re.sub(rf"^{_FILLER}", "", s, flags=_I)
    s = s[:1].lower() + s[1:] if s[:2] != s[:2].upper() else s
    return s if s.endswith((".", "!", "。")) else s + "."


def _japanese(s: str) -> UserFact | None:
    if _JA_ASK.search(s):
        return None
    if _JA_RULE.search(s):
        return UserFact(f"開発者の方針: {s}", "patterns", _scope(s))
    if _JA_CHOICE.search(s):
        return UserFact(f"決定（ユーザー）: {s}", "decisions", PROJECT)
    return None
