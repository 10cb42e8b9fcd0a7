"""Readers for labeled pairs: MRPC, STS benchmark and JSONL."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from subcog_store.evaluation.pairs import LabeledPair, read_pairs

BOM = "\ufeff"


def shared_data() -> Path:
    shared = os.environ.get("SUBCOG_SHARED_DIR")
    root = Path(shared) if shared else Path(__file__).resolve().parents[2] / "shared"
    data = root / "data"
    if not data.is_dir():
        pytest.skip(f"shared data absent: {data}")
    return data


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_mrpc(tmp_path: Path) -> None:
    path = write(tmp_path, "m.txt", BOM + "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                 "1\t1\t2\tThe cache TTL is 5 minutes.\tCache entries live 5 minutes.\n"
                 "0\t3\t4\tA \"quoted\" one.\tAnother one.\n")
    assert read_pairs(path, "mrpc") == [
        LabeledPair("The cache TTL is 5 minutes.", "Cache entries live 5 minutes.", True, None),
        LabeledPair('A "quoted" one.', "Another one.", False, None),
    ]


def test_mrpc_glued_records_are_split(tmp_path: Path) -> None:
    # The published train file has one line whose line break was lost.
    path = write(tmp_path, "m.txt", "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                 "0\t1\t2\tFirst a.\tFirst b.1\t3\t4\tSecond a.\tSecond b.\n")
    assert [(p.a, p.b, p.label) for p in read_pairs(path, "mrpc")] == [
        ("First a.", "First b.", False), ("Second a.", "Second b.", True)]


@pytest.mark.parametrize("line", ["2\t1\t2\ta\tb", "1\t1\t2\ta", "x\t1\t2\ta\tb\tc"])
def test_mrpc_bad_line(tmp_path: Path, line: str) -> None:
    path = write(tmp_path, "bad.txt", "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\ta\tb\n" + line + "\n")
    with pytest.raises(ValueError, match=r"bad\.txt:3:"):
        read_pairs(path, "mrpc")


def test_sts_thresholds(tmp_path: Path) -> None:
    path = write(tmp_path, "s.csv",
                 "main-captions\tMSRvid\t2012test\t0001\t5.000\tA man plays.\tA man is playing.\n"
                 "main-captions\tMSRvid\t2012test\t0002\t4.600\tx\ty\n"
                 "main-captions\tMSRvid\t2012test\t0003\t4.200\tskipped\tskipped\n"
                 "main-captions\tMSRvid\t2012test\t0004\t4.000\tskipped too\tskipped too\n"
                 "main-forums\tanswer-answer\t2016\t0005\t3.999\tp \tq\textra\tcolumns\n")
    pairs = read_pairs(path, "sts")
    assert [(p.a, p.b, p.label) for p in pairs] == [
        ("A man plays.", "A man is playing.", True), ("x", "y", True), ("p", "q", False)]


@pytest.mark.parametrize("line", ["g\ts\t2012\t1\tfive\ta\tb", "g\ts\t2012\t1\t4.8\ta", "g\ts\t2012\t1\t7\ta\tb"])
def test_sts_bad_line(tmp_path: Path, line: str) -> None:
    path = write(tmp_path, "bad.csv", "g\ts\t2012\t0\t5.0\ta\tb\n" + line + "\n")
    with pytest.raises(ValueError, match=r"bad\.csv:2:"):
        read_pairs(path, "sts")


def test_jsonl(tmp_path: Path) -> None:
    path = write(tmp_path, "p.jsonl",
                 '{"a": "x", "b": "y", "label": true}\n'
                 '\n'
                 '{"a": "x", "b": "z", "label": 0, "namespace": "decisions"}\n'
                 '{"a": "x", "b": "w", "label": 1, "namespace": null}\n')
    assert read_pairs(path, "jsonl") == [
        LabeledPair("x", "y", True), LabeledPair("x", "z", False, "decisions"), LabeledPair("x", "w", True)]


@pytest.mark.parametrize("line", ['{"a": "x", "b": "y"}', '{"a": "x", "b": "y", "label": 2}',
                                  '{"a": "x", "b": "y", "label": "yes"}', '{"a": 1, "b": "y", "label": 1}',
                                  '["a", "b", 1]', '{"a": "x", "b": "y", "label": 1', '{"a": "x", "b": "y", '
                                  '"label": 1, "namespace": 3}'])
def test_jsonl_bad_line(tmp_path: Path, line: str) -> None:
    path = write(tmp_path, "bad.jsonl", '{"a": "x", "b": "y", "label": 1}\n' + line + "\n")
    with pytest.raises(ValueError, match=r"bad\.jsonl:2:"):
        read_pairs(path, "jsonl")


def test_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown pairs format"):
        read_pairs(write(tmp_path, "x", ""), "csv")  # type: ignore[arg-type]


def test_shared_mrpc_and_sts() -> None:
    data = shared_data()
    train = read_pairs(data / "mrpc/msr_paraphrase_train.txt", "mrpc")
    test = read_pairs(data / "mrpc/msr_paraphrase_test.txt", "mrpc")
    sts = read_pairs(data / "stsb/sts-test.csv", "sts")
    assert len(train) == 3676 and sum(p.label for p in train) == 2485
    assert len(test) == 1725 and sum(p.label for p in test) == 1147
    assert len(sts) == 1197 and sum(p.label for p in sts) == 156
    assert not train[0].a.startswith("\ufeff")
