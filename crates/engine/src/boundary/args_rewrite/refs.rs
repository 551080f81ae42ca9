//! `response_refs = true`: an argument value `{"$response":"<response_id>","query":"<jq>"}`
//! is replaced by the cached response after the filter, before the call is forwarded.
//!
//! - A reference is an object whose `"$response"` member is a string and whose only other
//!   member, if any, is `"query"`, a string (absent: `.`, the whole response). It may sit at
//!   any depth of the arguments (`{"entities": {"$response": …}}`, or inside an array).
//! - The id is a `response_id` (a cursor `<id>.<n>` names its response too). The filter runs
//!   as `query_response` runs it ([`crate::jq`]: a worker process with the same limits), on
//!   the same input: the cached response's one document as JSON (a text as a JSON string), or
//!   an array of its documents; UUIDs the response showed shortened are whole again
//!   ([`super::uuids`]). One output replaces the reference; none or several, an array of them.
//! - What is cached is the shaped response: JSON as parsed (numbers as spelled upstream),
//!   base64 blobs already replaced by their file descriptions.
//! - A malformed, unknown or expired id, or a filter that fails, is a [`RefFault`]: the call
//!   is answered `isError` and not forwarded.

use serde_json::Value;

use super::super::state::Boundary;
use super::super::store::check_id;
use super::super::store::remote::Miss;
use mcp_budget_core::shape::model::REF_KEY;
use mcp_budget_core::wire::CursorFault;

/// Why a reference could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RefFault {
    /// Where the reference is in the arguments: `entities`, `items[2].body` (JSONPath-like,
    /// without `$.`).
    pub(crate) argument: String,
    /// `malformed`, `unknown`, `expired` (the id), or `query_failed`.
    pub(crate) reason: &'static str,
    /// What went wrong, for the model.
    pub(crate) message: String,
}

/// Whether `v` is a response reference (see the module docs).
fn is_ref(v: &Value) -> bool {
    let Some(o) = v.as_object() else {
        return false;
    };
    o.get(REF_KEY).is_some_and(Value::is_string)
        && o.iter()
            .all(|(k, x)| k == REF_KEY || (k == "query" && x.is_string()))
}

/// Replaces every reference in `arguments` in place. `Ok(true)` when there was one.
///
/// # Errors
/// The first reference that cannot be resolved.
pub(crate) fn resolve_all(b: &Boundary, arguments: &mut Value) -> Result<bool, RefFault> {
    let mut path = String::new();
    resolve_in(b, arguments, &mut path)
}

fn resolve_in(b: &Boundary, v: &mut Value, path: &mut String) -> Result<bool, RefFault> {
    if is_ref(v) {
        *v = resolve(b, v, path)?;
        return Ok(true);
    }
    let mut any = false;
    let len = path.len();
    match v {
        Value::Array(a) => {
            for (i, x) in a.iter_mut().enumerate() {
                path.push_str(&format!("[{i}]"));
                any |= resolve_in(b, x, path)?;
                path.truncate(len);
            }
        }
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                any |= resolve_in(b, x, path)?;
                path.truncate(len);
            }
        }
        _ => {}
    }
    Ok(any)
}

fn resolve(b: &Boundary, reference: &Value, path: &str) -> Result<Value, RefFault> {
    let fault = |reason: &'static str, message: String| RefFault {
        argument: path.to_owned(),
        reason,
        message,
    };
    let id = reference
        .get(REF_KEY)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim();
    let id = id.split_once('.').map_or(id, |(i, _)| i);
    let by_id = |f: CursorFault| {
        let (reason, message) = match f {
            CursorFault::Malformed => (
                "malformed",
                format!("{id:?} is not a response_id (12 hex digits, like \"3fa9c2e1b07d\")"),
            ),
            CursorFault::Unknown => (
                "unknown",
                format!("no cached response {id:?} in this proxy"),
            ),
            CursorFault::Expired => (
                "expired",
                format!(
                    "the cached response {id:?} was dropped (unused too long, or memory ran short)"
                ),
            ),
        };
        fault(reason, message)
    };
    check_id(id).map_err(by_id)?;
    let entry = b.store.get(&b.principal, id).map_err(|m| match m {
        Miss::Fault(f) => by_id(f),
        Miss::Unavailable(why) => fault(
            "expired",
            format!("the response store did not answer ({why}): try again shortly"),
        ),
        Miss::Conflict => by_id(CursorFault::Expired),
    })?;
    let query = reference
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or(".");
    let (input, query) = query_view(b, &entry.id, entry.query_input(), query);
    let text = serde_json::to_string(&input)
        .map_err(|e| fault("query_failed", format!("internal error: {e}")))?;
    drop(input);
    let mut outs =
        b.jq.run(&query, &text)
            .map_err(|e| fault("query_failed", e.to_string()))?;
    Ok(match outs.len() {
        1 => outs.pop().unwrap_or_default(),
        _ => Value::Array(outs),
    })
}

/// The input and filter a query on cached response `id` runs with: when that response's
/// UUIDs were shortened, its prefixes are expanded in both (`query_response` and references
/// see full UUIDs); otherwise both as they are.
pub(crate) fn query_view(b: &Boundary, id: &str, mut input: Value, query: &str) -> (Value, String) {
    match b.uuids.response_map(id) {
        Some(map) => {
            mcp_budget_core::shape::uuids::expand_with(&map, &mut input);
            let query = mcp_budget_core::shape::uuids::expand_str_with(&map, query)
                .unwrap_or_else(|| query.to_owned());
            (input, query)
        }
        None => (input, query.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_are_objects_with_a_string_id_and_at_most_a_string_query() {
        assert!(is_ref(&json!({"$response": "0123456789ab"})));
        assert!(is_ref(&json!({"$response": "0123456789ab", "query": ".a"})));
        assert!(!is_ref(&json!({"$response": 3})));
        assert!(!is_ref(&json!({"$response": "0123456789ab", "query": 1})));
        assert!(!is_ref(&json!({"$response": "0123456789ab", "other": "x"})));
        assert!(!is_ref(&json!(["$response"])));
    }
}
