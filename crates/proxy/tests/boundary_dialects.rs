//! Property (issue 8 §4, §5): a text item holding JSON as Python's `json.dumps` writes it —
//! `NaN`/`Infinity`/`-Infinity` literals, lone surrogate escapes (`\udcff`) — is paged as
//! JSON like any other: every page within the budget, every page JSON in the same dialect,
//! each literal written back as it came and each lone surrogate as U+FFFD, and the pages put
//! back together from the wire give the document back. A literal beside the content (in the
//! result's `_meta`) is kept as it came.

mod boundary_util;

use boundary_util::*;
use mcp_budget_core::dialect::{self, Literal};
use mcp_budget_core::paginate::reassemble_from_wire;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// Cases per property: `PROPTEST_CASES` (CI: 10,000), else 256. No cap: `proptest!` lets
/// `PROPTEST_CASES` override whatever count a test configures (each case pages a whole result,
/// ~40–100 s at 10,000 in CI).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// Values with literals; `§` in a string stands for a lone surrogate escape.
fn python_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![Literal::NaN, Literal::Infinity, Literal::NegInfinity])
            .prop_map(|l| Value::Number(l.number())),
        "[a-zA-Z0-9 _./§-]{0,60}".prop_map(Value::String),
        "(NaN|Infinity|report_§_[0-9]{1,4}\\.txt|[\"\\\\ é])".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 400, 40, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..40).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_§]{1,8}", inner, 0..12)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// `v` as the proxy reads it: each `§` of its strings and keys U+FFFD.
fn as_read(v: &Value) -> Value {
    let fix = |s: &str| s.replace('§', "\u{fffd}");
    match v {
        Value::String(s) => Value::String(fix(s)),
        Value::Array(items) => Value::Array(items.iter().map(as_read).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (fix(k), as_read(v))).collect()),
        other => other.clone(),
    }
}

/// `{"content":[{"type":"text","text":text}],"_meta":{"score":NaN}}`, built without
/// `serde_json::to_value` (which re-reads numbers strictly and refuses the literal).
fn result_of(text: String) -> Value {
    let mut item = Map::new();
    item.insert("type".into(), "text".into());
    item.insert("text".into(), Value::String(text));
    let mut meta = Map::new();
    meta.insert("score".into(), Value::Number(Literal::NaN.number()));
    let mut result = Map::new();
    result.insert("content".into(), Value::Array(vec![Value::Object(item)]));
    result.insert("_meta".into(), Value::Object(meta));
    Value::Object(result)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn python_json_in_a_text_item_pages_as_json_and_reassembles(
        value in python_value(),
        budget in 256usize..1500,
        pretty in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let b = boundary(budget, &dir);
        let text = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        // As Python writes it: each `§` a lone surrogate escape.
        let text = text.replace('§', "\\udcff");
        let first = b.shape_call_result("t", result_of(text.clone()), 0);
        // The server's `_meta` member keeps its literal; a paged result adds its position.
        let mut server_meta = first["_meta"].clone();
        if let Some(m) = server_meta.as_object_mut() {
            m.shift_remove("mcp-budget/page");
        }
        prop_assert_eq!(serde_json::to_string(&server_meta).unwrap(), r#"{"score":NaN}"#);
        // `follow` checks the budget of every page.
        let pages = follow(&b, first, budget);
        let expected = as_read(&value);
        if matches!(value, Value::Object(_) | Value::Array(_)) {
            let mut wire = Vec::new();
            for page in &pages {
                let body = texts(page)[0].clone();
                let parsed = dialect::parse(body.as_bytes());
                prop_assert!(parsed.is_ok(), "a page of a JSON document is not JSON: {}", body);
                let shown = meta(page).map(|m| m["shown"].as_str().unwrap_or("").to_owned());
                wire.push((parsed.map(|p| p.value).unwrap_or_default(), shown));
            }
            if pages.len() == 1 {
                // Read as JSON, hence written back compact (a text would come back as it was).
                let compact = mcp_budget_core::compact::to_string(&expected, 9);
                prop_assert_eq!(&texts(&pages[0])[0], &compact);
            }
            let w: Vec<(Value, Option<&str>)> =
                wire.iter().map(|(v, s)| (v.clone(), s.as_deref())).collect();
            prop_assert_eq!(reassemble_from_wire(&w), Some(expected));
        } else {
            // A scalar is paged as the text it is.
            let joined: String = pages.iter().map(|p| texts(p)[0].clone()).collect();
            prop_assert_eq!(joined, text);
        }
    }
}
