//! `--log-format json` (and `MCP_BUDGET_LOG_FORMAT=json`): every stderr line of `serve` and
//! `proxy` is one JSON object with the fields OpenTelemetry collectors map (`timestamp`,
//! `level`, `target`, `message`) and attributes (`mcp.session.id`, `gen_ai.tool.name`,
//! `mcp_budget.tokens` …); no bearer token, whole session id or payload appears; stdout stays
//! the protocol channel.

use std::time::Duration;

use serde_json::{Value, json};

mod proxy_support;
mod serve_support;
use proxy_support::Proxy;
use serve_support::Serve;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");
const TOKEN: &str = "secret-token-7f3a";

/// Every line of `stderr` as a JSON object with the required fields.
fn events(stderr: &str) -> Vec<Value> {
    stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            for key in ["timestamp", "level", "target", "message"] {
                assert!(v[key].is_string(), "{key} missing: {l}");
            }
            // RFC 3339, UTC.
            let ts = v["timestamp"].as_str().unwrap();
            assert!(
                ts.len() >= 20 && ts.ends_with('Z') && &ts[10..11] == "T",
                "{ts}"
            );
            assert!(
                ["ERROR", "WARN", "INFO", "DEBUG"].contains(&v["level"].as_str().unwrap()),
                "{l}"
            );
            v
        })
        .collect()
}

fn call_event<'a>(events: &'a [Value], tool: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["gen_ai.tool.name"] == tool)
        .unwrap_or_else(|| panic!("no call event of {tool}: {events:?}"))
}

#[test]
fn serve_writes_one_json_object_per_stderr_line() {
    let serve = Serve::fixture(&[
        "--log-format",
        "json",
        "--auth-token",
        TOKEN,
        "--max-tokens",
        "600",
    ]);
    let session = serve.initialize(Some(TOKEN));
    let first = serve.call(
        &session,
        Some(TOKEN),
        1,
        "table_rows",
        json!({"rows": 120, "seed": 1}),
    );
    let cursor = first["result"]["_meta"]["mcp-budget/page"]["next_cursor"]
        .as_str()
        .expect("paged")
        .to_owned();
    let more = serve.call(
        &session,
        Some(TOKEN),
        2,
        "read_more",
        json!({"cursor": cursor}),
    );
    assert!(more["result"]["isError"].is_null(), "{more}");
    let stderr = serve.wait_for_stderr("\"gen_ai.tool.name\":\"read_more\"");
    let all = events(&stderr);
    assert!(
        all.iter().any(|e| e["message"]
            .as_str()
            .unwrap()
            .starts_with("serving http://")),
        "{stderr}"
    );
    let started = all
        .iter()
        .find(|e| e["mcp_budget.event"] == "started")
        .expect("a session start event");
    assert_eq!(started["level"], "INFO");
    assert_eq!(started["mcp.session.id"], json!(&session[..8]));
    let shaped = call_event(&all, "table_rows");
    assert_eq!(shaped["target"], "mcp_budget::call");
    assert_eq!(shaped["mcp_budget.outcome"], "paged");
    assert!(
        shaped["mcp_budget.tokens"].as_u64().unwrap() > 0,
        "{shaped}"
    );
    assert!(
        shaped["mcp_budget.bytes_pre"].as_u64().unwrap()
            > shaped["mcp_budget.bytes"].as_u64().unwrap()
    );
    assert!(shaped["mcp_budget.shape_ms"].is_u64() && shaped["mcp_budget.upstream_ms"].is_u64());
    let paged = call_event(&all, "read_more");
    assert!(paged["mcp_budget.tokens"].as_u64().unwrap() > 0, "{paged}");
    // Never logged: the token, the whole session id, the cursor, any payload.
    for secret in [TOKEN, &session, &cursor, "\"rows\""] {
        assert!(!stderr.contains(secret), "{secret} in {stderr}");
    }
}

#[test]
fn proxy_takes_the_format_from_the_environment_and_keeps_stdout_for_the_protocol() {
    let mut proxy = Proxy::spawn(
        std::process::Command::new(BIN)
            .args(["proxy", "--max-tokens", "600", "--", BIN, "fixture-server"])
            .env("MCP_BUDGET_LOG_FORMAT", "json"),
    );
    proxy.send(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},
            "clientInfo":{"name":"test","version":"0"}}})
        .to_string(),
    );
    assert_eq!(proxy.recv_json()["id"], 0);
    proxy.send(
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                "params":{"name":"table_rows","arguments":{"rows": 120, "seed": 2}}})
        .to_string(),
    );
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], 1, "{msg}");
    // A line that is not JSON-RPC on stdout would have failed recv_json above; and none left.
    proxy.close_stdin();
    proxy.wait(Duration::from_secs(10));
    assert!(proxy.lines_left().is_empty());
    let all = events(&proxy.stderr_text());
    let shaped = call_event(&all, "table_rows");
    assert_eq!(shaped["mcp_budget.outcome"], "paged");
}

#[test]
fn a_bad_format_name_is_refused() {
    let out = std::process::Command::new(BIN)
        .args(["proxy", "--log-format", "xml", "--", BIN, "fixture-server"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("text or json"));
}
