"""`ui`: the local page to see and fix what is stored (see `ui.app`)."""
# Lazy imports: each command imports what it runs (every command is registered at start-up).
from __future__ import annotations

import argparse

from subcog_store.cli.app import db_path


def register(sub, add) -> None:
    p = add("ui", "serve a local page (127.0.0.1 only, a token in the printed link) to browse memories by project "
                  "and namespace, search as the hooks do, follow a memory's history, review the decision log "
                  "(confirm, reverse, forget) and see what each session captured and was given", cmd_ui)
    p.add_argument("--port", type=int, default=0, help="the port (default: a free one)")


def cmd_ui(args: argparse.Namespace) -> int:
    from subcog_store.errors import InvalidInput
    from subcog_store.ui.app import serve

    if not 0 <= args.port <= 65535:
        raise InvalidInput(f"port {args.port} is out of range (0 to 65535)")
    try:
        serve(db_path(args), args.port, say=lambda text: print(text, flush=True))
    except OSError as e:
        raise InvalidInput(f"cannot listen on 127.0.0.1:{args.port}: {e.strerror}") from None
    return 0
