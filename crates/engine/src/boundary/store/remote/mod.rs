//! The shared response store: cached responses in Redis, so that any replica answers any
//! cursor (`--store redis://host:port/db`, or `rediss://` for TLS: rustls on the ring
//! provider, trusting the system's roots, or only the CA file `--store-ca` when given).
//!
//! # What is stored
//!
//! One Redis hash per response, `mcp-budget:<principal key>:<id>`:
//!
//! - `body`: the shaped, untrimmed response, compressed ([`codec`]), written once;
//! - `book`: where each page computed so far starts ([`codec::encode_book`]), rewritten when a
//!   request computes new pages;
//! - `ver`: the book's version, raised by each rewrite.
//!
//! and a tombstone `mcp-budget:<principal key>:<id>:t` (`1`) that outlives the hash (twice
//! the TTL), so that a cursor of a response the TTL dropped is `expired`, and one that never
//! existed (or another principal's) `unknown`. The principal key is the first 32 hex digits of
//! the SHA-256 of the principal: session ids and tokens never appear in Redis.
//!
//! # Lifetimes and bounds
//!
//! Both keys get the store's TTL (the memory store's default, one hour) from their last use:
//! every read refreshes them (`PEXPIRE`). A body larger than `max_entry_bytes` compressed
//! ([`crate::config::DEFAULT_STORE_MAX_ENTRY_BYTES`], 32 MiB) is not written; such a response, one whose tree cannot
//! be read back from text, and one that could not be written (Redis down) is kept in this
//! process's memory store instead, where only this replica reads it (with a warning on
//! stderr).
//!
//! # Concurrency
//!
//! A request reads the book with the body, computes its pages on its own copy, then writes the
//! book back only if `ver` is still the one it read (a Lua compare-and-set). If another replica
//! wrote first, the request reads again and computes again (at most [`CAS_TRIES`] times): page
//! numbers handed out are never given to two different positions.
//!
//! # Faults
//!
//! Every command has a deadline (`timeout`, [`crate::config::DEFAULT_STORE_TIMEOUT`]); the connection manager
//! reconnects after Redis restarts. A cursor whose hash is gone (flushed, restarted without
//! persistence, evicted, expired) is `expired` or `unknown`; Redis unreachable makes
//! [`RemoteStore::open`] fail and later lookups answer [`Miss::Unavailable`].

#[cfg(feature = "redis")]
pub(crate) mod cache;
#[cfg(feature = "redis")]
mod client;
#[cfg(feature = "redis")]
pub(crate) mod codec;

#[cfg(feature = "redis")]
use std::time::Duration;

use mcp_budget_core::wire::CursorFault;

#[cfg(feature = "redis")]
pub(crate) use client::{Put, RemoteStore, random_id};

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
