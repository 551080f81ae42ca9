//! rmcp's typed results ↔ the JSON the engine shapes.
//!
//! The engine works on wire JSON; rmcp hands typed values. Going to JSON loses nothing
//! (serde). Coming back, rmcp's model reads only the members it knows (a CallToolResult's
//! `content`, `structuredContent`, `isError`, `_meta`, `resultType`; each content block's own
//! members, `_meta` and `annotations`): so a shaped result goes back typed only when the typed
//! value serializes to exactly the shaped JSON, and otherwise as rmcp's
//! [`CustomResult`], the JSON as it is. Nothing the engine kept is dropped on the way out.

use rmcp::model::{CallToolResult, CustomResult, ListToolsResult, ServerResult};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::Error;

/// `value` as JSON.
///
/// # Errors
/// [`Error::Encode`] when serde cannot serialize it (a map with non-string keys; rmcp's
/// model has none).
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(Error::Encode)
}

/// The typed value that serializes back to exactly `json`, if rmcp's model holds all of it.
pub(crate) fn typed_exactly<T>(json: &Value) -> Option<T>
where
    T: DeserializeOwned + serde::Serialize,
{
    let typed = T::deserialize(json).ok()?;
    // Equal as JSON values: member order aside, every member and every number spelling
    // (arbitrary_precision) the same.
    (serde_json::to_value(&typed).ok()? == *json).then_some(typed)
}

/// A shaped `tools/call` result (wire JSON) as what the server answers.
pub(crate) fn call_result(json: Value) -> ServerResult {
    match typed_exactly::<CallToolResult>(&json) {
        Some(typed) => ServerResult::CallToolResult(typed),
        None => ServerResult::CustomResult(CustomResult(json)),
    }
}

/// A shaped `tools/list` result (wire JSON) as what the server answers.
pub(crate) fn list_result(json: Value) -> ServerResult {
    match typed_exactly::<ListToolsResult>(&json) {
        Some(typed) => ServerResult::ListToolsResult(typed),
        None => ServerResult::CustomResult(CustomResult(json)),
    }
}

/// Whether a JSON result (an inner server's [`CustomResult`] for `tools/call`) has the shape
/// of a CallToolResult the engine shapes: an object with a `content` array.
pub(crate) fn is_call_result(json: &Value) -> bool {
    json.get("content").is_some_and(Value::is_array)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_rmcp_holds_whole_goes_back_typed() {
        let json = json!({
            "content": [{"type": "text", "text": "hi", "_meta": {"k": 1}, "annotations": {"priority": 0.5}}],
            "structuredContent": {"a": [1, 2]},
            "isError": false,
            "_meta": {"mcp-budget/page": {"page": 0}, "x": "y"}
        });
        assert!(matches!(call_result(json), ServerResult::CallToolResult(_)));
    }

    #[test]
    fn unknown_members_keep_the_json_as_it_is() {
        let json = json!({
            "content": [{"type": "text", "text": "hi", "future": true}],
            "extra": {"kept": 1}
        });
        match call_result(json.clone()) {
            ServerResult::CustomResult(CustomResult(v)) => assert_eq!(v, json),
            other => panic!("expected the JSON as it is, got {other:?}"),
        }
    }

    #[test]
    fn not_a_call_result_is_kept_too() {
        let json = json!(["not", "an", "object"]);
        assert!(matches!(call_result(json), ServerResult::CustomResult(_)));
        assert!(!is_call_result(&json!({"content": "text"})));
        assert!(is_call_result(&json!({"content": []})));
    }
}
