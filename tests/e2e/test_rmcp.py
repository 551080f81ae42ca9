"""The rmcp layer (crates/rmcp): its example server `paged_server` (an rmcp stdio server whose one
tool returns 4,000 JSON rows, wrapped with `mcp_budget_rmcp::Budget`), driven by the Python SDK's
client with no proxy in between: the tools listed, page 1 within the budget, every read_more
cursor followed and the rows put back together exactly, query_response on the cached rows (its jq
worker is the example's own executable)."""

import json
import os
from pathlib import Path

import pytest

from harness import BUDGET, ROOT, body_of, meta_of, read_all, reassemble, session, visible_tokens, wire

pytestmark = pytest.mark.anyio
SERVER = Path(os.environ.get("MCP_BUDGET_RMCP_EXAMPLE", ROOT / "target" / "debug" / "examples" / "paged_server"))
needs_server = pytest.mark.skipif(not SERVER.exists(), reason=f"{SERVER} not built (tests/e2e/run.sh builds it)")


def orders() -> list[dict]:
    """What the example's `orders` tool holds (the same formula as examples/paged_server.rs)."""
    return [{"id": i, "sku": f"sku-{i * 7919 % 100_000:05}", "qty": i % 17, "city": ["Oslo", "Lima", "Pune"][i % 3],
             "cents": i * 37 % 10_000} for i in range(4_000)]


@needs_server
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_example_server_pages_reassemble_and_query(mode, report):
    async with session(str(SERVER), [], proxy=False, mode=mode) as c:
        listed = {t.name for t in (await c.list_tools()).tools}
        assert {"orders", "read_more", "query_response"} <= listed, listed
        first = await c.call_tool("orders", {})
        pages = await read_all(c, first)
        meta = meta_of(pages[0])
        assert meta is not None and meta["next_cursor"], "page 1 carries the cursor"
        assert "read_more" in meta["hint"] and "query_response" in meta["hint"]
        assert visible_tokens(pages[0]) <= BUDGET
        assert reassemble(pages) == orders()
        queried = wire(await c.call_tool("query_response", {"response_id": meta["response_id"],
                                                            "query": "[.[] | select(.city == \"Lima\") | .id] | length"}))
        assert not queried.get("isError"), queried
        assert json.loads(body_of(queried)) == sum(1 for o in orders() if o["city"] == "Lima")
    direct = {"content": [{"type": "text", "text": json.dumps(orders(), separators=(",", ":"))}]}
    print(f"\nrmcp paged_server ({mode}): page 1 {visible_tokens(pages[0])} tokens of {BUDGET}, {len(pages)} pages")
    report("rmcp-example", f"orders ({mode})", direct, pages)
