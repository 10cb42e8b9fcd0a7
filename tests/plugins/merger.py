"""A scripted merger for the tests: `python merger.py MODE`.

Reads the JSON request on stdin; when $SUBCOG_TEST_PLUGIN_RECORD names a file, writes the raw stdin there.
Modes: ok ({"content": "MERGED: <newer> + <older>"}), empty ({"content": ""}), blank (only whitespace),
garbage (not JSON), nocontent (an object without "content"), exit3 (exits 3), sleep (sleeps 30 s).
"""
import json
import sys
import time

from scripted import read_request

mode, _, request = read_request("ok")
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
