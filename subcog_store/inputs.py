"""What callers hand the store, validated once: a capture request becomes a `Prepared` capture, its secrets
replaced by [REDACTED] and its content hash computed here and carried through the check, the policies and the
write."""
# Lazy imports: the 133 secret patterns compile on the first capture, not when a command starts.
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable

from subcog_store.clock import iso
from subcog_store.config import MAX_CONTENT_BYTES, POLICIES
from subcog_store.errors import InvalidInput
from subcog_store.text.namespaces import canonical_domain, canonical_namespace
from subcog_store.text.normalize import content_hash

MAX_LABEL_CHARS = 200      # session ids, sources
MAX_TAGS = 50


@dataclass
class CaptureRequest:
    """One text to capture, as a caller gives it (the CLI, a JSONL line, a hook, the MCP server)."""

    content: object
    namespace: object
    domain: object = None
    importance: object = 0.5
    tags: object = None
    source: object = None
    session_id: object = None
    policy: object = None
    created_at: object = None
    project_wide: object = False   # a duplicate of an active memory in any namespace of the domain is a duplicate
    from_summary: object = False   # a compaction summary's line (a hook capture): it restates the session before it


@dataclass
class Prepared:
    """A validated capture: canonical scope, the content hash computed once, metadata ready to store."""

    content: str
    content_hash: str
    namespace: str
    domain: str
    importance: float
    tags: list[str]
    source: str | None
    session_id: str | None
    policy: str | None
    created_at: str | None               # ISO-8601 as stored, when the caller gave one
    redacted: int = 0                    # secrets replaced by [REDACTED] before anything was stored
    project_wide: bool = False           # checked against every namespace of its domain (hook captures)
    from_summary: bool = False           # a compaction summary's line: restates its session (dedup/session_repeat.py)

    def candidate(self) -> dict:
        """The text and metadata, as the decision log keeps them for an undo."""
        return {"content": self.content, "importance": self.importance, "tags": self.tags, "source": self.source,
                "session_id": self.session_id, "created_at": self.created_at}


def validate_content(content: object) -> str:
    """Return the content as str, or raise InvalidInput (empty, oversized, not UTF-8)."""
    if isinstance(content, (bytes, bytearray)):
        try:
            content = bytes(content).decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidInput(f"content is not valid UTF-8 (byte {e.start})") from None
    if not isinstance(content, str):
        raise InvalidInput("content must be text")
    if len(content) > MAX_CONTENT_BYTES:
        raise InvalidInput(f"content is over {MAX_CONTENT_BYTES} bytes (64 KiB)")
    try:
        size = len(content.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidInput("content is not valid UTF-8 (lone surrogate)") from None
    if not content.strip():
        raise InvalidInput("content is empty or only whitespace")
    if size > MAX_CONTENT_BYTES:
        raise InvalidInput(f"content is {size} bytes; the limit is {MAX_CONTENT_BYTES} bytes (64 KiB)")
    return content


def validate_label(name: str, value: object) -> str | None:
    """An optional short text (session id, source): valid UTF-8, at most MAX_LABEL_CHARS characters."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be text, not {type(value).__name__}")
    if len(value) > MAX_LABEL_CHARS:
        raise InvalidInput(f"{name} is longer than {MAX_LABEL_CHARS} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{name} is not valid UTF-8 (lone surrogate)") from None
    return value


def validate_domain(value: object) -> object:
    """The domain as given, refused when it is text SQLite cannot store (a lone surrogate) or has control
    characters (it is part of the URN); `canonical_domain` checks the rest."""
    if isinstance(value, str):
        validate_label("domain", value[:MAX_LABEL_CHARS])
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            raise InvalidInput("domain contains a control character")
    return value


def validate_tags(tags: object) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, (str, bytes)) or not isinstance(tags, (list, tuple, set, frozenset)):
        raise InvalidInput(f"tags must be a list of strings, not {type(tags).__name__}")
    if len(tags) > MAX_TAGS:
        raise InvalidInput(f"at most {MAX_TAGS} tags")
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not tag.strip():
            raise InvalidInput(f"invalid tag {tag!r}: tags are non-empty strings")
        tag = validate_label("a tag", tag.strip()) or ""
        if tag not in out:
            out.append(tag)
    return out


def validate_importance(importance: object) -> float:
    if isinstance(importance, bool):
        raise InvalidInput(f"importance {importance!r} is not a number")
    try:
        value = float(importance)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        raise InvalidInput(f"importance {str(importance)[:40]!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise InvalidInput(f"importance {value} is out of range (0 to 1)")
    return value


def validate_created_at(value: object) -> str | None:
    """An ISO-8601 time (`2026-11-20T09:05:00Z`, with or without fraction or offset), as the store writes it."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 40:
        raise InvalidInput(f"created_at must be an ISO-8601 time, not {str(value)[:40]!r}")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        raise InvalidInput(f"created_at {value!r} is not an ISO-8601 time") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    if not 1970 <= parsed.year <= 9999:
        raise InvalidInput(f"created_at {value!r} is out of range")
    return iso(parsed.timestamp())


def validate_policy(policy: object) -> str | None:
    if policy is not None and policy not in POLICIES:
        raise InvalidInput(f"unknown policy {str(policy)[:40]!r}: skip, verify, replace or merge")
    return policy  # type: ignore[return-value]


def prepare(request: CaptureRequest) -> Prepared:
    """Validate a request (raises InvalidInput naming the field)."""
    from subcog_store.text.redact import redact   # 133 patterns compiled on first use, not on every import

    content, redacted = redact(validate_content(request.content))
    if request.namespace is None:
        raise InvalidInput("a namespace is required")
    return Prepared(content, content_hash(content), canonical_namespace(request.namespace),  # type: ignore[arg-type]
                    canonical_domain(validate_domain(request.domain)),  # type: ignore[arg-type]
                    validate_importance(request.importance),  # type: ignore[arg-type]
                    validate_tags(request.tags), validate_label("source", request.source),
                    validate_label("session_id", request.session_id), validate_policy(request.policy),
                    validate_created_at(request.created_at), redacted, bool(request.project_wide),
                    bool(request.from_summary))


def prepare_all(requests: Iterable[CaptureRequest]) -> list[Prepared | InvalidInput]:
    """Each request validated on its own: a bad one becomes its error, the others go on."""
    out: list[Prepared | InvalidInput] = []
    for request in requests:
        try:
            out.append(prepare(request))
        except InvalidInput as e:
            out.append(e)
    return out
