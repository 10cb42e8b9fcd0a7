"""What a memory's text names in code: file paths, symbols (functions, classes, modules, settings keys) and values
("`session_ttl` is 90"). Text only: nothing here looks at a project; `code.resolve` keeps the mentions the
project's tree confirms.

Generous on purpose (a word that is no symbol of the project is dropped when it is resolved), bounded on purpose
(a text naming a thousand files yields at most MAX_MENTIONS of each kind).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

MAX_MENTIONS = 64           # of each kind, per text
MAX_TEXT = 64 * 1024

# file extensions a path written in prose may end with (a span written as code may end with any)
EXTENSIONS = frozenset("""
py pyi js mjs cjs ts tsx jsx go rs rb ex exs eex heex erl hrl java kt kts scala c h cc cpp hpp cs php swift m mm
dart lua r jl hs ml clj cljs el vim sh bash zsh fish ps1 bat sql graphql proto tf hcl nix yaml yml json jsonc toml
ini cfg conf env properties xml html htm css scss sass less vue svelte md mdx rst txt csv lock gradle mk cmake
dockerfile ipynb
""".split())
_URL = re.compile(r"\b(?:https?|ftp|file|ssh|git)://\S+|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_TICKED = re.compile(r"`([^`\n]{1,200})`")
# a path: optional ./ ../ or /, directories, a file name with an extension (or a path with at least one slash)
_PATH = re.compile(r"(?<![\w@$%/.-])((?:\.{1,2}/|/|~/)?(?:[\w@+-][\w.@+-]*/)*[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,7}"
                   r"|(?:\.{1,2}/|/)?(?:[\w@+-][\w.@+-]*/)+[\w@+-][\w.@+-]*)(?::\d+(?::\d+)?)?(?![\w/])")
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*[?!]?"
_MODULE = re.compile(r"(?<![\w./-])([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*){2,})(?![\w/])")
# Foo.bar, Foo::bar, Foo#bar, foo/2 (arity), foo(), @foo
_QUALIFIED = re.compile(rf"^[@:$]?({_IDENT}(?:(?:\.|::|#){_IDENT})*)(?:/\d+|\(\s*[^()]*\))?$")
_CAMEL = re.compile(r"(?<![\w.])([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z][A-Za-z0-9]*)(?:(?:\.|::)"
                    rf"({_IDENT}))?(?![\w])")
_SNAKE = re.compile(r"(?<![\w.$-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w])")
_CALL = re.compile(rf"(?<![\w.])((?:{_IDENT}\.)*{_IDENT})\(\s*\)")
_VALUE = (r"(?P<value>`[^`\n]{1,80}`|\"[^\"\n]{1,80}\"|'[^'\n]{1,80}'"
          r"|-?\d[\d_,]*(?:\.\d+)?(?:\s?(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?"
          r"|kb|mb|gb|tb|kib|mib|gib|bytes?|%|x)\b)?"
          r"|v?\d+\.\d+(?:\.\d+)*|true|false|on|off|yes|no|null|none|nil)")
_KEY = rf"(?<![\w/.-])(?P<key>`[^`\n]{{1,80}}`|(?:{_IDENT}\.)*{_IDENT})"
_VERB = (r"(?:\s*(?:=|:=|:)\s*|\s+(?:is|was|are|=|equals|of|defaults? to|is set to|was set to|set to|is now|stays?"
         r"(?: at)?)\s+(?:now\s+|set\s+to\s+|still\s+|at\s+)?)")
_END = r"(?![\w]|\.\w)"
# a bare word is a value only where a sentence or clause ends, or "in <file>" follows: "`log_level` is info in ..."
_WORD_VALUE = r"(?P<word>[A-Za-z][\w-]{0,40})(?=[.,;:)]?\s*$|[.,;:)](?:\s|$)|\s+in\s+\S+[./]\w)"
_KEY_VALUE = re.compile(rf"{_KEY}(?:\s+(?:setting|option|key|value|variable|constant|field))?{_VERB}"
                        rf"(?:{_VALUE}{_END}|{_WORD_VALUE})", re.IGNORECASE | re.MULTILINE)
_SET_TO = re.compile(rf"\bset(?:s|ting)?\s+{_KEY}\s+to\s+(?:{_VALUE}{_END}|{_WORD_VALUE})",
                     re.IGNORECASE | re.MULTILINE)
_TRAILING = ".,;:!?)]}'\""
EXTENSIONLESS_FILES = frozenset("Makefile Dockerfile Gemfile Rakefile Procfile Justfile Vagrantfile Brewfile "
                                "Containerfile Jenkinsfile LICENSE README CODEOWNERS".split())
# words that say how a key is, not what it is set to: never a value
NOT_VALUES = frozenset("""
required optional important deprecated ignored unused used set unset missing wrong correct fine broken empty
mandatory needed respected honored honoured read written loaded cached overridden hardcoded configurable
global local private public new old same different there here it this that the a an not never always also
only still already just now too very slow confusing tricky documented undocumented supported unsupported
""".split())
# words that are never a project's symbol, however they are written
STOP_SYMBOLS = frozenset("""
true false null none nil self this super return yield async await import from class def function const let var
new delete if else elif then for while with try except catch finally raise throw pass break continue and or not
is in as of to at by on off yes no ok todo fixme note e.g i.e etc api url http https json yaml toml sql css html
id ids key keys value values name names type types data file files path paths test tests the a an
""".split())


@dataclass(frozen=True)
class Mention:
    """One thing a text names: a path, a symbol (`owner`: the symbol it was qualified by, e.g. the class of a
    method), or a value (`name` = the key, `value` = what the text says it is)."""

    kind: str                  # path | symbol | value
    name: str
    value: str | None = None
    owner: str | None = None
    ticked: bool = False       # written as code (`...`)


def _strip(token: str) -> str:
    return token.strip().rstrip(_TRAILING).lstrip("(['\"")


def _path_like(token: str, any_extension: bool = False) -> bool:
    """A token that may be a file path: a slash, or a name with a file extension (any, for a span written as
    code; else a known one: `e.g` and `v1.2` are no files)."""
    if "/" in token:
        return not token.startswith("//") and not re.fullmatch(r"[\d/.-]+", token)
    stem, dot, ext = token.rpartition(".")
    if not (dot and stem and ext) or re.fullmatch(r"v?[\d.]+", stem):
        return False
    return ext.lower() in EXTENSIONS or (any_extension and bool(re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,7}", ext)))


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "`'\"":
        return value[1:-1].strip()
    return value


def extract(text: str) -> list[Mention]:
    """Every path, symbol and key-value mention of `text`, in order of first appearance, at most
    MAX_MENTIONS of each kind."""
    text = _URL.sub(" ", (text or "")[:MAX_TEXT])
    found: dict[tuple[str, str], Mention] = {}
    counts = {"path": 0, "symbol": 0, "value": 0}

    def add(m: Mention) -> None:
        key = (m.kind, m.name if m.kind != "value" else f"{m.name}={m.value}")
        if key in found or counts[m.kind] >= MAX_MENTIONS:
            return
        if m.kind == "symbol" and (m.name.lower() in STOP_SYMBOLS or len(m.name) < 3):
            return
        counts[m.kind] += 1
        found[key] = m

    for pattern in (_KEY_VALUE, _SET_TO):
        for match in pattern.finditer(text):
            value = match.group("value") or match.group("word")
            if match.group("word") and (value.lower() in NOT_VALUES or not _code_like(match.group("key"))):
                continue   # a bare word is a value only of a key written as code: "debug is noisy" is not
            _add_value(add, match.group("key"), value)
    for match in _TICKED.finditer(text):
        _add_code(add, match.group(1))
    plain = _TICKED.sub(" ", text)
    for match in _PATH.finditer(plain):
        token = _strip(match.group(1))
        if _path_like(token):
            add(Mention("path", token))
    for match in _MODULE.finditer(plain):
        if not _path_like(match.group(1)):
            add(Mention("path", match.group(1).replace(".", "/")))   # a module: subcog_store.hook.capture
    for match in _CAMEL.finditer(plain):
        add(Mention("symbol", match.group(1)))
        if match.group(2):
            add(Mention("symbol", match.group(2).rstrip("?!"), owner=match.group(1)))
    for match in _CALL.finditer(plain):
        _add_symbol(add, match.group(1), ticked=False)
    for match in _SNAKE.finditer(plain):
        add(Mention("symbol", match.group(1)))
    return list(found.values())


def _add_value(add, raw_key: str, value: str) -> None:
    key = _unquote(raw_key).strip()
    if _path_like(key) or not re.fullmatch(rf"(?:{_IDENT}\.)*{_IDENT}", key) or key.lower() in STOP_SYMBOLS:
        return
    add(Mention("value", key, _unquote(value).rstrip(".,;"), ticked=_code_like(raw_key)))


def _code_like(raw_key: str) -> bool:
    """A key written as code: in backticks, or shaped like an identifier (snake_case, camelCase, CONSTANT)."""
    key = _unquote(raw_key).strip()
    return raw_key.startswith("`") or bool(re.search(r"[_.]|[a-z][A-Z]|^[A-Z0-9]{2,}$", key))


def _add_code(add, span: str) -> None:
    """A span written as code: a path, a qualified symbol, or an assignment."""
    token = span.strip()
    assign = re.fullmatch(rf"((?:{_IDENT}\.)*{_IDENT})\s*(?:=|:)\s*(.+)", token)
    if assign and not _path_like(token):
        _add_value(add, assign.group(1), assign.group(2))
        _add_symbol(add, assign.group(1), ticked=True)
        return
    bare = token.split(":")[0] if re.search(r":\d+(?::\d+)?$", token) else token
    qualified = _QUALIFIED.match(token)
    arity = bool(re.search(r"\w/\d+$", bare))          # `render/2`: a function and its arity, not a path
    if _path_like(bare, any_extension=True) and not arity and (
            not qualified or "/" in bare or bare.rsplit(".", 1)[-1].lower() in EXTENSIONS):
        add(Mention("path", _strip(bare), ticked=True))   # `app.yaml`, `lib/render.py:12`: a file, not a method
        return
    if qualified:
        _add_symbol(add, qualified.group(1), ticked=True)
        if token in EXTENSIONLESS_FILES:
            add(Mention("path", token, ticked=True))


def _add_symbol(add, dotted: str, ticked: bool) -> None:
    """`Foo.bar.baz`: a module path (when lower case and dotted), each part as a symbol, the last one owned by
    the one before it."""
    parts = [p.rstrip("?!") for p in re.split(r"\.|::|#", dotted) if p]
    if not parts:
        return
    if len(parts) > 1 and all(p.islower() or "_" in p for p in parts):
        add(Mention("path", "/".join(parts), ticked=ticked))   # a module: subcog_store.hook.capture
    owner = None
    for part in parts:
        add(Mention("symbol", part, owner=owner, ticked=ticked))
        owner = part
