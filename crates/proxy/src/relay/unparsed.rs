//! Results that `serde_json` cannot read as a value, shaped anyway: the budget bounds every
//! result the proxy emits, so none may pass through unshaped for being odd.
//!
//! Two causes, two remedies, tried in order by [`recover`]:
//! 1. A lone surrogate escape (`"\udcff"`: Python servers write them for file names that are
//!    not UTF-8; JSON allows the escape, `serde_json` refuses it). Each one is replaced by
//!    `\ufffd` (U+FFFD REPLACEMENT CHARACTER: same length, so nothing else moves) and the
//!    result is parsed again, then shaped as usual. The replacement is logged on stderr.
//! 2. Anything still unparseable (nesting deeper than `serde_json`'s 128 levels): a
//!    `tools/call` result becomes a CallToolResult whose one text item is the result's JSON
//!    text, byte for byte, which the shaper pages as plain text (and caches, so `read_more`
//!    reaches the rest). Its top-level `isError`, `resultType` and `_meta` are kept when they
//!    can be read. A `tools/list` result that cannot be read is left as it is (it carries no
//!    model-visible text).

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::log;

/// `result`'s JSON text (`raw`) as a value to shape, or `None` to pass it through unchanged.
/// `call`: whether it is the result of a `tools/call` (else `tools/list`).
pub(crate) fn recover(raw: &[u8], call: bool) -> Option<Value> {
    let mut repaired = raw.to_vec();
    let replaced = replace_lone_surrogates(&mut repaired);
    if replaced > 0 {
        match serde_json::from_slice::<Value>(&repaired) {
            Ok(value) => {
                log::warn(format_args!(
                    "replaced {replaced} lone surrogate escape(s) in a result with U+FFFD (\\ufffd)"
                ));
                return Some(value);
            }
            Err(e) => log::warn(format_args!(
                "a result with {replaced} lone surrogate escape(s) is still unreadable: {e}"
            )),
        }
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
    Some(as_text_result(raw))
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

/// Replaces, in JSON text, every `\uXXXX` escape of a surrogate (U+D800–U+DFFF) that is not
/// half of a high–low pair by `\ufffd`, in place; returns how many. The text keeps its
/// length. A backslash can only occur in a JSON string, so no string tracking is needed.
pub(crate) fn replace_lone_surrogates(text: &mut [u8]) -> usize {
    let hex4 = |b: &[u8], at: usize| -> Option<u32> {
        let digits = std::str::from_utf8(b.get(at..at + 4)?).ok()?;
        u32::from_str_radix(digits, 16).ok()
    };
    let mut replaced = 0;
    let mut i = 0;
    while let Some(found) = text.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        i += found;
        if text.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        let Some(unit) = hex4(text, i + 2) else {
            i += 2;
            continue;
        };
        let is_pair = (0xD800..=0xDBFF).contains(&unit)
            && text.get(i + 6..i + 8) == Some(b"\\u")
            && hex4(text, i + 8).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low));
        if is_pair {
            i += 12;
        } else {
            if (0xD800..=0xDFFF).contains(&unit) {
                text[i + 2..i + 6].copy_from_slice(b"fffd");
                replaced += 1;
            }
            i += 6;
        }
    }
    replaced
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text of escape-like bytes: no panic, same length, and a JSON string made of
        /// such escapes (lone surrogates included) is readable once repaired.
        #[test]
        fn repair_keeps_length_and_makes_escapes_readable(
            units in proptest::collection::vec(0xD700u32..0xE100, 0..12),
            noise in "[\\\\ud0-9a-f\"]{0,24}",
        ) {
            let mut b = noise.clone().into_bytes();
            replace_lone_surrogates(&mut b);
            prop_assert_eq!(b.len(), noise.len());
            let escapes: String = units.iter().map(|u| format!("\\u{u:04x}")).collect();
            let mut json = format!("\"{escapes}\"").into_bytes();
            replace_lone_surrogates(&mut json);
            prop_assert!(serde_json::from_slice::<Value>(&json).is_ok());
        }
    }

    fn fixed(s: &str) -> (String, usize) {
        let mut b = s.as_bytes().to_vec();
        let n = replace_lone_surrogates(&mut b);
        (String::from_utf8(b).unwrap_or_default(), n)
    }

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        assert_eq!(fixed(r#""\udcff.txt""#), (r#""\ufffd.txt""#.to_owned(), 1));
        assert_eq!(
            fixed(r#""\ud83d\ude00""#),
            (r#""\ud83d\ude00""#.to_owned(), 0)
        );
        assert_eq!(
            fixed(r#""\ud83d x \ude00""#),
            (r#""\ufffd x \ufffd""#.to_owned(), 2)
        );
        assert_eq!(
            fixed(r#""\ud83d\u0041""#),
            (r#""\ufffd\u0041""#.to_owned(), 1)
        );
        // An escaped backslash followed by `udcff` is text, not an escape.
        assert_eq!(fixed(r#""\\udcff""#), (r#""\\udcff""#.to_owned(), 0));
        assert_eq!(fixed(r#""\\\udcff""#), (r#""\\\ufffd""#.to_owned(), 1));
        // Cut short: nothing to read, nothing replaced, no panic.
        assert_eq!(fixed(r#""\ud8"#), (r#""\ud8"#.to_owned(), 0));
        assert_eq!(fixed("\\"), ("\\".to_owned(), 0));
        let (text, _) = fixed(r#"{"a":"\udcff\ud800"}"#);
        let value: Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(value["a"], "\u{fffd}\u{fffd}");
    }

    #[test]
    fn a_too_deep_result_becomes_one_text_item_with_its_flags() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let raw = format!(
            r#"{{"content":[{{"type":"text","text":"x"}}],"structuredContent":{{"d":{deep}}},"isError":true,"resultType":"complete"}}"#
        );
        assert!(serde_json::from_str::<Value>(&raw).is_err());
        let result = recover(raw.as_bytes(), true).unwrap_or_default();
        assert_eq!(result["content"][0]["type"], "text");
        assert_eq!(result["content"][0]["text"], raw.as_str());
        assert_eq!(result["isError"], true);
        assert_eq!(result["resultType"], "complete");
        assert!(recover(raw.as_bytes(), false).is_none());
    }
}
