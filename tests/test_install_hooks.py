"""Tests for subcog_store.hook.install (real files in temporary directories)."""
from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from subcog_store.hook import install as ih
from subcog_store.hook.install import (
    InstallResult, SettingsError, hook_commands, install_hooks, settings_path, uninstall_hooks,
)

CMDS = {"PreCompact": "/venv/bin/subcog-store hook pre-compact",
        "SessionStart": "/venv/bin/subcog-store hook session-start"}
OURS_PC = {"type": "command", "command": CMDS["PreCompact"], "timeout": 30}
OURS_SS = {"type": "command", "command": CMDS["SessionStart"], "timeout": 10}


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
    res = install_hooks(path, CMDS)
    assert res == InstallResult(path, True, None, ["PreCompact", "SessionStart"])
    assert load(path) == {"hooks": {
        "PreCompact": [{"matcher": "", "hooks": [OURS_PC]}],
        "SessionStart": [{"matcher": "compact", "hooks": [OURS_SS]}]}}
    text = path.read_text()
    assert text.endswith("}\n") and text == json.dumps(load(path), indent=2) + "\n"
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]  # no temp file, no backup


def test_existing_settings_and_other_hooks_kept(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    other_pc = {"matcher": "", "hooks": [{"type": "command", "command": "echo hi", "timeout": 5}]}
    other_ss = {"matcher": "startup", "hooks": [{"type": "command", "command": "other-tool start"}]}
    old = {"permissions": {"allow": ["Bash(ls:*)"], "deny": []}, "env": {"FOO": "1"},
           "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}],
                     "PreCompact": [other_pc], "SessionStart": [other_ss]},
           "model": "opus"}
    old_raw = write(path, old)
    res = install_hooks(path, CMDS)
    assert res.changed and res.added == ["PreCompact", "SessionStart"]
    new = load(path)
    assert list(new) == list(old)
    assert {k: v for k, v in new.items() if k != "hooks"} == {k: v for k, v in old.items() if k != "hooks"}
    assert list(new["hooks"]) == ["Stop", "PreCompact", "SessionStart"]
    assert new["hooks"]["Stop"] == old["hooks"]["Stop"]
    assert new["hooks"]["PreCompact"] == [other_pc, {"matcher": "", "hooks": [OURS_PC]}]
    assert new["hooks"]["SessionStart"] == [other_ss, {"matcher": "compact", "hooks": [OURS_SS]}]
    assert res.backup == path.with_name("settings.json.bak") and res.backup.read_bytes() == old_raw


def test_second_run_is_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    write(path, {"env": {"A": "é"}})
    first = install_hooks(path, CMDS)
    raw, mtime = path.read_bytes(), path.stat().st_mtime_ns
    second = install_hooks(path, CMDS)
    assert first.changed and second == InstallResult(path, False, None, [], [])
    assert path.read_bytes() == raw and path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json", "settings.json.bak"]


def test_differently_formatted_but_complete_file_not_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    raw = write(path, json.dumps({"hooks": {"PreCompact": [{"matcher": "", "hooks": [OURS_PC]}],
                                            "SessionStart": [{"matcher": "compact", "hooks": [OURS_SS]}]}}))
    assert not install_hooks(path, CMDS).changed
    assert path.read_bytes() == raw


@pytest.mark.parametrize("old_cmd", [
    "/old/venv/bin/subcog-store hook pre-compact",
    "'/path with space/subcog-store' hook pre-compact",
    "/usr/bin/python3 -m subcog_store hook pre-compact",
])
def test_old_path_entry_replaced_in_place(tmp_path: Path, old_cmd: str) -> None:
    path = tmp_path / "settings.json"
    user_hook = {"type": "command", "command": "echo before"}
    write(path, {"hooks": {"PreCompact": [
        {"matcher": "", "hooks": [user_hook, {"type": "command", "command": old_cmd, "timeout": 99, "x": 1}]},
        {"matcher": "auto", "hooks": [{"type": "command", "command": "keep me"}]}]}})
    res = install_hooks(path, CMDS)
    assert res.added == ["SessionStart"] and res.updated == ["PreCompact"]
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
    assert load(path)["hooks"]["SessionStart"] == [
        {"matcher": "", "hooks": [other]}, {"matcher": "compact", "hooks": [OURS_SS]}]


def test_lone_wrong_matcher_group_fixed_in_place(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    write(path, {"hooks": {"SessionStart": [{"hooks": [{"command": "x/subcog-store hook session-start"}]}]}})
    install_hooks(path, CMDS)
    assert load(path)["hooks"]["SessionStart"] == [{"hooks": [OURS_SS], "matcher": "compact"}]


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
    assert set(load(path)["hooks"]) == {"PreCompact", "SessionStart"}


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
    assert os.listdir(path.parent) == ["settings.json"]


def test_uninstall(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    other = {"matcher": "", "hooks": [{"type": "command", "command": "echo hi"}]}
    old = {"env": {}, "hooks": {"PreCompact": [other], "Stop": []}}
    write(path, old)
    install_hooks(path, CMDS)
    installed = path.read_bytes()
    res = uninstall_hooks(path)
    assert res.changed and res.removed == ["PreCompact", "SessionStart"]
    assert res.backup.read_bytes() == installed
    assert load(path) == old
    again = path.read_bytes()
    assert uninstall_hooks(path) == InstallResult(path, False, None, [], [], [])
    assert path.read_bytes() == again


def test_uninstall_fresh_roundtrip_and_missing(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    assert not uninstall_hooks(path).changed and not path.parent.exists()
    install_hooks(path, CMDS)
    uninstall_hooks(path)
    assert load(path) == {}


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
    assert hook_commands()["PreCompact"] == f"'{bindir}/python' -m subcog_store hook pre-compact"
    (bindir / "subcog-store").write_text("#!/bin/sh\n")
    assert hook_commands() == {"PreCompact": f"'{bindir}/subcog-store' hook pre-compact",
                               "SessionStart": f"'{bindir}/subcog-store' hook session-start"}
    assert hook_commands("sc") == {"PreCompact": "sc hook pre-compact", "SessionStart": "sc hook session-start"}
    for cmd, sub in zip(hook_commands().values(), ("pre-compact", "session-start")):
        assert ih._is_ours({"command": cmd}, sub)


# --- property test -----------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3), max_leaves=8)
hook_entry = st.fixed_dictionaries({"type": st.just("command"), "command": st.text(max_size=12)},
                                   optional={"timeout": st.integers(1, 600)})
group = st.fixed_dictionaries({"hooks": st.lists(hook_entry, max_size=2)},
                              optional={"matcher": st.sampled_from(["", "compact", "auto", "startup"])})
hooks_dict = st.dictionaries(st.sampled_from(["PreCompact", "SessionStart", "Stop", "PreToolUse"]),
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
        install_hooks(path, CMDS)
        once = path.read_bytes()
        new = json.loads(once)
        assert list(new)[: len(old)] == list(old)
        assert {k: v for k, v in new.items() if k != "hooks"} == {k: v for k, v in old.items() if k != "hooks"}
        old_hooks = old.get("hooks", {})
        for event, groups in new["hooks"].items():
            if event in ih.EVENTS:
                ours = {"matcher": ih.EVENTS[event][1], "hooks": [OURS_PC if event == "PreCompact" else OURS_SS]}
                assert groups == old_hooks.get(event, []) + [ours]
            else:
                assert groups == old_hooks[event]
        assert not install_hooks(path, CMDS).changed and path.read_bytes() == once
        uninstall_hooks(path)
        assert load(path) == old
