//! jq filters over JSON values, by the jaq crates (jaq-core, jaq-std, jaq-json), with a
//! function set that cannot reach outside the value it is given.
//!
//! Values cross into jaq as JSON text (so arbitrary-precision numbers keep their spelling) and
//! come back the same way.
//!
//! - **The sanitized function set** ([`compile`]): jaq's standard library without anything
//!   that reaches outside the input value or the process: `env` and `$ENV`, `input`/`inputs`,
//!   `halt`/`halt_error` (jaq exits the process on a halt) fail with a message saying why;
//!   `debug` and `stderr` are kept as no-ops (they print nothing). `import`/`include` are refused when
//!   the filter is loaded (the loader reads no file), and so are data imports
//!   (`import "x" as $y`, which jaq would panic on). `$__loc__` and `$__prog_args` are
//!   undefined variables.
//! - **Where it runs**: `query_response` filters come from the model, so on unix they run in a
//!   worker process ([`worker`], spawned by [`Jq`] from the `pool` module): empty environment,
//!   no file access, memory and CPU bounded by rlimits, killed at the deadline, at most
//!   [`JqLimits::workers`] alive at once. The per-tool `transform` rule is trusted
//!   configuration and runs in-process ([`run_local`]) with the same sanitized function set.

mod filter;
#[cfg(unix)]
mod pool;
pub mod worker;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

use mcp_budget_core::shape::ports::{JqFailure, JqRunner};
use serde_json::Value;

pub(crate) use filter::{JqError, check, compile};
use filter::{run_filter, to_value};

pub use crate::config::{
    DEFAULT_JQ_DEADLINE as DEFAULT_DEADLINE, DEFAULT_JQ_MEMORY_BYTES as DEFAULT_MEMORY_BYTES,
    DEFAULT_JQ_WORKERS as DEFAULT_WORKERS, JqLimits,
};

/// While this many in-process runs given up on are still going, new in-process runs are
/// refused ([`JqError::Overloaded`]).
const MAX_ABANDONED: usize = 4;

/// In-process runs given up on (past their deadline) whose thread is still going.
static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// How `query_response` filters are run: in worker processes (unix), or in-process with the
/// sanitized function set and a deadline (elsewhere).
#[derive(Debug)]
pub(crate) struct Jq {
    #[cfg(unix)]
    pool: pool::Pool,
    #[cfg(not(unix))]
    deadline: Duration,
}

impl Jq {
    /// A runner whose workers are `command` (program and arguments; the worker's own flags
    /// are appended), under `limits`.
    pub(crate) fn new(command: &crate::config::WorkerCommand, limits: JqLimits) -> Jq {
        #[cfg(unix)]
        {
            Jq {
                pool: pool::Pool::new(command.clone(), limits),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = command;
            Jq {
                deadline: limits.deadline,
            }
        }
    }

    /// Every output of `code` run on `input` (JSON text), in order.
    ///
    /// Bounds: [`MAX_OUTPUTS`](filter::MAX_OUTPUTS) outputs,
    /// [`MAX_OUTPUT_BYTES`](filter::MAX_OUTPUT_BYTES) bytes of them, the deadline; on
    /// unix also the worker's memory and the cap on live workers.
    ///
    /// # Errors
    /// Every [`JqError`]; none of them is fatal to the proxy.
    pub(crate) fn run(&self, code: &str, input: &str) -> Result<Vec<Value>, JqError> {
        #[cfg(unix)]
        {
            self.pool.run(code, input)
        }
        #[cfg(not(unix))]
        {
            run_local_text(code, input.to_owned(), self.deadline, &ABANDONED)
        }
    }
}

impl JqRunner for Jq {
    fn run(&self, filter: &str, input: &str) -> Result<Vec<Value>, JqFailure> {
        Jq::run(self, filter, input).map_err(JqFailure::from)
    }
}

impl From<JqError> for JqFailure {
    fn from(e: JqError) -> JqFailure {
        JqFailure::new(e.to_string())
    }
}

/// A [`JqRunner`] that runs `query_response` filters in this process, on a thread of its own
/// given up on after `deadline` ([`run_local`]'s bounds: the sanitized function set, at most
/// [`MAX_ABANDONED`] runaway runs, output bounds), for a program that cannot start worker
/// processes. No memory bound: prefer [`worker_pool`] where processes can be started.
#[derive(Debug, Clone, Copy)]
pub struct InProcess {
    /// How long one filter may run (default [`DEFAULT_DEADLINE`]).
    pub deadline: Duration,
}

impl Default for InProcess {
    fn default() -> InProcess {
        InProcess {
            deadline: DEFAULT_DEADLINE,
        }
    }
}

impl JqRunner for InProcess {
    fn run(&self, filter: &str, input: &str) -> Result<Vec<Value>, JqFailure> {
        run_local_text(filter, input.to_owned(), self.deadline, &ABANDONED).map_err(JqFailure::from)
    }
}

/// The default [`JqRunner`]: worker processes started as `command` (on unix; in process with
/// `limits.deadline` elsewhere), under `limits` (memory, CPU, deadline, live workers). The
/// workers start when the first filter runs.
pub fn worker_pool(command: &crate::config::WorkerCommand, limits: JqLimits) -> Arc<dyn JqRunner> {
    Arc::new(Jq::new(command, limits))
}

/// Every output of `code` run on `input`, in process, on a thread of its own given up on after
/// `deadline`. For trusted filters (the `transform` rule): the sanitized function set keeps
/// them from reaching outside the value, but a filter that recurses too deeply or allocates
/// without bound hurts the process; `query_response` uses [`Jq`].
///
/// A run given up on is told to stop (checked between outputs); one that never yields an
/// output is abandoned, and while [`MAX_ABANDONED`] of those are still going new runs are
/// refused.
///
/// # Errors
/// [`JqError::Syntax`], [`JqError::Runtime`], [`JqError::TimedOut`],
/// [`JqError::Overloaded`].
pub(crate) fn run_local(
    code: &str,
    input: &Value,
    deadline: Duration,
) -> Result<Vec<Value>, JqError> {
    let text = serde_json::to_string(input).map_err(|e| JqError::Runtime(e.to_string()))?;
    run_local_text(code, text, deadline, &ABANDONED)
}

/// [`run_local`] on JSON text, counting abandoned runs in `abandoned` (a `'static`, as the
/// thread may outlive the call).
fn run_local_text(
    code: &str,
    input: String,
    deadline: Duration,
    abandoned: &'static AtomicUsize,
) -> Result<Vec<Value>, JqError> {
    let filter = compile(code)?;
    let still_going = abandoned.load(Ordering::Relaxed);
    if still_going >= MAX_ABANDONED {
        return Err(JqError::Overloaded(still_going));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let told = Arc::clone(&stop);
    let (tx, rx) = sync_channel(1);
    let started = Instant::now();
    std::thread::Builder::new()
        .name("mcp-budget-jq".to_owned())
        .spawn(move || {
            let mut outs = Vec::new();
            let result = run_filter(&filter, input.as_bytes(), &told, deadline, |text| {
                outs.push(to_value(text));
                Ok(())
            })
            .map(|()| outs);
            // Set by the caller when it gave up: this run was counted as abandoned.
            if told.swap(true, Ordering::AcqRel) {
                abandoned.fetch_sub(1, Ordering::Relaxed);
            }
            // The receiver is gone when the run was given up on.
            let _ = tx.send(result);
        })
        .map_err(|e| JqError::Internal(format!("cannot start the query: {e}")))?;
    match rx.recv_timeout(deadline) {
        Ok(result) => result,
        Err(RecvTimeoutError::Timeout) => {
            // Counted first, so that the thread's decrement never comes before it.
            abandoned.fetch_add(1, Ordering::Relaxed);
            if stop.swap(true, Ordering::AcqRel) {
                // It finished just now: its result is waiting.
                abandoned.fetch_sub(1, Ordering::Relaxed);
                if let Ok(result) = rx.recv() {
                    return result;
                }
            }
            Err(JqError::TimedOut(started.elapsed().min(deadline)))
        }
        Err(RecvTimeoutError::Disconnected) => Err(JqError::Internal(
            "the query's thread ended with no answer".to_owned(),
        )),
    }
}

#[cfg(test)]
mod tests;
