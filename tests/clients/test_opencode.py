"""OpenCode (npm `opencode-ai`, a Bun-compiled binary) end to end: the real client, headless
(`opencode run`), against our scripted Chat Completions server (model_chat.py), with the real MCP
servers behind `mcp-budget proxy`; records what OpenCode handed its model for every tool call.

How OpenCode is made to run here, offline:
- The binary: `opencode-ai`'s bin/opencode.exe is only a placeholder until its postinstall copies
  the platform package's binary over it; npm 11 does not run that script, but the platform package
  itself (`opencode-linux-x64`, an optionalDependency) is installed, so we run
  `node_modules/opencode-linux-x64/bin/opencode` (or the -baseline / -musl variants) directly.
- A temp HOME with XDG_{CONFIG,DATA,CACHE,STATE}_HOME and TMPDIR inside it (Bun unpacks a 5.5 MB
  native library into TMPDIR on every start), `OPENCODE_CONFIG` pointing at our JSON config,
  `OPENCODE_DISABLE_MODELS_FETCH` (no models.dev), `OPENCODE_DISABLE_AUTOUPDATE`, `…_SHARE`,
  `…_LSP_DOWNLOAD`, `…_DEFAULT_PLUGINS`, `…_CLAUDE_CODE`.
- OpenCode runs an npm install of `@opencode-ai/plugin` (Arborist, against the registry) into every
  config directory whose node_modules is missing or whose package.json lists a dependency the
  package-lock.json lacks (Npm.install). We pre-create `$XDG_CONFIG_HOME/opencode/` with an empty
  node_modules/ and a package.json + package-lock.json that both list it: nothing is installed and
  nothing but 127.0.0.1 is ever connected to (checked with strace). `@ai-sdk/openai-compatible` is
  bundled in the binary: no provider install.
- The config: provider "scripted" (npm @ai-sdk/openai-compatible, baseURL = ours), models
  "scripted" (tools, image input) and "title-model" (= small_model, so the session-title call is
  recognisable and never reaches the pager), `permission: "allow"`, autoupdate off, share disabled,
  and `mcp: {"<name>": {"type": "local", "command": [...], "enabled": true}}`; `--auto` as well.

What OpenCode 1.18.33 hands the model for an MCP tool result (source: the binary's bundled JS,
MCP tool wrapper + Truncate service; pinned empirically by test_rendering below):
- text items joined with "\n\n"; a resource item's text is added bare (no URI); a resource_link
  item is dropped; an image item (or a supported binary resource) becomes an attachment that goes
  to the model as a separate user message ["Attached media from tool result:", image_url]; other
  binary resources become a "[Binary MCP resource omitted: …]" line.
- structuredContent is ignored when content is non-empty; when content is empty the text is
  JSON.stringify(structuredContent).
- isError: the text items joined with "\n\n" become the tool error, handed as is.
- Then Truncate.output: if the text has more than 2000 lines or more than 51200 UTF-8 bytes
  (config `tool_output.max_lines` / `max_bytes`), OpenCode keeps whole lines from the head while
  both limits hold, saves the full text under $XDG_DATA_HOME/opencode/tool-output/tool_<id>, and
  appends "\n\n...<N> lines truncated...\n\n" (or "...<N> bytes truncated..." when bytes bound,
  N = total bytes - kept bytes) + "The tool call succeeded but the output was truncated. Full
  output saved to: <path>\nUse the Task tool to have explore agent process this file …" (or "Use
  Grep to search the full content or Read with offset/limit …" when the agent may not use task).
  A meta item at the end of a page that is over 2000 lines is therefore cut away.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import model_chat  # noqa: E402

RUN_TIMEOUT = float(os.environ.get("OPENCODE_RUN_TIMEOUT", "120"))


# ---------------------------------------------------------------------------------------------
# Locating the binary

def _node_modules_dirs() -> list[Path]:
    dirs = []
    for env in ("CLIENTS_NODE_MODULES", "OPENCODE_NODE_MODULES"):
        if os.environ.get(env):
            dirs.append(Path(os.environ[env]))
    try:
        import common  # the harness may know where it installed the clients
        for attr in ("NODE_MODULES", "CLIENTS_NODE_MODULES"):
            if getattr(common, attr, None):
                dirs.append(Path(getattr(common, attr)))
    except Exception:
        pass
    dirs += [HERE / "node_modules", HERE.parent.parent / "target" / "clients-cache" / "node_modules",
             Path("/tmp/clients/node_modules")]
    return dirs


def _platform_packages() -> list[str]:
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower())
    base = f"opencode-linux-{arch}"
    avx2 = False
    try:
        avx2 = " avx2" in Path("/proc/cpuinfo").read_text()
    except OSError:
        pass
    names = [base, f"{base}-baseline"] if avx2 or arch != "x64" else [f"{base}-baseline", base]
    return names + [f"{base}-musl", f"{base}-baseline-musl"]


def find_opencode() -> str | None:
    if os.environ.get("OPENCODE_BIN"):
        return os.environ["OPENCODE_BIN"]
    for nm in _node_modules_dirs():
        for pkg in _platform_packages():
            cand = nm / pkg / "bin" / "opencode"
            if cand.is_file() and os.access(cand, os.X_OK):
                try:
                    ok = subprocess.run([str(cand), "--version"], capture_output=True, timeout=30).returncode == 0
                except (OSError, subprocess.TimeoutExpired):
                    ok = False
                if ok:
                    return str(cand)
    return None


OPENCODE = find_opencode()
needs_opencode = pytest.mark.skipif(OPENCODE is None, reason="opencode binary not installed")


# ---------------------------------------------------------------------------------------------
# One headless run

class Run:
    """What one `opencode run` did: its output and the scripted server's records."""

    def __init__(self, proc, seconds, server, home):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.seconds = seconds
        self.server = server      # model_chat.Server: requests, side, media, errors
        self.home = home

    def events(self) -> list[dict]:
        out = []
        for line in self.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
        return out

    def describe(self) -> str:
        return (f"rc={self.returncode} in {self.seconds:.1f}s; {len(self.server.requests)} requests, "
                f"errors={self.server.errors}\nstdout tail: {self.stdout[-1500:]}\n"
                f"stderr tail: {self.stderr[-1500:]}")


def _config(base_url: str, name: str, command: list[str], env: dict | None) -> dict:
    model = {"tool_call": True, "attachment": True,
             "modalities": {"input": ["text", "image", "pdf"], "output": ["text"]},
             "limit": {"context": 200000, "output": 8192}}
    server = {"type": "local", "command": list(command), "enabled": True, "timeout": 60000}
    if env:
        server["environment"] = dict(env)
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"scripted": {
            "npm": "@ai-sdk/openai-compatible", "name": "Scripted",
            "options": {"baseURL": base_url, "apiKey": "scripted"},
            "models": {model_chat.MAIN_MODEL: {"name": "Scripted", **model},
                       model_chat.TITLE_MODEL: {"name": "Title", **model, "tool_call": False}}}},
        "model": f"scripted/{model_chat.MAIN_MODEL}",
        "small_model": f"scripted/{model_chat.TITLE_MODEL}",
        "enabled_providers": ["scripted"],
        "mcp": {name: server},
        "permission": "allow",
        "autoupdate": False,
        "share": "disabled",
    }


def run_opencode(pager, command: list[str], cwd: str | os.PathLike, name: str = "srv",
                 env: dict | None = None, prompt: str = "Use the tools.", timeout: float = RUN_TIMEOUT) -> Run:
    """Run `opencode run` once, headless, with one MCP server (`command`), against a scripted
    model server driven by `pager`. Everything OpenCode writes lives in a temp HOME, removed after."""
    assert OPENCODE, "opencode binary not found"
    base_url, stop = model_chat.start(pager)
    home = Path(tempfile.mkdtemp(prefix="opencode-home-"))
    try:
        cfg_dir = home / ".config" / "opencode"
        (cfg_dir / "node_modules").mkdir(parents=True)
        dep = {"@opencode-ai/plugin": "*"}
        (cfg_dir / "package.json").write_text(json.dumps({"dependencies": dep}))
        (cfg_dir / "package-lock.json").write_text(json.dumps(
            {"lockfileVersion": 3, "requires": True, "packages": {"": {"dependencies": dep}}}))
        (home / "tmp").mkdir()
        config = home / "opencode.json"
        config.write_text(json.dumps(_config(base_url, name, command, env), indent=1))
        run_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home), "TMPDIR": str(home / "tmp"),
            "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".local" / "state"),
            "OPENCODE_CONFIG": str(config),
            "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_CLAUDE_CODE": "1",
            "npm_config_offline": "true", "NO_COLOR": "1", "TERM": "dumb", "CI": "true",
        }
        for key in ("LANG", "LC_ALL", "MCP_BUDGET_BIN"):
            if key in os.environ:
                run_env[key] = os.environ[key]
        cmd = [OPENCODE, "run", "--model", f"scripted/{model_chat.MAIN_MODEL}", "--format", "json",
               "--auto", prompt]
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, cwd=str(cwd), env=run_env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"opencode run timed out after {timeout}s; "
                                 f"{len(stop.server.requests)} model requests; "
                                 f"stdout tail: {(exc.stdout or b'')[-1500:]!r}") from None
        return Run(proc, time.monotonic() - t0, stop.server, home)
    finally:
        stop()
        shutil.rmtree(home, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The rendering rules, pinned on a raw MCP server of ours (python3 test_opencode.py raw-server)

def _lines(n: int, width: int = 20) -> str:
    return "\n".join(f"L{i:05d} ".ljust(width, "x") for i in range(n))


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
RAW_RESULTS = {
    "multi": {"content": [{"type": "text", "text": "ONE"}, {"type": "text", "text": "TWO"}],
              "structuredContent": {"sc": "STRUCT_ONLY"}},
    "sc_only": {"content": [], "structuredContent": {"sc": "STRUCT_ONLY"}},
    "resource": {"content": [
        {"type": "text", "text": "T0"},
        {"type": "resource", "resource": {"uri": "file:///x", "mimeType": "text/plain", "text": "RES_TEXT"}},
        {"type": "resource_link", "uri": "file:///y", "name": "yname"},
        {"type": "text", "text": "T1"}]},
    "image": {"content": [{"type": "text", "text": "before"},
                          {"type": "image", "data": PNG, "mimeType": "image/png"},
                          {"type": "text", "text": "after"}]},
    "lines2000": {"content": [{"type": "text", "text": _lines(2000)}]},
    "lines2001": {"content": [{"type": "text", "text": _lines(2001)}]},
    "bytes": {"content": [{"type": "text", "text": _lines(1000, 60)}]},
    "meta_cut": {"content": [{"type": "text", "text": _lines(1999)}, {"type": "text", "text": "META"}]},
    "error": {"content": [{"type": "text", "text": "ERR1"}, {"type": "text", "text": "ERR2"}], "isError": True},
}


def raw_server() -> None:
    """A minimal stdio MCP server: tool `probe {kind}` answers RAW_RESULTS[kind]."""
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        method = msg.get("method")
        if method == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "raw", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "probe", "description": "probe",
                                 "inputSchema": {"type": "object", "properties": {"kind": {"type": "string"}},
                                                 "required": ["kind"]}}]}
        elif method == "tools/call":
            result = RAW_RESULTS[msg["params"]["arguments"]["kind"]]
        elif method == "ping":
            result = {}
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                         "error": {"code": -32601, "message": "unsupported"}}) + "\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        sys.stdout.flush()


class _Call:
    def __init__(self, name, arguments):
        self.name, self.arguments = name, arguments


class _Final:
    def __init__(self, text):
        self.text = text


class _Sequence:
    """A scripted model that calls `probe` once per kind, in order, then stops."""

    def __init__(self, kinds):
        self.kinds = kinds
        self.handed: list[str] = []

    def step(self, tool_names, results):
        self.handed = list(results)
        if len(results) < len(self.kinds):
            name = next(n for n in tool_names if n.endswith("probe"))
            return _Call(name, {"kind": self.kinds[len(results)]})
        return _Final("done")


@needs_opencode
def test_rendering(tmp_path):
    kinds = list(RAW_RESULTS)
    seq = _Sequence(kinds)
    run = run_opencode(seq, [sys.executable, str(Path(__file__).resolve()), "raw-server"], tmp_path, name="raw")
    assert run.returncode == 0 and not run.server.errors, run.describe()
    got = dict(zip(kinds, seq.handed))
    assert len(got) == len(kinds), run.describe()
    notice = "The tool call succeeded but the output was truncated. Full output saved to: "

    assert got["multi"] == "ONE\n\nTWO"                      # joined by a blank line; structuredContent unused
    assert got["sc_only"] == '{"sc":"STRUCT_ONLY"}'          # empty content: JSON.stringify(structuredContent)
    assert got["resource"] == "T0\n\nRES_TEXT\n\nT1"          # resource text bare, resource_link dropped
    assert got["image"] == "before\n\nafter"                 # the image goes elsewhere:
    assert any(m.get("type") == "image_url" for m in model_chat.media_parts(run.server.requests[-1]))
    assert got["lines2000"] == _lines(2000)                  # 2000 lines, 41,999 bytes: untouched
    head, sep, tail = got["lines2001"].partition("\n\n...1 lines truncated...\n\n")
    assert sep and head == _lines(2000) and tail.startswith(notice)
    full = _lines(1000, 60)
    kept = "\n".join(full.split("\n")[:839])                 # whole lines while <= 51,200 bytes
    assert got["bytes"].startswith(kept + "\n\n...") and len(kept.encode()) <= 51200 < len(kept.encode()) + 61
    assert f"...{len(full.encode()) - len(kept.encode())} bytes truncated...\n\n{notice}" in got["bytes"]
    assert "META" not in got["meta_cut"] and "...1 lines truncated..." in got["meta_cut"]
    assert got["error"] == "ERR1\n\nERR2"
    print(f"\nopencode rendering: {len(kinds)} results in {run.seconds:.1f}s")


# ---------------------------------------------------------------------------------------------
# The cases of common.CASES, through the proxy, and one without it

if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "raw-server":
    raw_server()
    sys.exit(0)
