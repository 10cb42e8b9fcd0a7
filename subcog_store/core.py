"""The handle every service works with: the open connection, the settings, the embeddings (embedder and vector
cache) and the clock. `Store` (the public facade) opens one and hands it down; no service sees the `Store`."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from subcog_store.clock import Clock, system_clock
from subcog_store.config import Settings
from subcog_store.db import settings as db_settings
from subcog_store.db.connection import connect, set_overrides
from subcog_store.model import provider
from subcog_store.model.embeddings import Embeddings

if TYPE_CHECKING:
    import apsw

    from subcog_store.model.embedder import Embedder


class Core:
    """An open subcog-store database and what checks and captures need with it."""

    def __init__(self, path: str | os.PathLike, *, embedder: "Embedder | None" = None,
                 embedders: str = provider.LOCAL, clock: Clock = system_clock,
                 environ: dict[str, str] | None = None, readonly: bool = False, fetch_model: bool = True,
                 deadline: float | None = None):
        """`deadline` (`time.monotonic()`, a hook's): a PostgreSQL store stops waiting for its server then
        (postgres/deadline.py); None: no limit (commands, the MCP server)."""
        self.path = str(path)
        self.readonly = readonly
        self.clock = clock
        self.environ = environ
        self.con: "apsw.Connection" = connect(self.path, readonly=readonly, deadline=deadline)
        try:
            self.settings = self.load_settings()
        except BaseException:
            self.con.close()
            raise
        self.vectors = Embeddings(lambda: self.settings, embedder=embedder, source=embedders,
                                  fetch_missing=fetch_model)

    def load_settings(self) -> Settings:
        """The settings as they are now: this environment's, else the database's, else the defaults (the pruning
        trigger sees this process's overrides)."""
        settings = Settings.load(db_settings.stored(self.con), self.environ)
        set_overrides(self.con, settings.overrides())
        return settings

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Core":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
