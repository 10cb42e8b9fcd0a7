"""The Claude Code plugin: its files are what `install-hooks` registers (one source of truth), and its launcher runs
the installed subcog-store, or says how to install it without ever failing a hook."""
from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from subcog_store.claude_code import install, plugin
from subcog_store.mcp import register

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "plugin" / "scripts" / "subcog"
CHECKER = ROOT.parent / "shared" / "tools" / "check_hook_output.py"
EVENT_NAMES = {"pre-compact": "PreCompact", "post-compact": "PostCompact", "session-start": "SessionStart",
               "user-prompt-submit": "UserPromptSubmit", "session-end": "SessionEnd"}


def test_the_committed_plugin_files_are_the_rendered_ones() -> None:
    assert plugin.stale() == [], "run `make plugin` and commit the result"


def test_a_stale_or_missing_file_is_found_and_rewritten(tmp_path: Path) -> None:
    assert sorted(plugin.stale(tmp_path)) == sorted(plugin.files())
    plugin.write(tmp_path)
    assert plugin.stale(tmp_path) == []
    hooks = tmp_path / "plugin" / "hooks" / "hooks.json"
    hooks.write_text(hooks.read_text().replace("pre-compact", "pre-kompact"))
    assert plugin.stale(tmp_path) == ["plugin/hooks/hooks.json"]


def _shape(hooks: dict) -> dict:
    """event -> [(matcher, hook subcommand, timeout)]: what a registration means, whatever runs it."""
    return {event: sorted((g.get("matcher"), h["command"].split()[-1], h["timeout"]) for g in groups
                          for h in g["hooks"]) for event, groups in hooks.items()}


def test_the_plugin_registers_exactly_what_install_hooks_registers(tmp_path: Path) -> None:
    """The agreement: every event, matcher, sub-command and timeout of a real install into an empty project is in the
    plugin's hooks file, and nothing else (an event added to install.EVENTS appears in both)."""
    result = install.install_hooks(install.settings_path(tmp_path), mcp=None)
    installed = json.loads(result.path.read_text())["hooks"]
    shipped = json.loads((ROOT / "plugin" / "hooks" / "hooks.json").read_text())["hooks"]
    assert _shape(shipped) == _shape(installed)
    assert set(shipped) == set(install.EVENTS)
    for groups in shipped.values():
        for g in groups:
            for h in g["hooks"]:
                assert h["type"] == "command"
                assert h["command"].startswith('"${CLAUDE_PLUGIN_ROOT}/scripts/subcog" hook ')


def test_the_plugin_serves_the_same_mcp_server() -> None:
    shipped = json.loads((ROOT / "plugin" / ".mcp.json").read_text())["mcpServers"]
    assert list(shipped) == [register.NAME]
    entry = shipped[register.NAME]
    assert entry == {"command": "${CLAUDE_PLUGIN_ROOT}/scripts/subcog", "args": ["mcp"]}
    assert entry["args"] == register.server_entry(["subcog-store"])["args"]


def test_the_marketplace_lists_the_plugin_at_the_package_version() -> None:
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    manifest = json.loads((ROOT / "plugin" / ".claude-plugin" / "plugin.json").read_text())
    assert [p["name"] for p in market["plugins"]] == [manifest["name"]] == ["subcog"]
    assert market["plugins"][0]["source"] == "./plugin"
    assert manifest["version"] == market["plugins"][0]["version"] == plugin.version()
    assert not (ROOT / ".mcp.json").exists(), "a repository-root .mcp.json would start a server for every contributor"


def test_the_launcher_is_executable_and_portable_sh() -> None:
    assert LAUNCHER.stat().st_mode & stat.S_IXUSR
    assert LAUNCHER.read_text().startswith("#!/bin/sh\n")
    subprocess.run(["sh", "-n", str(LAUNCHER)], check=True)


def _run(args: list[str], path: str, stdin: bytes = b'{"session_id": "s"}', **env: str) -> subprocess.CompletedProcess:
    environ = {"PATH": path, "HOME": env.pop("HOME", "/nonexistent"), **env}
    return subprocess.run([str(LAUNCHER), *args], input=stdin, capture_output=True, env=environ, timeout=60)


def test_the_launcher_runs_the_installed_command_with_its_arguments_and_input(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "subcog-store"
    fake.write_text('#!/bin/sh\nprintf "%s|" "$@"; cat\n')
    fake.chmod(0o755)
    out = _run(["hook", "session-start"], f"{bindir}:/usr/bin:/bin", b"INPUT")
    assert out.returncode == 0 and out.stdout == b"hook|session-start|INPUT" and out.stderr == b""
    # not on PATH, but where pipx puts commands
    local = tmp_path / "home" / ".local" / "bin"
    local.mkdir(parents=True)
    fake.rename(local / "subcog-store")
    out = _run(["mcp"], "/usr/bin:/bin", b"", HOME=str(tmp_path / "home"))
    assert out.returncode == 0 and out.stdout == b"mcp|"


@pytest.mark.parametrize("sub", sorted(EVENT_NAMES))
def test_without_subcog_store_every_hook_exits_0_with_valid_output_and_nothing_on_stderr(sub: str) -> None:
    out = _run(["hook", sub], "/usr/bin:/bin", b'{"session_id": "s", "hook_event_name": "x"}' * 1000)
    assert out.returncode == 0 and out.stderr == b""
    if sub == "session-start":
        message = json.loads(out.stdout)["systemMessage"]
        assert "not installed" in message and "pipx install" in message
    else:
        assert out.stdout == b""
    if CHECKER.is_file():
        check = subprocess.run([sys.executable, str(CHECKER), EVENT_NAMES[sub]], input=out.stdout, capture_output=True)
        assert check.returncode == 0, check.stdout


def test_without_subcog_store_the_message_names_the_clone_the_plugin_came_from() -> None:
    out = _run(["hook", "session-start"], "/usr/bin:/bin", CLAUDE_PLUGIN_ROOT=str(ROOT / "plugin"))
    message = json.loads(out.stdout)["systemMessage"]
    if all(c.isalnum() or c in "._/+-" for c in str(ROOT)):
        assert f"pipx install {ROOT}" in message


def test_without_subcog_store_the_mcp_server_says_how_to_install_it() -> None:
    out = _run(["mcp"], "/usr/bin:/bin", b"")
    assert out.returncode == 1 and out.stdout == b"" and b"not installed" in out.stderr


def test_the_plugin_hooks_run_the_real_command(tmp_path: Path) -> None:
    """With this checkout's subcog-store on PATH, the plugin's pre-compact hook captures a sample session and its
    session-start hook hands the model the index, as the installed hooks do."""
    bindir = Path(sys.executable).parent
    if not (bindir / "subcog-store").is_file():
        pytest.skip("no subcog-store script beside this interpreter")
    env = {"SUBCOG_DB": str(tmp_path / "m.db"), "SUBCOG_HOOK_LOG": str(tmp_path / "hook.log"),
           "SUBCOG_WORKER_ENABLED": "false", "SUBCOG_DEDUP_SEMANTIC_ENABLED": "false"}
    base = {"session_id": "s1", "cwd": str(tmp_path), "transcript_path": str(ROOT / "samples" / "session-a.jsonl")}
    path = f"{bindir}:/usr/bin:/bin"
    out = _run(["hook", "pre-compact"], path, json.dumps({**base, "hook_event_name": "PreCompact",
                                                          "trigger": "manual"}).encode(), **env)
    assert out.returncode == 0 and out.stderr == b"" and out.stdout.startswith(b"subcog: captured ")
    out = _run(["hook", "session-start"], path, json.dumps({**base, "session_id": "s2", "source": "startup",
                                                           "hook_event_name": "SessionStart"}).encode(), **env)
    assert out.returncode == 0 and out.stderr == b""
    assert "PgBouncer" in json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    if CHECKER.is_file():
        assert subprocess.run([sys.executable, str(CHECKER), "SessionStart"], input=out.stdout).returncode == 0
