"""A prompt reduced to what it asks about: its content words, its identifiers.

A prompt wraps its subject in conversation ("can you look at why ... again", "what's the ...", "remind me how we
..."); the question words and the frame are no evidence for any memory, and as search terms they match memories
that happen to use them. `content_of(prompt)` drops the frame and keeps the words that carry the subject;
`terms(text)` are the words the text side searches (no stop words, no question or frame words); `identifiers`
are the tokens written as code (snake_case, camelCase, dotted, paths, flags, versions), matched as such. The
word lists were written from the issue's examples and the prompts of `bench/recall/dataset` (train).
"""
from __future__ import annotations

import re

from subcog_store.text.textsim import SEARCH_STOPWORDS

# Words that frame a question or a request rather than name its subject.
FRAME_WORDS = frozenset("""
what whats which who whom whose when where why how hows whats wheres whys
can could would should will shall do does did done is are was were am be been being have has had
please pls thanks thank hey hi hello ok okay so well just again still already really actually basically
look looking check checking tell telling explain explaining remind reminding know knowing remember recall
show find figure help wondering wonder mean means think thought guess want need like get got go going
let lets let's me my i we our us you your it its this that there here some any anything something thing things
quick quickly real remind again once more bit little kind sort way ways
""".split())
_FRAME = re.compile(r"^\s*(?:(?:hey|hi|ok|okay|so|and|also|quick question|one more thing)[,:!. ]+)*"
                    r"(?:(?:can|could|would|will) you (?:please )?(?:look (?:at|into)|check|tell me|explain|remind me"
                    r"|find out|figure out|help me (?:understand|with)?|show me)?\s*"
                    r"|(?:please )?(?:remind me|tell me|explain|do you (?:know|remember)|i (?:want|need) to know"
                    r"|i(?:'m| am) (?:wondering|not sure))\s*)?", re.IGNORECASE)
WORD = re.compile(r"[^\W_]+", re.UNICODE)   # FTS5's token: `_` and punctuation split a word
_IDENT = re.compile(r"(?<![\w./-])(?:[A-Za-z_][\w]*[._/:-][\w./:-]*\w|[a-z]+[A-Z]\w*|[A-Z]{2,}\w*\d\w*|[A-Za-z]+_\w+"
                    r"|--?[a-z][\w-]+|\w+\(\))", re.UNICODE)


def content_of(prompt: str) -> str:
    """The prompt without its conversational frame and question words, in its own order; "" when nothing is
    left (a greeting, a thank-you)."""
    text = _FRAME.sub("", prompt, count=1)
    words = [w for w in re.findall(r"\S+", text)
             if _plain(w) not in FRAME_WORDS and _plain(w) not in SEARCH_STOPWORDS
             or _IDENT.fullmatch(w.strip(".,;:?!"))]
    return " ".join(words).strip(" ,;:?!.")


def _plain(word: str) -> str:
    return re.sub(r"[^\w']", "", word.lower()).replace("'", "")


def terms(text: str) -> list[str]:
    """The words of `text` the text side searches: lower case, no stop words, no question or frame words, no
    single letters (FTS5's tokens: `_` and punctuation split a word)."""
    return [w for w in (m.lower() for m in WORD.findall(text))
            if len(w) > 1 and w not in SEARCH_STOPWORDS and w not in FRAME_WORDS]


def identifiers(text: str) -> list[str]:
    """Tokens written as code, lower case: IPFS_LOCAL_API_URL, customInstance, omp.zsh, /auth/login, --revoke,
    response.json()."""
    return list(dict.fromkeys(m.group(0).lower().rstrip(".,:;") for m in _IDENT.finditer(text)))
