"""Claude Code commands: `hook EVENT` (the thin entry in `claude_code.entry` runs it) and `install-hooks`."""
# Lazy imports: each command imports what it runs (every command is registered at start-up).
from __future__ import annotations

import argparse
import logging
from pathlib import Path

from subcog_store.cli.app import emit
from subcog_store.errors import InvalidInput


def register(sub, add) -> None:
    p = sub.add_parser("hook", help="Claude Code hooks (read the hook input on stdin)",
                       description="Claude Code hooks: they always exit 0 and print output the client accepts.")
    p.set_defaults(handler=cmd_hook)
    hooks = p.add_subparsers(dest="hook", required=True)
    h = hooks.add_parser("pre-compact", help="capture the conversation's decisions, learnings, patterns")
    h.add_argument("--format", choices=("default", "json", "subcog"), default="default",
                   help="default: a status line and the request for the summary's lasting facts (plain text: the "
                        "client shows it and hands it to the summarizer); json: a systemMessage object; subcog: "
                        "the original design's report (which the real client rejects on PreCompact)")
    h.add_argument("--dry-run", action="store_true", help="report what would be captured; write nothing")
    for name, help in (("session-end", "capture what the session established, from where pre-compact stopped"),
                       ("post-compact", "capture the lasting facts of the compaction summary"),
                       ("session-start", "hand the model the project's index (and after a compaction its report)"),
                       ("user-prompt-submit", "hand the model the memories relevant to the prompt, if any")):
        hooks.add_parser(name, help=help)
    p = add("install-hooks", "register every hook in Claude Code's settings.json and the MCP server in .mcp.json "
                             "(or the user's files), merging", cmd_install_hooks)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--project", metavar="DIR", help="write DIR/.claude/settings.json")
    where.add_argument("--user", action="store_true", help="write ~/.claude/settings.json")
    p.add_argument("--uninstall", action="store_true", help="remove our hooks and MCP server instead")
    p.add_argument("--no-approve-mcp", action="store_true",
                   help="project: leave the MCP server for the client to ask about (by default it is approved in "
                        "the same settings.json, enabledMcpjsonServers)")
    p.add_argument("--dry-run", action="store_true", help="say what would change; write nothing")


def cmd_hook(args: argparse.Namespace) -> int:
    from subcog_store.claude_code.entry import main

    argv = [args.hook] + (["--dry-run"] if getattr(args, "dry_run", False) else []) + \
        (["--format", args.format] if getattr(args, "format", None) else [])
    return main(argv, db=args.db)


def cmd_install_hooks(args: argparse.Namespace) -> int:
    from subcog_store.claude_code.install import SettingsError, install_hooks, settings_path, uninstall_hooks
    from subcog_store.claude_code.installed import Installed, installed

    path = settings_path(Path(args.project) if args.project else None, user=args.user)
    try:
        result = uninstall_hooks(path, dry_run=args.dry_run) if args.uninstall else \
            install_hooks(path, dry_run=args.dry_run, approve=not args.no_approve_mcp)
    except SettingsError as e:
        raise InvalidInput(str(e)) from None
    if not args.uninstall:   # the plugin enabled as well would run every hook twice
        both = Installed(installed(Path(args.project) if args.project else None).plugin, [path])
        if both.twice:
            logging.getLogger("subcog_store.cli").warning(both.warning().removeprefix("warning: "))
    verb = "would change" if args.dry_run and result.changed else ("updated" if result.changed else "unchanged")
    text = f"{path}: {verb}"
    if result.backup:
        text += f" (old file kept as {result.backup})"
    if result.mcp:
        text += f"\n{result.mcp.path}: MCP server {result.mcp.action}"
        text += f" (old file kept as {result.mcp.backup})" if result.mcp.backup else ""
        text += f"; {result.mcp.approval}" if result.mcp.approval else ""
    emit(args, result.to_dict(), text)
    return 0
