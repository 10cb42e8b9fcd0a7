"""Reading the unprocessed part of a Claude Code transcript."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subcog_store.extraction.transcript import ReadResult, TranscriptError, read_assistant_texts

SHARED = Path(os.environ.get("SUBCOG_SHARED_DIR") or Path(__file__).resolve().parents[2] / "shared")
SAMPLES = SHARED / "samples"
needs_samples = pytest.mark.skipif(not SAMPLES.is_dir(), reason=f"{SAMPLES} not present")


def assistant(text: str | list, uuid: str = "u", sidechain: bool = False, **extra) -> dict:
    return {"type": "assistant", "uuid": uuid, "isSidechain": sidechain, "sessionId": "s1",
            "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "assistant", "content": text}, **extra}


def line(record: dict) -> bytes:
    return json.dumps(record).encode() + b"\n"


def write(path: Path, *chunks: bytes) -> Path:
    path.write_bytes(b"".join(chunks))
    return path


def read_all(path: Path, **kw) -> list[str]:
    return [t.text for t in read_assistant_texts(path, **kw).texts]


# --- the samples -------------------------------------------------------------------------------------------

@needs_samples
def test_session_a_main_thread_text_only():
    path = SAMPLES / "transcripts" / "session-a.jsonl"
    r = read_assistant_texts(path)
    assert (r.records, r.bad_lines, r.truncated, r.next_offset) == (17, 0, False, path.stat().st_size)
    assert len(r.texts) == 5
    joined = "\n".join(t.text for t in r.texts)
    assert "The pool is tiny" not in joined  # thinking block
    assert "grep -rn" not in joined and "has been updated" not in joined  # tool_use, tool_result
    assert "Subagent notes" not in joined and "Checkout timeouts: pool size" not in joined  # sidechain, summary
    first = r.texts[0]
    assert first.uuid == "f194b592-63e7-59a1-b69b-04d04a55df94"
    assert first.session_id == "0b7c6a1e-5d2f-4c8e-9a11-aa0000000001"
    assert first.timestamp == "2026-11-20T09:02:28Z" and first.line_no == 5 and not first.is_sidechain
    assert first.text.startswith("The connection pool is capped") and first.text.endswith("I'll update the settings next.")


@needs_samples
def test_session_a_sidechain_on_request():
    r = read_assistant_texts(SAMPLES / "transcripts" / "session-a.jsonl", include_sidechain=True)
    side = [t for t in r.texts if t.is_sidechain]
    assert len(r.texts) == 6 and len(side) == 1 and side[0].text.startswith("Subagent notes")


@needs_samples
def test_session_b_torn_last_line_is_not_consumed():
    path = SAMPLES / "transcripts" / "session-b.jsonl"
    data = path.read_bytes()
    r = read_assistant_texts(path)
    assert not data.endswith(b"\n")
    assert r.next_offset == data.rindex(b"\n") + 1
    assert (r.records, r.bad_lines, len(r.texts)) == (8, 0, 4)
    assert r.texts[-1].text.startswith("Convention: migration files")
    again = read_assistant_texts(path, r.next_offset)
    assert (again.texts, again.records, again.next_offset) == ([], 0, r.next_offset)


@needs_samples
def test_torn_line_completed_by_append(tmp_path):
    path = tmp_path / "b.jsonl"
    shutil.copyfile(SAMPLES / "transcripts" / "session-b.jsonl", path)
    first = read_assistant_texts(path)
    with open(path, "ab") as f:
        f.write(b' use a circuit breaker around the payment client."}]},"uuid":"last"}\n')
    second = read_assistant_texts(path, first.next_offset)
    assert [t.uuid for t in second.texts] == ["last"]
    assert second.texts[0].text.startswith("We decided to use a circuit breaker")
    assert second.next_offset == path.stat().st_size and second.records == 1


@needs_samples
@pytest.mark.parametrize("name", ["coverage-test-fix.jsonl", "python-to-rust-port.jsonl"])
def test_real_transcripts_parse_cleanly(name):
    path = SAMPLES / "real" / name
    r = read_assistant_texts(path)
    assert r.bad_lines == 0 and r.next_offset == path.stat().st_size and r.texts
    assert all(not t.is_sidechain and t.uuid for t in r.texts)


@needs_samples
def test_stepwise_reading_equals_reading_at_once():
    path = SAMPLES / "real" / "python-to-rust-port.jsonl"
    whole = read_assistant_texts(path)
    texts, offset, steps = [], 0, 0
    while True:
        r = read_assistant_texts(path, offset, max_bytes=1)  # one line per call
        texts += [t.text for t in r.texts]
        offset, steps = r.next_offset, steps + 1
        if not r.truncated:
            break
    assert texts == [t.text for t in whole.texts]
    assert offset == whole.next_offset and steps == whole.records


# --- record shapes and bad input ---------------------------------------------------------------------------

def test_content_shapes(tmp_path):
    blocks = [{"type": "thinking", "thinking": "secret plan"}, {"type": "redacted_thinking", "data": "x"},
              {"type": "text", "text": "first"}, {"type": "tool_use", "id": "t", "name": "Bash", "input": {}},
              {"type": "image", "source": {}}, {"type": "text", "text": "second"}, {"type": "text", "text": 5}, "junk"]
    path = write(
        tmp_path / "t.jsonl",
        line(assistant("plain string content", "a")),
        line(assistant(blocks, "b")),
        line(assistant([{"type": "tool_use", "id": "t", "name": "Read", "input": {}}], "c")),
        line(assistant("   ", "d")),
        line({"type": "assistant", "uuid": "e", "message": "not a dict"}),
        line({"type": "user", "message": {"role": "user", "content": "user text"}}),
        line({"type": "summary", "summary": "s"}),
        line({"type": "progress", "data": {}}),
        line({"type": "queue-operation", "operation": "dequeue"}),
        line({"type": "system", "content": "system text"}),
        line({"type": "file-history-snapshot", "snapshot": {}}),
    )
    r = read_assistant_texts(path)
    assert [(t.uuid, t.text) for t in r.texts] == [("a", "plain string content"), ("b", "first\n\nsecond")]
    assert (r.records, r.bad_lines) == (11, 0)


def test_bad_lines_are_counted_and_skipped(tmp_path):
    path = write(
        tmp_path / "t.jsonl",
        line(assistant("before", "1")),
        b"\xff\xfe not utf-8 \x80\n",
        b"{not json}\n",
        b"[1, 2, 3]\n",
        b"\n   \n",
        b'{"type":"assistant","message":{"content":"caf\xc3\xa9"}}\r\n',
        line(assistant("after", "2")),
    )
    r = read_assistant_texts(path)
    assert [t.text for t in r.texts] == ["before", "café", "after"]
    assert (r.records, r.bad_lines, r.next_offset) == (6, 3, path.stat().st_size)
    assert [t.line_no for t in r.texts] == [1, 7, 8]


def test_complete_last_line_without_newline_is_consumed(tmp_path):
    path = write(tmp_path / "t.jsonl", line(assistant("one")), line(assistant("two"))[:-1])
    r = read_assistant_texts(path)
    assert read_all(path) == ["one", "two"] and r.next_offset == path.stat().st_size


@pytest.mark.parametrize("tail", [b'{"type":"assistant","mess', "{\"a\": \"caf\u00e9".encode()[:-1], b"12"])
def test_torn_last_line_waits(tmp_path, tail):
    head = line(assistant("one"))
    path = write(tmp_path / "t.jsonl", head, tail)
    r = read_assistant_texts(path)
    assert (r.next_offset, r.records, r.bad_lines) == (len(head), 1, 0)


def test_start_offset_past_end_restarts(tmp_path):
    path = write(tmp_path / "t.jsonl", line(assistant("only")))
    r = read_assistant_texts(path, start_offset=10_000)
    assert [t.text for t in r.texts] == ["only"] and r.next_offset == path.stat().st_size


def test_missing_or_unreadable_file_raises(tmp_path):
    with pytest.raises(TranscriptError, match="nope.jsonl"):
        read_assistant_texts(tmp_path / "nope.jsonl")
    with pytest.raises(TranscriptError):
        read_assistant_texts(tmp_path)


def test_binary_garbage_does_not_raise(tmp_path):
    data = bytes((i * 7919 + 13) % 256 for i in range(200_000))
    path = write(tmp_path / "garbage.bin", data)
    r = read_assistant_texts(path)
    assert r.texts == [] and 0 <= r.next_offset <= len(data)
    assert r.bad_lines == r.records


def test_overlong_line_is_skipped(tmp_path):
    from subcog_store.extraction.transcript import MAX_LINE

    long = line(assistant("x" * MAX_LINE, "long"))
    path = write(tmp_path / "t.jsonl", long, line(assistant("ok", "short")))
    r = read_assistant_texts(path)
    assert [t.uuid for t in r.texts] == ["short"] and (r.records, r.bad_lines) == (2, 1)
    torn = write(tmp_path / "torn.jsonl", line(assistant("ok")), long[:-1])
    assert read_assistant_texts(torn).next_offset == len(line(assistant("ok")))


# --- compaction summaries ----------------------------------------------------------------------------------

def summary_record(text, uuid: str = "sum", **extra) -> dict:
    return {"type": "user", "uuid": uuid, "isSidechain": False, "isCompactSummary": True,
            "isVisibleInTranscriptOnly": True, "sessionId": "s1", "timestamp": "2026-01-02T00:00:00Z",
            "message": {"role": "user", "content": text}, **extra}


def test_compaction_summaries_come_with_kind_summary(tmp_path):
    head = line(assistant("before", "a1")) + line({"type": "system", "subtype": "compact_boundary"})
    body = line(summary_record("Summary:\n1. Key Technical Concepts:\n   - Redis TTL is 10 minutes"))
    path = write(tmp_path / "t.jsonl", head, body, line(assistant("after", "a2")),
                 line({"type": "summary", "summary": "a session title, not a compaction summary"}),
                 line({"type": "user", "message": {"role": "user", "content": "plain user turn"}}))
    r = read_assistant_texts(path)
    assert [(t.uuid, t.kind) for t in r.texts] == [("a1", "assistant"), ("sum", "summary"), ("a2", "assistant")]
    summary = r.texts[1]
    assert summary.text.startswith("Summary:") and summary.offset == len(head) and summary.line_no == 3
    assert summary.session_id == "s1" and summary.timestamp == "2026-01-02T00:00:00Z" and not summary.is_sidechain
    # resuming at the summary's offset reads it again (same offset semantics as assistant records)
    assert [t.uuid for t in read_assistant_texts(path, summary.offset).texts] == ["sum", "a2"]


def test_summaries_ignore_the_sidechain_setting_and_accept_text_blocks(tmp_path):
    path = write(tmp_path / "t.jsonl",
                 line(summary_record([{"type": "text", "text": "block one"}, {"type": "text", "text": "two"}],
                                     isSidechain=True, type="assistant")),
                 line(summary_record("   ", "empty")),
                 line(dict(summary_record("not one"), isCompactSummary="true")))
    for include in (False, True):
        r = read_assistant_texts(path, include_sidechain=include)
        assert [(t.text, t.kind, t.is_sidechain) for t in r.texts] == [("block one\n\ntwo", "summary", True)]


def test_assistant_text_defaults_are_kept():
    from subcog_store.extraction.transcript import AssistantText

    t = AssistantText("x", None, None, None, 1, False)
    assert (t.offset, t.kind) == (0, "assistant")


TRAIN = SAMPLES / "real" / "train"


@pytest.mark.skipif(not TRAIN.is_dir(), reason=f"{TRAIN} not present")
def test_recorded_compaction_summaries_are_found():
    found = {}
    for path in sorted(TRAIN.glob("*.jsonl")):
        r = read_assistant_texts(path)
        summaries = [t for t in r.texts if t.kind == "summary"]
        assert r.bad_lines == 0 and all(t.uuid and len(t.text) > 5000 for t in summaries)
        if summaries:
            found[path.stem] = len(summaries)
    assert found == {"cipherbox-e2e-test-debugging": 2, "cipherbox-phase12-mfa": 1,
                     "cipherbox-sharing-key-design": 1, "ctxeval-plan-first-remediation": 1}


# --- size and time limits ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def big_transcript(tmp_path_factory) -> Path:
    """About 100 MB: big tool results with an assistant text every 50 lines."""
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    filler = line({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "z" * 8000}]}})
    block = filler * 49
    with open(path, "wb") as f:
        i = 0
        while f.tell() < 100 << 20:
            f.write(block + line(assistant(f"text {i}", f"u{i}")))
            i += 1
    return path


SUBPROCESS_READ = """
import resource, sys, json
from subcog_store.extraction.transcript import read_assistant_texts
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
r = read_assistant_texts(sys.argv[1], max_bytes=1 << 40)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps([len(r.texts), r.next_offset, r.truncated, (peak - base) // 1024]))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB on Linux")
def test_100mb_transcript_streams_in_bounded_memory(big_transcript):
    out = subprocess.run([sys.executable, "-c", SUBPROCESS_READ, str(big_transcript)], check=True,
                         capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    n, offset, truncated, grew_mib = json.loads(out.stdout)
    size = big_transcript.stat().st_size
    assert (offset, truncated) == (size, False) and n > 200
    assert grew_mib < 40, f"peak RSS grew by {grew_mib} MiB"


class TickingClock:
    """A monotonic clock that moves on `step` seconds at every look: the reader's progress, not the machine's
    speed, decides when a deadline passes."""

    def __init__(self, step: float) -> None:
        self.now, self.step, self.looks = 1000.0, step, 0

    def monotonic(self) -> float:
        self.looks += 1
        self.now += self.step
        return self.now


def test_max_bytes_and_deadline_stop_at_line_boundaries(big_transcript, monkeypatch):
    import subcog_store.extraction.transcript as transcript_module

    with open(big_transcript, "rb") as f:
        def at_boundary(offset: int) -> bool:
            f.seek(offset - 1)
            return f.read(1) == b"\n"

        r = read_assistant_texts(big_transcript, max_bytes=10 << 20)
        assert r.truncated and 10 << 20 <= r.next_offset < (10 << 20) + 9000 and at_boundary(r.next_offset)
        rest = read_assistant_texts(big_transcript, r.next_offset, max_bytes=10 << 20)
        assert int(rest.texts[0].uuid[1:]) == int(r.texts[-1].uuid[1:]) + 1

        clock = TickingClock(0.01)
        monkeypatch.setattr(transcript_module, "time", clock)
        late = read_assistant_texts(big_transcript, deadline=clock.now - 1)
        assert late.truncated and late.records == 1 and at_boundary(late.next_offset)
        looks = clock.looks
        soon = read_assistant_texts(big_transcript, deadline=clock.now + 0.045)   # passed at the 5th look
        assert soon.truncated and soon.records == 4 and at_boundary(soon.next_offset)
        assert clock.looks - looks == 5   # one look before each line: 4 read, the 5th found the deadline passed


# --- properties --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("prop")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2000) | st.lists(st.sampled_from(
    [b"\n", b"{", b"}", b'"type"', b":", b'"assistant"', b"\xff", b"[", b'"message"', b'"text"', b" ", b"\r"]
), max_size=60).map(b"".join))
def test_arbitrary_bytes_never_raise(scratch, data):
    path = write(scratch / "any.jsonl", data)
    r = read_assistant_texts(path)
    assert isinstance(r, ReadResult)
    assert 0 <= r.next_offset <= len(data) and r.bad_lines <= r.records
    assert r.next_offset in (0, len(data)) or data[r.next_offset - 1:r.next_offset] == b"\n"
    assert read_assistant_texts(path, r.next_offset).texts == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=30).map(lambda t: line(assistant(t))), st.just(b"junk\n"),
                          st.just(line({"type": "user", "message": {"content": "u"}}))), max_size=12),
       st.integers(min_value=0))
def test_two_reads_equal_one(scratch, lines, cut):
    data = b"".join(lines)
    path = write(scratch / "two.jsonl", data)
    boundaries = [0] + [i + 1 for i, b in enumerate(data) if b == 10]
    split = boundaries[cut % len(boundaries)]
    whole = read_assistant_texts(path)
    first = read_assistant_texts(path, max_bytes=split) if split else ReadResult()
    assert first.next_offset == split and first.truncated == (0 < split < len(data))
    second = read_assistant_texts(path, split)
    assert [t.text for t in first.texts + second.texts] == [t.text for t in whole.texts]
    assert (first.records + second.records, first.bad_lines + second.bad_lines) == (whole.records, whole.bad_lines)
