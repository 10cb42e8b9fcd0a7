"""Batch clean-up runs (`dedup_runs`): one row a run, written when it starts (a killed run leaves a trace) and
finished with its figures. Writes run inside the caller's write transaction."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from subcog_store.db.sqlfiles import q

if TYPE_CHECKING:
    import apsw


def running(con: "apsw.Connection") -> int:
    """How many runs say they are running (alive, or killed: the run lock tells which)."""
    return con.execute(q("count_running_runs")).fetchone()[0]


def mark_interrupted(con: "apsw.Connection") -> int:
    """Runs still 'running' were killed or crashed: marked interrupted; returns how many."""
    con.execute(q("mark_stale_runs"))
    return con.changes()


def start(con: "apsw.Connection", started_at: str, memories_before: int) -> int:
    """A new run's row; returns its id."""
    return con.execute(q("start_run"), {"started_at": started_at, "memories_before": memories_before}).fetchone()[0]


def finish(con: "apsw.Connection", run_id: int, *, finished_at: str, status: str, memories_after: int, clusters: int,
           removed: int, removal_rate: float, duration_s: float, warnings: list[str]) -> None:
    con.execute(q("finish_run"), {
        "id": run_id, "finished_at": finished_at, "status": status, "memories_after": memories_after,
        "clusters": clusters, "removed": removed, "removal_rate": removal_rate, "duration_s": duration_s,
        "warnings": json.dumps(warnings)})
