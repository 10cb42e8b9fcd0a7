"""`make demo`: the main job on the embedded default.

A fresh demo database; the pre-compact hook on session A, then on session B (a day later, same project);
the hook again on A (nothing new); the session-start report after B's compaction; an audit query in the
stock sqlite3 shell; doctor. Every hook output is checked against the Claude Code contract when
../shared/tools/check_hook_output.py is there.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from subcog_store.db import decisions

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
CHECKER = ROOT.parent / "shared" / "tools" / "check_hook_output.py"


def run(args: list[str], env: dict, stdin: str | None = None) -> str:
    proc = subprocess.run([sys.executable, "-m", "subcog_store", *args], input=stdin, capture_output=True,
                          text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"demo: subcog-store {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc.stdout


def check_contract(event: str, output: str) -> str:
    if not CHECKER.exists():
        return "(contract checker not found)"
    proc = subprocess.run([sys.executable, str(CHECKER), event], input=output, capture_output=True, text=True)
    return f"contract check: {proc.stdout.strip().splitlines()[-1]}"


def main() -> int:
    out = ROOT / "demo"
    out.mkdir(exist_ok=True)
    db = out / "demo.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    env = {**os.environ, "SUBCOG_DB": str(db), "SUBCOG_HOOK_LOG": str(out / "hook.log")}
    print(f"# subcog-store demo\ndatabase: {db}\n")
    for name, label in (("a", "session A"), ("b", "session B, a day later"), ("a", "session A again")):
        transcript = SAMPLES / f"session-{name}.jsonl"
        payload = json.dumps({"session_id": f"demo-session-{name}", "transcript_path": str(transcript),
                              "cwd": str(ROOT), "hook_event_name": "PreCompact", "trigger": "auto"})
        print(f"## pre-compact hook on {label} ({transcript.name})")
        output = run(["hook", "pre-compact"], env, payload)
        print(output.strip(), "\n" + check_contract("PreCompact", output))
        print()
    print("## session-start hook after B's compaction (what the model reads)")
    start = json.dumps({"session_id": "demo-session-b", "hook_event_name": "SessionStart", "source": "compact"})
    output = run(["hook", "session-start"], env, start)
    print(json.loads(output)["hookSpecificOutput"]["additionalContext"] if output.strip() else "(nothing)")
    print(check_contract("SessionStart", output) + "\n")
    print("## audit: the decision log, from the stock sqlite3 shell (no extension needed)")
    audit = decisions.audit_sql()
    if shutil.which("sqlite3"):
        print(f"$ sqlite3 -header -column {db} \"{' '.join(audit.split())}\"")
        subprocess.run(["sqlite3", "-header", "-column", str(db), audit], check=False)
    else:
        print("(sqlite3 is not installed; the same query through subcog-store's connection)")
        print(run(["sql", "--print"], env))
    print("\n## doctor")
    print(run(["doctor"], env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
