"""Verifier and merger: pluggable commands (JSON on stdin, JSON on stdout, with a timeout) and the built-in merger.

Verifier stdout: {"duplicate": true|false, "reasoning": "..."}; merger stdout: {"content": "..."}.
Both receive: {"task", "namespace", "similarity", "older": {"content", "created_at"}, "newer": {...}}.
"""
# Lazy imports: the guard's patterns compile only when the built-in merger runs.
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Mapping

from subcog_store.text.textsim import significant_tokens

MERGE_PROMPT = (
    "Merge these two memories into one. Combine all distinct information from both, prefer the newer "
    "memory where they conflict, and keep it concise. Answer with the merged memory only.")


class PluginError(Exception):
    """The command is missing, failed, timed out or answered something that is not the expected JSON."""


@dataclass(frozen=True)
class Pair:
    older: str
    newer: str
    older_created_at: str | None
    newer_created_at: str | None
    similarity: float
    namespace: str

    def payload(self, task: str) -> dict:
        return {"task": task, "namespace": self.namespace, "similarity": round(self.similarity, 4),
                "older": {"content": self.older, "created_at": self.older_created_at},
                "newer": {"content": self.newer, "created_at": self.newer_created_at},
                **({"prompt": MERGE_PROMPT} if task == "merge" else {})}


def run_command(command: str, payload: dict, timeout: float, env: Mapping[str, str] | None = None) -> dict:
    """Run `command` with `payload` as JSON on stdin, in this process's environment with `env` over it (the
    settings' environment: a hook's caller's, in the warm worker); return its JSON object from stdout."""
    import shlex   # here: a capture with no plugin configured (every hook's) never pays for subprocess
    import subprocess

    try:
        proc = subprocess.run(shlex.split(command), input=json.dumps(payload), capture_output=True, text=True,
                              timeout=timeout, env=None if env is None else {**os.environ, **env})
    except subprocess.TimeoutExpired:
        raise PluginError(f"timed out after {timeout:g} s") from None
    except (OSError, ValueError) as e:
        raise PluginError(f"could not run: {e}") from None
    if proc.returncode != 0:
        raise PluginError(f"exited {proc.returncode}: {proc.stderr.strip()[:200]}")
    try:
        answer = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise PluginError(f"stdout is not JSON: {proc.stdout.strip()[:100]!r}") from None
    if not isinstance(answer, dict):
        raise PluginError("stdout is not a JSON object")
    return answer


def verify(command: str, pair: Pair, timeout: float, env: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Ask the verifier whether the newer text duplicates the older: (duplicate, reasoning)."""
    answer = run_command(command, pair.payload("verify"), timeout, env)
    if not isinstance(answer.get("duplicate"), bool):
        raise PluginError('answer lacks a boolean "duplicate"')
    return answer["duplicate"], str(answer.get("reasoning", ""))[:2000]


def merge(command: str | None, pair: Pair, timeout: float, env: Mapping[str, str] | None = None) -> str:
    """The merged text: from the merge command when one is set, else the built-in merger."""
    if not command:
        return builtin_merge(pair.older, pair.newer)
    answer = run_command(command, pair.payload("merge"), timeout, env)
    content = answer.get("content")
    if not isinstance(content, str):
        raise PluginError('answer lacks a string "content"')
    return content


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def covers(sentence: str, other: str) -> bool:
    """Does `other` speak to what `sentence` says: the same fact reworded, or a newer value of it (the
    newer memory wins a conflict)?"""
    from subcog_store.text.guard import SUPPORT_MIN, lexical_support

    words = significant_tokens(sentence)
    contained = len(words & significant_tokens(other)) / len(words) if words else 1.0
    return contained >= 0.8 or lexical_support(sentence, other) >= SUPPORT_MIN


def builtin_merge(older: str, newer: str) -> str:
    """Keep the newer text and append the older text's sentences that the newer one lacks."""
    kept = newer.strip()
    newer_sentences = sentences(newer)
    for sentence in sentences(older):
        if not any(covers(sentence, other) for other in newer_sentences):
            kept += ("" if kept.endswith((".", "!", "?")) else ".") + " " + sentence
            newer_sentences.append(sentence)
    return kept
