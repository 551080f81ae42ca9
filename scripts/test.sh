#!/usr/bin/env bash
# The project's test command (README "Set-up"): unit, property, integration and end-to-end tests.
# Installs what the end-to-end tests need (pinned npm and PyPI packages) by itself.
set -euo pipefail
cd "$(dirname "$0")/.."

# Property tests: 10,000 cases per property unless the caller asks for another number.
export PROPTEST_CASES="${PROPTEST_CASES:-10000}"

cargo test --workspace --exclude mcp-budget-bench

if [ -x tests/e2e/run.sh ]; then
  tests/e2e/run.sh
fi
