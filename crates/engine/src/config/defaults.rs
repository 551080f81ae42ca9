//! The built-in defaults of every setting that is not a per-tool rule, in one place: the
//! values the proxy uses when neither a flag, nor the environment, nor the TOML file sets
//! one. Plain data: this module imports no stage of the proxy (the stores and the jq pool
//! read their defaults from here).

use std::time::Duration;

/// The built-in cache bound: the cached responses hold at most 256 MiB of memory (parsed
/// trees by their heap estimate, compact texts by their bytes; the rest is spilled to files).
pub const DEFAULT_CACHE_BYTES: usize = 256 * 1024 * 1024;

/// The built-in time a cached response stays readable after its last use: one hour.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(3600);

/// The built-in age past which blob files are removed at startup: 24 hours.
pub const DEFAULT_BLOB_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// The built-in blob threshold: base64 payloads and `data:` URIs that decode to more than
/// 1024 bytes are written to a file ([`mcp_budget_core::blob::DEFAULT_BLOB_THRESHOLD_BYTES`]).
pub const DEFAULT_BLOB_THRESHOLD: usize = mcp_budget_core::blob::DEFAULT_BLOB_THRESHOLD_BYTES;

/// The built-in deadline of one `query_response` filter run: 10 s.
pub const DEFAULT_JQ_DEADLINE: Duration = Duration::from_secs(10);

/// The built-in number of jq worker processes that may be alive at once: 2.
pub const DEFAULT_JQ_WORKERS: usize = 2;

/// The built-in memory bound of one jq worker process: 1 GiB of address space (RLIMIT_AS).
pub const DEFAULT_JQ_MEMORY_BYTES: u64 = 1024 * 1024 * 1024;

/// The built-in deadline of one command of the shared store (and of connecting to it): 2 s.
pub const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_secs(2);

/// The built-in bound on one compressed response the shared store writes: 32 MiB (larger
/// ones stay in the memory of the replica that made them).
pub const DEFAULT_STORE_MAX_ENTRY_BYTES: usize = 32 << 20;

/// The built-in bound on the replica cache of parsed responses read from the shared store:
/// 64 MiB.
pub const DEFAULT_STORE_CACHE_BYTES: usize = 64 << 20;

/// Limits of `query_response` filter runs (see [`crate::config::Settings::jq_limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JqLimits {
    /// At most this many worker processes alive at once (at least 1).
    pub workers: usize,
    /// Address-space bound of one worker, in bytes (RLIMIT_AS).
    pub memory_bytes: u64,
    /// Wall-clock deadline of one run (the worker is killed then); also the longest wait
    /// for a free worker.
    pub deadline: Duration,
}

impl Default for JqLimits {
    /// [`DEFAULT_JQ_WORKERS`], [`DEFAULT_JQ_MEMORY_BYTES`], [`DEFAULT_JQ_DEADLINE`].
    fn default() -> JqLimits {
        JqLimits {
            workers: DEFAULT_JQ_WORKERS,
            memory_bytes: DEFAULT_JQ_MEMORY_BYTES,
            deadline: DEFAULT_JQ_DEADLINE,
        }
    }
}
