"""@modelcontextprotocol/server-filesystem behind the proxy: directory_tree on 20,000+ entries,
read_text_file on 2 MB of CRLF text with a 150 KB line; roots/list passes through."""

import jsonschema
import pytest

from harness import NODE_BIN, assert_same, body_of, read_all, session, wire

pytestmark = pytest.mark.anyio
FS = str(NODE_BIN / "mcp-server-filesystem")


async def _direct(data, tool, args):
    async with session(FS, [str(data.root)], proxy=False) as c:
        result = await c.call_tool(tool, args)
        assert not result.is_error, body_of(wire(result))[:300]
        return wire(result)


async def _through_proxy(data, tool, args):
    """Calls `tool` through the proxy with a client that has roots; returns the pages, the
    tool's outputSchema and how often the server asked the client for its roots."""
    asked: list[int] = []
    async with session(FS, [str(data.root)], proxy=True, roots=[data.root.as_uri()], roots_asked=asked) as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
        assert {"read_more", "query_response"} <= listed.keys()
        # Client.call_tool validates structuredContent against the tool's outputSchema itself
        # (it raises RuntimeError when the content is missing or invalid).
        first = await c.call_tool(tool, args)
        assert not first.is_error, body_of(wire(first))[:300]
        pages = await read_all(c, first)
    return pages, listed[tool].output_schema, asked


def _check_structured(pages, schema):
    assert schema, "the filesystem server declares an outputSchema"
    assert "structuredContent" in pages[0]
    # Page 1 is the tool's result: valid against its (listed) outputSchema. Later pages answer
    # `read_more`, which declares none: a JSON-array page carries `{"page":…,"mcp-budget":…}`
    # (docs/guide/client-profiles.md).
    jsonschema.validate(pages[0]["structuredContent"], schema)
    for page in pages[1:]:
        sc = page.get("structuredContent")
        assert sc is None or set(sc) == {"page", "mcp-budget"}, sorted(sc)


async def test_directory_tree_of_20000_entries(data, report):
    assert data.tree_entries >= 20_000
    args = {"path": str(data.tree)}
    direct = await _direct(data, "directory_tree", args)
    pages, schema, asked = await _through_proxy(data, "directory_tree", args)
    assert asked, "the server's roots/list request reached the client through the proxy"
    assert len(pages) > 1
    _check_structured(pages, schema)
    assert_same(body_of(direct), pages)
    report("filesystem", "directory_tree (20,220 entries)", direct, pages)


async def test_read_text_file_of_2mb_crlf_with_a_150kb_line(data, report):
    args = {"path": str(data.text)}
    direct = await _direct(data, "read_text_file", args)
    text = body_of(direct)
    assert "\r\n" in text and max(len(l) for l in text.split("\r\n")) > 100_000
    pages, schema, _ = await _through_proxy(data, "read_text_file", args)
    assert len(pages) > 1
    if schema:
        _check_structured(pages, schema)
    assert_same(text, pages)
    report("filesystem", "read_text_file (2 MB CRLF)", direct, pages)
