"""How the changed-fact guard reads a text: the compared form, word tokens (numbers and identifiers kept whole,
n't and contractions split, `key=value` as two words), tokens with phrase punctuation for the word-order rules, a
light stemmer, the words written like names, those written like code (and those of one text the other does not
write), and the verdict type the guard's checks return."""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from subcog_store.text.guard_words import NUMBER_WORDS, PUNCTUATION, STOPWORDS

__all__ = ["GuardVerdict", "SAME", "NUM", "compared_form", "split_token", "tokens", "order_tokens", "clause_tokens", "stem",
           "is_content", "names", "identifiers", "identifiers_apart", "clear_caches"]


@dataclass(frozen=True)
class GuardVerdict:
    changed: bool        # True: the texts state different facts; must NOT be treated as duplicates
    reason: str | None   # "number", "version", "unit", "date", "negation", "polarity", "participants", "order",
    #                      "substitution", "name"
    detail: str          # human words, e.g. "5 minutes vs 10 minutes"

    def __bool__(self) -> bool:
        return self.changed


SAME = GuardVerdict(False, None, "")

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "`": "'",
                         "\u2013": "-", "\u2014": " - ", "\u00a0": " "})
KEY_VALUE = re.compile(r"(?<=\w)=(?=\w)")   # "scope=session" is the two words of "session scope"
NUM = re.compile(r"^(?P<v>v)?(?P<n>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)*)(?P<u>[a-zµ%]+)?$")


_USA = re.compile(r"\b(?:U\.S\.A\.|U\.S\.|US|USA)(?![\w.])|\bU\.S(?=\W|$)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_TENS = re.compile(r"\b(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)[- ](one|two|three|four|five|six|seven|"
                   r"eight|nine)\b")
_ONES = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}


@lru_cache(maxsize=4096)
def compared_form(text: str) -> str:
    """Case-folded, NFKC, straight quotes, single spaces, 1,000 -> 1000, sixty-one -> 61: the compared form."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    text = _USA.sub("usa", text)
    text = " ".join(text.split()).casefold()
    text = _THOUSANDS.sub("", text)
    return _TENS.sub(lambda m: str(NUMBER_WORDS[m.group(1)] + _ONES[m.group(2)]), text)


@lru_cache(maxsize=16384)
def split_token(tok: str) -> tuple[str, ...]:
    """Split n't, possessives and hyphen/slash compounds that are not numbers or identifiers."""
    tok = tok.strip(".'-/+")
    if not tok:
        return ()
    if tok.endswith("n't"):
        stem = {"ca": "can", "wo": "will", "sha": "shall"}.get(tok[:-3], tok[:-3])
        return (stem, "n't") if stem else ("n't",)
    if tok.endswith("'s") or tok.endswith("s'"):
        tok = tok[:-2] if tok.endswith("'s") else tok[:-1]
    for cont, full in (("'re", "are"), ("'ve", "have"), ("'ll", "will"), ("'d", "would"), ("'m", "am")):
        if tok.endswith(cont):
            return (tok[:-len(cont)], full)
    if any(c.isdigit() for c in tok) or "_" in tok or "." in tok.rstrip("."):
        return (tok,)
    return tuple(p for p in (part.strip("'") for part in re.split(r"[-/]", tok)) if p)


@lru_cache(maxsize=4096)
def tokens(text: str) -> tuple[str, ...]:
    """Normalised word tokens; numbers keep their dots and commas, n't is its own token."""
    out: list[str] = []
    for raw in _raw(text):
        if raw not in PUNCTUATION and raw not in _SENTENCE_END:
            out.extend(split_token(raw))
    return tuple(out)


@lru_cache(maxsize=16384)
def stem(word: str) -> str:
    """A light suffix stripper: enough to match plurals and simple verb forms (dance/dancing, share/shares)."""
    if len(word) <= 3 or any(c.isdigit() for c in word):
        return word
    for suffix, repl, min_len in (("ies", "y", 4), ("ied", "y", 4), ("sses", "ss", 4), ("ness", "", 5),
                                  ("ing", "", 5), ("edly", "", 5), ("ed", "", 4), ("ly", "", 5),
                                  ("es", "", 5), ("s", "", 4)):
        if word.endswith(suffix) and len(word) - len(suffix) + len(repl) >= min_len - 1:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                continue
            word = word[: len(word) - len(suffix)] + repl
            break
    return word[:-1] if len(word) >= 5 and word.endswith("e") else word


# words (numbers and identifiers whole) and the punctuation that delimits phrases and sentences
# (a regular expression anchored at either end, "/^shared$/", is one word: it is code, not "shared")
_ORDER_TOKEN = re.compile(r"/\^[^\s/]*/|/[^\s/]*\$/|[$€£%]|[^\W_][\w.'/+#-]*[\w%]|[^\W_]|[,;:()\[\]]|[.!?](?=\s|$)",
                          re.UNICODE)
_SENTENCE_END = frozenset(".!?")


@lru_cache(maxsize=4096)
def _raw(text: str) -> tuple[str, ...]:
    """The words and punctuation of the compared form, as written: what tokens and clause_tokens read."""
    return tuple(_ORDER_TOKEN.findall(KEY_VALUE.sub(" ", compared_form(text))))


@lru_cache(maxsize=4096)
def order_tokens(text: str) -> tuple[str, ...]:
    """`tokens` plus the punctuation that delimits phrases; a hyphenated word stays one word (anthrax-laced)."""
    return tuple(t for t in clause_tokens(text) if t not in _SENTENCE_END)


@lru_cache(maxsize=4096)
def clause_tokens(text: str) -> tuple[str, ...]:
    """`order_tokens` with the ends of sentences (".", "!", "?" before a space or the end): where a negation's
    scope stops ("..., never raw dicts. Pattern for Rust.")."""
    out: list[str] = []
    for raw in _raw(text):
        if raw in PUNCTUATION or raw in _SENTENCE_END:
            out.append(raw)
        elif "-" in raw.strip("-") and not any(c.isdigit() for c in raw):
            out.append(raw.strip("-'"))
        else:
            out.extend(split_token(raw))
    return tuple(out)


def is_content(tok: str) -> bool:
    return tok not in STOPWORDS and tok not in PUNCTUATION


_NAME_WORD = re.compile(r"[^\W_][\w.'+#-]*|[.!?:\"(]", re.UNICODE)


@lru_cache(maxsize=4096)
def names(text: str) -> frozenset[str]:
    """Words written like names or identifiers (Capitalised inside a sentence, ALLCAPS, camelCase, with digits
    or underscores), normalised: another name in a slot is another fact, however close the model rates it."""
    out: set[str] = set()
    start = True
    for raw in _NAME_WORD.findall(unicodedata.normalize("NFKC", text)):
        if raw in '.!?:"(':
            start = True
            continue
        word = raw.strip(".'-")
        # a lower-case word of letters (most words) is no name: decided without the per-letter tests
        if word and not (word.isalpha() and word.islower()) and (
                any(c.isdigit() or c == "_" for c in word) or _CAMEL.search(word)
                or (len(word) > 1 and word.isupper()) or (word[0].isupper() and not start)):
            out.update(split_token(word.casefold()))
        start = False
    return frozenset(out)


_CAMEL = re.compile(r"[a-z][A-Z]")
_CODE = re.compile(r"\w[./:=]\w|_|\(\)|\w/$|^--?\w|[\^$\\|]")
_EDGES = "\"'`,;!?()[]{}*"
_ABBREVIATION = re.compile(r"(?:[a-z]\.)+[a-z]?|\w+'s?", re.IGNORECASE)   # "U.S.", "N.Y.", "Microsoft's"


_CALL_ARGS = re.compile(r"\([^()]*\)?$")   # "build(input)", "build()", a call cut short: "build(input"


@lru_cache(maxsize=4096)
def identifiers(text: str) -> frozenset[str]:
    """Words written like code, case-folded: with `_`, a dot, slash or colon inside (file, path, module, host),
    camelCase, ALLCAPS of three letters or more, letters with digits, a call `()`. Capitalised words, dotted
    abbreviations and possessives are prose, not identifiers (MRPC train: a name veto on them kept apart 68
    paraphrases for 9 changed coding facts, docs/guard.md)."""
    out: set[str] = set()
    for raw in text.split():
        if raw.isalpha() and raw.islower():
            continue   # a lower-case word of letters (most words): prose
        word = raw.strip(_EDGES).rstrip(".:")
        if len(word) > 1 and not (word.isalpha() and word.islower()) and not _ABBREVIATION.fullmatch(word) and (
                _CODE.search(word) or _CAMEL.search(word) or (word.isupper() and sum(map(str.isalpha, word)) > 2)
                or ("-" not in word and any(map(str.isdigit, word)) and any(map(str.isalpha, word)))):
            if not NUM.match(word.casefold()):
                out.add(word.casefold())
    return frozenset(out)


def _present(word: str, text: str) -> bool:
    """`word` (an identifier) is written in `text`: as a part of a word for long ones, as a word for short ones
    ("IP" is not in "pipeline")."""
    for folded in (compared_form(text), text.casefold()):
        if len(word) >= 4 and word in folded:
            return True
        if len(word) < 4 and re.search(rf"(?<!\w){re.escape(word)}s?(?!\w)", folded):
            return True
    return False


def identifiers_apart(older: str, newer: str, bare: bool = False) -> tuple[list[str], list[str]]:
    """The identifiers of each text that the other does not write; `bare`: a call's arguments left out
    ("build(input)" is written where "build()" is)."""
    def form(word: str) -> str:
        return _CALL_ARGS.sub("", word) if bare else word

    return ([w for w in sorted(identifiers(older)) if not _present(form(w), newer)],
            [w for w in sorted(identifiers(newer)) if not _present(form(w), older)])


def clear_caches() -> None:
    """Forget the per-text caches (a benchmark measures the cost of new texts; words recur, their caches stay)."""
    for fn in (compared_form, _raw, tokens, order_tokens, clause_tokens, names, identifiers):
        fn.cache_clear()
