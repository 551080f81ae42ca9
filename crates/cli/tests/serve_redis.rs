//! Two `mcp-budget serve` replicas sharing a real `redis-server` (`--store`), as behind a
//! load balancer: page 1 from replica A, every `read_more` from replica B, `query_response` on
//! both; A killed mid-way loses nothing. With `--auth-token` the principal is the token, so
//! one client's sessions on both replicas share cursors; without one, the session.

use std::process::Command;

use mcp_budget_core::paginate::reassemble_from_wire;
use serde_json::{Value, json};

mod proxy_support;
#[path = "../../proxy/tests/redis_support/mod.rs"]
mod redis_support;
mod serve_support;
use proxy_support::Proxy;
use redis_support::Redis;
use serve_support::{Serve, first_text};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");
const TOKEN: &str = "replica-test-token";

fn replica(redis: &Redis, token: Option<&str>) -> Serve {
    let url = redis.url();
    let mut flags = vec!["--max-tokens", "1500", "--precision", "0", "--store", &url];
    if let Some(t) = token {
        flags.extend(["--auth-token", t]);
    }
    Serve::fixture(&flags)
}

/// What the fixture server returns for `tool` directly (no proxy).
fn direct(tool: &str, args: &Value) -> Value {
    let mut server = Proxy::spawn(Command::new(BIN).arg("fixture-server"));
    server.send(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},
            "clientInfo":{"name":"test","version":"0"}}})
        .to_string(),
    );
    let _ = server.recv_json();
    server.send(
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                "params":{"name":tool,"arguments":args}})
        .to_string(),
    );
    let msg = server.recv_json();
    serde_json::from_str(msg["result"]["content"][0]["text"].as_str().unwrap()).unwrap()
}

fn position(response: &Value) -> &Value {
    &response["result"]["_meta"]["mcp-budget/page"]
}

fn reassemble(pages: &[Value]) -> Option<Value> {
    let wire: Vec<(Value, Option<String>)> = pages
        .iter()
        .map(|p| {
            (
                serde_json::from_str(&first_text(p)).unwrap(),
                position(p)["location"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let w: Vec<(Value, Option<&str>)> = wire
        .iter()
        .map(|(v, s)| (v.clone(), s.as_deref()))
        .collect();
    reassemble_from_wire(&w)
}

#[test]
fn page_1_from_a_every_read_more_from_b_and_a_killed_mid_way() {
    let Some(redis) = Redis::start() else { return };
    let args = json!({"rows": 600, "seed": 3});
    let want = direct("table_rows", &args);
    let a = replica(&redis, Some(TOKEN));
    let b = replica(&redis, Some(TOKEN));
    let sa = a.initialize(Some(TOKEN));
    let sb = b.initialize(Some(TOKEN));
    let first = a.call(&sa, Some(TOKEN), 1, "table_rows", args.clone());
    let id = position(&first)["response_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 24, "{first}");
    for (s, session) in [(&a, &sa), (&b, &sb)] {
        let q = s.call(
            session,
            Some(TOKEN),
            2,
            "query_response",
            json!({"response_id": id, "query": "length"}),
        );
        assert_eq!(first_text(&q), "600", "{q}");
    }
    let mut pages = vec![first];
    let mut a = Some(a);
    let mut n = 10;
    while let Some(c) = position(pages.last().unwrap())["next_cursor"].as_str() {
        let page = b.call(&sb, Some(TOKEN), n, "read_more", json!({"cursor": c}));
        assert_ne!(page["result"]["isError"], json!(true), "{page}");
        pages.push(page);
        n += 1;
        if pages.len() == 3 {
            // Replica A goes away (killed) mid-conversation.
            drop(a.take());
        }
    }
    assert!(pages.len() > 5, "{} pages", pages.len());
    assert_eq!(reassemble(&pages), Some(want));
}

#[test]
fn without_a_token_another_sessions_cursor_is_unknown_on_any_replica() {
    let Some(redis) = Redis::start() else { return };
    let a = replica(&redis, None);
    let b = replica(&redis, None);
    let sa = a.initialize(None);
    let sb = b.initialize(None);
    let first = a.call(&sa, None, 1, "table_rows", json!({"rows": 300}));
    let cursor = position(&first)["next_cursor"].as_str().unwrap().to_owned();
    let other = b.call(&sb, None, 1, "read_more", json!({"cursor": cursor}));
    let err: Value = serde_json::from_str(&first_text(&other)).unwrap();
    assert_eq!(err["reason"], "unknown", "{other}");
    let own = a.call(&sa, None, 2, "read_more", json!({"cursor": cursor}));
    assert_ne!(own["result"]["isError"], json!(true), "{own}");
}
