"""A scripted Gemini API server (generativelanguage v1beta, as Gemini CLI calls it), on 127.0.0.1.

Gemini CLI (with `GOOGLE_GEMINI_BASE_URL` set, auth type "gateway") talks to it through @google/genai:

- `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` — the agent loop. The body carries
  `contents` (the whole history: user text, model `functionCall` parts, user `functionResponse` parts)
  and `tools: [{functionDeclarations: [{name, description, parametersJsonSchema}]}]`. We answer with
  one SSE event `data: <GenerateContentResponse>`: `candidates[0].content.parts` = `[{functionCall}]`
  or `[{text}]`, `finishReason: "STOP"`, a small `usageMetadata` (small on purpose: Gemini CLI derives
  its MCP output truncation threshold and its chat compression from the reported prompt size).
- `POST …:generateContent` — side requests (JSON mode: next-speaker check, model-router classifier,
  loop detection, session summary …): answered with a JSON object that fits the request's
  `responseJsonSchema` (special-cased where a default value would derail the scripted flow),
  or plain text "ok" when no schema is asked for.
- `POST …:countTokens`, `…:embedContent`, `…:batchEmbedContents`, `GET /v1beta/models[/<m>]`:
  harmless answers.

What the model is handed for a tool call is the `functionResponse.response` object of the
`functionResponse` part — Gemini CLI puts the MCP result's text in `{"output": "…"}` (or an error
in `{"error": "…"}`). The API carries it as JSON, and the model reads that JSON: the handed text
recorded for the pager is `json.dumps(response)` in compact form (what `JSON.stringify` put on the
wire). Sibling or nested `inlineData` parts (images) are recorded in `Server.inline`.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


def handed_text(response: Any) -> str:
    """The text the model reads for one functionResponse: its `response` object as compact JSON."""
    return json.dumps(response, ensure_ascii=False, separators=(",", ":"))


def function_responses(body: dict) -> list[dict]:
    """Every `functionResponse` part of the request's history, in order."""
    out = []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            if isinstance(part, dict) and "functionResponse" in part:
                out.append(part["functionResponse"])
    return out


def tool_names(body: dict) -> list[str]:
    """The function declarations offered, MCP tools (`mcp_<server>_<tool>`) first, so that a
    suffix match prefers `mcp_s_read_file` to Gemini CLI's own `read_file`."""
    names = []
    for tool in body.get("tools") or []:
        for decl in tool.get("functionDeclarations") or []:
            if decl.get("name"):
                names.append(decl["name"])
    return [n for n in names if n.startswith("mcp_")] + [n for n in names if not n.startswith("mcp_")]


def inline_parts(body: dict) -> list[dict]:
    """inlineData parts in the history (sibling parts or functionResponse.parts): images handed."""
    out = []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            if not isinstance(part, dict):
                continue
            if "inlineData" in part:
                out.append(part["inlineData"])
            fr = part.get("functionResponse")
            if isinstance(fr, dict):
                for p in fr.get("parts") or []:
                    if isinstance(p, dict) and "inlineData" in p:
                        out.append(p["inlineData"])
    return out


def _fill(schema: Any) -> Any:
    """A value valid against a (simple) JSON schema: first enum value, empty string, 0, false …"""
    if not isinstance(schema, dict):
        return ""
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _fill(schema[key][0])
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), typ[0] if typ else "string")
    typ = str(typ or ("object" if "properties" in schema else "string")).lower()
    if typ == "object":
        return {k: _fill(v) for k, v in (schema.get("properties") or {}).items()}
    if typ == "array":
        return []
    if typ in ("integer", "number"):
        return schema.get("minimum", 0)
    if typ == "boolean":
        return False
    return ""


def side_answer(body: dict) -> str:
    """The text of a harmless answer to a non-streaming side request."""
    cfg = body.get("generationConfig") or {}
    schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema")
    if not schema and cfg.get("responseMimeType") != "application/json":
        return "ok"
    value = _fill(schema or {})
    if isinstance(value, dict):
        props = (schema or {}).get("properties") or {}
        if "next_speaker" in props:  # next-speaker check: the user speaks next, the turn ends
            value["next_speaker"] = "user"
        if "complexity_score" in props:  # numerical model-router classifier: 1..100
            value["complexity_score"] = 10
        if "model_choice" in props:  # model-router classifier
            enum = (props["model_choice"] or {}).get("enum") or ["flash"]
            value["model_choice"] = "flash" if "flash" in enum else enum[0]
        for k in ("unproductive_state_confidence", "confidence"):  # loop detection: no loop
            if k in props:
                value[k] = 0
        for k, v in props.items():  # any boolean "is looping"-like flag stays false
            if isinstance(v, dict) and v.get("type") == "boolean":
                value[k] = False
    return json.dumps(value)


def _usage() -> dict:
    return {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}


def _response(parts: list[dict], model: str) -> dict:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": _usage(),
        "modelVersion": model,
    }


class Server:
    def __init__(self, pager: Any):
        self.pager = pager
        #: every request, in order: {"method", "path", "body" (parsed), "raw" (the body as sent)}
        self.requests: list[dict] = []
        self.inline: list[dict] = []  # inlineData handed to the model, last seen history
        self.errors: list[str] = []
        #: functionResponse id -> its handed text in the first request that carried it. Gemini CLI
        #: later masks old tool outputs in the history it resends (ToolOutputMaskingService: once
        #: the newer tool outputs pass ~50,000 estimated tokens, older ones, if ≥ 30,000 tokens in
        #: all, become "<tool_output_masked>…250 chars…[TRUNCATED]…250 chars…</tool_output_masked>"
        #: previews): the pager is given what the model read when the result was new; `masked`
        #: holds the later, masked renderings (id -> text), for the record.
        self.first_seen: dict[str, str] = {}
        self.order: list[str] = []
        self.masked: dict[str, str] = {}
        self.lock = threading.Lock()

    def answer(self, body: dict, model: str) -> list[dict]:
        results = []
        with self.lock:
            for i, fr in enumerate(function_responses(body)):
                key = str(fr.get("id") or f"#{i}")
                text = handed_text(fr.get("response"))
                if key not in self.first_seen:
                    self.first_seen[key] = text
                    self.order.append(key)
                elif text != self.first_seen[key] and key not in self.masked:
                    self.masked[key] = text
                results.append(self.first_seen[key])
            self.inline = inline_parts(body)
            step = self.pager.step(tool_names(body), results)
        if hasattr(step, "arguments"):
            return [{"functionCall": {"name": step.name, "args": step.arguments}}]
        return [{"text": getattr(step, "text", "done")}]

    @property
    def handed(self) -> list[str]:
        """Every tool result as the model was first handed it, in order."""
        return [self.first_seen[k] for k in self.order]


_MODEL_RE = re.compile(r"/models/([^/:]+)(?::(\w+))?")


def start(pager: Any) -> tuple[str, Callable[[], None]]:
    """Start the scripted server. Returns (base_url, stop); `stop.server` is the `Server`
    (its `requests` list holds every request body, in order)."""
    srv = Server(pager)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _send(self, code: int, payload: Any, ctype="application/json"):
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            srv.requests.append({"method": "GET", "path": self.path, "body": None})
            m = _MODEL_RE.search(self.path)
            if m:
                name = m.group(1)
                self._send(200, {"name": f"models/{name}", "inputTokenLimit": 1048576,
                                 "outputTokenLimit": 65536,
                                 "supportedGenerationMethods": ["generateContent", "countTokens"]})
            else:
                self._send(200, {"models": []})

        def do_POST(self):
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            srv.requests.append({"method": "POST", "path": self.path, "body": body,
                                 "raw": raw.decode("utf-8", "replace")})
            m = _MODEL_RE.search(self.path)
            model = m.group(1) if m else "gemini"
            action = (m.group(2) if m else "") or ""
            try:
                if action == "streamGenerateContent":
                    chunk = _response(srv.answer(body, model), model)
                    data = f"data: {json.dumps(chunk)}\r\n\r\n".encode()
                    self._send(200, data, "text/event-stream")
                elif action == "generateContent":
                    self._send(200, _response([{"text": side_answer(body)}], model))
                elif action == "countTokens":
                    self._send(200, {"totalTokens": 100})
                elif action == "embedContent":
                    self._send(200, {"embedding": {"values": [0.0] * 8}})
                elif action == "batchEmbedContents":
                    n = len(body.get("requests") or [])
                    self._send(200, {"embeddings": [{"values": [0.0] * 8}] * n})
                else:
                    self._send(200, {})
            except Exception as e:  # never hang the client: answer, and keep the error
                srv.errors.append(f"{type(e).__name__}: {e}")
                self._send(500, {"error": {"code": 500, "message": str(e), "status": "INTERNAL"}})

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()

    def stop():
        httpd.shutdown()
        httpd.server_close()

    stop.server = srv  # type: ignore[attr-defined]
    stop.requests = srv.requests  # type: ignore[attr-defined]
    return f"http://127.0.0.1:{httpd.server_address[1]}", stop
