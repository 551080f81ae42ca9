//! Regressions of `mcp-budget proxy`, each named after the bug it guards against, driven over
//! pipes against the real binary.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod proxy_support;
use proxy_support::Proxy;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

fn call(id: Value, tool: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
    .to_string()
}

/// The meta item (the last content item, parsed) of a paged result.
fn meta(result: &Value) -> Value {
    let items = result["content"].as_array().expect("content items");
    let text = items
        .last()
        .and_then(|i| i["text"].as_str())
        .expect("meta text");
    serde_json::from_str(text).expect("meta item is JSON")
}

/// Bug: `query_response` with a jq filter that never yields (`def f: f; f`) was awaited inside
/// the client read loop and jq checked its time limit only between outputs, so no later
/// request was forwarded and the proxy did not exit after stdin closed.
#[test]
fn a_runaway_jq_query_neither_stalls_the_relay_nor_blocks_exit() {
    let mut proxy = Proxy::start(&["--max-tokens", "1000"], &[BIN, "fixture-server"]);
    proxy.send(&call(json!(1), "directory_tree", json!({})));
    let tree = proxy.recv_json();
    let id = meta(&tree["result"])["response_id"]
        .as_str()
        .expect("a paged result has a response_id")
        .to_owned();

    let asked = Instant::now();
    proxy.send(&call(
        json!(2),
        "query_response",
        json!({"response_id": id, "query": "def f: f; f"}),
    ));
    proxy.send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    // The ping goes through while the query runs.
    let pong = proxy.recv_json_within(Duration::from_secs(5));
    assert_eq!(pong["id"], 3, "{pong}");
    assert!(asked.elapsed() < Duration::from_secs(5));

    // Closing stdin while the query runs: the query is still answered, and the proxy exits.
    proxy.close_stdin();
    let answer = proxy.recv_json_within(Duration::from_secs(30));
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("too long"), "{text}");
    let status = proxy.wait(Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
}
