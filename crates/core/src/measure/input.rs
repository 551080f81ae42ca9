//! Recognizing what an input is: a `tools/call` or `tools/list` JSON-RPC result, another JSON
//! document, or text.

use serde_json::Value;

use super::error::MeasureError;

/// A piece of text measured as a unit, with its JSON value when it is JSON.
#[derive(Debug)]
pub(crate) struct Segment {
    /// The text as it came (a file, a `text` content item).
    pub(crate) raw: String,
    /// Its parsed value, when the text is JSON.
    pub(crate) value: Option<Value>,
}

/// A classified input.
#[derive(Debug)]
pub(crate) enum Input {
    /// A JSON document that is no recognized MCP result.
    Json { raw: String, value: Value },
    /// A `tools/call` result (in a JSON-RPC response, or bare).
    ToolsCall {
        /// The whole input without its trailing newline delimiter.
        line: String,
        /// `line` parsed.
        value: Value,
        /// The `text` content items, in order.
        items: Vec<Segment>,
    },
    /// A `tools/list` result (in a JSON-RPC response, or bare).
    ToolsList { line: String, value: Value },
    /// Not JSON.
    Text { raw: String },
}

/// Classifies `text`. When `expect_json` (a `.json` file), text that does not parse is an
/// error; otherwise it is measured as text.
///
/// # Errors
/// [`MeasureError::InvalidJson`] when `expect_json` and `text` is not one JSON value.
pub(crate) fn classify(text: &str, expect_json: bool) -> Result<Input, MeasureError> {
    // JSON as Python servers write it counts (`NaN`, lone surrogate escapes): crate::dialect.
    let value: Value = match crate::dialect::parse(text.as_bytes()).map(|p| p.value) {
        Ok(v) => v,
        Err(e) if expect_json => {
            return Err(MeasureError::InvalidJson {
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            });
        }
        Err(_) => {
            return Ok(Input::Text {
                raw: text.to_owned(),
            });
        }
    };
    let line = text.trim_end_matches(['\n', '\r']).to_owned();
    let result = result_of(&value);
    if is_tools_list(result) {
        return Ok(Input::ToolsList { line, value });
    }
    if let Some(items) = text_items(result) {
        return Ok(Input::ToolsCall { line, value, items });
    }
    Ok(Input::Json {
        raw: text.to_owned(),
        value,
    })
}

/// The `result` object inside a JSON-RPC response, or the value itself when bare.
pub(crate) fn result_of(value: &Value) -> &Value {
    match value.get("result") {
        Some(r @ Value::Object(_)) => r,
        _ => value,
    }
}

/// A `tools` array of objects that each have a `name`.
fn is_tools_list(result: &Value) -> bool {
    matches!(result.get("tools"), Some(Value::Array(t))
        if t.iter().all(|d| d.get("name").is_some_and(Value::is_string)))
}

/// The `text` items of a `content` array of typed objects, or `None` if `result` has none.
fn text_items(result: &Value) -> Option<Vec<Segment>> {
    let Some(Value::Array(content)) = result.get("content") else {
        return None;
    };
    if !content
        .iter()
        .all(|c| c.get("type").is_some_and(Value::is_string))
    {
        return None;
    }
    Some(
        content
            .iter()
            .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|c| c.get("text").and_then(Value::as_str))
            .map(|t| Segment {
                raw: t.to_owned(),
                value: crate::dialect::parse(t.as_bytes()).ok().map(|p| p.value),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_kinds() {
        let call = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"[1]"},{"type":"image","data":"x","mimeType":"image/png"}]}}"#;
        match classify(call, true).unwrap() {
            Input::ToolsCall { items, .. } => {
                assert_eq!(items.len(), 1);
                assert!(items[0].value.is_some());
            }
            other => panic!("{other:?}"),
        }
        let list = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{}}]}}"#;
        assert!(matches!(
            classify(list, true).unwrap(),
            Input::ToolsList { .. }
        ));
        assert!(matches!(
            classify(r#"{"tools":[1]}"#, true).unwrap(),
            Input::Json { .. }
        ));
        assert!(matches!(
            classify("hello", false).unwrap(),
            Input::Text { .. }
        ));
        assert!(matches!(
            classify("{\"a\":", true),
            Err(MeasureError::InvalidJson { line: 1, .. })
        ));
    }

    #[test]
    fn python_dialect_lines_and_texts_are_json() {
        let call = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"[{\"n\":\"a\\udcff\",\"v\":NaN}]"}],"structuredContent":{"v":NaN}}}"#;
        match classify(call, true) {
            Ok(Input::ToolsCall { items, .. }) => {
                let value = items[0].value.as_ref().unwrap_or(&Value::Null);
                assert_eq!(value[0]["n"], "a\u{fffd}");
                assert_eq!(value[0]["v"].as_number().map(|n| n.as_str()), Some("NaN"));
            }
            other => panic!("{other:?}"),
        }
    }
}
