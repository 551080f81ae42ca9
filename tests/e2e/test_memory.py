"""@modelcontextprotocol/server-memory behind the proxy: read_graph after create_entities
(2,000 entities) and create_relations (3,000 relations)."""

import json

import pytest

from harness import NODE_BIN, assert_same, body_of, meta_of, read_all, session, wire

pytestmark = pytest.mark.anyio
MEMORY = str(NODE_BIN / "mcp-server-memory")


async def test_read_graph_after_2000_entities(tmp_path, report):
    env = {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    entities = [
        {
            "name": f"entity_{i:04}",
            "entityType": ["person", "project", "service", "host"][i % 4],
            "observations": [f"created in batch {i // 100}", f"score {i * 0.37:.2f}", f"owner team_{i % 13}"],
        }
        for i in range(2_000)
    ]
    relations = [
        {"from": f"entity_{i:04}", "to": f"entity_{(i * 7 + 1) % 2000:04}", "relationType": ["uses", "owns", "calls"][i % 3]}
        for i in range(3_000)
    ]
    # The writes go through the proxy too: big requests pass byte for byte.
    async with session(MEMORY, [], proxy=True, env=env) as c:
        created = await c.call_tool("create_entities", {"entities": entities})
        assert not created.is_error
        related = await c.call_tool("create_relations", {"relations": relations})
        assert not related.is_error
    async with session(MEMORY, [], proxy=False, env=env) as c:
        direct = wire(await c.call_tool("read_graph", {}))
    assert body_of(direct).count("entity_1999") >= 1
    async with session(MEMORY, [], proxy=True, env=env) as c:
        first = await c.call_tool("read_graph", {})  # outputSchema validated by the client
        assert not first.is_error
        pages = await read_all(c, first)
        # Select on the cached full graph: jq through the proxy, the server is not called again.
        response_id = meta_of(pages[0])["response_id"]
        counted = await c.call_tool(
            "query_response", {"response_id": response_id, "query": "[(.entities | length), (.relations | length)]"}
        )
        assert json.loads(body_of(wire(counted))) == [2_000, 3_000]
    assert len(pages) > 1
    assert_same(body_of(direct), pages)
    report("memory", "read_graph (2,000 entities, 3,000 relations)", direct, pages)
