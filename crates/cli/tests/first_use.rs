//! What a new user tripped on (issue 13), each a regression through the built binary.

use std::process::{Command, Output};

use serde_json::{Value, json};

mod proxy_support;
use proxy_support::{Proxy, visible_tokens};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

/// The OS error text of a missing file, as Rust's `std::io::Error` prints it.
const ENOENT: &str = "No such file or directory (os error 2)";

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mcp-budget")
}

/// Asserts that `args` failed with a message on stderr naming `os_error` exactly once, and
/// returns that stderr.
fn fails_naming_once(args: &[&str], os_error: &str) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "{args:?} succeeded; stderr: {stderr}"
    );
    assert_eq!(
        stderr.matches(os_error).count(),
        1,
        "{args:?}: the OS error must be named exactly once; stderr: {stderr}"
    );
    if args.first() == Some(&"proxy") {
        // In proxy mode stdout is the protocol channel.
        assert!(out.stdout.is_empty(), "{args:?} wrote to stdout");
    }
    stderr
}

/// Bug: `cannot read config file nonexist.toml: No such file or directory (os error 2): No
/// such file or directory (os error 2)`: the thiserror message embedded its source and
/// anyhow's `{:#}` printed the source again.
#[test]
fn a_path_error_names_the_os_error_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nonexist.toml");
    let missing = missing.to_str().expect("UTF-8 temp path");
    let no_dir_log = dir.path().join("no-such-dir").join("log.jsonl");
    let no_dir_log = no_dir_log.to_str().expect("UTF-8 temp path");
    let a_dir = dir.path().to_str().expect("UTF-8 temp path");

    let stderr = fails_naming_once(&["proxy", "--config", missing, "--", BIN], ENOENT);
    assert_eq!(
        stderr,
        format!("mcp-budget: cannot read config file {missing}: {ENOENT}\n")
    );

    let stderr = fails_naming_once(&["proxy", "--log", no_dir_log, "--", BIN], ENOENT);
    assert_eq!(
        stderr,
        format!("mcp-budget: cannot open telemetry log {no_dir_log}: {ENOENT}\n")
    );

    // A directory given as the log file: another OS error, named once too.
    let stderr = fails_naming_once(
        &["proxy", "--log", a_dir, "--", BIN],
        "Is a directory (os error 21)",
    );
    assert!(stderr.starts_with(&format!("mcp-budget: cannot open telemetry log {a_dir}: ")));

    // The upstream command that does not exist.
    let no_program = dir.path().join("no-such-server");
    let no_program = no_program.to_str().expect("UTF-8 temp path");
    let stderr = fails_naming_once(&["proxy", "--", no_program], ENOENT);
    assert!(
        stderr.contains("cannot start the upstream server"),
        "{stderr}"
    );

    // The other subcommands that read files.
    fails_naming_once(&["measure", missing], ENOENT);
    fails_naming_once(&["shape", missing], ENOENT);
    // `report` goes on past an unreadable log (its table names it) but exits non-zero.
    fails_naming_once(&["report", missing], ENOENT);
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

fn fixture_proxy(budget: &str) -> Proxy {
    Proxy::start(&["--max-tokens", budget], &[BIN, "fixture-server"])
}

/// The meta item of a paged result, parsed.
fn meta(result: &Value) -> Value {
    let text = result["content"]
        .as_array()
        .and_then(|items| items.last())
        .and_then(|item| item["text"].as_str())
        .unwrap_or_else(|| panic!("no meta item in {result}"));
    serde_json::from_str(text).expect("the meta item is JSON")
}

/// The parsed text of an `isError` result's one text item.
fn error_of(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "not an error: {result}");
    let text = result["content"][0]["text"].as_str().expect("error text");
    serde_json::from_str(text).expect("the error text is JSON")
}

/// Pages the fixture's `directory_tree` and returns the proxy and page 1's meta item.
fn paged_tree(budget: &str) -> (Proxy, Value) {
    let mut proxy = fixture_proxy(budget);
    proxy.send(&call(json!(1), "directory_tree", json!({})));
    let msg = proxy.recv_json();
    let m = meta(&msg["result"]);
    assert!(m["next_cursor"].is_string(), "not paged: {m}");
    (proxy, m)
}

/// Bug: `read_more {"cursor":"…","max_tokens":"abc"}` was answered as if `max_tokens` were
/// absent. Arguments of an injected tool that do not match its inputSchema are an
/// `invalid_arguments` error naming the argument and why, within the budget.
#[test]
fn injected_tools_refuse_arguments_that_do_not_match_their_schema() {
    let budget = 256;
    let (mut proxy, m) = paged_tree(&budget.to_string());
    let cursor = m["next_cursor"].as_str().expect("cursor").to_owned();
    let id = m["response_id"].as_str().expect("response_id").to_owned();
    let long = "9".repeat(5000);
    let cases = [
        (
            "read_more",
            json!({"cursor": cursor, "max_tokens": "abc"}),
            "max_tokens",
            "must be an integer ≥ 1; got the string \"abc\"",
        ),
        (
            "read_more",
            json!({"cursor": cursor, "max_tokens": "700"}),
            "max_tokens",
            "must be an integer ≥ 1; got the string \"700\"",
        ),
        (
            "read_more",
            json!({"cursor": cursor, "max_tokens": 0}),
            "max_tokens",
            "must be an integer ≥ 1; got the number 0",
        ),
        (
            "read_more",
            json!({"cursor": cursor, "max_tokens": -3}),
            "max_tokens",
            "must be an integer ≥ 1; got the number -3",
        ),
        (
            "read_more",
            json!({"cursor": cursor, "max_tokens": 2.5}),
            "max_tokens",
            "must be an integer ≥ 1; got the number 2.5",
        ),
        (
            "read_more",
            json!({"max_tokens": 300}),
            "cursor",
            "missing: this argument (string) is required",
        ),
        (
            "read_more",
            json!({"cursor": 1}),
            "cursor",
            "must be a string; got the number 1",
        ),
        (
            "read_more",
            json!([cursor]),
            "arguments",
            "must be a JSON object; got an array [\"",
        ),
        (
            "read_more",
            // A 5000-digit number: quoted cut, the result within the budget.
            serde_json::from_str(&format!(r#"{{"cursor":{long}}}"#)).expect("JSON"),
            "cursor",
            "must be a string; got the number 9999",
        ),
        (
            "query_response",
            json!({"response_id": id}),
            "query",
            "missing: this argument (string) is required",
        ),
        (
            "query_response",
            json!({"response_id": id, "query": ["length"]}),
            "query",
            "must be a string; got an array [\"length\"]",
        ),
    ];
    for (i, (tool, arguments, argument, reason)) in cases.into_iter().enumerate() {
        proxy.send(&call(json!(i + 10), tool, arguments.clone()));
        let msg = proxy.recv_json();
        let result = &msg["result"];
        let e = error_of(result);
        assert_eq!(e["error"], "invalid_arguments", "{arguments}: {e}");
        assert_eq!(e["argument"], argument, "{arguments}: {e}");
        let got = e["reason"].as_str().expect("reason");
        assert!(got.starts_with(reason), "{arguments}: {got:?}");
        let hint = e["hint"].as_str().expect("hint");
        assert!(hint.starts_with(&format!("Call {tool} again")), "{hint}");
        assert!(
            visible_tokens(result) <= budget,
            "{arguments}: {} tokens",
            visible_tokens(result)
        );
    }
    // Unknown members are ignored (the schema allows them); integral floats are integers;
    // small positive integers count as the smallest page.
    for arguments in [
        json!({"cursor": cursor, "page": 2}),
        json!({"cursor": cursor, "max_tokens": 300.0}),
        json!({"cursor": cursor, "max_tokens": 1}),
    ] {
        proxy.send(&call(json!("ok"), "read_more", arguments.clone()));
        let msg = proxy.recv_json();
        let result = &msg["result"];
        assert!(result.get("isError").is_none(), "{arguments}: {result}");
        assert_eq!(meta(result)["response_id"], id.as_str(), "{arguments}");
        assert!(visible_tokens(result) <= budget, "{arguments}");
    }
}

/// Bug: a cursor sent to another server's proxy got only "unknown … use a next_cursor
/// exactly as …". The hint says whose cursor it is and how clients name each server's tools.
#[test]
fn a_cursor_sent_to_another_servers_proxy_says_whose_it_is() {
    let (_first, m) = paged_tree("1000");
    let mut second = fixture_proxy("1000");
    let cursor = m["next_cursor"].as_str().expect("cursor");
    second.send(&call(json!(1), "read_more", json!({"cursor": cursor})));
    let msg = second.recv_json();
    let e = error_of(&msg["result"]);
    assert_eq!(e["error"], "cursor_invalid");
    assert_eq!(e["reason"], "unknown");
    let hint = e["hint"].as_str().expect("hint");
    for part in [
        "belong to the server (proxy) whose result gave them",
        "clients prefix tool names per server",
        "Claude Code: mcp__<server>__read_more",
        "call the read_more of the server whose result carried the cursor",
    ] {
        assert!(hint.contains(part), "{part:?} not in {hint:?}");
    }
}

/// Bug: descriptions that promise pretty-printed / 2-space indented output described what
/// the proxy no longer sends. They get a note; other descriptions stay as they were.
#[test]
fn descriptions_promising_indentation_say_the_output_is_compacted() {
    let mut proxy = fixture_proxy("1000");
    proxy.send(&request(json!(1), "tools/list", json!({})));
    let msg = proxy.recv_json();
    let tools = msg["result"]["tools"].as_array().expect("tools");
    let description = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t["description"].as_str())
            .unwrap_or_else(|| panic!("no tool {name}"))
            .to_owned()
    };
    assert_eq!(
        description("directory_tree"),
        "A recursive tree of a generated directory as pretty JSON (2-space indent). \
         (mcp-budget: JSON output is compacted, without indentation.)"
    );
    assert_eq!(
        description("structured"),
        "Items with scores as structuredContent (with an outputSchema) and a JSON text twin."
    );
    for tool in tools {
        let d = tool["description"].as_str().unwrap_or_default();
        if tool["name"] != "directory_tree" {
            assert!(!d.contains("mcp-budget: JSON output"), "{tool}");
        }
    }
}
