#!/usr/bin/env python3
"""FastMCP's own proxy in front of a stdio server, on stdio, with FastMCP's byte limiter
(`ResponseLimitingMiddleware`): the peer issue 14 compares page 1 against. Used by
`scripts/bench_speed.py --fastmcp PYTHON` (PYTHON: an interpreter with the `fastmcp` package;
it pins its own `mcp`, so it lives in a venv of its own):

    python3 -m venv /tmp/fastmcp-venv
    /tmp/fastmcp-venv/bin/pip install -r scripts/fastmcp-requirements.txt
    /tmp/fastmcp-venv/bin/python scripts/fastmcp_proxy.py [--max-bytes 60000] -- <command> <args>...

The proxy is built as FastMCP documents it (`create_proxy` of the server's transport: FastMCP
then opens a fresh backend session per request, its default against context mixing), and the
limiter truncates any tool result over `--max-bytes` bytes of JSON (default 60,000: about the
size of `mcp-budget`'s page 1 at its default budget of 10,000 tokens) to one text item.
"""

from __future__ import annotations

import argparse
import os

from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy
from fastmcp.server.middleware.response_limiting import ResponseLimitingMiddleware


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-bytes", type=int, default=60_000, help="the limiter's max_size (bytes)")
    ap.add_argument("--mode", default="auto",
                    help="the backend's protocol era (FastMCP's `mode`); FastMCP's own default mirrors the "
                         "client's era, and a 2026-07-28 client then fails against a server that speaks only "
                         "the handshake era")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- <command> <args>...")
    opts = ap.parse_args()
    command = opts.command[1:] if opts.command[:1] == ["--"] else opts.command
    if not command:
        ap.error("give the server's command after --")
    backend = StdioTransport(command[0], command[1:], env=dict(os.environ))
    proxy = create_proxy(backend, mode=opts.mode, name="fastmcp-proxy")
    proxy.add_middleware(ResponseLimitingMiddleware(max_size=opts.max_bytes))
    proxy.run(show_banner=False)


if __name__ == "__main__":
    main()
