//! Regressions of `mcp-budget proxy`, each named after the bug it guards against, driven over
//! pipes against the real binary.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod proxy_support;
use proxy_support::{Proxy, visible_tokens};

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

/// An upstream that answers every request with `{"jsonrpc":"2.0","id":<id>,"result":<argv[1]>}`,
/// the result's JSON text spliced in as given (so a test knows its exact bytes).
const RAW_RESULT_SERVER: &str = r#"
import json, sys
result = sys.argv[1]
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m:
        sys.stdout.write('{"jsonrpc":"2.0","id":' + json.dumps(m["id"]) + ',"result":' + result + '}\n')
        sys.stdout.flush()
"#;

/// Calls tool `t` through a proxy with a budget of 1,000 tokens in front of
/// [`RAW_RESULT_SERVER`] answering `raw_result`; returns the proxy and the answer, whose
/// envelope is checked.
fn call_raw(raw_result: &str) -> (Proxy, Value) {
    let mut proxy = Proxy::start(
        &["--max-tokens", "1000"],
        &["python3", "-c", RAW_RESULT_SERVER, raw_result],
    );
    proxy.send(&call(json!("c1"), "t", json!({})));
    let answer = proxy.recv_json();
    assert_eq!(answer["jsonrpc"], "2.0");
    assert_eq!(answer["id"], "c1");
    (proxy, answer)
}

/// Bug: a result with a lone surrogate escape (Python writes `"\udcff"` for a file name that
/// is not UTF-8) could not be parsed by serde_json and passed through unshaped: 100 KB
/// against a 1,000-token budget.
#[test]
fn a_lone_surrogate_in_a_result_does_not_escape_the_budget() {
    let text = format!("\\udcff.txt {}", "word ".repeat(20_000));
    let raw = json!({"content": [{"type": "text", "text": "PLACEHOLDER"}]})
        .to_string()
        .replace("PLACEHOLDER", &text);
    let (_proxy, answer) = call_raw(&raw);
    let result = &answer["result"];
    assert!(visible_tokens(result) <= 1000, "{}", visible_tokens(result));
    let page = result["content"][0]["text"].as_str().unwrap_or("");
    assert!(
        page.starts_with("\u{fffd}.txt word"),
        "{}",
        &page[..40.min(page.len())]
    );
    assert_eq!(meta(result)["truncated"], true);
}

/// Bug: a result nested deeper than serde_json's 128 levels passed through unshaped. It is
/// now paged as the JSON text it is, within the budget, and `read_more` reaches the rest: the
/// pages put together give back the result's text byte for byte.
#[test]
fn a_result_nested_too_deep_is_paged_as_text_within_the_budget() {
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let raw = format!(
        r#"{{"content":[{{"type":"text","text":"{}"}}],"structuredContent":{{"d":{deep}}},"isError":true}}"#,
        "word ".repeat(5_000)
    );
    let (mut proxy, answer) = call_raw(&raw);
    let mut result = answer["result"].clone();
    assert_eq!(result["isError"], true, "{result}");
    let mut text = String::new();
    for n in 2.. {
        assert!(
            visible_tokens(&result) <= 1000,
            "{}",
            visible_tokens(&result)
        );
        text.push_str(result["content"][0]["text"].as_str().unwrap_or(""));
        let Some(cursor) = meta(&result)["next_cursor"].as_str().map(str::to_owned) else {
            break;
        };
        proxy.send(&call(json!(n), "read_more", json!({"cursor": cursor})));
        let more = proxy.recv_json();
        assert_eq!(more["id"], n, "{more}");
        result = more["result"].clone();
    }
    assert_eq!(text, raw);
}
