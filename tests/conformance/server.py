"""The conformance fixture server: what the official MCP conformance suite's server scenarios
ask of a server (each scenario's "Server Implementation Requirements" in
@modelcontextprotocol/conformance 0.1.16, and the names its reference server's README lists),
written from those requirements on the Python MCP SDK's low-level `Server` (mcp 2.x).

One server, two transports, so the suite can see it direct and through every face of mcp-budget:

    python server.py                     stdio (behind `mcp-budget serve -- python server.py`)
    python server.py --http PORT         Streamable HTTP on 127.0.0.1:PORT/mcp (direct, and
                                         behind `mcp-budget serve --upstream URL`)
    --dynamic-after SECONDS              when the dynamic items appear (default 2, as the
                                         suite's reference server; tests/conformance/run.py: 0)

The HTTP face keeps every event in memory (an event store) so that a client whose SSE stream
closes can resume with Last-Event-ID, sends the `retry` field in priming events, and checks
Host/Origin (DNS rebinding protection, the SDK's localhost default). Results are plain dicts in
wire form, so that what a requirement spells out (a `$schema` keyword, `enumNames`) goes out
as written.
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import sys
import time
import warnings
from contextvars import ContextVar
from itertools import count
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore

# The logging, sampling and client-progress features are deprecated in the 2026-07-28 protocol;
# the suite tests the 2025 ones.
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*deprecated.*")

START = time.monotonic()
#: The dynamic tool, resource and prompt appear this long after start-up (the reference
#: server's "automatic behaviours").
DYNAMIC_AFTER = 2.0
#: A subscribed `test://watched-resource` is reported updated this often.
WATCH_EVERY = 3.0
#: SSE `retry` (ms) sent in priming events: how long a client waits before it reconnects.
RETRY_MS = 1000

# A 1x1 red pixel PNG and a tiny WAV (44-byte header, 2 silent 8-bit samples), made here.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
        "0000000c49444154789c63f8cfc000000301010018dd8db00000000049454e44ae426082"
    )
).decode()
_WAV_DATA = b"\x80\x80"
WAV = base64.b64encode(
    b"RIFF"
    + (36 + len(_WAV_DATA)).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")  # PCM
    + (1).to_bytes(2, "little")  # mono
    + (8000).to_bytes(4, "little")
    + (8000).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (8).to_bytes(2, "little")
    + b"data"
    + len(_WAV_DATA).to_bytes(4, "little")
    + _WAV_DATA
).decode()

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

NO_ARGS = {"type": "object", "properties": {}}


def _tool(name: str, description: str, schema: dict | None = None) -> dict:
    return {"name": name, "description": description, "inputSchema": schema or NO_ARGS}


TOOLS: list[dict] = [
    _tool("test_simple_text", "Returns a simple text item"),
    _tool("test_image_content", "Returns an image item (a 1x1 PNG)"),
    _tool("test_audio_content", "Returns an audio item (a tiny WAV)"),
    _tool("test_embedded_resource", "Returns an embedded text resource"),
    _tool("test_multiple_content_types", "Returns text, image and embedded resource items"),
    _tool("test_tool_with_logging", "Sends three info log messages while it runs"),
    _tool("test_tool_with_progress", "Reports progress 0, 50, 100 of 100 when asked to"),
    _tool("test_error_handling", "Always fails with isError: true"),
    _tool(
        "test_sampling",
        "Asks the client's LLM (sampling/createMessage) and returns its answer",
        {
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
            "required": ["prompt"],
        },
    ),
    _tool(
        "test_elicitation",
        "Asks the user (elicitation/create) for a username and an email",
        {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The message to show the user"}},
            "required": ["message"],
        },
    ),
    _tool("test_elicitation_sep1034_defaults", "Elicitation whose schema has a default for each primitive type"),
    _tool("test_elicitation_sep1330_enums", "Elicitation whose schema has the five kinds of enum"),
    _tool("test_reconnection", "Closes its SSE stream mid-call; the result comes after the client resumes"),
    {
        "name": "json_schema_2020_12_tool",
        "description": "Tool with JSON Schema 2020-12 features",
        "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    },
]
DYNAMIC_TOOL = _tool("test_dynamic_tool", "Appears a moment after the server starts")

RESOURCES: list[dict] = [
    {
        "uri": "test://static-text",
        "name": "static-text",
        "description": "A static text resource",
        "mimeType": "text/plain",
    },
    {
        "uri": "test://static-binary",
        "name": "static-binary",
        "description": "A static binary resource (a 1x1 PNG)",
        "mimeType": "image/png",
    },
    {
        "uri": "test://watched-resource",
        "name": "watched-resource",
        "description": "A resource that changes every few seconds (subscribe to hear of it)",
        "mimeType": "text/plain",
    },
]
DYNAMIC_RESOURCE = {
    "uri": "test://dynamic-resource",
    "name": "dynamic-resource",
    "description": "Appears a moment after the server starts",
    "mimeType": "text/plain",
}
TEMPLATE = {
    "uriTemplate": "test://template/{id}/data",
    "name": "template-data",
    "description": "JSON data for any id",
    "mimeType": "application/json",
}

PROMPTS: list[dict] = [
    {"name": "test_simple_prompt", "description": "A prompt without arguments"},
    {
        "name": "test_prompt_with_arguments",
        "description": "A prompt with two arguments",
        "arguments": [
            {"name": "arg1", "description": "First test argument", "required": True},
            {"name": "arg2", "description": "Second test argument", "required": True},
        ],
    },
    {
        "name": "test_prompt_with_embedded_resource",
        "description": "A prompt that embeds a resource",
        "arguments": [{"name": "resourceUri", "description": "URI of the resource to embed", "required": True}],
    },
    {"name": "test_prompt_with_image", "description": "A prompt with an image"},
]
DYNAMIC_PROMPT = {"name": "test_dynamic_prompt", "description": "Appears a moment after the server starts"}

COMPLETIONS = {
    "arg1": ["paris", "park", "party", "test-value", "testing"],
    "arg2": ["hello", "help", "world"],
    "id": ["1", "123", "42"],
}


def _dynamic() -> bool:
    return time.monotonic() - START >= DYNAMIC_AFTER


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


class Clients:
    """What the server remembers of each connected client: its log level, its subscriptions and
    a handle on its standalone channel (for notifications no request asked for)."""

    def __init__(self) -> None:
        self.level: dict[int, str] = {}
        self.subscribed: dict[int, set[str]] = {}
        self.sessions: dict[int, Any] = {}
        self.told_dynamic: set[int] = set()

    @staticmethod
    def key(ctx: Any) -> int:
        # One `ServerSession` is made per request; they share the connection.
        return id(getattr(ctx.session, "_connection", ctx.session))

    def seen(self, ctx: Any) -> int:
        k = self.key(ctx)
        self.sessions[k] = ctx.session
        if _dynamic():
            self.told_dynamic.add(k)  # it lists the dynamic items already
        return k

    def forget(self, k: int) -> None:
        for d in (self.level, self.subscribed, self.sessions):
            d.pop(k, None)


CLIENTS = Clients()


async def background() -> None:
    """The automatic behaviours: list-changed notifications once the dynamic items appear, and
    `notifications/resources/updated` for the watched resource to its subscribers."""
    await anyio.sleep(DYNAMIC_AFTER)
    for k, session in list(CLIENTS.sessions.items()) if DYNAMIC_AFTER > 0 else []:
        if k in CLIENTS.told_dynamic:
            continue
        CLIENTS.told_dynamic.add(k)
        try:
            await session.send_tool_list_changed()
            await session.send_resource_list_changed()
            await session.send_prompt_list_changed()
        except Exception:  # the client has gone
            CLIENTS.forget(k)
    while True:
        await anyio.sleep(WATCH_EVERY)
        for k, uris in list(CLIENTS.subscribed.items()):
            session = CLIENTS.sessions.get(k)
            if session is None or "test://watched-resource" not in uris:
                continue
            try:
                await session.send_resource_updated("test://watched-resource")
            except Exception:
                CLIENTS.forget(k)


async def log(ctx: Any, level: str, message: str) -> None:
    wanted = CLIENTS.level.get(CLIENTS.key(ctx), "debug")
    if LEVELS.index(level) < LEVELS.index(wanted):
        return
    await ctx.session.send_log_message(level, message, logger="conformance-server", related_request_id=ctx.request_id)


async def list_tools(ctx: Any, params: Any) -> dict:
    CLIENTS.seen(ctx)
    return {"tools": TOOLS + ([DYNAMIC_TOOL] if _dynamic() else [])}


def _client_can(ctx: Any, what: str) -> bool:
    caps = ctx.session.client_capabilities
    return caps is not None and getattr(caps, what, None) is not None


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> dict:
    CLIENTS.seen(ctx)
    name = params.name
    args = params.arguments or {}
    if name == "test_simple_text":
        return {"content": [_text("This is a simple text response for testing.")]}
    if name == "test_image_content":
        return {"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}
    if name == "test_audio_content":
        return {"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]}
    if name == "test_embedded_resource":
        return {
            "content": [
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://embedded-resource",
                        "mimeType": "text/plain",
                        "text": "This is an embedded resource content.",
                    },
                }
            ]
        }
    if name == "test_multiple_content_types":
        return {
            "content": [
                _text("Multiple content types test:"),
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": json.dumps({"test": "data", "value": 123}, separators=(",", ":")),
                    },
                },
            ]
        }
    if name == "test_tool_with_logging":
        await log(ctx, "info", "Tool execution started")
        await anyio.sleep(0.05)
        await log(ctx, "info", "Tool processing data")
        await anyio.sleep(0.05)
        await log(ctx, "info", "Tool execution completed")
        return {"content": [_text("Tool with logging executed successfully")]}
    if name == "test_tool_with_progress":
        # A no-op when the request carried no progress token.
        for i, p in enumerate((0, 50, 100)):
            if i:
                await anyio.sleep(0.05)
            await ctx.session.report_progress(p, 100)
        return {"content": [_text("Tool with progress executed successfully")]}
    if name == "test_error_handling":
        return {"isError": True, "content": [_text("This tool intentionally returns an error for testing")]}
    if name == "test_sampling":
        if not _client_can(ctx, "sampling"):
            return {"isError": True, "content": [_text("The client does not support sampling")]}
        result = await ctx.session.create_message(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=str(args.get("prompt", ""))))],
            max_tokens=100,
            related_request_id=ctx.request_id,
        )
        content = result.content
        text = content.text if isinstance(content, types.TextContent) else json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True)["content"])
        return {"content": [_text(f"LLM response: {text}")]}
    if name in ("test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"):
        if not _client_can(ctx, "elicitation"):
            return {"isError": True, "content": [_text("The client does not support elicitation")]}
        message, schema = ELICITATIONS[name](args)
        result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        answer = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        content = json.dumps(answer.get("content"), separators=(",", ":"))
        if name == "test_elicitation":
            return {"content": [_text(f"User response: action={answer['action']}, content={content}")]}
        return {"content": [_text(f"Elicitation completed: action={answer['action']}, content={content}")]}
    if name == "test_reconnection":
        # Close this request's SSE stream (HTTP, a client of 2025-11-25 or later: the SDK hands
        # the callback only then); the result is stored and sent when the client resumes.
        if ctx.close_sse_stream is not None:
            await ctx.close_sse_stream()
        await anyio.sleep(0.1)
        return {
            "content": [
                _text("Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.")
            ]
        }
    if name == "test_dynamic_tool" and _dynamic():
        return {"content": [_text("The dynamic tool answers")]}
    return {"isError": True, "content": [_text(f"Unknown tool: {name}")]}


def _elicit_plain(args: dict) -> tuple[str, dict]:
    return str(args.get("message", "")), {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }


def _elicit_defaults(_args: dict) -> tuple[str, dict]:
    return "Please review these fields (each has a default)", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Name", "default": "John Doe"},
            "age": {"type": "integer", "description": "Age", "default": 30},
            "score": {"type": "number", "description": "Score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "Status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verified", "default": True},
        },
    }


def _elicit_enums(_args: dict) -> tuple[str, dict]:
    return "Please choose from these lists", {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {
                "type": "string",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]
                },
            },
        },
    }


ELICITATIONS = {
    "test_elicitation": _elicit_plain,
    "test_elicitation_sep1034_defaults": _elicit_defaults,
    "test_elicitation_sep1330_enums": _elicit_enums,
}


async def list_resources(ctx: Any, params: Any) -> dict:
    CLIENTS.seen(ctx)
    return {"resources": RESOURCES + ([DYNAMIC_RESOURCE] if _dynamic() else [])}


async def list_resource_templates(ctx: Any, params: Any) -> dict:
    return {"resourceTemplates": [TEMPLATE]}


def _template_id(uri: str) -> str | None:
    prefix, suffix = "test://template/", "/data"
    if uri.startswith(prefix) and uri.endswith(suffix) and len(uri) > len(prefix) + len(suffix):
        ident = uri[len(prefix) : -len(suffix)]
        return ident if "/" not in ident else None
    return None


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> dict:
    uri = str(params.uri)
    if uri == "test://static-text":
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."}]}
    if uri == "test://static-binary":
        return {"contents": [{"uri": uri, "mimeType": "image/png", "blob": PNG}]}
    if uri == "test://watched-resource":
        tick = int((time.monotonic() - START) // WATCH_EVERY)
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"Watched resource, version {tick}"}]}
    if uri == "test://dynamic-resource" and _dynamic():
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "The dynamic resource"}]}
    ident = _template_id(uri)
    if ident is not None:
        text = json.dumps({"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"}, separators=(",", ":"))
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": text}]}
    from mcp.shared.exceptions import MCPError

    raise MCPError(code=-32002, message=f"Resource not found: {uri}")


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> dict:
    k = CLIENTS.seen(ctx)
    CLIENTS.subscribed.setdefault(k, set()).add(str(params.uri))
    return {}


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> dict:
    k = CLIENTS.seen(ctx)
    CLIENTS.subscribed.get(k, set()).discard(str(params.uri))
    return {}


async def list_prompts(ctx: Any, params: Any) -> dict:
    CLIENTS.seen(ctx)
    return {"prompts": PROMPTS + ([DYNAMIC_PROMPT] if _dynamic() else [])}


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> dict:
    name = params.name
    args = params.arguments or {}
    if name == "test_simple_prompt":
        return {"messages": [{"role": "user", "content": _text("This is a simple prompt for testing.")}]}
    if name == "test_prompt_with_arguments":
        a1, a2 = args.get("arg1", ""), args.get("arg2", "")
        return {"messages": [{"role": "user", "content": _text(f"Prompt with arguments: arg1='{a1}', arg2='{a2}'")}]}
    if name == "test_prompt_with_embedded_resource":
        uri = args.get("resourceUri", "test://example-resource")
        return {
            "messages": [
                {
                    "role": "user",
                    "content": {
                        "type": "resource",
                        "resource": {"uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing."},
                    },
                },
                {"role": "user", "content": _text("Please process the embedded resource above.")},
            ]
        }
    if name == "test_prompt_with_image":
        return {
            "messages": [
                {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
                {"role": "user", "content": _text("Please analyze the image above.")},
            ]
        }
    if name == "test_dynamic_prompt" and _dynamic():
        return {"messages": [{"role": "user", "content": _text("The dynamic prompt")}]}
    from mcp.shared.exceptions import MCPError

    raise MCPError(code=-32602, message=f"Unknown prompt: {name}")


async def complete(ctx: Any, params: types.CompleteRequestParams) -> dict:
    arg = params.argument
    values = [v for v in COMPLETIONS.get(arg.name, []) if v.startswith(arg.value)]
    return {"completion": {"values": values[:100], "total": len(values), "hasMore": False}}


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> dict:
    CLIENTS.level[CLIENTS.seen(ctx)] = params.level
    return {}


class ConformanceServer(Server):
    """Advertises `listChanged` for tools, resources and prompts (the dynamic items), on every
    transport: the HTTP session manager asks for the options without arguments."""

    def create_initialization_options(self, notification_options=None, *args: Any, **kwargs: Any):
        from mcp.server.lowlevel import NotificationOptions

        notification_options = notification_options or NotificationOptions(
            prompts_changed=True, resources_changed=True, tools_changed=True
        )
        return super().create_initialization_options(notification_options, *args, **kwargs)


def make_server() -> Server:
    return ConformanceServer(
        "mcp-budget-conformance-server",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
        on_set_logging_level=set_level,
    )


#: The MCP session of the HTTP request being served, as a mutable holder: tasks started while
#: serving a request (the session's message router starts during its `initialize`) share it.
SESSION: ContextVar[dict] = ContextVar("conformance_session")


class MemoryEventStore(EventStore):
    """Every SSE event kept in memory, in order, so a stream can be resumed after any of them.

    The SDK names a POST's stream by its JSON-RPC request id, and every session's transport
    shares the one store: two sessions' requests of the same id would replay into each other.
    Events are therefore kept per MCP session too (`SESSION`)."""

    def __init__(self) -> None:
        self._events: list[tuple[str, Any, str, Any]] = []  # (event id, session, stream, message)
        self._index: dict[str, int] = {}
        self._ids = count(1)

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = f"{next(self._ids)}"
        self._index[event_id] = len(self._events)
        self._events.append((event_id, SESSION.get({}).get("sid"), stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        at = self._index.get(last_event_id)
        if at is None:
            return None
        _, session, stream_id, _ = self._events[at]
        if session is None or session != SESSION.get({}).get("sid"):
            return None
        for event_id, sess, sid, message in self._events[at + 1 :]:
            if sess == session and sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


class SessionVersion:
    """ASGI middleware: notes each request's MCP session (`SESSION`: the `Mcp-Session-Id` it
    carries, or the one its `initialize` answer assigns), and reads a request of a session at
    the protocol version the session's client has already spoken on it.

    The SDK mints SSE priming events (and lets a tool close its stream for the client to resume)
    only for requests whose `MCP-Protocol-Version` header is 2025-11-25 or later, since older
    clients cannot parse an event with empty data. The suite's `server-sse-polling` and
    `server-sse-multiple-streams` scenarios negotiate 2025-11-25 with the SDK client and then
    POST by hand with `mcp-protocol-version: 2025-03-26` on the same session; without this the
    server could never show them SEP-1699's polling. A session that never spoke 2025-11-25 is
    left alone."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.spoken: dict[bytes, bytes] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        sid, version = headers.get(b"mcp-session-id"), headers.get(b"mcp-protocol-version")
        if sid and version:
            known = self.spoken.get(sid)
            if known is None or version > known:
                self.spoken[sid] = version
            elif version < known and known >= b"2025-11-25":
                scope = dict(scope)
                scope["headers"] = [(k, known if k == b"mcp-protocol-version" else v) for k, v in scope["headers"]]
        holder = {"sid": sid.decode() if sid else None}

        async def noting_send(message: Any) -> None:
            if message["type"] == "http.response.start" and holder["sid"] is None:
                for k, v in message.get("headers", []):
                    if k.lower() == b"mcp-session-id":
                        holder["sid"] = v.decode()
            await send(message)

        token = SESSION.set(holder)
        try:
            await self.app(scope, receive, noting_send)
        finally:
            SESSION.reset(token)


async def main_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = make_server()
    async with anyio.create_task_group() as tg:
        tg.start_soon(background)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        tg.cancel_scope.cancel()


async def main_http(port: int) -> None:
    import uvicorn

    server = make_server()
    app = server.streamable_http_app(
        event_store=MemoryEventStore(),
        retry_interval=RETRY_MS,
        # The suite never ends its sessions (no DELETE): keep every one.
        max_sessions=None,
        session_idle_timeout=None,
        host="127.0.0.1",
    )
    config = uvicorn.Config(SessionVersion(app), host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    async with anyio.create_task_group() as tg:
        tg.start_soon(background)
        await uvicorn.Server(config).serve()
        tg.cancel_scope.cancel()


def main() -> None:
    global DYNAMIC_AFTER
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument(
        "--dynamic-after",
        type=float,
        default=DYNAMIC_AFTER,
        metavar="SECONDS",
        help="when the dynamic tool, resource and prompt appear (0: from the start, and no "
        "list-changed notification is ever sent, so no scenario's stream depends on timing)",
    )
    args = parser.parse_args()
    DYNAMIC_AFTER = args.dynamic_after
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    anyio.run(main_http, args.http) if args.http is not None else anyio.run(main_stdio)


if __name__ == "__main__":
    main()
