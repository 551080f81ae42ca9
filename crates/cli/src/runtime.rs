//! The tokio runtime of the subcommands that run async code (`proxy`, `serve`, `login`).

use anyhow::Context as _;

/// The async runtime that `proxy` (one server or `[servers]`), `serve` and `login` run on: two
/// worker threads named `mcp-budget`, I/O and timers enabled.
///
/// # Errors
/// The runtime cannot start (threads or the I/O driver cannot be created).
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("mcp-budget")
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
