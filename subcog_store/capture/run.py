"""What a session's capture works with: where it reads (`Source`), the hook's settings (`HookOptions`), and what
one run did (`Run`, whose `report()` is stored in `hook_runs` and shown by the hooks)."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from subcog_store.capture import pending as hook_pending
from subcog_store.config import SPECS, hook_log_path, process_setting
from subcog_store.model import provider
from subcog_store.scope import domain_for
from subcog_store.worker.protocol import TIMEOUT_MARGIN_SECS   # the minimum of work ends this long before the timeout

log = logging.getLogger("subcog_store.hook.capture")
STORE_MARGIN_SECS = 2.0     # a hook's run stops waiting for a silent PostgreSQL server this long before the
#                             client's timeout (its report and its exit; the minimum of work stopped before)


@dataclass(frozen=True)
class Source:
    """Where a capture reads: the session's transcript (or, post-compact, its summary), as the hook input named
    it. This is also what a pending record keeps (never content)."""

    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    trigger: str | None = None
    hook_event_name: str | None = None

    def pending(self) -> dict:
        """The pending record's fields (the hook input's, so an older record reads the same)."""
        return {k: getattr(self, k) for k in hook_pending.KEYS if isinstance(getattr(self, k), str)}

    @classmethod
    def from_pending(cls, record: dict) -> "Source":
        return cls(**{k: record[k] for k in hook_pending.KEYS if isinstance(record.get(k), str)})

    def domain(self, environ: Mapping[str, str] | None = None) -> str:
        """The project domain of `cwd` (SUBCOG_HOOK_DOMAIN of `environ` overrides; see `scope`)."""
        return domain_for(self.cwd, environ)


@dataclass
class HookOptions:
    db: Path
    dry_run: bool = False
    budget_secs: float = float(SPECS["hook_budget_secs"].default)   # type: ignore[arg-type]
    include_sidechain: bool = False
    min_confidence: float | None = None     # the scorer's probability floor (None: the trained threshold)
    domain: str = "project"
    domain_override: str | None = None      # this domain whatever the source's cwd (import-history: a folder gone)
    event: str = "pre-compact"
    on_recorded: Callable[[], None] | None = None   # the warm worker: record the run as pending, then call this
    log: str | None = None                  # the hook log's path, named in the report (None: the configured one)
    environ: Mapping[str, str] | None = None   # where every setting is read (None: this process's environment)
    embedders: str = provider.LOCAL          # where the model runs (model.provider)
    clock: Callable[[], float] = time.monotonic   # the budget's clock (a test's fake one: no timing races)
    timeout_secs: float | None = None       # what is left of the client's timeout when the run starts: the
    #                                         minimum of work stops before it (None: the minimum whatever the time)
    cwd: str | None = None                  # the session's directory: what new memories cite is found there
    store_deadline: float | None = None     # a hook's: when a PostgreSQL store stops waiting for its server
    #                                         (time.monotonic(); `waits_until`); None: no limit (commands)
    embed_chunk: int | None = None          # texts embedded at once (None: dedup.in_batch's; the worker's turns
    #                                         fewer, so they give way sooner)

    @classmethod
    def from_env(cls, db: Path, dry_run: bool = False, event: str = "pre-compact",
                 environ: Mapping[str, str] | None = None, budget_secs: float | None = None,
                 embedders: str = provider.LOCAL) -> "HookOptions":
        """The hook's settings from `environ` (raises ConfigError naming a variable that does not parse);
        `budget_secs`: what is left of the budget (default SUBCOG_HOOK_BUDGET_SECS)."""
        process_setting("hook_domain", environ)   # checked now: a bad value is named before anything is read
        budget = float(process_setting("hook_budget_secs", environ)) if budget_secs is None else budget_secs
        return cls(db=db, dry_run=dry_run, budget_secs=budget,
                   include_sidechain=bool(process_setting("hook_include_sidechain", environ)),
                   min_confidence=process_setting("hook_min_confidence", environ),   # type: ignore[arg-type]
                   event=event, environ=environ, embedders=embedders)

    def minimum_limit(self, started: float) -> float | None:
        """When a run's minimum of work stops (on `clock`): TIMEOUT_MARGIN_SECS before the client's timeout, the
        margin for the capture under way, the save and the exit (None: no timeout known)."""
        return None if self.timeout_secs is None else started + self.timeout_secs - TIMEOUT_MARGIN_SECS

    def waits_until(self, now: float) -> float:
        """When a hook's run stops waiting for its store's server (from `now`, on time.monotonic()): the end of its
        budget or, when later, STORE_MARGIN_SECS before the client's timeout, past its minimum of work and the
        save (`minimum_limit`): a silent server never holds the hook until the client kills it."""
        if self.timeout_secs is None:
            return now + self.budget_secs
        return now + max(self.budget_secs, self.timeout_secs - STORE_MARGIN_SECS)

    @property
    def log_path(self) -> str:
        return self.log or str(hook_log_path(self.environ, fallback=True))

    @property
    def tags(self) -> list[str]:
        return ["auto-captured", "compact-summary" if self.event == "post-compact" else self.event]


STOPS = {   # a run stopped at one of its limits, as the user reads it; the next run goes on (partial, not failed)
    "budget": "time budget used up; the rest is captured next time",
    "size": "read as much of the transcript as one run reads; the rest is read next time",   # MAX_READ_BYTES
}


@dataclass
class Run:
    """What one pre-compact run did; `report()` is what is stored and shown."""

    session_id: str | None = None
    transcript_path: str | None = None
    trigger: str | None = None
    dry_run: bool = False
    captured: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    redacted: int = 0
    records: int = 0
    bad_lines: int = 0
    truncated: bool = False
    first_run: bool = False      # nothing of this transcript was read before
    log: str = ""
    started_at: float = field(default_factory=time.time)
    stored: list[str] = field(default_factory=list)     # ids of the memories this run stored

    def fail(self, summary: str, error: BaseException | str) -> None:
        """Record an error (the same one once: a run can meet its budget in more than one step)."""
        detail = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else error
        if {"summary": summary, "detail": detail[:500]} in self.errors:
            return
        self.errors.append({"summary": summary, "detail": detail[:500]})
        log.warning("capture: %s: %s", summary, detail[:500])

    def stop_at(self, limit: str) -> None:
        """The run stopped at `limit` ("budget" or "size"): said once (see STOPS), the rest left to the next run."""
        self.truncated = True
        self.fail(STOPS[limit], limit)

    def report(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "dry_run": self.dry_run, "captured": self.captured,
                "skipped": self.skipped, "redacted": self.redacted, "errors": self.errors, "records": self.records,
                "bad_lines": self.bad_lines, "truncated": self.truncated, "log": self.log, "first_run": self.first_run}

    @property
    def status(self) -> str:
        if self.dry_run:
            return "dry_run"
        failed = [e for e in self.errors if e["detail"] not in STOPS]   # a stop at a limit is no failure
        return "failed" if failed and not self.captured else ("partial" if self.errors or self.truncated else "ok")


def new_run(options: HookOptions, trigger: str | None = None) -> Run:
    """The run a capture hook reports, before anything is read."""
    return Run(dry_run=options.dry_run, log=options.log_path, trigger=trigger)
