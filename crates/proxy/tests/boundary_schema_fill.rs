//! Page 1 of a tool with a declared outputSchema: its structuredContent is filled with only
//! the members the schema requires, so that it fits beside the page (issue 8: filling every
//! member gave 12,497 tokens at budget 712). Over the budget only when the required members
//! alone, bare, cannot fit beside the smallest page (the documented exception).

mod boundary_util;

use boundary_util::*;
use serde_json::{Map, Value, json};

/// `{"rows": [...], "index": {...}}`: `rows` long enough to be paged, `index` an object of
/// `n` short members that a page never shows (it comes after `rows`).
fn report(n: usize) -> Value {
    let rows: Vec<Value> = (0..400)
        .map(|i| json!({"id": i, "name": format!("row {i}"), "tags": ["a", "b"]}))
        .collect();
    let index: Map<String, Value> = (0..n)
        .map(|i| (format!("key_{i}"), Value::from(i as u64)))
        .collect();
    json!({"rows": rows, "index": index, "total": 400})
}

/// The outputSchema of [`report`]; `index_required`: whether `index` and its 3,000 members
/// are required.
fn schema(index_required: bool) -> Value {
    let mut required = vec!["rows", "total"];
    let mut index = json!({"type": "object", "additionalProperties": {"type": "integer"}});
    if index_required {
        required.push("index");
        let keys: Vec<String> = (0..3000).map(|i| format!("key_{i}")).collect();
        index["required"] = json!(keys);
    }
    json!({
        "type": "object",
        "required": required,
        "properties": {
            "rows": {"type": "array", "items": {"type": "object", "required": ["id"],
                "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}}}}},
            "index": index,
            "total": {"type": "integer"}
        }
    })
}

/// A boundary at `budget` that knows tool `t` and its outputSchema.
fn declared(
    budget: usize,
    dir: &tempfile::TempDir,
    schema: Value,
) -> mcp_budget_proxy::boundary::Boundary {
    let b = boundary(budget, dir);
    let list = json!({"tools": [{"name": "t", "inputSchema": {"type": "object"},
        "outputSchema": schema}]});
    b.shape_list_result(list, true);
    b
}

#[test]
fn page_one_fills_only_the_required_members_and_fits_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let s = schema(false);
    let validator = jsonschema::draft7::new(&s).unwrap();
    for budget in [712, 1000, 3000] {
        let b = declared(budget, &dir, s.clone());
        let sc = report(3000);
        let page = b.shape_call_result("t", json!({"content": [], "structuredContent": sc}), 0);
        let value = &page["structuredContent"];
        assert!(validator.is_valid(value), "budget {budget}: {value}");
        // `index` is not required and page 1 does not show it: left out (it was filled in
        // reduced, 3,000 members, ~12,000 tokens).
        assert!(value.get("index").is_none(), "budget {budget}");
        assert_eq!(value["total"], 400);
        let seen = visible(&page);
        assert!(seen <= budget, "budget {budget}: page 1 has {seen} tokens");
        // Every page within the budget, to the end.
        follow(&b, page, budget);
    }
}

#[test]
fn required_members_that_cannot_fit_are_the_only_exception() {
    // `index` required: its 3,000 members (bare) alone pass the budget, so page 1 keeps a
    // valid structuredContent over it; its content items still fit.
    let dir = tempfile::tempdir().unwrap();
    let s = schema(true);
    let validator = jsonschema::draft7::new(&s).unwrap();
    let budget = 712;
    let b = declared(budget, &dir, s.clone());
    let page = b.shape_call_result(
        "t",
        json!({"content": [], "structuredContent": report(3000)}),
        0,
    );
    let value = &page["structuredContent"];
    assert!(validator.is_valid(value), "{value}");
    assert_eq!(value["index"].as_object().map(Map::len), Some(3000));
    assert!(visible(&page) > budget);
    let mut items_only = page.clone();
    items_only
        .as_object_mut()
        .unwrap()
        .remove("structuredContent");
    assert!(visible(&items_only) <= budget);
    // The same required members in a smaller value that holds only 20 of them: the schema
    // is not met by the server (it says 3,000), so only the 20 it has are filled; they fit.
    let page = b.shape_call_result(
        "t",
        json!({"content": [], "structuredContent": report(20)}),
        0,
    );
    assert_eq!(
        page["structuredContent"]["index"].as_object().map(Map::len),
        Some(20)
    );
    assert!(visible(&page) <= budget, "{}", visible(&page));
}
