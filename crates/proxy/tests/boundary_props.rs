//! Properties of the boundary over generated results: every emitted result stays within the
//! budget, and following the cursors gives back everything.

mod boundary_util;

use boundary_util::*;
use mcp_budget_core::paginate::reassemble_from_wire;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Cases per property: `PROPTEST_CASES` (CI: 10,000), else 256. No cap: `proptest!` lets
/// `PROPTEST_CASES` override whatever count a test configures (each case pages a whole result,
/// ~40–100 s at 10,000 in CI).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// The full location of a paged result, from `_meta["mcp-budget/page"]` (what a client merges
/// by); `None` for a result that was not paged. Checks that it agrees with the meta item.
fn location(result: &Value) -> Option<String> {
    let pm = result["_meta"].get("mcp-budget/page");
    assert_eq!(pm.is_some(), meta(result).is_some(), "{result}");
    let pm = pm?;
    assert_eq!(pm["next_cursor"], meta(result)?["next_cursor"]);
    Some(pm["location"].as_str().expect("a location").to_owned())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        6 => Just(Value::Null),
        6 => any::<bool>().prop_map(Value::Bool),
        6 => any::<i64>().prop_map(|i| json!(i)),
        6 => "[a-zA-Z0-9 _./-]{0,80}".prop_map(Value::String),
        6 => "[é東🚀\"\\\\\n a-z]{0,20}".prop_map(Value::String),
        // Numbers too long for a small page: cut into pieces.
        1 => "[1-9][0-9]{100,2500}".prop_map(|d| Value::Number(d.parse().unwrap())),
    ];
    // Keys too long for a small page: cut into pieces too.
    let key = prop_oneof![12 => "[a-z_]{1,10}", 1 => "[a-z é東]{60,3000}"];
    leaf.prop_recursive(4, 400, 40, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..40).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..12)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Up to 60 lines of up to 120 chars: at budgets of 256..1200 tokens an item still spans
/// several pages and lines still get cut; more lines only add pages of the same kind (and cost
/// at 10,000 cases).
fn text_item() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z é東\t]{0,120}(\r\n|\n)?", 0..60).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn json_pages_stay_in_budget_and_reassemble_losslessly(
        value in json_value(),
        budget in 256usize..900,
        pretty in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let b = boundary(budget, &dir);
        let text = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        let first = b.shape_call_result("t", json!({"content": [{"type": "text", "text": text}]}), 0);
        let pages = follow(&b, first, budget);
        let wire: Vec<(Value, Option<String>)> = pages
            .iter()
            .map(|p| {
                let t = texts(p);
                let body: Value = match serde_json::from_str(&t[0]) {
                    Ok(v) => v,
                    // A scalar or a text that is not an object/array stays text.
                    Err(_) => Value::String(t[0].clone()),
                };
                (body, location(p))
            })
            .collect();
        if matches!(value, Value::Object(_) | Value::Array(_)) {
            let w: Vec<(Value, Option<&str>)> =
                wire.iter().map(|(v, s)| (v.clone(), s.as_deref())).collect();
            prop_assert_eq!(reassemble_from_wire(&w), Some(value));
        } else {
            let joined: String = pages.iter().map(|p| texts(p)[0].clone()).collect();
            prop_assert_eq!(joined, text);
        }
    }

    #[test]
    fn several_text_items_page_as_one_lossless_sequence(
        items in prop::collection::vec(text_item(), 1..4),
        budget in 256usize..700,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let b = boundary(budget, &dir);
        let content: Vec<Value> = items
            .iter()
            .map(|t| json!({"type": "text", "text": t}))
            .collect();
        let first = b.shape_call_result("t", json!({"content": content}), 0);
        let paged = meta(&first).is_some();
        let shown = meta(&first).map(|m| m["shown"].as_str().unwrap().to_owned());
        let pages = follow(&b, first, budget);
        if items.len() > 1 && shown.as_deref().is_some_and(|s| !s.starts_with("text ")) {
            // Budget near the floor: the items were paged as one JSON array of strings.
            let wire: Vec<(Value, Option<String>)> = pages
                .iter()
                .map(|p| {
                    let body: Value = serde_json::from_str(&texts(p)[0]).unwrap();
                    (body, location(p))
                })
                .collect();
            let w: Vec<(Value, Option<&str>)> =
                wire.iter().map(|(v, s)| (v.clone(), s.as_deref())).collect();
            prop_assert_eq!(reassemble_from_wire(&w), Some(json!(items)));
            return Ok(());
        }
        let parts: Vec<String> = pages
            .iter()
            .flat_map(|p| {
                let mut t = texts(p);
                if paged {
                    t.pop();
                }
                t
            })
            .collect();
        prop_assert!(parts.len() >= items.len());
        prop_assert_eq!(parts.concat(), items.concat());
    }
}

fn content_item() -> impl Strategy<Value = Value> {
    prop_oneof![
        text_item().prop_map(|t| json!({"type": "text", "text": t})),
        json_value().prop_map(
            |v| json!({"type": "text", "text": serde_json::to_string_pretty(&v).unwrap()})
        ),
        Just(json!({"type": "resource_link", "uri": "demo://r", "name": "r"})),
        Just(json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn every_page_of_any_result_stays_in_budget_and_cursors_end(
        content in prop::collection::vec(content_item(), 0..5),
        budget in 256usize..1200,
        is_error in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let b = boundary(budget, &dir);
        let n_other = content.iter().filter(|i| i["type"] != "text").count();
        let first = b.shape_call_result("t", json!({"content": content, "isError": is_error}), 0);
        prop_assert_eq!(&first["isError"], &json!(is_error));
        let kept = first["content"].as_array().unwrap().iter().filter(|i| i["type"] != "text").count();
        prop_assert_eq!(kept, n_other, "non-text items are kept on page 1");
        // `follow` asserts the budget on every page and stops at the last one.
        let pages = follow(&b, first, budget);
        prop_assert!(pages.len() < 10_000);
    }
}
