//! tools/call result shaping: budget, compaction, meta item, paging to the end, several
//! items, non-text items, isError, banner, summary mode.

mod boundary_util;

use boundary_util::*;
use mcp_budget_core::paginate::reassemble_from_wire;
use mcp_budget_core::tokens::Encoding;
use mcp_budget_proxy::boundary::Boundary;
use mcp_budget_proxy::config::{ConfigFile, Settings};
use serde_json::{Value, json};

fn directory_tree_value() -> Value {
    let r = fixture("fs.call1.directory_tree.json");
    serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap()
}

/// Rows with 17-digit floats, as a pretty-printed JSON text item.
fn rows(n: usize) -> Value {
    let rows: Vec<Value> = (0..n)
        .map(|i| {
            json!({"id": i, "name": format!("sensor-{i}"), "x": 247.130_619_351_792_46 + i as f64, "ok": i % 3 == 0})
        })
        .collect();
    json!({"content": [{"type": "text", "text": serde_json::to_string_pretty(&rows).unwrap()}]})
}

/// The JSON pages of a one-item response: (body value, full location from
/// `_meta["mcp-budget/page"]`, which a paged result always carries).
fn json_pages(pages: &[Value]) -> Vec<(Value, Option<String>)> {
    pages
        .iter()
        .map(|p| {
            let t = texts(p);
            let body: Value = serde_json::from_str(&t[0]).unwrap();
            let location = p["_meta"]["mcp-budget/page"]["location"]
                .as_str()
                .map(str::to_owned);
            assert_eq!(location.is_some(), meta(p).is_some(), "{p}");
            (body, location)
        })
        .collect()
}

fn reassemble_json(pages: &[Value]) -> Value {
    let pages = json_pages(pages);
    let wire: Vec<(Value, Option<&str>)> = pages
        .iter()
        .map(|(v, s)| (v.clone(), s.as_deref()))
        .collect();
    reassemble_from_wire(&wire).expect("pages reassemble")
}

#[test]
fn fitting_result_is_compacted_with_no_meta() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(10_000, &dir);
    let r = fixture("fs.call1.directory_tree.json");
    let pretty_len = r["content"][0]["text"].as_str().unwrap().len();
    let out = b.shape_call_result("directory_tree", r, 5);
    let t = texts(&out);
    assert_eq!(t.len(), 1, "no meta item");
    assert!(meta(&out).is_none());
    assert!(
        t[0].len() < pretty_len / 2,
        "compacted: {} vs {pretty_len}",
        t[0].len()
    );
    assert!(!t[0].contains('\n'));
    let v: Value = serde_json::from_str(&t[0]).unwrap();
    assert_eq!(v, directory_tree_value());
    // The string twin follows its text.
    assert_eq!(out["structuredContent"]["content"].as_str().unwrap(), t[0]);
}

#[test]
fn small_result_passes_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(10_000, &dir);
    let r = fixture("everything.call2.get-structured-content.json");
    let out = b.shape_call_result("get-structured-content", r.clone(), 1);
    assert_eq!(out, r);
}

#[test]
fn over_budget_gives_page_one_and_meta_within_budget() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    let out = b.shape_call_result("directory_tree", fixture("fs.call1.directory_tree.json"), 5);
    assert!(
        visible_tokens(&out, false) <= 300,
        "{}",
        visible_tokens(&out, false)
    );
    let t = texts(&out);
    assert_eq!(t.len(), 2);
    let m = meta(&out).expect("meta item last");
    assert_eq!(m["truncation_reason"], "token_budget");
    let id = m["response_id"].as_str().unwrap();
    assert_eq!(id.len(), 12);
    assert!(
        id.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    );
    assert_eq!(m["next_cursor"], format!("{id}.1"));
    let compact = serde_json::to_string(&directory_tree_value()).unwrap();
    let exact = Encoding::Cl100kBase.count(&compact) as f64;
    // Page 1 goes out before the whole is counted (issue 14): it names its total an estimate
    // (two significant digits, within a factor 2 here); the next page gives the exact count.
    assert!(m.get("total_tokens").is_none(), "{m}");
    let estimate = m["total_tokens_estimate"].as_f64().unwrap();
    assert!(
        estimate > exact / 2.0 && estimate < exact * 2.0,
        "{estimate} vs {exact}"
    );
    let page2 = b
        .answer_injected(&read_more(m["next_cursor"].as_str().unwrap()))
        .unwrap();
    let m2 = meta(&page2).unwrap();
    assert_eq!(m2["total_tokens"], Encoding::Cl100kBase.count(&compact));
    assert!(m2.get("total_tokens_estimate").is_none(), "{m2}");
    assert!(m["hint"].as_str().unwrap().contains("read_more"));
    assert!(m["hint"].as_str().unwrap().contains("query_response"));
    // Page 1 is valid JSON.
    let _: Value = serde_json::from_str(&t[0]).unwrap();
}

#[test]
fn meta_item_shape_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    let out = b.shape_call_result("rows", rows(200), 5);
    let m = meta(&out).unwrap();
    let id = m["response_id"].as_str().unwrap().to_owned();
    // The id and where page 1 ends depend on the pager's choices: redacted, the rest is the
    // wire shape (field names, order, hint).
    let mut m: Value = serde_json::from_str(&texts(&out).pop().unwrap()).unwrap();
    assert!(m["shown"].as_str().unwrap().starts_with('$'));
    m["shown"] = json!("<shown>");
    let text = serde_json::to_string(&m)
        .unwrap()
        .replace(&id, "<response_id>");
    insta::assert_snapshot!("meta_item_rows_300", text);
}

#[test]
fn read_more_to_the_end_reassembles_the_compacted_original() {
    let dir = tempfile::tempdir().unwrap();
    for budget in [256, 300, 1000] {
        let b = boundary(budget, &dir);
        let first =
            b.shape_call_result("directory_tree", fixture("fs.call1.directory_tree.json"), 5);
        let pages = follow(&b, first, budget);
        assert!(pages.len() > 2, "budget {budget}: {} pages", pages.len());
        let last = meta(pages.last().unwrap()).unwrap();
        assert!(last.get("next_cursor").is_none());
        assert!(last["hint"].as_str().unwrap().starts_with("Last page."));
        assert_eq!(
            reassemble_json(&pages),
            directory_tree_value(),
            "budget {budget}"
        );
    }
}

#[test]
fn floats_are_rounded_and_rows_reassemble() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(500, &dir);
    let first = b.shape_call_result("rows", rows(300), 5);
    assert!(texts(&first)[0].contains("247.130619"));
    assert!(!texts(&first)[0].contains("247.13061935179246"));
    let pages = follow(&b, first, 500);
    let whole = reassemble_json(&pages);
    assert_eq!(whole.as_array().unwrap().len(), 300);
    assert_eq!(whole[299]["name"], "sensor-299");
}

#[test]
fn plain_text_pages_concatenate_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(400, &dir);
    let mut text = String::new();
    for i in 0..800 {
        text.push_str(&format!("line {i}: the quick brown fox\r\n"));
    }
    text.push_str(&"x".repeat(5000));
    text.push_str("\ntail");
    let r = json!({"content": [{"type": "text", "text": text}]});
    let pages = follow(&b, b.shape_call_result("log", r, 1), 400);
    let joined: String = pages.iter().map(|p| texts(p)[0].clone()).collect();
    assert_eq!(joined, text);
}

#[test]
fn several_text_items_and_non_text_items_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(400, &dir);
    let big: String = (0..600).map(|i| format!("row {i}\n")).collect();
    let link = json!({"type": "resource_link", "uri": "demo://x", "name": "x"});
    let r = json!({"content": [
        {"type": "text", "text": "Header: results follow."},
        link.clone(),
        {"type": "text", "text": big},
        {"type": "text", "text": "{\"footer\": [1, 2, 3]}"}
    ]});
    let first = b.shape_call_result("multi", r, 1);
    assert!(
        first["content"].as_array().unwrap().contains(&link),
        "non-text item kept on page 1"
    );
    let pages = follow(&b, first, 400);
    // Collect each item back: header whole, big text concatenated, footer compacted.
    let all: Vec<String> = pages
        .iter()
        .flat_map(|p| {
            let mut t = texts(p);
            t.pop(); // meta
            t
        })
        .collect();
    assert_eq!(all[0], "Header: results follow.");
    assert_eq!(all.last().unwrap(), "{\"footer\":[1,2,3]}");
    let middle: String = all[1..all.len() - 1].concat();
    assert_eq!(middle, big);
}

#[test]
fn is_error_results_are_capped_too() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    let body = "Error: stack frame at module.rs:42\n".repeat(2000);
    let r = json!({"content": [{"type": "text", "text": body}], "isError": true});
    let out = b.shape_call_result("boom", r, 1);
    assert_eq!(out["isError"], true);
    assert!(visible_tokens(&out, false) <= 300);
    assert!(meta(&out).is_some());
}

#[test]
fn banner_is_first_and_outside_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let banner = "Shaped by mcp-budget. ".repeat(40);
    let b = Boundary::new(Settings {
        max_tokens: Some(300),
        banner: Some(banner.clone()),
        blob_dir: Some(dir.path().to_path_buf()),
        ..Settings::default()
    })
    .unwrap();
    let out = b.shape_call_result("rows", rows(100), 1);
    assert_eq!(texts(&out)[0], banner);
    assert!(visible_tokens(&out, true) <= 300);
    assert!(
        visible_tokens(&out, false) > 300,
        "the banner itself is long"
    );
    let c = meta(&out).unwrap()["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let p2 = b.answer_injected(&read_more(&c)).unwrap();
    assert_eq!(texts(&p2)[0], banner);
    assert!(visible_tokens(&p2, true) <= 300);
}

#[test]
fn summary_mode_returns_the_envelope_whose_cursor_leads_to_page_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = ConfigFile::parse(
        "[tools.directory_tree]\noverflow = \"summary\"\n",
        std::path::Path::new("t.toml"),
    )
    .unwrap();
    let b = Boundary::new(Settings {
        max_tokens: Some(300),
        file: Some(file),
        blob_dir: Some(dir.path().to_path_buf()),
        ..Settings::default()
    })
    .unwrap();
    let out = b.shape_call_result("directory_tree", fixture("fs.call1.directory_tree.json"), 1);
    assert!(visible_tokens(&out, false) <= 300);
    let t = texts(&out);
    assert_eq!(t.len(), 1);
    let env: Value = serde_json::from_str(&t[0]).unwrap();
    assert_eq!(env["elided"], true);
    assert!(env["preview"].is_object(), "{env}");
    let id = env["response_id"].as_str().unwrap();
    assert_eq!(env["next_cursor"], format!("{id}.0"));
    assert!(env["tokens"].as_u64().unwrap() > 300);
    // The cursor leads to page 1, and on to the end.
    let p1 = b.answer_injected(&read_more(&format!("{id}.0"))).unwrap();
    let paged = boundary(300, &dir).shape_call_result(
        "directory_tree",
        fixture("fs.call1.directory_tree.json"),
        1,
    );
    assert_eq!(texts(&p1)[0], texts(&paged)[0]);
    let pages = follow(&b, p1, 300);
    assert_eq!(reassemble_json(&pages), directory_tree_value());
    // Other tools still page.
    let other = b.shape_call_result("rows", rows(100), 1);
    assert!(meta(&other).is_some());
}

#[test]
fn results_that_are_not_call_tool_results_pass_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    for v in [
        json!(null),
        json!({"resultType": "x"}),
        json!({"content": "nope"}),
        json!([1]),
    ] {
        assert_eq!(b.shape_call_result("t", v.clone(), 1), v);
    }
}

/// A key too big for any page is cut across pages like a long string (it was paged as the
/// compact text, no page valid JSON): every page is JSON within the budget, and the pages
/// merge back by their `_meta` locations.
#[test]
fn a_key_too_big_for_any_page_is_cut_into_json_pages_within_budget() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(256, &dir);
    let key: String = (0..400).map(|i| format!("seg{i}/")).collect();
    let value = json!({"rows": (0..50).collect::<Vec<u32>>(), key.clone(): 1});
    let r = json!({"content": [{"type": "text", "text": serde_json::to_string_pretty(&value).unwrap()}]});
    let pages = follow(&b, b.shape_call_result("t", r, 1), 256);
    assert!(pages.len() > 3, "{} pages", pages.len());
    assert_eq!(reassemble_json(&pages), value);
}
