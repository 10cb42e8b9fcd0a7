"""bench/capture/train_repeats.py: each pair of memories a training session stored is given the cause this
checkout's session-repeat rule keeps them apart for, and the counts add up."""
from __future__ import annotations

from collections import Counter

from bench.capture.train_repeats import cause, render

FOUND = "The default CORS allow-list of the API is localhost:5173 and localhost:4173, but Vite started on 5177."
SUMMED = "Default CORS allow-list only had localhost:5173/localhost:4173."


def test_each_pair_gets_the_cause_the_rule_keeps_it_apart_for():
    assert cause(FOUND, SUMMED, 0.73, False, None) == "under the floor"
    assert cause(FOUND, SUMMED, 0.73, True, None) == "repeat"   # a summary's line: from SUMMARY_REPEAT
    assert cause("The billing service uses a 30 second timeout for its upstream calls.",
                 "The auth service uses a 5 second timeout for its upstream calls.", 0.80, False, None) == \
        "not the same subject"
    assert cause("The cache TTL in config/cache.yaml is 5 minutes.",
                 "The cache TTL in config/cache.yaml is 10 minutes.", 0.95, False, None) == "guard veto: number"
    lead = "Summary: the config merge is guarded in the build pipeline through 3 layers of checks:"
    assert cause(f"{lead} A schema check rejects unknown keys.", f"{lead} A path filter skips vendor/.", 0.93, False,
                 None) == "shared lead-in"


def test_the_report_counts_every_pair_once_by_band():
    pairs = [{"session": "s", "sim": s, "older": "a", "newer": "b", "sources": "assistant > summary", "facts": "11",
              "cause": c} for s, c in ((0.62, "under the floor"), (0.72, "repeat"), (0.9, "guard veto: negation"))]
    report = render(Counter({"stored": 10, "traced": 9, "facts held": 6, "fact units": 20, "fact units held": 8}),
                    pairs, examples=1)
    assert "precision 0.667" in report and "unit recall 0.400" in report
    assert "cosine 0.60-0.70: 1 pairs" in report and "cosine 0.85-1.00: 1 pairs" in report
    assert report.count("--- s ") == 1 and "0.900" in report
