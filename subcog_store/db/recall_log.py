"""What the hooks and tools handed the model (`recall_log`) and when each session was compacted
(`session_compactions`): a memory is given once a session, a session shares one token budget, and what a session
captured becomes recallable in it once it is compacted. The writes are `deferred.Write`s: written in the caller's
transaction (`deferred.write_now`), or after a hook's answer, deferred while the store is locked."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from subcog_store.db.deferred import Write, spooled
from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    import apsw


def entry(*, recalled_at: str, session_id: str | None, hook: str, domain: str, query_fingerprint: str | None,
          method: str | None, memory_ids: list[str], scores: list[float], tokens: int, reason: str | None,
          duration_ms: float) -> Write:
    """One hook call or tool search and what it gave: the row to write now (`deferred.write_now`) or after the
    answer (`deferred.write_or_defer`)."""
    return Write("log_recall", {
        "recalled_at": recalled_at, "session_id": session_id, "hook": hook, "domain": domain,
        "query_fingerprint": query_fingerprint, "method": method, "memory_ids": json.dumps(memory_ids),
        "scores": json.dumps(scores), "tokens": tokens, "reason": reason, "duration_ms": duration_ms})


def compaction(session_id: str, compacted_at: str) -> Write:
    """The session was compacted at `compacted_at`: the row to write (as `entry`)."""
    return Write("record_compaction", {"session_id": session_id, "compacted_at": compacted_at})


@dataclass
class Given:
    """What a session was given so far and when it was last compacted (ISO, or None)."""

    injected: set[str]
    tokens: int
    compacted_at: str | None


def given(con: "apsw.Connection", db: str | os.PathLike, session_id: str, pending: Iterable[Write] = ()) -> Given:
    """The session's rows, plus its bookkeeping not written yet: spooled beside the database `db` while the store
    was locked, and `pending` (the caller's own, written after its answer)."""
    found = Given(injected(con, session_id), tokens_used(con, session_id), last_compaction(con, session_id))
    for w in [*spooled(db, session_id), *pending]:
        if w.name == "log_recall":
            found.injected.update(json.loads(w.params["memory_ids"]))
            found.tokens += int(w.params["tokens"])
        elif w.name == "record_compaction":
            found.compacted_at = max(found.compacted_at or "", w.params["compacted_at"])
    return found


def injected(con: "apsw.Connection", session_id: str) -> set[str]:
    """The memories already handed to the model in a session."""
    return {r[0] for r in con.execute(q("injected_in_session"), {"session_id": session_id})}


def tokens_used(con: "apsw.Connection", session_id: str) -> int:
    """Tokens injected so far in a session."""
    return con.execute(q("tokens_in_session"), {"session_id": session_id}).fetchone()[0]


def last_compaction(con: "apsw.Connection", session_id: str) -> str | None:
    """When the session was last compacted (ISO), or None."""
    return con.execute(q("last_compaction"), {"session_id": session_id}).fetchone()[0]
