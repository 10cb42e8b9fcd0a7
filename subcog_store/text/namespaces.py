"""The memory namespaces and the spellings accepted for them."""
from __future__ import annotations

from subcog_store.errors import InvalidInput

NAMESPACES: tuple[str, ...] = (
    "decisions", "patterns", "learnings", "context", "tech-debt", "blockers", "progress",
    "apis", "config", "security", "performance", "testing", "help", "prompts",
)
DEFAULT_DOMAIN = "project"


def canonical_namespace(name: str) -> str:
    """Case-insensitive; `-`, `_` and nothing between words are the same (`techdebt`, `tech_debt` → `tech-debt`)."""
    if not isinstance(name, str):
        raise InvalidInput(f"invalid namespace {name!r}: a namespace is text")
    key = name.strip().lower().replace("_", "").replace("-", "")
    for namespace in NAMESPACES:
        if namespace.replace("-", "") == key:
            return namespace
    raise InvalidInput(f"unknown namespace {name!r}; use one of: {', '.join(NAMESPACES)}")


def canonical_domain(domain: str | None) -> str:
    """A domain is any short non-empty label without '/' (it is part of the URN)."""
    if domain is not None and not isinstance(domain, str):
        raise InvalidInput(f"invalid domain {domain!r}: a domain is text")
    value = (domain or DEFAULT_DOMAIN).strip()
    if not value or "/" in value or len(value) > 100:
        raise InvalidInput(f"invalid domain {domain!r}: a non-empty label of at most 100 characters, no '/'")
    if any(ord(ch) < 32 or ord(ch) == 127 or 0xD800 <= ord(ch) <= 0xDFFF for ch in value):
        raise InvalidInput("invalid domain: it contains a control character or is not valid UTF-8")
    return value


def env_suffix(namespace: str) -> str:
    """The environment-variable suffix of a namespace: `tech-debt` → `TECH_DEBT`."""
    return namespace.upper().replace("-", "_")
