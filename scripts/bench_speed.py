#!/usr/bin/env python3
"""Speed of real servers direct vs through `mcp-budget proxy` (issue 14), with the official
Python `mcp` client, in one run: every round calls each case on every path in turn (in a new
random order each round: a fixed rotation always runs the same path just before the proxy, and
what ran just before sets what is left in the shared caches), so a change of load on a shared
machine hits all paths alike.

    E2E_CACHE=/work/e2e-cache $E2E_CACHE/venv/bin/python scripts/bench_speed.py \
        target/release/mcp-budget [--relay target/release/copy-relay] [--baseline OLD_BINARY] \
        [--rounds 7] [--only dirtree-1MB,git_diff] [--fastmcp FASTMCP_PYTHON]

Paths: `direct` (the server itself), `proxy` (this binary), `baseline` (another mcp-budget,
e.g. a build from before a change), `relay` (a pure byte-copy stdio relay, `copy-relay` of
crates/bench: two blocking threads, the tightest floor a stdio proxy pays for its hop) and, when
`socat` is on the PATH, `socat` (`socat -b 65536 STDIO EXEC:<server>,pipes`, the byte-copy
relay issue 14 measured against; `--no-socat` leaves it out) and, with `--fastmcp PYTHON` (an
interpreter with the `fastmcp` package, in a venv of its own), `fastmcp`: FastMCP's proxy with
its byte limiter (`scripts/fastmcp_proxy.py`), the peer issue 14 compares page 1 against; a
second table then says how big its replies are and whether their JSON texts still parse.
Times are client-side: from
`call_tool` to the parsed, validated result (for the proxy: page 1). Ratios are medians of
the per-round ratios of the proxy to `direct`, `relay`, `socat`, `baseline` and `fastmcp`.

Cases (the servers and packages are the e2e suite's, from $E2E_CACHE):
- dirtree-1MB / dirtree-12MB: @modelcontextprotocol/server-filesystem `directory_tree` of a
  tree whose pretty JSON is ~1 MB / ~12 MB (files with long names, made once in a temp dir);
- git_diff: mcp-server-git `git_diff` across 1,199 commits of a generated repository (~840 KB);
- git_log: `git_log` of that repository just over the 10,000-token budget (2 pages);
- read_file-2MB: @modelcontextprotocol/server-filesystem `read_text_file` of a 2 MB log (a
  big file: plain text that needs paging);
- read_graph: @modelcontextprotocol/server-memory `read_graph` of 2,000 entities and 3,000
  relations (~664 KB);
- echo: @modelcontextprotocol/server-everything `echo` (small; 200 calls a round).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
os.environ.setdefault("E2E_CACHE", "/work/e2e-cache")

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from conftest import make_repo  # noqa: E402
from harness import NODE_BIN  # noqa: E402

ECHO_CALLS = 200


def make_tree(base: Path, target_bytes: int) -> None:
    """Directories of files with long names, so the tree's pretty JSON reaches `target_bytes`
    with few files (~250 bytes of JSON per file)."""
    per_file = 250
    files = max(1, target_bytes // per_file)
    pad = "x" * 180
    n = 0
    a = 0
    while n < files:
        da = base / f"area_{a:03}"
        for b in range(10):
            db = da / f"module_{b:02}"
            db.mkdir(parents=True, exist_ok=True)
            for c in range(50):
                (db / f"file_{c:03}_{pad}.txt").touch()
                n += 1
        a += 1


def make_log(path: Path, target_bytes: int) -> None:
    """An application log of about `target_bytes`: timestamped lines of varied text."""
    levels = ["INFO", "DEBUG", "WARN", "INFO", "ERROR"]
    lines = []
    size = 0
    i = 0
    while size < target_bytes:
        line = (f"2026-11-30T12:{i // 3600 % 60:02}:{i // 60 % 60:02}.{i % 1000:03}Z {levels[i % 5]} "
                f"worker-{i % 17} request {i * 7919 % 100003} took {i * 37 % 900} ms for /api/items/{i % 4099}")
        lines.append(line)
        size += len(line) + 1
        i += 1
    path.write_text("\n".join(lines) + "\n")


def make_memory(path: Path) -> list[dict]:
    """The e2e memory graph: 2,000 entities, 3,000 relations (written through create_*)."""
    entities = [
        {
            "name": f"entity_{i:04}",
            "entityType": ["person", "project", "service", "host"][i % 4],
            "observations": [f"created in batch {i // 100}", f"score {i * 0.37:.2f}", f"owner team_{i % 13}"],
        }
        for i in range(2_000)
    ]
    relations = [
        {"from": f"entity_{i:04}", "to": f"entity_{(i * 7 + 1) % 2000:04}", "relationType": ["uses", "owns", "calls"][i % 3]}
        for i in range(3_000)
    ]
    return [("create_entities", {"entities": entities}), ("create_relations", {"relations": relations})]


def params(path: str, command: str, args: list[str], env: dict | None, binaries: dict) -> StdioServerParameters:
    if path == "direct":
        return StdioServerParameters(command=command, args=args, env=env)
    if path == "relay":
        return StdioServerParameters(command=binaries["relay"], args=["--", command, *args], env=env)
    if path == "socat":
        # socat strips quotes and backslashes, reads `,` and `:` as its own separators and then
        # splits EXEC's command at spaces: the cases' words (checked in main) need none of them.
        exec_ = " ".join([command, *args])
        return StdioServerParameters(command=binaries["socat"], args=["-b", "65536", "STDIO", f"EXEC:{exec_},pipes"], env=env)
    if path == "fastmcp":
        script = str(ROOT / "scripts" / "fastmcp_proxy.py")
        return StdioServerParameters(command=binaries["fastmcp"], args=[script, "--", command, *args], env=env)
    return StdioServerParameters(command=binaries[path], args=["proxy", "--", command, *args], env=env)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary", help="mcp-budget binary under test")
    ap.add_argument("--baseline", help="another mcp-budget binary, run as a third path")
    ap.add_argument("--relay", help="copy-relay binary (crates/bench); default: beside BINARY")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", help="comma-separated case names")
    ap.add_argument("--no-socat", action="store_true", help="leave socat out even when it is installed")
    ap.add_argument("--fastmcp", metavar="PYTHON", help="a Python with `fastmcp`: FastMCP's proxy as one more path")
    opts = ap.parse_args()

    binaries = {"proxy": str(Path(opts.binary).resolve())}
    relay = opts.relay or str(Path(opts.binary).resolve().parent / "copy-relay")
    if Path(relay).exists():
        binaries["relay"] = relay
    else:
        print(f"(no byte-copy relay at {relay}: build it with cargo build --release -p mcp-budget-bench)")
    socat = shutil.which("socat")
    if socat and not opts.no_socat:
        binaries["socat"] = socat
    if opts.baseline:
        binaries["baseline"] = str(Path(opts.baseline).resolve())
    if opts.fastmcp:
        binaries["fastmcp"] = opts.fastmcp
    paths = ["direct", *binaries]

    tmp = Path(tempfile.mkdtemp(prefix="mcp-budget-speed-"))
    fs = str(NODE_BIN / "mcp-server-filesystem")
    # `python -m mcp_server_git`: the venv's console scripts may carry another path's shebang.
    git = sys.executable
    memory = str(NODE_BIN / "mcp-server-memory")
    everything = str(NODE_BIN / "mcp-server-everything")
    only = set(opts.only.split(",")) if opts.only else None

    def wanted(name: str) -> bool:
        return only is None or name in only

    if wanted("dirtree-1MB"):
        make_tree(tmp / "t1", 1_000_000)
    if wanted("dirtree-12MB"):
        make_tree(tmp / "t12", 12_000_000)
    if wanted("read_file-2MB"):
        make_log(tmp / "app.log", 2_000_000)
    if wanted("git_diff") or wanted("git_log"):
        make_repo(tmp / "repo", 1_200)
    memory_env = {"MEMORY_FILE_PATH": str(tmp / "memory.jsonl"), "PATH": os.environ.get("PATH", "")}

    # name, server command, args, env, tool, arguments, calls per round
    cases = [
        ("dirtree-1MB", fs, [str(tmp)], None, "directory_tree", {"path": str(tmp / "t1")}, 1),
        ("dirtree-12MB", fs, [str(tmp)], None, "directory_tree", {"path": str(tmp / "t12")}, 1),
        ("git_diff", git, ["-m", "mcp_server_git", "--repository", str(tmp / "repo")], None, "git_diff",
         {"repo_path": str(tmp / "repo"), "target": "HEAD~1199"}, 1),
        ("git_log", git, ["-m", "mcp_server_git", "--repository", str(tmp / "repo")], None, "git_log",
         {"repo_path": str(tmp / "repo"), "max_count": 140}, 1),
        ("read_file-2MB", fs, [str(tmp)], None, "read_text_file", {"path": str(tmp / "app.log")}, 1),
        ("read_graph", memory, [], memory_env, "read_graph", {}, 1),
        ("echo", everything, ["stdio"], None, "echo", {"message": "hello"}, ECHO_CALLS),
    ]
    cases = [c for c in cases if wanted(c[0])]
    if "socat" in binaries and any(
        not re.fullmatch(r"[A-Za-z0-9@%+=./_-]+", w) for c in cases for w in [c[1], *c[2]]
    ):
        print("(no socat path: a word of a server's command has a character socat's EXEC would read as syntax)")
        del binaries["socat"]
        paths.remove("socat")

    print(f"paths: {', '.join(paths)}; {opts.rounds} rounds (+1 warm-up)\n")
    extra = [p for p in ("baseline", "fastmcp") if p in paths]
    print("| case | reply bytes (direct → proxy) | " + " | ".join(f"{p} ms" for p in paths)
          + " | proxy ÷ direct | proxy ÷ relay | proxy ÷ socat |" + "".join(f" proxy ÷ {p} |" for p in extra))
    print("|---|---:|" + "---:|" * len(paths) + "---:|---:|---:|" + "---:|" * len(extra))
    replies = []
    shuffle = random.Random(14)
    for name, command, args, env, tool, arguments, calls in cases:
        async with AsyncExitStack() as stack:
            clients = {}
            for p in paths:
                c = await stack.enter_async_context(
                    Client(params(p, command, args, env, binaries), read_timeout_seconds=300))
                clients[p] = c
            if name == "read_graph":
                for t, a in make_memory(tmp):
                    await clients["direct"].call_tool(t, a)
            times = {p: [] for p in paths}
            sizes = {}
            for r in range(opts.rounds + 1):
                order = list(paths)
                shuffle.shuffle(order)
                for p in order:
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        res = await clients[p].call_tool(tool, arguments)
                    dt = (time.perf_counter() - t0) / calls
                    if r > 0:
                        times[p].append(dt)
                    if r == opts.rounds:
                        texts = [getattr(i, "text", "") or "" for i in res.content]
                        # UTF-8 bytes, as the column says (not Python's chars).
                        sizes[p] = (sum(len(t.encode()) for t in texts), all(json_text_ok(t) for t in texts))
        med = {p: statistics.median(v) for p, v in times.items()}

        def ratio(a: str, b: str) -> str:
            if a not in times or b not in times:
                return "–"
            return f"{statistics.median(x / y for x, y in zip(times[a], times[b])):.2f}×"

        replies.append((name, sizes))
        row = f"| {name} | {sizes['direct'][0]:,} → {sizes['proxy'][0]:,} | "
        row += " | ".join(f"{med[p] * 1e3:.2f}" for p in paths)
        row += f" | {ratio('proxy', 'direct')} | {ratio('proxy', 'relay')} | {ratio('proxy', 'socat')} |"
        row += "".join(f" {ratio('proxy', p)} |" for p in extra)
        print(row, flush=True)
    if "fastmcp" in paths:
        # What each path hands the model: bytes of text, and whether every text that starts as a
        # JSON document parses (FastMCP's limiter cuts text at a byte count).
        print("\n| case | direct | proxy | fastmcp |\n|---|---:|---:|---:|")
        for name, sizes in replies:
            cells = [f"{sizes[p][0]:,} B{'' if sizes[p][1] else ', JSON broken'}" for p in ("direct", "proxy", "fastmcp")]
            print(f"| {name} | " + " | ".join(cells) + " |")
    subprocess.run(["rm", "-rf", str(tmp)], check=False)


def json_text_ok(text: str) -> bool:
    """Whether `text` parses as JSON, when it starts as a JSON document (`{` or `[`); other
    texts (a diff, a log) count as fine."""
    if text.lstrip()[:1] not in ("{", "["):
        return True
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


if __name__ == "__main__":
    anyio.run(main)
