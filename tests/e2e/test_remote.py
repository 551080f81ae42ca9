"""A remote server: @modelcontextprotocol/server-everything in Streamable HTTP mode behind
`mcp-budget proxy --upstream <URL>`, driven over stdio by the Python MCP client. The same calls
give the same shaped results as through `mcp-budget proxy -- <the stdio server>`: a big result
paged and read back with read_more, query_response, a blob offloaded, progress notifications,
and a server→client request (roots/list) answered by the client."""

import base64
import json
import os
import re
import socket
import subprocess
import time

import pytest

from harness import (
    BIN,
    CACHE,
    NODE_BIN,
    assert_blobs_kept,
    assert_same,
    body_of,
    meta_of,
    read_all,
    session,
    text_items,
    wire,
)

pytestmark = pytest.mark.anyio
EVERYTHING = str(NODE_BIN / "mcp-server-everything")
EVERYTHING_JS = CACHE / "npm" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def everything_url():
    """server-everything's Streamable HTTP endpoint on a free loopback port."""
    port = _free_port()
    proc = subprocess.Popen(
        ["node", str(EVERYTHING_JS), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("server-everything (streamableHttp) did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def remote(url, **kwargs):
    """A client session with `mcp-budget proxy --upstream url` (over stdio)."""
    return session(str(BIN), ["proxy", "--upstream", url], proxy=False, **kwargs)


def local(**kwargs):
    """A client session with `mcp-budget proxy -- <server-everything over stdio>`."""
    return session(EVERYTHING, [], proxy=True, **kwargs)


_IDS = re.compile(r"[0-9a-f]{12}(\.\d+)?")


def _same_shape(page: dict) -> dict:
    """A shaped result with its response ids and cursors (random per proxy) masked."""
    return json.loads(_IDS.sub("<id>", json.dumps(page)))


BIG = " ".join(f"word{i} {i * 7919 % 1000}" for i in range(30_000))


async def test_a_big_result_is_paged_read_back_and_queried_as_over_stdio(everything_url):
    async with session(EVERYTHING, [], proxy=False) as c:
        direct = wire(await c.call_tool("echo", {"message": BIG}))
    async with remote(everything_url) as c:
        first = await c.call_tool("echo", {"message": BIG})
        pages = await read_all(c, first)
        response_id = meta_of(pages[0])["response_id"]
        queried = wire(await c.call_tool("query_response", {"response_id": response_id, "query": "length"}))
    async with local() as c:
        local_pages = await read_all(c, await c.call_tool("echo", {"message": BIG}))
        local_id = meta_of(local_pages[0])["response_id"]
        local_queried = wire(await c.call_tool("query_response", {"response_id": local_id, "query": "length"}))
    assert len(pages) > 1
    assert_same(body_of(direct), pages)
    assert [_same_shape(p) for p in pages] == [_same_shape(p) for p in local_pages]
    assert not queried.get("isError"), queried
    assert queried == local_queried


async def test_a_blob_is_offloaded_as_over_stdio(everything_url):
    text = "".join(f"line {i}: the quick brown fox {i * 7919 % 1000}\n" for i in range(5_000))
    uri = "data:text/plain;base64," + base64.b64encode(text.encode()).decode()
    args = {"name": "big.txt.gz", "data": uri, "outputType": "resource"}
    async with session(EVERYTHING, [], proxy=False) as c:
        direct = wire(await c.call_tool("gzip-file-as-resource", args))
    async with remote(everything_url) as c:
        shaped = wire(await c.call_tool("gzip-file-as-resource", args))
        image = wire(await c.call_tool("get-tiny-image", {}))
    async with local() as c:
        local_shaped = wire(await c.call_tool("gzip-file-as-resource", args))
        local_image = wire(await c.call_tool("get-tiny-image", {}))
    assert_blobs_kept(direct, shaped)
    assert any(t.startswith('{"offloaded"') for t in text_items(shaped)), "the blob went to a file"
    assert shaped == local_shaped
    assert image == local_image
    assert any(i["type"] == "image" or "offloaded" in i.get("text", "") for i in image["content"])


async def test_progress_notifications_arrive_over_http(everything_url):
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total))

    async with remote(everything_url) as c:
        result = await c.call_tool(
            "trigger-long-running-operation", {"duration": 1, "steps": 5}, progress_callback=on_progress
        )
    assert not result.is_error
    assert [p for p, _ in seen] == [1, 2, 3, 4, 5], seen


async def test_the_server_s_roots_request_is_answered_by_the_client(everything_url):
    asked = []
    roots = ["file:///tmp/remote-root-a", "file:///tmp/remote-root-b"]
    async with remote(everything_url, roots=roots, roots_asked=asked) as c:
        result = wire(await c.call_tool("get-roots-list", {}))
    assert not result.get("isError"), result
    text = "\n".join(text_items(result))
    assert "remote-root-a" in text and "remote-root-b" in text, text
    assert asked, "the server asked the client for its roots"


async def test_a_server_that_is_down_gives_a_clear_error_per_request():
    url = f"http://127.0.0.1:{_free_port()}/mcp"
    proc = subprocess.run(
        [str(BIN), "proxy", "--upstream", url],
        input=b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n',
        capture_output=True,
        timeout=60,
    )
    answer = json.loads(proc.stdout.decode().splitlines()[0])
    assert answer["id"] == 1
    assert "cannot connect to the upstream server" in answer["error"]["message"], answer
