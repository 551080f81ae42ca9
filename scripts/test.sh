#!/usr/bin/env bash
# The project's test command (README "Set-up"): unit, property, integration and end-to-end tests.
# Installs what the end-to-end tests need (pinned npm and PyPI packages) by itself.
set -euo pipefail
cd "$(dirname "$0")/.."

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

cargo test --workspace --exclude mcp-budget-bench

if [ -x tests/e2e/run.sh ]; then
  tests/e2e/run.sh
fi
