//! The relay's diagnostics, on stderr (stdout is the protocol channel).
//!
//! A line starts with `mcp-budget: `. Warnings are always written; debug lines only when the
//! environment variable `MCP_BUDGET_DEBUG` is set (to anything). Payloads are never logged in
//! full: [`preview`] shows the first bytes of a line.

use std::fmt;
use std::io::Write;
use std::sync::OnceLock;

/// Writes a warning to stderr.
pub(crate) fn warn(args: fmt::Arguments<'_>) {
    // A failed write to stderr has nowhere else to go.
    let _ = writeln!(std::io::stderr().lock(), "mcp-budget: {args}");
}

/// Writes a debug line to stderr when `MCP_BUDGET_DEBUG` is set.
pub(crate) fn debug(args: fmt::Arguments<'_>) {
    static ON: OnceLock<bool> = OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os("MCP_BUDGET_DEBUG").is_some()) {
        let _ = writeln!(std::io::stderr().lock(), "mcp-budget: debug: {args}");
    }
}

/// The first bytes of a line (at most 120), lossily decoded, for a log message.
pub(crate) fn preview(line: &[u8]) -> String {
    const MAX: usize = 120;
    let head = String::from_utf8_lossy(&line[..line.len().min(MAX)]);
    if line.len() > MAX {
        format!("{head}… ({} bytes)", line.len())
    } else {
        head.into_owned()
    }
}
