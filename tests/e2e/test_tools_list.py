"""Issue 15 on the real servers: `[tools_list]` compaction and deferred tools behind
`mcp-budget proxy --config`, for filesystem, memory, everything and git together.

Model-visible definition tokens of a tool = cl100k tokens (tiktoken, independent of the
proxy's counter) of the compact JSON `{"name","description","inputSchema"}`."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from harness import BIN, CACHE, NODE_BIN, session, text_items, tokens, wire

pytestmark = pytest.mark.anyio

INJECTED = {"read_more", "query_response"}
DEFERRED = {"find_tools", "call_tool"}
EAGER = """[tools_list]
description_max_tokens = 40
property_description_max_tokens = 12
compact = true
"""
DEFER = """[tools_list]
mode = "defer"
description_max_tokens = 40
property_description_max_tokens = 12
compact = true
"""


def servers(tmp_path):
    """(name, command, args, env) of the four servers, each on its own scratch data."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "notes.txt").write_text("one\ntwo\nthree\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    return root, repo, [
        ("filesystem", str(NODE_BIN / "mcp-server-filesystem"), [str(root)], None),
        ("memory", str(NODE_BIN / "mcp-server-memory"), [], {"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}),
        ("everything", str(NODE_BIN / "mcp-server-everything"), [], None),
        ("git", str(CACHE / "venv" / "bin" / "mcp-server-git"), ["--repository", str(repo)], None),
    ]


def view(tool: dict) -> str:
    return json.dumps(
        {k: tool[k] for k in ("name", "description", "inputSchema") if k in tool},
        separators=(",", ":"),
        ensure_ascii=False,
    )


def definition_tokens(tools: list[dict]) -> int:
    return sum(tokens(view(t)) for t in tools)


def raw_list(command, args, env, *, config=None) -> list[dict]:
    """The `tools` of a tools/list response exactly as on the wire (member order kept: the
    Python SDK's models reorder members, which changes token counts), direct or through the
    proxy with `config`."""
    argv = [str(BIN), "proxy", "--config", str(config), "--", command, *args] if config else [command, *args]
    p = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    try:
        def send(msg):
            p.stdin.write((json.dumps(msg) + "\n").encode())
            p.stdin.flush()

        def answer(i):
            while True:
                line = p.stdout.readline()
                assert line, "the server closed its stdout"
                msg = json.loads(line)
                if msg.get("id") == i:
                    return msg

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "e2e", "version": "0"}}})
        answer(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        return answer(2)["result"]["tools"]
    finally:
        p.kill()
        p.wait()


async def list_tools(command, args, env, *, config=None) -> list[dict]:
    proxy_args = ["--config", str(config)] if config else None
    async with session(command, args, proxy=config is not None, proxy_args=proxy_args, env=env) as c:
        return [wire(t) for t in (await c.list_tools()).tools]


def without_meta_member(schema):
    """A listed outputSchema without the `mcp-budget` member the proxy declares in it (page 1's
    structuredContent carries the meta item there: docs/guide/client-profiles.md)."""
    if not isinstance(schema, dict) or "mcp-budget" not in schema.get("properties", {}):
        return schema
    props = {k: v for k, v in schema["properties"].items() if k != "mcp-budget"}
    return {**schema, "properties": props}


async def test_compacted_lists_of_four_servers(tmp_path):
    config = tmp_path / "eager.toml"
    config.write_text(EAGER)
    _, _, four = servers(tmp_path)
    before = after = 0
    for name, command, args, env in four:
        direct = raw_list(command, args, env)
        proxied = raw_list(command, args, env, config=config)
        upstream = [t for t in proxied if t["name"] not in INJECTED]
        # No tool removed; what is for the client is untouched.
        assert [t["name"] for t in upstream] == [t["name"] for t in direct], name
        for d, p in zip(direct, upstream):
            assert d.get("outputSchema") == without_meta_member(p.get("outputSchema")), d["name"]
            assert d.get("annotations") == p.get("annotations"), d["name"]
        before += definition_tokens(direct)
        after += definition_tokens(upstream)
        print(f"{name}: {definition_tokens(direct)} -> {definition_tokens(upstream)} definition tokens")
    print(f"four servers: {before} -> {after} ({100 * (before - after) / before:.1f}% fewer)")
    assert after <= before * 0.70, (before, after)
    # What the Python SDK's client hands on (its models put `type` first): still compacted.
    sdk = 0
    for name, command, args, env in four:
        sdk += definition_tokens([t for t in await list_tools(command, args, env, config=config)
                                  if t["name"] not in INJECTED])
    print(f"four servers through the Python SDK's models: {sdk}")
    assert sdk <= before * 0.71, (before, sdk)


async def test_deferred_session_finds_and_calls_three_tools(tmp_path):
    config = tmp_path / "defer.toml"
    config.write_text(DEFER)
    plain = tmp_path / "plain.toml"
    plain.write_text("")
    root, repo, four = servers(tmp_path)
    eager_raw = eager_proxied = fixed_all = 0
    for name, command, args, env in four:
        direct = raw_list(command, args, env)
        eager_raw += definition_tokens(direct)
        # The eager list behind the proxy as it was: upstream tools plus read_more/query_response.
        eager_proxied += definition_tokens(raw_list(command, args, env, config=plain))
        listed = raw_list(command, args, env, config=config)
        assert {t["name"] for t in listed} == INJECTED | DEFERRED, name
        fixed = definition_tokens(listed)
        assert fixed < 400, (name, fixed)
        fixed_all += fixed

    # One session per server used: find a tool, call it through call_tool.
    plan = {
        "filesystem": ("read text file", "read_text_file", {"path": str(root / "notes.txt")}, "two"),
        "memory": ("create entities", "create_entities",
                   {"entities": [{"name": "Ada", "entityType": "person", "observations": ["math"]}]}, "Ada"),
        "git": ("working tree status", "git_status", {"repo_path": str(repo)}, "branch"),
    }
    found_tokens = 0
    for name, command, args, env in four:
        if name not in plan:
            continue
        query, tool, arguments, expect = plan[name]
        async with session(command, args, proxy=True, proxy_args=["--config", str(config)], env=env) as c:
            await c.list_tools()
            found = wire(await c.call_tool("find_tools", {"query": query}))
            assert not found.get("isError"), found
            found_tokens += sum(tokens(t) for t in text_items(found))
            defs = json.loads(text_items(found)[0])["tools"]
            assert tool in [d["name"] for d in defs], (query, defs)
            via = wire(await c.call_tool("call_tool", {"name": tool, "arguments": arguments}))
            assert not via.get("isError"), via
            assert expect in json.dumps(via), via
            direct_result = wire(await c.call_tool(tool, arguments)) if name != "memory" else None
            if direct_result is not None:
                assert text_items(via) == text_items(direct_result), name
    session_tokens = fixed_all + found_tokens
    print(
        f"defer: fixed {fixed_all} tokens for the four proxies; a session finding and calling three "
        f"tools: {session_tokens} (fixed + find_tools results {found_tokens}) vs the eager list "
        f"{eager_raw} upstream, {eager_proxied} behind uncompacted proxies"
    )
    assert session_tokens < eager_proxied / 2
