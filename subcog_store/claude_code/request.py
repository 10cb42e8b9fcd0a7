"""One hook run, as an explicit request: the in-process path and the warm worker build the same object and hand it
to `entry.run`, so a run depends on nothing the process kept from an earlier one (no setting read from the
process's environment, no embedder mode, no budget passed through a variable)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from subcog_store.config import (SPECS, db_target, default_db_path, is_postgres, process_setting,
                                 process_setting_or_default)
from subcog_store.model import provider

CONNECT_SHARE = 0.5   # of a hook's budget, the most that opening a PostgreSQL connection may take
MIN_BUDGET_SECS = 0.1   # what a run is given when its start-up took the whole budget (it still answers)
# The client's timeout for the capture hooks (what `install-hooks` writes for PreCompact, PostCompact and SessionEnd;
# SUBCOG_HOOK_TIMEOUT_SECS when the user gave them another): a capture's minimum of work ends before it.
CAPTURE_TIMEOUT_SECS = float(SPECS["hook_timeout_secs"].default)   # type: ignore[arg-type]


@dataclass(frozen=True)
class HookRequest:
    event: str | None
    raw: bytes                                  # the hook input, as read from stdin
    environ: Mapping[str, str] = field(default_factory=dict)   # the caller's: every setting is read from it
    db: str | None = None                       # --db (else SUBCOG_DB of `environ`, else the default)
    dry_run: bool = False
    format: str = "default"
    budget_secs: float | None = None            # what is left of the hook's budget (None: SUBCOG_HOOK_BUDGET_SECS)
    embedders: str = provider.LOCAL             # where the model runs: this process, or the worker's warm one
    use_model: bool = False                     # the prompt hook may load the model (the warm worker)
    started: float | None = None                # time.monotonic() when the hook's process started (in process):
    #                                             its start-up and a worker that did not answer count in the budget

    @classmethod
    def of(cls, event: str | None, opts: dict, raw: bytes, environ: Mapping[str, str], db: str | None = None,
           **given) -> "HookRequest":
        """The request of a hook command's options (`entry._parse`) and input."""
        return cls(event, raw, dict(environ), opts.get("db") or db, bool(opts.get("dry_run")),
                   opts.get("format") or "default", **given)

    @property
    def db_path(self) -> Path | str:
        """The store this run opens. A PostgreSQL store's connection may take CONNECT_SHARE of the budget to open,
        or less where libpq finds a shorter connect_timeout (the string's, its service's, PGCONNECT_TIMEOUT of the
        request's environment; the default 10 s is for commands): a server that never answers cannot hold the
        hook past its budget, and the hook still has time to answer without the store."""
        target = db_target(self.db) if self.db else default_db_path(self.environ)
        if not is_postgres(target):
            return target
        from subcog_store.postgres.connection import within   # lazy: SQLite hooks never import psycopg

        return within(str(target), self.budget(lambda _why: None) * CONNECT_SHARE, self.environ)

    def budget(self, warn: Callable[[str], None] | None = None) -> float:
        """The seconds this run may take from now: the configured budget less what the process spent since
        `started`. Raises ConfigError naming a setting that does not parse, or, given `warn`, tells it why and
        takes the default."""
        left = self._configured(warn)
        if self.started is not None:
            left = max(left - (time.monotonic() - self.started), MIN_BUDGET_SECS)
        return left if self.budget_secs is None else min(left, self.budget_secs)

    def timeout_left(self) -> float:
        """What is left now of the client's timeout for a capture hook (SUBCOG_HOOK_TIMEOUT_SECS of the request's
        environment, default CAPTURE_TIMEOUT_SECS) less what this hook spent (in process: since `started`; through
        the worker: the part of its budget the caller used)."""
        timeout = float(process_setting_or_default("hook_timeout_secs", lambda _: None, self.environ))  # type: ignore[arg-type]
        if self.started is not None:
            spent = time.monotonic() - self.started
        elif self.budget_secs is not None:
            spent = max(self._configured(lambda _: None) - self.budget_secs, 0.0)
        else:
            spent = 0.0
        return timeout - spent

    def _configured(self, warn: Callable[[str], None] | None) -> float:
        setting = (process_setting_or_default("hook_budget_secs", warn, self.environ) if warn
                   else process_setting("hook_budget_secs", self.environ))
        return float(setting)   # type: ignore[arg-type]
