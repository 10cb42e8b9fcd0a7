"""bench/capture/train_grouping.py: a TRAINING repeat is counted as `bench_heldout` counts a held-out one (every
labelled fact of a memory already held by an earlier memory of its session), an extra copy per fact whatever a memory
holds beside it, and the 18 sessions' memories are read from a real store in the order they were stored."""
from __future__ import annotations

import json

from bench.capture.heldout import HeldOutSession
from bench.capture.label_units import session_units
from bench.capture.bench_heldout import evaluate
from bench.capture.train_grouping import repeats, store_memories
from subcog_store.store import Store

CAUSE = "The upload worker fails because it reads S3_BUCKET_URL at import time, before the settings load."
SAID_AGAIN = "Reading S3_BUCKET_URL at import time is what broke the upload worker on start-up."
FIX = "The deploy job pins the worker image to the API image's digest, because the two must ship together."


def session(tmp_path, texts: list[str], facts: list[str | None]) -> HeldOutSession:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"type": "assistant", "uuid": f"a{i}", "sessionId": "s", "isSidechain": False,
                                        "message": {"role": "assistant", "content": [{"type": "text", "text": t}]}})
                            + "\n" for i, t in enumerate(texts)))
    labels = {}
    for (_, _, t, u), fact in zip(session_units(path), facts):
        labels[(t.uuid, u.sha)] = [{"label": int(fact is not None), "fact": fact}]
    return HeldOutSession("s", "p", path, labels)


def test_a_memory_whose_every_fact_was_held_before_is_a_repeat_one_with_a_new_fact_is_not(tmp_path):
    s = session(tmp_path, [CAUSE, SAID_AGAIN, FIX], ["f1", "f1", "f2"])
    memories = [{"session_id": "s", "content": c, "status": "active"}
                for c in (CAUSE, SAID_AGAIN, f"{SAID_AGAIN}\n{FIX}", FIX)]
    got = repeats(memories, [s])
    assert [(older, newer) for _, older, newer in got] == [(CAUSE, SAID_AGAIN), (f"{SAID_AGAIN}\n{FIX}", FIX)]
    assert repeats([{"session_id": "other", "content": CAUSE}] * 2, [s]) == []   # another session's memories
    # as bench_heldout counts them: 2 repeats; per fact, f1 is held by three memories and f2 by two (3 extra copies)
    f = evaluate({"captures": [], "memories": memories, "searches": [], "prompts": []}, [s], [])
    assert (f.stored, f.facts_found, f.repeated, f.copies) == (4, 2, 2, 3)
    # the restatement grouped with a new fact is no repeat, and still an extra copy of f1
    grouped = [{"session_id": "s", "content": c, "status": "active"} for c in (CAUSE, f"{SAID_AGAIN}\n{FIX}")]
    f = evaluate({"captures": [], "memories": grouped, "searches": [], "prompts": []}, [s], [])
    assert (f.repeated, f.copies) == (0, 1)


def test_the_stores_memories_are_read_in_the_order_they_were_stored(tmp_path, tiny_embedder):
    for project, texts in (("b", [FIX, CAUSE]), ("a", [SAID_AGAIN])):
        (tmp_path / project).mkdir()
        with Store(tmp_path / project / "memories.db", embedder=tiny_embedder, environ={}, fetch_model=False) as st:
            for t in texts:
                st.capture(t, "learnings", session_id=f"session-{project}")
    got = store_memories(tmp_path)
    assert [(m["session_id"], m["content"]) for m in got] == [("session-a", SAID_AGAIN), ("session-b", FIX),
                                                             ("session-b", CAUSE)]
    assert all(m["status"] == "active" and m["successor_id"] is None for m in got)
