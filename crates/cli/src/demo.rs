//! `mcp-budget demo` and the hidden `fixture-server`: PLACEHOLDER, being written.

use std::process::ExitCode;

/// Flags of `mcp-budget demo` (none).
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Flags of the hidden `mcp-budget fixture-server`.
#[derive(Debug, clap::Args)]
pub(crate) struct FixtureArgs {}

/// Runs `mcp-budget demo`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("not implemented yet")
}

/// Runs the fixture MCP server on stdin/stdout.
pub(crate) fn run_fixture(args: FixtureArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("not implemented yet")
}
