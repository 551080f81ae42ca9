#!/usr/bin/env python3
"""Memory bench of the proxy's cache when calls come fast (issue 33 §3).

40 distinct ~10.5 MB results (`mcp-budget fixture-server`'s `table_rows` with a `seed`) are
called back to back, page 1 only: each call is sent as soon as the previous page 1 is in, so
the work the proxy does after page 1 (parsing the kept text, counting the exact total) overlaps
the next calls. Drives `mcp-budget proxy --cache-bytes 256MiB -- mcp-budget fixture-server`
over pipes (stdlib only) and prints the proxy's RSS (/proc VmRSS) after every call, every
~100 ms in between, and 2 s after the last call; the peak (sampled, and VmHWM), idle, the bound
(idle + 1.25 x cache bytes) and PASS/FAIL (every sample and the one 2 s after the last within
the bound). Then page 2 of every result is read back, oldest first (nothing may be lost: no
`expired` with the TTL longer than the run), RSS sampled the same way.

    cargo build --release -p mcp-budget
    scripts/bench_memory_fast.py target/release/mcp-budget
    scripts/bench_memory_fast.py --old OLD_BINARY target/release/mcp-budget   # both proxies,
        # one after the other in the same run: page-1 latency ratio new / old

The fixture server always comes from the last argument's binary. Exit status 1 on FAIL.
"""

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time

MIB = 1024 * 1024
SIZES = {"kib": 1024, "k": 1024, "mib": MIB, "m": MIB, "gib": 1024 * MIB, "g": 1024 * MIB}


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def parse_bytes(text):
    t = text.strip().lower()
    for suffix in sorted(SIZES, key=len, reverse=True):
        if t.endswith(suffix):
            return int(float(t[: -len(suffix)]) * SIZES[suffix])
    return int(t)


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
        self.p.wait(timeout=60)


def next_cursor(result):
    meta = json.loads(result["content"][-1]["text"])
    return meta.get("next_cursor")


class Sampler:
    """VmRSS of `pid` every `every` seconds on a thread, as (seconds since start, KiB)."""

    def __init__(self, pid, every):
        self.pid, self.every, self.t0 = pid, every, time.perf_counter()
        self.samples = []
        self.stop = threading.Event()
        self.th = threading.Thread(target=self.run, daemon=True)
        self.th.start()

    def now(self):
        kib = rss_kib(self.pid)
        self.samples.append((time.perf_counter() - self.t0, kib))
        return kib

    def run(self):
        while not self.stop.is_set():
            try:
                self.now()
            except OSError:
                return
            time.sleep(self.every)

    def end(self):
        self.stop.set()
        self.th.join()


def run(proxy, upstream, a, new):
    flags = ["--max-tokens", a.max_tokens]
    if new:
        flags += ["--cache-bytes", a.cache_bytes, "--cache-ttl", str(a.ttl)]
    c = Client([proxy, "proxy", *flags, "--", *upstream])
    c.initialize()
    c.request("tools/list", {})
    time.sleep(1.0)
    pid = c.p.pid
    idle = rss_kib(pid)
    s = Sampler(pid, a.every)
    p1, after_call, cursors = [], [], []
    for i in range(a.results):
        r, t1 = c.call("table_rows", {"rows": a.rows, "seed": i + 1})
        assert "isError" not in r, r
        p1.append(t1)
        after_call.append(s.now())
        cursors.append(next_cursor(r))
    calls_s = s.samples[-1][0]
    time.sleep(2.0)
    after = s.now()
    s.end()
    series = list(s.samples)
    hwm = rss_kib(pid, "VmHWM")
    out = {"idle": idle, "p1": p1, "after_call": after_call, "series": series,
           "after": after, "hwm": hwm, "calls_s": calls_s}
    if a.read_back:
        s = Sampler(pid, a.every)
        p2, expired = [], 0
        for cur in cursors:
            r2, t2 = c.call("read_more", {"cursor": cur})
            if "isError" in r2:
                assert "expired" in r2["content"][-1]["text"], r2
                expired += 1
                continue
            p2.append(t2)
        time.sleep(2.0)
        back_after = s.now()
        s.end()
        out.update(p2=p2, expired=expired, back_series=list(s.samples), back_after=back_after,
                   back_hwm=rss_kib(pid, "VmHWM"))
    c.close()
    return out


def report(name, r, a, bound_bytes):
    mb = lambda k: f"{k * 1024 / 1e6:.0f}"
    ms = lambda s: f"{s * 1000:.0f} ms"
    idle = r["idle"]
    limit = idle + 1.25 * bound_bytes / 1024  # KiB
    peak = max(k for _, k in r["series"])
    print(f"== {name}")
    print(f"{a.results} calls in {r['calls_s']:.1f} s; RSS in MB (1e6 bytes)")
    print("after each call: " + " ".join(mb(k) for k in r["after_call"]))
    # The ~100 ms series, one line per second.
    lines, cur, sec = [], [], 0
    for t, k in r["series"]:
        while t >= sec + 1:
            lines.append(f"  {sec:3d}s: " + " ".join(cur))
            cur, sec = [], sec + 1
        cur.append(mb(k))
    lines.append(f"  {sec:3d}s: " + " ".join(cur))
    print(f"every ~{a.every * 1000:.0f} ms:")
    print("\n".join(lines))
    ok = peak <= limit and r["after"] <= limit
    print(f"idle {mb(idle)} MB; bound idle + 1.25 x {a.cache_bytes} = {mb(limit)} MB")
    print(f"peak sampled {mb(peak)} MB, VmHWM {mb(r['hwm'])} MB "
          f"({'within' if r['hwm'] <= limit else 'over'} the bound), "
          f"2 s after the last call {mb(r['after'])} MB")
    print(f"page 1 (tools/call): median {ms(statistics.median(r['p1']))}, "
          f"max {ms(max(r['p1']))}")
    if "p2" in r:
        bpeak = max(k for _, k in r["back_series"])
        ok = ok and bpeak <= limit and r["back_after"] <= limit and r["expired"] == 0
        print(f"read back page 2 of each, oldest first: {r['expired']} of {a.results} expired; "
              f"median {ms(statistics.median(r['p2']) if r['p2'] else 0)}; RSS peak sampled "
              f"{mb(bpeak)} MB, 2 s after {mb(r['back_after'])} MB")
    print("PASS" if ok else "FAIL")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary", help="mcp-budget binary (proxy and fixture server)")
    ap.add_argument("--old", help="also run this proxy binary first (same flags), for the "
                                  "page-1 latency ratio")
    ap.add_argument("--results", type=int, default=40)
    ap.add_argument("--rows", type=int, default=95_000, help="rows per result (~10.5 MB)")
    ap.add_argument("--cache-bytes", default="256MiB")
    ap.add_argument("--ttl", type=int, default=3600, help="cache TTL in seconds")
    ap.add_argument("--max-tokens", default="10000")
    ap.add_argument("--every", type=float, default=0.1, help="seconds between RSS samples")
    ap.add_argument("--no-read-back", dest="read_back", action="store_false",
                    help="skip reading page 2 of every result after the calls")
    a = ap.parse_args()

    upstream = [a.binary, "fixture-server"]
    d = Client(upstream)
    d.initialize()
    r, _ = d.call("table_rows", {"rows": a.rows, "seed": 1})
    d.close()
    size = len(r["content"][0]["text"])
    bound = parse_bytes(a.cache_bytes)
    print(f"results: {a.results} x {size / 1e6:.1f} MB (table_rows {a.rows} rows), called back "
          f"to back, page 1 only; --cache-bytes {a.cache_bytes}")
    runs = []
    if a.old:
        runs.append(("old: " + a.old, run(a.old, upstream, a, True)))
    runs.append(("new: " + a.binary, run(a.binary, upstream, a, True)))
    oks = [report(name, r, a, bound) for name, r in runs]
    if a.old:
        old, new = (statistics.median(r["p1"]) for _, r in runs)
        print(f"page 1 median new / old: {new / old:.3f} ({new * 1000:.0f} / {old * 1000:.0f} ms)")
    # The verdict is the last (new) binary's.
    return 0 if oks[-1] else 1


if __name__ == "__main__":
    sys.exit(main())
