//! `mcp-budget shape`: PLACEHOLDER, being written.

use std::process::ExitCode;

/// Flags of `mcp-budget shape`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Runs `mcp-budget shape`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("not implemented yet")
}
