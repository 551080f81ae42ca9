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

#[cfg(unix)]
mod pool;
pub mod worker;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data};
use jaq_json::Val;
use serde_json::Value;

/// At most this many outputs are collected from one filter run.
pub(crate) const MAX_OUTPUTS: usize = 100_000;

/// At most this many bytes of outputs (as compact JSON text) are collected from one filter
/// run: 256 MiB, the default bound on one line.
pub(crate) const MAX_OUTPUT_BYTES: usize = 256 * 1024 * 1024;

pub use crate::config::{
    DEFAULT_JQ_DEADLINE as DEFAULT_DEADLINE, DEFAULT_JQ_MEMORY_BYTES as DEFAULT_MEMORY_BYTES,
    DEFAULT_JQ_WORKERS as DEFAULT_WORKERS, JqLimits,
};

/// While this many in-process runs given up on are still going, new in-process runs are
/// refused ([`JqError::Overloaded`]).
const MAX_ABANDONED: usize = 4;

/// In-process runs given up on (past their deadline) whose thread is still going.
static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// Filters of jaq's libraries that are left out: they reach outside the input value (the
/// environment, further inputs, the process's exit, stderr). Native functions by name.
const REMOVED_FUNS: &[&str] = &[
    "env",
    "halt",
    "input",
    "inputs",
    "debug_empty",
    "stderr_empty",
];

/// Definitions (jq source) of jaq's standard library that are left out, by name; they are
/// replaced by [`REPLACEMENT_DEFS`].
const REMOVED_DEFS: &[&str] = &["debug", "stderr", "halt", "halt_error"];

/// What replaces the removed filters: `debug` and `stderr` pass their input on and print
/// nothing; the others fail with a message saying why.
const REPLACEMENT_DEFS: &str = r#"
def debug: .;
def debug(msgs): .;
def stderr: .;
def halt: error("halt is not available here: the query only reads the cached response");
def halt_error: halt;
def halt_error($exit_code): halt;
def env: error("env is not available here: the query sees only the cached response");
def input: error("input is not available here: the query sees only the cached response");
def inputs: input;
def input_filename: null;
"#;

/// Why a filter did not give outputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JqError {
    /// The filter does not parse, names an undefined filter/variable, or imports a module.
    #[error("jq syntax error: {0}")]
    Syntax(String),
    /// The filter failed on this input.
    #[error("jq runtime error: {0}")]
    Runtime(String),
    /// The filter ran longer than its deadline.
    #[error("the jq query took too long: stopped after {} s; narrow the query", secs(*.0))]
    TimedOut(Duration),
    /// Every worker stayed busy (other queries running) for the whole wait.
    #[error(
        "all {workers} jq workers stayed busy (other queries running) for {} s; try again later",
        secs(*waited)
    )]
    Busy {
        /// The cap on live workers.
        workers: usize,
        /// How long the query waited for one.
        waited: Duration,
    },
    /// Too many queries are already waiting or too many runaway runs are still going.
    #[error("{0} earlier jq queries are still waiting or running; try again later")]
    Overloaded(usize),
    /// The worker process running the filter died or was stopped (the reason in words).
    #[error("the jq query was stopped: {0}")]
    Stopped(String),
    /// Something went wrong around the filter (starting a worker, talking to it).
    #[error("internal error running the jq query: {0}")]
    Internal(String),
}

/// `d` in seconds as a person would write it: whole seconds, or one decimal below 10 s.
fn secs(d: Duration) -> String {
    if d >= Duration::from_secs(10) || d.subsec_millis() == 0 {
        format!("{}", d.as_secs())
    } else {
        format!("{:.1}", d.as_secs_f64())
    }
}

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
    /// Bounds: [`MAX_OUTPUTS`] outputs, [`MAX_OUTPUT_BYTES`] bytes of them, the deadline; on
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

/// A compiled filter of the sanitized function set.
pub(crate) type Filter = jaq_core::Filter<data::JustLut<Val>>;

/// Compiles `code` with the sanitized function set (see the module docs).
///
/// # Errors
/// [`JqError::Syntax`] when it does not parse, names an undefined filter or variable, or
/// includes or imports a module.
pub(crate) fn compile(code: &str) -> Result<Filter, JqError> {
    let replacements = jaq_core::load::parse(REPLACEMENT_DEFS, |p| p.defs()).unwrap_or_default();
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs())
        .filter(|d| !REMOVED_DEFS.contains(&d.name))
        .chain(replacements);
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs())
        .filter(|(name, _, _)| !REMOVED_FUNS.contains(name));
    // `Loader::new` reads no module: `include`/`import` of a module fail to load.
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let modules = loader
        .load(&arena, File { code, path: () })
        .map_err(|errs| JqError::Syntax(load_errors(code, errs)))?;
    // Data imports (`import "x" as $y`) are not read by the loader; jaq would panic on them.
    jaq_core::load::import(&modules, |imp| {
        Err(format!(
            "cannot import {:?}: no files are readable here",
            imp.path
        ))
    })
    .map_err(|errs| JqError::Syntax(load_errors(code, errs)))?;
    Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errs| {
            let msgs: Vec<String> = errs
                .into_iter()
                .flat_map(|(_, es)| es)
                .map(|(name, u)| format!("undefined {} {name}", u.as_str()))
                .collect();
            JqError::Syntax(msgs.join("; "))
        })
}

/// Checks that `code` is a valid filter of the sanitized function set.
///
/// # Errors
/// As [`compile`].
pub(crate) fn check(code: &str) -> Result<(), JqError> {
    compile(code).map(|_| ())
}

/// Runs `filter` on `input` (JSON text), handing each output's compact JSON text to `out`
/// until it returns an error or `stop` is set.
///
/// Bounds: [`MAX_OUTPUTS`] outputs and [`MAX_OUTPUT_BYTES`] bytes of them.
///
/// # Errors
/// [`JqError::Runtime`] with jaq's message, or the limits; whatever `out` returns;
/// [`JqError::TimedOut`] (with `deadline`) when `stop` was set.
pub(crate) fn run_filter(
    filter: &Filter,
    input: &[u8],
    stop: &AtomicBool,
    deadline: Duration,
    mut out: impl FnMut(String) -> Result<(), JqError>,
) -> Result<(), JqError> {
    let input = jaq_json::read::parse_single(input)
        .map_err(|e| JqError::Runtime(format!("input is not JSON: {e}")))?;
    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
    let mut count = 0usize;
    let mut bytes = 0usize;
    for result in filter.id.run((ctx, input)) {
        let val = result.map_err(|e| match e.get_err() {
            Ok(err) => JqError::Runtime(err.to_string()),
            // `halt` is not in the function set; should one ever come, it is no exit.
            Err(exn) => match exn.get_halt() {
                Ok(code) => JqError::Runtime(format!("halt({code}) is not available here")),
                Err(_) => JqError::Runtime("unexpected control flow".to_owned()),
            },
        })?;
        let text = val.to_string();
        bytes = bytes.saturating_add(text.len());
        count += 1;
        if bytes > MAX_OUTPUT_BYTES {
            return Err(JqError::Runtime(format!(
                "the outputs exceed {} MiB; narrow the query",
                MAX_OUTPUT_BYTES >> 20
            )));
        }
        if count > MAX_OUTPUTS {
            return Err(JqError::Runtime(format!(
                "more than {MAX_OUTPUTS} outputs; narrow the query"
            )));
        }
        out(text)?;
        if stop.load(Ordering::Relaxed) {
            return Err(JqError::TimedOut(deadline));
        }
    }
    Ok(())
}

/// An output's JSON text as a value (a text `serde_json` cannot read, e.g. nested deeper than
/// 128 levels, as a JSON string of it).
pub(crate) fn to_value(text: String) -> Value {
    // jaq writes `NaN`, `Infinity`, `-Infinity` for non-finite numbers, as the input's
    // literals were: read them back in that dialect; a text that is not JSON even so stays a
    // string.
    match mcp_budget_core::dialect::parse(text.as_bytes()) {
        Ok(parsed) => parsed.value,
        Err(_) => Value::String(text),
    }
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

fn load_errors(code: &str, errs: jaq_core::load::Errors<&str, ()>) -> String {
    use jaq_core::load::Error;
    let at = |rest: &str| {
        // `rest` is a suffix of `code` (jaq reports positions as the remaining input).
        let offset = code.len().saturating_sub(rest.len());
        let near: String = rest.chars().take(16).collect();
        if near.is_empty() {
            format!("at end (offset {offset})")
        } else {
            format!("at offset {offset} near {near:?}")
        }
    };
    let mut msgs = Vec::new();
    for (_, e) in errs {
        match e {
            Error::Io(es) => msgs.extend(es.into_iter().map(|(p, m)| format!("{p:?}: {m}"))),
            Error::Lex(es) => msgs.extend(
                es.into_iter()
                    .map(|(exp, rest)| format!("expected {} {}", exp.as_str(), at(rest))),
            ),
            Error::Parse(es) => msgs.extend(
                es.into_iter()
                    .map(|(exp, rest)| format!("expected {} {}", exp.as_str(), at(rest))),
            ),
        }
    }
    msgs.join("; ")
}

#[cfg(test)]
mod tests;
