"""One hook run, as an explicit request: the in-process path and the warm worker build the same object and hand it
to `entry.run`, so a run depends on nothing the process kept from an earlier one (no setting read from the
process's environment, no embedder mode, no budget passed through a variable)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from subcog_store.config import db_target, default_db_path, is_postgres, process_setting, process_setting_or_default
from subcog_store.model import provider

CONNECT_SHARE = 0.5   # of a hook's budget, the most that opening a PostgreSQL connection may take


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

    @classmethod
    def of(cls, event: str | None, opts: dict, raw: bytes, environ: Mapping[str, str], db: str | None = None,
           **given) -> "HookRequest":
        """The request of a hook command's options (`entry._parse`) and input."""
        return cls(event, raw, dict(environ), opts.get("db") or db, bool(opts.get("dry_run")),
                   opts.get("format") or "default", **given)

    @property
    def db_path(self) -> Path | str:
        """The store this run opens. A PostgreSQL store's connection may take CONNECT_SHARE of the budget to open
        (libpq's connect_timeout; the default 10 s is for commands): a server that never answers cannot hold the
        hook past its budget, and the hook still has time to answer without the store."""
        target = db_target(self.db) if self.db else default_db_path(self.environ)
        if not is_postgres(target):
            return target
        from subcog_store.postgres.connection import within   # lazy: SQLite hooks never import psycopg

        return within(str(target), self.budget(lambda _why: None) * CONNECT_SHARE)

    def budget(self, warn: Callable[[str], None] | None = None) -> float:
        """The seconds this run may take: raises ConfigError naming a setting that does not parse, or, given
        `warn`, tells it why and takes the default."""
        setting = (process_setting_or_default("hook_budget_secs", warn, self.environ) if warn
                   else process_setting("hook_budget_secs", self.environ))
        configured = float(setting)   # type: ignore[arg-type]
        return configured if self.budget_secs is None else min(configured, self.budget_secs)
