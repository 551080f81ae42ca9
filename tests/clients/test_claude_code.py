"""Claude Code (@anthropic-ai/claude-code 2.1.328), headless, against the scripted Anthropic Messages
API of model_anthropic.py, with each case's MCP server behind `mcp-budget proxy --client claude-code`.

`claude -p <prompt> --output-format json --mcp-config <file> --strict-mcp-config --allowedTools
mcp__<server>__*`, HOME a temp dir, cwd the case's directory, ANTHROPIC_BASE_URL the scripted
model, telemetry, error reporting, auto-update and nonessential traffic off. 2.1.328 ships a
native (Bun-compiled) binary per platform: `@anthropic-ai/claude-code-linux-x64/claude` (the
postinstall only copies it over `bin/claude.exe`; Node is not needed to run it).

What the model reads is the `tool_result` blocks' content (a string: Claude Code's
`JSON.stringify(structuredContent)` when the result has structuredContent; else text blocks).
Claude Code defers MCP tools behind ToolSearch: the pager searches for the case's tool
(`select:mcp__<server>__<tool>`), counted apart; `read_more` must be offered directly
(`_meta["anthropic/alwaysLoad"]`), so `search_trips` must stay 0.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import model_anthropic  # noqa: E402

VERSION = "2.1.328"
ENCODING = "cl100k_base"
RUN_TIMEOUT = float(os.environ.get("CLAUDE_RUN_TIMEOUT", "180"))
PROMPT = "Use the MCP tools."

try:
    import common
    from pager import Pager
except ImportError:  # the harness's files are not there yet
    common = Pager = None


def _node_modules_dirs() -> list[Path]:
    dirs = [Path(os.environ[e]) for e in ("CLIENTS_NODE_MODULES",) if os.environ.get(e)]
    if common is not None:
        dirs.append(Path(common.CLIENTS_NODE_MODULES))
    return dirs + [HERE.parent.parent / "target" / "clients-cache" / "node_modules", Path("/tmp/clients/node_modules")]


def find_claude() -> list[str] | None:
    if os.environ.get("CLAUDE_BIN"):
        return [os.environ["CLAUDE_BIN"]]
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(platform.machine().lower(), "x64")
    for nm in _node_modules_dirs():
        for cand in (nm / "@anthropic-ai" / f"claude-code-linux-{arch}" / "claude",
                     nm / "@anthropic-ai" / f"claude-code-linux-{arch}-musl" / "claude",
                     nm / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"):
            if not (cand.is_file() and os.access(cand, os.X_OK)):
                continue
            try:
                out = subprocess.run([str(cand), "--version"], capture_output=True, text=True, timeout=60,
                                     env=_env(tempfile.gettempdir(), "http://127.0.0.1:9"))
            except (OSError, subprocess.TimeoutExpired):
                continue
            if out.returncode == 0 and VERSION in out.stdout:
                return [str(cand)]
    return None


def _env(home: str, base_url: str) -> dict:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "USER": "test",
           "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "dummy",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
           "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1",
           "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1", "CI": "1", "NO_COLOR": "1",
           "XDG_CONFIG_HOME": os.path.join(home, ".config"), "TMPDIR": home}
    for key in ("LANG", "LC_ALL", "MCP_BUDGET_BIN", "ENABLE_TOOL_SEARCH", "MAX_MCP_OUTPUT_TOKENS"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env


CLAUDE = find_claude()
needs_claude = pytest.mark.skipif(CLAUDE is None, reason=f"@anthropic-ai/claude-code {VERSION} not installed")


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    server: model_anthropic.Server

    def describe(self) -> str:
        return (f"rc={self.returncode} {self.seconds:.1f}s errors={self.server.errors}\nstdout: {self.stdout[-1500:]}\n"
                f"stderr: {self.stderr[-1500:]}\npaths: {[r.get('_path') for r in self.server.requests]}")


def run_claude(pager, servers: dict, cwd) -> Run:
    """Claude Code, headless, with `servers` ({name: {"command": [...], "env", "cwd"}})."""
    base_url, stop = model_anthropic.start(pager)
    server = model_anthropic.server_of(base_url)
    home = tempfile.mkdtemp(prefix="claude-home-")
    config = {"mcpServers": {}}
    for name, spec in servers.items():
        command = list(spec["command"])
        entry = {"type": "stdio", "command": command[0], "args": command[1:]}
        if spec.get("env"):
            entry["env"] = {k: str(v) for k, v in spec["env"].items()}
        config["mcpServers"][name] = entry
    cfg = Path(home) / "mcp.json"
    cfg.write_text(json.dumps(config))
    allowed = ",".join(f"mcp__{name}__*" for name in servers) + ",ToolSearch"
    cmd = CLAUDE + ["-p", PROMPT, "--output-format", "json", "--mcp-config", str(cfg), "--strict-mcp-config",
                    "--allowedTools", allowed]
    t = time.time()
    try:
        p = subprocess.run(cmd, env=_env(home, base_url), cwd=str(cwd), capture_output=True, text=True,
                           timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = -9, (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or ""), \
            f"timeout after {RUN_TIMEOUT}s"
    finally:
        stop()
    return Run(rc, out, err, time.time() - t, server)


def _spec(spec) -> dict:
    if isinstance(spec, (list, tuple)):
        return {"command": [str(x) for x in spec], "env": None, "cwd": None}
    get = spec.get if isinstance(spec, dict) else (lambda k, d=None: getattr(spec, k, d))
    command = get("command")
    command = [command] if isinstance(command, str) else list(command or [])
    return {"command": [str(x) for x in command + list(get("args") or [])], "env": get("env"), "cwd": get("cwd")}


CASES = list(getattr(common, "CASES", []) or [])


def run_case(case, spec):
    server = _spec(spec)
    pager = Pager(case.tool, dict(case.arguments))
    name = re.sub(r"[^A-Za-z0-9_-]", "_", case.server_name)
    run = run_claude(pager, {name: server}, server.get("cwd") or case.cwd)
    assert run.returncode == 0 and not run.server.errors, run.describe()
    called = [c["name"] for c in run.server.calls]
    assert f"mcp__{name}__{case.tool}" in called, f"the scripted model never called {case.tool}: {called}. {run.describe()}"
    return pager, run


@needs_claude
@pytest.mark.skipif(common is None, reason="tests/clients/common.py or pager.py missing")
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_proxied(case):
    pager, run = run_case(case, case.proxied("claude-code"))
    print(f"\nclaude-code {case.name}: {len(pager.handed)} results, {[len(h) for h in pager.handed]} chars, "
          f"{pager.case_search_trips} searches for the tool, {run.seconds:.1f}s")
    common.record("claude-code", case, pager, ENCODING)


@needs_claude
@pytest.mark.skipif(common is None, reason="tests/clients/common.py or pager.py missing")
def test_direct_path():
    """Without the proxy: the tool is offered (after ToolSearch) and its result reaches the model;
    no read_more is offered."""
    case = next(c for c in CASES if c.tool == "read_text_file")
    pager, run = run_case(case, case.direct())
    assert pager.handed and pager.handed[0]
    offered = {n for r in run.server.agent_requests() for n in model_anthropic.offered(r)}
    assert not any(n.endswith("read_more") for n in offered)
    print(f"\nclaude-code direct {case.name}: {[len(h) for h in pager.handed]} chars: {pager.handed[0][-300:]!r}")


# ---------------------------------------------------------------------------------------------
# The rmcp layer (crates/rmcp): an rmcp server that shapes its own results, no proxy in between.

RMCP_EXAMPLE = Path(os.environ.get("MCP_BUDGET_RMCP_EXAMPLE",
                                   HERE.parent.parent / "target" / "debug" / "examples" / "paged_server"))


def _orders() -> list[dict]:
    """What the example's `orders` tool holds (the formula of crates/rmcp/examples/paged_server.rs)."""
    return [{"id": i, "sku": f"sku-{i * 7919 % 100_000:05}", "qty": i % 17, "city": ["Oslo", "Lima", "Pune"][i % 3],
             "cents": i * 37 % 10_000} for i in range(4_000)]


@needs_claude
@pytest.mark.skipif(common is None, reason="tests/clients/common.py or pager.py missing")
@pytest.mark.skipif(not RMCP_EXAMPLE.exists(), reason=f"{RMCP_EXAMPLE} not built (run.sh builds it)")
def test_rmcp_layer_example():
    """crates/rmcp's paged_server (an rmcp stdio server wrapped with mcp_budget_rmcp::Budget)
    straight in Claude Code's config: each text handed to the model within the budget, page 1
    shows the cursor and read_more, every row reached through read_more."""
    case = common.Case("rmcp-paged_server", "rmcp", str(RMCP_EXAMPLE), [], "orders", {})
    # The direct result, without the layer: the rows as one JSON text (what the tool returns).
    common._DIRECT[case.name] = {"content": [{"type": "text", "text": json.dumps(_orders())}]}
    pager, run = run_case(case, case.direct())
    print(f"\nclaude-code {case.name}: {len(pager.handed)} results, {[len(h) for h in pager.handed]} chars, "
          f"{pager.case_search_trips} searches for the tool, {run.seconds:.1f}s")
    row = common.record("claude-code", case, pager, ENCODING)
    print(f"  handed tokens {row['tokens']}, coverage {row['coverage_pct']}%, page 1 shows the way: {row['page1_way']}")
    assert row["results"] > 1, "the rows came in one piece: nothing was paged"
