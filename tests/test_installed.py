"""The plugin and install-hooks both active run every hook twice: found in the client's settings files, warned
about by install-hooks, reported by doctor; one of them alone is fine."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import cli_in_process, run_cli
from subcog_store.claude_code.install import install_hooks, settings_path
from subcog_store.claude_code.installed import PLUGIN_ID, installed
from subcog_store.doctor import CHECKS, diagnose
from subcog_store.store import Store


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A user configuration folder (CLAUDE_CONFIG_DIR) and a project folder, the working directory."""
    config, project = tmp_path / "config", tmp_path / "project"
    config.mkdir()
    project.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.chdir(project)
    return config, project


def enable_plugin(path: Path, enabled: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault("enabledPlugins", {})[PLUGIN_ID] = enabled
    path.write_text(json.dumps(data))


def test_the_plugin_alone_or_the_hooks_alone_run_once(client):
    config, project = client
    assert not installed().plugin and not installed().hooks
    enable_plugin(config / "settings.json")
    assert installed().plugin == [config / "settings.json"] and not installed().twice
    enable_plugin(config / "settings.json", enabled=False)
    install_hooks(settings_path(project), mcp=None)
    assert installed().hooks == [project / ".claude" / "settings.json"] and not installed().twice


def test_both_are_found_and_a_later_file_overrides_an_earlier(client):
    config, project = client
    enable_plugin(config / "settings.json")
    install_hooks(settings_path(project), mcp=None)
    found = installed()
    assert found.twice and "every hook would run twice" in found.warning()
    enable_plugin(project / ".claude" / "settings.local.json", enabled=False)   # the project's local choice wins
    assert not installed().twice and installed().plugin == []


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[1, 2]", b'{"enabledPlugins": [1]}',
                                     b'{"hooks": {"SessionStart": "x"}}'])
def test_unreadable_or_foreign_settings_count_as_nothing(client, content):
    config, _ = client
    (config / "settings.json").write_bytes(content)
    assert installed().plugin == [] and installed().hooks == []


def test_install_hooks_warns_when_the_plugin_is_enabled(client):
    config, project = client
    enable_plugin(config / "settings.json")
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    proc = run_cli("install-hooks", "--project", str(project), env=env, cwd=project, text=True)
    assert proc.returncode == 0 and "updated" in proc.stdout
    assert "every hook would run twice" in proc.stderr and PLUGIN_ID in proc.stderr
    proc = run_cli("--quiet", "install-hooks", "--project", str(project), env=env, cwd=project, text=True)
    assert proc.returncode == 0 and proc.stderr == ""
    proc = run_cli("install-hooks", "--project", str(project), "--uninstall", env=env, cwd=project, text=True)
    assert proc.returncode == 0 and proc.stderr == ""


def test_doctor_fails_while_both_run_and_passes_once_one_is_gone(client, monkeypatch, capsys, tmp_path):
    config, project = client
    db = tmp_path / "m.db"
    Store(db).close()
    install_hooks(settings_path(project), mcp=None)
    code, out, _ = cli_in_process(monkeypatch, capsys, "--db", str(db), "doctor")
    assert code == 0 and "ok   hooks_run_once: install-hooks' entries" in out
    enable_plugin(config / "settings.json")
    code, out, _ = cli_in_process(monkeypatch, capsys, "--db", str(db), "doctor")
    assert code == 6 and "FAIL hooks_run_once" in out


def test_diagnose_reports_progress_up_to_its_number_of_checks(tmp_path):
    store = Store(tmp_path / "m.db")
    try:
        steps: list[tuple[int, int, str]] = []
        findings = diagnose(store.con, progress=lambda done, total, check: steps.append((done, total, check)))
    finally:
        store.close()
    assert len(findings) == CHECKS and steps[-1][:2] == (CHECKS, CHECKS)
    assert [done for done, _, _ in steps] == sorted(done for done, _, _ in steps)
    assert {check for _, _, check in steps} <= {f.check for f in findings}
