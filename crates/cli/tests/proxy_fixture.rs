//! `mcp-budget proxy -- mcp-budget fixture-server`, driven over pipes: the relay's behaviour
//! with a real (deterministic) MCP server, in both protocol eras, with shaping on.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod proxy_support;
use proxy_support::{Proxy, STEP, visible_tokens};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

fn start(flags: &[&str], fixture_flags: &[&str]) -> Proxy {
    let mut upstream = vec![BIN, "fixture-server"];
    upstream.extend_from_slice(fixture_flags);
    Proxy::start(flags, &upstream)
}

fn request(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn call(id: Value, tool: &str, arguments: Value) -> String {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

fn initialize(proxy: &mut Proxy) {
    proxy.send(&request(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {}},
               "clientInfo": {"name": "test", "version": "0"}}),
    ));
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], 0, "{msg}");
    assert_eq!(msg["result"]["protocolVersion"], "2025-06-18", "{msg}");
    proxy.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
}

fn tool_names(result: &Value) -> Vec<String> {
    result["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn tools_list_gets_the_injected_tools_in_both_protocol_eras() {
    let mut proxy = start(&[], &[]);
    initialize(&mut proxy);
    proxy.send(&request(json!("l"), "tools/list", json!({})));
    let msg = proxy.recv_json();
    let names = tool_names(&msg["result"]);
    assert!(names.iter().any(|n| n == "directory_tree"), "{names:?}");
    assert!(names.iter().any(|n| n == "read_more"), "{names:?}");
    assert!(names.iter().any(|n| n == "query_response"), "{names:?}");

    let mut proxy = start(&[], &["--protocol", "2026-07-28"]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    proxy.send(&request(
        json!(1),
        "server/discover",
        json!({"_meta": meta}),
    ));
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], 1, "{msg}");
    assert!(msg["result"].is_object(), "{msg}");
    proxy.send(&request(json!(2), "tools/list", json!({"_meta": meta})));
    let msg = proxy.recv_json();
    assert_eq!(msg["result"]["resultType"], "complete", "{msg}");
    let names = tool_names(&msg["result"]);
    assert!(names.iter().any(|n| n == "read_more"), "{names:?}");
    proxy.send(&request(
        json!(3),
        "tools/call",
        json!({"name": "echo", "arguments": {"a": 1}, "_meta": meta}),
    ));
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], 3, "{msg}");
    assert_eq!(msg["result"]["resultType"], "complete", "{msg}");
    assert_eq!(msg["result"]["content"][0]["text"], r#"{"a":1}"#, "{msg}");

    // A paged result, and the proxy's own answer to read_more, carry resultType too.
    proxy.send(&request(
        json!(4),
        "tools/call",
        json!({"name": "directory_tree", "arguments": {"entries": 3000}, "_meta": meta}),
    ));
    let msg = proxy.recv_json();
    assert_eq!(msg["result"]["resultType"], "complete", "{msg}");
    let items = msg["result"]["content"].as_array().expect("content");
    let page_meta: Value =
        serde_json::from_str(items.last().and_then(|i| i["text"].as_str()).unwrap_or(""))
            .expect("meta item");
    let cursor = page_meta["next_cursor"].as_str().expect("paged").to_owned();
    proxy.send(&request(
        json!(5),
        "tools/call",
        json!({"name": "read_more", "arguments": {"cursor": cursor}, "_meta": meta}),
    ));
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], 5, "{msg}");
    assert_eq!(msg["result"]["resultType"], "complete", "{msg}");
}

#[test]
fn a_slow_call_does_not_hold_up_later_ones() {
    let mut proxy = start(&[], &[]);
    initialize(&mut proxy);
    proxy.send(&call(json!(1), "slow", json!({"ms": 1500})));
    proxy.send(&call(json!(2), "echo", json!({"b": 2})));
    let first = proxy.recv_json();
    assert_eq!(first["id"], 2, "{first}");
    let second = proxy.recv_json();
    assert_eq!(second["id"], 1, "{second}");
    assert_eq!(second["result"]["content"][0]["text"], "slept 1500 ms");
}

#[test]
fn a_big_result_is_shaped_while_small_ones_pass() {
    let mut proxy = start(&["--max-tokens", "2000"], &[]);
    initialize(&mut proxy);
    proxy.send(&request(json!("l"), "tools/list", json!({})));
    proxy.recv_json();
    // About 5 MB of pretty JSON, then small calls right behind it.
    proxy.send(&call(
        json!("big"),
        "directory_tree",
        json!({"entries": 60000}),
    ));
    for i in 0..5 {
        proxy.send(&call(json!(i), "echo", json!({"i": i})));
    }
    let mut big = None;
    let mut small = 0;
    for _ in 0..6 {
        let msg = proxy.recv_json();
        if msg["id"] == "big" {
            big = Some(msg);
        } else {
            assert_eq!(
                msg["result"]["content"][0]["text"],
                json!({"i": msg["id"]}).to_string()
            );
            small += 1;
        }
    }
    assert_eq!(small, 5);
    let big = big.expect("the big result");
    let result = &big["result"];
    assert!(
        visible_tokens(result) <= 2000,
        "{} tokens",
        visible_tokens(result)
    );
    let items = result["content"].as_array().expect("content");
    let meta: Value =
        serde_json::from_str(items.last().and_then(|i| i["text"].as_str()).unwrap_or(""))
            .expect("meta item is JSON");
    assert_eq!(meta["truncated"], true, "{meta}");
    let cursor = meta["next_cursor"]
        .as_str()
        .expect("next_cursor")
        .to_owned();

    // read_more is answered by the proxy, never the server.
    proxy.send(&call(json!("more"), "read_more", json!({"cursor": cursor})));
    let page2 = proxy.recv_json();
    assert_eq!(page2["id"], "more", "{page2}");
    assert!(page2["result"].get("isError").is_none(), "{page2}");
    assert!(visible_tokens(&page2["result"]) <= 2000);
}

#[test]
fn a_garbage_line_from_the_server_is_dropped_and_its_call_still_answered() {
    let mut proxy = start(&[], &[]);
    initialize(&mut proxy);
    proxy.send(&call(json!(7), "garbage", json!({})));
    // recv() checks every stdout line is JSON: the garbage line never reaches the client.
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], 7, "{msg}");
    assert_eq!(msg["result"]["content"][0]["text"], "ok");
    let stderr = proxy.wait_for_stderr("fixture garbage");
    assert!(stderr.contains("fixture garbage"), "{stderr}");
}

#[test]
fn progress_and_log_notifications_arrive_in_order_before_the_result() {
    let mut proxy = start(&[], &[]);
    initialize(&mut proxy);
    proxy.send(&request(
        json!(8),
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 20}, "_meta": {"progressToken": "p8"}}),
    ));
    for step in 1..=20 {
        let msg = proxy.recv_json();
        assert_eq!(msg["method"], "notifications/progress", "{msg}");
        assert_eq!(msg["params"]["progress"], step, "{msg}");
    }
    let msg = proxy.recv_json();
    assert_eq!(msg["method"], "notifications/message", "{msg}");
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], 8, "{msg}");
}

#[test]
fn the_server_asks_the_client_for_roots_through_the_proxy() {
    let mut proxy = start(&[], &[]);
    initialize(&mut proxy);
    proxy.send(&call(json!(9), "roots", json!({})));
    let ask = proxy.recv_json();
    assert_eq!(ask["method"], "roots/list", "{ask}");
    let answer = json!({"jsonrpc": "2.0", "id": ask["id"],
                        "result": {"roots": [{"uri": "file:///work", "name": "work"}]}});
    proxy.send(&answer.to_string());
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], 9, "{msg}");
    let text = msg["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("file:///work"), "{msg}");
}

#[test]
fn a_crash_in_the_middle_of_a_call_fails_every_call_in_flight() {
    let mut proxy = start(&[], &[]);
    initialize(&mut proxy);
    proxy.send(&call(json!(10), "slow", json!({"ms": 60000})));
    proxy.send(&call(json!(11), "crash", json!({})));
    let mut ids = Vec::new();
    for _ in 0..2 {
        let msg = proxy.recv_json();
        assert_eq!(msg["error"]["code"], -32000, "{msg}");
        let message = msg["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("exited with status 70"), "{msg}");
        ids.push(msg["id"].as_i64().unwrap_or_default());
    }
    ids.sort_unstable();
    assert_eq!(ids, [10, 11]);
    let start = Instant::now();
    let status = proxy.wait(STEP);
    assert_eq!(status.code(), Some(70));
    assert!(start.elapsed() < Duration::from_secs(5));
}

/// Sends `lines` to the fixture directly and through the proxy; returns both transcripts (the
/// lines each client received, one per request sent).
fn transcripts(fixture_flags: &[&str], lines: &[String]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut direct = Proxy::spawn(
        std::process::Command::new(BIN)
            .arg("fixture-server")
            .args(fixture_flags),
    );
    let mut proxied = start(&[], fixture_flags);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for line in lines {
        let is_request = serde_json::from_str::<Value>(line).is_ok_and(|v| v.get("id").is_some());
        direct.send(line);
        proxied.send(line);
        if is_request {
            a.push(direct.recv());
            b.push(proxied.recv());
        }
    }
    (a, b)
}

#[test]
fn every_handshake_version_passes_byte_for_byte() {
    for version in [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
        "1999-01-01",
    ] {
        let lines = [
            request(
                json!(1),
                "initialize",
                json!({"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}, "_meta": {"x": 1}}),
            ),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":"p","method":"ping","params":{"_meta":{"progressToken":1}}}"#
                .to_owned(),
            r#"{"jsonrpc":"2.0","id":null,"method":"resources/list"}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":2.5,"method":"server/discover"}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}"#.to_owned(),
        ];
        let (direct, proxied) = transcripts(&[], &lines);
        for (d, p) in direct.iter().zip(&proxied) {
            assert_eq!(
                String::from_utf8_lossy(p),
                String::from_utf8_lossy(d),
                "version {version}"
            );
        }
        let init: Value = serde_json::from_slice(&proxied[0]).unwrap_or_default();
        let expected = if version == "1999-01-01" {
            "2025-11-25"
        } else {
            version
        };
        assert_eq!(init["result"]["protocolVersion"], expected);
    }
}

#[test]
fn stateless_requests_pass_byte_for_byte() {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
                      "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}});
    let old = json!({"io.modelcontextprotocol/protocolVersion": "2025-06-18",
                     "io.modelcontextprotocol/clientCapabilities": {}});
    let lines = [
        request(json!(1), "server/discover", json!({"_meta": meta})),
        request(
            json!("i"),
            "initialize",
            json!({"protocolVersion": "2025-06-18", "_meta": meta}),
        ),
        request(json!(2), "ping", json!({"_meta": meta})),
        request(json!(3), "ping", json!({"_meta": old})),
        request(json!(4), "prompts/list", json!({"_meta": meta})),
    ];
    let (direct, proxied) = transcripts(&["--protocol", "2026-07-28"], &lines);
    for (d, p) in direct.iter().zip(&proxied) {
        assert_eq!(String::from_utf8_lossy(p), String::from_utf8_lossy(d));
    }
    let discover: Value = serde_json::from_slice(&proxied[0]).unwrap_or_default();
    assert_eq!(discover["result"]["supportedVersions"][0], "2026-07-28");
    let refused: Value = serde_json::from_slice(&proxied[3]).unwrap_or_default();
    assert!(refused["error"]["code"].is_i64(), "{refused}");
}

#[test]
fn answers_still_reach_a_client_that_closed_its_input() {
    let mut proxy = start(&[], &[]);
    initialize(&mut proxy);
    proxy.send(&call(json!(1), "slow", json!({"ms": 400})));
    proxy.send(&call(json!(2), "directory_tree", json!({"entries": 3000})));
    proxy.close_stdin();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let msg = proxy.recv_json();
        assert!(msg.get("result").is_some(), "{msg}");
        ids.push(msg["id"].as_i64().unwrap_or_default());
    }
    ids.sort_unstable();
    assert_eq!(ids, [1, 2]);
    assert_eq!(proxy.wait(STEP).code(), Some(0));
}

#[test]
fn telemetry_has_one_record_per_call_with_the_upstream_time_and_no_payload() {
    let (log, log_flag) = fresh_log("calls");
    let mut proxy = start(&["--log", &log_flag, "--max-tokens", "1000"], &[]);
    initialize(&mut proxy);
    proxy.send(&call(json!(1), "slow", json!({"ms": 300})));
    assert_eq!(proxy.recv_json()["id"], 1);
    proxy.send(&call(json!(2), "directory_tree", json!({"entries": 2000})));
    assert_eq!(proxy.recv_json()["id"], 2);
    proxy.close_stdin();
    assert_eq!(proxy.wait(STEP).code(), Some(0));

    let (text, records) = read_records(&log);
    assert_eq!(records.len(), 2, "{text}");
    for field in [
        "ts",
        "tool",
        "bytes_pre",
        "bytes",
        "tokens_pre",
        "tokens",
        "upstream_ms",
        "shape_ms",
        "outcome",
    ] {
        assert!(
            records.iter().all(|r| r.get(field).is_some()),
            "{field} missing: {text}"
        );
    }
    assert_eq!(records[0]["tool"], "slow");
    let upstream_ms = records[0]["upstream_ms"].as_u64().unwrap_or(0);
    assert!(
        (300..5000).contains(&upstream_ms),
        "upstream_ms {upstream_ms}"
    );
    assert_eq!(records[1]["tool"], "directory_tree");
    assert_eq!(records[1]["outcome"], "paged", "{text}");
    assert!(
        !text.contains("slept") && !text.contains("children"),
        "payload in telemetry: {text}"
    );
}

/// Regression: a `tools/call` answered with a JSON-RPC error (by the server, or by the proxy when
/// the server crashed) wrote no telemetry record; DESIGN.md wants one per call.
#[test]
fn telemetry_records_calls_answered_with_an_error() {
    let (log, log_flag) = fresh_log("errors");
    let mut proxy = start(&["--log", &log_flag], &[]);
    initialize(&mut proxy);
    proxy.send(&call(json!(1), "no_such_tool", json!({})));
    let answer = proxy.recv_json();
    assert_eq!(answer["id"], 1);
    assert!(answer.get("error").is_some(), "{answer}");
    proxy.send(&call(json!(2), "crash", json!({})));
    let answer = proxy.recv_json();
    assert_eq!(answer["id"], 2);
    assert!(answer.get("error").is_some(), "{answer}");
    assert_eq!(proxy.wait(STEP).code(), Some(70));

    let (text, records) = read_records(&log);
    assert_eq!(records.len(), 2, "{text}");
    assert_eq!(records[0]["tool"], "no_such_tool");
    assert_eq!(records[1]["tool"], "crash");
    for r in &records {
        assert_eq!(r["outcome"], "error", "{text}");
        assert_eq!(r["tokens"], 0, "{text}");
    }
}

/// Issue 8 ("Also"): the telemetry log was created with mode 0644 (world-readable tool names
/// and times). A new log is 0600; an existing log, whatever its mode, is appended to.
#[cfg(unix)]
#[test]
fn a_new_telemetry_log_is_private_and_an_existing_one_is_appended_to() {
    use std::os::unix::fs::PermissionsExt;
    let (log, log_flag) = fresh_log("mode");
    for round in 0..2 {
        let mut proxy = start(&["--log", &log_flag], &[]);
        initialize(&mut proxy);
        proxy.send(&call(json!(1), "slow", json!({"ms": 1})));
        assert_eq!(proxy.recv_json()["id"], 1);
        proxy.close_stdin();
        assert_eq!(proxy.wait(STEP).code(), Some(0));
        let mode = std::fs::metadata(&log).expect("log").permissions().mode() & 0o777;
        if round == 0 {
            assert_eq!(mode, 0o600, "a new log: {mode:o}");
            // An older install left it world-readable: it is still appended to, as it is.
            std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        } else {
            assert_eq!(mode, 0o644, "an existing log keeps its mode: {mode:o}");
        }
    }
    let (text, records) = read_records(&log);
    assert_eq!(records.len(), 2, "{text}");
}

/// A fresh path for a telemetry log in the temp dir (removed if present), and its flag value.
fn fresh_log(tag: &str) -> (std::path::PathBuf, String) {
    let log = std::env::temp_dir().join(format!(
        "mcp-budget-telemetry-{tag}-{}-{:?}.jsonl",
        std::process::id(),
        Instant::now()
    ));
    let _ = std::fs::remove_file(&log);
    let flag = log.to_string_lossy().into_owned();
    (log, flag)
}

/// The records of a telemetry log (one JSON object per line); removes the file.
fn read_records(log: &std::path::Path) -> (String, Vec<Value>) {
    let text =
        std::fs::read_to_string(log).expect("telemetry log written by the time the proxy exits");
    let _ = std::fs::remove_file(log);
    let records = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    (text, records)
}
