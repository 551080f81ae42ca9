//! `mcp-budget proxy --config servers.toml` with `[servers.<name>]` entries and neither
//! `-- <COMMAND>` nor `--upstream`: many servers behind one proxy (`mcp_budget_proxy::mux`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use mcp_budget_proxy::boundary::Boundary;
use mcp_budget_proxy::config::Settings;
use mcp_budget_proxy::mux::{self, Mux};
use mcp_budget_proxy::relay::RelayOptions;

/// Runs the multi-server proxy until the client leaves; `settings` has its config file
/// loaded, with a non-empty `[servers]`.
///
/// # Errors
/// A bad `[servers]` table, or a boundary or runtime that cannot start.
pub(crate) fn run(mut settings: Settings, options: RelayOptions) -> anyhow::Result<ExitCode> {
    let file = settings.file.as_mut().context("no config file")?;
    let servers = mux::servers_from_config(&file.servers, file.mux.separator(), &file.tools_list)?;
    let separator = file.mux.separator().to_owned();
    file.tools_list = mux::boundary_tools_list(&file.tools_list);
    let boundary = Arc::new(Boundary::new(settings)?);
    let proxy = Mux::new(servers, separator, Arc::clone(&boundary), options);
    // The stdio proxy serves no /metrics.
    mcp_budget_proxy::metrics::unread();
    let runtime = crate::runtime::runtime()?;
    runtime.block_on(proxy.run_stdio());
    runtime.shutdown_timeout(Duration::from_millis(100));
    boundary.flush_telemetry();
    boundary.remove_spill_files();
    Ok(ExitCode::SUCCESS)
}
