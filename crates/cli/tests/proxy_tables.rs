//! Issue 12 §2 through the binary: `tables = "auto"` writes arrays of objects as header +
//! rows, explains the form once in the tool's description, keeps every page within the
//! budget, and a client that decodes each page body (`mcp_budget_core::table::decode`) and
//! merges by `_meta["mcp-budget/page"].location` gets the tree back; `query_response` sees
//! JSON; without the option nothing changes.

use std::path::{Path, PathBuf};

use mcp_budget_core::paginate::reassemble_from_wire;
use mcp_budget_core::table::{self, EXPLANATION};
use serde_json::{Value, json};

mod proxy_support;
use proxy_support::{Proxy, visible_tokens};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");
const BUDGET: usize = 2_000;

fn config(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "mcp-budget-tables-{}-{name}.toml",
        std::process::id()
    ));
    std::fs::write(&path, text).expect("write the config");
    path
}

fn start(cfg: &Path) -> Proxy {
    let budget = BUDGET.to_string();
    let cfg = cfg.to_str().expect("UTF-8 path");
    Proxy::start(
        &["--max-tokens", &budget, "--config", cfg],
        &[BIN, "fixture-server"],
    )
}

fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn call(id: u64, tool: &str, arguments: Value) -> String {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// The description of `tool` in `tools/list`.
fn description(proxy: &mut Proxy, tool: &str) -> String {
    proxy.send(&request(100, "tools/list", json!({})));
    let listed = proxy.recv_json();
    listed["result"]["tools"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["name"] == tool))
        .and_then(|t| t["description"].as_str())
        .unwrap_or("")
        .to_owned()
}

/// Every page of `directory_tree` (`entries` entries): (result, body, location).
fn pages(proxy: &mut Proxy, entries: u64) -> Vec<(Value, String, Option<String>)> {
    proxy.send(&call(1, "directory_tree", json!({"entries": entries})));
    let mut answer = proxy.recv_json();
    let mut out = Vec::new();
    for k in 2u64.. {
        assert!(k < 5_000, "cursors do not end");
        let result = answer["result"].clone();
        let body = result["content"][0]["text"]
            .as_str()
            .expect("a text item")
            .to_owned();
        let pm = result["_meta"].get("mcp-budget/page").cloned();
        let location = pm
            .as_ref()
            .and_then(|p| p["location"].as_str())
            .map(str::to_owned);
        let next = pm
            .as_ref()
            .and_then(|p| p["next_cursor"].as_str())
            .map(str::to_owned);
        out.push((result, body, location));
        let Some(cursor) = next else { return out };
        proxy.send(&call(k, "read_more", json!({"cursor": cursor})));
        answer = proxy.recv_json();
    }
    out
}

/// The fixture's tree as JSON (its text item, compacted).
fn direct_tree(entries: u64) -> Value {
    let mut fixture = Proxy::spawn(std::process::Command::new(BIN).arg("fixture-server"));
    fixture.send(&request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    ));
    let _ = fixture.recv_json();
    fixture.send(&call(1, "directory_tree", json!({"entries": entries})));
    let r = fixture.recv_json();
    serde_json::from_str(r["result"]["content"][0]["text"].as_str().expect("text")).expect("JSON")
}

#[test]
fn tables_auto_pages_are_tables_within_budget_and_reassemble() {
    let cfg = config("auto", "[defaults]\ntables = \"auto\"\n");
    let mut proxy = start(&cfg);
    assert!(description(&mut proxy, "directory_tree").ends_with(EXPLANATION));
    // The injected tools do not get the explanation.
    assert!(!description(&mut proxy, "read_more").contains(EXPLANATION));
    let pages = pages(&mut proxy, 3_000);
    assert!(pages.len() > 1);
    let mut wire = Vec::new();
    for (result, body, location) in &pages {
        let used = visible_tokens(result);
        assert!(used <= BUDGET, "{used} > {BUDGET}");
        assert_eq!(result["_meta"]["mcp-budget/page"]["tables"], json!(true));
        assert!(
            serde_json::from_str::<Value>(body).is_err(),
            "a table, not JSON: {body:.80}"
        );
        assert!(body.contains("]{name,type,children}:\n"), "{body:.120}");
        wire.push((table::decode(body).expect("decodes"), location.as_deref()));
    }
    assert_eq!(reassemble_from_wire(&wire), Some(direct_tree(3_000)));

    // query_response runs on the cached JSON.
    let id = pages[0].0["_meta"]["mcp-budget/page"]["response_id"]
        .as_str()
        .expect("id")
        .to_owned();
    proxy.send(&call(
        9_000,
        "query_response",
        json!({"response_id": id, "query": ".[0] | keys"}),
    ));
    let q = proxy.recv_json();
    let text = q["result"]["content"][0]["text"].as_str().expect("text");
    assert_eq!(
        serde_json::from_str::<Value>(text).ok(),
        Some(json!(["children", "name", "type"]))
    );
    let _ = std::fs::remove_file(cfg);
}

#[test]
fn tables_auto_saves_tokens_over_plain_pages() {
    let plain_cfg = config("plain", "[defaults]\n");
    let auto_cfg = config("tool", "[tools.directory_tree]\ntables = \"auto\"\n");
    let sum = |cfg: &Path| -> (usize, usize, bool) {
        let mut proxy = start(cfg);
        let ps = pages(&mut proxy, 3_000);
        let json = ps
            .iter()
            .all(|(_, b, _)| serde_json::from_str::<Value>(b).is_ok());
        (
            ps.iter().map(|(r, _, _)| visible_tokens(r)).sum(),
            ps.len(),
            json,
        )
    };
    let (plain, plain_pages, plain_json) = sum(&plain_cfg);
    let (tabled, tabled_pages, _) = sum(&auto_cfg);
    assert!(plain_json, "without the option every page is JSON");
    assert!(
        tabled_pages < plain_pages,
        "{tabled_pages} vs {plain_pages}"
    );
    assert!(
        tabled * 100 <= plain * 80,
        "tables {tabled} vs plain {plain}"
    );
    let _ = std::fs::remove_file(plain_cfg);
    let _ = std::fs::remove_file(auto_cfg);
}
