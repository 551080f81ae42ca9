//! A cached structuredContent is held once: the plan reads it from the entry's documents,
//! so the cache counts it, demotes and spills it with them, and pages stay the same.

use serde_json::{Value, json};

use super::state::Boundary;
use super::store::heap::docs_heap_bytes;
use crate::config::Settings;
use mcp_budget_core::paginate::Document;
use mcp_budget_core::shape::structured::Orig;

fn boundary(dir: &tempfile::TempDir) -> Boundary {
    Boundary::new(Settings {
        max_tokens: Some(400),
        cache_dir: Some(dir.path().join("cache")),
        blob_dir: Some(dir.path().join("blobs")),
        ..Settings::default()
    })
    .unwrap()
}

/// Rows with ids, names, floats and nested arrays.
fn rows(n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| {
                json!({"id": i, "name": format!("entity {i}"), "x": i as f64 / 7.0,
                    "tags": ["a", format!("t{}", i % 5)]})
            })
            .collect(),
    )
}

/// Every `read_more` page after `first` (each whole result).
pub(super) fn pages(b: &Boundary, first: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let mut meta = first["_meta"]["mcp-budget/page"].clone();
    for _ in 0..10_000 {
        let Some(cursor) = meta["next_cursor"].as_str() else {
            return out;
        };
        let next = b
            .answer_injected(&json!({"name": "read_more", "arguments": {"cursor": cursor}}))
            .unwrap();
        assert!(next.get("isError").is_none(), "{next}");
        meta = next["_meta"]["mcp-budget/page"].clone();
        out.push(next);
    }
    panic!("too many pages");
}

/// Shapes `result`, then checks that its entry holds the structuredContent once (resident
/// bytes = the heap estimate of the documents alone) and that the `read_more` pages are the
/// same after the store pushed the entry out to a spill file.
fn held_once_and_paged_the_same(result: Value, own: bool) {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(&dir);
    let first = b.shape_call_result("t", result, 0);
    let meta = &first["_meta"]["mcp-budget/page"];
    let id = meta["response_id"].as_str().expect("paged").to_owned();
    assert!(first["structuredContent"].is_object(), "{first}");

    let entry = b.store.memory().unwrap().get(&id).unwrap();
    let plan = entry.structured.as_ref().expect("a plan");
    assert_eq!(plan.own, own);
    assert!(matches!(plan.orig, Orig::Doc(_)), "{:?}", plan.orig);
    let docs = entry.docs().unwrap();
    let tree = docs_heap_bytes(&docs);
    assert_eq!(entry.resident(), tree);
    assert_eq!(b.store.memory().unwrap().resident(), tree);
    // The structuredContent's document alone weighs most of it: a second copy would show.
    let sc_doc = docs
        .iter()
        .map(|d| docs_heap_bytes(std::slice::from_ref(d)))
        .max()
        .unwrap();
    assert!(sc_doc * 2 > tree, "{sc_doc} of {tree}");
    drop(docs);

    let before = pages(&b, &first);
    assert!(before.len() >= 2, "{}", before.len());
    assert!(
        before.iter().all(|p| p["structuredContent"].is_object()),
        "every page carries a structuredContent"
    );

    b.store.memory().unwrap().push_out_all();
    assert!(!entry.has_tree() && !entry.has_text_only() && entry.on_disk() > 0);
    assert_eq!(entry.resident(), 0, "nothing of it stays in memory");
    drop(entry);
    let after = pages(&b, &first);
    assert_eq!(after, before);
}

#[test]
fn structured_content_only_is_held_once_and_pages_the_same_after_spilling() {
    let sc = json!({"total": 600, "rows": rows(600)});
    held_once_and_paged_the_same(json!({"content": [], "structuredContent": sc}), true);
}

#[test]
fn value_twin_is_held_once_and_pages_the_same_after_spilling() {
    // The memory server's read_graph: the text item is the structuredContent's JSON (no
    // floats: rounding leaves it equal to the text's document).
    let sc = json!({"entities": (0..500).map(|i| json!({"name": format!("e{i}"),
        "entityType": "t", "observations": [format!("obs {i}")]})).collect::<Vec<_>>(),
        "relations": []});
    let text = serde_json::to_string_pretty(&sc).unwrap();
    held_once_and_paged_the_same(
        json!({"content": [{"type": "text", "text": text}], "structuredContent": sc}),
        false,
    );
}

#[test]
fn a_twin_that_differs_from_its_document_keeps_a_counted_copy() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(&dir);
    // Floats rounded in the structuredContent (precision 9), not in the cached document.
    let sc = json!({"rows": rows(300)});
    let text = serde_json::to_string(&sc).unwrap();
    let first = b.shape_call_result(
        "t",
        json!({"content": [{"type": "text", "text": text}], "structuredContent": sc}),
        0,
    );
    let id = first["_meta"]["mcp-budget/page"]["response_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let entry = b.store.memory().unwrap().get(&id).unwrap();
    let Some(Orig::Kept(kept)) = entry.structured.as_ref().map(|p| &p.orig) else {
        panic!("{:?}", entry.structured);
    };
    let docs = entry.docs().unwrap();
    assert_ne!(
        Some(&**kept),
        docs.first().and_then(|d| match d {
            Document::Json(v) => Some(v),
            Document::Text(_) => None,
        })
    );
    let copy = entry.resident() - docs_heap_bytes(&docs);
    assert!(copy > 0 && copy > docs_heap_bytes(&docs) / 2, "{copy}");
    drop(docs);
    let before = pages(&b, &first);
    b.store.memory().unwrap().push_out_all();
    assert_eq!(entry.resident(), copy, "the copy stays counted");
    assert_eq!(pages(&b, &first), before);
}
