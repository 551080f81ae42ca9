//! Small results that shaping would give back as they came: plain text within the budget.
//!
//! Most `tools/call` results are a few lines of text (`echo`, a status, a short file). For
//! those the full path ([`super::call::shape_full`]) parses the result, renders each text as
//! itself, counts it, finds it fits, and writes the same result back; the relay then splices
//! the copy into the server's line. [`check`] tells such a result from its bytes alone, counts
//! it exactly as the full path would, and lets the relay forward the server's line byte for
//! byte (`mcp_budget_proxy::relay::Shaper::passes_unchanged`). The accounting (metrics, the call's log
//! line, telemetry) is the same as for a shaped result.
//!
//! A result qualifies when all of these hold (anything else takes the full path):
//! - it is an object whose members are `content` (an array), and optionally `isError` (a
//!   boolean or `null`), `_meta` and `resultType` (MCP 2026-07-28), each readable by
//!   `serde_json` as a value; no `structuredContent`, no other member, no member twice;
//! - every content item is an object, exactly `{"type": "text", "text": <string>}` (no
//!   annotations, no `_meta`), and no text is a JSON document (`dialect::json_document`, what
//!   the full path compacts and rounds) or a blob over the blob threshold
//!   (`BlobSink::is_blob`: base64 or a `data:` URI, offloaded);
//! - no banner, no `uuid_prefix` for the tool;
//! - the texts' tokens, each counted as the full path counts it, add up to at most the tool's
//!   budget (`max_tokens`).
//!
//! The tests below check, for every result `check` accepts (generated, and raw corner cases:
//! arrays for objects, bad escapes, deep nesting, escaped keys), that `serde_json` reads it and
//! the full path gives back the same result, outcome, bytes and tokens.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use mcp_budget_core::wire::Outcome;
use serde_json::Value;

use super::state::Boundary;
use mcp_budget_core::shape::model::Shaped;

/// A `CallToolResult` of text items only (see the module docs). `_meta` and `resultType` (MCP
/// 2026-07-28) are read as values: an escape or a nesting `serde_json` refuses sends the result
/// down the full path, which recovers it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainResult<'a> {
    #[serde(borrow)]
    content: Vec<&'a RawValue>,
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
    #[serde(rename = "_meta", default)]
    #[allow(dead_code)]
    meta: Option<serde_json::Value>,
    #[serde(rename = "resultType", default)]
    #[allow(dead_code)]
    result_type: Option<serde_json::Value>,
}

/// `{"type": "text", "text": …}` and nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainItem<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

/// `raw` parsed as `T` when it is a JSON object (serde's derived structs also read arrays).
fn object<'a, T: Deserialize<'a>>(raw: &'a str) -> Option<T> {
    raw.trim_start()
        .starts_with('{')
        .then(|| serde_json::from_str(raw).ok())
        .flatten()
}

/// Whether the result `raw` (its JSON bytes) of a call of `tool` goes out as it came: what the
/// full path would have accounted for it (outcome `Fit`, or `Error` for `"isError": true`;
/// the texts' bytes before and after alike; their tokens; the texts for telemetry when it is
/// on), with `result` left `Null` (the server's bytes go out instead). `None` when it must be
/// shaped. (The relay uses [`check_then_count`].)
#[cfg(test)]
pub(crate) fn check(b: &Boundary, tool: &str, raw: &[u8]) -> Option<Shaped> {
    check_then_count(b, tool, raw).map(|p| p.count(b))
}

/// A result that goes out as it came ([`check_then_count`]), whose tokens may be counted yet:
/// the relay sends the server's line first (see `mcp_budget_proxy::relay::Shaper::passes_unchanged`).
pub(crate) struct Passed {
    /// The texts, when their count was left for later (copies; `None` when they were counted,
    /// or when no one reads the count: [`Boundary::calls_observed`]).
    texts: Option<Vec<String>>,
    /// The tool's budget (tokens): each text is counted up to it, as the full path does.
    budget: usize,
    shaped: Shaped,
}

impl Passed {
    /// The accounting of the result, its tokens counted now if they were not yet.
    pub(crate) fn count(self, b: &Boundary) -> Shaped {
        let mut shaped = self.shaped;
        if let Some(texts) = self.texts {
            // (Texts of at most `budget` bytes in all: no count stops at the limit.)
            let budget = self.budget;
            shaped.tokens = texts
                .iter()
                .map(|t| b.encoding.count_till_limit(t, budget).unwrap_or(budget) as u64)
                .sum();
        }
        shaped
    }
}

/// [`check`], with the count of the texts left for later when it cannot change the verdict:
/// with an encoding of at most one token per byte ([`Encoding::bytes_bound_tokens`]), texts of
/// at most `max_tokens` bytes in all fit whatever their count (a result's tokens are then
/// counted after it has gone out, off the call's path).
///
/// [`Encoding::bytes_bound_tokens`]: mcp_budget_core::tokens::Encoding::bytes_bound_tokens
pub(crate) fn check_then_count(b: &Boundary, tool: &str, raw: &[u8]) -> Option<Passed> {
    if b.settings.banner.is_some() {
        return None;
    }
    let rule = b.settings.rule_for(tool);
    if rule.uuid_prefix {
        return None;
    }
    let result: PlainResult<'_> = object(std::str::from_utf8(raw).ok()?)?;
    let items: Vec<PlainItem<'_>> = result
        .content
        .iter()
        .map(|item| object(item.get()))
        .collect::<Option<_>>()?;
    // Not a JSON document (`parts::document_of` would compact it), not a blob to offload.
    let plain = |item: &PlainItem<'_>| {
        item.kind == "text"
            && mcp_budget_core::dialect::json_document(&item.text).is_none()
            && !b.blobs.is_blob(&item.text)
    };
    if !items.iter().all(plain) {
        return None;
    }
    let budget = rule.max_tokens.max(mcp_budget_core::MIN_BUDGET_TOKENS);
    // What the client hands its model must fit too ([`super::client_fit`]); when that cannot
    // be told without rendering, the full path decides.
    if !super::client_fit::plain_admitted(b, items.iter().map(|i| i.text.as_ref()), budget) {
        return None;
    }
    let bytes: usize = items.iter().map(|i| i.text.len()).sum();
    let later = b.encoding.bytes_bound_tokens() && bytes <= budget;
    let mut tokens = 0usize;
    if !later {
        for item in &items {
            // As `mcp_budget_core::shape::form::doc_form_till` counts a text document: up to the budget.
            tokens += b.encoding.count_till_limit(&item.text, budget)?;
        }
        if tokens > budget {
            return None;
        }
    }
    // Copies of the texts: to count them later (only when someone reads the count), and for
    // telemetry.
    let telemetry = b.telemetry.is_some();
    let count_later = later && b.calls_observed();
    let copies: Vec<String> = if count_later || telemetry {
        items.into_iter().map(|i| i.text.into_owned()).collect()
    } else {
        Vec::new()
    };
    let pre_texts = if telemetry {
        copies.iter().filter(|t| !t.is_empty()).cloned().collect()
    } else {
        Vec::new()
    };
    let texts = count_later.then_some(copies);
    Some(Passed {
        texts,
        budget,
        shaped: Shaped {
            result: Value::Null,
            outcome: if result.is_error == Some(true) {
                Outcome::Error
            } else {
                Outcome::Fit
            },
            response_id: None,
            bytes_pre: bytes as u64,
            bytes: bytes as u64,
            tokens: tokens as u64,
            pre_texts,
            image_tokens: 0,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use proptest::prelude::*;
    use serde_json::json;

    fn boundary(max_tokens: usize) -> Boundary {
        let settings = Settings {
            max_tokens: Some(max_tokens),
            blob_dir: Some(std::env::temp_dir().join("mcp-budget-plain-tests")),
            ..Settings::default()
        };
        match Boundary::new(settings) {
            Ok(b) => b,
            Err(e) => panic!("a boundary: {e}"),
        }
    }

    /// `check` and the old path agree on the result `raw`: when `check` accepts it, serde reads
    /// it, and shaping gives it back unchanged, with the same outcome, bytes and tokens, and
    /// keeps nothing (no response id).
    fn agree_raw(b: &Boundary, raw: &[u8]) -> Result<bool, TestCaseError> {
        let Some(passed) = check(b, "t", raw) else {
            return Ok(false);
        };
        let parsed = serde_json::from_slice::<Value>(raw);
        prop_assert!(
            parsed.is_ok(),
            "accepted what serde refuses: {:?}",
            String::from_utf8_lossy(raw)
        );
        let result = parsed.unwrap_or_default();
        let shaped = super::super::call::shape(b, "t", result.clone());
        prop_assert_eq!(&shaped.result, &result);
        prop_assert_eq!(shaped.outcome, passed.outcome);
        prop_assert_eq!(shaped.bytes, passed.bytes);
        prop_assert_eq!(shaped.bytes_pre, passed.bytes_pre);
        prop_assert_eq!(shaped.tokens, passed.tokens);
        prop_assert!(shaped.response_id.is_none());
        Ok(true)
    }

    fn agree(b: &Boundary, result: &Value) -> Result<bool, TestCaseError> {
        agree_raw(b, &serde_json::to_vec(result).unwrap_or_default())
    }

    fn text_item() -> impl Strategy<Value = Value> {
        prop_oneof![
            "[ a-zA-Z0-9.,:{}\\[\\]\"\n\t]{0,80}",
            " *[\\[{][a-z0-9\\[\\]{}\":,]{0,20}",
            "[0-9.e+-]{1,12}",
            "\\PC{0,30}",
            "[A-Za-z0-9+/]{1100,1400}",
            "[a-z ]{1100,1400}",
            (0usize..400).prop_map(|n| "word ".repeat(n)),
        ]
        .prop_map(|t| json!({"type": "text", "text": t}))
    }

    fn item() -> impl Strategy<Value = Value> {
        prop_oneof![
            6 => text_item(),
            1 => text_item().prop_map(|mut i| {
                i["annotations"] = json!({"priority": 1});
                i
            }),
            1 => Just(json!({"type": "image", "data": "AAAA", "mimeType": "image/png"})),
            1 => Just(json!({"type": "resource", "resource": {"uri": "file:///a", "text": "x"}})),
        ]
    }

    fn result() -> impl Strategy<Value = Value> {
        (
            prop::collection::vec(item(), 0..4),
            prop_oneof![Just(None), Just(Some(json!(true))), Just(Some(json!(false))), Just(Some(Value::Null))],
            prop_oneof![3 => Just(None), 1 => Just(Some("_meta")), 1 => Just(Some("structuredContent")), 1 => Just(Some("other"))],
        )
            .prop_map(|(content, is_error, extra)| {
                let mut r = json!({"content": content});
                if let Some(e) = is_error {
                    r["isError"] = e;
                }
                if let Some(k) = extra {
                    r[k] = json!({"k": [1.23456789012, "v"]});
                }
                r
            })
    }

    proptest! {
        #[test]
        fn what_passes_unchanged_is_what_the_full_path_gives_back(r in result(), budget in prop_oneof![Just(10_000usize), 256usize..400]) {
            let b = boundary(budget);
            agree(&b, &r)?;
        }
    }

    #[test]
    fn plain_text_passes_and_everything_else_is_shaped() {
        let b = boundary(10_000);
        let pass = |r: Value| agree(&b, &r).unwrap_or_else(|e| panic!("{e}"));
        assert!(pass(
            json!({"content": [{"type": "text", "text": "Echo: hi"}]})
        ));
        assert!(pass(
            json!({"content": [{"type": "text", "text": "no"}], "isError": true, "_meta": {"a": 1}})
        ));
        assert!(pass(json!({"content": []})));
        assert!(pass(
            json!({"content": [{"type": "text", "text": "a long line ".repeat(200)}]})
        ));
        // A blob over the threshold is offloaded: shaped.
        let bytes: Vec<u8> = (0..2000u32).map(|i| (i * 7919 % 251) as u8).collect();
        let blob = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bytes);
        assert!(!pass(json!({"content": [{"type": "text", "text": blob}]})));
        // JSON text, structuredContent, annotations, other items, other members: shaped.
        assert!(!pass(
            json!({"content": [{"type": "text", "text": " [1.234567891234]"}]})
        ));
        assert!(!pass(
            json!({"content": [{"type": "text", "text": "a"}], "structuredContent": {"a": 1}})
        ));
        assert!(!pass(
            json!({"content": [{"type": "text", "text": "a", "annotations": {}}]})
        ));
        assert!(!pass(
            json!({"content": [{"type": "image", "data": "AA", "mimeType": "image/png"}]})
        ));
        assert!(!pass(
            json!({"content": [{"type": "text", "text": "a"}], "extra": 1})
        ));
        // Over the budget: shaped.
        let small = boundary(16);
        let long = "word ".repeat(300);
        assert!(
            !agree(
                &small,
                &json!({"content": [{"type": "text", "text": long}]})
            )
            .unwrap_or(true)
        );
        // A member twice, a non-boolean isError: shaped (serde refuses them here).
        assert!(check(&b, "t", br#"{"content":[],"content":[]}"#).is_none());
        assert!(check(&b, "t", br#"{"content":[],"isError":"yes"}"#).is_none());
        // Python's JSON (NaN) or a lone surrogate, in a text or in `_meta`, and a `_meta` too
        // deep for serde: shaped (the full path recovers them).
        assert!(check(&b, "t", br#"{"content":[{"type":"text","text":"\ud800"}]}"#).is_none());
        let hi = r#"{"content":[{"type":"text","text":"hi"}]"#;
        for tail in [
            r#","_meta":{"p":"\udcff"}}"#.to_owned(),
            r#","_meta":{"p":NaN}}"#.to_owned(),
            format!(r#","_meta":{}{}}}"#, "[".repeat(200), "]".repeat(200)),
        ] {
            let raw = format!("{hi}{tail}");
            assert!(check(&b, "t", raw.as_bytes()).is_none(), "{raw}");
        }
        // Arrays in place of objects (serde's derived structs would read them): shaped.
        for raw in [
            r#"{"content":[["text","hi"]]}"#,
            r#"[[["text","hi"]]]"#,
            " [[]]",
        ] {
            assert!(check(&b, "t", raw.as_bytes()).is_none(), "{raw}");
        }
        // 2026-07-28's `resultType`, escaped keys, whitespace: as they came.
        for raw in [
            r#"{"content":[{"type":"text","text":"hi"}],"resultType":"complete"}"#,
            r#"{"cont\u0065nt":[{"typ\u0065":"text","text":"hi"}]}"#,
            " {\"content\" : [ { \"type\":\"text\", \"text\":\"hi\" } ] } ",
        ] {
            assert!(
                agree_raw(&b, raw.as_bytes()).unwrap_or_else(|e| panic!("{e}")),
                "{raw}"
            );
        }
    }
}
