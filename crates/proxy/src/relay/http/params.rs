//! Tool parameters mirrored into `Mcp-Param-{Name}` headers (MCP 2026-07-28, Streamable HTTP,
//! "Custom Headers from Tool Parameters").
//!
//! A server marks a parameter of a tool's `inputSchema` with `"x-mcp-header": "<Name>"`; a
//! client on Streamable HTTP MUST then send the argument's value as `Mcp-Param-<Name>` with each
//! `tools/call` of that tool (Base64 sentinel when not plain ASCII), and MUST drop from
//! `tools/list` a tool whose annotations break the rules (empty or not an HTTP token, not
//! unique case-insensitively, on a parameter that is not `string`, `integer` or `boolean`, or
//! not reachable from the root through `properties` keys only).
//!
//! The transport learns the annotations from the `tools/list` results that pass through it.

use std::collections::HashMap;

use http::header::{HeaderName, HeaderValue};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::message::header_safe;

/// The schema keyword.
const KEYWORD: &str = "x-mcp-header";

/// The largest integer a JavaScript number holds exactly: 2^53 − 1.
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// One annotated parameter: its header and where its value is in the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ParamHeader {
    /// `Mcp-Param-<Name>`.
    header: HeaderName,
    /// The chain of `properties` keys from the root.
    path: Vec<String>,
}

/// What a `tools/list` result says: each tool's annotated parameters (an empty list for a tool
/// without any), and the tools to drop with why.
#[derive(Debug, Default)]
pub(super) struct Learned {
    pub(super) tools: HashMap<String, Vec<ParamHeader>>,
    pub(super) rejected: Vec<(String, String)>,
}

/// Reads the tools of a `tools/list` response (`result.tools`); `None` when it is not one.
pub(super) fn learn(message: &[u8]) -> Option<Learned> {
    #[derive(serde::Deserialize)]
    struct Response {
        result: ListResult,
    }
    #[derive(serde::Deserialize)]
    struct ListResult {
        tools: Vec<Value>,
    }
    let response: Response = serde_json::from_slice(message).ok()?;
    let mut learned = Learned::default();
    for tool in response.result.tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
        match annotations(schema) {
            Ok(params) => {
                learned.tools.insert(name.to_owned(), params);
            }
            Err(why) => learned.rejected.push((name.to_owned(), why)),
        }
    }
    Some(learned)
}

/// The annotated parameters of `schema`, or why its annotations are invalid.
fn annotations(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    walk_properties(schema, &mut Vec::new(), &mut found)?;
    let everywhere = count_keyword(schema, false);
    if everywhere > found.len() {
        return Err(format!(
            "an {KEYWORD} annotation is not reachable from the schema root through `properties` only"
        ));
    }
    let mut names: Vec<String> = Vec::new();
    let mut params = Vec::new();
    for (path, name, property) in found {
        let Some(name) = name
            .as_str()
            .filter(|n| !n.is_empty() && n.bytes().all(is_tchar))
        else {
            return Err(format!("{KEYWORD} {name} is not an HTTP field-name token"));
        };
        let lower = name.to_ascii_lowercase();
        if names.contains(&lower) {
            return Err(format!("{KEYWORD} {name:?} is given twice"));
        }
        names.push(lower);
        let kind = property.get("type").and_then(Value::as_str);
        if !matches!(kind, Some("string" | "integer" | "boolean")) {
            return Err(format!(
                "{KEYWORD} {name:?} is on a parameter whose type is not string, integer or boolean"
            ));
        }
        let header = HeaderName::from_bytes(format!("mcp-param-{name}").as_bytes())
            .map_err(|_| format!("{KEYWORD} {name:?} makes no valid header name"))?;
        params.push(ParamHeader { header, path });
    }
    Ok(params)
}

/// Finds the annotations reachable through `properties` keys: (path, value, property schema).
fn walk_properties<'s>(
    schema: &'s Value,
    path: &mut Vec<String>,
    found: &mut Vec<(Vec<String>, &'s Value, &'s Map<String, Value>)>,
) -> Result<(), String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (key, property) in properties {
        let Some(object) = property.as_object() else {
            continue;
        };
        path.push(key.clone());
        if let Some(name) = object.get(KEYWORD) {
            found.push((path.clone(), name, object));
        }
        walk_properties(property, path, found)?;
        path.pop();
    }
    Ok(())
}

/// How many times the keyword appears as a schema keyword anywhere in `value` (the keys of a
/// `properties` object are parameter names, not keywords).
fn count_keyword(value: &Value, keys_are_names: bool) -> usize {
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(key, v)| {
                let here = usize::from(!keys_are_names && key == KEYWORD);
                here + count_keyword(v, !keys_are_names && key == "properties")
            })
            .sum(),
        Value::Array(items) => items.iter().map(|v| count_keyword(v, false)).sum(),
        _ => 0,
    }
}

/// RFC 9110 §5.6.2 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The headers of a `tools/call` with `arguments` for a tool with `params`: one for each
/// parameter that has a value (strings by [`header_safe`], integers in the safe range in
/// decimal, booleans as `true`/`false`; other values are left out).
pub(super) fn headers_for(
    params: &[ParamHeader],
    arguments: &RawValue,
) -> Vec<(HeaderName, HeaderValue)> {
    let Ok(arguments) = serde_json::from_str::<Value>(arguments.get()) else {
        return Vec::new();
    };
    params
        .iter()
        .filter_map(|p| {
            let mut value = &arguments;
            for key in &p.path {
                value = value.get(key)?;
            }
            let text = match value {
                Value::String(s) => header_safe(s),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => {
                    let i = n.as_i64()?;
                    if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) {
                        return None;
                    }
                    i.to_string()
                }
                _ => return None,
            };
            Some((p.header.clone(), HeaderValue::from_str(&text).ok()?))
        })
        .collect()
}

/// `message` (a `tools/list` response) without the tools named in `rejected`; `None` when it
/// cannot be rewritten.
pub(super) fn without_tools(message: &[u8], rejected: &[(String, String)]) -> Option<Vec<u8>> {
    let mut value: Value = serde_json::from_slice(message).ok()?;
    let tools = value.get_mut("result")?.get_mut("tools")?.as_array_mut()?;
    tools.retain(|tool| {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        !rejected.iter().any(|(r, _)| r == name)
    });
    serde_json::to_vec(&value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(tools: Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({"jsonrpc":"2.0","id":1,"result":{"tools":tools}}))
            .unwrap_or_default()
    }

    fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).expect("raw")
    }

    #[test]
    fn the_spec_s_example_gives_its_header() {
        let message = list(serde_json::json!([{
            "name": "execute_sql",
            "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "query": {"type": "string"},
                "opts": {"type": "object", "properties": {
                    "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
                    "n": {"type": "integer", "x-mcp-header": "N"}
                }}
            }}
        }]));
        let learned = learn(&message).expect("a tools/list");
        assert!(learned.rejected.is_empty());
        let params = &learned.tools["execute_sql"];
        let args = raw(
            serde_json::json!({"region": "us-west1", "query": "SELECT 1",
            "opts": {"dry": true, "n": 9_007_199_254_740_992_i64}}),
        );
        let headers = headers_for(params, &args);
        let shown: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("?").to_owned()))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("mcp-param-region".to_owned(), "us-west1".to_owned()),
                ("mcp-param-dry-run".to_owned(), "true".to_owned()),
            ],
            "an integer past 2^53-1 is left out"
        );
        let args = raw(serde_json::json!({"region": "Hello, 世界"}));
        assert_eq!(
            headers_for(params, &args)[0].1,
            HeaderValue::from_static("=?base64?SGVsbG8sIOS4lueVjA==?=")
        );
    }

    #[test]
    fn invalid_annotations_reject_their_tool_only() {
        let bad = |schema: Value| {
            let message = list(serde_json::json!([
                {"name": "bad", "inputSchema": schema},
                {"name": "good", "inputSchema": {"type": "object"}}
            ]));
            let learned = learn(&message).expect("a tools/list");
            assert!(learned.tools.contains_key("good"));
            assert_eq!(learned.rejected.len(), 1, "{learned:?}");
            let rewritten = without_tools(&message, &learned.rejected).expect("rewritten");
            let v: Value = serde_json::from_slice(&rewritten).expect("JSON");
            assert_eq!(v["result"]["tools"].as_array().map(Vec::len), Some(1));
        };
        bad(serde_json::json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}));
        bad(serde_json::json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}));
        bad(serde_json::json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}));
        bad(serde_json::json!({"properties": {
            "a": {"type": "string", "x-mcp-header": "A"},
            "b": {"type": "string", "x-mcp-header": "a"}}}));
        bad(serde_json::json!({"properties": {"a": {"type": "array",
            "items": {"type": "string", "x-mcp-header": "A"}}}}));
        bad(
            serde_json::json!({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
        );
    }

    #[test]
    fn a_parameter_named_like_the_keyword_is_no_annotation() {
        let message = list(serde_json::json!([{"name": "t", "inputSchema": {
            "properties": {"x-mcp-header": {"type": "string"}}}}]));
        let learned = learn(&message).expect("a tools/list");
        assert!(learned.rejected.is_empty());
        assert!(learned.tools["t"].is_empty());
    }
}
