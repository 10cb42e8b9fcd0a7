"""The held-out capture data: sessions of other projects (never trained or tuned on), their labels, the questions a
developer asks later, and the public DevMemBench set. Nothing here holds another project's text: the sessions are
read at bench time from where they are (`sessions.json` names repository, branch, path and blob), the labels name
units by record uuid and sentence hash, the questions and answers are written in our own words.

Where the transcripts are looked for, in order: `$SUBCOG_HELDOUT_DIR/<name>.jsonl`, then the blob in a git mirror
of the repository (`$SUBCOG_MIRROR_DIR/<owner>+<repo>/repo`, the layout of a `fetch`ed snapshot). Each is checked against its
git blob id. DevMemBench: `$SUBCOG_DEVMEMBENCH_DIR/{sessions,questions}.json`, else the same mirror of
prosperitypirate/opencode-memory (benchmark/src/dataset, MIT).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

__all__ = ["HeldOutSession", "Question", "load_sessions", "load_questions", "devmembench", "HERE"]

HERE = Path(__file__).resolve().parent / "heldout"
_URN = re.compile(r"subcog://\S+")
DEVMEM_REPO = "prosperitypirate/opencode-memory"
DEVMEM_PATH = "benchmark/src/dataset"


@dataclass
class HeldOutSession:
    """One labelled transcript of a held-out project."""

    name: str
    project: str
    path: Path
    labels: dict = field(default_factory=dict)  # (uuid, sentence_sha) -> [label rows, in unit order]


@dataclass
class Question:
    """A question a developer asks later; `keys`: groups of alternatives that must all appear in an answer."""

    text: str
    project: str
    keys: list[list[str]]
    session: str | None = None
    kind: str = ""

    @property
    def answerable(self) -> bool:
        return bool(self.keys)

    def held_by(self, text: str) -> bool:
        """Every key group has an alternative in `text` (case-insensitive, markdown ticks ignored, memory URNs left
        out: their random ids hold digits and letters a short key such as "45" may match)."""
        hay = " ".join(_URN.sub(" ", text).replace("`", "").lower().split())
        return bool(self.keys) and all(any(k.lower() in hay for k in group) for group in self.keys)


def _mirror(repository: str) -> Path:
    root = os.environ.get("SUBCOG_MIRROR_DIR")
    return Path(root) / repository.replace("/", "+") / "repo" if root else Path("/nonexistent")


def _blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _fetch(entry: dict, cache: Path) -> Path | None:
    """The session's transcript as a local file (checked against its blob id), or None when it is not reachable."""
    given = os.environ.get("SUBCOG_HELDOUT_DIR")
    if given and (Path(given) / f"{entry['name']}.jsonl").is_file():
        path = Path(given) / f"{entry['name']}.jsonl"
        data = path.read_bytes()
    else:
        repo = _mirror(entry["repository"])
        if not repo.is_dir():
            return None
        got = subprocess.run(["git", "-C", str(repo), "cat-file", "blob", entry["blob"]], capture_output=True)
        if got.returncode != 0:
            return None
        data = got.stdout
        path = cache / f"{entry['name']}.jsonl"
        path.write_bytes(data)
    if _blob_id(data) != entry["blob"]:
        raise ValueError(f"{entry['name']}: the transcript found is not blob {entry['blob']}")
    return path


def load_sessions(cache: Path, folder: Path = HERE) -> list[HeldOutSession]:
    """The labelled sessions of `folder` (its `sessions.json` and `labels/`; by default the held-out ones) that can
    be found (see the module docstring); [] when none."""
    out = []
    for entry in json.loads((folder / "sessions.json").read_text(encoding="utf-8")):
        path = _fetch(entry, cache)
        if path is None:
            continue
        labels: dict = defaultdict(list)
        for line in (folder / "labels" / f"{entry['name']}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            labels[(row["uuid"], row["sentence_sha"])].append(row)
        out.append(HeldOutSession(entry["name"], entry["project"], path, dict(labels)))
    return out


def load_questions() -> list[Question]:
    """The questions written from the held-out sessions (with `session`) and those nothing answers (no keys)."""
    out = []
    for line in (HERE / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        out.append(Question(row["q"], row["project"], row["keys"], row.get("session")))
    return out


def _devmem_files() -> tuple[str, str] | None:
    given = os.environ.get("SUBCOG_DEVMEMBENCH_DIR")
    if given:
        base = Path(given)
        if (base / "sessions.json").is_file():
            return ((base / "sessions.json").read_text(encoding="utf-8"),
                    (base / "questions.json").read_text(encoding="utf-8"))
    repo = _mirror(DEVMEM_REPO)
    if not repo.is_dir():
        return None
    texts = []
    for name in ("sessions.json", "questions.json"):
        got = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{DEVMEM_PATH}/{name}"], capture_output=True)
        if got.returncode != 0:
            return None
        texts.append(got.stdout.decode("utf-8"))
    return texts[0], texts[1]


def devmembench(out_dir: Path) -> tuple[list[tuple[str, Path]], list[Question]] | None:
    """DevMemBench's 25 sessions written as Claude Code transcripts in `out_dir` ((name, path) in order) and its
    200 questions with our answer keys; None when the data set is not reachable."""
    files = _devmem_files()
    if files is None:
        return None
    sessions, questions = json.loads(files[0]), json.loads(files[1])
    keys = json.loads((HERE / "devmembench_keys.json").read_text(encoding="utf-8"))
    written = []
    for s in sessions:
        name = f"devmem-{s['sessionId']}"
        day = datetime.fromisoformat(s["metadata"]["date"]).replace(tzinfo=timezone.utc, hour=9)
        path = out_dir / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            parent = None
            for i, m in enumerate(s["messages"]):
                record_id = str(hashlib.sha1(f"{name}/{i}".encode()).hexdigest())
                content = m["content"] if m["role"] == "user" else [{"type": "text", "text": m["content"]}]
                fh.write(json.dumps({
                    "type": m["role"], "uuid": record_id, "parentUuid": parent, "sessionId": name,
                    "timestamp": (day + timedelta(minutes=i)).isoformat().replace("+00:00", "Z"),
                    "isSidechain": False, "message": {"role": m["role"], "content": content}}) + "\n")
                parent = record_id
        written.append((name, path))
    qs = [Question(q["question"], "devmembench", keys.get(q["questionId"], []), None, q["questionType"])
          for q in questions]
    return written, qs
