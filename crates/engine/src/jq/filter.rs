//! The sanitized function set and one run of a filter (see the `jq` module docs): compiling
//! ([`compile`]), running on JSON text within the output bounds ([`run_filter`]), reading an
//! output back ([`to_value`]), and why a filter gave no outputs ([`JqError`]). A leaf of `jq`:
//! the in-process runner (`mod.rs`), the worker process (`worker`) and the worker pool
//! (`pool`) all use it and it imports none of them (issue 35).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data};
use jaq_json::Val;
use serde_json::Value;

/// At most this many outputs are collected from one filter run.
pub(crate) const MAX_OUTPUTS: usize = 100_000;

/// At most this many bytes of outputs (as compact JSON text) are collected from one filter
/// run: 256 MiB, the default bound on one line.
pub(crate) const MAX_OUTPUT_BYTES: usize = 256 * 1024 * 1024;

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
