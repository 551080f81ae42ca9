//! Issue 15 through the binary: `[tools_list]` (allow/deny, compacted definitions, deferred
//! tools) with `mcp-budget proxy --config … -- mcp-budget fixture-server`.

use std::io::Write;

use mcp_budget_core::tokens::Encoding;
use mcp_budget_core::tooldefs::definition_tokens;
use serde_json::{Value, json};

mod proxy_support;
use proxy_support::Proxy;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

fn request(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn call(id: u64, tool: &str, arguments: Value) -> String {
    request(
        json!(id),
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// A proxy in front of the fixture server with `config` as its TOML file, initialized.
fn start(config: &str) -> (Proxy, tempfile::NamedTempFile) {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(config.as_bytes()).unwrap();
    let path = file.path().to_str().unwrap().to_owned();
    let mut proxy = Proxy::start(&["--config", &path], &[BIN, "fixture-server"]);
    proxy.send(&request(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "test", "version": "0"}}),
    ));
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], 0, "{msg}");
    proxy.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    (proxy, file)
}

fn list(proxy: &mut Proxy) -> Vec<Value> {
    proxy.send(&request(json!("l"), "tools/list", json!({})));
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], "l", "{msg}");
    msg["result"]["tools"].as_array().unwrap().clone()
}

fn result(proxy: &mut Proxy, line: &str, id: u64) -> Value {
    proxy.send(line);
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], id, "{msg}");
    msg["result"].clone()
}

fn text0(result: &Value) -> Value {
    let t = result["content"][0]["text"].as_str().unwrap();
    serde_json::from_str(t).unwrap_or_else(|_| json!(t))
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

fn upstream_tools() -> Vec<Value> {
    let (mut p, _f) = start("");
    list(&mut p)
        .into_iter()
        .filter(|t| !["read_more", "query_response"].contains(&t["name"].as_str().unwrap()))
        .collect()
}

#[test]
fn denied_tools_are_hidden_and_refused_without_a_trip_upstream() {
    let (mut p, _f) = start("[tools_list]\ndeny = [\"crash\", \"garb*\"]\n");
    let tools = list(&mut p);
    let n = names(&tools);
    assert!(!n.contains(&"crash") && !n.contains(&"garbage"), "{n:?}");
    assert!(n.contains(&"echo"));
    // `crash` would kill the fixture server: the next call proves nothing was forwarded.
    let r = result(&mut p, &call(1, "crash", json!({})), 1);
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(
        text0(&r),
        json!({"error": "tool_refused", "tool": "crash", "rule": "[tools_list] deny rule \"crash\"",
               "hint": "This proxy's configuration does not allow this tool."})
    );
    let r = result(&mut p, &call(2, "garbage", json!({})), 2);
    assert_eq!(text0(&r)["rule"], "[tools_list] deny rule \"garb*\"");
    let r = result(&mut p, &call(3, "echo", json!({"x": 1})), 3);
    assert_eq!(text0(&r), json!({"x": 1}));
}

#[test]
fn allow_list_keeps_only_matching_tools() {
    let (mut p, _f) = start("[tools_list]\nallow = [\"echo\", \"table_*\"]\n");
    let tools = list(&mut p);
    assert_eq!(
        names(&tools),
        ["table_rows", "echo", "read_more", "query_response"]
    );
    let r = result(&mut p, &call(1, "long_text", json!({})), 1);
    assert!(
        text0(&r)["rule"].as_str().unwrap().contains("allow list"),
        "{r}"
    );
}

#[test]
fn compacted_list_keeps_output_schemas_and_annotations() {
    let upstream = upstream_tools();
    let (mut p, _f) = start(
        "[tools_list]\ndescription_max_tokens = 12\nproperty_description_max_tokens = 4\ncompact = true\n",
    );
    let tools = list(&mut p);
    let enc = Encoding::Cl100kBase;
    assert_eq!(tools.len(), upstream.len() + 2);
    let (mut before, mut after) = (0, 0);
    for (u, c) in upstream.iter().zip(&tools) {
        assert_eq!(u["name"], c["name"]);
        assert_eq!(u.get("outputSchema"), c.get("outputSchema"));
        assert_eq!(u.get("annotations"), c.get("annotations"));
        let d = c["description"].as_str().unwrap();
        // The compact-JSON note may follow a cut description.
        let cut = d.split(" (mcp-budget:").next().unwrap();
        assert!(enc.count(cut) <= 12, "{d}");
        before += definition_tokens(u, &enc);
        after += definition_tokens(c, &enc);
    }
    assert!(after < before, "{before} -> {after}");
    let tree = &tools[0];
    assert_eq!(tree["name"], "directory_tree");
    assert!(
        tree["description"].as_str().unwrap().contains('…'),
        "{tree}"
    );
}

#[test]
fn deferred_mode_finds_and_calls_tools_like_direct_calls() {
    let config = "[tools_list]\nmode = \"defer\"\npinned = [\"echo\"]\ndeny = [\"crash\"]\n\
                  [tools.table_rows]\nmax_tokens = 300\n";
    let (mut p, _f) = start(config);
    let tools = list(&mut p);
    assert_eq!(
        names(&tools),
        [
            "echo",
            "find_tools",
            "call_tool",
            "read_more",
            "query_response"
        ]
    );
    let enc = Encoding::Cl100kBase;
    let fixed: usize = tools.iter().map(|t| definition_tokens(t, &enc)).sum();
    assert!(fixed < 400, "{fixed}");

    let found = result(
        &mut p,
        &call(1, "find_tools", json!({"query": "table rows"})),
        1,
    );
    let defs = text0(&found)["tools"].as_array().unwrap().clone();
    assert_eq!(defs[0]["name"], "table_rows", "{found}");
    assert!(defs[0]["inputSchema"]["properties"]["rows"].is_object());
    let none = result(&mut p, &call(2, "find_tools", json!({"query": "zzzz"})), 2);
    assert!(
        text0(&none)["names"]
            .as_array()
            .unwrap()
            .contains(&json!("long_text"))
    );

    // call_tool: the real tool's rule (max_tokens = 300) shapes it, exactly like a direct call.
    let via = result(
        &mut p,
        &call(
            3,
            "call_tool",
            json!({"name": "table_rows", "arguments": {"rows": 400}}),
        ),
        3,
    );
    let direct = result(&mut p, &call(4, "table_rows", json!({"rows": 400})), 4);
    assert_eq!(via, direct);
    assert!(proxy_support::visible_tokens(&via) <= 300);
    let cursor = via["_meta"]["mcp-budget/page"]["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let page2 = result(&mut p, &call(5, "read_more", json!({"cursor": cursor})), 5);
    assert!(page2.get("isError").is_none(), "{page2}");

    let echoed = result(
        &mut p,
        &call(
            6,
            "call_tool",
            json!({"name": "echo", "arguments": {"a": [1]}}),
        ),
        6,
    );
    assert_eq!(text0(&echoed), json!({"a": [1]}));
    let refused = result(&mut p, &call(7, "call_tool", json!({"name": "crash"})), 7);
    assert_eq!(text0(&refused)["error"], "tool_refused");
    let unknown = result(&mut p, &call(8, "call_tool", json!({"name": "nope"})), 8);
    assert_eq!(text0(&unknown)["error"], "unknown_tool");
    let bad = result(
        &mut p,
        &call(9, "call_tool", json!({"name": "echo", "arguments": [1]})),
        9,
    );
    assert_eq!(text0(&bad)["argument"], "arguments");
    // The server still answers: nothing refused reached it.
    let r = result(&mut p, &call(10, "echo", json!({})), 10);
    assert_eq!(text0(&r), json!({}));
}
