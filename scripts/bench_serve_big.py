#!/usr/bin/env python3
"""A big result over Streamable HTTP: the whole result from the upstream directly against page 1
through `mcp-budget serve --upstream <URL>`, interleaved in one run (issue 10, "Performance": a
big result's page 1 arrives no later than the direct result).

    E2E_CACHE=/work/e2e-cache scripts/bench_serve_big.py [--bin target/release/mcp-budget] \
        [--rounds 5] [--mb 1,12]

The upstream is a real HTTP MCP server with a big result: `mcp-budget serve --max-tokens
1000000000 -- @modelcontextprotocol/server-filesystem` (a budget no result reaches, so the
result passes whole) and its `directory_tree` of a generated tree (bench_speed.make_tree) whose
JSON is ~1 MB / ~12 MB. The client is a keep-alive HTTP/1.1 session of the standard library
(bench_remote_latency.Direct): each call is timed from the POST to the parsed JSON-RPC response
(the whole result directly; page 1 through the outer `serve --upstream`). Rounds alternate which
path goes first. Prints the medians and the ratio page 1 / direct.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_remote_latency import CACHE, ROOT, Direct  # noqa: E402
from bench_serve_latency import start_serve  # noqa: E402
from bench_speed import make_tree  # noqa: E402

FILESYSTEM = CACHE / "npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"


def tree_call(i: int, path: Path) -> dict:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "directory_tree", "arguments": {"path": str(path)}}}


def text_bytes(answer: dict) -> int:
    return sum(len(c.get("text", "")) for c in answer["result"]["content"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "target/release/mcp-budget"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mb", default="1,12", help="comma-separated sizes in MB")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-budget-serve-big-"))
    sizes = [int(s) for s in args.mb.split(",")]
    for mb in sizes:
        make_tree(tmp / f"t{mb}", mb * 1_000_000)
    procs: list[subprocess.Popen] = []
    try:
        inner, inner_port = start_serve(
            args.bin, ["--max-tokens", "1000000000", "--", "node", str(FILESYSTEM), str(tmp)])
        procs.append(inner)
        outer, outer_port = start_serve(
            args.bin, ["--upstream", f"http://127.0.0.1:{inner_port}/mcp"])
        procs.append(outer)
        direct, served = Direct(inner_port), Direct(outer_port)
        print("| result | direct whole median ms | serve --upstream page 1 median ms | page 1 ÷ direct "
              "| direct text bytes | page 1 text bytes |")
        print("|---|---:|---:|---:|---:|---:|")
        n = 0
        for mb in sizes:
            path = tmp / f"t{mb}"
            times: dict[str, list[float]] = {"direct": [], "serve": []}
            got: dict[str, int] = {}
            # One warm-up round, not counted.
            for r in range(args.rounds + 1):
                order = [("direct", direct), ("serve", served)]
                if r % 2:
                    order.reverse()
                for name, session in order:
                    n += 1
                    start = time.perf_counter()
                    answer = session.post(tree_call(n, path))
                    elapsed = (time.perf_counter() - start) * 1000
                    assert answer and "result" in answer, answer
                    got[name] = text_bytes(answer)
                    if r > 0:
                        times[name].append(elapsed)
            d, s = statistics.median(times["direct"]), statistics.median(times["serve"])
            assert got["serve"] < got["direct"], "page 1 is a page"
            print(f"| directory_tree ~{mb} MB | {d:.1f} | {s:.1f} | {s / d:.2f}× | {got['direct']:,} "
                  f"| {got['serve']:,} |")
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


if __name__ == "__main__":
    main()
