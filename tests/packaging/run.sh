#!/usr/bin/env bash
# The packages, as users install them (issue 34): builds them (scripts/package.sh: the release
# binary, the wheel, the npm tarballs into target/package) and runs test_packages.py, which
# installs them into a fresh venv, through uvx and into a fresh npm prefix, offline, and makes a
# real proxied call through each entry point. Needs tests/e2e's venv (the MCP client,
# mcp-server-git, tiktoken); makes it when missing.
#   tests/packaging/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

"$root/scripts/package.sh"

e2e_cache="${E2E_CACHE:-$root/target/e2e-cache}"
if [ ! -x "$e2e_cache/venv/bin/python" ]; then
  echo "packaging: the e2e venv is missing: running tests/e2e/run.sh --collect-only to make it" >&2
  MCP_BUDGET_BIN="$root/target/release/mcp-budget" "$root/tests/e2e/run.sh" --collect-only -q >/dev/null
fi
export E2E_CACHE="$e2e_cache"
exec "$e2e_cache/venv/bin/python" "$here/test_packages.py"
