//! `mcp-budget proxy`: PLACEHOLDER, being written.

use std::process::ExitCode;

/// Flags of `mcp-budget proxy`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Runs `mcp-budget proxy`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("not implemented yet")
}
