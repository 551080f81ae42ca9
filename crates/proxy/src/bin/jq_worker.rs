//! The jq worker alone (`mcp_budget_proxy::jq::worker`), for the proxy crate's own tests; the
//! `mcp-budget` binary runs the same entry as its hidden subcommand `jq-worker`.

fn main() -> std::process::ExitCode {
    mcp_budget_proxy::jq::worker::main(std::env::args_os().skip(1))
}
