//! `query_response` runs its jq filter in a worker process (an empty environment, no files,
//! bounded memory and CPU): this server's own executable, started with [`JQ_WORKER_ARG`].

use std::ffi::OsStr;

use mcp_budget_engine::config::WorkerCommand;

/// The first argument that makes this program a jq worker: `--mcp-budget-jq-worker`.
///
/// Chosen so that no server's own command line collides with it; the worker's own flags
/// (`--memory-bytes N --cpu-secs N`) follow it.
pub const JQ_WORKER_ARG: &str = "--mcp-budget-jq-worker";

/// Runs the jq worker and exits the process when this program was started as one (its first
/// argument is [`JQ_WORKER_ARG`]); returns at once otherwise.
///
/// Call it first in `main`, before anything reads stdin or writes stdout: the layer's
/// `query_response` starts this same executable as its jq worker
/// ([`jq_worker_command`]). Without the call, `query_response` answers `query_failed` (the
/// worker never says hello) and everything else works.
///
/// The exit status is the worker's: 0 once its last record is written, 2 on bad arguments or
/// unreadable stdin, 3 when its limits could not be set.
pub fn run_jq_worker_if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(OsStr::new(JQ_WORKER_ARG)) {
        let status = mcp_budget_engine::jq::worker::run(args);
        std::process::exit(i32::from(status));
    }
}

/// The command the layer starts jq workers with: this running executable (on Linux
/// `/proc/self/exe`, which survives the file being replaced) with [`JQ_WORKER_ARG`].
/// The default of [`crate::Budget::new`].
pub fn jq_worker_command() -> WorkerCommand {
    WorkerCommand::new(WorkerCommand::current_exe().program, [JQ_WORKER_ARG])
}
