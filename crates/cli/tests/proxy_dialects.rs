//! Issue 8 §4 and §5, through the real binary: JSON as Python servers write it (lone
//! surrogate escapes, `NaN`/`Infinity`/`-Infinity` literals), lines that start with a UTF-8
//! byte-order mark, and ids a server spells differently from the client. Every line a client
//! would accept without the proxy is still accepted: shaped within the budget where it is a
//! `tools/call` result, byte for byte otherwise, never turned into an error.
//!
//! The upstream is a small Python program: it echoes every line it receives as
//! `{"method":"test/received","params":{"line":…}}`, and writes the raw lines of a
//! `test/emit {"lines":[…]}` notification (so a test chooses the server's exact bytes).

use std::time::Duration;

use mcp_budget_core::dialect;
use serde_json::{Value, json};

mod proxy_support;
use proxy_support::{Proxy, STEP, visible_tokens};

const UPSTREAM: &str = r#"
import json, sys
out = sys.stdout.buffer
def write(b):
    out.write(b + b"\n")
    out.flush()
for raw in sys.stdin.buffer:
    line = raw[:-1] if raw.endswith(b"\n") else raw
    try:
        msg = json.loads(line)
    except Exception:
        msg = None
    if isinstance(msg, dict) and msg.get("method") == "test/emit":
        for l in msg["params"]["lines"]:
            write(l.encode("utf-8", "surrogatepass"))
        continue
    echo = {"jsonrpc": "2.0", "method": "test/received",
            "params": {"line": line.decode("utf-8", "surrogateescape")}}
    write(json.dumps(echo).encode())
"#;

const BUDGET: usize = 1000;

fn start(flags: &[&str]) -> Proxy {
    let mut all = vec!["--max-tokens", "1000"];
    all.extend_from_slice(flags);
    Proxy::start(&all, &["python3", "-c", UPSTREAM])
}

fn call(id: &str, tool: &str, arguments: Value) -> String {
    let params = json!({"name": tool, "arguments": arguments});
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
}

/// Sends a request and checks the upstream got it byte for byte.
fn forward(proxy: &mut Proxy, line: &str) {
    proxy.send(line);
    assert_eq!(proxy.received_by_upstream(), line);
}

/// The next line from the proxy, raw, and read as the JSON it is (in Python's dialect).
fn recv_dialect(proxy: &Proxy) -> (Vec<u8>, Value) {
    let raw = proxy
        .recv_raw_within(STEP)
        .unwrap_or_else(|| panic!("no line within {STEP:?}; stderr: {}", proxy.stderr_text()));
    let value = dialect::parse(&raw)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&raw)))
        .value;
    (raw, value)
}

/// The meta item (the last content item, parsed) of a paged result.
fn meta(result: &Value) -> Value {
    let text = result["content"]
        .as_array()
        .and_then(|items| items.last())
        .and_then(|i| i["text"].as_str())
        .unwrap_or_else(|| panic!("no meta item: {result}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("meta item is not JSON ({e}): {text}"))
}

/// Every page of a paged result, by following `read_more` from `first` (ids from 1000 on):
/// the body text of each page (its first content item).
fn pages(proxy: &mut Proxy, first: &Value) -> Vec<String> {
    let mut result = first.clone();
    let mut bodies = Vec::new();
    for n in 1000.. {
        assert!(
            visible_tokens(&result) <= BUDGET,
            "page over budget: {}",
            visible_tokens(&result)
        );
        bodies.push(
            result["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
        );
        let Some(cursor) = meta(&result)["next_cursor"].as_str().map(str::to_owned) else {
            return bodies;
        };
        proxy.send(&call(
            &n.to_string(),
            "read_more",
            json!({"cursor": cursor}),
        ));
        let (_, answer) = recv_dialect(proxy);
        assert_eq!(answer["id"], n, "{answer}");
        result = answer["result"].clone();
    }
    bodies
}

/// `query_response` on a response: the text of its first content item.
fn query(proxy: &mut Proxy, id: u64, response_id: &str, filter: &str) -> String {
    proxy.send(&call(
        &id.to_string(),
        "query_response",
        json!({"response_id": response_id, "query": filter}),
    ));
    let (_, answer) = recv_dialect(proxy);
    assert_eq!(answer["id"], id, "{answer}");
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// 1,500 file entries as Python's `json.dumps` writes a listing of non-UTF-8 names:
/// `[{"name":"report_\udcff_1.txt","size":1}, …]`, `\udcff` written as an escape.
fn python_listing() -> String {
    let entries: Vec<String> = (1..=1500)
        .map(|i| format!(r#"{{"name": "report_\udcff_{i}.txt", "size": {i}}}"#))
        .collect();
    format!("[{}]", entries.join(", "))
}

/// The entries of the pages of a paged listing, each page a JSON array of whole records.
fn listing_entries(bodies: &[String]) -> Vec<Value> {
    let mut entries = Vec::new();
    for body in bodies {
        let page: Value = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("a page of a JSON listing is not JSON ({e}): {body}"));
        let items = page
            .as_array()
            .unwrap_or_else(|| panic!("a page of an array is an array: {body}"));
        for item in items {
            assert!(
                item["name"].is_string() && item["size"].is_number(),
                "a record cut in two: {item}"
            );
            entries.push(item.clone());
        }
    }
    entries
}

fn assert_listing(proxy: &mut Proxy, result: &Value) {
    let response_id = meta(result)["response_id"]
        .as_str()
        .unwrap_or_else(|| panic!("a paged result has a response_id: {result}"))
        .to_owned();
    let entries = listing_entries(&pages(proxy, result));
    assert_eq!(entries.len(), 1500);
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(e["name"], format!("report_\u{fffd}_{}.txt", i + 1));
        assert_eq!(e["size"], i + 1);
    }
    assert_eq!(
        query(proxy, 1, &response_id, ".[0].name"),
        "report_\u{fffd}_1.txt"
    );
    assert_eq!(query(proxy, 2, &response_id, "length"), "1500");
}

/// Issue 8 §4: a text item holding a Python listing with lone surrogate escapes was paged as
/// plain text, cut mid-record, and `query_response` saw one string. Now it is read as JSON
/// (each escape U+FFFD): every page is a JSON array of whole records, and jq sees the array.
#[test]
fn a_python_listing_with_lone_surrogates_in_a_text_item_is_paged_as_json() {
    let mut proxy = start(&[]);
    forward(&mut proxy, &call("10", "ls", json!({})));
    let result = json!({"content": [{"type": "text", "text": python_listing()}]});
    proxy.emit(&[&format!(r#"{{"jsonrpc":"2.0","id":10,"result":{result}}}"#)]);
    let (_, answer) = recv_dialect(&proxy);
    assert_eq!(answer["id"], 10, "{answer}");
    assert_eq!(meta(&answer["result"])["truncated"], true, "{answer}");
    assert_listing(&mut proxy, &answer["result"]);
}

/// Issue 8 §4, on the wire: the same listing with its lone surrogates escaped in the line
/// itself (`json.dumps(..., ensure_ascii=False)` inside, `json.dumps` outside).
#[test]
fn a_python_listing_with_lone_surrogates_on_the_wire_is_paged_as_json() {
    let mut proxy = start(&[]);
    forward(&mut proxy, &call("11", "ls", json!({})));
    let listing = python_listing().replace(r"\udcff", "SURROGATE");
    let result = json!({"content": [{"type": "text", "text": listing}]});
    let line =
        format!(r#"{{"jsonrpc":"2.0","id":11,"result":{result}}}"#).replace("SURROGATE", r"\udcff");
    proxy.emit(&[&line]);
    let (_, answer) = recv_dialect(&proxy);
    assert_eq!(answer["id"], 11, "{answer}");
    assert_listing(&mut proxy, &answer["result"]);
    let stderr = proxy.wait_for_stderr("lone surrogate");
    assert!(stderr.contains("lone surrogate"), "{stderr}");
}

/// Issue 8 §5: lines with `NaN`, `Infinity`, `-Infinity` (Python's `json.dumps` default) were
/// dropped and their requests answered with -32603. Now: a line the proxy does not shape
/// passes byte for byte, both ways; a `tools/call` result is shaped with its literals kept.
#[test]
fn lines_with_nan_and_infinity_pass_and_are_never_errors() {
    let mut proxy = start(&[]);
    forward(&mut proxy, &call("3", "t", json!({})));
    let shaped = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"v":NaN}}}"#;
    proxy.emit(&[shaped]);
    let (raw, answer) = recv_dialect(&proxy);
    assert_eq!(answer["id"], 3, "{answer}");
    assert!(answer.get("error").is_none(), "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "ok", "{answer}");
    let raw = String::from_utf8_lossy(&raw);
    assert!(raw.contains(r#""structuredContent":{"v":NaN}"#), "{raw}");

    forward(
        &mut proxy,
        r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///a","_meta":{"w":NaN}}}"#,
    );
    let unshaped = [
        r#"{"jsonrpc":"2.0","id":4,"result":{"contents":[{"uri":"file:///a","text":"x"}],"_meta":{"score":NaN}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"loss":Infinity,"min":-Infinity,"s":"NaN"}}}"#,
        r#"{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"temperature":NaN}}"#,
        r#"{"jsonrpc":"2.0","id":999,"result":{"x":[NaN,Infinity,-Infinity]}}"#,
    ];
    proxy.emit(&unshaped);
    for line in unshaped {
        let (raw, _) = recv_dialect(&proxy);
        assert_eq!(String::from_utf8_lossy(&raw), line);
    }
    proxy.sync("after-nan");
    assert!(
        !proxy.stderr_text().contains("dropped"),
        "{}",
        proxy.stderr_text()
    );
}

/// Issue 8 §5: a big `tools/call` result whose JSON text holds `NaN` and `Infinity` (a text
/// item is a string, so they are text to the client; the proxy reads them as the JSON Python
/// meant) is paged as JSON within the budget, each literal on its page as it came, and jq sees
/// them; a `NaN` beside the content (in `_meta`) stays as it came.
#[test]
fn a_big_result_with_nan_is_paged_as_json_with_its_literals() {
    let mut proxy = start(&[]);
    forward(&mut proxy, &call("6", "scores", json!({})));
    let spell = |i: usize| match i % 3 {
        0 => "NaN".to_owned(),
        1 => "Infinity".to_owned(),
        _ => format!("{i}.5"),
    };
    let rows: Vec<String> = (0..2000)
        .map(|i| format!(r#"{{"i": {i}, "score": {}}}"#, spell(i)))
        .collect();
    let text = format!("[{}]", rows.join(", "));
    let result = json!({"content": [{"type": "text", "text": text}]}).to_string();
    let result = format!(
        r#"{}"_meta":{{"score":-Infinity}}}}"#,
        &result[..result.len() - 1]
    )
    .replacen(r#"]"_meta""#, r#"],"_meta""#, 1);
    proxy.emit(&[&format!(r#"{{"jsonrpc":"2.0","id":6,"result":{result}}}"#)]);
    let (raw, answer) = recv_dialect(&proxy);
    assert_eq!(answer["id"], 6, "{answer}");
    assert!(answer.get("error").is_none(), "{answer}");
    assert!(
        String::from_utf8_lossy(&raw).contains(r#""score":-Infinity"#),
        "the result's _meta lost its literal"
    );
    let result = answer["result"].clone();
    let response_id = meta(&result)["response_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut seen = 0;
    for body in pages(&mut proxy, &result) {
        let page = dialect::parse(body.as_bytes())
            .unwrap_or_else(|e| panic!("a page is not JSON even in Python's dialect ({e}): {body}"))
            .value;
        for row in page.as_array().into_iter().flatten() {
            let i = row["i"].as_u64().unwrap_or(u64::MAX) as usize;
            assert_eq!(i, seen, "{row}");
            let score = row["score"].as_number().map(|n| n.as_str().to_owned());
            assert_eq!(score, Some(spell(i)), "{row}");
            seen += 1;
        }
    }
    assert_eq!(seen, 2000);
    assert_eq!(query(&mut proxy, 7, &response_id, ".[0].score"), "NaN");
    assert_eq!(query(&mut proxy, 8, &response_id, ".[1].score"), "Infinity");
}

/// Issue 8 §5: a request that starts with a UTF-8 byte-order mark was dropped with no answer.
/// A line with a mark is read as if it had none, both ways (and forwarded without it).
#[test]
fn lines_with_a_byte_order_mark_are_read_as_if_they_had_none() {
    let mut proxy = start(&[]);
    let request = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t"}}"#;
    proxy.send(&format!("\u{feff}{request}"));
    assert_eq!(proxy.received_by_upstream(), request);
    let text = "word ".repeat(20_000);
    let answer = json!({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":text}]}});
    proxy.emit(&[&format!("\u{feff}{answer}")]);
    let (raw, answer) = recv_dialect(&proxy);
    assert!(!raw.starts_with("\u{feff}".as_bytes()));
    assert_eq!(answer["id"], 7, "{answer}");
    let tokens = visible_tokens(&answer["result"]);
    assert!(
        tokens <= BUDGET,
        "the answer with a mark was not shaped: {tokens}"
    );

    let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"é"}}"#;
    proxy.emit(&[&format!("\u{feff}{note}")]);
    assert_eq!(String::from_utf8_lossy(&proxy.recv()), note);
    proxy.sync("after-bom");
}

/// Issue 8 §5: ids are matched by value. A server that answers the client's `-0` with `0`,
/// or `1e3` with `1000.0`, still gets its result shaped, and the request gets no second
/// (timeout) answer. The answer keeps the server's spelling of the id (JSON-RPC asks for the
/// same value; the line is forwarded as the server wrote it, save the shaped result).
#[test]
fn ids_are_matched_by_value_not_spelling() {
    let mut proxy = start(&["--request-timeout", "1"]);
    let text = "word ".repeat(20_000);
    for (client, server) in [("-0", "0"), ("1e3", "1000.0"), ("7", "7.00e0")] {
        forward(&mut proxy, &call(client, "t", json!({})));
        let result = json!({"content":[{"type":"text","text":text}]});
        let line = format!(r#"{{"jsonrpc":"2.0","id":{server},"result":{result}}}"#);
        proxy.emit(&[&line]);
        let (raw, answer) = recv_dialect(&proxy);
        let raw = String::from_utf8_lossy(&raw);
        assert!(
            raw.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{server},"result":"#)),
            "{}",
            &raw[..80.min(raw.len())]
        );
        let tokens = visible_tokens(&answer["result"]);
        assert!(
            tokens <= BUDGET,
            "{client} answered as {server} was not shaped: {tokens}"
        );
        assert_eq!(meta(&answer["result"])["truncated"], true);
    }
    // Past the request timeout: no error for any of them comes after their answers.
    std::thread::sleep(Duration::from_millis(2500));
    proxy.sync("after-timeout");
    assert!(
        !proxy.stderr_text().contains("did not answer"),
        "{}",
        proxy.stderr_text()
    );
}
