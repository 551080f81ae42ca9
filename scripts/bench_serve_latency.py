#!/usr/bin/env python3
"""Latency of a small tools/call through `mcp-budget serve`, interleaved in one run:

- `serve --upstream <URL>` (HTTP to HTTP) against calling the same Streamable HTTP server
  directly (the issue's figure: the ratio of the medians, serve / direct);
- `serve -- <stdio server>` against `proxy -- <stdio server>` (what the HTTP endpoint adds to
  the stdio proxy).

    scripts/bench_serve_latency.py [--bin target/release/mcp-budget] [--calls 200]

The server is @modelcontextprotocol/server-everything (from target/e2e-cache/npm, which
tests/e2e/run.sh installs), `tools/call echo {"message":"hi"}`; each HTTP session is one
keep-alive HTTP/1.1 connection (the standard library's client). Prints the median and p90 of
each, in ms, and the ratios of the medians.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_remote_latency import EVERYTHING, ROOT, Direct, Proxied, call, free_port  # noqa: E402

import os  # noqa: E402
import socket  # noqa: E402


def start_serve(binary: str, tail: list[str]) -> tuple[subprocess.Popen, int]:
    proc = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", *tail], stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"serving http://127\.0\.0\.1:(\d+)/mcp", line)
        if m:
            return proc, int(m.group(1))
    raise SystemExit("serve did not start")


class StdioProxy(Proxied):
    """`mcp-budget proxy -- <command>` over its stdio."""

    def __init__(self, binary: str, command: list[str]) -> None:  # noqa: D107 - same protocol as Proxied
        self.proc = subprocess.Popen([binary, "proxy", "--", *command], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, bufsize=0)
        from bench_remote_latency import INIT, INITIALIZED

        self.send(INIT)
        self.recv()
        self.send(INITIALIZED)


def measure(sessions: dict[str, object], calls: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in sessions}
    for i in range(1, calls + 21):
        for name, session in sessions.items():
            start = time.perf_counter()
            answer = session.post(call(i))  # type: ignore[attr-defined]
            elapsed = (time.perf_counter() - start) * 1000
            assert answer and answer["result"]["content"][0]["text"] == "Echo: hi", answer
            if i > 20:  # warm-up
                times[name].append(elapsed)
    for name, t in times.items():
        t.sort()
        print(f"{name:14} n={len(t)} median {statistics.median(t):.3f} ms  p90 {t[int(len(t) * 0.9)]:.3f} ms")
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "target/release/mcp-budget"))
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    port = free_port()
    server = subprocess.Popen(["node", str(EVERYTHING), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs: list[subprocess.Popen] = []
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("server-everything did not start")
                time.sleep(0.1)
        outer, outer_port = start_serve(args.bin, ["--upstream", f"http://127.0.0.1:{port}/mcp"])
        stdio_serve, stdio_port = start_serve(args.bin, ["--", "node", str(EVERYTHING)])
        procs += [outer, stdio_serve]
        print("HTTP to HTTP:")
        t1 = measure({"direct": Direct(port), "serve-upstream": Direct(outer_port)}, args.calls)
        print(f"ratio (median serve --upstream / median direct): "
              f"{statistics.median(t1['serve-upstream']) / statistics.median(t1['direct']):.2f}")
        print("stdio server:")
        proxy = StdioProxy(args.bin, ["node", str(EVERYTHING)])
        t2 = measure({"proxy-stdio": proxy, "serve-stdio": Direct(stdio_port)}, args.calls)
        proxy.close()
        print(f"ratio (median serve -- stdio / median proxy -- stdio): "
              f"{statistics.median(t2['serve-stdio']) / statistics.median(t2['proxy-stdio']):.2f}")
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=20)
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
