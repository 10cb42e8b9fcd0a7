"""bench/capture/train_breakdown.py: every candidate the extractor makes of a training session is counted once, as
a finding, a false keep or untraced, and a fact is found only when one of its units is kept."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.capture import bench_capture as bc
from bench.capture.train_breakdown import Breakdown, judge_session, render
from subcog_store.extraction.extract import extract_with, load_scorer
from subcog_store.extraction.transcript import read_assistant_texts

REPO = Path(__file__).resolve().parents[1]
TRAIN = Path(os.environ.get("SUBCOG_SHARED_DIR") or REPO.parent / "shared") / "samples" / "real" / "train"
SESSION = "ohmyposh-issue5992-investigation.jsonl"


@pytest.mark.skipif(not (TRAIN / SESSION).is_file(), reason=f"{TRAIN / SESSION} not present")
def test_each_candidate_of_a_training_session_is_counted_once():
    session = next(s for s in bc.load(TRAIN) if s.file == SESSION)
    scorer = load_scorer()
    out = Breakdown()
    judge_session(session, TRAIN / SESSION, scorer, scorer.threshold, out)
    texts = [t for t in read_assistant_texts(TRAIN / SESSION, include_user=True).texts if not t.is_sidechain]
    made = extract_with(texts, scorer, scorer.threshold)
    assert out.findings + sum(out.false_keeps.values()) + out.untraced == len(made) > 0
    assert 0 < out.facts_found <= out.facts
    assert out.findings > 0 and 0.0 < out.precision <= 1.0
    report = render(out, examples=1)
    assert f"precision {out.precision:.3f}" in report and "## " in report
