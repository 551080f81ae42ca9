//! The `mcp-budget` binary: parses flags and wires the library crates together. No logic lives
//! here; each subcommand's module turns its flags into library objects and calls them.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod auth;
#[cfg(test)]
mod cli_docs;
mod demo;
mod measure;
mod proxy;
mod report;
mod runtime;
mod serve;
mod shape;
mod wrap;

/// Keep every MCP tool response inside a token budget without losing anything.
#[derive(Debug, Parser)]
#[command(name = "mcp-budget", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per run: the size of the proxy's flags does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Run an MCP server behind the budget proxy (stdio; a remote one with --upstream URL).
    Proxy(proxy::Args),
    /// Offer an MCP server over Streamable HTTP behind the budget proxy (a session per client).
    Serve(serve::ServeArgs),
    /// Measure what payloads cost in real tokens and what each compaction would save.
    Measure(measure::Args),
    /// Print page 1 (or every page) of a payload as the proxy would show it.
    Shape(shape::Args),
    /// Summarize telemetry logs (`proxy --log`): tokens saved per tool, outcomes, pages, times.
    Report(report::Args),
    /// Run the built-in fixture server through the proxy and show what it does.
    Demo(demo::Args),
    /// Sign in to a remote MCP server (OAuth) ahead of time; every proxy of it uses the sign-in.
    Login(auth::LoginArgs),
    /// Forget the sign-in to a remote MCP server.
    Logout(auth::LogoutArgs),
    /// Kept OAuth sign-ins (`auth status`).
    #[command(subcommand)]
    Auth(auth::AuthCommand),
    /// Route each stdio MCP server in a client's config through `mcp-budget proxy`.
    Wrap(wrap::WrapArgs),
    /// Undo `wrap`: give each wrapped server its own command line back.
    Unwrap(wrap::UnwrapArgs),
    /// The deterministic fixture MCP server used by tests and the demo (stdio).
    #[command(hide = true)]
    FixtureServer(demo::FixtureArgs),
    /// The proxy's jq worker: runs one query_response filter (stdin to stdout) and exits.
    #[command(hide = true)]
    JqWorker {
        /// The worker's own flags (`--memory-bytes N --cpu-secs N`), read by the worker.
        #[arg(num_args = 0.., trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::JqWorker { args } = cli.command {
        return mcp_budget_proxy::jq::worker::main(args);
    }
    let result = match cli.command {
        Command::Proxy(args) => proxy::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Measure(args) => measure::run(args),
        Command::Shape(args) => shape::run(args),
        Command::Report(args) => report::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Login(args) => auth::run_login(args),
        Command::Logout(args) => auth::run_logout(&args),
        Command::Auth(command) => auth::run_auth(&command),
        Command::Wrap(args) => wrap::run_wrap(args),
        Command::Unwrap(args) => wrap::run_unwrap(args),
        Command::FixtureServer(args) => demo::run_fixture(args),
        Command::JqWorker { .. } => Ok(ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe on stdout (e.g. `| head`) is not an error worth a message.
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            mcp_budget_proxy::logging::error(format_args!("{err:#}"));
            ExitCode::from(2)
        }
    }
}
