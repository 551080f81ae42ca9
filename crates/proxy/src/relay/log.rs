//! The relay's diagnostics, on stderr (stdout is the protocol channel).
//!
//! A line starts with `mcp-budget: `. Warnings are always written; debug lines only when the
//! environment variable `MCP_BUDGET_DEBUG` is set (to anything). Payloads are never logged in
//! full: [`preview`] shows the first bytes of a line.

use std::fmt;

/// Writes a warning to stderr (through [`crate::logging`]).
pub(crate) fn warn(args: fmt::Arguments<'_>) {
    crate::logging::warn(args);
}

/// Writes a debug line to stderr when `MCP_BUDGET_DEBUG` is set.
pub(crate) fn debug(args: fmt::Arguments<'_>) {
    crate::logging::debug(args);
}

/// Whether [`debug`] writes anything: the arguments of a debug line on the hot path are
/// computed only then.
pub(crate) fn debug_on() -> bool {
    crate::logging::debug_on()
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
