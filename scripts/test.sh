#!/usr/bin/env bash
# The project's test command (README "Test"): unit, property, integration and end-to-end tests.
# Installs what the end-to-end tests need (pinned npm and PyPI packages) by itself.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every relative link and anchor in README.md and docs/**/*.md resolves (instant; the script
# checks itself on a deliberately broken tree first).
python3 scripts/check_links.py

# Property tests: 10,000 cases per property unless the caller asks for another number.
export PROPTEST_CASES="${PROPTEST_CASES:-10000}"

# Headless Chromium for the HTML report test (crates/cli/tests/report.rs). Installed from the
# distribution (apt-get update only when it is missing); once present, the test must run
# rather than skip.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test.sh: installing chromium (apt-get) for the report render test" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
if command -v chromium >/dev/null 2>&1; then
  export MCP_BUDGET_REQUIRE_CHROMIUM=1
else
  echo "test.sh: no chromium (not root or no apt-get): the report render test will skip" >&2
fi

# redis-server for the shared response store's tests (crates/proxy/tests/store_redis.rs,
# crates/cli/tests/proxy_redis.rs): each test starts its own on a free port and stops it.
if ! command -v redis-server >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test.sh: installing redis-server (apt-get) for the shared store tests" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends redis-server >/dev/null
fi
if command -v redis-server >/dev/null 2>&1; then
  export MCP_BUDGET_REQUIRE_REDIS=1
else
  echo "test.sh: no redis-server (not root or no apt-get): the shared store tests will skip" >&2
fi

# cargo-nextest runs every test in its own process, spread over the cores across test
# binaries (a slow property test no longer holds up the binaries after it), and prints each
# test's time. It does not run doctests: `cargo test --doc` does, reusing the same build.
# Without cargo-nextest, plain `cargo test` runs the same tests.
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --exclude mcp-budget-bench --no-fail-fast
  cargo test --doc --workspace --exclude mcp-budget-bench
else
  echo "test.sh: cargo-nextest not installed: running cargo test" >&2
  cargo test --workspace --exclude mcp-budget-bench
fi

if [ -x tests/e2e/run.sh ]; then
  tests/e2e/run.sh
fi

# The packages (issue 34): scripts/package.sh builds the release binary, the wheel and the npm
# tarballs into target/package; they are installed offline into a fresh venv, through uvx and
# into fresh npm prefixes, and one real proxied call goes through each entry point (reuses the
# e2e venv; docs/packaging.md).
if [ -x tests/packaging/run.sh ]; then
  # The release build needs ~2 GB of disk beside the debug one; a linker that runs out of disk
  # dies of SIGBUS, so say what is free, and give back the incremental caches when it is short.
  df -h target >&2 || true
  avail_kib="$(df -Pk target 2>/dev/null | awk 'NR == 2 { print $4 }' || true)"
  if [ -n "$avail_kib" ] && [ "$avail_kib" -lt $((5 * 1024 * 1024)) ]; then
    echo "test.sh: under 5 GiB free: removing target/*/incremental before the release build" >&2
    rm -rf target/debug/incremental target/release/incremental
  fi
  tests/packaging/run.sh
fi

# The official MCP conformance suite (pinned in tests/conformance/package-lock.json, Node 22
# from npm): every server scenario through serve's three faces, every client scenario with
# `proxy --upstream` (OAuth sign-in included) as the client under test (issue 32).
if [ -x tests/conformance/run.sh ]; then
  MCP_BUDGET_BIN="${MCP_BUDGET_BIN:-$PWD/target/debug/mcp-budget}" tests/conformance/run.sh
fi

# The real agent clients (Claude Code, Codex, Gemini CLI, OpenCode; pinned in
# tests/clients/package-lock.json) against scripted model servers on 127.0.0.1: what each
# client hands its model, checked (issue 31). Reuses the e2e installs and the debug binary.
if [ -x tests/clients/run.sh ]; then
  MCP_BUDGET_BIN="${MCP_BUDGET_BIN:-$PWD/target/debug/mcp-budget}" tests/clients/run.sh
fi
