"""A scripted OpenAI Responses API server (as Codex CLI 0.169.0 calls it), on 127.0.0.1.

Codex, with a `[model_providers.<id>]` entry `base_url = "<ours>/v1"`, `wire_api = "responses"`, talks to it:

- `POST /v1/responses` with `"stream": true` — the agent loop. The body carries `input` (the whole
  history: developer/user `message`s, our earlier `function_call` / `tool_search_call` items echoed
  back, Codex's `function_call_output` / `tool_search_output` items) and `tools`: plain
  `{"type":"function","name":…}` tools, `{"type":"custom",…}` (apply_patch), hosted ones
  (`web_search`), `{"type":"namespace","name":"mcp__<server>","tools":[{"type":"function",…}]}`
  (MCP tools grouped per server) and `{"type":"tool_search","execution":"client"}` (the search over
  deferred tools: with every bundled model of 0.169.0 Codex defers all MCP tools behind it; the
  tools a search finds come back in the `tools` of the `tool_search_output` input item, as
  namespaces, and are callable from then on).
  We answer with SSE (`event: <type>` + `data: <json>`): `response.created`,
  `response.output_item.added`, for a function call two `response.function_call_arguments.delta` and
  one `…done`, `response.output_item.done` (the item Codex acts on), `response.completed` with
  `usage`. A call to a namespaced tool is spelled back as
  `{"type":"function_call","namespace":"mcp__fs","name":"read_text_file",…}`; a search as
  `{"type":"tool_search_call","execution":"client","call_id":…,"arguments":{"query":…,"limit":…}}`.
- Anything else (`GET /v1/models`, `POST /v1/responses/compact`, a non-streaming request, unknown
  paths) gets a harmless answer and never reaches the pager.

Tool names handed to the pager are spelled `<namespace>__<name>` for namespaced tools (Codex's own
"mcp__<server>__<tool>", codex-rs `join_tool_name`) and `<name>` otherwise; the search tool is
`tool_search`. Codex offers MCP tools under names of [A-Za-z0-9_] only (`get-tiny-image` becomes
`get_tiny_image`): a name the pager picks that is not offered is mapped to the offered one it means
(`codex_spelling`, recorded in `Server.renamed`).

What the model is handed for a tool call is the `output` of the `function_call_output` item: a
string, or an array of content items (`input_text` / `input_image`). The handed text recorded for
the pager is the string itself, or the `input_text` texts of the array joined with "\\n" (Codex's
own rule when it flattens text items, see `formatted_truncate_text_content_items_with_policy`);
image items are recorded in `Server.media`. A `tool_search_output` item counts as one result too
(the compact JSON of the tools it loaded; the pager skips its own searches), and is recorded in
`Server.searches`.
Every request body is recorded, in order, in `Server.requests`.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

SEARCH_TOOL = "tool_search"


# ---------------------------------------------------------------------------------------------
# Reading a request


def output_text(output: Any) -> str:
    """The text a Responses model reads for one function_call_output's `output`."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        texts = []
        for item in output:
            if isinstance(item, str):
                texts.append(item)
            elif isinstance(item, dict) and item.get("type") in ("input_text", "output_text", "text"):
                texts.append(str(item.get("text", "")))
        return "\n".join(texts)
    if isinstance(output, dict) and "content" in output:  # {"content": …, "success": …} shape
        return output_text(output.get("content"))
    return json.dumps(output, ensure_ascii=False, separators=(",", ":"))


def output_media(output: Any) -> list[dict]:
    if not isinstance(output, list):
        return []
    return [item for item in output
            if isinstance(item, dict) and item.get("type") not in ("input_text", "output_text", "text")]


def _input_items(body: dict) -> list[dict]:
    items = body.get("input")
    if isinstance(items, list):
        return [i for i in items if isinstance(i, dict)]
    return []


def tool_results(body: dict) -> list[str]:
    """The handed text of every tool call of the history, in order: function_call_output (and
    custom_tool_call_output) outputs, and for a tool search the compact JSON of the tools it
    loaded (the pager counts its searches among the results and skips them)."""
    out = []
    for i in _input_items(body):
        if i.get("type") in ("function_call_output", "custom_tool_call_output"):
            out.append(output_text(i.get("output")))
        elif i.get("type") == "tool_search_output":
            out.append(json.dumps(i.get("tools") or [], ensure_ascii=False, separators=(",", ":")))
    return out


def spell(namespace: str | None, name: str) -> str:
    """A namespaced tool's name as Codex itself spells it (codex-rs `join_tool_name`): the namespace
    without trailing "_", "__", the name without leading "_" — "mcp__fs" + "read_text_file" ->
    "mcp__fs__read_text_file"."""
    if not namespace:
        return name
    return f"{namespace.rstrip('_')}__{name.lstrip('_')}"


def _add_tool_spec(spec: Any, names: dict[str, tuple[str | None, str]], namespace: str | None = None):
    if not isinstance(spec, dict):
        return
    kind = spec.get("type")
    if kind == "namespace":
        ns = spec.get("name") or ""
        for sub in spec.get("tools") or []:
            _add_tool_spec(sub, names, ns)
    elif kind == "tool_search":
        names[SEARCH_TOOL] = (None, SEARCH_TOOL)
    elif kind in ("function", "custom") and spec.get("name"):
        name = spec["name"]
        names[spell(namespace, name)] = (namespace, name)


def offered_tools(body: dict) -> dict[str, tuple[str | None, str]]:
    """Every tool the model may call in this request: spelled name -> (namespace, name).

    The request's `tools`, plus what earlier tool searches of the history loaded."""
    names: dict[str, tuple[str | None, str]] = {}
    for spec in body.get("tools") or []:
        _add_tool_spec(spec, names)
    for item in _input_items(body):
        if item.get("type") == "tool_search_output":
            for spec in item.get("tools") or []:
                _add_tool_spec(spec, names)
    return names


def codex_spelling(name: str, offered: dict) -> str:
    """The offered tool a model means by an MCP tool's own name: Codex renames MCP tools to
    [A-Za-z0-9_] (`get-tiny-image` is offered as `mcp__everything__get_tiny_image`), so a name not
    offered is matched again in that alphabet (exact, or as the part after "__"); else unchanged."""
    clean = re.sub(r"[^A-Za-z0-9_]", "_", name)
    for spelled in offered:
        if spelled == clean or spelled.endswith("__" + clean):
            return spelled
    return name


def is_agent_request(path: str, body: dict) -> bool:
    return path.split("?")[0].rstrip("/").endswith("/responses") and bool(body.get("stream"))


# ---------------------------------------------------------------------------------------------
# The server


class Server:
    """Recording state of one scripted model server."""

    def __init__(self, pager):
        self.pager = pager
        self.lock = threading.Lock()
        self.requests: list[dict] = []   # every request body (POST), in order
        self.paths: list[str] = []       # "METHOD path" of each request
        self.side: list[dict] = []       # requests answered without the pager
        self.media: list[dict] = []      # non-text items of the function_call_outputs (last agent request)
        self.searches: list[Any] = []    # tool_search_output items (last agent request)
        self.calls: list[dict] = []      # every item we emitted (function_call / tool_search_call / message)
        self.errors: list[str] = []      # exceptions raised while answering
        self.renamed: list[tuple] = []   # (name the pager chose, the offered name it was mapped to)
        self.counter = 0

    def next_id(self) -> str:
        with self.lock:
            self.counter += 1
            return f"{self.counter:04d}"


USAGE = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}


def _decide(state: Server, body: dict) -> dict:
    """Ask the pager; return the one output item to emit."""
    offered = offered_tools(body)
    items = _input_items(body)
    outputs = [i for i in items if i.get("type") in ("function_call_output", "custom_tool_call_output")]
    state.media = [m for i in outputs for m in output_media(i.get("output"))]
    state.searches = [i for i in items if i.get("type") == "tool_search_output"]
    step = state.pager.step(list(offered), tool_results(body))
    n = state.next_id()
    if hasattr(step, "name") and hasattr(step, "arguments"):
        spelled = step.name if step.name in offered else codex_spelling(step.name, offered)
        if spelled != step.name:
            state.renamed.append((step.name, spelled))
        namespace, name = offered.get(spelled, (None, step.name))
        if name == SEARCH_TOOL:
            args = dict(step.arguments or {})
            query = args.get("query") or args.get("q") or ""
            return {"type": "tool_search_call", "id": f"tsc_{n}", "call_id": f"call_{n}",
                    "status": "completed", "execution": "client",
                    "arguments": {"query": str(query), "limit": int(args.get("limit") or 8)}}
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": name,
                "arguments": json.dumps(step.arguments or {}), "status": "completed"}
        if namespace:
            item["namespace"] = namespace
        return item
    text = getattr(step, "text", None) or "done"
    return {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _sse(item: dict, model: str, rid: str) -> bytes:
    events: list[dict] = []
    base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model,
            "status": "in_progress", "output": []}
    events.append({"type": "response.created", "response": base})
    events.append({"type": "response.in_progress", "response": base})
    if item["type"] == "function_call":
        added = dict(item, arguments="", status="in_progress")
        events.append({"type": "response.output_item.added", "output_index": 0, "item": added})
        args = item["arguments"]
        half = len(args) // 2
        for piece in (args[:half], args[half:]):
            events.append({"type": "response.function_call_arguments.delta", "item_id": item["id"],
                           "output_index": 0, "delta": piece})
        events.append({"type": "response.function_call_arguments.done", "item_id": item["id"],
                       "output_index": 0, "arguments": args})
    elif item["type"] == "message":
        text = item["content"][0]["text"]
        events.append({"type": "response.output_item.added", "output_index": 0,
                       "item": dict(item, content=[], status="in_progress")})
        events.append({"type": "response.content_part.added", "item_id": item["id"], "output_index": 0,
                       "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
        events.append({"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0,
                       "content_index": 0, "delta": text})
        events.append({"type": "response.output_text.done", "item_id": item["id"], "output_index": 0,
                       "content_index": 0, "text": text})
        events.append({"type": "response.content_part.done", "item_id": item["id"], "output_index": 0,
                       "content_index": 0, "part": item["content"][0]})
    else:
        events.append({"type": "response.output_item.added", "output_index": 0, "item": item})
    events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    done = dict(base, status="completed", output=[item], usage=USAGE)
    events.append({"type": "response.completed", "response": done})
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


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
            state.paths.append(f"GET {self.path}")
            path = self.path.split("?")[0].rstrip("/")
            if path.endswith("/models"):
                # Both shapes: OpenAI's `data` list and Codex's own `models` catalog (empty: keep the bundled one).
                self._json(200, {"object": "list", "data": [], "models": []})
            else:
                self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

        def do_POST(self):
            state.paths.append(f"POST {self.path}")
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.headers.get("Content-Encoding", "").lower() == "zstd":
                state.errors.append("zstd-compressed request body (unsupported here)")
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            state.requests.append(body)
            path = self.path.split("?")[0].rstrip("/")
            if path.endswith("/responses/compact"):
                state.side.append(body)
                self._json(200, {"output": [{"type": "message", "role": "user",
                                             "content": [{"type": "input_text", "text": "(compacted)"}]}]})
                return
            if not is_agent_request(self.path, body):
                state.side.append(body)
                if path.endswith("/responses"):
                    item = {"type": "message", "id": f"msg_{state.next_id()}", "role": "assistant",
                            "status": "completed",
                            "content": [{"type": "output_text", "text": "ok", "annotations": []}]}
                    self._json(200, {"id": f"resp_{state.next_id()}", "object": "response",
                                     "status": "completed", "output": [item], "usage": USAGE})
                else:
                    self._json(404, {"error": {"message": f"unsupported path {self.path}",
                                               "type": "invalid_request_error"}})
                return
            try:
                item = _decide(state, body)
            except Exception as exc:  # answer something and keep the failure for the test
                state.errors.append(repr(exc))
                item = {"type": "message", "id": f"msg_{state.next_id()}", "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": f"scripted model error: {exc!r}",
                                     "annotations": []}]}
            state.calls.append(item)
            payload = _sse(item, body.get("model") or "scripted", f"resp_{state.next_id()}")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


def start(pager) -> tuple[str, Callable[[], None]]:
    """Serve on 127.0.0.1:<free port>. Returns (base_url ending in /v1, stop). The Server state is
    reachable as `stop.server` (requests, side, media, searches, calls, errors)."""
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
