//! Results that `serde_json` cannot read as a value, shaped anyway: the budget bounds every
//! result the proxy emits, so none may pass through unshaped for being odd.
//!
//! Two causes, two remedies, tried in order by [`recover`]:
//! 1. The JSON Python servers write ([`mcp_budget_core::dialect`]): a lone surrogate escape
//!    (`"\udcff"`, written for file names that are not UTF-8) becomes `\ufffd` (U+FFFD
//!    REPLACEMENT CHARACTER), logged on stderr; `NaN`, `Infinity` and `-Infinity` literals are
//!    read as numbers spelled so, and written back as they came. The result is then shaped as
//!    usual.
//! 2. Anything still unparseable (nesting deeper than `serde_json`'s 128 levels): a
//!    `tools/call` result becomes a CallToolResult whose one text item is the result's JSON
//!    text, byte for byte, which the shaper pages as plain text (and caches, so `read_more`
//!    reaches the rest). Its top-level `isError`, `resultType` and `_meta` are kept when they
//!    can be read. A `tools/list` result that cannot be read is left as it is (it carries no
//!    model-visible text).

use std::collections::BTreeMap;

use mcp_budget_core::dialect;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::log;

/// A result read by [`recover`].
#[derive(Debug)]
pub(crate) struct Recovered {
    /// The value to shape.
    pub(crate) value: Value,
    /// How many `NaN`, `Infinity`, `-Infinity` literals it holds, kept as numbers spelled so.
    pub(crate) literals: usize,
}

/// `result`'s JSON text (`raw`) as a value to shape, or `None` to pass it through unchanged.
/// `call`: whether it is the result of a `tools/call` (else `tools/list`).
pub(crate) fn recover(raw: &[u8], call: bool) -> Option<Recovered> {
    match dialect::parse(raw) {
        Ok(parsed) => {
            if parsed.surrogates > 0 {
                log::warn(format_args!(
                    "replaced {} lone surrogate escape(s) in a result with U+FFFD (\\ufffd)",
                    parsed.surrogates
                ));
            }
            if parsed.literals > 0 {
                log::debug(format_args!(
                    "a result holds {} NaN/Infinity literal(s): kept as they came",
                    parsed.literals
                ));
            }
            return Some(Recovered {
                value: parsed.value,
                literals: parsed.literals,
            });
        }
        Err(e) => log::debug(format_args!(
            "a result is unreadable even as Python-dialect JSON: {e}"
        )),
    }
    if !call {
        log::warn(format_args!(
            "passing a tools/list result through unshaped: it is not readable as a value"
        ));
        return None;
    }
    log::warn(format_args!(
        "a tools/call result is not readable as a value (e.g. nested deeper than 128 levels): paging its JSON text as plain text"
    ));
    Some(Recovered {
        value: as_text_result(raw),
        literals: 0,
    })
}

/// The CallToolResult carrying `raw` (a result's JSON text) as its one text item, with the
/// result's top-level `isError`, `resultType` and `_meta` when they can be read.
pub(crate) fn as_text_result(raw: &[u8]) -> Value {
    let text = String::from_utf8_lossy(raw).into_owned();
    let mut result = Map::new();
    result.insert(
        "content".to_owned(),
        json!([{"type": "text", "text": text}]),
    );
    if let Ok(members) = serde_json::from_slice::<BTreeMap<String, Box<RawValue>>>(raw) {
        for key in ["isError", "resultType", "_meta"] {
            if let Some(value) = members
                .get(key)
                .and_then(|v| serde_json::from_str::<Value>(v.get()).ok())
            {
                result.insert(key.to_owned(), value);
            }
        }
    }
    Value::Object(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_results_are_read_with_their_literals_and_surrogates() {
        let raw = br#"{"content":[{"type":"text","text":"report_\udcff.txt"}],"structuredContent":{"v":NaN}}"#;
        let got = recover(raw, true).unwrap_or_else(|| panic!("not recovered"));
        assert_eq!(got.literals, 1);
        assert_eq!(got.value["content"][0]["text"], "report_\u{fffd}.txt");
        assert_eq!(
            serde_json::to_string(&got.value["structuredContent"]).unwrap_or_default(),
            r#"{"v":NaN}"#
        );
    }

    #[test]
    fn a_too_deep_result_becomes_one_text_item_with_its_flags() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let raw = format!(
            r#"{{"content":[{{"type":"text","text":"x"}}],"structuredContent":{{"d":{deep}}},"isError":true,"resultType":"complete"}}"#
        );
        assert!(serde_json::from_str::<Value>(&raw).is_err());
        let result = recover(raw.as_bytes(), true)
            .map(|r| r.value)
            .unwrap_or_default();
        assert_eq!(result["content"][0]["type"], "text");
        assert_eq!(result["content"][0]["text"], raw.as_str());
        assert_eq!(result["isError"], true);
        assert_eq!(result["resultType"], "complete");
        assert!(recover(raw.as_bytes(), false).is_none());
    }
}
