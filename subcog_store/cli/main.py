"""The `subcog-store` entry point: every command module registered on the app's parser. A hook goes straight
to the thin hook entry, and `mcp` straight to the server (no argparse, no command modules)."""
# Lazy imports: `subcog-store hook` and `mcp` hand over before any command module is imported; the others
# are imported when the parser is built.
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    db = None
    if len(argv) >= 3 and argv[0] == "--db":
        db, rest = argv[1], argv[2:]
    else:
        rest = argv
    if rest[:1] == ["hook"] and not any(a in ("-h", "--help") for a in rest):
        from subcog_store.claude_code.entry import main as hook_main

        return hook_main(rest[1:], db=db)
    if rest == ["mcp"]:   # started by the client for every session: no parser, no command modules
        from subcog_store.cli.mcp_cmds import serve

        return serve(db)
    from subcog_store.cli import app

    return app.run(build_parser(), argv)


def build_parser():
    """The parser with every command."""
    from subcog_store.cli import app, batch_cmds, code_cmds, copy_cmds, history_cmds, hook_cmds, mcp_cmds, \
        recall_cmds, review_cmds, store_cmds, transfer_cmds, ui_cmds, upkeep_cmds, worker_cmds

    return app.build_parser([store_cmds, recall_cmds, review_cmds, batch_cmds, hook_cmds, history_cmds,
                             transfer_cmds, copy_cmds, upkeep_cmds, worker_cmds, mcp_cmds, ui_cmds, code_cmds])


if __name__ == "__main__":
    sys.exit(main())
