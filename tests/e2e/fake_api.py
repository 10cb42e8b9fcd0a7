#!/usr/bin/env python3
"""A fake Anthropic Messages API for subcog-store's end-to-end run of the real Claude Code client.

Standard library only; listens on 127.0.0.1 only.

    python3 fake_api.py --script script.json --log requests.jsonl --port-file port.txt

Every request (method, path, headers without keys, parsed JSON body) is appended to the --log file (JSONL) with
the kind of answer given: "turn" (a main-loop request), "compact" (the compaction's summary request), "aux"
(anything else the client asks the model), "count_tokens", "other".

The script is a JSON object:

    {"summary": "<analysis>..</analysis>\n<summary>..</summary>",        the compaction's answer
     "lasting_facts": ["fact", ...],
     "turns": [{"match": "[T1]", "text": "answer", "input_tokens": 0},
               {"match": "[M1]", "steps": [{"tool": "search", "input": {"query": "..."}},
                                          {"text": "final answer"}]}]}

The compaction request (its last user message asks for "a detailed summary of this conversation") is answered
with `summary`; when that request asks for a section 'headed exactly "HEADING:"' (the PreCompact hook's
instruction, which the client appends as "Additional Instructions"), the summary ends with that section listing
`lasting_facts`, as an obedient summarizer would; otherwise it has none.

A main-loop request (one that carries `tools`) is answered by the first turn whose `match` is in the latest user
message that holds a script marker. A turn with `steps` walks them in order: a `builtin` step is a `tool_use` of
one of the client's own tools (`{"builtin": "Read", "input": {"file_path": ...}}`), done once it was called; a
`tool` step is a `tool_use` of the subcog MCP server's tool of that short name (`mcp__subcog__search`, a plugin's `mcp__plugin_subcog_subcog__search`:
the name taken from the request), done once the assistant has called it; when the client offers the tool only as a
deferred tool (named in the messages, loaded with ToolSearch) the answer first calls `ToolSearch` with
"select:<name>"; a tool the client does not offer at all is answered with the text "TOOL-NOT-OFFERED <name>", so the
checks fail clearly. A turn's `input_tokens` is reported as the answer's usage (with CLAUDE_CODE_AUTO_COMPACT_WINDOW
a large value makes the client auto-compact before its next request).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
COMPACT_MARKERS = ("create a detailed summary of this conversation", "create a detailed summary of the RECENT",
                   "detailed summary of the conversation")
MCP_SERVER = "subcog"
ANY_PREFIX = r"mcp__(?:[A-Za-z0-9-]+_)*?"   # mcp__ and, for a plugin's server, plugin_<plugin>_


def text_of(content, tool_results: bool = True) -> str:
    """The text of a message's content (tool results included unless `tool_results` is False)."""
    if isinstance(content, str):
        return content
    out = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            out.append(block.get("text", ""))
        elif block.get("type") == "tool_result" and tool_results:
            out.append(text_of(block.get("content")))
    return "\n".join(out)


def last_user_text(body: dict) -> str:
    for msg in reversed(body.get("messages") or []):
        if msg.get("role") == "user":
            return text_of(msg.get("content"))
    return ""


def tool_name(body: dict, short: str) -> str | None:
    """The name the client gives the subcog MCP server's tool `short` in this request, if it offers it."""
    names = [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]
    exact = f"mcp__{MCP_SERVER}__{short}"
    if exact in names:
        return exact
    pattern = re.compile(rf"^{ANY_PREFIX}{MCP_SERVER}__{re.escape(short)}$")
    return next((n for n in names if pattern.match(n)), None)


def deferred_name(body: dict, short: str) -> str | None:
    """The name of the subcog tool `short` as the request names it among the deferred tools (loaded with
    ToolSearch), whatever prefix the client gives the server (a plugin's server has a longer one)."""
    text = json.dumps(body.get("messages") or []) + json.dumps(body.get("system") or "")
    found = re.search(rf"{ANY_PREFIX}{MCP_SERVER}__{re.escape(short)}(?![A-Za-z0-9_])", text)
    return found.group(0) if found else None


def pick_turn(script: dict, body: dict) -> tuple[dict | None, list[str]]:
    """(the script turn, the tool names the assistant called since its prompt) for a main-loop request."""
    messages = body.get("messages") or []
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if msg.get("role") != "user":
            continue
        text = text_of(msg.get("content"), tool_results=False)
        for turn in script.get("turns", []):
            if turn["match"] in text:
                called = [b.get("name", "") for m in messages[i + 1:] if m.get("role") == "assistant"
                          and isinstance(m.get("content"), list) for b in m["content"]
                          if isinstance(b, dict) and b.get("type") == "tool_use"]
                return turn, called
    return None, []


def summary_answer(script: dict, body: dict) -> str:
    """The compaction summary; it ends with the lasting-facts section when (and as) the request asks for one."""
    text = script.get("summary", "<summary>none</summary>")
    asked = re.search(r'section headed exactly "([^"]+?):?"', last_user_text(body))
    if asked and script.get("lasting_facts"):
        section = f"\n\n{asked.group(1)}:\n" + "\n".join(f"- {f}" for f in script["lasting_facts"]) + "\n"
        text = text.replace("</summary>", section + "</summary>") if "</summary>" in text else text + section
    return text


def plan_step(turn: dict, called: list[str], body: dict) -> tuple[dict, dict]:
    """The next answer of a turn with steps: a text block, a tool_use of the subcog tool the step names (after
    loading it with ToolSearch when the client offers it as a deferred tool only), or a text saying the tool is
    not offered. Returns (block spec, record extras)."""
    steps = turn.get("steps") or [{"text": turn.get("text", "")}]
    offered = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    for step in steps:
        if "builtin" in step:   # a tool of the client's own (Read, Bash): called once, as the step says
            if step["builtin"] in called:
                continue
            if step["builtin"] in offered:
                return {"type": "tool_use", "name": step["builtin"], "input": step.get("input", {}),
                        "say": step.get("say", "Let me look.")}, {}
            return {"type": "text", "text": f"TOOL-NOT-OFFERED {step['builtin']}"}, {"tool_missing": step["builtin"]}
        if "tool" not in step:
            return {"type": "text", "text": step.get("text", "")}, {}
        short = step["tool"]
        if any(n.endswith("__" + short) and MCP_SERVER in n for n in called):
            continue   # done: its result came back
        name = tool_name(body, short)
        if name:
            return {"type": "tool_use", "name": name, "input": step.get("input", {}),
                    "say": step.get("say", "Let me use the memory store.")}, {}
        deferred = deferred_name(body, short)
        if "ToolSearch" in offered and deferred and called.count("ToolSearch") < 3:
            return {"type": "tool_use", "name": "ToolSearch", "input": {"query": f"select:{deferred}"},
                    "say": "Loading the tool."}, {"deferred": deferred}
        return {"type": "text", "text": f"TOOL-NOT-OFFERED {short}"}, {"tool_missing": short}
    return {"type": "text", "text": "Done."}, {}


class Handler(BaseHTTPRequestHandler):
    server_version = "subcog-fake-api/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _record(self, body, kind, extra=None):
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in ("x-api-key", "authorization")}
        entry = {"t": time.time(), "method": self.command, "path": self.path, "kind": kind, "headers": headers,
                 "body": body}
        entry.update(extra or {})
        with LOCK:
            self.server.seq += 1
            entry["seq"] = self.server.seq
            with open(self.server.log_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")

    def _send_json(self, obj, status=200):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_fake_" + uuid.uuid4().hex[:12])
        self.end_headers()
        self.wfile.write(data)

    def _read_body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return {"_raw": raw[:2000].decode("utf-8", "replace")}

    def do_GET(self):
        self._record(None, "other")
        if self.path.split("?")[0].startswith("/v1/models"):
            self._send_json({"data": [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                                      for m in ("claude-sonnet-4-5", "claude-haiku-4-5")],
                             "has_more": False, "first_id": None, "last_id": None})
        else:
            self._send_json({})

    def do_HEAD(self):
        self._record(None, "other")
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        body = self._read_body()
        path = self.path.split("?")[0]
        if path.endswith("/v1/messages/count_tokens"):
            self._record(body, "count_tokens")
            self._send_json({"input_tokens": max(1, len(json.dumps(body or {})) // 4)})
        elif path.endswith("/v1/messages"):
            self._messages(body if isinstance(body, dict) else {})
        else:
            self._record(body, "other")
            self._send_json({})

    def _messages(self, body):
        script = self.server.script
        user = last_user_text(body)
        blocks: list[dict] = [{"type": "text", "text": "OK."}]
        kind, tokens, extra = "aux", 0, {}
        if any(m in user for m in COMPACT_MARKERS):
            kind, blocks = "compact", [{"type": "text", "text": summary_answer(script, body)}]
        elif body.get("tools"):   # a main-loop request carries tools; an auxiliary one (title, topic...) not
            kind = "turn"
            turn, called = pick_turn(script, body)
            if turn is None:
                blocks = [{"type": "text", "text": "Noted."}]
            else:
                extra["turn"] = turn["match"]
                tokens = int(turn.get("input_tokens") or 0)
                spec, more = plan_step(turn, called, body)
                extra.update(more)
                if spec["type"] == "tool_use":
                    tid = "toolu_fake_" + uuid.uuid4().hex[:16]
                    blocks = [{"type": "text", "text": spec["say"]},
                              {"type": "tool_use", "id": tid, "name": spec["name"], "input": spec["input"]}]
                    extra["tool_use"] = {"id": tid, "name": spec["name"], "input": spec["input"]}
                else:
                    blocks = [spec]
        extra["answer_preview"] = " | ".join(b.get("text") or b.get("name", "") for b in blocks)[:100]
        self._record(body, kind, extra)
        self._answer(body, blocks, tokens)

    def _answer(self, body, blocks, tokens):
        model = body.get("model") or "claude-sonnet-4-5"
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        usage_in = tokens or max(1, len(json.dumps(body)) // 4)
        out_tok = max(1, sum(len(json.dumps(b)) for b in blocks) // 4)
        msg_id = "msg_fake_" + uuid.uuid4().hex[:16]
        if not body.get("stream"):
            self._send_json({"id": msg_id, "type": "message", "role": "assistant", "model": model, "content": blocks,
                             "stop_reason": stop, "stop_sequence": None,
                             "usage": {"input_tokens": usage_in, "output_tokens": out_tok,
                                       "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}})
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", "req_fake_" + uuid.uuid4().hex[:12])
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

        def event(name, data):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        event("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": usage_in, "output_tokens": 1, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}})
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                event("content_block_start", {"type": "content_block_start", "index": index,
                                              "content_block": {"type": "text", "text": ""}})
                text = block["text"]
                for i in range(0, len(text), 200):
                    event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                  "delta": {"type": "text_delta", "text": text[i:i + 200]}})
            else:
                event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                    "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
                event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
            event("content_block_stop", {"type": "content_block_stop", "index": index})
        event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": out_tok}})
        event("message_stop", {"type": "message_stop"})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    args = ap.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(args.script, encoding="utf-8") as fh:
        server.script = json.load(fh)
    server.log_path, server.seq = args.log, 0
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
