//! Every model-visible part of a tools/call result counts and is paged: the text of embedded
//! resources, and structuredContent that no text item carries (issue 8 §1).

mod boundary_util;

use boundary_util::*;
use mcp_budget_core::paginate::reassemble_from_wire;
use mcp_budget_core::tokens::Encoding;
use mcp_budget_proxy::boundary::Boundary;
use serde_json::{Value, json};

/// A Go source file of about `bytes` bytes (GitHub's get_file_contents returns such text).
fn go_source(bytes: usize) -> String {
    let mut s = String::from("package main\n\nimport \"fmt\"\n\n");
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(&format!(
            "// handler{i} answers request {i}.\nfunc handler{i}(w Writer, r *Request) error {{\n\tif r.ID != {i} {{\n\t\treturn fmt.Errorf(\"unexpected id %d (want {i})\", r.ID)\n\t}}\n\treturn w.Write([]byte(\"ok {i}\"))\n}}\n\n"
        ));
        i += 1;
    }
    s
}

/// The `get_file_contents` shape: a short text item, then the file as an embedded resource.
fn file_contents(text: &str) -> Value {
    json!({"content": [
        {"type": "text", "text": "successfully downloaded text file (SHA: 5e1c309dae7f45e0f39b1bf3ac3cd9db12e7d689)"},
        {"type": "resource", "resource": {"uri": "repo://octo/hello/contents/main.go",
            "mimeType": "text/plain; charset=utf-8", "text": text}}
    ]})
}

/// Follows the cursors from `first`, asserting on every page the budget by
/// [`model_visible`] (cl100k_base); returns every page.
fn follow_visible(b: &Boundary, first: Value, budget: usize) -> Vec<Value> {
    let mut pages = vec![first];
    for _ in 0..10_000 {
        let last = pages.last().unwrap();
        let seen = visible(last);
        assert!(
            seen <= budget,
            "page {} over budget {budget}: {seen}",
            pages.len()
        );
        let Some(c) = meta(last).and_then(|m| m["next_cursor"].as_str().map(str::to_owned)) else {
            break;
        };
        let next = b.answer_injected(&read_more(&c)).expect("injected");
        assert!(next.get("isError").is_none(), "{next}");
        pages.push(next);
    }
    pages
}

/// The resource items of a page.
fn resources(page: &Value) -> Vec<Value> {
    page["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "resource")
        .cloned()
        .collect()
}

#[test]
fn a_450_kb_embedded_resource_is_paged_within_the_budget_and_reassembles() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(2000, &dir);
    let source = go_source(450 * 1024);
    let whole = Encoding::Cl100kBase.count(&source);
    assert!(whole > 130_000, "{whole}");
    let first = b.shape_call_result("get_file_contents", file_contents(&source), 0);
    // Before: the resource passed whole (~147,000 model-visible tokens at --max-tokens 2000).
    assert!(visible(&first) <= 2000, "{}", visible(&first));
    let m = meta(&first).expect("paged");
    assert!(m["total_tokens_estimate"].as_u64().unwrap() > whole as u64 / 2);
    let pages = follow_visible(&b, first, 2000);
    let m2 = meta(&pages[1]).expect("paged");
    assert!(m2["total_tokens"].as_u64().unwrap() > whole as u64);
    assert!(pages.len() > 70, "{}", pages.len());
    let mut text = String::new();
    for p in &pages {
        for r in resources(p) {
            // Every page's piece keeps the resource wrapper.
            assert_eq!(r["resource"]["uri"], "repo://octo/hello/contents/main.go");
            assert_eq!(r["resource"]["mimeType"], "text/plain; charset=utf-8");
            text.push_str(r["resource"]["text"].as_str().unwrap());
        }
    }
    assert_eq!(text, source, "the pieces put back together are the file");
    // Page 1 starts with the short text item, unchanged.
    assert_eq!(
        texts(&pages[0])[0],
        "successfully downloaded text file (SHA: 5e1c309dae7f45e0f39b1bf3ac3cd9db12e7d689)"
    );
}

#[test]
fn a_small_resource_passes_whole_and_its_json_is_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(2000, &dir);
    let r = json!({"content": [{"type": "resource", "resource": {"uri": "file:///a.json",
        "mimeType": "application/json", "text": "{\n  \"a\": 1.23456789012345,\n  \"b\": [1, 2]\n}"}}]});
    let out = b.shape_call_result("read", r, 0);
    assert!(meta(&out).is_none());
    assert_eq!(
        out["content"],
        json!([{"type": "resource", "resource": {"uri": "file:///a.json",
            "mimeType": "application/json", "text": "{\"a\":1.23456789,\"b\":[1,2]}"}}])
    );
}

/// CI's failing input (boundary_visible_props, `Resource("{} ")`): a resource that declares a
/// type other than JSON comes back as it came, even when its text parses as JSON; with no
/// `mimeType` or a JSON one it is compacted.
#[test]
fn a_text_plain_resource_that_parses_as_json_comes_back_as_it_came() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(2000, &dir);
    for text in ["{} ", "[1.23456789012345, 2]", "{\n  \"a\": 1\n}\n"] {
        for mime in ["text/plain", "text/markdown; charset=utf-8", "text/csv"] {
            let r = json!({"content": [{"type": "resource", "resource": {"uri": "file:///a.txt",
                "mimeType": mime, "text": text}}]});
            let out = b.shape_call_result("read", r.clone(), 0);
            assert_eq!(out["content"], r["content"], "{mime}: {text:?}");
        }
        for mime in [None, Some("application/json"), Some("application/ld+json")] {
            let mut resource = json!({"uri": "file:///a.json", "text": text});
            if let Some(m) = mime {
                resource["mimeType"] = json!(m);
            }
            let r = json!({"content": [{"type": "resource", "resource": resource}]});
            let out = b.shape_call_result("read", r, 0);
            let shown = out["content"][0]["resource"]["text"].as_str().unwrap();
            assert!(
                !shown.contains(' ') && !shown.contains('\n'),
                "{mime:?}: {shown:?}"
            );
        }
    }
}

#[test]
fn query_response_sees_the_resource_text() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(1000, &dir);
    let source = go_source(60_000);
    let first = b.shape_call_result("get_file_contents", file_contents(&source), 0);
    let id = meta(&first).unwrap()["response_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = b
        .answer_injected(&json!({"name": "query_response",
            "arguments": {"response_id": id, "query": ".[1] | length"}}))
        .unwrap();
    assert_eq!(texts(&out)[0], source.chars().count().to_string());
}

#[test]
fn a_resource_blob_is_still_offloaded() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(2000, &dir);
    let bytes: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let blob = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let r = json!({"content": [{"type": "resource", "resource": {"uri": "file:///x.bin",
        "mimeType": "application/octet-stream", "blob": blob}}]});
    let out = b.shape_call_result("read", r, 0);
    let t = texts(&out);
    assert_eq!(t.len(), 1, "{out}");
    let desc: Value = serde_json::from_str(&t[0]).unwrap();
    assert_eq!(desc["bytes"], 200_000);
    assert_eq!(
        std::fs::read(desc["path"].as_str().unwrap()).unwrap(),
        bytes
    );
}

/// The outputSchema of [`report`].
fn report_schema() -> Value {
    json!({"type": "object", "additionalProperties": false,
        "required": ["repository", "files", "total", "truncated"],
        "properties": {
            "repository": {"type": "object", "required": ["owner", "name"],
                "properties": {"owner": {"type": "string"}, "name": {"type": "string"}}},
            "files": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                "required": ["path", "size", "sha", "summary", "symbols"],
                "properties": {
                    "path": {"type": "string"}, "size": {"type": "integer"},
                    "sha": {"type": "string"}, "summary": {"type": "string"},
                    "symbols": {"type": "array", "items": {"type": "object",
                        "required": ["name", "line"],
                        "properties": {"name": {"type": "string"}, "line": {"type": "integer"}}}}}}},
            "total": {"type": "integer"},
            "truncated": {"type": "boolean"}}})
}

/// A structuredContent object of about `n_files` × 1 KB.
fn report(n_files: usize) -> Value {
    let files: Vec<Value> = (0..n_files)
        .map(|i| {
            json!({"path": format!("src/module_{i}/lib.rs"), "size": 1000 + i * 7,
                "sha": format!("{:040x}", i * 2_654_435_761),
                "summary": format!("Module {i} parses the request, checks the caller's token against the cache and answers with the rows it found; errors are logged with the request id {i}."),
                "symbols": (0..6).map(|j| json!({"name": format!("fn_{i}_{j}"), "line": j * 40 + 1})).collect::<Vec<_>>()})
        })
        .collect();
    json!({"repository": {"owner": "octo", "name": "hello"}, "files": files,
        "total": n_files, "truncated": false})
}

fn boundary_with_schema(budget: usize, dir: &tempfile::TempDir) -> Boundary {
    let b = boundary(budget, dir);
    b.shape_list_result(
        json!({"tools": [{"name": "report", "inputSchema": {"type": "object"},
            "outputSchema": report_schema()}]}),
        true,
    );
    b
}

/// The JSON text pages of a one-document response, reassembled by their `shown`.
fn reassemble_text_pages(pages: &[Value]) -> Option<Value> {
    let wire: Vec<(Value, Option<String>)> = pages
        .iter()
        .map(|p| {
            let t = texts(p);
            (
                serde_json::from_str(&t[0]).unwrap(),
                meta(p).map(|m| m["shown"].as_str().unwrap().to_owned()),
            )
        })
        .collect();
    let w: Vec<(Value, Option<&str>)> = wire
        .iter()
        .map(|(v, s)| (v.clone(), s.as_deref()))
        .collect();
    reassemble_from_wire(&w)
}

#[test]
fn a_197_kb_structured_content_only_result_is_paged_valid_on_every_page() {
    let sc = report(440);
    let bytes = serde_json::to_string(&sc).unwrap().len();
    assert!((190_000..215_000).contains(&bytes), "{bytes}");
    let validator = jsonschema::validator_for(&report_schema()).unwrap();
    assert!(validator.is_valid(&sc));
    for budget in [256, 500, 2000, 3000] {
        let dir = tempfile::tempdir().unwrap();
        let b = boundary_with_schema(budget, &dir);
        let first =
            b.shape_call_result("report", json!({"content": [], "structuredContent": sc}), 0);
        // Before: passed whole (~50,000 tokens).
        let t = texts(&first);
        assert_eq!(t.len(), 2, "a page text item and the meta item");
        assert!(meta(&first).is_some());
        let pages = follow_visible(&b, first, budget);
        for (i, p) in pages.iter().enumerate() {
            let got = p.get("structuredContent").expect("every page carries it");
            assert!(validator.is_valid(got), "budget {budget} page {i}: {got}");
            let page: Value = serde_json::from_str(&texts(p)[0]).unwrap();
            // A page that starts deep in the document shows the value it starts in (its
            // location in `shown`): the structuredContent holds it where that location says.
            assert!(carries_within(got, &page), "budget {budget} page {i}");
        }
        assert_eq!(
            reassemble_text_pages(&pages),
            Some(sc.clone()),
            "budget {budget}: the text pages put back together are the structuredContent"
        );
    }
}

#[test]
fn a_small_structured_content_only_result_passes_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary_with_schema(2000, &dir);
    let r = json!({"content": [], "structuredContent": report(2)});
    assert_eq!(b.shape_call_result("report", r.clone(), 0), r);
}

#[test]
fn structured_content_beside_an_unrelated_text_counts_and_follows_its_pages() {
    let sc = report(60);
    let validator = jsonschema::validator_for(&report_schema()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let b = boundary_with_schema(700, &dir);
    let r =
        json!({"content": [{"type": "text", "text": "Found 60 files."}], "structuredContent": sc});
    let first = b.shape_call_result("report", r, 0);
    assert_eq!(texts(&first)[0], "Found 60 files.");
    let pages = follow_visible(&b, first, 700);
    assert!(validator.is_valid(&pages[0]["structuredContent"]));
    // Later pages carry the structuredContent page they show, valid too.
    for p in &pages[1..] {
        if let Some(got) = p.get("structuredContent") {
            assert!(validator.is_valid(got), "{got}");
        }
    }
    // The query input is [the text, the structuredContent].
    let id = meta(&pages[0]).unwrap()["response_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = b
        .answer_injected(&json!({"name": "query_response",
            "arguments": {"response_id": id, "query": ".[1].files | length"}}))
        .unwrap();
    assert_eq!(texts(&out)[0], "60");
}

#[test]
fn without_an_output_schema_pages_carry_the_page_itself() {
    let sc = report(100);
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(1000, &dir);
    b.shape_list_result(
        json!({"tools": [{"name": "report", "inputSchema": {"type": "object"}}]}),
        true,
    );
    let first = b.shape_call_result("report", json!({"content": [], "structuredContent": sc}), 0);
    let pages = follow_visible(&b, first, 1000);
    for p in &pages {
        let page: Value = serde_json::from_str(&texts(p)[0]).unwrap();
        assert_eq!(p["structuredContent"], page);
    }
    assert_eq!(reassemble_text_pages(&pages), Some(sc));
}

#[test]
fn summary_mode_counts_the_reduced_structured_content() {
    use mcp_budget_proxy::config::{ConfigFile, Settings};
    let file = ConfigFile::parse(
        "[defaults]\noverflow = \"summary\"\n",
        std::path::Path::new("t.toml"),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let b = Boundary::new(Settings {
        max_tokens: Some(400),
        file: Some(file),
        blob_dir: Some(dir.path().to_path_buf()),
        ..Settings::default()
    })
    .unwrap();
    b.shape_list_result(
        json!({"tools": [{"name": "report", "inputSchema": {"type": "object"},
            "outputSchema": report_schema()}]}),
        true,
    );
    let out = b.shape_call_result(
        "report",
        json!({"content": [], "structuredContent": report(440)}),
        0,
    );
    let env: Value = serde_json::from_str(texts(&out).last().unwrap()).unwrap();
    assert_eq!(env["elided"], true, "{env}");
    let sc = &out["structuredContent"];
    let validator = jsonschema::validator_for(&report_schema()).unwrap();
    assert!(validator.is_valid(sc), "{sc}");
    assert!(visible(&out) <= 400, "{}", visible(&out));
}
