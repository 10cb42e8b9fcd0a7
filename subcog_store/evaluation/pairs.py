"""Readers for labeled sentence pairs (MRPC, STS benchmark, JSONL), used to calibrate the semantic tier.

`read_pairs(path, fmt)` returns `LabeledPair`s; a malformed line raises ValueError naming the file and line.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

STS_SAME = 4.6      # STS score >= this: same fact (label True)
STS_DISTINCT = 4.0  # STS score < this: must not be skipped (label False); scores in between are left out

Format = Literal["mrpc", "sts", "jsonl"]


@dataclass(frozen=True)
class LabeledPair:
    a: str
    b: str
    label: bool                   # True: the two texts state the same fact (duplicates)
    namespace: str | None = None


MAX_LINE_BYTES = 1 << 20   # a longer line is an error (no file is read whole into memory)


def _lines(path: Path):
    """Lines split on \n only (str.splitlines() would also split on \x0b, \x1c, U+2028 ... inside sentences),
    read in bounded pieces: a file without newlines (/dev/zero) fails at the first over-long line."""
    with path.open("rb") as f:
        number = 0
        while True:
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                raise ValueError(f"{path}:{number}: line longer than {MAX_LINE_BYTES} bytes")
            text = raw.decode("utf-8")
            if number == 1:
                text = text.removeprefix("\ufeff")  # the BOM the MRPC files start with
            yield number, text.removesuffix("\n").removesuffix("\r")


def read_pairs(path: str | Path, fmt: Format, limit: int | None = None) -> list[LabeledPair]:
    """Read labeled pairs from `path` in format "mrpc", "sts" or "jsonl" (the first `limit` pairs only)."""
    readers = {"mrpc": _mrpc, "sts": _sts, "jsonl": _jsonl}
    if fmt not in readers:
        raise ValueError(f"unknown pairs format {fmt!r}; expected one of {', '.join(readers)}")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a directory")
    pairs: list[LabeledPair] = []
    for number, line in _lines(path):
        if limit is not None and len(pairs) >= limit:
            break
        if not line.strip():
            continue
        try:
            pairs.extend(readers[fmt](line, number))
        except ValueError as e:
            raise ValueError(f"{path}:{number}: {e}") from None
    return pairs[:limit] if limit is not None else pairs


_GLUED = re.compile(r"^(.*\S)([01])$", re.S)


def _mrpc(line: str, number: int) -> list[LabeledPair]:
    fields = line.split("\t")
    if number == 1 and fields[0].strip().lower() == "quality":
        return []  # header
    if len(fields) == 9 and fields[5].strip().isdigit() and fields[6].strip().isdigit():
        # Two records whose line break was lost (one such line in the published train file):
        # "...#2 String<Quality>\t#1 ID\t#2 ID\t...". Split them when the shape is unambiguous.
        glued = _GLUED.match(fields[4])
        if glued:
            first = fields[:4] + [glued.group(1)]
            second = [glued.group(2)] + fields[5:]
            return [_mrpc_record(first), _mrpc_record(second)]
    return [_mrpc_record(fields)]


def _mrpc_record(fields: list[str]) -> LabeledPair:
    if len(fields) != 5:
        raise ValueError(
            f"expected 5 tab-separated fields (Quality, #1 ID, #2 ID, #1 String, #2 String), got {len(fields)}")
    quality = fields[0].strip()
    if quality not in ("0", "1"):
        raise ValueError(f"Quality must be 0 or 1, got {quality!r}")
    if not fields[3].strip() or not fields[4].strip():
        raise ValueError("empty sentence")
    return LabeledPair(fields[3], fields[4], quality == "1")


def _sts(line: str, number: int) -> list[LabeledPair]:
    # genre, source, year, id, score, sentence1, sentence2 [, extra attribution columns]
    fields = line.split("\t")
    if len(fields) < 7:
        raise ValueError(f"expected at least 7 tab-separated fields, got {len(fields)}")
    try:
        score = float(fields[4])
    except ValueError:
        raise ValueError(f"score is not a number: {fields[4]!r}") from None
    if not 0.0 <= score <= 5.0:
        raise ValueError(f"score out of range 0..5: {score}")
    if score >= STS_SAME:
        label = True
    elif score < STS_DISTINCT:
        label = False
    else:
        return []
    return [LabeledPair(fields[5].strip(), fields[6].strip(), label)]


def _jsonl(line: str, number: int) -> list[LabeledPair]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON: {e.msg}") from None
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    for key in ("a", "b", "label"):
        if key not in obj:
            raise ValueError(f"missing key {key!r}")
    a, b, label, namespace = obj["a"], obj["b"], obj["label"], obj.get("namespace")
    if not isinstance(a, str) or not isinstance(b, str):
        raise ValueError('"a" and "b" must be strings')
    # bool is a subclass of int; accept true/false and 0/1 only.
    if isinstance(label, bool):
        value = label
    elif isinstance(label, int) and label in (0, 1):
        value = bool(label)
    else:
        raise ValueError(f'"label" must be true/false or 0/1, got {label!r}')
    if namespace is not None and not isinstance(namespace, str):
        raise ValueError('"namespace" must be a string or null')
    return [LabeledPair(a, b, value, namespace)]
