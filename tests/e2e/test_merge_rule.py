"""The merge rule written in harness.py, checked on pages the core engine cut
(data/merge_pages.json: a 1,230-node tree at 400 tokens a page, and a nested object with a long
string and a long array at 260 tokens a page; recorded from mcp_budget_core::paginate)."""

import json
from pathlib import Path

import pytest

from harness import parse_shown, reassemble

PAGES = json.loads((Path(__file__).parent / "data" / "merge_pages.json").read_text())


def _as_results(pages):
    out = []
    for p in pages:
        content = [{"type": "text", "text": p["body"]}]
        if p["meta"]:
            content.append({"type": "text", "text": p["meta"]})
        out.append({"content": content})
    return out


@pytest.mark.parametrize("name", sorted(PAGES))
def test_recorded_pages_reassemble_to_the_document(name):
    case = PAGES[name]
    assert len(case["pages"]) > 3
    assert reassemble(_as_results(case["pages"])) == json.loads(case["doc"])


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
