"""Unit tests of the harness's coverage measure (common.py) and the pager (pager.py): no client."""

from __future__ import annotations

import json

import common
from pager import Call, Final, Pager, cursor_in

META = {"truncated": True, "truncation_reason": "token_budget", "response_id": "ab12", "next_cursor": "ab12.1",
        "hint": 'More: read_more {"cursor":"ab12.1"}'}
DATA = {"items": [{"id": i, "name": f"n{i}", "w": 1.0 / 3 + i} for i in range(10)]}
DIRECT_JSON = {"content": [{"type": "text", "text": json.dumps(DATA)}]}
DIRECT_TEXT = {"content": [{"type": "text", "text": "\n".join(f"line {i}" for i in range(10))}]}


def test_json_coverage_all_half_none():
    assert common.coverage(DIRECT_JSON, [json.dumps(DATA)]) == 1.0
    half = {"items": DATA["items"][:5]}
    # Page 1 as Claude Code shows it: structuredContent stringified, the meta item as member "mcp-budget".
    assert common.coverage(DIRECT_JSON, [json.dumps(dict(half, **{"mcp-budget": META}))]) == 0.5
    assert common.coverage(DIRECT_JSON, ["nothing here"]) == 0.0


def test_json_coverage_through_client_wrappers():
    page1 = json.dumps({"items": DATA["items"][:5]}) + "\n" + json.dumps(META)
    page2 = json.dumps({"items": DATA["items"][5:]})
    gemini = json.dumps({"output": f"<untrusted_context>\n{page1}\n</untrusted_context>"})
    codex = "Wall time: 0.1 seconds\nOutput:\n" + page2
    assert common.coverage(DIRECT_JSON, [gemini, codex]) == 1.0
    nested = json.dumps({"content": page2})  # structuredContent {"content": "<JSON text>"}
    assert common.coverage(DIRECT_JSON, [page1, nested]) == 1.0


def test_text_coverage_multiset():
    lines = DIRECT_TEXT["content"][0]["text"].splitlines()
    assert common.coverage(DIRECT_TEXT, ["\n".join(lines[:5]) + "\n" + json.dumps(META), "\n".join(lines[5:])]) == 1.0
    assert common.coverage(DIRECT_TEXT, ["\n".join(lines[:5])]) == 0.5
    twice = {"content": [{"type": "text", "text": "a\na"}]}
    assert common.coverage(twice, ["a"]) == 0.5
    assert common.coverage(DIRECT_TEXT, [""]) == 0.0


def test_pager_follows_cursors_and_searches():
    p = Pager("directory_tree", {"path": "/x"})
    assert p.step(["mcp__fs__directory_tree", "mcp__fs__read_more"], []) == Call("mcp__fs__directory_tree", {"path": "/x"})
    escaped = json.dumps(json.dumps(META))  # JSON-escaped twice
    assert cursor_in(escaped) == "ab12.1"
    assert p.step(["mcp__fs__directory_tree", "mcp__fs__read_more"], [escaped]) == Call("mcp__fs__read_more", {"cursor": "ab12.1"})
    assert isinstance(p.step(["mcp__fs__read_more"], [escaped, "last page"]), Final)
    assert p.handed == [escaped, "last page"] and p.search_trips == 0
    q = Pager("report", {})
    q.deferred = ["mcp__fx__report"]
    assert q.step(["ToolSearch"], []) == Call("ToolSearch", {"query": "select:mcp__fx__report", "max_results": 5})
    assert q.step(["ToolSearch"], [""]) == Call("mcp__fx__report", {})
    assert q.step(["ToolSearch"], ["", json.dumps(META)]).name == "ToolSearch" and q.search_trips == 1
    assert q.handed == [json.dumps(META)] and q.case_search_trips == 1


def test_gemini_wraps_each_item_apart():
    page1 = json.dumps({"items": DATA["items"][:5]})
    page2 = json.dumps({"items": DATA["items"][5:]})
    wrap = lambda *items: json.dumps({"output": "\n".join(f"<untrusted_context>\n{i}\n</untrusted_context>" for i in items)})
    assert common.coverage(DIRECT_JSON, [wrap(page1, json.dumps(META)), wrap(page2)]) == 1.0
