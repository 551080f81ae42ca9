"""Images at their vision cost (issue 12 §3) with a real server: server-everything's
`get-tiny-image` (a 20×20 PNG between two text items) stays inline by default, counted at
Anthropic's width×height/750, and goes to a file only with `images = "file"`."""

import base64
import json
import math
import struct

import pytest

from harness import NODE_BIN, session, text_items, visible_tokens, wire

pytestmark = pytest.mark.anyio
EVERYTHING = str(NODE_BIN / "mcp-server-everything")


def png_size(data: str) -> tuple[int, int]:
    raw = base64.b64decode(data)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n" and raw[12:16] == b"IHDR"
    return struct.unpack(">II", raw[16:24])


async def test_get_tiny_image_stays_inline_and_counts(tmp_path):
    async with session(EVERYTHING, [], proxy=False) as c:
        direct = wire(await c.call_tool("get-tiny-image", {}))
    log = tmp_path / "log.jsonl"
    async with session(EVERYTHING, [], proxy=True, proxy_args=["--log", str(log)]) as c:
        shaped = wire(await c.call_tool("get-tiny-image", {}))
    images = [i for i in shaped["content"] if i["type"] == "image"]
    assert images == [i for i in direct["content"] if i["type"] == "image"], "kept as it came"
    assert len(images) == 1
    w, h = png_size(images[0]["data"])
    cost = math.ceil(w * h / 750)
    assert not any(t.startswith('{"offloaded"') for t in text_items(shaped))
    record = json.loads(log.read_text().splitlines()[0])
    # The telemetry counts the costliest rendering of the `generic` client profile (Gemini's
    # escaped wrapping of the two texts costs a few tokens more than the text items), image included.
    assert visible_tokens(shaped) + cost <= record["tokens"] <= visible_tokens(shaped) + cost + 20, (record, w, h)

    config = tmp_path / "images.toml"
    config.write_text('[tools.get-tiny-image]\nimages = "file"\n')
    async with session(EVERYTHING, [], proxy=True, proxy_args=["--config", str(config)]) as c:
        filed = wire(await c.call_tool("get-tiny-image", {}))
    assert not [i for i in filed["content"] if i["type"] == "image"]
    desc = [json.loads(t) for t in text_items(filed) if t.startswith('{"offloaded"')]
    assert len(desc) == 1 and (desc[0]["width"], desc[0]["height"]) == (w, h)
