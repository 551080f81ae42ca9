//! The shared store's plain types, which the boundary uses with or without the `redis`
//! feature (ids, how a lookup misses) and the client is set up with.

#[cfg(feature = "redis")]
use std::time::Duration;

use mcp_budget_core::wire::CursorFault;

/// Hex digits of a shared store's response ids: 96 random bits.
pub(crate) const ID_HEX: usize = 24;

/// How often a request computes its pages again after another replica wrote the same book.
pub(crate) const CAS_TRIES: usize = 5;

/// Why a lookup found no entry (without the `redis` feature only `Fault` occurs).
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Miss {
    /// No such response for this principal, or it was dropped.
    Fault(CursorFault),
    /// The store did not answer in time, or failed (the message says how; no secrets).
    Unavailable(String),
    /// Another replica wrote the page book first: read again.
    Conflict,
}

impl From<CursorFault> for Miss {
    fn from(f: CursorFault) -> Miss {
        Miss::Fault(f)
    }
}

/// Why the shared store cannot be used.
#[cfg(feature = "redis")]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RemoteError {
    /// The URL is not a Redis URL this build can use.
    #[error("bad store URL: {0}")]
    Url(String),
    /// Connecting, or a command, failed.
    #[error("redis: {0}")]
    Redis(String),
    /// No answer within the deadline.
    #[error("redis did not answer within {0:?}")]
    Timeout(Duration),
}

/// How a [`RemoteStore`] is set up.
#[cfg(feature = "redis")]
#[derive(Debug, Clone)]
pub(crate) struct RemoteConfig {
    /// `redis://[user:password@]host:port/db`, or `rediss://…` for TLS.
    pub(crate) url: String,
    /// PEM file of the CA(s) that sign the TLS server's certificate (`rediss://` only);
    /// `None`: the system's roots.
    pub(crate) ca_file: Option<std::path::PathBuf>,
    /// TTL of an entry from its last use.
    pub(crate) ttl: Duration,
    /// Deadline of one command.
    pub(crate) timeout: Duration,
    /// The largest compressed body written.
    pub(crate) max_entry_bytes: usize,
    /// Bound of the replica cache of parsed responses ([`cache`]), bytes; 0: none.
    pub(crate) cache_bytes: usize,
}
