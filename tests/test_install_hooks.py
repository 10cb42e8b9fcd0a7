"""Tests for subcog_store.claude_code.install and mcp.register (real files in temporary directories)."""
from __future__ import annotations

import json
import logging
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from subcog_store.claude_code import install as ih
from subcog_store.claude_code.install import (
    InstallResult, McpResult, SettingsError, hook_commands, install_hooks, mcp_config_path, settings_path,
    uninstall_hooks,
)

CMDS = {"PreCompact": "/venv/bin/subcog-store hook pre-compact",
        "PostCompact": "/venv/bin/subcog-store hook post-compact",
        "SessionStart": "/venv/bin/subcog-store hook session-start",
        "UserPromptSubmit": "/venv/bin/subcog-store hook user-prompt-submit",
        "SessionEnd": "/venv/bin/subcog-store hook session-end"}
OLD_CMDS = {k: CMDS[k] for k in ("PreCompact", "SessionStart")}
OURS_PC = {"type": "command", "command": CMDS["PreCompact"], "timeout": 30}
OURS_PO = {"type": "command", "command": CMDS["PostCompact"], "timeout": 30}
OURS_SS = {"type": "command", "command": CMDS["SessionStart"], "timeout": 10}
OURS_UP = {"type": "command", "command": CMDS["UserPromptSubmit"], "timeout": 5}
OURS_SE = {"type": "command", "command": CMDS["SessionEnd"], "timeout": 30}
GROUPS = {"PreCompact": {"matcher": "", "hooks": [OURS_PC]}, "PostCompact": {"matcher": "", "hooks": [OURS_PO]},
          "SessionStart": {"matcher": "", "hooks": [OURS_SS]},
          "UserPromptSubmit": {"hooks": [OURS_UP]}, "SessionEnd": {"matcher": "", "hooks": [OURS_SE]}}
SERVER = {"command": "/venv/bin/subcog-store", "args": ["mcp"]}
EVENTS = list(CMDS)


@pytest.fixture(autouse=True)
def no_claude_config_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)


def write(path: Path, data) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = (json.dumps(data, indent=4) if not isinstance(data, (str, bytes)) else data)
    path.write_bytes(raw if isinstance(raw, bytes) else raw.encode())
    return path.read_bytes()


def load(path: Path):
    return json.loads(path.read_text())


def test_fresh_dir_matches_contract(tmp_path: Path) -> None:
    path = settings_path(tmp_path)
    assert path == tmp_path / ".claude" / "settings.json"
    res = install_hooks(path, CMDS, mcp=None)
    assert res == InstallResult(path, True, None, EVENTS)
    assert load(path) == {"hooks": {event: [group] for event, group in GROUPS.items()}}
    text = path.read_text()
    assert text.endswith("}\n") and text == json.dumps(load(path), indent=2) + "\n"
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]  # no temp file, no backup
    assert sorted(p.name for p in tmp_path.iterdir()) == [".claude"]


def test_existing_settings_and_other_hooks_kept(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    other_pc = {"matcher": "", "hooks": [{"type": "command", "command": "echo hi", "timeout": 5}]}
    other_ss = {"matcher": "startup", "hooks": [{"type": "command", "command": "other-tool start"}]}
    old = {"permissions": {"allow": ["Bash(ls:*)"], "deny": []}, "env": {"FOO": "1"},
           "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}],
                     "PreCompact": [other_pc], "SessionStart": [other_ss]},
           "model": "opus"}
    old_raw = write(path, old)
    res = install_hooks(path, CMDS, mcp=None)
    assert res.changed and res.added == EVENTS
    new = load(path)
    assert list(new) == list(old)
    assert {k: v for k, v in new.items() if k != "hooks"} == {k: v for k, v in old.items() if k != "hooks"}
    assert list(new["hooks"]) == ["Stop", "PreCompact", "SessionStart", "PostCompact", "UserPromptSubmit",
                                  "SessionEnd"]
    assert new["hooks"]["Stop"] == old["hooks"]["Stop"]
    assert new["hooks"]["PreCompact"] == [other_pc, GROUPS["PreCompact"]]
    assert new["hooks"]["SessionStart"] == [other_ss, GROUPS["SessionStart"]]
    assert res.backup == path.with_name("settings.json.bak") and res.backup.read_bytes() == old_raw


def test_second_run_is_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    write(path, {"env": {"A": "é"}})
    first = install_hooks(path, CMDS, server=SERVER)
    raw, mtime = path.read_bytes(), path.stat().st_mtime_ns
    mcp_raw, mcp_mtime = (tmp_path / ".mcp.json").read_bytes(), (tmp_path / ".mcp.json").stat().st_mtime_ns
    second = install_hooks(path, CMDS, server=SERVER)
    assert first.changed and second == InstallResult(
        path, False, None, [], [], mcp=McpResult(tmp_path / ".mcp.json", False, None, "unchanged",
                                                 "approved in enabledMcpjsonServers"))
    assert path.read_bytes() == raw and path.stat().st_mtime_ns == mtime
    assert (tmp_path / ".mcp.json").read_bytes() == mcp_raw and (tmp_path / ".mcp.json").stat().st_mtime_ns == mcp_mtime
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json", "settings.json.bak"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".claude", ".mcp.json"]


def test_differently_formatted_but_complete_file_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    raw = write(path, json.dumps({"hooks": {event: [group] for event, group in GROUPS.items()}}))
    assert not install_hooks(path, CMDS).changed
    assert path.read_bytes() == raw


def test_old_install_updated_in_place(tmp_path: Path) -> None:
    """An install of an earlier version (SessionStart on `compact` only, two events) is brought up to date: our
    entries rewritten where they are, nothing duplicated, the new events added."""
    path = tmp_path / "settings.json"
    old = {"hooks": {"PreCompact": [{"matcher": "", "hooks": [OURS_PC]}],
                     "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "mine"}]},
                                      {"matcher": "compact", "hooks": [OURS_SS]}]}}
    write(path, old)
    res = install_hooks(path, CMDS)
    assert res.added == ["PostCompact", "UserPromptSubmit", "SessionEnd"] and res.updated == ["SessionStart"]
    assert load(path)["hooks"]["SessionStart"] == [old["hooks"]["SessionStart"][0], GROUPS["SessionStart"]]
    assert not install_hooks(path, CMDS).changed


@pytest.mark.parametrize("old_cmd", [
    "/old/venv/bin/subcog-store hook pre-compact",
    "'/path with space/subcog-store' hook pre-compact",
    "/usr/bin/python3 -m subcog_store hook pre-compact",
    "/old/venv/bin/python -S -P '/old/venv/lib/python3.11/site-packages/subcog_store/hook/command.py' pre-compact",
    "/old/venv/bin/python -S -P '/old/venv/lib/python3.11/site-packages/subcog_store/claude_code/command.py' pre-compact",
])
def test_old_path_entry_replaced_in_place(tmp_path: Path, old_cmd: str) -> None:
    path = tmp_path / "settings.json"
    user_hook = {"type": "command", "command": "echo before"}
    write(path, {"hooks": {"PreCompact": [
        {"matcher": "", "hooks": [user_hook, {"type": "command", "command": old_cmd, "timeout": 99, "x": 1}]},
        {"matcher": "auto", "hooks": [{"type": "command", "command": "keep me"}]}]}})
    res = install_hooks(path, CMDS)
    assert res.added == EVENTS[1:] and res.updated == ["PreCompact"]
    assert load(path)["hooks"]["PreCompact"] == [
        {"matcher": "", "hooks": [user_hook, {**OURS_PC, "x": 1}]},
        {"matcher": "auto", "hooks": [{"type": "command", "command": "keep me"}]}]
    assert not install_hooks(path, CMDS).changed


def test_duplicates_and_wrong_matcher_collapsed(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    other = {"type": "command", "command": "other"}
    write(path, {"hooks": {"SessionStart": [
        {"matcher": "", "hooks": [other, {"type": "command", "command": "a/subcog-store hook session-start"}]},
        {"matcher": "startup", "hooks": [{"type": "command", "command": "b/subcog-store hook session-start"}]},
        {"matcher": "compact", "hooks": [{"type": "command", "command": "c/subcog-store hook session-start"}]}]}})
    install_hooks(path, CMDS)
    assert load(path)["hooks"]["SessionStart"] == [{"matcher": "", "hooks": [other, OURS_SS]}]


def test_lone_wrong_matcher_group_fixed_in_place(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    write(path, {"hooks": {"SessionStart": [{"hooks": [{"command": "x/subcog-store hook session-start"}]}]}})
    install_hooks(path, CMDS)
    assert load(path)["hooks"]["SessionStart"] == [{"hooks": [OURS_SS], "matcher": ""}]


def test_custom_executable_recognized_on_rerun(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    cmds = {"PreCompact": "wrapper pc", "SessionStart": "wrapper ss"}
    install_hooks(path, cmds)
    raw = path.read_bytes()
    assert not install_hooks(path, cmds).changed and path.read_bytes() == raw


@pytest.mark.parametrize("content", [b"{not json", b'{"a": 1,}', b"\xff\xfe", b'{"a": NaN}', b'{"a": 1, "a": 2}'])
def test_invalid_json_refused_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    for op in (lambda: install_hooks(path, CMDS), lambda: uninstall_hooks(path)):
        with pytest.raises(SettingsError, match="settings.json"):
            op()
    assert path.read_bytes() == content and os.listdir(tmp_path) == ["settings.json"]


@pytest.mark.parametrize("data", [
    [], "x", 3, {"hooks": []}, {"hooks": "x"}, {"hooks": {"PreCompact": {}}}, {"hooks": {"Stop": "x"}},
    {"hooks": {"PreCompact": ["x"]}}, {"hooks": {"SessionStart": [{"matcher": 1, "hooks": []}]}},
    {"hooks": {"SessionStart": [{"matcher": "", "hooks": {}}]}},
    {"hooks": {"PreCompact": [{"matcher": "", "hooks": ["cmd"]}]}},
])
def test_wrong_types_refused_untouched(tmp_path: Path, data) -> None:
    path = tmp_path / "settings.json"
    raw = write(path, data)
    with pytest.raises(SettingsError, match=str(path)):
        install_hooks(path, CMDS)
    assert path.read_bytes() == raw and os.listdir(tmp_path) == ["settings.json"]


def test_backup_numbering_and_content(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    (tmp_path / "settings.json.bak").write_text("older")
    raw = write(path, {"a": 1})
    res = install_hooks(path, CMDS)
    assert res.backup == tmp_path / "settings.json.bak.1" and res.backup.read_bytes() == raw
    assert (tmp_path / "settings.json.bak").read_text() == "older"


def test_mode_kept_and_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("")
    os.chmod(path, 0o600)
    res = install_hooks(path, CMDS)
    assert res.changed and res.backup.read_bytes() == b""
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert list(load(path)["hooks"]) == EVENTS


def test_symlink_followed(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    write(real, {"a": 1})
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    install_hooks(link, CMDS)
    assert link.is_symlink() and "hooks" in load(real)


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    res = install_hooks(path, CMDS, dry_run=True)
    assert res.changed and res.backup is None and not path.parent.exists()
    write(path, {"a": 1})
    raw = path.read_bytes()
    assert install_hooks(path, CMDS, dry_run=True).changed and path.read_bytes() == raw
    assert os.listdir(path.parent) == ["settings.json"] and sorted(os.listdir(tmp_path)) == [".claude"]


def test_uninstall(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    other = {"matcher": "", "hooks": [{"type": "command", "command": "echo hi"}]}
    old = {"env": {}, "hooks": {"PreCompact": [other], "Stop": []}}
    write(path, old)
    install_hooks(path, CMDS)
    installed = path.read_bytes()
    res = uninstall_hooks(path)
    assert res.changed and res.removed == EVENTS
    assert res.backup.read_bytes() == installed
    assert load(path) == old
    again = path.read_bytes()
    assert uninstall_hooks(path) == InstallResult(path, False, None, [], [], [])
    assert path.read_bytes() == again


def test_uninstall_fresh_roundtrip_and_missing(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    assert not uninstall_hooks(path).changed and not path.parent.exists()
    install_hooks(path, CMDS)
    assert load(tmp_path / ".mcp.json")["mcpServers"]["subcog"]["args"][-1] == "mcp"
    res = uninstall_hooks(path)
    assert res.mcp == McpResult(tmp_path / ".mcp.json", True, tmp_path / ".mcp.json.bak", "removed", "approval removed")
    assert load(path) == {} and load(tmp_path / ".mcp.json") == {"mcpServers": {}}


def test_uninstall_keeps_user_hooks_in_shared_group(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    write(path, {"hooks": {"PreCompact": [{"matcher": "", "hooks": [
        {"type": "command", "command": "echo a"}, {"type": "command", "command": "/x/subcog-store hook pre-compact"}]}]}})
    uninstall_hooks(path)
    assert load(path) == {"hooks": {"PreCompact": [{"matcher": "", "hooks": [{"type": "command", "command": "echo a"}]}]}}


def test_settings_path_and_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert settings_path(user=True) == tmp_path / "home" / ".claude" / "settings.json"
    with pytest.raises(ValueError):
        settings_path(tmp_path, user=True)
    bindir = tmp_path / "my venv" / "bin"
    bindir.mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(bindir / "python"))
    script = Path(ih.__file__).resolve().parent / "command.py"
    assert script.is_file()
    assert hook_commands() == {e: f"'{bindir}/python' -S -P {script} {sub}" for e, (sub, _, _) in ih.EVENTS.items()}
    assert hook_commands("sc")["SessionEnd"] == "sc hook session-end"
    for cmd, (sub, _, _) in zip([*hook_commands().values(), *hook_commands("/a b/subcog-store").values()],
                                [*ih.EVENTS.values()] * 2):
        assert ih.is_ours({"command": cmd}, sub)
        assert not ih.is_ours({"command": cmd}, "other-event")
    assert ih.executable_argv() == [str(bindir / "python"), "-m", "subcog_store"]
    (bindir / "subcog-store").write_text("#!/bin/sh\n")
    assert ih.executable_argv() == [f"{bindir}/subcog-store"]
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    assert settings_path(user=True) == tmp_path / "cfg" / "settings.json"
    assert mcp_config_path(settings_path(user=True)) == tmp_path / "cfg" / ".claude.json"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    assert mcp_config_path(settings_path(user=True)) == tmp_path / "home" / ".claude.json"
    assert mcp_config_path(tmp_path / "p" / ".claude" / "settings.json") == tmp_path / "p" / ".mcp.json"
    assert mcp_config_path(tmp_path / "settings.json") is None


# --- property test -----------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3), max_leaves=8)
hook_entry = st.fixed_dictionaries({"type": st.just("command"), "command": st.text(max_size=12)},
                                   optional={"timeout": st.integers(1, 600)})
group = st.fixed_dictionaries({"hooks": st.lists(hook_entry, max_size=2)},
                              optional={"matcher": st.sampled_from(["", "compact", "auto", "startup"])})
hooks_dict = st.dictionaries(st.sampled_from([*EVENTS, "Stop", "PreToolUse"]),
                             st.lists(group, min_size=1, max_size=2), min_size=1)


@st.composite
def settings_dicts(draw) -> dict:
    d = draw(st.dictionaries(st.text(max_size=8).filter(lambda k: k != "hooks"), json_values, max_size=5))
    if draw(st.booleans()):
        items = list(d.items())
        items.insert(draw(st.integers(0, len(items))), ("hooks", draw(hooks_dict)))
        d = dict(items)
    return d


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(settings_dicts())
def test_property_merge_preserves_and_is_idempotent(old: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ".claude" / "settings.json"
        write(path, old)
        install_hooks(path, CMDS, mcp=None)
        once = path.read_bytes()
        new = json.loads(once)
        assert list(new)[: len(old)] == list(old)
        assert {k: v for k, v in new.items() if k != "hooks"} == {k: v for k, v in old.items() if k != "hooks"}
        old_hooks = old.get("hooks", {})
        for event, groups in new["hooks"].items():
            if event in ih.EVENTS:
                assert groups == old_hooks.get(event, []) + [GROUPS[event]]
            else:
                assert groups == old_hooks[event]
        assert not install_hooks(path, CMDS, mcp=None).changed and path.read_bytes() == once
        uninstall_hooks(path, mcp=None)
        assert load(path) == old


# --- the MCP server's registration --------------------------------------------------------------------------------

def project(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / ".claude" / "settings.json", tmp_path / ".mcp.json"


def test_project_server_merged_and_approved(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path, mcp = project(tmp_path)
    other = {"command": "npx", "args": ["other-server"], "env": {"K": "v"}}
    old_mcp = write(mcp, {"mcpServers": {"other": other}, "note": "kept"})
    write(path, {"permissions": {"allow": []}, "enabledMcpjsonServers": ["other"]})
    with caplog.at_level(logging.WARNING, logger="subcog_store.install"):
        res = install_hooks(path, CMDS, server=SERVER)
    assert res.mcp == McpResult(mcp, True, tmp_path / ".mcp.json.bak", "added",
                                "approved: added to enabledMcpjsonServers")
    assert load(mcp) == {"mcpServers": {"other": other, "subcog": SERVER}, "note": "kept"}
    assert res.mcp.backup.read_bytes() == old_mcp
    assert load(path)["enabledMcpjsonServers"] == ["other", "subcog"]
    assert "enabledMcpjsonServers" in caplog.text and "disabledMcpjsonServers" in caplog.text
    caplog.clear()
    assert not install_hooks(path, CMDS, server=SERVER).changed and not caplog.text
    assert res.to_dict()["mcp"]["path"] == str(mcp)


@pytest.mark.parametrize("settings_data, approval", [
    ({"disabledMcpjsonServers": ["subcog"]}, "not approved: 'subcog' is in disabledMcpjsonServers (left as it is)"),
    ({"enableAllProjectMcpServers": True}, "approved by enableAllProjectMcpServers"),
])
def test_the_users_approval_settings_are_respected(tmp_path: Path, settings_data: dict, approval: str) -> None:
    path, mcp = project(tmp_path)
    write(path, settings_data)
    res = install_hooks(path, CMDS, server=SERVER)
    assert res.mcp.approval == approval
    assert {k: v for k, v in load(path).items() if k != "hooks"} == settings_data
    uninstall_hooks(path)
    assert load(path) == settings_data


def test_approval_can_be_left_to_the_client(tmp_path: Path) -> None:
    path, mcp = project(tmp_path)
    res = install_hooks(path, CMDS, server=SERVER, approve=False)
    assert res.mcp.approval == "not approved: the client asks" and "enabledMcpjsonServers" not in load(path)
    assert load(mcp) == {"mcpServers": {"subcog": SERVER}}


def test_our_old_entry_updated_in_place(tmp_path: Path) -> None:
    path, mcp = project(tmp_path)
    write(mcp, {"mcpServers": {"subcog": {"type": "stdio", "command": "/old/bin/subcog-store", "args": ["mcp"],
                                          "env": {"SUBCOG_DB": "/x.db"}}}})
    res = install_hooks(path, CMDS, server=SERVER)
    assert res.mcp.action == "updated"
    assert load(mcp)["mcpServers"]["subcog"] == {"type": "stdio", **SERVER, "env": {"SUBCOG_DB": "/x.db"}}


@pytest.mark.parametrize("content", [
    b"{not json", b'{"mcpServers": {"a": 1}, "mcpServers": {}}', b"[]", b'{"mcpServers": []}',
    b'{"mcpServers": {"subcog": "x"}}', b'{"mcpServers": {"subcog": {"command": "/usr/bin/other-tool"}}}',
])
def test_a_bad_or_foreign_mcp_file_is_refused_and_nothing_is_written(tmp_path: Path, content: bytes) -> None:
    path, mcp = project(tmp_path)
    settings_raw = write(path, {"model": "opus"})
    mcp.write_bytes(content)
    for op in (lambda: install_hooks(path, CMDS, server=SERVER), lambda: install_hooks(path, CMDS, dry_run=True)):
        with pytest.raises(SettingsError, match=r"\.mcp\.json"):
            op()
    assert mcp.read_bytes() == content and path.read_bytes() == settings_raw
    assert sorted(os.listdir(tmp_path)) == [".claude", ".mcp.json"] and os.listdir(path.parent) == ["settings.json"]


@pytest.mark.parametrize("data", [{"enabledMcpjsonServers": "subcog"}, {"disabledMcpjsonServers": [1]}])
def test_bad_approval_lists_refused(tmp_path: Path, data: dict) -> None:
    path, mcp = project(tmp_path)
    raw = write(path, data)
    with pytest.raises(SettingsError, match="settings.json.*list of server names"):
        install_hooks(path, CMDS, server=SERVER)
    assert path.read_bytes() == raw and not mcp.exists()


@pytest.mark.parametrize("which", ["settings", "mcp"])
def test_read_only_files_refused(tmp_path: Path, which: str) -> None:
    path, mcp = project(tmp_path)
    raws = {"settings": write(path, {"a": 1}), "mcp": write(mcp, {"mcpServers": {}})}
    target = path if which == "settings" else mcp
    os.chmod(target, 0o444)
    for dry_run in (True, False):
        with pytest.raises(SettingsError, match="read-only"):
            install_hooks(path, CMDS, server=SERVER, dry_run=dry_run)
    assert path.read_bytes() == raws["settings"] and mcp.read_bytes() == raws["mcp"]
    assert sorted(os.listdir(tmp_path)) == [".claude", ".mcp.json"] and os.listdir(path.parent) == ["settings.json"]


@pytest.mark.parametrize("existed", [True, False])
def test_a_failed_second_write_puts_the_first_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   existed: bool) -> None:
    path, mcp = project(tmp_path)
    raw = write(path, {"a": 1}) if existed else None
    real = ih._replace

    def failing(target: Path, data: bytes, mode: int) -> None:
        if target.name == ".mcp.json":
            raise OSError(28, "No space left on device")
        real(target, data, mode)

    monkeypatch.setattr(ih, "_replace", failing)
    with pytest.raises(SettingsError, match=r"\.mcp\.json: cannot write"):
        install_hooks(path, CMDS, server=SERVER)
    assert (path.read_bytes() == raw) if existed else not path.exists()
    assert os.listdir(path.parent) == (["settings.json"] if existed else [])
    assert sorted(os.listdir(tmp_path)) == [".claude"]


def test_user_scope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    global_config = home / ".claude.json"
    old = {"numStartups": 3, "projects": {"/p": {"allowedTools": []}}, "mcpServers": {"x": {"command": "x"}}}
    write(global_config, old)
    os.chmod(global_config, 0o600)
    path = settings_path(user=True)
    res = install_hooks(path, CMDS, server=SERVER)
    assert res.mcp == McpResult(global_config, True, home / ".claude.json.bak", "added", None)
    assert load(global_config) == {**old, "mcpServers": {"x": {"command": "x"}, "subcog": SERVER}}
    assert stat.S_IMODE(global_config.stat().st_mode) == 0o600
    assert "enabledMcpjsonServers" not in load(path)   # user-scope servers need no approval
    uninstall_hooks(path)
    assert load(global_config) == old and load(path) == {}

    cfg = tmp_path / "cfg"
    cfg.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cfg))
    res = install_hooks(settings_path(user=True), CMDS, server=SERVER)
    assert res.path == cfg / "settings.json" and res.mcp.path == cfg / ".claude.json"
    assert load(cfg / ".claude.json") == {"mcpServers": {"subcog": SERVER}}
    assert load(global_config) == old


def test_missing_directories_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for path in (tmp_path / "typo" / ".claude" / "settings.json",):
        for op in (install_hooks, uninstall_hooks):
            with pytest.raises(SettingsError, match="not an existing directory"):
                op(path)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "no-such-config"))
    with pytest.raises(SettingsError, match="no-such-config is not an existing directory"):
        install_hooks(settings_path(user=True), CMDS, server=SERVER)
    assert os.listdir(tmp_path) == []


def test_uninstall_removes_exactly_ours(tmp_path: Path) -> None:
    path, mcp = project(tmp_path)
    other = {"command": "npx", "args": ["other"]}
    write(mcp, {"mcpServers": {"other": other}})
    write(path, {"enabledMcpjsonServers": ["other"], "hooks": {"Stop": [{"hooks": [{"command": "x"}]}]}})
    install_hooks(path, CMDS, server=SERVER)
    res = uninstall_hooks(path)
    assert res.removed == EVENTS and res.mcp.action == "removed" and res.mcp.approval == "approval removed"
    assert load(mcp) == {"mcpServers": {"other": other}}
    assert load(path) == {"enabledMcpjsonServers": ["other"], "hooks": {"Stop": [{"hooks": [{"command": "x"}]}]}}
    again = uninstall_hooks(path)
    assert not again.changed and again.mcp.action == "absent"


def test_cli_install_and_uninstall(tmp_path: Path) -> None:
    import subprocess

    from tests.conftest import cli_command

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SUBCOG_", "CLAUDE_"))}
    run = lambda *a: subprocess.run([*cli_command(), "install-hooks", *a], capture_output=True, text=True,  # noqa
                                    env=env, timeout=60)
    proc = run("--project", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["added"] == list(ih.EVENTS) and out["mcp"]["action"] == "added" and "enabledMcpjsonServers" in proc.stderr
    entry = load(tmp_path / ".mcp.json")["mcpServers"]["subcog"]
    assert entry["args"][-1] == "mcp" and Path(entry["command"]).is_file()
    assert "unchanged" in run("--project", str(tmp_path)).stdout
    assert run("--project", str(tmp_path), "--uninstall").returncode == 0
    assert load(tmp_path / ".claude" / "settings.json") == {}
    proc = run("--project", str(tmp_path / "typo"))
    assert proc.returncode == 2 and "not an existing directory" in proc.stderr and not (tmp_path / "typo").exists()
