//! `mcp-budget shape` end to end: the built binary on a generated 5 MB JSON file; every page
//! within the budget, the pages reassembled from the wire (bodies + `shown`) equal to the input.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use mcp_budget_core::paginate::{Document, reassemble_from_wire};
use mcp_budget_core::tokens::Encoding;
use serde_json::{Value, json};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mcp-budget"))
}

fn temp_file(name: &str, contents: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-budget-shape-{}-{name}", std::process::id()));
    std::fs::write(&path, contents).expect("write a temp file");
    path
}

/// About 5 MB: a directory tree with one huge subtree, rows with 17-digit floats, a long string.
fn five_megabytes() -> Value {
    let mut seed: u64 = 42;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        seed >> 33
    };
    let mut dirs = Vec::new();
    for d in 0..300 {
        let files: Vec<Value> = (0..120)
            .map(|f| json!({"name": format!("file_{f}_{:x}.rs", next()), "type": "file"}))
            .collect();
        dirs.push(json!({"name": format!("dir_{d}"), "type": "directory", "children": files}));
    }
    let rows: Vec<Value> = (0..12_000)
        .map(|i| {
            json!({"id": i, "x": (i as f64) * 1.234_567_891_234_567, "y": 1.0 / (i as f64 + 7.0), "big": 12_345_678_901_234_567_890u64})
        })
        .collect();
    json!([
        {"name": "README.md", "type": "file"},
        {"name": "src", "type": "directory", "children": dirs},
        {"name": "rows", "type": "table", "rows": rows},
        {"name": "notes", "type": "file", "text": "naïve café 東京 🚀 \"q\"\r\n".repeat(20_000)},
    ])
}

#[test]
fn shape_all_pages_a_5_mb_file_within_budget_and_reassembles() {
    let value = five_megabytes();
    let raw = serde_json::to_string_pretty(&value).expect("serialize");
    assert!(raw.len() > 5_000_000, "{} bytes", raw.len());
    let path = temp_file("five.json", raw.as_bytes());
    let budget = 10_000;
    let out = bin()
        .args(["shape", "--all", "--max-tokens", &budget.to_string()])
        .arg(&path)
        .output()
        .expect("run mcp-budget shape");
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 output");

    let e = Encoding::Cl100kBase;
    let mut wire: Vec<(Value, Option<String>)> = Vec::new();
    let mut id = String::new();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() > 100, "{} pages", lines.len());
    for (i, line) in lines.iter().enumerate() {
        let v: Value = serde_json::from_str(line).expect("each line is JSON");
        let page = &v["page"];
        let meta = &v["meta"];
        let body = serde_json::to_string(page).expect("re-serialize");
        let meta_text = serde_json::to_string(meta).expect("re-serialize");
        let tokens = e.count(&body) + e.count(&meta_text);
        assert!(tokens <= budget, "page {} has {tokens} tokens", i + 1);
        // Dense: every page but the last is well filled.
        if i + 1 < lines.len() {
            assert!(
                tokens > budget * 3 / 4,
                "page {} has only {tokens} tokens",
                i + 1
            );
            assert_eq!(
                meta["next_cursor"],
                json!(format!(
                    "{}.{}",
                    meta["response_id"].as_str().unwrap(),
                    i + 1
                ))
            );
        } else {
            assert!(meta.get("next_cursor").is_none());
        }
        if i == 0 {
            id = meta["response_id"]
                .as_str()
                .expect("a response id")
                .to_owned();
            assert_eq!(id.len(), 12);
        }
        assert_eq!(meta["response_id"], json!(id));
        assert_eq!(meta["truncated"], json!(true));
        wire.push((page.clone(), v["location"].as_str().map(str::to_owned)));
    }
    let pages: Vec<(Value, Option<&str>)> = wire
        .iter()
        .map(|(v, s)| (v.clone(), s.as_deref()))
        .collect();
    let back = reassemble_from_wire(&pages).expect("the pages merge");
    let expected: Value = serde_json::from_str(&Document::Json(value).render(9)).expect("render");
    assert!(back == expected, "reassembled pages differ from the input");
}

#[test]
fn shape_prints_page_1_then_the_meta_line() {
    let rows: Vec<Value> = (0..2000)
        .map(|i| json!({"id": i, "v": 0.1 + i as f64}))
        .collect();
    let raw = serde_json::to_string(&json!({"name": "t", "rows": rows})).unwrap();
    let path = temp_file("page1.json", raw.as_bytes());
    let out = bin()
        .args(["shape", "--max-tokens", "500"])
        .arg(&path)
        .output()
        .expect("run");
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2);
    let page: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(page["name"], json!("t"));
    let meta: Value = serde_json::from_str(lines[1]).unwrap();
    let n = page["rows"].as_array().unwrap().len();
    assert_eq!(meta["shown"], json!(format!("$.rows[0:{n}]")));
    let id = meta["response_id"].as_str().unwrap();
    assert_eq!(meta["next_cursor"], json!(format!("{id}.1")));
    assert!(meta["hint"].as_str().unwrap().contains("read_more"));
    let e = Encoding::Cl100kBase;
    assert!(e.count(lines[0]) + e.count(lines[1]) <= 500);
}

#[test]
fn shape_reads_text_from_stdin_and_pages_by_lines() {
    let text: String = (1..=400)
        .map(|i| format!("line {i}: something happened\n"))
        .collect();
    let mut child = bin()
        .args(["shape", "--max-tokens", "300", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let (body, meta) = stdout.trim_end().rsplit_once('\n').unwrap();
    assert!(text.starts_with(body));
    let shown_lines = body.lines().count();
    let meta: Value = serde_json::from_str(meta).unwrap();
    assert_eq!(
        meta["shown"],
        json!(format!("lines 1-{shown_lines} of 400"))
    );
    assert_eq!(meta["next_start_line"], json!(shown_lines + 1));
}

#[test]
fn shape_prints_a_fitting_input_whole_without_meta() {
    let path = temp_file("small.json", br#"{ "a": [1, 2.25, 0.30000000000000004] }"#);
    let out = bin()
        .args(["shape", "--all"])
        .arg(&path)
        .output()
        .expect("run");
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"page\":{\"a\":[1,2.25,0.3]}}\n"
    );
}

/// `shape` read `MCP_BUDGET_MAX_TOKENS` but not the encoding and precision variables the proxy
/// reads, so with those set it did not show what the proxy would.
#[test]
fn shape_reads_encoding_and_precision_from_the_environment_like_the_proxy() {
    let path = temp_file("env.json", br#"{"x":247.13061935179246}"#);
    let rounded = bin()
        .args(["shape"])
        .arg(&path)
        .env("MCP_BUDGET_PRECISION", "3")
        .output()
        .expect("run");
    let bad_encoding = bin()
        .args(["shape"])
        .arg(&path)
        .env("MCP_BUDGET_ENCODING", "no_such_encoding")
        .output()
        .expect("run");
    let _ = std::fs::remove_file(&path);
    assert!(rounded.status.success());
    assert_eq!(
        String::from_utf8(rounded.stdout).unwrap(),
        "{\"x\":247.0}\n"
    );
    assert_eq!(bad_encoding.status.code(), Some(2));
}

/// Issue 8 §3: `{"<a 20,000-character key>":1,"other":[0,…,1999]}` and a 5,000-digit number at
/// 500 were paged as raw text (`line 1 of 1 (chars …)`). Every page is now a JSON value within
/// the budget, and the pages merged by their full `location` give the document back.
#[test]
fn shape_all_cuts_a_long_key_and_a_long_number_into_json_pages() {
    let key = "key ".repeat(5000);
    let other: Vec<u32> = (0..2000).collect();
    let digits: String = (0..5000)
        .map(|i| char::from(b'1' + (i % 9) as u8))
        .collect();
    let inputs = [
        format!("{{{}:1,\"other\":{}}}", json!(key), json!(other)),
        format!("[{digits}]"),
        format!("{{\"n\":{digits},\"after\":[1,2,3]}}"),
    ];
    for (n, raw) in inputs.iter().enumerate() {
        let path = temp_file(&format!("oversized_{n}.json"), raw.as_bytes());
        let out = bin()
            .args(["shape", "--all", "--max-tokens", "500"])
            .arg(&path)
            .output()
            .expect("run mcp-budget shape");
        let _ = std::fs::remove_file(&path);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).expect("UTF-8 output");
        let e = Encoding::Cl100kBase;
        let mut wire: Vec<(Value, Option<String>)> = Vec::new();
        for (i, line) in stdout.lines().enumerate() {
            let v: Value = serde_json::from_str(line).expect("each line is JSON");
            let page = &v["page"];
            assert!(
                page.is_object() || page.is_array(),
                "page {i} is not a JSON value: {page:.80}"
            );
            let meta = serde_json::to_string(&v["meta"]).expect("re-serialize");
            let body = serde_json::to_string(page).expect("re-serialize");
            let tokens = e.count(&body) + e.count(&meta);
            assert!(tokens <= 500, "input {n} page {i}: {tokens} tokens");
            assert!(
                !v["meta"]["shown"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("line")
            );
            wire.push((page.clone(), v["location"].as_str().map(str::to_owned)));
        }
        assert!(wire.len() > 3, "{} pages", wire.len());
        let pages: Vec<(Value, Option<&str>)> = wire
            .iter()
            .map(|(v, s)| (v.clone(), s.as_deref()))
            .collect();
        let back = reassemble_from_wire(&pages).expect("the pages merge");
        let expected: Value = serde_json::from_str(raw).expect("input is JSON");
        assert!(back == expected, "input {n}: reassembled pages differ");
    }
}
