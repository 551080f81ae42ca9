//! tools/list injection (first page only, name clashes, description suffixes) and
//! structuredContent against the tool's outputSchema.

mod boundary_util;

use boundary_util::*;
use mcp_budget_proxy::boundary::Boundary;
use mcp_budget_proxy::config::{ConfigFile, Settings};
use serde_json::{Value, json};

fn names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn injected_tools_are_listed_on_the_first_page_only() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    let upstream = fixture("fs.tools.json");
    let n_up = upstream["tools"].as_array().unwrap().len();
    let first = b.shape_list_result(upstream.clone(), true);
    let n = names(&first);
    assert_eq!(n.len(), n_up + 2);
    assert_eq!(&n[n_up..], ["read_more", "query_response"]);
    for tool in &first["tools"].as_array().unwrap()[n_up..] {
        // Short (issue 15: both definitions within 150 tokens) but saying what the tool does.
        let d = tool["description"].as_str().unwrap();
        assert!(d.contains("shortened") && d.len() > 30, "{d}");
        assert_eq!(tool["inputSchema"]["type"], "object");
    }
    let rm = &first["tools"][n_up];
    assert_eq!(rm["inputSchema"]["required"], json!(["cursor"]));
    assert_eq!(
        rm["inputSchema"]["properties"]["max_tokens"]["type"],
        "integer"
    );
    let qr = &first["tools"][n_up + 1];
    assert_eq!(
        qr["inputSchema"]["required"],
        json!(["response_id", "query"])
    );
    // Upstream tools are untouched, save the note on directory_tree's description, which
    // promises "2-space indentation".
    let mut noted = upstream.clone();
    for tool in noted["tools"].as_array_mut().unwrap() {
        if tool["name"] == "directory_tree" {
            let d = tool["description"].as_str().unwrap();
            assert!(d.contains("formatted with 2-space indentation"), "{d}");
            tool["description"] = json!(format!(
                "{d} (mcp-budget: JSON output is compacted, without indentation.)"
            ));
        }
    }
    assert_ne!(noted, upstream);
    assert_eq!(
        first["tools"].as_array().unwrap()[..n_up],
        noted["tools"].as_array().unwrap()[..]
    );
    let later = b.shape_list_result(upstream.clone(), false);
    assert_eq!(later, noted);
}

#[test]
fn a_clashing_name_is_prefixed_and_hints_name_it() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    let upstream = json!({"tools": [
        {"name": "read_more", "description": "upstream's own", "inputSchema": {"type": "object"}},
        {"name": "big", "inputSchema": {"type": "object"}}
    ], "nextCursor": "p2"});
    let list = b.shape_list_result(upstream, true);
    assert_eq!(
        names(&list),
        ["read_more", "big", "budget_read_more", "query_response"]
    );
    assert_eq!(list["nextCursor"], "p2");
    assert_eq!(
        b.injected_names(),
        ("budget_read_more".into(), "query_response".into())
    );
    // The upstream's read_more is forwarded, the prefixed one answered locally.
    assert!(b.answer_injected(&read_more("0123456789ab.1")).is_none());
    let rows: Vec<Value> = (0..500).map(|i| json!({"i": i})).collect();
    let r = json!({"content": [{"type": "text", "text": serde_json::to_string(&rows).unwrap()}]});
    let out = b.shape_call_result("big", r, 1);
    let m = meta(&out).unwrap();
    assert!(
        m["hint"].as_str().unwrap().contains("budget_read_more {"),
        "{m}"
    );
    let next = json!({"name": "budget_read_more", "arguments": {"cursor": m["next_cursor"]}});
    let p2 = b.answer_injected(&next).unwrap();
    assert!(p2.get("isError").is_none());
}

#[test]
fn description_suffix_is_appended() {
    let dir = tempfile::tempdir().unwrap();
    let file = ConfigFile::parse(
        "[tools.directory_tree]\ndescription_suffix = \"Big trees are paged: use read_more.\"\n",
        std::path::Path::new("t.toml"),
    )
    .unwrap();
    let b = Boundary::new(Settings {
        file: Some(file),
        blob_dir: Some(dir.path().to_path_buf()),
        ..Settings::default()
    })
    .unwrap();
    let list = b.shape_list_result(fixture("fs.tools.json"), true);
    let tool = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "directory_tree")
        .unwrap();
    let d = tool["description"].as_str().unwrap();
    assert!(d.ends_with(" Big trees are paged: use read_more."), "{d}");
    assert!(d.starts_with("Get a recursive tree view"));
}

fn output_schema(tool: &str) -> Value {
    fixture("fs.tools.json")["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == tool)
        .unwrap()["outputSchema"]
        .clone()
}

#[test]
fn structured_content_stays_valid_against_the_output_schema() {
    let schema = output_schema("directory_tree");
    let validator = jsonschema::validator_for(&schema).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for budget in [256, 300, 1000, 10_000] {
        let b = boundary(budget, &dir);
        b.shape_list_result(fixture("fs.tools.json"), true);
        let out = b.shape_call_result("directory_tree", fixture("fs.call1.directory_tree.json"), 1);
        let sc = &out["structuredContent"];
        assert!(validator.is_valid(sc), "budget {budget}: {sc}");
        // Paged with its text twin: the same text as the first content item.
        assert_eq!(sc["content"].as_str().unwrap(), texts(&out)[0]);
        assert!(visible_tokens(&out, false) <= budget);
    }
}

#[test]
fn structured_twin_is_dropped_only_when_the_tool_has_no_output_schema() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    let r = fixture("everything.call2.get-structured-content.json");
    // Unknown tool (no tools/list yet): kept.
    let out = b.shape_call_result("get-structured-content", r.clone(), 1);
    assert_eq!(out["structuredContent"], r["structuredContent"]);
    // Known without an outputSchema: the twin is dropped.
    let list =
        json!({"tools": [{"name": "get-structured-content", "inputSchema": {"type": "object"}}]});
    b.shape_list_result(list, true);
    let out = b.shape_call_result("get-structured-content", r.clone(), 1);
    assert!(out.get("structuredContent").is_none(), "{out}");
    // Known with an outputSchema (the recorded everything server declares one): kept whole,
    // and valid against it.
    let list = fixture("everything.tools.json");
    let schema = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "get-structured-content")
        .unwrap()["outputSchema"]
        .clone();
    b.shape_list_result(list, true);
    let out = b.shape_call_result("get-structured-content", r.clone(), 1);
    assert_eq!(out["structuredContent"], r["structuredContent"]);
    assert!(
        jsonschema::validator_for(&schema)
            .unwrap()
            .is_valid(&out["structuredContent"])
    );
}

#[test]
fn a_paged_value_twin_follows_page_one_and_stays_valid() {
    let schema = json!({"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "integer"}, "name": {"type": "string"}, "score": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["id", "name", "score", "tags"], "additionalProperties": false}},
        "total": {"type": "integer"}}, "required": ["items", "total"], "additionalProperties": false});
    let validator = jsonschema::validator_for(&schema).unwrap();
    let items: Vec<Value> = (0..400)
        .map(|i| json!({"id": i, "name": format!("item {i}"), "score": 335.115_893_940_876_73 + i as f64, "tags": ["alpha", "bravo"]}))
        .collect();
    let sc = json!({"items": items, "total": 400});
    assert!(validator.is_valid(&sc));
    let result = json!({"content": [{"type": "text", "text": serde_json::to_string(&sc).unwrap()}], "structuredContent": sc});
    let list = json!({"tools": [{"name": "structured", "inputSchema": {"type": "object"}, "outputSchema": schema}]});
    let dir = tempfile::tempdir().unwrap();
    for budget in [256, 300, 700, 2000] {
        let b = boundary(budget, &dir);
        b.shape_list_result(list.clone(), true);
        let out = b.shape_call_result("structured", result.clone(), 1);
        assert!(visible_tokens(&out, false) <= budget);
        let got = &out["structuredContent"];
        assert!(validator.is_valid(got), "budget {budget}: {got}");
        let page: Value = serde_json::from_str(&texts(&out)[0]).unwrap();
        // The twin holds the items page 1 shows (at the floor, where the members it adds
        // to keep valid do not fit beside a full page, fewer of them).
        let (n_sc, n_page) = (
            got["items"].as_array().unwrap().len(),
            page["items"].as_array().unwrap().len(),
        );
        assert!(
            n_sc >= 1 && n_sc <= n_page,
            "budget {budget}: {n_sc} {n_page}"
        );
        if budget > 256 {
            assert_eq!(n_sc, n_page, "budget {budget}");
        }
        assert_eq!(got["total"], 400);
        assert_eq!(
            got["items"][0], page["items"][0],
            "floats rounded like the text"
        );
    }
    // Summary mode: reduced, still valid.
    let file = ConfigFile::parse(
        "[defaults]\noverflow = \"summary\"\n",
        std::path::Path::new("t.toml"),
    )
    .unwrap();
    let b = Boundary::new(Settings {
        max_tokens: Some(400),
        file: Some(file),
        blob_dir: Some(dir.path().to_path_buf()),
        ..Settings::default()
    })
    .unwrap();
    b.shape_list_result(list, true);
    let out = b.shape_call_result("structured", result, 1);
    assert!(
        validator.is_valid(&out["structuredContent"]),
        "{}",
        out["structuredContent"]
    );
}
