"""Issue 15 §3 on the real servers: filesystem, memory, everything and git behind ONE
`mcp-budget proxy --config servers.toml` ([servers.<name>] tables), through the Python SDK.

Model-visible definition tokens as in test_tools_list: cl100k tokens of the compact JSON
`{"name","description","inputSchema"}` of each tool."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from harness import BIN, CACHE, assert_same, body_of, read_all, session, wire
from test_tools_list import EAGER, INJECTED, definition_tokens, raw_list
from test_tools_list import servers as four_servers

pytestmark = pytest.mark.anyio


def servers(tmp_path):
    """test_tools_list's four servers, git run as `python -m mcp_server_git` (a venv's console
    script carries the absolute path of the venv it was installed in, which a moved cache lacks)."""
    root, repo, four = four_servers(tmp_path)
    python = str(CACHE / "venv" / "bin" / "python")
    four = [(n, python, ["-m", "mcp_server_git", *a], e) if n == "git" else (n, c, a, e)
            for n, c, a, e in four]
    return root, repo, four


def toml_str(s: str) -> str:
    return json.dumps(s)


def servers_toml(four, extra: str = "") -> str:
    """The [servers] tables of the four servers (and `extra` TOML before them)."""
    out = [extra]
    for name, command, args, env in four:
        out.append(f"[servers.{name}]")
        out.append(f"command = {toml_str(command)}")
        out.append("args = [" + ", ".join(toml_str(a) for a in args) + "]")
        if env:
            out.append("env = { " + ", ".join(f"{k} = {toml_str(v)}" for k, v in env.items()) + " }")
        out.append("")
    return "\n".join(out)


def raw_merged_list(config) -> list[dict]:
    """The `tools` of the multi-server proxy's tools/list, exactly as on the wire."""
    p = subprocess.Popen(
        [str(BIN), "proxy", "--config", str(config)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    try:
        def send(msg):
            p.stdin.write((json.dumps(msg) + "\n").encode())
            p.stdin.flush()

        def answer(i):
            while True:
                line = p.stdout.readline()
                assert line, "the proxy closed its stdout"
                msg = json.loads(line)
                if msg.get("id") == i and "method" not in msg:
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


async def test_four_servers_behind_one_proxy(tmp_path):
    root, repo, four = servers(tmp_path)
    big = root / "big"
    for d in range(20):
        sub = big / f"dir_{d:02}"
        sub.mkdir(parents=True)
        for f in range(100):
            (sub / f"file_{f:03}.txt").write_text("x")
    config = tmp_path / "servers.toml"
    config.write_text(servers_toml(four))
    names = [name for name, *_ in four]

    asked: list[int] = []
    async with session(str(BIN), ["proxy", "--config", str(config)], proxy=False,
                       roots=[root.as_uri()], roots_asked=asked) as c:
        tools = [t.name for t in (await c.list_tools()).tools]
        upstream = [t for t in tools if t not in INJECTED]
        assert sorted(t for t in tools if t in INJECTED) == sorted(INJECTED), tools
        assert all(t.split("__", 1)[0] in names for t in upstream), upstream
        assert {t.split("__", 1)[0] for t in upstream} == set(names)

        text = wire(await c.call_tool("filesystem__read_text_file", {"path": str(root / "notes.txt")}))
        assert not text.get("isError") and "two" in body_of(text), text
        made = wire(await c.call_tool("memory__create_entities", {
            "entities": [{"name": "Ada", "entityType": "person", "observations": ["math"]}]}))
        assert not made.get("isError") and "Ada" in json.dumps(made), made
        echo = wire(await c.call_tool("everything__echo", {"message": "hello mux"}))
        assert not echo.get("isError") and "hello mux" in body_of(echo), echo
        status = wire(await c.call_tool("git__git_status", {"repo_path": str(repo)}))
        assert not status.get("isError") and "branch" in body_of(status).lower(), status

        # A big directory_tree, paged and read back with the one read_more.
        first = await c.call_tool("filesystem__directory_tree", {"path": str(big)})
        pages = await read_all(c, first)
        assert len(pages) > 1
    assert asked, "the filesystem server's roots/list reached the client through the proxy"

    async with session(four[0][1], four[0][2], proxy=False) as direct:
        tree = wire(await direct.call_tool("directory_tree", {"path": str(big)}))
    assert_same(body_of(tree), pages)


async def test_merged_list_costs_one_pair_of_injected_tools(tmp_path):
    _, _, four = servers(tmp_path)
    plain = tmp_path / "plain.toml"
    plain.write_text("")
    eager = tmp_path / "eager.toml"
    eager.write_text(EAGER)
    separate = separate_eager = 0
    for name, command, args, env in four:
        separate += definition_tokens(raw_list(command, args, env, config=plain))
        separate_eager += definition_tokens(raw_list(command, args, env, config=eager))
    merged_config = tmp_path / "servers.toml"
    merged_config.write_text(servers_toml(four))
    merged = raw_merged_list(merged_config)
    merged_eager_config = tmp_path / "servers_eager.toml"
    merged_eager_config.write_text(servers_toml(four, EAGER))
    merged_eager = raw_merged_list(merged_eager_config)
    injected = definition_tokens([t for t in merged if t["name"] in INJECTED])
    assert len([t for t in merged if t["name"] in INJECTED]) == 2
    m, me = definition_tokens(merged), definition_tokens(merged_eager)
    print(
        f"four servers: four proxies {separate} definition tokens, one proxy {m} "
        f"(injected pair {injected}); with [tools_list] caps+compaction: four proxies "
        f"{separate_eager}, one proxy {me}"
    )
    # The prefixes cost a few tokens per tool; three pairs of injected tools are saved.
    assert m < separate - 2 * injected, (m, separate)
    assert me < separate_eager, (me, separate_eager)


async def _all_resources(c) -> list:
    out, cursor = [], None
    for _ in range(100):
        page = await c.list_resources(cursor=cursor) if cursor else await c.list_resources()
        out.extend(page.resources)
        cursor = page.next_cursor
        if not cursor:
            return out
    return out


async def test_resources_and_prompts_are_merged(tmp_path):
    _, _, four = servers(tmp_path)
    two = [s for s in four if s[0] in ("everything", "memory")]
    config = tmp_path / "servers.toml"
    config.write_text(servers_toml(two))
    everything = next(s for s in two if s[0] == "everything")
    async with session(everything[1], everything[2], proxy=False) as direct:
        direct_resources = await _all_resources(direct)
        direct_prompts = [p.name for p in (await direct.list_prompts()).prompts]
    async with session(str(BIN), ["proxy", "--config", str(config)], proxy=False) as c:
        merged = await _all_resources(c)
        # Every page of every server in one list; URIs unchanged.
        assert {str(r.uri) for r in direct_resources} <= {str(r.uri) for r in merged}
        uri = str(direct_resources[0].uri)
        read = await c.read_resource(uri)
        assert read.contents, read
        prompts = [p.name for p in (await c.list_prompts()).prompts]
        assert sorted(prompts) == sorted(f"everything__{p}" for p in direct_prompts), prompts
        simple = next(p for p in (await c.list_prompts()).prompts if not any(a.required for a in (p.arguments or [])))
        got = await c.get_prompt(simple.name)
        assert got.messages, got
    print(f"resources: {len(merged)} merged ({len(direct_resources)} from everything), prompts {prompts}")
