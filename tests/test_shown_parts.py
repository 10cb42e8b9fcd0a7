"""A long memory in the prompt hook's line: the parts that hold the prompt's words, not its first characters
(through the real hook with the real model: test_recall.py)."""
from __future__ import annotations

from subcog_store.recall import inject
from subcog_store.text.shown_parts import JOIN, answering_line, parts
from subcog_store.text.textsim import significant_tokens

WIDTH = inject.LINE_CHARS
GAPS = ("Potential gaps in the metadata design:\n"
        "- FileMetadata.version is not bumped: it stays at 'v1' despite the structural addition of the field.\n"
        "- The field is additive and optional, but the version field becomes useless for feature detection.\n"
        "- If a future change needs to know whether a client supports versioning, nothing in the metadata says.\n"
        "- The upload worker retries a failed chunk four times with an exponential back-off capped at 30 seconds.\n"
        "- The encryptionMode pattern (optional field plus default) is followed but documented nowhere.")
PARAGRAPH = ("The release pipeline builds the desktop app for three platforms and signs each artefact. "
             "It uploads the installers to the staging bucket and runs the smoke tests against them. "
             "The Windows installer is signed with the EV certificate kept in the hardware token. "
             "Nightly builds skip the notarisation step, which takes twelve minutes on the Apple service.")


def shown(text: str, prompt: str) -> str:
    return answering_line(text, significant_tokens(prompt), WIDTH)


def test_a_short_memory_is_shown_whole_and_a_long_one_without_a_match_as_before():
    assert shown("We use Redis  for\nthe cache.", "what cache?") == "We use Redis for the cache."
    first = " ".join(GAPS.split())[: WIDTH - 1] + "…"
    assert shown(GAPS, "Write a haiku about autumn leaves.") == first
    assert answering_line(GAPS, set(), WIDTH) == first


def test_the_item_that_answers_is_shown_after_the_lists_lead_in():
    assert GAPS.index("retries") > WIDTH   # past today's cut
    out = shown(GAPS, "How many times does the upload worker retry a failed chunk?")
    assert out.startswith("Potential gaps in the metadata design:" + JOIN + "The upload worker retries a failed chunk "
                          "four times with an exponential back-off capped at 30 seconds. The encryptionMode")
    assert len(out) == WIDTH and out.endswith("…")   # the room left: the item after it, cut as today


def test_the_sentences_that_hold_the_words_are_shown_in_their_order():
    out = shown(PARAGRAPH, "Which certificate signs the Windows installer, and how long does notarisation take?")
    assert out == ("The Windows installer is signed with the EV certificate kept in the hardware token. "
                   "Nightly builds skip the notarisation step, which takes twelve minutes on the Apple service.")
    out = shown(PARAGRAPH, "Which platforms does the release pipeline build, and what takes twelve minutes?")
    assert out == ("The release pipeline builds the desktop app for three platforms and signs each artefact." + JOIN +
                   "Nightly builds skip the notarisation step, which takes twelve minutes on the Apple service.")


def test_parts_that_do_not_fit_give_way_to_the_next_best_and_one_too_long_is_cut():
    best = "Alpha beta gamma " + "words " * 21 + "end."
    other = "Unrelated words only here, nothing in this sentence holds anything the prompt asked about."
    too_long = "Delta " + "more words " * 9 + "end."
    short = "Delta is short."
    out = shown(" ".join([best, other, too_long, short]), "alpha beta gamma delta")
    assert out == best + JOIN + short and len(best + JOIN + too_long) > WIDTH
    long_one = "Zeta " + "x" * 300 + ". Short tail sentence here for padding."
    cut = shown(long_one, "zeta")
    assert len(cut) == WIDTH and cut.endswith("…") and cut.startswith("Zeta ")


def test_parts_are_sentences_and_list_items_and_secrets_stay_redacted():
    pieces, is_list = parts(GAPS)
    assert is_list and len(pieces) == 6 and pieces[4].startswith("The upload worker")
    pieces, is_list = parts(PARAGRAPH)
    assert not is_list and len(pieces) == 4
    assert parts("Use closer stops, e.g. linear-gradient(a, b) for the status. Next one.")[0] == [
        "Use closer stops, e.g. linear-gradient(a, b) for the status.", "Next one."]   # no end at "e.g. x"
    secret = "glpat-" + "FAKEa1b2c3d4e5f6g7h8"
    out = shown(PARAGRAPH + f" The deploy token for the Windows signing job is {secret}.", "Windows deploy token")
    assert secret not in out and "[REDACTED]" in out
