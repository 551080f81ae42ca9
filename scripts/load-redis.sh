#!/usr/bin/env bash
# The shared store's load test at the issue's size: 4 `serve` replicas on one local
# redis-server x 50 concurrent sessions x 20 paged calls, then the same with the memory store.
# Localhost only; stops by itself (10 min bound). Prints read_more p50/p99 (Redis vs memory,
# as ratios) and each replica's RSS. MCP_BUDGET_LOAD=RxSxC sets another size.
set -euo pipefail
cd "$(dirname "$0")/.."
export MCP_BUDGET_LOAD="${MCP_BUDGET_LOAD:-4x50x20}"
exec cargo test -p mcp-budget --release --test it serve_redis_load:: -- --nocapture
