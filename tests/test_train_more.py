"""bench/capture/train_more: more training sessions read from a mirror as the held-out ones are, their labels
well formed, and a stored memory's stale mark taken from the units it comes from."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bench.capture.bench_heldout import Labelled
from bench.capture.heldout import load_sessions
from bench.capture.label_units import session_units
from bench.capture.train_stale import CANDIDATES, MORE, stale_from_units

NAMESPACES = {"decisions", "patterns", "learnings", "context", "tech-debt", "blockers", "apis", "config", "security",
              "performance", "testing"}


def _transcript(path: Path) -> None:
    records = [
        {"type": "user", "uuid": "u1", "sessionId": "s",
         "message": {"role": "user", "content": "Why does deploy fail?"}},
        {"type": "assistant", "uuid": "a1", "sessionId": "s", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "The deploy script ships the local compose file to the box.\n\n"
                                     "All 20 tests pass on the branch right now."}]}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _mirror(root: Path, transcript: Path) -> str:
    repo = root / "owner+name" / "repo"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    return subprocess.run(["git", "--git-dir", str(repo), "hash-object", "-w", str(transcript)], check=True,
                          capture_output=True, text=True).stdout.strip()


def test_a_folder_of_sessions_is_read_from_the_mirror_with_its_labels(tmp_path, monkeypatch):
    transcript = tmp_path / "t.jsonl"
    _transcript(transcript)
    blob = _mirror(tmp_path / "mirror", transcript)
    folder = tmp_path / "more"
    (folder / "labels").mkdir(parents=True)
    entry = {"name": "demo-session", "project": "demo", "repository": "owner/name", "blob": blob}
    (folder / "sessions.json").write_text(json.dumps([entry]), encoding="utf-8")
    rows = [{"uuid": t.uuid, "sentence_sha": u.sha, "label": n % 2} for n, _, t, u in session_units(transcript)]
    (folder / "labels" / "demo-session.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("SUBCOG_MIRROR_DIR", str(tmp_path / "mirror"))
    monkeypatch.delenv("SUBCOG_HELDOUT_DIR", raising=False)
    (tmp_path / "cache").mkdir()
    [session] = load_sessions(tmp_path / "cache", folder)
    assert (session.name, session.project) == ("demo-session", "demo")
    assert session.path.read_bytes() == transcript.read_bytes() and len(session.labels) == len(rows) == 3
    entry["blob"] = "0" * 40   # a blob the mirror does not hold: the session is not found, nothing raised
    (folder / "sessions.json").write_text(json.dumps([entry]), encoding="utf-8")
    assert load_sessions(tmp_path / "cache", folder) == []


def test_a_memory_is_stale_only_when_it_holds_no_lasting_fact():
    units = [Labelled("The deploy script ships the local compose file to the box.", 1, "f1", None),
             Labelled("All 20 tests pass on the branch right now.", 0, None, "status"),
             Labelled("The compose file sets no public URL for the service.", 0, None, "corrected")]
    assert stale_from_units("All 20 tests pass on the branch right now.", units) == "status"
    assert stale_from_units("The compose file sets no public URL for the service.", units) == "corrected"
    both = "The deploy script ships the local compose file to the box.\nAll 20 tests pass on the branch right now."
    assert stale_from_units(both, units) is None
    assert stale_from_units("Something nobody said in the session at all.", units) is None


def test_the_candidates_match_the_forms_they_were_written_for():
    hits = {name: p for name, p in CANDIDATES.items()}
    assert hits["todo-lead"].search("TODO: wire the retry into the client")
    assert not hits["todo-lead"].search("The todo list lives in TODO.md")
    assert hits["could-not"].search("The e2e suite could not run (API key missing)")
    assert hits["cjk-unverified"].search("動作は要確認です") and hits["cjk-unverified"].search("배포 결과 확인 불가")
    assert hits["not-yet"].search("The pypi environment doesn't exist yet")
    assert hits["hedged"].search("The 500s are likely from the resolver")


def test_no_held_out_project_is_trained_on():
    held_out = {e["repository"] for e in json.loads((MORE.parent / "heldout" / "sessions.json").read_text())}
    more = {e["repository"] for e in json.loads((MORE / "sessions.json").read_text(encoding="utf-8"))}
    assert more and held_out and not more & (held_out | {"prosperitypirate/opencode-memory"})


def test_every_train_more_label_row_is_well_formed():
    sessions = json.loads((MORE / "sessions.json").read_text(encoding="utf-8"))
    assert sessions
    for entry in sessions:
        rows = [json.loads(line) for line in (MORE / "labels" / f"{entry['name']}.jsonl").read_text().splitlines()]
        assert [r["n"] for r in rows] == list(range(1, len(rows) + 1))
        for r in rows:
            assert r["label"] in (0, 1) and r["source"] in ("user", "assistant", "summary")
            if r["label"] == 1:
                assert r["fact"] and r["namespace"] in NAMESPACES and "stale" not in r
            else:
                assert r.get("stale") in (None, "status", "corrected") and "fact" not in r
        assert entry["licence"] in ("MIT", "Apache-2.0") and len(entry["blob"]) == 40
