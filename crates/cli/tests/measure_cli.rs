//! `mcp-budget measure` driven through the binary: the tables (snapshots), `--json`, directories,
//! stdin, flags, and per-file errors that never stop the run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Runs `mcp-budget measure <args>` in the fixtures directory (so paths in output are short).
fn measure(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("measure")
        .args(args)
        .current_dir(fixtures())
        .stdin(Stdio::null())
        .output()
        .expect("run mcp-budget")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).expect("--json prints one JSON value")
}

/// A fresh scratch directory under cargo's per-target tmp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("measure_cli_{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

#[test]
fn table_of_a_pretty_json_document() {
    let o = measure(&["measure_sample.json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    insta::assert_snapshot!("sample_json_table", stdout(&o));
}

#[test]
fn table_of_a_tools_call_line_with_structured_twin() {
    let o = measure(&["everything.call2.get-structured-content.json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    insta::assert_snapshot!("tools_call_table", stdout(&o));
}

#[test]
fn table_of_a_tools_list() {
    let o = measure(&["--top", "5", "fs.tools.json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    insta::assert_snapshot!("tools_list_table", out);
    // --top 5 keeps five paths.
    assert!(out.contains("(top 5 of "), "{out}");
}

#[test]
fn json_output_has_the_documented_fields() {
    let o = measure(&["--json", "fs.call1.directory_tree.json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(
        v["encodings"],
        serde_json::json!(["cl100k_base", "o200k_base"])
    );
    assert_eq!(v["errors"], serde_json::json!([]));
    assert!(v.get("total").is_none(), "one file has no total");
    let f = &v["files"][0];
    assert_eq!(f["path"], "fs.call1.directory_tree.json");
    assert_eq!(f["kind"], "tools_call");
    let parts: Vec<&str> = f["size"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["part"].as_str().unwrap())
        .collect();
    assert_eq!(parts, ["line", "text_items", "structured_content"]);
    let line = &f["size"][0];
    for key in ["bytes", "chars", "chars4", "tokens", "estimate_error_pct"] {
        assert!(line.get(key).is_some(), "size row lacks {key}");
    }
    // The file is one JSON-RPC line of 50384 bytes plus its newline.
    assert_eq!(line["bytes"], 50384);
    assert_eq!(line["chars4"], 50384 / 4);
    let names: Vec<&str> = f["what_ifs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["compact", "table", "drop_structured_twin"]);
    let w = &f["what_ifs"][0];
    for key in [
        "part",
        "tokens_before",
        "tokens_after",
        "saved_pct",
        "changed",
    ] {
        assert!(w.get(key).is_some(), "what-if lacks {key}");
    }
    // tokens_before of `compact` on the text items is the text_items size row.
    assert_eq!(w["tokens_before"], f["size"][1]["tokens"]);
    let fs = &f["field_share"];
    assert_eq!(fs["part"], "text_items");
    assert_eq!(fs["rows"].as_array().unwrap().len(), 15);
    for key in [
        "path",
        "count",
        "chars",
        "chars_pct",
        "tokens",
        "tokens_pct",
    ] {
        assert!(fs["rows"][0].get(key).is_some(), "field row lacks {key}");
    }
    assert!(f.get("tools").is_none());
}

#[test]
fn encodings_are_repeatable_and_ordered() {
    let o = measure(&[
        "--json",
        "--encoding",
        "bytes",
        "--encoding",
        "chars4",
        "measure_sample.json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["encodings"], serde_json::json!(["bytes", "chars4"]));
    let row = &v["files"][0]["size"][0];
    // `bytes` counts bytes; `chars4` is the estimate itself, so its error is 0.
    assert_eq!(row["tokens"]["bytes"], row["bytes"]);
    assert_eq!(row["tokens"]["chars4"], row["chars4"]);
    assert_eq!(row["estimate_error_pct"]["chars4"], 0.0);

    let o = measure(&["--encoding", "nope", "measure_sample.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown encoding"), "{}", stderr(&o));
}

#[test]
fn stdin_is_measured() {
    let mut child = Command::new(BIN)
        .args(["measure", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"Hello, world!").unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    let f = &v["files"][0];
    assert_eq!(f["path"], "-");
    assert_eq!(f["kind"], "text");
    assert_eq!(f["size"][0]["tokens"]["cl100k_base"], 4);
}

/// `--encoding bytes --encoding bytes` printed `{"bytes":12,"bytes":12}` (duplicate keys) and
/// two identical columns.
#[test]
fn a_repeated_encoding_is_measured_once() {
    let path = scratch("repeat_encoding").join("a.json");
    std::fs::write(&path, br#"{"a":[1,2]}"#).unwrap();
    let p = path.to_str().unwrap();
    let o = measure(&[
        "--json",
        "--encoding",
        "bytes",
        "--encoding",
        "chars4",
        "--encoding",
        "bytes",
        p,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(r#""tokens":{"bytes":11,"chars4":3}"#),
        "{text}"
    );
    assert_eq!(
        json(&o)["encodings"],
        serde_json::json!(["bytes", "chars4"])
    );
}

/// A second `-` read standard input again, found it at its end and measured an empty text.
#[test]
fn a_repeated_stdin_argument_measures_the_same_bytes() {
    let mut child = Command::new(BIN)
        .args(["measure", "--json", "-", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"Hello, world!").unwrap();
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    for f in [&v["files"][0], &v["files"][1]] {
        assert_eq!(f["path"], "-");
        assert_eq!(f["size"][0]["bytes"], 13);
    }
}

#[test]
fn directory_with_bad_files_reports_each_and_exits_non_zero() {
    let dir = scratch("dir");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("a.json"),
        r#"{"id":"3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d"}"#,
    )
    .unwrap();
    std::fs::write(dir.join("bad.json"), r#"{"a": [1, 2"#).unwrap();
    std::fs::write(dir.join("binary.txt"), b"ok \xff\xfe not utf-8").unwrap();
    std::fs::write(dir.join("sub/note.txt"), "plain words\n").unwrap();
    std::fs::copy(
        fixtures().join("everything.call2.get-structured-content.json"),
        dir.join("sub/call.json"),
    )
    .unwrap();

    let o = Command::new(BIN)
        .args(["measure"])
        .arg(&dir)
        .arg(dir.join("missing.json"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    // One line per failing file, naming it and why.
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[0].contains("bad.json: invalid JSON"), "{err}");
    assert!(
        lines[1].contains("binary.txt: invalid UTF-8 at byte 3"),
        "{err}"
    );
    assert!(lines[2].contains("missing.json: cannot read"), "{err}");
    // The others are measured: one row each and a total row.
    let out = stdout(&o);
    assert!(out.contains("== 3 files =="), "{out}");
    for name in [
        "a.json (json)",
        "call.json (tools_call)",
        "note.txt (text)",
        "| total",
    ] {
        assert!(out.contains(name), "missing {name}: {out}");
    }
    // Directory files get a row, not a full report.
    assert!(!out.contains("1. Size"), "{out}");

    let o = Command::new(BIN)
        .args(["measure", "--json"])
        .arg(&dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    assert_eq!(v["files"].as_array().unwrap().len(), 3);
    assert_eq!(v["errors"].as_array().unwrap().len(), 2);
    assert_eq!(v["total"]["files"], 3);
    let total = &v["total"]["size"];
    assert_eq!(total["part"], "total");
    let sum: u64 = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["size"][0]["tokens"]["cl100k_base"].as_u64().unwrap())
        .sum();
    assert_eq!(total["tokens"]["cl100k_base"], sum);
    let names: Vec<&str> = v["total"]["what_ifs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["uuid_prefix", "drop_structured_twin"]);
}

#[test]
fn non_json_extension_is_measured_as_text_not_an_error() {
    let dir = scratch("text");
    std::fs::write(dir.join("notes.md"), "{ not json").unwrap();
    let o = Command::new(BIN)
        .args(["measure", "--json"])
        .arg(dir.join("notes.md"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json(&o)["files"][0]["kind"], "text");
}

/// A `read_graph` response recorded from @modelcontextprotocol/server-memory 2026.8.31 (the
/// version tests/e2e pins) after creating 18 entities whose names and observations hold UUIDs.
#[test]
fn memory_read_graph_shows_the_uuid_cost() {
    let o = measure(&["--json", "memory.call.read_graph.json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let f = &json(&o)["files"][0];
    assert_eq!(f["kind"], "tools_call");
    // Hex-heavy JSON: chars/4 under-counts by more than a quarter.
    let err = f["size"][1]["estimate_error_pct"]["cl100k_base"]
        .as_f64()
        .unwrap();
    assert!(err < -25.0, "{err}");
    let w = f["what_ifs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "uuid_prefix")
        .unwrap();
    assert_eq!(w["changed"], 42);
    assert!(
        w["saved_pct"]["cl100k_base"].as_f64().unwrap() > 25.0,
        "{w}"
    );
    // structuredContent repeats the text item's JSON.
    assert!(
        f["what_ifs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["name"] == "drop_structured_twin")
    );
    // Names (with UUIDs) cost a larger share of tokens than of characters.
    let rows = f["field_share"]["rows"].as_array().unwrap();
    let name = rows
        .iter()
        .find(|r| r["path"] == "$.entities[*].name")
        .unwrap();
    assert!(
        name["tokens_pct"]["cl100k_base"].as_f64() > name["chars_pct"].as_f64(),
        "{name}"
    );
}
