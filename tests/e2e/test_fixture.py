"""mcp-budget's own fixture server (`mcp-budget fixture-server`) behind the proxy, with the
Python SDK's client: big tools, roots/list and progress round trips, and 2026-07-28."""

import base64
import json
import re
from pathlib import Path

import anyio
import pytest

from harness import BIN, assert_blobs_kept, assert_same, body_of, read_all, session, text_items, wire

pytestmark = pytest.mark.anyio
FIXTURE = str(BIN)


@pytest.mark.parametrize("tool", ["directory_tree", "table_rows", "long_text", "structured", "error_big"])
async def test_big_tool_pages_reassemble(tool, report):
    async with session(FIXTURE, ["fixture-server"], proxy=False, mode="legacy") as c:
        direct = wire(await c.call_tool(tool, {}))
    async with session(FIXTURE, ["fixture-server"], proxy=True, mode="legacy") as c:
        first = await c.call_tool(tool, {})
        pages = await read_all(c, first)
    assert len(pages) > 1
    assert pages[0].get("isError", False) == direct.get("isError", False)
    assert_same(body_of(direct), pages)
    if tool == "table_rows":
        # Compaction really rounded: 17-digit floats upstream, at most 9 significant digits shown.
        digits = [len(m.replace(".", "").lstrip("0")) for m in re.findall(r"\d+\.\d+", "".join(map(body_of, pages)))]
        assert digits and max(digits) <= 9, max(digits)
        assert max(len(m.replace(".", "")) for m in re.findall(r"\d+\.\d+", body_of(direct))) == 17
    report("fixture", tool, direct, pages)


async def test_roots_list_round_trip_through_the_proxy():
    asked: list[int] = []
    async with session(FIXTURE, ["fixture-server"], proxy=True, mode="legacy",
                       roots=["file:///tmp/e2e-root"], roots_asked=asked) as c:
        result = wire(await c.call_tool("roots", {}))
    assert asked == [1]
    assert "file:///tmp/e2e-root" in body_of(result)


async def test_progress_and_log_notifications_pass_through_the_proxy():
    seen = []
    logs = []

    async def on_progress(progress, total, message):
        seen.append(progress)

    async def on_log(params):
        logs.append(params.data)

    async with session(FIXTURE, ["fixture-server"], proxy=True, mode="legacy", logging_callback=on_log) as c:
        result = await c.call_tool("progress", {"steps": 4}, progress_callback=on_progress)
    assert body_of(wire(result)) == "done 4 steps"
    assert seen == [1, 2, 3, 4]
    assert logs == ["progress tool ran"]


async def test_stateless_2026_07_28_through_the_proxy():
    args = ["fixture-server", "--protocol", "2026-07-28"]
    async with session(FIXTURE, args, proxy=False, mode="2026-07-28") as c:
        direct = wire(await c.call_tool("table_rows", {}))
    async with session(FIXTURE, args, proxy=True, mode="auto") as c:
        assert c.protocol_version == "2026-07-28"
        first = await c.call_tool("table_rows", {})
        pages = await read_all(c, first)
    assert len(pages) > 1
    assert_same(body_of(direct), pages)


@pytest.mark.parametrize("tool", ["image", "resource_blob", "base64_in_json"])
async def test_blobs_go_to_files_with_the_same_bytes(tool):
    async with session(FIXTURE, ["fixture-server"], proxy=False, mode="legacy") as c:
        direct = wire(await c.call_tool(tool, {}))
    async with session(FIXTURE, ["fixture-server"], proxy=True, mode="legacy") as c:
        shaped = wire(await c.call_tool(tool, {}))
    if tool == "base64_in_json":
        doc = json.loads(body_of(shaped))
        assert doc["data"]["offloaded"] and doc["data"]["bytes"] == 49_152
        assert Path(doc["data"]["path"]).read_bytes() == base64.b64decode(json.loads(body_of(direct))["data"])
    else:
        assert_blobs_kept(direct, shaped)
    if tool == "image":
        # 64×48 costs 5 tokens: it fits, so `images = "auto"` keeps it inline as it came.
        kept = [i for i in shaped["content"] if i["type"] == "image"]
        assert kept == [i for i in direct["content"] if i["type"] == "image"], kept


async def test_garbage_line_from_the_server_does_not_reach_the_client():
    async with session(FIXTURE, ["fixture-server"], proxy=True, mode="legacy") as c:
        result = wire(await c.call_tool("garbage", {}))
        assert body_of(result) == "ok"
        again = wire(await c.call_tool("echo", {"after": "garbage"}))
        assert body_of(again) == '{"after":"garbage"}'


async def test_a_server_crash_mid_call_is_an_error_not_a_hang():
    with pytest.raises(Exception) as caught:  # noqa: PT011 - any error will do; a hang will not
        with anyio.fail_after(60):
            async with session(FIXTURE, ["fixture-server"], proxy=True, mode="legacy") as c:
                await c.call_tool("crash", {})
    assert not isinstance(caught.value, TimeoutError), "the client waited for a crashed server"
