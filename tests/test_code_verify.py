"""Memories checked against the code they cite (code/record.py, code/verify.py, code/review.py), on a small git
repository with a history built here (tests/code_repo.py): a changed config value, a renamed function, a moved
function, a deleted file, a renamed file, an uncommitted edit; memories captured at the first commit."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import code_repo
from conftest import TinyEmbedder
from subcog_store.clock import iso
from subcog_store.code import review
from subcog_store.code.record import cite_captured, cite_existing
from subcog_store.code.verify import check_project
from subcog_store.db import citations
from subcog_store.review import reverse

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
DOMAIN = "proj"


def later() -> float:
    return time.monotonic() + 3600   # no deadline: a check that ran out of time is tested below


def age(root: Path, seconds: float = 60) -> None:
    """Every file modified `seconds` ago (a check trusts a file's size and mtime only once it is older than its
    racy window: here without waiting)."""
    past = time.time() - seconds
    for here, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            os.utime(os.path.join(here, name), (past, past), follow_symlinks=False)


def capture_all(store, clock) -> dict[str, str]:
    clock.now = code_repo.EARLY
    return {key: store.capture(text, ns, DOMAIN).memory_id for key, (ns, text) in code_repo.MEMORIES.items()}


def marks_by_key(store, ids: dict[str, str]) -> dict[str, str]:
    marks = citations.marks(store.con, ids.values())
    return {key: marks[mid] for key, mid in ids.items() if mid in marks}


@pytest.fixture
def code_store(make_store):
    return make_store(embedder_=TinyEmbedder())


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    code_repo.init(root)
    return root


def test_every_stale_memory_is_flagged_with_its_reason_and_no_current_one(code_store, clock, repo):
    ids = capture_all(code_store, clock)
    cited = cite_captured(code_store, list(ids.values()), repo, DOMAIN, later())
    assert cited.memories == len(ids) and cited.marked == [] and cited.complete
    assert cited.commits == [code_repo.git(repo, "rev-parse", "HEAD").strip()]
    assert citations.of_memory(code_store.con, ids["pgbouncer"])["citations"] == []   # cites no code
    code_repo.advance(repo)
    report = check_project(code_store, repo, DOMAIN, later())
    assert marks_by_key(code_store, ids) == code_repo.STALE
    assert sorted(report.marked) == sorted(ids[k] for k in code_repo.STALE) and report.complete
    moved = citations.of_memory(code_store.con, ids["money"])["citations"]
    assert [(c["kind"], c["path"], c["problem"]) for c in moved] == [("symbol", "lib/format.py", None)]


def test_memories_stored_before_are_cited_at_the_commit_they_were_written(code_store, clock, tmp_path):
    root = tmp_path / "repo"
    code_repo.build(root)
    clock.now = code_repo.COMMIT_TIMES[-1] + 86400
    ids = {key: code_store.capture(text, ns, DOMAIN, created_at=iso(code_repo.EARLY)).memory_id
           for key, (ns, text) in code_repo.MEMORIES.items()}
    report = cite_existing(code_store, root, DOMAIN, later())
    first = code_repo.git(root, "rev-list", "--max-parents=0", "HEAD").strip()
    assert report.commits == [first] and report.memories == len(ids)
    assert marks_by_key(code_store, ids) == code_repo.STALE
    assert cite_existing(code_store, root, DOMAIN, later()).memories == 0      # once given, not again


def test_a_check_reads_only_the_files_changed_since_the_last(code_store, clock, repo):
    ids = capture_all(code_store, clock)
    cite_captured(code_store, list(ids.values()), repo, DOMAIN, later())
    code_repo.advance(repo)
    age(repo)
    first = check_project(code_store, repo, DOMAIN, later())
    assert first.read > 0
    again = check_project(code_store, repo, DOMAIN, later())
    assert (again.read, again.marked, again.cleared) == (0, [], [])
    app = repo / "config/app.yaml"
    app.write_text(app.read_text().replace("session_ttl: 120", "session_ttl: 90"))   # the memory holds again
    third = check_project(code_store, repo, DOMAIN, later())
    assert third.read == 1 and third.cleared == [ids["ttl"]]
    assert "ttl" not in marks_by_key(code_store, ids)


def test_a_same_size_edit_right_after_a_check_is_still_seen(code_store, clock, repo, monkeypatch):
    """Same size, mtime within the racy window: the file is read again (no sleep: the window is what matters).
    The checks run 1 s after the file's mtime by a fake wall clock: on the real one, a busy machine put the first
    check more than RACY_NS after the file was written, and the window was missed."""
    from subcog_store.code import verify

    app = repo / "config/app.yaml"
    monkeypatch.setattr(verify, "wall_clock_ns", lambda: app.stat().st_mtime_ns + 1_000_000_000)
    ids = capture_all(code_store, clock)
    cite_captured(code_store, list(ids.values()), repo, DOMAIN, later())
    check_project(code_store, repo, DOMAIN, later())
    stat = app.stat()
    app.write_text(app.read_text().replace("session_ttl: 90", "session_ttl: 45"))
    os.utime(app, ns=(stat.st_atime_ns, stat.st_mtime_ns))     # same size, same mtime
    check_project(code_store, repo, DOMAIN, later())
    assert marks_by_key(code_store, ids)["ttl"] == "`session_ttl` is 45 in config/app.yaml, the memory says 90"


def test_a_check_past_its_deadline_stops_and_says_so(code_store, clock, repo):
    ids = capture_all(code_store, clock)
    cite_captured(code_store, list(ids.values()), repo, DOMAIN, later())
    code_repo.advance(repo)
    report = check_project(code_store, repo, DOMAIN, time.monotonic() - 1)
    assert not report.complete and report.read == 0
    assert check_project(code_store, repo, DOMAIN, later()).complete


def test_review_still_true_new_fact_and_reverse(code_store, clock, repo):
    ids = capture_all(code_store, clock)
    cite_captured(code_store, list(ids.values()), repo, DOMAIN, later())
    code_repo.advance(repo)
    check_project(code_store, repo, DOMAIN, later())
    listed = review.listed(code_store, DOMAIN)
    assert {r["id"] for r in listed} == {ids[k] for k in code_repo.STALE}
    assert all(r["urn"].startswith(f"subcog://{DOMAIN}/") for r in listed)

    done = review.still_true(code_store, ids["docs"])
    assert done["claims_dropped"] == 1 and "docs" not in marks_by_key(code_store, ids)
    check_project(code_store, repo, DOMAIN, later(), everything=True)
    assert "docs" not in marks_by_key(code_store, ids)              # not flagged again for the same reason
    with pytest.raises(Exception, match="not marked"):
        review.still_true(code_store, ids["pool"])

    done = review.new_fact(code_store, ids["ttl"], "`session_ttl` is 120 in config/app.yaml.", repo)
    old = code_store.get(ids["ttl"])
    assert old.status == "superseded" and done["new"].endswith(old.successor_id)
    new_code = citations.of_memory(code_store.con, old.successor_id)
    assert ("value", "session_ttl", "120") in [(c["kind"], c["name"], c["value"]) for c in new_code["citations"]]
    assert new_code["outdated"] is None
    reverse(code_store, done["decision_id"])
    assert code_store.get(ids["ttl"]).status == "active"


def test_search_ranks_a_marked_memory_below_current_ones(code_store, clock, repo):
    clock.now = code_repo.EARLY
    stale = code_store.capture("`session_ttl` is 90 in config/app.yaml for the checkout sessions.", "config",
                               DOMAIN, importance=1.0).memory_id
    current = code_store.capture("The checkout sessions expire when idle; see config/app.yaml.", "config",
                                 DOMAIN, importance=0.1).memory_id
    cite_captured(code_store, [stale, current], repo, DOMAIN, later())
    before = [h.memory.id for h in code_store.search("session_ttl checkout sessions config", domain=DOMAIN).hits]
    assert before[0] == stale
    code_repo.advance(repo)
    check_project(code_store, repo, DOMAIN, later())
    hits = code_store.search("session_ttl checkout sessions config", domain=DOMAIN).hits
    assert [h.memory.id for h in hits] == [current, stale]
    assert hits[1].code_mark.startswith("`session_ttl` is 120") and hits[1].to_dict()["possibly_outdated"]


def test_the_session_start_index_leaves_out_what_the_code_contradicts(code_store, clock, repo, monkeypatch):
    from subcog_store.claude_code.recall_hooks import session_start

    monkeypatch.setenv("SUBCOG_HOOK_DOMAIN", DOMAIN)
    ids = capture_all(code_store, clock)
    cite_captured(code_store, list(ids.values()), repo, DOMAIN, later())
    code_repo.advance(repo)
    db = Path(code_store.path)
    out = session_start({"session_id": "s1", "source": "startup", "cwd": str(repo)}, db,
                        store_factory=lambda _: _reopen(code_store, db))
    assert marks_by_key(code_store, ids) == code_repo.STALE          # checked at session start
    for key, (_, text) in code_repo.MEMORIES.items():
        assert (text[:40] in out) is (key not in code_repo.STALE), key


def _reopen(store, db):
    from subcog_store.store import Store

    return Store(db, embedder=TinyEmbedder(), clock=store.clock, environ={})


# -- bad input: the check answers, concludes nothing it cannot know, and says why in the log ----------------------
def test_a_project_outside_git(code_store, clock, tmp_path):
    root = tmp_path / "plain"
    code_repo.write(root, code_repo.FILES_1)
    ids = capture_all(code_store, clock)
    report = cite_captured(code_store, list(ids.values()), root, DOMAIN, later())
    assert report.commits == [] and report.cited == len(ids) - 1
    (root / "lib/legacy_export.py").unlink()
    app = root / "config/app.yaml"
    app.write_text(app.read_text().replace("session_ttl: 90", "session_ttl: 120"))
    check_project(code_store, root, DOMAIN, later())
    found = marks_by_key(code_store, ids)
    assert found == {"ttl": code_repo.STALE["ttl"], "export": "lib/legacy_export.py no longer exists"}


def test_a_session_at_the_file_system_root_or_home_has_no_project(code_store, clock, tmp_path, monkeypatch):
    """A session started in / or in the home directory: nothing is walked or searched for citations."""
    from subcog_store.code.record import cite_new
    from subcog_store.code.tree import code_root

    home = tmp_path / "home"
    (home / "work" / "proj").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    assert code_root("/") is None and code_root(home) is None
    assert code_root(home / "work" / "proj") == (home / "work" / "proj").resolve()
    ids = capture_all(code_store, clock)
    assert cite_new(code_store, list(ids.values()), "/", DOMAIN, 60.0) is None
    assert cite_new(code_store, list(ids.values()), str(home), DOMAIN, 60.0) is None
    assert citations.marks(code_store.con, ids.values()) == {}


def test_a_detached_head_and_a_shallow_clone(code_store, clock, tmp_path, caplog):
    origin = tmp_path / "origin"
    code_repo.build(origin)
    code_repo.git(origin, "commit", "-qam", "five", when=code_repo.COMMIT_TIMES[-1] + 60)
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow)], check=True,
                   capture_output=True)
    code_repo.git(shallow, "checkout", "-q", "--detach", "HEAD")
    clock.now = code_repo.COMMIT_TIMES[-1] + 86400
    ids = {key: code_store.capture(text, ns, DOMAIN, created_at=iso(code_repo.EARLY)).memory_id
           for key, (ns, text) in code_repo.MEMORIES.items()}
    report = cite_existing(code_store, shallow, DOMAIN, later())      # the history before the clone is not there
    assert report.complete and report.commits == [code_repo.git(shallow, "rev-parse", "HEAD").strip()]
    found = marks_by_key(code_store, ids)
    assert found["ttl"] == code_repo.STALE["ttl"] and found["log"] == code_repo.STALE["log"]
    assert "export" not in found     # its file was gone before the clone: nothing cited, nothing flagged


def test_huge_binary_looping_and_outside_files_conclude_nothing(code_store, clock, repo, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="subcog_store.code")
    (repo / "data").mkdir()
    (repo / "data/big.csv").write_text("header,session_ttl\n" + "1,90\n" * 400_000)
    (repo / "data/blob.bin").write_bytes(b"\0\1\2BLOB_MARKER\0" * 100)
    os.symlink("loop.txt", repo / "data/loop.txt")
    clock.now = code_repo.EARLY
    texts = ["data/big.csv has a session_ttl column.", "data/blob.bin is the fixture blob.",
             "data/loop.txt is a link.", "See /etc/passwd and ../outside.txt and ~/notes.txt for it."]
    ids = [code_store.capture(t, "context", DOMAIN).memory_id for t in texts]
    cite_captured(code_store, ids, repo, DOMAIN, later())
    cited = {t: [(c["kind"], c["path"]) for c in citations.of_memory(code_store.con, i)["citations"]]
             for t, i in zip(texts, ids)}
    assert ("file", "data/big.csv") in cited[texts[0]] and ("file", "data/blob.bin") in cited[texts[1]]
    assert cited[texts[3]] == []
    report = check_project(code_store, repo, DOMAIN, later(), everything=True)
    assert report.complete and citations.marks(code_store.con, ids) == {}
    log = caplog.text
    assert "data/big.csv is too large to check" in log
    assert "points outside the project" in log
    assert "ELOOP" in log or "cannot be read" in log


def test_a_read_never_leaves_the_project_through_a_linked_folder_or_file(tmp_path):
    from subcog_store.code.tree import WorkingTree

    outside, root = tmp_path / "outside", tmp_path / "proj"
    (outside / "conf").mkdir(parents=True)
    (outside / "conf/app.yaml").write_text("session_ttl: 90\n")
    (root / "inner").mkdir(parents=True)
    (root / "inner/real.yaml").write_text("session_ttl: 120\n")
    os.symlink(outside / "conf", root / "linked")
    os.symlink(outside / "conf/app.yaml", root / "inner/app.yaml")
    os.symlink("real.yaml", root / "inner/alias.yaml")
    tree = WorkingTree(root, later())
    assert "points outside the project" in tree.read("linked/app.yaml").problem
    assert "points outside the project" in tree.read("inner/app.yaml").problem
    assert "points outside the project" in tree.read("inner/../../outside/conf/app.yaml").problem
    assert tree.read("inner/alias.yaml").text == "session_ttl: 120\n" == tree.read("inner/real.yaml").text
    assert tree.read("inner/none.yaml").missing and tree.read("nowhere/none.yaml").missing


def test_a_memory_citing_a_thousand_files(code_store, clock, repo):
    for i in range(1000):
        code_repo.write(repo, {f"gen/m{i}.py": f"VALUE_{i} = {i}\n"})
    clock.now = code_repo.EARLY
    memory = code_store.capture(" ".join(f"gen/m{i}.py" for i in range(1000)), "context", DOMAIN).memory_id
    report = cite_captured(code_store, [memory], repo, DOMAIN, later())
    assert report.citations == 64 and report.complete
    for i in range(1000):
        (repo / f"gen/m{i}.py").unlink()
    check = check_project(code_store, repo, DOMAIN, later())
    assert check.complete and check.read == 64 and citations.marks(code_store.con, [memory])


def test_citations_move_with_their_memory(code_store, clock, repo):
    from subcog_store.maintenance import move_domain

    ids = capture_all(code_store, clock)
    cite_captured(code_store, list(ids.values()), repo, DOMAIN, later())
    moved = move_domain(code_store, DOMAIN, "other")
    assert moved["moved"] == len(ids)
    code_repo.advance(repo)
    check_project(code_store, repo, "other", later())
    assert marks_by_key(code_store, ids) == code_repo.STALE
    assert citations.citing_path(code_store.con, DOMAIN, "config/app.yaml", 10) == []
    decision = code_store.con.execute("select max(id) from dedup_log where decision = 'moved'").fetchone()[0]
    reverse(code_store, decision)
    back = code_store.con.execute("select memory_id, domain from citations where memory_id in "
                                  "(select memory_id from dedup_log where id = ?)", (decision,)).fetchall()
    assert back and {d for _, d in back} == {DOMAIN}
