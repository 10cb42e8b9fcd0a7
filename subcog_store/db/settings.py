"""The database's own settings (`settings`: key, value): what the environment does not override."""
from __future__ import annotations

from typing import TYPE_CHECKING

from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    import apsw


def stored(con: "apsw.Connection") -> dict[str, str]:
    """Every stored setting, by key."""
    return dict(con.execute(q("select_settings")).fetchall())


def get(con: "apsw.Connection", key: str) -> str | None:
    row = con.execute(q("get_setting"), {"key": key}).fetchone()
    return row[0] if row else None


def put(con: "apsw.Connection", key: str, value: str, now: str) -> None:
    """Set a setting (in the caller's write transaction)."""
    con.execute(q("upsert_setting"), {"key": key, "value": value, "now": now})
