#!/usr/bin/env python3
"""Memory bench of the proxy's cache (issue 9): 40 distinct ~10 MB results pass through.

Drives `mcp-budget proxy -- mcp-budget fixture-server` over pipes (stdlib only) and prints the
proxy's RSS (from /proc: idle, peak = VmHWM, after the scenario, after the entries expire) and
the client-side times of page 1 (the tools/call) and page 2 (read_more) of each result, then of
one ~12 MB result.

    cargo build --release -p mcp-budget
    scripts/bench_memory.py target/release/mcp-budget
    scripts/bench_memory.py --old OLD_BINARY target/release/mcp-budget   # a build without the
        # cache flags: same scenario, default cache, no expiry phase

The fixture server always comes from the last argument's binary (it has `table_rows` with a
`seed`, so the 40 results differ).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

MIB = 1024 * 1024


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Client:
    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, bufsize=0)
        self.next_id = 1

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        self.p.stdin.write(line.encode() + b"\n")
        while True:
            msg = json.loads(self.p.stdout.readline())
            if msg.get("id") == rid:
                return msg

    def notify(self, method):
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")

    def initialize(self):
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.notify("notifications/initialized")

    def call(self, tool, args):
        t = time.perf_counter()
        msg = self.request("tools/call", {"name": tool, "arguments": args})
        return msg["result"], time.perf_counter() - t

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def next_cursor(result):
    meta = json.loads(result["content"][-1]["text"])
    return meta.get("next_cursor")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary", help="mcp-budget binary (proxy and fixture server)")
    ap.add_argument("--old", help="run this proxy binary instead (no cache flags passed)")
    ap.add_argument("--results", type=int, default=40)
    ap.add_argument("--rows", type=int, default=95_000, help="rows per result (~10 MB)")
    ap.add_argument("--big-rows", type=int, default=114_000, help="rows of the ~12 MB result")
    ap.add_argument("--cache-bytes", default="256MiB")
    ap.add_argument("--ttl", type=int, default=150,
                    help="cache TTL in seconds (new binary only): longer than the scenario")
    ap.add_argument("--max-tokens", default="10000")
    a = ap.parse_args()

    upstream = [a.binary, "fixture-server"]
    size = len(direct_text(upstream, a.rows))
    big_size = len(direct_text(upstream, a.big_rows, seed=999))
    proxy = a.old or a.binary
    flags = ["--max-tokens", a.max_tokens]
    if not a.old:
        flags += ["--cache-bytes", a.cache_bytes, "--cache-ttl", str(a.ttl)]
    c = Client([proxy, "proxy", *flags, "--", *upstream])
    c.initialize()
    c.request("tools/list", {})
    time.sleep(1.0)
    pid = c.p.pid
    idle = rss_kib(pid)

    samples = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            try:
                samples.append(rss_kib(pid))
            except OSError:
                return
            time.sleep(0.02)

    th = threading.Thread(target=sample, daemon=True)
    th.start()

    p1, p2, cursors = [], [], []
    for i in range(a.results):
        r, t1 = c.call("table_rows", {"rows": a.rows, "seed": i + 1})
        cur = next_cursor(r)
        r2, t2 = c.call("read_more", {"cursor": cur})
        assert "isError" not in r2, r2
        p1.append(t1)
        p2.append(t2)
        cursors.append(next_cursor(r2))
    phase1 = max(samples)
    # Page 3 of every result, oldest first: each comes back from wherever the cache put it.
    p3, expired = [], 0
    for cur in cursors:
        r3, t3 = c.call("read_more", {"cursor": cur})
        if "isError" in r3:
            assert "expired" in r3["content"][-1]["text"], r3
            expired += 1
            continue
        p3.append(t3)
    r, big1 = c.call("table_rows", {"rows": a.big_rows, "seed": 999})
    r2, big2 = c.call("read_more", {"cursor": next_cursor(r)})
    assert "isError" not in r2, r2
    last_use = time.perf_counter()
    stop.set()
    th.join()
    peak_hwm = rss_kib(pid, "VmHWM")
    after = rss_kib(pid)
    after_expiry = None
    if not a.old:
        time.sleep(max(0.0, a.ttl + 3 - (time.perf_counter() - last_use)))
        after_expiry = rss_kib(pid)
    else:
        time.sleep(5)
        idle_later = rss_kib(pid)

    mib = lambda k: f"{k / 1024:.0f} MiB"
    ms = lambda s: f"{s * 1000:.0f} ms"
    print(f"proxy: {proxy}{' (old)' if a.old else ''}")
    print(f"results: {a.results} x {size / 1e6:.1f} MB (table_rows {a.rows} rows), "
          f"cache bound {a.cache_bytes if not a.old else 'default (256 MiB of compact text)'}")
    print(f"idle RSS:            {mib(idle)}")
    print(f"peak RSS (VmHWM):    {mib(peak_hwm)}   (sampled max {mib(max(samples))}; "
          f"during the {a.results} calls {mib(phase1)})")
    if not a.old:
        from_text = a.cache_bytes.lower().replace("mib", "").replace("m", "")
        try:
            bound = int(from_text) * MIB
            limit = idle * 1024 + 1.25 * bound
            print(f"limit idle+1.25*B:   {mib(limit / 1024)}   "
                  f"{'OK' if peak_hwm * 1024 <= limit else 'OVER'}")
        except ValueError:
            pass
    print(f"RSS after scenario:  {mib(after)}")
    if after_expiry is not None:
        print(f"RSS after expiry:    {mib(after_expiry)}   ({a.ttl} s TTL + 3 s)")
    else:
        print(f"RSS 5 s later:       {mib(idle_later)}   (TTL 1 h: nothing expires)")
    print(f"page 1 (tools/call): median {ms(statistics.median(p1))}, max {ms(max(p1))}")
    print(f"page 2 (read_more):  median {ms(statistics.median(p2))}, max {ms(max(p2))}")
    if p3:
        print(f"page 3 of each, oldest first: median {ms(statistics.median(p3))}, "
              f"max {ms(max(p3))}; {expired} of {len(cursors)} expired (TTL or bound)")
    print(f"{big_size / 1e6:.1f} MB result: page 1 {ms(big1)}, page 2 {ms(big2)} "
          f"(ratio {big2 / big1:.3f})")
    c.close()


def direct_text(upstream, rows, seed=1):
    """The text of one table_rows result straight from the fixture server."""
    d = Client(upstream)
    d.initialize()
    r, _ = d.call("table_rows", {"rows": rows, "seed": seed})
    d.close()
    return r["content"][0]["text"]


if __name__ == "__main__":
    sys.exit(main())
