"""A scripted merger for the tests: `python merger.py MODE`.

Reads the JSON request on stdin; when $SUBCOG_TEST_PLUGIN_RECORD names a file, writes the raw stdin there.
Modes: ok ({"content": "MERGED: <newer> + <older>"}), empty ({"content": ""}), blank (only whitespace),
garbage (not JSON), nocontent (an object without "content"), exit3 (exits 3), sleep (sleeps 30 s).
"""
import json
import os
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
raw = sys.stdin.read()
record = os.environ.get("SUBCOG_TEST_PLUGIN_RECORD")
if record:
    with open(record, "w", encoding="utf-8") as f:
        f.write(raw)
request = json.loads(raw)
if mode == "ok":
    print(json.dumps({"content": f"MERGED: {request['newer']['content']} + {request['older']['content']}"}))
elif mode == "empty":
    print(json.dumps({"content": ""}))
elif mode == "blank":
    print(json.dumps({"content": "  \n\t "}))
elif mode == "garbage":
    print("<html>merged!</html>")
elif mode == "nocontent":
    print(json.dumps({"text": "wrong key"}))
elif mode == "exit3":
    sys.exit(3)
elif mode == "sleep":
    time.sleep(30)
    print(json.dumps({"content": "too late"}))
else:
    sys.exit(f"unknown mode {mode}")
