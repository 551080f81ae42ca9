//! `mcp-budget demo` and the hidden `fixture-server`.

use std::process::ExitCode;

/// Flags of `mcp-budget demo` (none).
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Flags of the hidden `mcp-budget fixture-server`.
#[derive(Debug, clap::Args)]
pub(crate) struct FixtureArgs {
    /// Protocol era: `2026-07-28` speaks the stateless draft (server/discover, `_meta`,
    /// `resultType`); anything else, or none, speaks initialize (2024-11-05 … 2025-11-25).
    #[arg(long)]
    protocol: Option<String>,
    /// Also list an upstream tool named `read_more`.
    #[arg(long)]
    collide_read_more: bool,
}

/// Runs `mcp-budget demo`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("not implemented yet")
}

/// Runs the fixture MCP server on stdin/stdout.
pub(crate) fn run_fixture(args: FixtureArgs) -> anyhow::Result<ExitCode> {
    use mcp_budget_fixture::{CRASH_EXIT_CODE, Ended, Options, Protocol, STATELESS_VERSION};
    let protocol = match args.protocol.as_deref() {
        Some(STATELESS_VERSION) => Protocol::Stateless,
        None | Some("handshake") => Protocol::Handshake,
        Some(other) => {
            anyhow::bail!("unknown --protocol {other:?}: expected {STATELESS_VERSION} or handshake")
        }
    };
    let options = Options {
        protocol,
        collide_read_more: args.collide_read_more,
    };
    let stdin = std::io::BufReader::new(std::io::stdin());
    let stdout = std::io::stdout().lock();
    match mcp_budget_fixture::serve(stdin, stdout, options)? {
        Ended::Eof => Ok(ExitCode::SUCCESS),
        Ended::Crashed => Ok(ExitCode::from(CRASH_EXIT_CODE)),
    }
}
