//! What the boundary writes outside the result: offloaded blobs, telemetry lines, and the
//! config file it reads (precedence, transform).

mod boundary_util;

use std::os::unix::fs::PermissionsExt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use boundary_util::*;
use mcp_budget_core::tokens::Encoding;
use mcp_budget_core::wire::TelemetryRecord;
use mcp_budget_proxy::boundary::Boundary;
use mcp_budget_proxy::config::{ConfigError, Settings};
use serde_json::{Value, json};

/// A PNG header (signature + IHDR) for `w`×`h`, padded to `len` bytes.
fn png(w: u32, h: u32, len: usize) -> Vec<u8> {
    let mut v = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    v.extend_from_slice(&13u32.to_be_bytes());
    v.extend_from_slice(b"IHDR");
    v.extend_from_slice(&w.to_be_bytes());
    v.extend_from_slice(&h.to_be_bytes());
    v.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    v.resize(len.max(v.len()), 7);
    v
}

fn check_file(desc: &Value, expect: &[u8]) {
    let path = desc["path"].as_str().unwrap();
    let meta = std::fs::metadata(path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{path}");
    let dir = std::path::Path::new(path).parent().unwrap();
    assert_eq!(
        std::fs::metadata(dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(std::fs::read(path).unwrap(), expect);
    assert_eq!(desc["bytes"], expect.len());
}

#[test]
fn recorded_image_stays_inline_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(10_000, &dir);
    let r = fixture("everything.call1.get-tiny-image.json");
    let out = b.shape_call_result("get-tiny-image", r.clone(), 1);
    assert_eq!(
        out["content"], r["content"],
        "a 20x20 image (1 token) fits: kept as it came"
    );
}

#[test]
fn recorded_image_is_offloaded_with_its_pixel_size() {
    let dir = tempfile::tempdir().unwrap();
    // `images = "file"`: every image over the blob threshold goes to a file.
    let b = Boundary::new(Settings {
        max_tokens: Some(10_000),
        blob_dir: Some(dir.path().join("blobs")),
        jq_worker: jq_worker(),
        file: Some(
            mcp_budget_proxy::config::ConfigFile::parse(
                "[defaults]\nimages = \"file\"",
                std::path::Path::new("t.toml"),
            )
            .unwrap(),
        ),
        ..Settings::default()
    })
    .unwrap();
    let r = fixture("everything.call1.get-tiny-image.json");
    let data = r["content"][1]["data"].as_str().unwrap().to_owned();
    let out = b.shape_call_result("get-tiny-image", r, 1);
    let items = out["content"].as_array().unwrap();
    assert_eq!(items.len(), 3, "the image item became a text item in place");
    assert!(items.iter().all(|i| i["type"] == "text"));
    let desc: Value = serde_json::from_str(items[1]["text"].as_str().unwrap()).unwrap();
    assert_eq!(desc["offloaded"], "image");
    assert_eq!(desc["mimeType"], "image/png");
    assert_eq!(
        (desc["width"].as_u64(), desc["height"].as_u64()),
        (Some(20), Some(20))
    );
    check_file(&desc, &STANDARD.decode(data).unwrap());
    assert!(
        desc["path"]
            .as_str()
            .unwrap()
            .starts_with(dir.path().to_str().unwrap())
    );
    assert!(visible_tokens(&out, false) < 200);
}

#[test]
fn resource_blobs_and_base64_inside_json_text_are_offloaded() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(10_000, &dir);
    let pdf: Vec<u8> = b"%PDF-1.4 ".iter().copied().cycle().take(9000).collect();
    let shot = png(1280, 720, 6000);
    let payload = json!({"name": "report", "screenshot": STANDARD.encode(&shot),
        "thumb": format!("data:image/png;base64,{}", STANDARD.encode(png(64, 32, 5000)))});
    let r = json!({"content": [
        {"type": "text", "text": serde_json::to_string_pretty(&payload).unwrap()},
        {"type": "resource", "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": STANDARD.encode(&pdf)}}
    ]});
    let out = b.shape_call_result("report", r, 1);
    let t = texts(&out);
    assert_eq!(t.len(), 2);
    let v: Value = serde_json::from_str(&t[0]).unwrap();
    assert_eq!(v["name"], "report");
    assert_eq!(v["screenshot"]["width"], 1280);
    assert_eq!(v["screenshot"]["mimeType"], "image/png");
    check_file(&v["screenshot"], &shot);
    assert_eq!(v["thumb"]["height"], 32);
    let res: Value = serde_json::from_str(&t[1]).unwrap();
    assert_eq!(res["offloaded"], "blob");
    assert_eq!(res["mimeType"], "application/pdf");
    check_file(&res, &pdf);
    assert!(visible_tokens(&out, false) < 400);
}

#[test]
fn telemetry_writes_one_record_per_call_without_payload() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("t.jsonl");
    let b = Boundary::new(Settings {
        max_tokens: Some(300),
        log_path: Some(log.clone()),
        blob_dir: Some(dir.path().join("blobs")),
        ..Settings::default()
    })
    .unwrap();
    let tree = fixture("fs.call1.directory_tree.json");
    let pretty = tree["content"][0]["text"].as_str().unwrap().to_owned();
    let paged = b.shape_call_result("directory_tree", tree, 42);
    let small = fixture("everything.call2.get-structured-content.json");
    b.shape_call_result("get-structured-content", small, 3);
    b.shape_call_result(
        "get-tiny-image",
        fixture("everything.call1.get-tiny-image.json"),
        3,
    );
    let cursor = meta(&paged).unwrap()["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    b.answer_injected(&read_more(&cursor)).unwrap();
    b.flush_telemetry();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains(".git"), "no payload content in telemetry");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    for l in &lines {
        for key in [
            "ts",
            "tool",
            "bytes_pre",
            "bytes",
            "tokens_pre",
            "tokens",
            "upstream_ms",
            "shape_ms",
            "outcome",
            "response_id",
        ] {
            assert!(l.get(key).is_some(), "{key} missing in {l}");
        }
        let _: TelemetryRecord = serde_json::from_value(l.clone()).unwrap();
    }
    let first = &lines[0];
    assert_eq!(first["tool"], "directory_tree");
    assert_eq!(first["outcome"], "paged");
    assert_eq!(first["upstream_ms"], 42);
    assert_eq!(first["bytes_pre"], pretty.len());
    assert_eq!(first["tokens_pre"], Encoding::Cl100kBase.count(&pretty));
    assert_eq!(first["tokens"], visible_tokens(&paged, false));
    assert_eq!(first["response_id"], meta(&paged).unwrap()["response_id"]);
    assert!(first["ts"].as_str().unwrap().ends_with('Z'));
    assert_eq!(lines[1]["outcome"], "fit");
    assert_eq!(lines[1]["response_id"], Value::Null);
    // A 20×20 image fits (`images = "auto"`): kept inline, nothing offloaded.
    assert_eq!(lines[2]["outcome"], "fit");
    assert_eq!(lines[3]["tool"], "read_more");
    assert_eq!(lines[3]["outcome"], "paged");
}

const CONFIG: &str = r#"
[defaults]
max_tokens = 400
precision = 3

[tools.precise]
precision = 0

[tools.tiny]
max_tokens = 256
transform = 'del(.. | .duration_ns?)'
"#;

fn rows_result(n: usize) -> Value {
    let rows: Vec<Value> = (0..n)
        .map(|i| json!({"id": i, "x": 1.23456789012345, "duration_ns": 123456789}))
        .collect();
    json!({"content": [{"type": "text", "text": serde_json::to_string(&rows).unwrap()}]})
}

#[test]
fn config_file_rules_and_precedence() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp-budget.toml");
    std::fs::write(&path, CONFIG).unwrap();
    let make = |flag: Option<usize>| {
        Boundary::new(Settings {
            max_tokens: flag,
            config_path: Some(path.clone()),
            blob_dir: Some(dir.path().join("blobs")),
            ..Settings::default()
        })
        .unwrap()
    };
    // [defaults] apply when no flag: 400 tokens, 3 digits.
    let b = make(None);
    let out = b.shape_call_result("any", rows_result(200), 1);
    assert!(visible_tokens(&out, false) <= 400);
    assert!(visible_tokens(&out, false) > 300);
    assert!(texts(&out)[0].contains("\"x\":1.23,"), "{}", texts(&out)[0]);
    // Per-tool precision beats [defaults].
    let out = b.shape_call_result("precise", rows_result(2), 1);
    assert!(texts(&out)[0].contains("1.23456789012345"));
    // Per-tool transform runs before shaping.
    let out = b.shape_call_result("tiny", rows_result(3), 1);
    assert!(
        !texts(&out)[0].contains("duration_ns"),
        "{}",
        texts(&out)[0]
    );
    // A flag beats [defaults]; a per-tool rule beats the flag.
    let b = make(Some(2000));
    let out = b.shape_call_result("any", rows_result(1000), 1);
    assert!(visible_tokens(&out, false) > 1000);
    assert!(visible_tokens(&out, false) <= 2000);
    let out = b.shape_call_result("tiny", rows_result(1000), 1);
    assert!(visible_tokens(&out, false) <= 256);
}

#[test]
fn bad_config_is_an_error_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "[tools.x]\ntransform = '.[ | foo'\n").unwrap();
    let e = Boundary::new(Settings {
        config_path: Some(path.clone()),
        ..Settings::default()
    })
    .unwrap_err();
    assert!(matches!(e, ConfigError::Transform { .. }), "{e}");
    std::fs::write(&path, "[defaults]\nmax_tokens = \"many\"\n").unwrap();
    let e = Boundary::new(Settings {
        config_path: Some(path),
        ..Settings::default()
    })
    .unwrap_err();
    assert!(matches!(e, ConfigError::Toml { .. }), "{e}");
}
