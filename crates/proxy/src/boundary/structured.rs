//! `structuredContent` next to its text twin.
//!
//! Rules (DESIGN.md: "never dropped when the tool declares an outputSchema; paged with its
//! text twin and stays valid against that schema"):
//! - **String twin**: an object one of whose members is a string equal to a `text` item's
//!   text (the filesystem server's `directory_tree`: `{"content": <the text>}` with outputSchema
//!   `{content: string}`). That member is set to what the twin text item carries in the
//!   emitted result (the compacted text, or page 1's body). It stays a string, so the schema
//!   still holds.
//! - **Value twin**: structuredContent value-equal to a JSON `text` item. Its floats are
//!   rounded like the text's (the caller does that). When the text fits it is kept whole. When the text is paged it follows page 1 ([`prefix`]): every array
//!   is cut to the elements page 1 shows, and members page 1 does not show are filled from the
//!   original (short values as they are, arrays empty, objects likewise reduced), so objects
//!   keep all their members and the types stay those of the original: valid against schemas
//!   that constrain types, required members and additional properties (not `minItems`).
//!   In summary mode, with no page 1, it is reduced the same way ([`minimal`]).
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
            // Read as text items are (Python's NaN and lone surrogates included).
            if mcp_budget_core::dialect::json_document(t).is_some_and(|v| &v == sc) {
                return Twin::Value { item };
            }
        }
    }
    Twin::None
}

/// How the twin text item went out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TwinFate {
    /// Whole (compacted): a value twin stays as it is.
    Whole,
    /// Paged: a value twin follows page 1.
    Paged,
    /// Replaced by the elision envelope: a value twin is reduced.
    Elided,
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
    fate: TwinFate,
    emitted: impl Fn(usize) -> String,
) -> Option<Value> {
    if has_schema == Some(false) && *twin != Twin::None {
        return None;
    }
    match twin {
        Twin::Str { key, item } => {
            if let Some(slot) = sc.get_mut(key.as_str()) {
                *slot = Value::String(emitted(*item));
            }
            Some(sc)
        }
        Twin::Value { item } => Some(match fate {
            TwinFate::Whole => sc,
            TwinFate::Elided => minimal(&sc),
            TwinFate::Paged => match mcp_budget_core::dialect::parse(emitted(*item).as_bytes()) {
                Ok(page) => prefix(&sc, Some(&page.value)),
                Err(_) => minimal(&sc),
            },
        }),
        Twin::None => Some(sc),
    }
}

/// Values whose compact JSON is at most this many bytes are "short": kept as they are when
/// filling members a page does not show (the same limit as the pager's skeleton).
const SHORT_BYTES: usize = 64;

/// `orig` cut to what `page` (a page 1 of it, rooted at `$`) shows: arrays keep the elements
/// the page shows (in part or whole), members the page does not show are [`minimal`].
pub(crate) fn prefix(orig: &Value, page: Option<&Value>) -> Value {
    match (orig, page) {
        (Value::Object(o), Some(Value::Object(p))) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    let v = match p.get(k) {
                        Some(pv) => prefix(v, Some(pv)),
                        None => minimal(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        (Value::Array(a), Some(Value::Array(p))) => Value::Array(
            a.iter()
                .zip(p.iter())
                .map(|(v, pv)| prefix(v, Some(pv)))
                .collect(),
        ),
        (Value::Object(_) | Value::Array(_), _) => minimal(orig),
        // Scalars (a string cut into pieces included) stay whole: cutting one could break a
        // pattern or format.
        _ => orig.clone(),
    }
}

/// `v` reduced: short values as they are, arrays empty, objects with every member reduced,
/// other scalars whole.
pub(crate) fn minimal(v: &Value) -> Value {
    let short = || {
        serde_json::to_string(v)
            .map(|s| s.len() <= SHORT_BYTES)
            .unwrap_or(false)
    };
    match v {
        Value::Array(_) if short() => v.clone(),
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), minimal(v))).collect()),
        _ => v.clone(),
    }
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
        let paged = TwinFate::Paged;
        assert_eq!(
            shape(sc.clone(), &twin, Some(false), paged, |_| "p".into()),
            None
        );
        assert_eq!(
            shape(sc.clone(), &twin, Some(true), paged, |_| "p".into()),
            Some(json!({"content":"p"}))
        );
        assert_eq!(
            shape(sc, &twin, None, paged, |_| "p".into()),
            Some(json!({"content":"p"}))
        );
        let other = json!({"x":1});
        assert_eq!(
            shape(other.clone(), &Twin::None, Some(false), paged, |_| {
                String::new()
            }),
            Some(other)
        );
    }

    #[test]
    fn value_twin_follows_page_one_and_keeps_every_member() {
        let orig = json!({"items": [
            {"id": 0, "name": "a", "tags": ["x", "y"]},
            {"id": 1, "name": "b", "tags": ["x"]},
            {"id": 2, "name": "c", "tags": []}
        ], "total": 3, "big": {"list": (100..140).collect::<Vec<u32>>()}});
        let page = json!({"items": [{"id": 0, "name": "a", "tags": ["x", "y"]}, {"id": 1}]});
        let twin = Twin::Value { item: 0 };
        let out = shape(orig.clone(), &twin, Some(true), TwinFate::Paged, |_| {
            page.to_string()
        })
        .unwrap();
        assert_eq!(
            out,
            json!({"items": [
            {"id": 0, "name": "a", "tags": ["x", "y"]},
            {"id": 1, "name": "b", "tags": ["x"]}
        ], "total": 3, "big": {"list": []}})
        );
        let whole = shape(orig.clone(), &twin, Some(true), TwinFate::Whole, |_| {
            String::new()
        });
        assert_eq!(whole, Some(orig.clone()));
        let elided = shape(orig, &twin, None, TwinFate::Elided, |_| String::new()).unwrap();
        assert_eq!(
            elided,
            json!({"items": [], "total": 3, "big": {"list": []}})
        );
    }
}
