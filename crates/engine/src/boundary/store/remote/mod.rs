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
mod types;

#[cfg(feature = "redis")]
pub(crate) use client::{Put, RemoteStore, random_id};
#[cfg(feature = "redis")]
pub(crate) use types::RemoteConfig;
pub(crate) use types::{CAS_TRIES, ID_HEX, Miss};
