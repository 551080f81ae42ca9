#!/usr/bin/env bash
# End-to-end tests: real MCP servers (npm and PyPI, pinned here) behind `mcp-budget proxy`,
# driven by the Python MCP SDK's client. Installs everything it needs into target/e2e-cache
# (reused while the lock files are unchanged), builds the binary, runs pytest.
#   tests/e2e/run.sh [pytest args...]        e.g. tests/e2e/run.sh -k git
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${E2E_CACHE:-$root/target/e2e-cache}"
mkdir -p "$cache"
export E2E_CACHE="$cache"

# npm servers, exactly as package-lock.json pins them.
npm_stamp="$cache/npm/.installed-$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)"
if [ ! -e "$npm_stamp" ]; then
  echo "e2e: installing npm servers into $cache/npm" >&2
  rm -rf "$cache/npm"
  mkdir -p "$cache/npm"
  cp "$here/package.json" "$here/package-lock.json" "$cache/npm/"
  (cd "$cache/npm" && npm ci --no-audit --no-fund --loglevel=error)
  touch "$npm_stamp"
fi

# Python client, mcp-server-git and the token counter, as requirements.txt pins them.
py_stamp="$cache/venv/.installed-$(sha256sum < "$here/requirements.txt" | cut -c1-16)"
if [ ! -e "$py_stamp" ]; then
  echo "e2e: installing PyPI packages into $cache/venv" >&2
  rm -rf "$cache/venv"
  python3 -m venv "$cache/venv"
  "$cache/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  touch "$py_stamp"
fi

# The binary under test (debug build: what `cargo test` builds anyway).
if [ -z "${MCP_BUDGET_BIN:-}" ]; then
  (cd "$root" && cargo build --quiet -p mcp-budget)
  export MCP_BUDGET_BIN="$root/target/debug/mcp-budget"
fi

# The rmcp layer's example server (test_rmcp.py): built once, beside the binary.
if [ -z "${MCP_BUDGET_RMCP_EXAMPLE:-}" ]; then
  (cd "$root" && cargo build --quiet -p mcp-budget-rmcp --example paged_server)
  export MCP_BUDGET_RMCP_EXAMPLE="$root/target/debug/examples/paged_server"
fi

cd "$here"
exec "$cache/venv/bin/python" -m pytest -p no:cacheprovider -q "$@"
