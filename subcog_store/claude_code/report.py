"""The words of a pre-compact report: what the hook prints, the one-line systemMessage and the original
design's Markdown."""
# Lazy imports: the summary's instruction and the secret patterns load only when a report is written.
from __future__ import annotations

import json
from typing import Any

BACKGROUND_MESSAGE = "subcog: capturing this conversation's lasting facts in the background"


def _short(text: str, width: int = 80) -> str:
    from subcog_store.text.redact import shown_line

    return shown_line(text, width)


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "recently"
    if seconds < 90:
        return f"{int(seconds)} s ago"
    if seconds < 5400:
        return f"{round(seconds / 60)} min ago"
    return f"{round(seconds / 3600)} h ago"


def system_message(report: dict) -> str:
    """One line for the user, e.g. 'subcog: captured 3 memories, skipped 2 duplicates'."""
    captured, skipped = len(report["captured"]), len(report["skipped"])
    if not captured and not skipped and not report.get("errors") and not report.get("truncated"):
        if report.get("first_run"):
            return "subcog: nothing in this conversation worth remembering yet"
        return "subcog: nothing new to capture since the last run"
    verb = "would capture" if report.get("dry_run") else "captured"
    text = (f"subcog: {verb} {captured} memor{'y' if captured == 1 else 'ies'}, "
            f"skipped {skipped} duplicate{'' if skipped == 1 else 's'}")
    changed = sum(1 for c in report["captured"] if c.get("decision") == "changed_fact")
    if changed:
        text += f" ({changed} changed fact{'' if changed == 1 else 's'} kept as new)"
    if report.get("redacted"):
        text += f", redacted {report['redacted']} secret{'' if report['redacted'] == 1 else 's'}"
    if report.get("truncated"):
        text += "; stopped early, the rest of the transcript is read next time"
    if report.get("errors"):
        text += f"; {report['errors'][0]['summary']} (see {report.get('log', 'the log')})"
    return text


def markdown(report: dict) -> str:
    """The original design's report: numbered captures and the skips, each with its subcog:// URN."""
    lines = []
    if report["captured"]:
        lines.append(f"Captured {len(report['captured'])} memories before compaction:")
        for i, c in enumerate(report["captured"], start=1):
            line = f"{i}. **{c['namespace']}**: {_short(c['content'])} ({c['urn']})"
            if c.get("decision") == "changed_fact":
                line += f" (changed fact: updates {c['matched_urn']}, {c.get('reasoning', '')})"
            lines.append(line)
    if report["skipped"]:
        lines.append(f"Skipped {len(report['skipped'])} duplicates:")
        for s in report["skipped"]:
            lines.append("- " + skip_line(s))
    if not lines:
        lines.append("No new memories were captured before compaction.")
    if report.get("errors"):
        lines.append("Problems: " + "; ".join(e["summary"] for e in report["errors"]) + ".")
    return "\n".join(lines)


def skip_line(s: dict) -> str:
    text = _short(s["content"], 60)
    if s["reason"] == "exact_match":
        return f"Exact match: {text} ({s['matched_urn']})"
    if s["reason"] == "semantic_similar":
        return f"Semantic {round(100 * (s.get('similarity') or 0))}%: {text} ({s['matched_urn']})"
    if s["reason"] == "recent_capture":
        return f"Recent capture: {text} (captured {_ago(s.get('seconds_ago'))}, {s['matched_urn']})"
    if s["reason"] == "in_batch":
        return f"Repeated in this conversation: {text} (same as captured item {s.get('same_as', '?')})"
    return f"{s['reason']}: {text} ({s.get('matched_urn')})"


def capture_output(run: Any, event: str, fmt: str = "default", problem: str | None = None) -> str:
    """What the hook prints.

    pre-compact, default: plain text. The client hands PreCompact's stdout, JSON or not, to the summarizer as
    "Additional Instructions" and shows the same raw line to the user (seen in Claude Code 2.1.328), so one
    short status line for the user, then the request that the summary end with the lasting facts, which
    session-start (compact) captures. `--format json` prints the earlier `{"systemMessage": ...}`,
    `--format subcog` the original design's report (which the real client rejects on PreCompact).
    session-end, post-compact: nothing (the report is in `hook_runs` and the log). `run` None without a
    `problem`: the warm worker answered before the capture finished.
    """
    if event in ("session-end", "post-compact"):
        return ""
    if run is None and problem is not None:
        message = f"subcog: capture skipped: {problem}"
        return json.dumps({"systemMessage": message}, ensure_ascii=False) if fmt == "json" else message
    message = BACKGROUND_MESSAGE if run is None else system_message(run.report())
    if fmt == "subcog":
        context = BACKGROUND_MESSAGE + "." if run is None else markdown(run.report())
        return json.dumps({"hookSpecificOutput": {"hookEventName": "PreCompact", "additionalContext": context}},
                          ensure_ascii=False)
    if fmt == "json":
        return json.dumps({"systemMessage": message}, ensure_ascii=False)
    from subcog_store.extraction.summary import SUMMARY_INSTRUCTION

    return message + ".\n" + SUMMARY_INSTRUCTION
