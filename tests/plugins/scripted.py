"""What both scripted plugins do first: read the mode and the request, and record the raw stdin when
$SUBCOG_TEST_PLUGIN_RECORD names a file (so a test can check what the store sent)."""
import json
import os
import sys


def read_request(default_mode: str) -> tuple[str, str, object]:
    """(mode, raw stdin, parsed request)."""
    mode = sys.argv[1] if len(sys.argv) > 1 else default_mode
    raw = sys.stdin.read()
    record = os.environ.get("SUBCOG_TEST_PLUGIN_RECORD")
    if record:
        with open(record, "w", encoding="utf-8") as f:
            f.write(raw)
    return mode, raw, json.loads(raw)
