"""From what texts name (`code.mentions`) to what they cite in a project (`db.citations.Citation`): only what the
project's tree bears out is kept.

- a path: the file it names (the path itself, else the one file ending with it; ambiguous or outside: nothing);
- a symbol: the cited files it appears in, else the files that define it (a def, class, module, constant), else
  the files it appears in when they are few (MAX_SYMBOL_FILES); a word found nowhere, or everywhere, is no
  citation;
- a value: the key's file when the text names the file (even if the value differs there now: the claim is about
  that file), else the files that set the key to the very value the text states (a value that differs already is
  too uncertain to pin to a file). A plain-word key ("timeout") only in a file the text names.

All texts of a batch share one search of the project (one `git grep`).
"""
from __future__ import annotations

import logging
import re
from typing import Iterable

from subcog_store.code import claims
from subcog_store.code.mentions import Mention, extract
from subcog_store.code.tree import Tree
from subcog_store.db.citations import Citation

log = logging.getLogger("subcog_store.code")
MAX_SYMBOL_FILES = 3        # a symbol found in more files than this, none defining it, is a common word
MAX_CITATIONS = 64          # per memory
MAX_SEARCH_WORDS = 1024     # words searched in the project at once
MAX_READS = 16              # cited files read per memory to place its symbols and values


class Index:
    """Where words occur in the project: word -> path -> its lines (from one search)."""

    def __init__(self, tree: Tree, words: Iterable[str]):
        wanted = sorted(set(words))[:MAX_SEARCH_WORDS]
        self.where: dict[str, dict[str, list[str]]] = {w: {} for w in wanted}
        if not wanted:
            return
        pattern = re.compile(r"(?<![\w])(" + "|".join(re.escape(w) for w in sorted(wanted, key=len, reverse=True))
                             + r")(?![\w?!])")
        for path, line in tree.grep(wanted):
            for word in set(pattern.findall(line)):
                self.where[word].setdefault(path, []).append(line)

    def files(self, word: str) -> dict[str, list[str]]:
        return self.where.get(word, {})


def resolve_many(texts: dict[str, str], tree: Tree) -> dict[str, list[Citation]]:
    """The citations of each text (key -> citations), resolved against `tree`."""
    mentions = {key: extract(text) for key, text in texts.items()}
    words = {m.name.rsplit(".", 1)[-1] for found in mentions.values() for m in found
             if m.kind in ("symbol", "value") and re.fullmatch(r"[\w]+[?!]?", m.name.rsplit(".", 1)[-1])}
    index = Index(tree, words) if words and tree.left() > 0 else Index(tree, [])
    files = {key: _files(found, tree) for key, found in mentions.items()}
    tree.prefetch([path for paths in files.values() for path in paths[:MAX_READS]])
    out = {}
    for key, found in mentions.items():
        cited = _resolve(found, files[key], tree, index)
        if len(cited) > MAX_CITATIONS:
            log.info("a memory names %d things in the code: %d kept", len(cited), MAX_CITATIONS)
            cited = cited[:MAX_CITATIONS]
        out[key] = cited
    return out


def resolve(text: str, tree: Tree) -> list[Citation]:
    return resolve_many({"": text}, tree)[""]


def _files(mentions: list[Mention], tree: Tree) -> list[str]:
    """The project files a text's paths name, in order."""
    files: list[str] = []
    for m in mentions:
        if m.kind == "path" and tree.left() > 0:
            files += [path for path in tree.locate(m.name) if path not in files]
    return files


def _resolve(mentions: list[Mention], files: list[str], tree: Tree, index: Index) -> list[Citation]:
    texts = {path: tree.read(path).text for path in files[:MAX_READS]}
    out = [Citation("file", path) for path in files]
    placed: dict[str, list[str]] = {}      # symbol -> the files it was cited in
    stems = {p.rsplit("/", 1)[-1].rsplit(".", 1)[0] for p in files}
    for m in mentions:
        if m.kind != "symbol" or m.name in stems:
            continue
        paths = _place_symbol(m, texts, placed, index)
        placed[m.name] = paths
        out += [Citation("symbol", path, m.name) for path in paths]
    for m in mentions:
        if m.kind == "value":
            out += [Citation("value", path, m.name, m.value) for path in _place_value(m, texts, index)]
    return list(dict.fromkeys(out))


def _place_symbol(m: Mention, texts: dict[str, str | None], placed: dict[str, list[str]], index: Index
                  ) -> list[str]:
    """The files a symbol is cited in (see the module docstring); a method is looked for in its owner's files."""
    in_cited = [p for p, text in texts.items() if text and claims.appears(text, m.name)]
    if in_cited:
        return in_cited[:MAX_SYMBOL_FILES]
    found = index.files(m.name)
    if m.owner and placed.get(m.owner):
        owned = [p for p in placed[m.owner] if p in found]
        if owned:
            return owned
    defining = [p for p, lines in found.items() if any(claims.defines(line, m.name) for line in lines)]
    if defining:
        return sorted(defining)[:MAX_SYMBOL_FILES]
    return sorted(found) if 0 < len(found) <= MAX_SYMBOL_FILES else []


def _place_value(m: Mention, texts: dict[str, str | None], index: Index) -> list[str]:
    """The files a key's stated value is cited in (see the module docstring)."""
    key = m.name.rsplit(".", 1)[-1]
    named = [p for p, text in texts.items() if text and claims.values_of(text, m.name)]
    if named:
        return named[:MAX_SYMBOL_FILES]
    if not m.ticked:
        return []
    same = []
    for path, lines in index.files(key).items():
        values = [v for line in lines for v in claims.values_of(line, m.name)]
        if any(claims.same_value(m.value or "", v) for v in values):
            same.append(path)
    return sorted(same)[:MAX_SYMBOL_FILES]
