"""Issue 12 §1 and §4 with @modelcontextprotocol/server-memory behind the proxy.

- `response_refs`: `read_graph` paged at a small budget, then `create_entities` whose
  `entities` argument is `{"$response": <its response_id>, "query": <jq>}`: the proxy sends
  the server entities built by jq from the cached graph; `read_graph` afterwards holds them.
- `uuid_prefix`: a graph whose entities are named by UUIDs: `read_graph` shows 12-hex
  prefixes (tokens measured against the same proxy without the option), and `open_nodes` with
  a prefix finds the entity (the server received the full name).
"""

import json
import random
import re
import uuid as uuidlib

import pytest

from harness import NODE_BIN, body_of, meta_of, session, tokens, visible_tokens, wire

pytestmark = pytest.mark.anyio
MEMORY = str(NODE_BIN / "mcp-server-memory")
UUID_RE = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9A-Za-z])")


def config(tmp_path, text: str) -> str:
    path = tmp_path / "mcp-budget.toml"
    path.write_text(text)
    return str(path)


async def test_create_entities_from_a_cached_graph_by_reference(tmp_path, capsys):
    env = {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    entities = [
        {
            "name": f"entity_{i:04}",
            "entityType": ["person", "project", "service", "host"][i % 4],
            "observations": [f"created in batch {i // 100}", f"owner team_{i % 13}", f"note {i} " + "x" * (i % 40)],
        }
        for i in range(400)
    ]
    async with session(MEMORY, [], proxy=False, env=env) as c:
        assert not (await c.call_tool("create_entities", {"entities": entities})).is_error
    cfg = config(tmp_path, "[defaults]\nresponse_refs = true\n")
    query = '[.entities[] | select(.entityType == "project") | {name: (.name + "_v2"), entityType, observations}]'
    async with session(MEMORY, [], proxy=True, proxy_args=["--max-tokens", "1000", "--config", cfg], env=env) as c:
        first = wire(await c.call_tool("read_graph", {}))
        meta = meta_of(first)
        assert meta is not None, "read_graph is paged at 1,000 tokens"
        rid = meta["response_id"]
        assert f'{{"$response":"{rid}","query":"<jq>"}}' in meta["hint"]
        arguments = {"entities": {"$response": rid, "query": query}}
        created = await c.call_tool("create_entities", arguments)
        assert not created.is_error, body_of(wire(created))[:300]
        # A reference to nothing: isError, and nothing reaches the server.
        bad = wire(await c.call_tool("create_entities", {"entities": {"$response": "ffffffffffff"}}))
        assert bad.get("isError") is True
        assert json.loads(body_of(bad))["reason"] == "unknown"
    expected = [
        {"name": e["name"] + "_v2", "entityType": e["entityType"], "observations": e["observations"]}
        for e in entities
        if e["entityType"] == "project"
    ]
    async with session(MEMORY, [], proxy=False, env=env) as c:
        graph = json.loads(body_of(wire(await c.call_tool("read_graph", {}))))
    by_name = {e["name"]: e for e in graph["entities"]}
    assert len(graph["entities"]) == 400 + len(expected)
    for e in expected:
        got = by_name[e["name"]]
        assert (got["entityType"], got["observations"]) == (e["entityType"], e["observations"])
    written = tokens(json.dumps(arguments, separators=(",", ":")))
    forwarded = tokens(json.dumps({"entities": expected}, separators=(",", ":")))
    with capsys.disabled():
        print(
            f"\nresponse_refs: create_entities of {len(expected)} entities: the model wrote {written} tokens "
            f"of arguments, the server got {forwarded} tokens"
        )


async def test_uuid_named_graph_is_shown_with_prefixes_and_prefixes_find_entities(tmp_path, capsys):
    env = {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    rng = random.Random(12)
    ids = [str(uuidlib.UUID(int=rng.getrandbits(128), version=4)) for _ in range(300)]
    entities = [
        {
            "name": ids[i],
            "entityType": ["person", "project", "service", "host"][i % 4],
            "observations": [f"owned by {ids[(i * 7 + 3) % 300]}", f"tier {i % 3}"],
        }
        for i in range(300)
    ]
    relations = [
        {"from": ids[i % 300], "to": ids[(i * 11 + 5) % 300], "relationType": ["uses", "owns", "calls"][i % 3]}
        for i in range(450)
    ]
    async with session(MEMORY, [], proxy=False, env=env) as c:
        assert not (await c.call_tool("create_entities", {"entities": entities})).is_error
        assert not (await c.call_tool("create_relations", {"relations": relations})).is_error
        direct = wire(await c.call_tool("read_graph", {}))
    # `wire`: a budget past every client cap (the `generic` profile keeps Claude Code's 25,000 tokens and 50,000 chars).
    big = ["--max-tokens", "200000", "--client", "wire"]
    async with session(MEMORY, [], proxy=True, proxy_args=big, env=env) as c:
        plain = wire(await c.call_tool("read_graph", {}))
    cfg = config(tmp_path, "[defaults]\nuuid_prefix = true\n")
    async with session(MEMORY, [], proxy=True, proxy_args=[*big, "--config", cfg], env=env) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert "shortened to their first 12 hex digits" in (tools["read_graph"].description or "")
        short = wire(await c.call_tool("read_graph", {}))  # outputSchema validated by the client
        assert meta_of(short) is None, "fits whole"
        text = body_of(short)
        assert not UUID_RE.search(text)
        graph = json.loads(text)
        assert [e["name"] for e in graph["entities"]] == [u.replace("-", "")[:12] for u in ids]
        assert short["structuredContent"] == graph
        # The prefix passed back reaches the server as the full name.
        prefix = ids[5].replace("-", "")[:12]
        opened = json.loads(body_of(wire(await c.call_tool("open_nodes", {"names": [prefix]}))))
        assert [e["name"] for e in opened["entities"]] == [prefix]
        assert opened["entities"][0]["observations"][0] == "owned by " + ids[(5 * 7 + 3) % 300].replace("-", "")[:12]
    before, after = visible_tokens(plain), visible_tokens(short)
    assert after < before
    with capsys.disabled():
        print(
            f"\nuuid_prefix: memory read_graph (300 UUID-named entities, 450 relations): direct {visible_tokens(direct)}, "
            f"proxy {before}, proxy + uuid_prefix {after} tokens ({100 * (before - after) / before:.1f}% saved)"
        )
