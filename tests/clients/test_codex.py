"""Codex CLI (npm `@openai/codex` 0.169.0) end to end: the real client, headless (`codex exec`),
against our scripted Responses API server (model_responses.py), with the real MCP servers behind
`mcp-budget proxy`; records what Codex handed its model for every tool call.

How Codex is made to run here, offline:
- The binary: `@openai/codex` is a small Node launcher (bin/codex.js) that execs the native binary
  of its optionalDependency `@openai/codex-linux-x64` (npm alias of `@openai/codex@0.169.0-linux-x64`,
  vendor/x86_64-unknown-linux-musl/bin/codex). There is no postinstall: npm 11 not running install
  scripts changes nothing. We run the launcher with node (the native binary directly if node is
  missing); CODEX_BIN overrides.
- `codex exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox --ephemeral <prompt>`
  (approval "never", sandbox "danger-full-access": MCP calls run without prompts), stdin = /dev/null
  (exec otherwise waits for stdin to be appended to the prompt), CODEX_HOME = a temp dir.
- config.toml: `model_provider = "scripted"` with `[model_providers.scripted] base_url = <ours>/v1,
  wire_api = "responses", env_key`, retries 0; `check_for_update_on_startup = false`;
  `[analytics] enabled = false` (else DNS for ab.chatgpt.com), `[feedback] enabled = false`,
  `[otel]` exporters "none"; `[features] plugins = false, apps = false, remote_plugin = false`
  (else a curated-plugin sync runs `git ls-remote https://github.com/openai/plugins.git`, then
  api.github.com, then chatgpt.com/backend-api/plugins/export/curated),
  `unbounded_connection_retries = false`, `chatgpt_base_url` on a dead loopback port,
  `[history] persistence = "none"`. With that, strace shows no connect()/DNS but 127.0.0.1.
- `mcp_optional_startup_grace_ms = 0`: Codex builds its first tool catalog after waiting at most
  1000 ms (the default) for "optional" MCP servers and leaves out those not up yet. mcp-server-git
  (Python, ~1 s cold start) misses that window, directly or behind the proxy: that is why "Codex
  lists none of mcp-server-git's tools". With 0 it waits each server's startup_timeout_sec, and
  every git tool is listed (checked: git_log through the proxy works).
- The model: "scripted-model", a slug Codex does not know, so it uses its fallback model metadata
  (codex-rs models-manager `model_info_from_slug`): truncation_policy Bytes(10000), no tool search
  (MCP tools offered directly as a `namespace` tool "mcp__<server>"). That is what a Codex user with
  a custom provider / local model gets, and the smallest cap. CODEX_TEST_MODEL=gpt-5.5 runs a
  bundled slug instead: Tokens(10000) (≈ 48,000 bytes) and every MCP tool deferred behind
  `tool_search` (the pager then has to search first, which record() counts). The newer bundled
  slugs (gpt-5.6-*, gpt-6*) are "code_mode_only": the model only gets a JavaScript `exec` tool that
  calls MCP tools — a different path, not covered here.

What Codex 0.169.0 hands the model for an MCP tool result (codex-rs core/src/tools/context.rs
`McpToolOutput::response_payload`, protocol/src/models.rs `CallToolResult::as_function_call_output_payload`,
utils/output-truncation/src/lib.rs, utils/string/src/truncate.rs; pinned by test_rendering below):
- structuredContent present (non-null): ONLY its compact JSON (serde_json::to_string, like
  JSON.stringify), as one string "Wall time: <s.4f> seconds\\nOutput:\\n<json>"; content ignored.
- otherwise the content items as an array: first an input_text "Wall time: <s.4f> seconds\\nOutput:"
  (33 bytes under 10 s), then one input_text per text item (verbatim, not joined), an image as
  input_image (data: URL), anything else (resource_link, resource, audio) as an input_text holding
  the item's compact JSON. isError changes nothing in the text.
- truncation, per result, in UTF-8 bytes: budget = policy × 1.2 — fallback metadata Bytes(10000) →
  12,000 bytes; bundled models Tokens(10000) → 12,000 "tokens" of 4 bytes = 48,000 bytes;
  `tool_output_token_limit = N` in config.toml sets N (bytes mode: 4·N bytes) before the × 1.2, and
  `[mcp_servers.<s>.tools.<t>] output_token_limit` per tool. The text items (header included)
  spend the budget in order; the first that does not fit is cut in the middle (head = half the
  remaining budget, tail = the rest, "…N tokens truncated…" between); every later text item is
  dropped and "[omitted K text items ...]" appended; images pass. Applied twice (tool output, then
  history), so the marker seen says "…7 tokens truncated…" or so whatever was cut. A meta item at
  the end of a page that does not fit is therefore lost; a structuredContent page is cut in the
  middle of its JSON.

The handed text given to the pager is the string, or the text items joined with "\\n"
(model_responses.output_text); a tool search counts as a result holding the JSON of the tools it loaded.
"""

from __future__ import annotations

import json
import os
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

import model_responses  # noqa: E402

CODEX_VERSION = "0.169.0"
ENCODING = "o200k_base"  # Codex's models: tiktoken o200k_base (codex-rs utils/tokenizer: the default and fallback)
MODEL = os.environ.get("CODEX_TEST_MODEL", "scripted-model")
RUN_TIMEOUT = float(os.environ.get("CODEX_RUN_TIMEOUT", "90"))
PROMPT = "Use the MCP tools."


# ---------------------------------------------------------------------------------------------
# Locating the client

def _node_modules_dirs() -> list[Path]:
    dirs = []
    for env in ("CLIENTS_NODE_MODULES", "CODEX_NODE_MODULES"):
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


def _works(cmd: list[str]) -> bool:
    try:
        out = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "codex-cli" in out.stdout


def find_codex() -> list[str] | None:
    """The command that starts Codex: [node, …/@openai/codex/bin/codex.js] or the native binary."""
    if os.environ.get("CODEX_BIN"):
        return [os.environ["CODEX_BIN"]]
    node = shutil.which("node")
    for nm in _node_modules_dirs():
        launcher = nm / "@openai" / "codex" / "bin" / "codex.js"
        native = nm / "@openai" / "codex-linux-x64" / "vendor" / "x86_64-unknown-linux-musl" / "bin" / "codex"
        if node and launcher.is_file() and _works([node, str(launcher)]):
            return [node, str(launcher)]
        if native.is_file() and os.access(native, os.X_OK) and _works([str(native)]):
            return [str(native)]
    return None


CODEX = find_codex()
needs_codex = pytest.mark.skipif(CODEX is None, reason="@openai/codex not installed (CODEX_BIN)")


# ---------------------------------------------------------------------------------------------
# One headless run

def _toml(value) -> str:
    """A TOML value for a str / list of str / dict of str (JSON's escapes are valid TOML basic strings)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(str(value))


def config_toml(base_url: str, servers: dict[str, dict], model: str = MODEL, extra: str = "") -> str:
    """config.toml for one run. servers: name -> {"command": [...], "env": {...}|None, "cwd": str|None}."""
    out = [
        f"model = {_toml(model)}",
        'model_provider = "scripted"',
        "check_for_update_on_startup = false",
        "mcp_optional_startup_grace_ms = 0",
        'chatgpt_base_url = "http://127.0.0.1:9/backend-api/"',
        extra,
        "[history]", 'persistence = "none"',
        "[analytics]", "enabled = false",
        "[feedback]", "enabled = false",
        "[otel]", 'exporter = "none"', 'metrics_exporter = "none"', 'trace_exporter = "none"',
        "[features]", "plugins = false", "apps = false", "remote_plugin = false",
        "unbounded_connection_retries = false",
        "[model_providers.scripted]", 'name = "scripted"', f"base_url = {_toml(base_url)}",
        'wire_api = "responses"', 'env_key = "SCRIPTED_API_KEY"',
        "request_max_retries = 0", "stream_max_retries = 0",
    ]
    for name, spec in servers.items():
        command = list(spec["command"])
        out += [f"[mcp_servers.{name}]", f"command = {_toml(command[0])}", f"args = {_toml(command[1:])}",
                "startup_timeout_sec = 60", "tool_timeout_sec = 120"]
        if spec.get("env"):
            out.append(f"env = {_toml(spec['env'])}")
        if spec.get("cwd"):
            out.append(f"cwd = {_toml(spec['cwd'])}")
    return "\n".join(out) + "\n"


class Run:
    """What one `codex exec` did: its output and the scripted server's records."""

    def __init__(self, proc, seconds, server):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.seconds = seconds
        self.server = server      # model_responses.Server: requests, side, calls, media, searches, errors

    def describe(self) -> str:
        return (f"rc={self.returncode} in {self.seconds:.1f}s; {len(self.server.requests)} requests, "
                f"emitted={[c.get('type') + ':' + str(c.get('name', '')) for c in self.server.calls]}, "
                f"errors={self.server.errors}\nstdout tail: {self.stdout[-1000:]}\n"
                f"stderr tail: {self.stderr[-2000:]}")


def run_codex(pager, servers: dict[str, dict], cwd, model: str = MODEL, extra: str = "",
              prompt: str = PROMPT, timeout: float = RUN_TIMEOUT) -> Run:
    """Run `codex exec` once, headless, with the given MCP servers, against a scripted model server
    driven by `pager`. CODEX_HOME (config, state databases) lives in a temp dir, removed after."""
    assert CODEX, "codex not found"
    base_url, stop = model_responses.start(pager)
    home = Path(tempfile.mkdtemp(prefix="codex-home-"))
    try:
        (home / "config.toml").write_text(config_toml(base_url, servers, model, extra))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home), "CODEX_HOME": str(home), "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
            "SCRIPTED_API_KEY": "scripted", "NO_COLOR": "1", "TERM": "dumb", "CI": "true",
            "RUST_LOG": "error", "PYTHONDONTWRITEBYTECODE": "1",
        }
        for key in ("LANG", "LC_ALL", "MCP_BUDGET_BIN"):
            if key in os.environ:
                env[key] = os.environ[key]
        cmd = [*CODEX, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
               "--ephemeral", "--color", "never", prompt]
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, cwd=str(cwd), env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"codex exec timed out after {timeout}s; {len(stop.server.requests)} model "
                                 f"requests; stderr tail: {(exc.stderr or b'')[-1500:]!r}") from None
        return Run(proc, time.monotonic() - t0, stop.server)
    finally:
        stop()
        shutil.rmtree(home, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The rendering rules, pinned on a raw MCP server of ours (python3 test_codex.py raw-server)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
BIG = "".join(f"row {i:05d} abcdefghij\n" for i in range(4000))           # 84,000 bytes
META = '{"truncated":true,"next_cursor":"abc.1"}'
RAW_RESULTS = {
    "texts": {"content": [{"type": "text", "text": 'one "q"\nline'}, {"type": "text", "text": META}]},
    "structured": {"content": [{"type": "text", "text": "TEXT_VERSION"}],
                   "structuredContent": {"sc": "STRUCT_ONLY", "n": 1}},
    "image": {"content": [{"type": "text", "text": "before"},
                          {"type": "image", "data": PNG, "mimeType": "image/png"},
                          {"type": "text", "text": "after"}]},
    "link": {"content": [{"type": "text", "text": "see"},
                         {"type": "resource_link", "uri": "file:///x.txt", "name": "x.txt"}]},
    "error": {"content": [{"type": "text", "text": "ERR"}], "isError": True},
    "big": {"content": [{"type": "text", "text": BIG}, {"type": "text", "text": META}]},
    "big_structured": {"content": [{"type": "text", "text": "x"}], "structuredContent": {"content": BIG}},
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


def _outputs(run: Run) -> list:
    """The raw `output` of every function_call_output of the last agent request, in order."""
    last = [r for r in run.server.requests if isinstance(r, dict) and r.get("stream")][-1]
    return [i.get("output") for i in last.get("input", []) if i.get("type") == "function_call_output"]


HEADER = re.compile(r"^Wall time: \d+\.\d{4} seconds\nOutput:$")
MARK = re.compile(r"…(\d+) tokens truncated…")


@needs_codex
def test_rendering(tmp_path):
    """Codex's rendering and truncation rules (fallback model metadata: 12,000 bytes a result)."""
    kinds = list(RAW_RESULTS)
    seq = _Sequence(kinds)
    run = run_codex(seq, {"raw": {"command": [sys.executable, str(Path(__file__).resolve()), "raw-server"]}},
                    tmp_path, model="scripted-model")
    assert run.returncode == 0 and not run.server.errors, run.describe()
    assert f"OpenAI Codex v{CODEX_VERSION}" in run.stderr, run.stderr[:300]
    got = dict(zip(kinds, _outputs(run)))
    assert len(got) == len(kinds), run.describe()
    # The tool is offered as a namespace "mcp__raw" and called back with that namespace.
    assert any(c.get("namespace") == "mcp__raw" and c.get("name") == "probe" for c in run.server.calls)

    def texts(items):
        assert isinstance(items, list) and HEADER.match(items[0]["text"]), items
        return [i.get("text") if i["type"] == "input_text" else i["type"] for i in items[1:]]

    assert texts(got["texts"]) == ['one "q"\nline', META]                      # one input_text per item
    s = got["structured"]                                                     # structuredContent only
    assert isinstance(s, str) and s.split("\n", 2)[2] == '{"sc":"STRUCT_ONLY","n":1}' and HEADER.match(
        "\n".join(s.split("\n", 2)[:2])), s
    assert texts(got["image"]) == ["before", "input_image", "after"]
    assert got["image"][2]["image_url"] == f"data:image/png;base64,{PNG}"
    assert texts(got["link"]) == ["see", '{"type":"resource_link","uri":"file:///x.txt","name":"x.txt"}']
    assert texts(got["error"]) == ["ERR"]

    big = texts(got["big"])                                                   # cut in the middle, meta dropped
    assert big[1] == "[omitted 1 text items ...]", big[1:]
    head, mark, tail = MARK.split(big[0], maxsplit=1)[0], MARK.search(big[0]), MARK.split(big[0], maxsplit=1)[2]
    assert mark and BIG.startswith(head) and BIG.endswith(tail), big[0][:200]
    assert 5900 < len(head.encode()) <= 6000 and 5900 < len(tail.encode()) <= 6000
    header_bytes = len(got["big"][0]["text"].encode())
    assert 11_900 < header_bytes + len(big[0].encode()) <= 12_050

    bs = got["big_structured"]                                                # the JSON string cut the same way
    assert isinstance(bs, str) and MARK.search(bs) and 11_900 < len(bs.encode()) <= 12_050, len(bs)
    whole = json.dumps({"content": BIG}, separators=(",", ":"))
    body = bs.split("\n", 2)[2]
    assert whole.startswith(MARK.split(body, maxsplit=1)[0]) and whole.endswith(MARK.split(body, maxsplit=1)[2])
    print(f"\ncodex rendering: {len(kinds)} results in {run.seconds:.1f}s")


@needs_codex
def test_tool_output_token_limit(tmp_path):
    """`tool_output_token_limit = 2000` (fallback metadata, bytes mode): 2000 × 4 × 1.2 = 9,600 bytes."""
    seq = _Sequence(["big"])
    run = run_codex(seq, {"raw": {"command": [sys.executable, str(Path(__file__).resolve()), "raw-server"]}},
                    tmp_path, model="scripted-model", extra="tool_output_token_limit = 2000")
    assert run.returncode == 0 and not run.server.errors, run.describe()
    items = _outputs(run)[0]
    total = sum(len(i["text"].encode()) for i in items[:2])
    assert MARK.search(items[1]["text"]) and 9_500 < total <= 9_650, total


# ---------------------------------------------------------------------------------------------
# The cases of common.CASES, through the proxy, and one without it

try:
    import common
    from pager import Pager
except ImportError:  # the harness's files are not there yet
    common = Pager = None

CASES = list(getattr(common, "CASES", []) or [])


def _spec(spec) -> dict:
    """{"command", "env", "cwd"} of a server spec: a list, a dict or an object with command/args/env/cwd."""
    if isinstance(spec, (list, tuple)):
        return {"command": [str(x) for x in spec], "env": None, "cwd": None}
    get = spec.get if isinstance(spec, dict) else (lambda k, d=None: getattr(spec, k, d))
    command = get("command")
    command = [command] if isinstance(command, str) else list(command or [])
    return {"command": [str(x) for x in command + list(get("args") or [])], "env": get("env"), "cwd": get("cwd")}


def _case_id(case) -> str:
    return str(getattr(case, "name", None) or getattr(case, "id", None) or case)


def _server_name(case) -> str:
    name = str(getattr(case, "server_name", None) or getattr(case, "server", None) or "srv")
    return re.sub(r"[^A-Za-z0-9_-]", "_", name) or "srv"


def run_case(case, spec, tmp_path):
    server = _spec(spec)
    cwd = server.get("cwd") or getattr(case, "cwd", None) or getattr(case, "root", None) or tmp_path
    pager = Pager(case.tool, dict(case.arguments))
    run = run_codex(pager, {_server_name(case): server}, cwd)
    assert run.returncode == 0 and not run.server.errors, run.describe()
    called = [c for c in run.server.calls if c.get("type") == "function_call"]
    assert called and called[0].get("name") == re.sub(r"[^A-Za-z0-9_]", "_", case.tool), (
        f"the scripted model never called {case.tool}: Codex did not offer it. {run.describe()}")
    return pager, run


@needs_codex
@pytest.mark.skipif(common is None, reason="tests/clients/common.py or pager.py missing")
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_case_proxied(case, tmp_path):
    pager, run = run_case(case, case.proxied(), tmp_path)
    print(f"\ncodex {_case_id(case)}: {len(pager.handed)} results, "
          f"{[len(h.encode()) for h in pager.handed]} bytes, {run.seconds:.1f}s")
    common.record("codex", case, pager, ENCODING)


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


@needs_codex
@pytest.mark.skipif(common is None, reason="tests/clients/common.py or pager.py missing")
def test_direct_path(tmp_path):
    """The same client and server without the proxy: the tool is offered and called, its result
    reaches the model (cut by Codex's own cap when large: nothing to assert about pages here)."""
    case = _direct_case()
    spec = _direct_spec(case) if case else None
    if spec is None:
        pytest.skip("no case with a direct server command in common.CASES")
    pager, run = run_case(case, spec, tmp_path)
    assert pager.handed and HEADER.match("\n".join(pager.handed[0].split("\n", 2)[:2])), pager.handed[:1]
    assert "read_more" not in " ".join(n for r in run.server.requests for n in model_responses.offered_tools(r))
    print(f"\ncodex direct {_case_id(case)}: {[len(h.encode()) for h in pager.handed]} bytes, {run.seconds:.1f}s")


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "raw-server":
    raw_server()
    sys.exit(0)
