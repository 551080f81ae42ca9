//! `mcp-budget-proxy`: the stdio relay between an MCP client and any MCP server (issue 4), the
//! Streamable HTTP client and server, and the multiplexer of several servers: how messages
//! move. What happens to a result, and where its pages live, is [`mcp_budget_engine`]'s
//! (re-exported here under its old paths).
#![deny(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub use mcp_budget_engine::{boundary, config, jq, logging, metrics, telemetry};
pub mod mux;
pub mod relay;
pub mod serve;
