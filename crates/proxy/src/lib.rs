//! `mcp-budget-proxy`: the stdio relay between an MCP client and any MCP server (issue 4).
// One audited exception: `malloc_trim` (boundary/store), which has no safe wrapper.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub mod boundary;
pub mod config;
pub mod jq;
pub mod logging;
pub mod metrics;
pub mod mux;
pub mod relay;
pub mod serve;
pub mod telemetry;
