//! What can go wrong in this crate.

/// Why a [`crate::Budget`] could not be built, or why one result went out unshaped.
///
/// Only [`crate::Budget::wrap`] returns it to the caller. Inside a running server a shaping
/// failure never reaches the client: the original result is forwarded as the inner server
/// wrote it, and the error is logged (`tracing`, target `mcp_budget_rmcp`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The settings cannot be used: a config file that cannot be read or parsed, a
    /// `transform` that is not a jq filter, a telemetry log that cannot be opened, a shared
    /// store that cannot be reached.
    #[error("mcp-budget settings: {0}")]
    Settings(#[from] mcp_budget_engine::config::ConfigError),
    /// A result of the inner server could not be turned into JSON.
    #[error("cannot turn the result into JSON: {0}")]
    Encode(#[source] serde_json::Error),
    /// Shaping stopped before it gave a result: the engine panicked, or the runtime is
    /// shutting down (its blocking pool refused the work).
    #[error("shaping stopped: {0}")]
    Stopped(String),
}
