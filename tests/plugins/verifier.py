"""A scripted verifier for the tests: `python verifier.py MODE`.

Reads the JSON request on stdin; when $SUBCOG_TEST_PLUGIN_RECORD names a file, writes the raw stdin there.
Modes: duplicate (answers duplicate=true), keep (duplicate=false), garbage (not JSON), exit3 (exits 3),
sleep (sleeps 30 s), nobool (duplicate is a string), list (a JSON list, not an object).
"""
import json
import sys
import time

from scripted import read_request

mode, _, request = read_request("duplicate")
if mode == "duplicate":
    print(json.dumps({"duplicate": True, "reasoning": f"scripted: same fact at {request['similarity']}"}))
elif mode == "keep":
    print(json.dumps({"duplicate": False, "reasoning": "scripted: the newer text adds information"}))
elif mode == "garbage":
    print("I think these are probably duplicates?")
elif mode == "exit3":
    print("verifier crashed", file=sys.stderr)
    sys.exit(3)
elif mode == "sleep":
    time.sleep(30)
    print(json.dumps({"duplicate": True, "reasoning": "too late"}))
elif mode == "nobool":
    print(json.dumps({"duplicate": "yes", "reasoning": "a string, not a boolean"}))
elif mode == "list":
    print(json.dumps([True, "a list"]))
else:
    sys.exit(f"unknown mode {mode}")
