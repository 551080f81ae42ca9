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
import re
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
    # Not common.CLIENTS_NODE_MODULES: importing common makes its data; the raw-server mode of
    # this file must stay light. run.sh exports CLIENTS_NODE_MODULES; this is its default.
    cache = Path(os.environ.get("CLIENTS_CACHE") or HERE.parent.parent / "target" / "clients-cache")
    dirs += [cache / "node_modules", HERE / "node_modules", Path("/tmp/clients/node_modules")]
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


RAW_SERVER_MODE = __name__ == "__main__" and sys.argv[1:2] == ["raw-server"]
OPENCODE = None if RAW_SERVER_MODE else find_opencode()
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
            "PYTHONDONTWRITEBYTECODE": "1",
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
# Line-dense text: 6,000 short lines (~15,000 cl100k tokens). A page of it that fits 10,000 tokens
# can hold more than 2,000 lines, which OpenCode cuts, meta item (the cursor) and all.
DENSE = "\n".join(str(i) for i in range(6000))
RAW_RESULTS_PROXIED = {"dense": {"content": [{"type": "text", "text": DENSE}]}}


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
            kind = msg["params"]["arguments"]["kind"]
            result = RAW_RESULTS.get(kind) or RAW_RESULTS_PROXIED[kind]
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


def proxy_binary() -> str | None:
    for cand in (os.environ.get("MCP_BUDGET_BIN"), getattr(_common(), "MCP_BUDGET_BIN", None),
                 "/tmp/mcpb/mcp-budget"):
        if cand and os.access(str(cand), os.X_OK):
            return str(cand)
    return None


def _common():
    try:
        import common
        return common
    except ImportError:
        return None


def proxy_knows_client(binary: str) -> bool:
    out = subprocess.run([binary, "proxy", "--help"], capture_output=True, text=True, timeout=30)
    return "--client" in out.stdout + out.stderr


class _Follow:
    """Calls `probe {kind}`, then read_more on the last next_cursor of each result, until none."""

    def __init__(self, kind, limit=20):
        self.kind, self.limit = kind, limit
        self.handed: list[str] = []

    def step(self, tool_names, results):
        import re
        self.handed = list(results)
        if not results:
            return _Call(next(n for n in tool_names if n.endswith("probe")), {"kind": self.kind})
        cursors = re.findall(r'next_cursor\\*":\\*"([^"\\]+)', results[-1])
        if cursors and len(results) < self.limit:
            return _Call(next(n for n in tool_names if n.endswith("read_more")), {"cursor": cursors[-1]})
        return _Final("done")


@needs_opencode
def test_line_dense_pages_keep_their_cursor(tmp_path):
    """Every page of a 6,000-line text reaches the model whole: <= 2,000 lines and 51,200 bytes as
    OpenCode counts them (items joined by a blank line), its cursor intact, the text all there."""
    binary = proxy_binary()
    if not binary:
        pytest.skip("no mcp-budget binary (MCP_BUDGET_BIN)")
    client = ["--client", "opencode"] if proxy_knows_client(binary) else []
    follow = _Follow("dense")
    command = [binary, "proxy", *client, "--", sys.executable, str(Path(__file__).resolve()), "raw-server"]
    run = run_opencode(follow, command, tmp_path, name="raw")
    assert run.returncode == 0 and not run.server.errors, run.describe()
    pages = follow.handed
    cut = [i for i, h in enumerate(pages) if "The tool call succeeded but the output was truncated" in h]
    if cut and not client:
        pytest.xfail(f"proxy without --client: OpenCode cut page(s) {cut} past 2,000 lines, cursor lost")
    assert not cut, f"OpenCode cut pages {cut}"
    for h in pages:
        assert len(h.split("\n")) <= 2000 and len(h.encode()) <= 51200
    text = ""
    for h in pages:  # page text, then "\n\n" + the meta item's compact JSON
        body, sep, meta = h.rpartition("\n\n")
        assert sep and meta.startswith("{"), h[-300:]
        text += body
    assert text == DENSE, f"{len(pages)} pages cover {len(text)} of {len(DENSE)} chars"
    print(f"\nopencode dense text: {len(pages)} pages, {[len(h.split(chr(10))) for h in pages]} lines, "
          f"{run.seconds:.1f}s")


# ---------------------------------------------------------------------------------------------
# The cases of common.CASES, through the proxy, and one without it

common = Pager = None
if not RAW_SERVER_MODE:
    try:
        import common
        from pager import Pager
    except ImportError:  # the harness's files are not there
        common = Pager = None

CASES = list(getattr(common, "CASES", []) or [])


def _spec(spec) -> tuple[list[str], dict | None, str | None]:
    """(command, env, cwd) of a server spec: a list, a dict or an object with command/args/env/cwd."""
    if isinstance(spec, (list, tuple)):
        return [str(x) for x in spec], None, None
    get = spec.get if isinstance(spec, dict) else (lambda k, d=None: getattr(spec, k, d))
    command = get("command")
    command = [command] if isinstance(command, str) else list(command or [])
    return [str(x) for x in command + list(get("args") or [])], get("env"), get("cwd")


def _case_id(case) -> str:
    return str(getattr(case, "name", None) or getattr(case, "id", None) or case)


def run_case(case, spec, tmp_path):
    command, env, cwd = _spec(spec)
    # MCP servers that honour roots (filesystem) serve OpenCode's working directory: run it there.
    cwd = cwd or getattr(case, "cwd", None) or getattr(case, "root", None) or tmp_path
    pager = Pager(case.tool, dict(case.arguments))
    run = run_opencode(pager, command, cwd, name=getattr(case, "server_name", None) or "srv", env=env)
    assert run.returncode == 0 and not run.server.errors, run.describe()
    return pager, run


@needs_opencode
@pytest.mark.skipif(common is None, reason="tests/clients/common.py or pager.py missing")
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_case_proxied(case, tmp_path):
    pager, run = run_case(case, case.proxied(), tmp_path)
    print(f"\nopencode {_case_id(case)}: {len(pager.handed)} results in {run.seconds:.1f}s")
    common.record("opencode", case, pager, "cl100k_base")


def _direct_case():
    for case in CASES:
        if getattr(case, "tool", None) == "read_text_file":
            return case
    return CASES[0] if CASES else None


def _direct_spec(case):
    for attr in ("direct", "server", "command"):
        value = getattr(case, attr, None)
        if callable(value):
            value = value()
        if value:
            return value
    return None


TRUNCATED = re.compile(r"\n\n\.\.\.(\d+) (lines|bytes) truncated\.\.\.\n\nThe tool call succeeded but the output "
                       r"was truncated\. Full output saved to: (\S+)\n(Use the Task tool|Use Grep) [^\n]*\Z")


@needs_opencode
@pytest.mark.skipif(common is None, reason="tests/clients/common.py or pager.py missing")
def test_direct_path(tmp_path):
    """The same client and server without the proxy: the tool is offered and called, its result
    reaches the model whole, or cut by OpenCode's own Truncate (head <= 2,000 lines and 51,200
    bytes, then its notice): no pages, no cursor."""
    case = _direct_case()
    spec = _direct_spec(case) if case else None
    if spec is None:
        pytest.skip("no case with a direct server command in common.CASES")
    pager, run = run_case(case, spec, tmp_path)
    assert pager.handed, run.describe()
    offered = {n for r in run.server.requests for n in model_chat.tool_names(r)}
    assert not any(n.endswith("read_more") for n in offered), sorted(offered)
    first = pager.handed[0]
    m = TRUNCATED.search(first)
    if m:
        head = first[:m.start()]
        assert len(head.split("\n")) <= 2000 and len(head.encode()) <= 51200
    print(f"\nopencode direct {_case_id(case)}: {[len(h.encode()) for h in pager.handed]} bytes, "
          f"{'cut by OpenCode (' + m.group(1) + ' ' + m.group(2) + ')' if m else 'whole'}, {run.seconds:.1f}s")


if RAW_SERVER_MODE:
    raw_server()
    sys.exit(0)
