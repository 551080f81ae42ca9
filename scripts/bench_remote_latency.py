#!/usr/bin/env python3
"""Latency of a small tools/call through `mcp-budget proxy --upstream` against calling the
same Streamable HTTP server directly, interleaved in one run.

    scripts/bench_remote_latency.py [--bin target/release/mcp-budget] [--calls 200]

Starts @modelcontextprotocol/server-everything in streamableHttp mode on a free loopback port
(from $E2E_CACHE/npm, default target/e2e-cache, which tests/e2e/run.sh installs), opens one session directly (one
keep-alive HTTP/1.1 connection, the standard library's client, reading the SSE answer up to the
response event) and one through the proxy (JSON lines on its stdin and stdout), then alternates
`tools/call echo {"message":"hi"}` between them. Prints the median and p90 of each, in ms, and
the ratio of the medians (proxied / direct).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("E2E_CACHE", ROOT / "target/e2e-cache"))
EVERYTHING = CACHE / "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(i: int) -> dict:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "hi"}}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Direct:
    """A session over Streamable HTTP with http.client."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        self.post(INIT)
        self.post(INITIALIZED)

    def post(self, message: dict) -> dict | None:
        self.conn.request("POST", "/mcp", json.dumps(message), self.headers)
        r = self.conn.getresponse()
        if "mcp-session-id" not in {k.lower() for k in self.headers} and r.getheader("mcp-session-id"):
            self.headers["Mcp-Session-Id"] = r.getheader("mcp-session-id")
            self.headers["MCP-Protocol-Version"] = "2025-06-18"
        if r.status == 202:
            r.read()
            return None
        if r.getheader("content-type", "").startswith("text/event-stream"):
            answer = None
            while True:
                line = r.readline()
                if not line:
                    break
                if line.startswith(b"data:"):
                    msg = json.loads(line[5:])
                    if "id" in msg and "method" not in msg:
                        answer = msg
                        break
            # The server ends the stream after the response: read to its end.
            r.read()
            return answer
        return json.loads(r.read())


class Proxied:
    """A session through `mcp-budget proxy --upstream` over its stdio."""

    def __init__(self, binary: str, url: str) -> None:
        self.proc = subprocess.Popen(
            [binary, "proxy", "--upstream", url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        self.send(INIT)
        self.recv()
        self.send(INITIALIZED)

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")

    def recv(self) -> dict:
        assert self.proc.stdout is not None
        return json.loads(self.proc.stdout.readline())

    def post(self, message: dict) -> dict:
        self.send(message)
        while True:
            msg = self.recv()
            if msg.get("id") == message["id"] and "method" not in msg:
                return msg

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(ROOT / "target/release/mcp-budget"))
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    port = free_port()
    server = subprocess.Popen(
        ["node", str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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
        direct = Direct(port)
        proxied = Proxied(args.bin, f"http://127.0.0.1:{port}/mcp")
        times: dict[str, list[float]] = {"direct": [], "proxied": []}
        for i in range(1, args.calls + 21):
            for name, session in (("direct", direct), ("proxied", proxied)):
                start = time.perf_counter()
                answer = session.post(call(i))
                elapsed = (time.perf_counter() - start) * 1000
                assert answer and answer["result"]["content"][0]["text"] == "Echo: hi", answer
                if i > 20:  # warm-up
                    times[name].append(elapsed)
        proxied.close()
        for name, t in times.items():
            t.sort()
            print(f"{name:8} n={len(t)} median {statistics.median(t):.3f} ms  p90 {t[int(len(t) * 0.9)]:.3f} ms")
        ratio = statistics.median(times["proxied"]) / statistics.median(times["direct"])
        print(f"ratio (median proxied / median direct): {ratio:.2f}")
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
