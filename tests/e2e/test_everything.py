"""@modelcontextprotocol/server-everything behind the proxy: an image, a gzip resource blob,
structuredContent with an outputSchema, resource links, and progress notifications."""

import base64
import gzip
import json

import pytest

from harness import NODE_BIN, assert_blobs_kept, payload, read_all, session, text_items, visible_tokens, wire

pytestmark = pytest.mark.anyio
EVERYTHING = str(NODE_BIN / "mcp-server-everything")


async def _both(tool, args):
    async with session(EVERYTHING, [], proxy=False) as c:
        direct = wire(await c.call_tool(tool, args))
    async with session(EVERYTHING, [], proxy=True) as c:
        first = await c.call_tool(tool, args)  # validates structuredContent itself
        pages = await read_all(c, first)
    assert not direct.get("isError") and not pages[0].get("isError"), (direct, pages[0])
    return direct, pages


def _blob_note(shaped):
    kinds = [json.loads(t)["offloaded"] for t in text_items(shaped) if t.startswith('{"offloaded"')]
    if kinds:
        return f"{', '.join(kinds)} written to a file; direct counts text items only"
    return "base64 kept inline (under the blob threshold)"


async def test_get_tiny_image(report):
    direct, pages = await _both("get-tiny-image", {})
    assert len(pages) == 1
    assert_blobs_kept(direct, pages[0])
    report("everything", "get-tiny-image", direct, pages, _blob_note(pages[0]))


async def test_gzip_file_as_resource(report):
    text = "".join(f"line {i}: the quick brown fox jumps over the lazy dog {i * 7919 % 1000}\n" for i in range(20_000))
    uri = "data:text/plain;base64," + base64.b64encode(text.encode()).decode()
    args = {"name": "big.txt.gz", "data": uri, "outputType": "resource"}
    direct, pages = await _both("gzip-file-as-resource", args)
    assert len(pages) == 1
    assert_blobs_kept(direct, pages[0])
    blob = next(payload(i) for i in direct["content"] if payload(i))
    assert gzip.decompress(base64.b64decode(blob)).decode() == text
    report("everything", "gzip-file-as-resource", direct, pages, _blob_note(pages[0]))


async def test_get_structured_content():
    direct, pages = await _both("get-structured-content", {"location": "Chicago"})
    assert len(pages) == 1
    assert pages[0]["structuredContent"] == direct["structuredContent"]
    assert json.loads(text_items(pages[0])[0]) == direct["structuredContent"]


async def test_get_resource_links():
    direct, pages = await _both("get-resource-links", {"count": 10})
    links = [i for i in direct["content"] if i["type"] == "resource_link"]
    assert len(links) == 10
    assert [i for i in pages[0]["content"] if i["type"] == "resource_link"] == links
    assert visible_tokens(pages[0]) <= visible_tokens(direct)


async def test_progress_notifications_pass_through():
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total))

    async with session(EVERYTHING, [], proxy=True) as c:
        result = await c.call_tool(
            "trigger-long-running-operation", {"duration": 1, "steps": 5}, progress_callback=on_progress
        )
    assert not result.is_error
    assert [p for p, _ in seen] == [1, 2, 3, 4, 5], seen
    assert all(t == 5 for _, t in seen)
