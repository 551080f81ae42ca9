//! `mcp-budget measure`: PLACEHOLDER, being written.

use std::process::ExitCode;

/// Flags of `mcp-budget measure`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Runs `mcp-budget measure`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("not implemented yet")
}
