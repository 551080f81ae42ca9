"""Fixtures of the end-to-end tests: generated data (a big directory tree, a 2 MB CRLF text, a
git repository of 1,200 commits) and the before/after report written at the end of the run."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import BIN, BUDGET, CACHE, NODE_BIN

REPORT: list[dict] = []


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


def pytest_sessionstart(session: pytest.Session) -> None:
    missing = [p for p in (BIN, NODE_BIN) if not p.exists()]
    if missing:
        raise pytest.UsageError(f"missing {missing}: run tests/e2e/run.sh (it installs and builds them)")


@pytest.fixture(scope="session")
def report():
    """`report(server, tool, direct_result, pages)` records the before/after figures."""
    from harness import meta_of, visible_tokens

    def add(server: str, tool: str, direct: dict, pages: list[dict], note: str = "") -> None:
        REPORT.append(
            {
                "server": server,
                "tool": tool,
                "tokens_direct": visible_tokens(direct),
                "tokens_page1": visible_tokens(pages[0]),
                # The proxy's own count of the whole compacted result (meta item), if paged:
                # exact on the last page (page 1 may carry only total_tokens_estimate).
                "tokens_compacted_proxy": (meta_of(pages[-1]) or {}).get("total_tokens"),
                "tokens_max_page": max(visible_tokens(p) for p in pages),
                "pages": len(pages),
                "read_more_calls": len(pages) - 1,
                "budget": BUDGET,
                "note": note,
            }
        )

    return add


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not REPORT:
        return
    out = CACHE / "report.json"
    out.write_text(json.dumps(REPORT, indent=1))
    tr = terminalreporter
    tr.section("tokens direct vs through mcp-budget proxy (cl100k_base, counted by tiktoken)")
    width = max(len(r["tool"]) for r in REPORT)
    tr.write_line(
        f"{'server':<11} {'tool':<{width}} {'direct':>8} {'compact':>8} {'page 1':>7} {'max page':>8} {'pages':>5}  note"
    )
    for r in REPORT:
        tr.write_line(
            f"{r['server']:<11} {r['tool']:<{width}} {r['tokens_direct']:>8} "
            f"{r['tokens_compacted_proxy'] or '':>8} {r['tokens_page1']:>7} "
            f"{r['tokens_max_page']:>8} {r['pages']:>5}  {r['note']}"
        )
    tr.write_line(f"(written to {out})")


@dataclass
class Data:
    root: Path
    tree: Path
    tree_entries: int
    text: Path
    repo: Path
    repo_commits: int


def make_tree(base: Path) -> int:
    """20 x 10 directories of 100 files each: 20,220 entries."""
    n = 0
    for a in range(20):
        da = base / f"area_{a:02}"
        da.mkdir(parents=True)
        n += 1
        for b in range(10):
            db = da / f"module_{b:02}"
            db.mkdir()
            n += 1
            for c in range(100):
                (db / f"file_{c:03}.txt").touch()
                n += 1
    return n


def make_text(path: Path) -> None:
    """About 2 MB of CRLF lines with one line of 150,000 bytes in the middle."""
    lines = []
    size = 0
    i = 0
    while size < 2_000_000:
        if i == 12_000:
            line = "LONG " + ("lorem ipsum dolor sit amet " * 6_000)[:150_000]
        else:
            line = f"{i:06} 2026-11-30T08:00:{i % 60:02}Z INFO request {i * 7919 % 100003} served in {i % 97} ms"
        lines.append(line)
        size += len(line) + 2
        i += 1
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())


def make_repo(path: Path, commits: int) -> None:
    """A repository of `commits` commits, each appending 5 lines to one of 50 files, by
    `git fast-import` (seconds instead of minutes)."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    contents = {f: [] for f in range(50)}
    chunks = []
    for i in range(commits):
        f = i % 50
        contents[f].extend(f"line {i}.{k}: value {(i * 31 + k) % 1009} of file {f}" for k in range(5))
        data = ("\n".join(contents[f]) + "\n").encode()
        msg = f"Change {i}: update file_{f:02}.txt\n\nCommit number {i} of the generated history.\n".encode()
        ts = 1_700_000_000 + i * 60
        chunks.append(b"commit refs/heads/main\n")
        chunks.append(f"mark :{i + 1}\n".encode())
        chunks.append(f"author Dev {i % 7} <dev{i % 7}@example.com> {ts} +0000\n".encode())
        chunks.append(f"committer Dev {i % 7} <dev{i % 7}@example.com> {ts} +0000\n".encode())
        chunks.append(f"data {len(msg)}\n".encode() + msg)
        if i:
            chunks.append(f"from :{i}\n".encode())
        chunks.append(f"M 100644 inline src/file_{f:02}.txt\n".encode())
        chunks.append(f"data {len(data)}\n".encode() + data + b"\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input=b"".join(chunks), check=True)
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=path, check=True)


@pytest.fixture(scope="session")
def data(tmp_path_factory) -> Data:
    root = tmp_path_factory.mktemp("e2e")
    tree = root / "tree"
    entries = make_tree(tree)
    text = root / "big.txt"
    make_text(text)
    repo = root / "repo"
    make_repo(repo, 1_200)
    return Data(root=root, tree=tree, tree_entries=entries, text=text, repo=repo, repo_commits=1_200)
