"""bench/capture/explain_heldout.py: a held-out repeat is put in the group its cause fits (vectors from a tiny
deterministic embedder: one fixed vector per text)."""
from __future__ import annotations

import numpy as np

from bench.capture.explain_heldout import cause, lines, mostly_cjk


def embedder(table: dict[str, list[float]]):
    """embed_batch over a fixed table: each text's unit vector."""
    def embed(texts: list[str]) -> np.ndarray:
        rows = np.array([table[t] for t in texts], dtype=np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return embed


def test_a_list_memory_reads_as_its_lead_in_before_each_item():
    assert lines("Ports in use:\n- api on 8080\n- db on 5432") == ["Ports in use: api on 8080",
                                                             "Ports in use: db on 5432"]
    assert lines("One sentence only.") == ["One sentence only."]
    assert lines("- first item\n- second item") == ["first item", "second item"]


def test_cjk_share_decides_the_language_side():
    assert mostly_cjk("データベースは PostgreSQL を使う")
    assert not mostly_cjk("The database is PostgreSQL (データ)")


def test_each_repeat_falls_in_the_group_of_its_cause():
    same = "The upload failures come from the proxy body limit in nginx.conf."
    reworded = "Uploads fail because of the proxy body limit set in nginx.conf."
    other = "The team reviews pull requests on Fridays."
    listed = "Causes found:\n- " + reworded + "\n- The retry loop hides the error."
    table = {same: [1, 0, 0], reworded: [1, 0.05, 0], other: [0, 1, 0], listed: [0.5, 0.5, 0.7],
             "Causes found: " + reworded: [1, 0.05, 0], "Causes found: The retry loop hides the error.": [0, 0, 1],
             "データベースは PostgreSQL を使う": [1, 0, 0],
             "The session TTL is 5 minutes.": [0, 0.2, 1], "The session TTL is 10 minutes.": [0, 0.21, 1]}
    embed = embedder(table)
    assert cause(same, reworded, embed)[0] == "rule-whole"
    assert cause(same, listed, embed)[0] == "rule-line"      # whole list at ~0.5, one item at ~1.0
    assert cause(same, other, embed) == ("below-floor", 0.0)
    assert cause("The session TTL is 5 minutes.", "The session TTL is 10 minutes.", embed)[0] == "declined"
    assert cause(same, "データベースは PostgreSQL を使う", embed)[0] == "cross-language"
