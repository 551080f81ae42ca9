//! jq filters over `serde_json` values, by the jaq crates (jaq-core, jaq-std, jaq-json).
//!
//! Values cross into jaq as JSON text (so `serde_json`'s arbitrary-precision numbers keep
//! their spelling) and come back the same way. Used by `query_response` and the per-tool
//! `transform` rule.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;
use serde_json::Value;

/// At most this many outputs are collected from one filter run.
pub(crate) const MAX_OUTPUTS: usize = 100_000;

/// At most this many bytes of outputs (as compact JSON text) are collected from one filter
/// run: 256 MiB, the default bound on one line.
pub(crate) const MAX_OUTPUT_BYTES: usize = 256 * 1024 * 1024;

/// A filter run is given up on once it has run this long: [`run`] then returns
/// [`JqError::TimedOut`]. The filter runs on a thread of its own, which is told to stop (it
/// checks between outputs); one that never yields an output (`def f: f; f`) cannot be
/// interrupted and is abandoned: it burns a core until it ends or the process exits, and never
/// holds up anything else.
pub(crate) const MAX_RUN_TIME: Duration = Duration::from_secs(10);

/// While this many abandoned runs are still going, new runs are refused
/// ([`JqError::Overloaded`]), so a client cannot pile up runaway threads.
pub(crate) const MAX_ABANDONED: usize = 4;

/// Runs given up on (past [`MAX_RUN_TIME`]) whose thread is still going.
static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// The states of one run, shared by its thread and the caller waiting for it.
const RUNNING: u8 = 0;
const GIVEN_UP: u8 = 1;
const DONE: u8 = 2;

/// Why a filter did not give outputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JqError {
    /// The filter does not parse or names an undefined filter/variable.
    #[error("jq syntax error: {0}")]
    Syntax(String),
    /// The filter failed on this input.
    #[error("jq runtime error: {0}")]
    Runtime(String),
    /// The filter ran longer than its time limit (whole seconds).
    #[error("the jq query took too long: stopped after {0} s; narrow the query")]
    TimedOut(u64),
    /// Too many earlier runs that took too long are still going.
    #[error("{0} earlier jq queries that took too long are still running; try again later")]
    Overloaded(usize),
}

/// Checks that `code` is a valid filter.
pub(crate) fn check(code: &str) -> Result<(), JqError> {
    run_on_text(code, "null", true, &AtomicU8::new(RUNNING)).map(|_| ())
}

/// Every output of `code` run on `input`, in order, computed on a thread of its own and given
/// up on after [`MAX_RUN_TIME`].
///
/// Bounds: [`MAX_OUTPUTS`] outputs, [`MAX_OUTPUT_BYTES`] bytes of them, [`MAX_RUN_TIME`].
/// Not bounded: the memory jaq uses to build one output (`[range(1e9)]` grows one array until
/// the allocator fails, which aborts the process) and the stack of a deeply recursive filter;
/// jaq offers no limit for either.
///
/// # Errors
/// [`JqError::Syntax`] or [`JqError::Runtime`], with jaq's message; [`JqError::TimedOut`];
/// [`JqError::Overloaded`].
pub(crate) fn run(code: &str, input: &Value) -> Result<Vec<Value>, JqError> {
    run_with_deadline(code, input, MAX_RUN_TIME, &ABANDONED)
}

/// [`run`] given up on after `limit`, counting abandoned runs in `abandoned` (a `'static`, as
/// the thread may outlive the call).
fn run_with_deadline(
    code: &str,
    input: &Value,
    limit: Duration,
    abandoned: &'static AtomicUsize,
) -> Result<Vec<Value>, JqError> {
    let text = serde_json::to_string(input).map_err(|e| JqError::Runtime(e.to_string()))?;
    let still_going = abandoned.load(Ordering::Relaxed);
    if still_going >= MAX_ABANDONED {
        return Err(JqError::Overloaded(still_going));
    }
    let code = code.to_owned();
    let state = Arc::new(AtomicU8::new(RUNNING));
    let told = Arc::clone(&state);
    let (tx, rx) = sync_channel(1);
    std::thread::Builder::new()
        .name("mcp-budget-jq".to_owned())
        .spawn(move || {
            let result = run_on_text(&code, &text, false, &told);
            if told.swap(DONE, Ordering::AcqRel) == GIVEN_UP {
                abandoned.fetch_sub(1, Ordering::Relaxed);
            }
            // The receiver is gone when the run was given up on.
            let _ = tx.send(result);
        })
        .map_err(|e| JqError::Runtime(format!("cannot start the query: {e}")))?;
    match rx.recv_timeout(limit) {
        Ok(result) => result,
        Err(RecvTimeoutError::Timeout) => {
            match state.compare_exchange(RUNNING, GIVEN_UP, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    abandoned.fetch_add(1, Ordering::Relaxed);
                }
                // It finished just now: its result is waiting.
                Err(_) => {
                    if let Ok(result) = rx.recv() {
                        return result;
                    }
                }
            }
            Err(JqError::TimedOut(limit.as_secs().max(1)))
        }
        Err(RecvTimeoutError::Disconnected) => Err(JqError::Runtime(
            "the query failed (internal error)".to_owned(),
        )),
    }
}

fn run_on_text(
    code: &str,
    input: &str,
    compile_only: bool,
    state: &AtomicU8,
) -> Result<Vec<Value>, JqError> {
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let modules = loader
        .load(&arena, File { code, path: () })
        .map_err(|errs| JqError::Syntax(load_errors(code, errs)))?;
    let filter = Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errs| {
            let msgs: Vec<String> = errs
                .into_iter()
                .flat_map(|(_, es)| es)
                .map(|(name, u)| format!("undefined {} {name}", u.as_str()))
                .collect();
            JqError::Syntax(msgs.join("; "))
        })?;
    if compile_only {
        return Ok(Vec::new());
    }
    let input = jaq_json::read::parse_single(input.as_bytes())
        .map_err(|e| JqError::Runtime(format!("input is not JSON: {e}")))?;
    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
    let started = Instant::now();
    let mut outs = Vec::new();
    let mut bytes = 0usize;
    for out in filter.id.run((ctx, input)).map(unwrap_valr) {
        let val = out.map_err(|e| JqError::Runtime(e.to_string()))?;
        let text = val.to_string();
        bytes = bytes.saturating_add(text.len());
        if bytes > MAX_OUTPUT_BYTES {
            return Err(JqError::Runtime(format!(
                "the outputs exceed {} MiB; narrow the query",
                MAX_OUTPUT_BYTES >> 20
            )));
        }
        outs.push(to_value(text));
        if outs.len() > MAX_OUTPUTS {
            return Err(JqError::Runtime(format!(
                "more than {MAX_OUTPUTS} outputs; narrow the query"
            )));
        }
        if state.load(Ordering::Relaxed) == GIVEN_UP || started.elapsed() > MAX_RUN_TIME {
            return Err(JqError::TimedOut(MAX_RUN_TIME.as_secs()));
        }
    }
    Ok(outs)
}

/// One jq output (jaq writes `NaN`, `Infinity`, `-Infinity` for non-finite numbers, as the
/// input's literals were) as a value; a text that is not JSON even so stays a string.
fn to_value(text: String) -> Value {
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
            Error::Io(es) => msgs.extend(es.into_iter().map(|(p, m)| format!("{p}: {m}"))),
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
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outputs_in_order_and_numbers_keep_spelling() {
        let v: Value = serde_json::from_str(r#"{"a":[1, 2.50, 12345678901234567890123]}"#).unwrap();
        let out = run(".a[]", &v).unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(
            serde_json::to_string(&out[2]).unwrap(),
            "12345678901234567890123"
        );
        assert_eq!(
            run("del(.. | .x?)", &json!({"x":1,"y":{"x":2,"z":3}})).unwrap(),
            vec![json!({"y":{"z":3}})]
        );
        assert_eq!(
            run("[.[] | select(test(\"b\"))]", &json!(["ab", "cd"])).unwrap(),
            vec![json!(["ab"])]
        );
    }

    #[test]
    fn syntax_and_runtime_errors_are_reported() {
        let e = run(".a[", &json!({})).unwrap_err();
        assert!(matches!(e, JqError::Syntax(_)), "{e}");
        let e = run("nosuchfilter", &json!({})).unwrap_err();
        assert!(e.to_string().contains("nosuchfilter"), "{e}");
        let e = run(".a + 1", &json!({"a":"x"})).unwrap_err();
        assert!(matches!(e, JqError::Runtime(_)), "{e}");
        assert!(check(".[] | .name").is_ok());
    }

    #[test]
    fn runaway_query_times_out() {
        let started = Instant::now();
        static ABANDONED_HERE: AtomicUsize = AtomicUsize::new(0);
        let e = run_with_deadline(
            "def f: f; f",
            &json!({}),
            Duration::from_millis(300),
            &ABANDONED_HERE,
        )
        .unwrap_err();
        assert!(matches!(e, JqError::TimedOut(_)), "{e}");
        assert!(e.to_string().contains("too long"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
        // The abandoned thread does not hold up the next run.
        assert_eq!(run(".a", &json!({"a": 1})).unwrap(), vec![json!(1)]);
        assert_eq!(ABANDONED_HERE.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn runaway_queries_cannot_pile_up() {
        static ABANDONED_HERE: AtomicUsize = AtomicUsize::new(0);
        // A run that takes well over 1 ms, and then ends.
        let slow = "[range(2000000)] | length";
        let fast = Duration::from_millis(1);
        for _ in 0..MAX_ABANDONED {
            let e = run_with_deadline(slow, &json!(null), fast, &ABANDONED_HERE).unwrap_err();
            assert!(matches!(e, JqError::TimedOut(_)), "{e}");
        }
        let e = run_with_deadline(".", &json!(null), fast, &ABANDONED_HERE).unwrap_err();
        assert!(
            matches!(e, JqError::Overloaded(n) if n == MAX_ABANDONED),
            "{e}"
        );
        // The abandoned runs end, and are no longer counted.
        let started = Instant::now();
        while ABANDONED_HERE.load(Ordering::Relaxed) > 0 {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "abandoned runs never ended"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = run_with_deadline(".", &json!(1), MAX_RUN_TIME, &ABANDONED_HERE).unwrap();
        assert_eq!(out, vec![json!(1)]);
    }

    #[test]
    fn python_literals_come_out_as_numbers_not_strings() {
        let input = mcp_budget_core::dialect::parse(br#"{"a":[NaN,Infinity,-Infinity]}"#)
            .unwrap()
            .value;
        let out = run(".a", &input).unwrap();
        assert_eq!(out, vec![input["a"].clone()]);
        assert_eq!(
            serde_json::to_string(&out[0]).unwrap(),
            "[NaN,Infinity,-Infinity]"
        );
        let out = run(".a[0]", &input).unwrap();
        assert_eq!(serde_json::to_string(&out[0]).unwrap(), "NaN");
    }
}
