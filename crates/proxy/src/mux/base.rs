//! What every part of the multi-server proxy shares: one upstream server ([`MuxServer`]), the
//! restart and list limits, and the one line on stderr. A leaf of `mux`: it imports none of
//! its siblings, so `mod.rs`, `hub`, `client` and `server` all read it and none of them has
//! to import `mod.rs` (issue 35).

use std::time::Duration;

use crate::config::ToolsList;
use crate::relay::Upstream;

/// The first wait before a crashed server is started again: 500 ms.
pub const BACKOFF_MIN: Duration = Duration::from_millis(500);
/// The longest wait between restarts: 30 s.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Uptime after which a server's next crash waits [`BACKOFF_MIN`] again: 60 s.
pub const STABLE_AFTER: Duration = Duration::from_secs(60);
/// Most pages of one list fetched from one server.
pub const LIST_PAGES: usize = 100;
/// How long a server's `initialize` (and each list page the proxy fetches) may take: 10 s.
pub const DEFAULT_INIT_TIMEOUT: Duration = Duration::from_secs(10);

/// One upstream server of the multi-server proxy.
#[derive(Debug, Clone)]
pub struct MuxServer {
    /// Its name: the prefix of its tools and prompts.
    pub name: String,
    /// How to reach it.
    pub upstream: Upstream,
    /// Its `[tools_list]` allow/deny and compaction (its own or the global one), on its own
    /// tool names.
    pub tools_list: ToolsList,
}

/// One line on stderr.
pub(super) fn warn(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "mcp-budget: {args}");
}
