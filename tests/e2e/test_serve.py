"""`mcp-budget serve` (Streamable HTTP) in front of stdio servers, driven by the Python SDK's own
Streamable HTTP client: the same calls as the stdio tests give the same shaped results over HTTP
as through `mcp-budget proxy` on stdio."""

from __future__ import annotations

import json
import re
import subprocess
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
import pytest
from mcp import Client

from harness import (
    BIN,
    NODE_BIN,
    assert_blobs_kept,
    assert_same,
    body_of,
    meta_of,
    page_meta,
    read_all,
    session,
    text_items,
    wire,
)

pytestmark = pytest.mark.anyio
FIXTURE = str(BIN)
EVERYTHING = str(NODE_BIN / "mcp-server-everything")


@asynccontextmanager
async def served(command: str | None, args: list[str], serve_args: list[str] | None = None) -> AsyncIterator[str]:
    """`mcp-budget serve` on a free local port in front of `command args` (none: `serve_args`
    name a remote one with `--upstream`); yields the URL."""
    upstream = ["--", command, *args] if command is not None else []
    proc = subprocess.Popen(
        [str(BIN), "serve", "--listen", "127.0.0.1:0", *(serve_args or []), *upstream],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        url = None
        for line in proc.stderr:
            m = re.search(r"serving (http://\S+)", line)
            if m:
                url = m.group(1)
                break
        assert url, "serve printed no address"
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@asynccontextmanager
async def http_session(url: str, *, mode: str = "legacy", roots: list[str] | None = None,
                       roots_asked: list[int] | None = None, logging_callback: Any = None) -> AsyncIterator[Client]:
    callback = None
    if roots is not None:
        import mcp_types as types

        async def callback(_context: Any) -> Any:
            if roots_asked is not None:
                roots_asked.append(1)
            return types.ListRootsResult(roots=[types.Root(uri=u, name=Path(u).name) for u in roots])

    async with Client(url, mode=mode, list_roots_callback=callback, logging_callback=logging_callback,
                      read_timeout_seconds=300) as c:
        yield c


def _pages_equal(stdio_pages: list[dict], http_pages: list[dict]) -> None:
    """Same pages: same bodies, same positions (`_meta` page and location), same token counts.
    Response ids and cursors are random per response and are not compared."""
    assert len(http_pages) == len(stdio_pages)
    for n, (a, b) in enumerate(zip(stdio_pages, http_pages)):
        assert body_of(a) == body_of(b), f"page {n + 1} differs"
        pa, pb = page_meta(a) or {}, page_meta(b) or {}
        assert (pa.get("page"), pa.get("location"), pa.get("total_tokens")) == (
            pb.get("page"), pb.get("location"), pb.get("total_tokens")), f"page {n + 1} position differs"


@pytest.mark.parametrize("tool", ["directory_tree", "table_rows", "long_text"])
async def test_big_result_pages_the_same_over_http(tool):
    async with session(FIXTURE, ["fixture-server"], proxy=False, mode="legacy") as c:
        direct = wire(await c.call_tool(tool, {}))
    async with session(FIXTURE, ["fixture-server"], proxy=True, mode="legacy") as c:
        stdio_pages = await read_all(c, await c.call_tool(tool, {}))
    async with served(FIXTURE, ["fixture-server"]) as url, http_session(url) as c:
        http_pages = await read_all(c, await c.call_tool(tool, {}))
    assert len(http_pages) > 1
    assert_same(body_of(direct), http_pages)
    _pages_equal(stdio_pages, http_pages)


async def test_query_response_over_http():
    query = "[.[] | select(.id % 1000 == 0) | .name]"
    async with session(FIXTURE, ["fixture-server"], proxy=True, mode="legacy") as c:
        first = wire(await c.call_tool("table_rows", {}))
        stdio = wire(await c.call_tool("query_response", {"response_id": meta_of(first)["response_id"], "query": query}))
    async with served(FIXTURE, ["fixture-server"]) as url, http_session(url) as c:
        first = wire(await c.call_tool("table_rows", {}))
        http = wire(await c.call_tool("query_response", {"response_id": meta_of(first)["response_id"], "query": query}))
    assert not http.get("isError"), text_items(http)
    assert body_of(http) == body_of(stdio)
    assert json.loads(body_of(http))[:2] == ["row-00000", "row-01000"]


async def test_image_is_offloaded_over_http(tmp_path):
    # Small images stay inline by default (`images = "auto"`); `file` offloads them.
    config = tmp_path / "images.toml"
    config.write_text('[defaults]\nimages = "file"\n')
    async with session(FIXTURE, ["fixture-server"], proxy=False, mode="legacy") as c:
        direct = wire(await c.call_tool("image", {}))
    async with served(FIXTURE, ["fixture-server"], ["--config", str(config)]) as url, http_session(url) as c:
        shaped = wire(await c.call_tool("image", {}))
    assert_blobs_kept(direct, shaped)
    described = [json.loads(t) for t in text_items(shaped) if t.startswith("{")]
    assert any((d.get("width"), d.get("height")) == (64, 48) for d in described), described


async def test_progress_and_log_notifications_over_http():
    seen, logs = [], []

    async def on_progress(progress, total, message):
        seen.append(progress)

    async def on_log(params):
        logs.append(params.data)

    async with served(FIXTURE, ["fixture-server"]) as url, http_session(url, logging_callback=on_log) as c:
        result = await c.call_tool("progress", {"steps": 4}, progress_callback=on_progress)
    assert body_of(wire(result)) == "done 4 steps"
    assert seen == [1, 2, 3, 4]
    assert logs == ["progress tool ran"]


async def test_roots_list_round_trip_over_http():
    asked: list[int] = []
    async with served(FIXTURE, ["fixture-server"]) as url, http_session(
        url, roots=["file:///tmp/e2e-root"], roots_asked=asked
    ) as c:
        result = wire(await c.call_tool("roots", {}))
    assert asked == [1]
    assert "file:///tmp/e2e-root" in body_of(result)


async def test_stateless_2026_07_28_over_http():
    args = ["fixture-server", "--protocol", "2026-07-28"]
    async with session(FIXTURE, args, proxy=False, mode="2026-07-28") as c:
        direct = wire(await c.call_tool("table_rows", {}))
    async with served(FIXTURE, args) as url, http_session(url, mode="auto") as c:
        assert c.protocol_version == "2026-07-28"
        pages = await read_all(c, await c.call_tool("table_rows", {}))
    assert len(pages) > 1
    assert_same(body_of(direct), pages)


async def test_auto_mode_falls_back_to_a_session_for_a_legacy_server():
    async with served(FIXTURE, ["fixture-server"]) as url, http_session(url, mode="auto") as c:
        assert c.protocol_version != "2026-07-28"
        result = wire(await c.call_tool("echo", {"over": "http"}))
    assert body_of(result) == '{"over":"http"}'


async def test_everything_over_http_like_stdio():
    """@modelcontextprotocol/server-everything: an image item and progress, as on stdio."""
    async with session(EVERYTHING, [], proxy=True) as c:
        stdio = wire(await c.call_tool("get-tiny-image", {}))
    seen = []

    async def on_progress(progress, total, message):
        seen.append(progress)

    async with served(EVERYTHING, []) as url, http_session(url, mode="auto") as c:
        http = wire(await c.call_tool("get-tiny-image", {}))
        done = await c.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 3},
                                 progress_callback=on_progress)
    assert http == stdio
    assert not done.is_error
    assert seen == [1, 2, 3]


async def test_a_crash_mid_call_is_an_error_over_http():
    with anyio.fail_after(60):
        async with served(FIXTURE, ["fixture-server"]) as url:
            with pytest.raises(Exception) as caught:  # noqa: PT011 - any error; a hang is the bug
                async with http_session(url) as c:
                    await c.call_tool("crash", {})
            assert not isinstance(caught.value, TimeoutError)
            # The server is still up: a new session works.
            async with http_session(url) as c:
                assert body_of(wire(await c.call_tool("echo", {"again": 1}))) == '{"again":1}'


# HTTP → HTTP: server-everything in Streamable HTTP mode behind `serve --upstream`.
from test_remote import everything_url  # noqa: E402,F401 - the fixture

_IDS = re.compile(r"[0-9a-f]{12}(\.\d+)?")
BIG = " ".join(f"word{i} {i * 7919 % 1000}" for i in range(30_000))


def _masked(page: dict) -> dict:
    """A shaped result with its response ids and cursors (random per proxy) masked."""
    return json.loads(_IDS.sub("<id>", json.dumps(page)))


async def test_http_to_http_pages_queries_and_blobs_like_stdio(everything_url):
    async with session(EVERYTHING, [], proxy=True) as c:
        stdio_pages = await read_all(c, await c.call_tool("echo", {"message": BIG}))
        stdio_query = wire(await c.call_tool(
            "query_response", {"response_id": meta_of(stdio_pages[0])["response_id"], "query": "length"}))
        stdio_image = wire(await c.call_tool("get-tiny-image", {}))
    async with served(None, [], ["--upstream", everything_url]) as url, http_session(url, mode="auto") as c:
        pages = await read_all(c, await c.call_tool("echo", {"message": BIG}))
        query = wire(await c.call_tool(
            "query_response", {"response_id": meta_of(pages[0])["response_id"], "query": "length"}))
        image = wire(await c.call_tool("get-tiny-image", {}))
    assert len(pages) > 1
    assert [_masked(p) for p in pages] == [_masked(p) for p in stdio_pages]
    assert not query.get("isError") and query == stdio_query
    assert image == stdio_image


async def test_http_to_http_progress_and_roots(everything_url):
    seen, asked = [], []

    async def on_progress(progress, total, message):
        seen.append(progress)

    roots = ["file:///tmp/serve-root-a"]
    async with served(None, [], ["--upstream", everything_url]) as url, http_session(
        url, mode="auto", roots=roots, roots_asked=asked
    ) as c:
        done = await c.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 3},
                                 progress_callback=on_progress)
        listed = wire(await c.call_tool("get-roots-list", {}))
    assert not done.is_error
    assert seen == [1, 2, 3]
    assert "serve-root-a" in "\n".join(text_items(listed)), listed
    assert asked
