//! jq filters over `serde_json` values, by the jaq crates (jaq-core, jaq-std, jaq-json).
//!
//! Values cross into jaq as JSON text (so `serde_json`'s arbitrary-precision numbers keep
//! their spelling) and come back the same way. Used by `query_response` and the per-tool
//! `transform` rule.

use std::time::{Duration, Instant};

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;
use serde_json::Value;

/// At most this many outputs are collected from one filter run.
pub(crate) const MAX_OUTPUTS: usize = 100_000;

/// A filter run stops with an error once it has run this long (checked between outputs; a
/// single output that never comes cannot be interrupted).
pub(crate) const MAX_RUN_TIME: Duration = Duration::from_secs(10);

/// Why a filter did not give outputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JqError {
    /// The filter does not parse or names an undefined filter/variable.
    #[error("jq syntax error: {0}")]
    Syntax(String),
    /// The filter failed on this input.
    #[error("jq runtime error: {0}")]
    Runtime(String),
}

/// Checks that `code` is a valid filter.
pub(crate) fn check(code: &str) -> Result<(), JqError> {
    run_on_text(code, "null", true).map(|_| ())
}

/// Every output of `code` run on `input`, in order.
///
/// # Errors
/// [`JqError::Syntax`] or [`JqError::Runtime`], with jaq's message.
pub(crate) fn run(code: &str, input: &Value) -> Result<Vec<Value>, JqError> {
    let text = serde_json::to_string(input).map_err(|e| JqError::Runtime(e.to_string()))?;
    run_on_text(code, &text, false)
}

fn run_on_text(code: &str, input: &str, compile_only: bool) -> Result<Vec<Value>, JqError> {
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
    for out in filter.id.run((ctx, input)).map(unwrap_valr) {
        let val = out.map_err(|e| JqError::Runtime(e.to_string()))?;
        outs.push(to_value(&val));
        if outs.len() > MAX_OUTPUTS {
            return Err(JqError::Runtime(format!(
                "more than {MAX_OUTPUTS} outputs; narrow the query"
            )));
        }
        if started.elapsed() > MAX_RUN_TIME {
            return Err(JqError::Runtime(format!(
                "ran longer than {} s; narrow the query",
                MAX_RUN_TIME.as_secs()
            )));
        }
    }
    Ok(outs)
}

fn to_value(val: &Val) -> Value {
    let text = val.to_string();
    serde_json::from_str(&text).unwrap_or(Value::String(text))
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
}
