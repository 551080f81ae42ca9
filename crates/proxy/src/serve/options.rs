//! What `mcp-budget serve` accepts ([`ServeOptions`], with its defaults) and why it cannot
//! run ([`ServeError`]). A leaf of `serve`: the handlers read it without importing `mod.rs`
//! (issue 35).

use std::time::Duration;

/// The default endpoint path: `/mcp`.
pub const DEFAULT_PATH: &str = "/mcp";
/// The default bound on one request body, in bytes: 4 MiB (a client's messages are requests,
/// tool arguments and answers to sampling or elicitation; 4 MiB holds a 3 MB image answer).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// The default time a session may go without a request before it ends: 30 minutes.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// The default bound on live upstream processes (sessions and stateless workers): 32.
pub const DEFAULT_MAX_SESSIONS: usize = 32;

/// What `serve` accepts and how long it keeps things.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The endpoint's path. Default [`DEFAULT_PATH`].
    pub path: String,
    /// When set, every request must carry `Authorization: Bearer <token>`. Default none.
    pub auth_token: Option<String>,
    /// Origins (`scheme://host[:port]`, exact) accepted besides localhost ones; `*` accepts
    /// any. Default none.
    pub allowed_origins: Vec<String>,
    /// The longest request body accepted, in bytes. Default [`DEFAULT_MAX_BODY_BYTES`].
    pub max_body_bytes: usize,
    /// How long a session (or stateless worker) may go without a request, with no request or
    /// stream open, before it ends. Default [`DEFAULT_SESSION_IDLE`].
    pub session_idle: Duration,
    /// The most upstream processes alive at once. Default [`DEFAULT_MAX_SESSIONS`].
    pub max_sessions: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            path: DEFAULT_PATH.to_owned(),
            auth_token: None,
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            session_idle: DEFAULT_SESSION_IDLE,
            max_sessions: DEFAULT_MAX_SESSIONS,
        }
    }
}

/// Why `serve` could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The HTTP server failed (accepting connections).
    #[error("the HTTP server failed: {0}")]
    Http(#[source] std::io::Error),
    /// The shaper of the token's principal could not be built.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}
