"""A scripted Anthropic Messages API on 127.0.0.1, for Claude Code (tests/clients).

- `POST /v1/messages` (any query string, e.g. `?beta=true`): the request with the conversation.
  A request that offers tools (`tools`, minus those marked `defer_loading`, which a model cannot
  call before a tool search loads them) is the agent's: the pager decides from the offered tool
  names and the `tool_result` blocks of the history (each block's content verbatim: a string, or
  its text blocks joined by "\n"). Any other request (title, quota check, summaries …) gets "ok".
  Answered as SSE (`message_start`, `content_block_start` / `content_block_delta` (`text_delta`,
  `input_json_delta`) / `content_block_stop`, `message_delta` (stop_reason `tool_use` or
  `end_turn`, usage), `message_stop`) when `stream` is true, else as one JSON message.
- `POST /v1/messages/count_tokens`: `{"input_tokens": <chars / 4>}`.
- anything else: `{}` (GET `/v1/models…`: an empty list).

`start(pager) -> (base_url, stop)`; `server_of(base_url)` gives the Server with every request
body (`requests`), the side requests (`side`), the blocks emitted (`calls`) and errors.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAIN_MODEL = "claude-sonnet-4-5"


def block_text(content: Any) -> str:
    """A tool_result's content as the model reads it: a string verbatim, text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, str):
                parts.append(b)
            elif isinstance(b, dict) and b.get("type") == "text":
                parts.append(b.get("text", ""))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content)


def tool_results(body: dict) -> list[str]:
    """The text of every tool_result block of the conversation, in order."""
    out = []
    for m in body.get("messages") or []:
        if not isinstance(m, dict) or m.get("role") != "user" or not isinstance(m.get("content"), list):
            continue
        for b in m["content"]:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                out.append(block_text(b.get("content")))
    return out


def tool_result_blocks(body: dict) -> list[dict]:
    return [b for m in body.get("messages") or [] if isinstance(m, dict) and isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def offered(body: dict) -> list[str]:
    """The tools the model can call now (deferred ones need a tool search first)."""
    return [t["name"] for t in body.get("tools") or []
            if isinstance(t, dict) and t.get("name") and not t.get("defer_loading")]


def deferred(body: dict) -> list[str]:
    return [t["name"] for t in body.get("tools") or [] if isinstance(t, dict) and t.get("defer_loading")]


_MCP_NAME = re.compile(r"\bmcp__[A-Za-z0-9_-]+")


def listed_deferred(body: dict) -> list[str]:
    """MCP tool names the request's system prompt and messages list (Claude Code's "deferred tools
    … available via ToolSearch" list), not offered in `tools`."""
    texts = []
    system = body.get("system")
    if isinstance(system, str):
        texts.append(system)
    elif isinstance(system, list):
        texts += [b.get("text", "") for b in system if isinstance(b, dict)]
    for m in body.get("messages") or []:
        c = m.get("content") if isinstance(m, dict) else None
        if isinstance(c, str):
            texts.append(c)
        elif isinstance(c, list):
            texts += [b.get("text", "") for b in c if isinstance(b, dict) and b.get("type") == "text"]
    names = set(offered(body))
    return sorted({n for t in texts for n in _MCP_NAME.findall(t)} - names)


def _tool_result_ids(body: dict) -> set:
    return {b.get("tool_use_id") for b in tool_result_blocks(body)}


class Server:
    def __init__(self, pager):
        self.pager = pager
        self.requests: list[dict] = []   # every request body (with "_path")
        self.side: list[dict] = []       # requests answered without the pager
        self.calls: list[dict] = []      # tool_use blocks emitted
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.counter = 0
        self.httpd: ThreadingHTTPServer | None = None

    def next_id(self) -> str:
        with self.lock:
            self.counter += 1
            return f"{self.counter:06d}"

    def agent_requests(self) -> list[dict]:
        return [r for r in self.requests if r.get("_path", "").startswith("/v1/messages")
                and not r.get("_path", "").startswith("/v1/messages/count_tokens") and offered(r)]

    def decide(self, body: dict) -> list[dict]:
        """The content blocks of the answer."""
        names = offered(body)
        if not names:
            self.side.append(body)
            return [{"type": "text", "text": "ok"}]
        with self.lock:
            if hasattr(self.pager, "deferred"):
                self.pager.deferred = listed_deferred(body)
            step = self.pager.step(names, tool_results(body))
        if hasattr(step, "name") and hasattr(step, "arguments"):
            block = {"type": "tool_use", "id": f"toolu_{self.next_id()}", "name": step.name,
                     "input": dict(step.arguments or {})}
            self.calls.append(block)
            return [block]
        return [{"type": "text", "text": getattr(step, "text", "done")}]


def _usage(body: dict) -> dict:
    n = max(1, len(json.dumps(body.get("messages") or [])) // 4)
    return {"input_tokens": n, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def _message(mid: str, model: str, blocks: list[dict], usage: dict) -> dict:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {"id": mid, "type": "message", "role": "assistant", "model": model, "content": blocks,
            "stop_reason": stop, "stop_sequence": None, "usage": usage}


def _sse(mid: str, model: str, blocks: list[dict], usage: dict) -> bytes:
    out = []

    def ev(kind, data):
        data = dict(data, type=kind)
        out.append(f"event: {kind}\ndata: {json.dumps(data)}\n\n")

    start_usage = dict(usage, output_tokens=1)
    ev("message_start", {"message": {"id": mid, "type": "message", "role": "assistant", "model": model,
                                     "content": [], "stop_reason": None, "stop_sequence": None,
                                     "usage": start_usage}})
    for i, b in enumerate(blocks):
        if b["type"] == "tool_use":
            ev("content_block_start", {"index": i, "content_block": {"type": "tool_use", "id": b["id"],
                                                                      "name": b["name"], "input": {}}})
            ev("content_block_delta", {"index": i, "delta": {"type": "input_json_delta",
                                                             "partial_json": json.dumps(b["input"])}})
        else:
            ev("content_block_start", {"index": i, "content_block": {"type": "text", "text": ""}})
            ev("content_block_delta", {"index": i, "delta": {"type": "text_delta", "text": b["text"]}})
        ev("content_block_stop", {"index": i})
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    ev("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None},
                         "usage": {"output_tokens": usage["output_tokens"]}})
    ev("message_stop", {})
    return "".join(out).encode()


def start(pager):
    """Serve the scripted model; returns (base_url, stop)."""
    state = Server(pager)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _send(self, code: int, payload: bytes, ctype="application/json"):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("request-id", f"req_{state.next_id()}")
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self):
            with state.lock:
                state.requests.append({"_path": self.path, "_method": "GET"})
            if self.path.startswith("/v1/models"):
                self._send(200, json.dumps({"data": [], "has_more": False, "first_id": None, "last_id": None}).encode())
            else:
                self._send(200, b"{}")

        def do_HEAD(self):
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            path = self.path.split("?")[0]
            body["_path"] = self.path
            with state.lock:
                state.requests.append(body)
            if path.endswith("/count_tokens"):
                self._send(200, json.dumps({"input_tokens": max(1, len(raw) // 4)}).encode())
                return
            if not path.endswith("/v1/messages"):
                state.side.append(body)
                self._send(200, b"{}")
                return
            try:
                blocks = state.decide(body)
            except Exception as exc:  # answer something and keep the failure for the test
                state.errors.append(repr(exc))
                blocks = [{"type": "text", "text": f"scripted model error: {exc!r}"}]
            model = body.get("model") or MAIN_MODEL
            mid = f"msg_{state.next_id()}"
            usage = _usage(body)
            if body.get("stream"):
                self._send(200, _sse(mid, model, blocks, usage), "text/event-stream")
            else:
                self._send(200, json.dumps(_message(mid, model, blocks, usage)).encode())

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.httpd = httpd
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    _SERVERS[base_url] = state

    def stop():
        httpd.shutdown()
        httpd.server_close()

    return base_url, stop


_SERVERS: dict[str, Server] = {}


def server_of(base_url: str) -> Server:
    return _SERVERS[base_url]
