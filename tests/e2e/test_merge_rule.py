"""The merge rule written in harness.py, checked on pages the core engine cut
(data/merge_pages.json, recorded from mcp_budget_core::paginate: a 1,230-node tree at 400
tokens a page; a nested object with a long string and a long array at 260; keys that look like
the location grammar at 280; a 10,000-character key at 300, whose locations are abbreviated
with `…` and so, as the rule says, cannot be merged from the wire)."""

import json
from pathlib import Path

import pytest

from harness import parse_shown, reassemble

PAGES = json.loads((Path(__file__).parent / "data" / "merge_pages.json").read_text())


def _as_results(pages):
    out = []
    for p in pages:
        content = [{"type": "text", "text": p["body"]}]
        result = {"content": content}
        if p["meta"]:
            content.append({"type": "text", "text": p["meta"]})
            # The recorded `shown` stands for the `_meta` location (the reader merges by that).
            result["_meta"] = {"mcp-budget/page": {"location": json.loads(p["meta"])["shown"]}}
        out.append(result)
    return out


MERGEABLE = sorted(k for k in PAGES if k != "big_key")


@pytest.mark.parametrize("name", MERGEABLE)
def test_recorded_pages_reassemble_to_the_document(name):
    case = PAGES[name]
    assert len(case["pages"]) > 3
    assert reassemble(_as_results(case["pages"])) == json.loads(case["doc"])


def test_abbreviated_locations_are_refused_not_misread():
    with pytest.raises(ValueError, match="abbreviated"):
        reassemble(_as_results(PAGES["big_key"]["pages"]))


def test_shown_forms_parse():
    assert parse_shown("$[0].children[0:16]") == ([("index", 0), ("key", "children"), ("index", 0)], [])
    assert parse_shown("$[0].children[32] to $[1].children[7]")[0] == [("index", 0), ("key", "children"), ("index", 32)]
    assert parse_shown("$.a['b c'][chars 5:9] (body is $.a)") == (
        [("key", "a"), ("key", "b c"), ("chars", 5)],
        [("key", "a")],
    )
    assert parse_shown("$ to $[3]") == ([], [])
    assert parse_shown("$['a to b'][2] to end") == ([("key", "a to b"), ("index", 2)], [])
    assert parse_shown("$['x (body is $)'][chars 3:9]") == ([("key", "x (body is $)"), ("chars", 3)], [])
    with pytest.raises(ValueError):
        parse_shown("$[0].chil…[3]")


def test_page_one_rooted_below_the_document_is_wrapped_back():
    pages = [
        ('{"a":"x"}', "$[0]['%s'].a[chars 0:1] (body is $[0]['%s'])" % ("k" * 3, "k" * 3)),
        ('"y"', "$[0]['kkk'].a[chars 1:2] to end (body is $[0]['kkk'].a)"),
    ]
    doc = [{"kkk": {"a": "xy"}}]
    results = [
        {"content": [{"type": "text", "text": body}, {"type": "text", "text": json.dumps({"truncated": True, "shown": shown})}]}
        for body, shown in pages
    ]
    assert reassemble(results) == doc


def test_several_part_locations_split_left_to_right():
    from harness import split_location

    loc = "text 1/3, text 2/3 $['a, text 2/3 $'][0:4] to $['x, text 3/3'][1]"
    assert split_location(loc) == [(0, 3, None), (1, 3, "$['a, text 2/3 $'][0:4] to $['x, text 3/3'][1]")]
    assert split_location("lines 1-3 of 9") == [(0, 1, "lines 1-3 of 9")]
    assert split_location("$") == [(0, 1, None)]
    with pytest.raises(ValueError):
        split_location("text 4/3")


def test_several_documents_come_back_from_the_wire():
    from harness import reassemble_documents

    def page(location, *items):
        meta = {"type": "text", "text": '{"truncated":true}'}
        return {"content": [*items, meta], "_meta": {"mcp-budget/page": {"location": location}}}

    def text(t):
        return {"type": "text", "text": t}

    def res(t):
        return {"type": "resource", "resource": {"uri": "file:///x", "text": t}}

    pages = [
        page("text 1/3, text 2/3 $[0:2]", text("hello, text 2/3"), {"type": "image"}, res('[1,{"a, text 3/3":NaN}]')),
        page("text 2/3 $[2:3]", res("[3]")),
        page("text 3/3 lines 1-1 of 2", text("a\n")),
        page("text 3/3 lines 2-2 of 2", text("b")),
    ]
    docs = reassemble_documents(pages)
    assert docs[0] == "hello, text 2/3"
    assert json.dumps(docs[1]) == json.dumps([1, {"a, text 3/3": float("nan")}, 3])
    assert docs[2] == "a\nb"
    with pytest.raises(ValueError):
        reassemble_documents(pages[:1])
