//! `mcp-budget-engine`: what is done to every `tools/list` and `tools/call` result that crosses
//! an MCP boundary, and where the pages live. The stdio and HTTP proxy (`mcp-budget-proxy`)
//! and the layer for Rust servers (`mcp-budget-rmcp`) both drive it; it owns no transport.
//!
//! Synchronous: no async runtime and no network, except the shared Redis store behind the
//! `redis` feature (which runs a small tokio runtime of its own). Its I/O is local and
//! bounded: response pages spilled to files, blobs offloaded to files, jq filters run in
//! worker processes, the telemetry log.
//!
//! - [`boundary`]: the adapter that feeds a result through the pure stages of
//!   [`mcp_budget_core::shape`] and answers the injected tools (`read_more`, `query_response`).
//! - [`config`]: the settings and per-tool rules, plain data.
//! - [`jq`]: the jq runner (`query_response`, `transform`) and its worker process.
//! - [`telemetry`], [`metrics`], [`logging`]: what a call leaves behind (no payload content).
// One audited exception: `malloc_trim` (boundary/store), which has no safe wrapper.
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub mod boundary;
pub mod config;
pub mod jq;
pub mod logging;
pub mod metrics;
pub mod telemetry;
