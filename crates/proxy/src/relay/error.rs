//! Errors of the relay: only what stops it from starting or from waiting for the server.
//!
//! Bad input from either side is never an error here: the relay answers it on the wire or
//! logs it to stderr and goes on.
//!
//! The operating system's error is the [`std::error::Error::source`], not part of the message,
//! so a report that prints the chain (`{:#}` of anyhow) names it once.

/// Why the relay could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RelayError {
    /// The upstream server's command could not be started (not found, not executable …).
    #[error("cannot start the upstream server {program:?}")]
    Spawn {
        /// The command as given.
        program: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The upstream server's stdin or stdout could not be captured.
    #[error("cannot connect to the upstream server's stdin and stdout")]
    Pipes,
    /// Waiting for the upstream server to exit failed.
    #[error("cannot wait for the upstream server")]
    Wait(#[source] std::io::Error),
    /// The HTTP client for a remote upstream server could not be set up (TLS roots, …).
    #[error("cannot set up the HTTP client for the upstream server")]
    HttpClient(#[source] Box<dyn std::error::Error + Send + Sync>),
}
