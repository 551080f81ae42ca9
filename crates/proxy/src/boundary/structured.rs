//! `structuredContent` next to its text twin.
//!
//! Rules (DESIGN.md: "never dropped when the tool declares an outputSchema; paged with its
//! text twin and stays valid against that schema"):
//! - **String twin**: an object one of whose members is a string equal to a `text` item's
//!   text (the filesystem server's `directory_tree`: `{"content": <the text>}` with outputSchema
//!   `{content: string}`). That member is set to what the twin text item carries in the
//!   emitted result (the compacted text, or page 1's body). It stays a string, so the schema
//!   still holds.
//! - **Value twin**: structuredContent value-equal to a JSON `text` item. It is kept whole and
//!   unchanged: a page of an object can miss properties the schema requires, and
//!   structuredContent is not model-visible text (it is not counted in the budget).
//! - No twin: kept whole and unchanged.
//! - A twin (either kind) is dropped only when the tool is known (from `tools/list`) to declare
//!   no outputSchema: it duplicates a text item, and clients then read the text. When the
//!   proxy has not seen the tool in `tools/list`, it is kept as above (a client that knows an
//!   outputSchema rejects a result without structuredContent).

use serde_json::Value;

/// How structuredContent relates to the text items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Twin {
    /// Not a twin of any text item.
    None,
    /// `structuredContent[key]` is the text of text item `item`.
    Str {
        /// The member.
        key: String,
        /// Index of the text item among the text items.
        item: usize,
    },
    /// structuredContent is value-equal to the JSON of text item `item`.
    Value {
        /// Index of the text item among the text items.
        item: usize,
    },
}

/// Finds the twin of `sc` among the original texts of the text items.
pub(crate) fn find_twin(sc: &Value, texts: &[String]) -> Twin {
    if let Value::Object(o) = sc {
        for (key, v) in o {
            if let Value::String(s) = v
                && let Some(item) = texts.iter().position(|t| t == s)
            {
                return Twin::Str {
                    key: key.clone(),
                    item,
                };
            }
        }
    }
    if matches!(sc, Value::Object(_) | Value::Array(_)) {
        for (item, t) in texts.iter().enumerate() {
            let trimmed = t.trim_start();
            if (trimmed.starts_with('{') || trimmed.starts_with('['))
                && serde_json::from_str::<Value>(t).is_ok_and(|v| &v == sc)
            {
                return Twin::Value { item };
            }
        }
    }
    Twin::None
}

/// The structuredContent to emit, or `None` to drop it.
///
/// `has_schema`: `Some(true/false)` when `tools/list` said whether the tool declares an
/// outputSchema, `None` when unknown. `emitted(item)`: the text that text item `item` carries
/// in the emitted result (empty when it is not on this page).
pub(crate) fn shape(
    mut sc: Value,
    twin: &Twin,
    has_schema: Option<bool>,
    emitted: impl Fn(usize) -> String,
) -> Option<Value> {
    if has_schema == Some(false) && *twin != Twin::None {
        return None;
    }
    if let Twin::Str { key, item } = twin
        && let Some(slot) = sc.get_mut(key.as_str())
    {
        *slot = Value::String(emitted(*item));
    }
    Some(sc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn twins_are_found() {
        let texts = vec!["hello".to_owned(), "{\"a\": 1}".to_owned()];
        assert_eq!(
            find_twin(&json!({"content":"hello"}), &texts),
            Twin::Str {
                key: "content".into(),
                item: 0
            }
        );
        assert_eq!(find_twin(&json!({"a":1}), &texts), Twin::Value { item: 1 });
        assert_eq!(find_twin(&json!({"a":2}), &texts), Twin::None);
    }

    #[test]
    fn twin_dropped_only_when_known_schemaless() {
        let twin = Twin::Str {
            key: "content".into(),
            item: 0,
        };
        let sc = json!({"content":"long"});
        assert_eq!(shape(sc.clone(), &twin, Some(false), |_| "p".into()), None);
        assert_eq!(
            shape(sc.clone(), &twin, Some(true), |_| "p".into()),
            Some(json!({"content":"p"}))
        );
        assert_eq!(
            shape(sc, &twin, None, |_| "p".into()),
            Some(json!({"content":"p"}))
        );
        let other = json!({"x":1});
        assert_eq!(
            shape(other.clone(), &Twin::None, Some(false), |_| String::new()),
            Some(other)
        );
    }
}
