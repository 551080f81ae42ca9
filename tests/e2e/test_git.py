"""mcp-server-git (Python) behind the proxy: git_log and git_diff on a 1,200-commit repository,
with the client speaking 2026-07-28 (server/discover) and the initialize handshake."""

import pytest

from harness import CACHE, assert_same, body_of, read_all, session, wire

pytestmark = pytest.mark.anyio
GIT = str(CACHE / "venv" / "bin" / "mcp-server-git")


async def _compare(data, tool, args, mode):
    server_args = ["--repository", str(data.repo)]
    async with session(GIT, server_args, proxy=False, mode=mode) as c:
        direct = wire(await c.call_tool(tool, args))
        assert not direct.get("isError"), body_of(direct)[:300]
    async with session(GIT, server_args, proxy=True, mode=mode) as c:
        version = c.protocol_version
        first = await c.call_tool(tool, args)
        pages = await read_all(c, first)
    assert_same(body_of(direct), pages)
    return direct, pages, version


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_git_log_of_1000_commits(data, report, mode):
    args = {"repo_path": str(data.repo), "max_count": 1_000}
    direct, pages, version = await _compare(data, "git_log", args, mode)
    assert body_of(direct).count("Commit: ") == 1_000
    assert len(pages) > 1
    # auto = server/discover first: mcp-server-git speaks the stateless 2026-07-28 protocol.
    assert version == ("2026-07-28" if mode == "auto" else "2025-11-25")
    report("git", f"git_log max_count=1000 ({version})", direct, pages)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_git_diff_across_1200_commits(data, report, mode):
    args = {"repo_path": str(data.repo), "target": "HEAD~1199"}
    direct, pages, version = await _compare(data, "git_diff", args, mode)
    assert version == ("2026-07-28" if mode == "auto" else "2025-11-25")
    assert "diff --git" in body_of(direct)[:100]
    assert len(pages) > 1
    report("git", f"git_diff HEAD~1199 ({version})", direct, pages)
