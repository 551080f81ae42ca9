"""A scripted OpenAI Chat Completions server (as OpenCode calls it through @ai-sdk/openai-compatible), on 127.0.0.1.

OpenCode, with a provider `{"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": <ours>/v1}}`, talks to it:

- `POST /v1/chat/completions` with `"stream": true` — the agent loop. The body carries `messages`
  (system, user, assistant with `tool_calls`, `role:"tool"` results with `tool_call_id`) and
  `tools: [{type:"function", function:{name, description, parameters}}]`. We answer with SSE
  `data: <chunk>` lines: a role chunk, then `delta.content` text or `delta.tool_calls` (id, function
  name, then the arguments in two pieces, as real servers stream them), a final chunk with
  `finish_reason` ("tool_calls" or "stop"), a usage chunk when `stream_options.include_usage` is
  asked for, then `data: [DONE]`. A non-streaming request gets one `chat.completion` object.
- Side requests — OpenCode's session-title generation (run with the configured `small_model`, or
  recognised by its title system prompt / no tools offered), summaries, anything else without tools —
  get a harmless plain-text answer and never reach the pager, so they consume none of its steps.
- `GET /v1/models` (and `/models`): a one-model list.

What the model is handed for a tool call is the `content` of the `role:"tool"` message: a string in
practice (@ai-sdk/openai-compatible turns a tool output of type text into the string itself and a
`content`/`json` output into its `JSON.stringify`); an array of parts is reduced to its text parts
joined with "" (what a Chat Completions model reads of a multi-part tool message). Image/file parts
that reach the model some other way (a user message with `image_url`) are recorded in `Server.media`.
Every request body is recorded, in order, in `Server.requests`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

TITLE_MODEL = "title-model"  # configure it as OpenCode's small_model: its calls are side requests
MAIN_MODEL = "scripted"


def tool_message_text(content: Any) -> str:
    """The text a Chat Completions model reads for one `role:"tool"` message's content."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
        return "".join(parts)
    return json.dumps(content, ensure_ascii=False, separators=(",", ":"))


def tool_results(body: dict) -> list[str]:
    """The handed text of every tool message of the history, in order."""
    return [tool_message_text(m.get("content")) for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") == "tool"]


def tool_names(body: dict) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and fn.get("name"):
            names.append(fn["name"])
    return names


def media_parts(body: dict) -> list[dict]:
    """Non-text parts (image_url, input_audio, file …) anywhere in the history's message contents."""
    out = []
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") not in (None, "text"):
                    out.append({"role": m.get("role"), **part})
    return out


def _system_text(body: dict) -> str:
    out = []
    for m in body.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "system":
            out.append(tool_message_text(m.get("content")))
    return "\n".join(out)


def is_side_request(body: dict) -> bool:
    """A request that is not the agent loop: title generation, summaries, anything without tools."""
    if body.get("model") == TITLE_MODEL:
        return True
    if not body.get("tools"):
        return True
    system = _system_text(body).lower()
    return "title generator" in system or "generate a title" in system or "conversation title" in system


class Server:
    """Recording state of one scripted model server."""

    def __init__(self, pager):
        self.pager = pager
        self.lock = threading.Lock()
        self.requests: list[dict] = []   # every request body (POST), in order
        self.paths: list[str] = []       # the path of each request (GET included)
        self.side: list[dict] = []       # the side requests (answered without the pager)
        self.media: list[dict] = []      # non-text parts seen in the last agent-loop request
        self.errors: list[str] = []      # exceptions raised while answering
        self.counter = 0

    def next_id(self) -> str:
        with self.lock:
            self.counter += 1
            return f"{self.counter:04d}"


def _chunk(cid: str, model: str, delta: dict | None = None, finish: str | None = None,
           usage: dict | None = None) -> dict:
    out: dict = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()),
                 "model": model, "choices": []}
    if delta is not None or finish is not None:
        out["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    if usage is not None:
        out["usage"] = usage
    return out


USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


def _make_handler(state: Server) -> Callable:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _json(self, code: int, obj: Any):
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            state.paths.append(self.path)
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [
                    {"id": MAIN_MODEL, "object": "model", "owned_by": "scripted"},
                    {"id": TITLE_MODEL, "object": "model", "owned_by": "scripted"}]})
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self):
            state.paths.append(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            state.requests.append(body)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": f"unsupported path {self.path}"}})
                return
            try:
                if is_side_request(body):
                    state.side.append(body)
                    text, calls = "Scripted session", []
                else:
                    state.media = media_parts(body)
                    text, calls = self._decide(body)
            except Exception as exc:  # answer something and keep the failure for the test
                state.errors.append(repr(exc))
                text, calls = f"scripted model error: {exc!r}", []
            self._answer(body, text, calls)

        def _decide(self, body: dict) -> tuple[str, list[dict]]:
            step = state.pager.step(tool_names(body), tool_results(body))
            if hasattr(step, "arguments") and hasattr(step, "name"):
                return "", [{"id": f"call_{state.next_id()}", "name": step.name,
                             "arguments": json.dumps(step.arguments)}]
            return getattr(step, "text", "done"), []

        def _answer(self, body: dict, text: str, calls: list[dict]):
            model = body.get("model") or MAIN_MODEL
            cid = f"chatcmpl-{state.next_id()}"
            finish = "tool_calls" if calls else "stop"
            if not body.get("stream"):
                message: dict = {"role": "assistant", "content": text or None}
                if calls:
                    message["tool_calls"] = [{"id": c["id"], "type": "function",
                                              "function": {"name": c["name"], "arguments": c["arguments"]}}
                                             for c in calls]
                self._json(200, {"id": cid, "object": "chat.completion", "created": int(time.time()),
                                 "model": model, "usage": USAGE,
                                 "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
                return
            events = [_chunk(cid, model, {"role": "assistant", "content": ""})]
            if text:
                events.append(_chunk(cid, model, {"content": text}))
            for i, c in enumerate(calls):
                args = c["arguments"]
                half = len(args) // 2
                events.append(_chunk(cid, model, {"tool_calls": [{
                    "index": i, "id": c["id"], "type": "function",
                    "function": {"name": c["name"], "arguments": args[:half]}}]}))
                events.append(_chunk(cid, model, {"tool_calls": [{
                    "index": i, "function": {"arguments": args[half:]}}]}))
            events.append(_chunk(cid, model, {}, finish))
            if (body.get("stream_options") or {}).get("include_usage"):
                events.append(_chunk(cid, model, usage=USAGE))
            payload = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
            payload += b"data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


def start(pager) -> tuple[str, Callable[[], None]]:
    """Serve on 127.0.0.1:<free port>. Returns (base_url ending in /v1, stop). The Server state is
    reachable as `stop.server` (requests, side, media, errors)."""
    state = Server(pager)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(state))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()

    def stop():
        httpd.shutdown()
        httpd.server_close()

    stop.server = state  # type: ignore[attr-defined]
    return f"http://127.0.0.1:{httpd.server_address[1]}/v1", stop
