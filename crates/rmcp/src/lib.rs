//! `mcp-budget-rmcp`: keeps every tool result of an [rmcp] server inside a token budget.
//!
//! Wrap any `Service<RoleServer>` (a `ServerHandler`, rmcp's `Router`, another layer) with
//! [`Budget::wrap`], and serve the [`Budgeted`] service instead; the server's own code does
//! not change. The pipeline is the one `mcp-budget proxy` runs (DESIGN.md, "Wire contract of
//! the proxy"):
//!
//! - **Every `tools/call` result** is compacted (JSON text re-emitted without whitespace,
//!   floats rounded to 9 significant digits) and counted in real tokens (cl100k_base by
//!   default), as the model will see it: its `text` items, the text of embedded resources,
//!   and `structuredContent` when no text item carries it.
//! - **Within the budget** (10,000 tokens by default) it goes out with no meta item.
//! - **Over the budget** it goes out as page 1 (valid JSON, never cut mid-value) plus one meta
//!   item, the last content item:
//!   `{"truncated":true,"truncation_reason":"token_budget","response_id":"<12 hex>","next_cursor":"<id>.1","total_tokens":N,"hint":"…"}`;
//!   the page's machine-readable position rides in `result._meta["mcp-budget/page"]`. The
//!   full response is kept in memory (bounded: 256 MiB, an hour after its last use).
//! - **`read_more`** `{cursor, max_tokens?}` gives the next page; **`query_response`**
//!   `{response_id, query, max_tokens?}` runs a jq filter over the cached response. Both are
//!   added to `tools/list` and answered by the layer: the inner server is not called again.
//! - **Task-augmented calls**: the completed payload of `tasks/get` (a CallToolResult) is
//!   shaped the same way.
//! - **Everything else** (initialize, ping, resources, prompts, notifications, custom
//!   requests) reaches the inner service unchanged. `_meta` maps, annotations,
//!   `structuredContent` and members rmcp's model does not know are kept.
//!
//! The engine is `mcp_budget_engine::boundary::Boundary`, the same one `mcp-budget proxy`
//! drives, built without its `redis` feature: this crate brings no network stack of its own
//! (no hyper, axum, Redis or TLS) and no tokio beyond what rmcp already has. Pages live in
//! memory (spilled to files past the bound).
//!
//! `query_response` runs jq in a worker process (empty environment, no files, bounded memory
//! and CPU): by default this same executable, started with [`JQ_WORKER_ARG`]. A server's
//! `main` calls [`run_jq_worker_if_asked`] first; without it everything but
//! `query_response` works. [`Budget::jq`] takes another runner: [`InProcessJq`] (a thread
//! with a deadline, no process), or the server's own [`JqRunner`].
//!
//! ```no_run
//! use mcp_budget_rmcp::Budget;
//! use rmcp::{ServiceExt, tool, tool_router};
//!
//! #[derive(Clone)]
//! struct Orders;
//!
//! #[tool_router(server_handler)]
//! impl Orders {
//!     #[tool(description = "Every order, as a JSON array")]
//!     fn orders(&self) -> String {
//!         let rows: Vec<_> = (0..5_000).map(|i| serde_json::json!({"id": i, "qty": i % 7})).collect();
//!         serde_json::Value::from(rows).to_string()
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     mcp_budget_rmcp::run_jq_worker_if_asked();
//!     let server = Budget::new().max_tokens(5_000).wrap(Orders)?;
//!     server.serve(rmcp::transport::stdio()).await?.waiting().await?;
//!     Ok(())
//! }
//! ```
//!
//! [rmcp]: https://docs.rs/rmcp
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

mod budget;
mod convert;
mod error;
mod service;
mod tasks;
mod worker;

pub use budget::Budget;
pub use error::Error;
/// The port [`Budget::jq`] takes: what runs a `query_response` filter, and why it failed.
pub use mcp_budget_core::shape::ports::{JqFailure, JqRunner};
/// Every setting of the engine, for [`Budget::from_settings`].
pub use mcp_budget_engine::config::Settings;
/// Runs `query_response` filters in this process, on a thread bounded by a deadline
/// ([`Budget::jq`]).
pub use mcp_budget_engine::jq::InProcess as InProcessJq;
pub use service::Budgeted;
pub use worker::{JQ_WORKER_ARG, jq_worker_command, run_jq_worker_if_asked};
