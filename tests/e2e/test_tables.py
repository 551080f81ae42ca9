"""`tables = "auto"` with real servers (issue 12 §2): the sum of all pages (meta items
included) of filesystem `directory_tree` on /usr/share/doc and of memory `read_graph`
(1,500 entities, 2,000 relations) is below the single answer of the peer gcf-proxy 0.11.5
measured in the issue (48,916 and 125,489 tokens), every page within the budget, and the
pages, decoded by an independent decoder of the documented form (tables.py), reassemble to
the server's own result. query_response still sees JSON."""

import json
from pathlib import Path

import pytest

from harness import (
    BUDGET,
    NODE_BIN,
    compacted,
    meta_of,
    page_meta,
    read_all,
    reassemble_json,
    rounded,
    session,
    text_items,
    visible_tokens,
    wire,
    body_of,
    _location,
)
from tables import decode

pytestmark = pytest.mark.anyio
FS = str(NODE_BIN / "mcp-server-filesystem")
MEMORY = str(NODE_BIN / "mcp-server-memory")
DOC = Path("/usr/share/doc")

#: gcf-proxy 0.11.5's single answer, as measured in issue 12 (cl100k_base tokens).
PEER_TREE = 48_916
PEER_GRAPH = 125_489


def _config(tmp_path, tables: bool) -> list[str]:
    cfg = tmp_path / ("tables.toml" if tables else "plain.toml")
    cfg.write_text('[defaults]\ntables = "auto"\n' if tables else "[defaults]\n")
    return ["--config", str(cfg)]


def _decoded(pages):
    """Every page's body decoded, then merged by the merge rule (locations from `_meta`)."""
    return reassemble_json([(decode(body_of(p)), _location(p)) for p in pages])


def _sum(pages) -> int:
    return sum(visible_tokens(p) for p in pages)


async def _pages(command, args, tool, targs, proxy_args, env=None):
    async with session(command, args, proxy=True, proxy_args=proxy_args, env=env) as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
        first = await c.call_tool(tool, targs)
        assert not first.is_error, body_of(wire(first))[:300]
        pages = await read_all(c, first)
        rid = (page_meta(pages[0]) or {}).get("response_id")
        seen = None
        if rid:
            q = await c.call_tool("query_response", {"response_id": rid, "query": "type"})
            seen = body_of(wire(q))  # one string output: plain text
    return pages, listed[tool].description or "", seen


@pytest.mark.skipif(not DOC.is_dir(), reason="no /usr/share/doc")
async def test_directory_tree_of_usr_share_doc_beats_the_peer(tmp_path, report):
    args = {"path": str(DOC)}
    async with session(FS, [str(DOC)], proxy=False) as c:
        direct = wire(await c.call_tool("directory_tree", args))
    plain, _, _ = await _pages(FS, [str(DOC)], "directory_tree", args, _config(tmp_path, False))
    pages, description, seen = await _pages(FS, [str(DOC)], "directory_tree", args, _config(tmp_path, True))
    assert "[N]{k1,k2}:" in description, "the form is explained in the tool's description"
    assert all(page_meta(p)["tables"] is True for p in pages)
    assert body_of(pages[0]).startswith("[") and "]{name,type,children}:\n" in body_of(pages[0])
    assert seen == "array", "query_response sees the JSON"
    for p in pages:
        assert visible_tokens(p) <= BUDGET
    assert rounded(_decoded(pages)) == compacted(body_of(direct))
    total, before = _sum(pages), _sum(plain)
    print(f"\ndirectory_tree /usr/share/doc: direct {visible_tokens(direct)}, plain pages {before} "
          f"({len(plain)}), tables pages {total} ({len(pages)}), peer {PEER_TREE}")
    assert total < PEER_TREE
    report("filesystem", "directory_tree /usr/share/doc, tables", direct, pages, f"plain {before}, peer {PEER_TREE}")


async def test_read_graph_1500_entities_beats_the_peer(tmp_path, report):
    env = {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    entities = [
        {
            "name": f"entity_{i:04}",
            "entityType": ["person", "project", "service", "host"][i % 4],
            "observations": [f"created in batch {i // 100}", f"score {i * 0.37:.2f}", f"owner team_{i % 13}"],
        }
        for i in range(1_500)
    ]
    relations = [
        {"from": f"entity_{i:04}", "to": f"entity_{(i * 7 + 1) % 1500:04}", "relationType": ["uses", "owns", "calls"][i % 3]}
        for i in range(2_000)
    ]
    async with session(MEMORY, [], proxy=False, env=env) as c:
        assert not (await c.call_tool("create_entities", {"entities": entities})).is_error
        assert not (await c.call_tool("create_relations", {"relations": relations})).is_error
        direct = wire(await c.call_tool("read_graph", {}))
    plain, _, _ = await _pages(MEMORY, [], "read_graph", {}, _config(tmp_path, False), env)
    pages, description, seen = await _pages(MEMORY, [], "read_graph", {}, _config(tmp_path, True), env)
    assert "[N]{k1,k2}:" in description
    assert body_of(pages[0]).startswith('{"entities":[') and "]{name,entityType,observations}:\n" in body_of(pages[0])
    assert seen == "object", "query_response sees the JSON"
    for p in pages:
        assert visible_tokens(p) <= BUDGET
    assert rounded(_decoded(pages)) == compacted(body_of(direct))
    total, before = _sum(pages), _sum(plain)
    print(f"\nread_graph 1500/2000: direct {visible_tokens(direct)}, plain pages {before} ({len(plain)}), "
          f"tables pages {total} ({len(pages)}), peer {PEER_GRAPH}")
    assert total < PEER_GRAPH
    assert total * 100 <= before * 85, "tables save at least 15% over plain pages"
    report("memory", "read_graph (1,500 entities, 2,000 relations), tables", direct, pages, f"plain {before}, peer {PEER_GRAPH}")
