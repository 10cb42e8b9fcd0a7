"""`worker start|stop|status`: the warm worker, for people (hooks and commands start it on their own)."""
# Lazy imports: each command imports what it runs (every command is registered at start-up).
from __future__ import annotations

import argparse
import time

from subcog_store.cli.app import emit
from subcog_store.errors import ConfigError


def register(sub, add) -> None:
    p = sub.add_parser("worker", help="the warm worker that keeps the model loaded for hooks and commands",
                       description="The warm worker: started on demand by hooks and commands, exits after "
                                   "SUBCOG_WORKER_IDLE_SECS idle or when its code changes. Never required.")
    actions = p.add_subparsers(dest="action", required=True)
    for name, help, handler in (("start", "start it (if not running) and wait until it answers", cmd_start),
                                ("stop", "stop it; leaves no process, socket or pid file", cmd_stop),
                                ("status", "is it running, which version, how busy", cmd_status)):
        a = actions.add_parser(name, help=help, description=help)
        a.add_argument("--json", action="store_true", help="machine-readable output")
        a.set_defaults(handler=handler)


def _describe(info: dict) -> str:
    text = f"worker: {info['state']} ({info['socket']})"
    if info.get("pid"):
        text += f"\n  pid {info['pid']}"
    if "uptime_secs" in info:
        text += (f", up {info['uptime_secs']:.0f} s, idle {info['idle_secs']:.0f} s of "
                 f"{info['idle_limit_secs']:.0f} s, {info['requests']} requests, {info['rss_mb']} MB, "
                 f"models: {', '.join(info['models']) or 'none loaded'}")
    if info.get("problem"):
        text += f"\n  {info['problem']}"
    if not info.get("enabled", True):
        text += "\n  SUBCOG_WORKER_ENABLED is false: hooks and commands do not use it"
    return text


def cmd_status(args: argparse.Namespace) -> int:
    from subcog_store.worker.lifecycle import state

    info = state()
    emit(args, info, _describe(info))
    return 0


def cmd_start(args: argparse.Namespace) -> int:
    from subcog_store.worker import client, lifecycle, protocol

    if not client.enabled():
        raise ConfigError("SUBCOG_WORKER_ENABLED is false; not starting the worker")
    paths = protocol.Paths()
    started = time.monotonic()
    lifecycle.start_detached(paths)
    if lifecycle.wait_ready(paths) is None:
        info = lifecycle.state(paths)
        emit(args, info, _describe(info))
        return 1
    info = lifecycle.state(paths)
    info["waited_secs"] = round(time.monotonic() - started, 2)
    emit(args, info, _describe(info))
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from subcog_store.worker.lifecycle import stop

    result = stop()
    if not result["was_running"]:
        text = "worker: not running" + (f" ({result['how']})" if result["how"] else "")
    else:
        text = f"worker: stopped (pid {result['pid']}, {result['how']})" if result["stopped"] else \
            f"worker: could not stop pid {result['pid']}"
    if result["removed"]:
        text += f"; removed {', '.join(result['removed'])}"
    emit(args, result, text)
    return 0 if result.get("stopped", True) else 1
