//! `mcp-budget proxy --store redis://…` through the binary, against a real `redis-server`:
//! two proxy processes sharing it are two replicas; page 1 from one, every `read_more` from
//! the other; the first one killed mid-way loses nothing.

use std::process::Command;
use std::time::{Duration, Instant};

use mcp_budget_core::paginate::reassemble_from_wire;
use serde_json::{Value, json};

mod proxy_support;
#[path = "../../proxy/tests/redis_support/mod.rs"]
mod redis_support;
use proxy_support::Proxy;
use redis_support::{Redis, free_port};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|i| i["text"].as_str().map(str::to_owned))
        .collect()
}

fn position(result: &Value) -> &Value {
    &result["_meta"]["mcp-budget/page"]
}

fn replica(redis: &Redis, principal: &str) -> Proxy {
    let mut p = Proxy::start(
        &[
            "--max-tokens",
            "1500",
            "--precision",
            "0",
            "--store",
            &redis.url(),
            "--principal",
            principal,
        ],
        &[BIN, "fixture-server"],
    );
    p.initialize();
    p
}

fn error_reason(result: &Value) -> String {
    assert_eq!(result["isError"], true, "{result}");
    let e: Value = serde_json::from_str(texts(result).last().unwrap()).unwrap();
    e["reason"].as_str().unwrap().to_owned()
}

#[test]
fn two_proxies_share_cursors_and_one_killed_mid_way_loses_nothing() {
    let Some(redis) = Redis::start() else { return };
    let args = json!({"rows": 600, "seed": 7});
    let want: Value = {
        let mut server = Proxy::spawn(Command::new(BIN).arg("fixture-server"));
        server.initialize();
        serde_json::from_str(&texts(&server.call(1, "table_rows", args.clone()))[0]).unwrap()
    };
    let mut a = replica(&redis, "team");
    let mut b = replica(&redis, "team");
    let first = a.call(1, "table_rows", args.clone());
    let id = position(&first)["response_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 24, "{first}");
    // The same call again on A: another id.
    let again = a.call(2, "table_rows", args.clone());
    assert_ne!(position(&again)["response_id"], json!(id));
    // query_response on both replicas.
    for (p, n) in [(&mut a, 3), (&mut b, 3)] {
        let q = p.call(
            n,
            "query_response",
            json!({"response_id": id, "query": "length"}),
        );
        assert_eq!(texts(&q), ["600"], "{q}");
    }
    let mut pages = vec![first];
    let mut n = 10;
    while let Some(c) = position(pages.last().unwrap())["next_cursor"].as_str() {
        let page = b.call(n, "read_more", json!({"cursor": c}));
        assert!(page.get("isError").is_none(), "{page}");
        pages.push(page);
        n += 1;
        if pages.len() == 2 {
            // A dies (SIGKILL) after page 2: B goes on alone.
            let status = Command::new("kill")
                .args(["-9", &a.pid().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
            a.wait(Duration::from_secs(10));
        }
    }
    assert!(pages.len() > 5, "{} pages", pages.len());
    let wire: Vec<(Value, Option<String>)> = pages
        .iter()
        .map(|p| {
            (
                serde_json::from_str(&texts(p)[0]).unwrap(),
                position(p)["location"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let w: Vec<(Value, Option<&str>)> = wire
        .iter()
        .map(|(v, s)| (v.clone(), s.as_deref()))
        .collect();
    assert_eq!(reassemble_from_wire(&w), Some(want));

    // Another principal: unknown. After FLUSHALL: unknown for the owner too.
    let mut other = replica(&redis, "someone-else");
    let cursor = format!("{id}.1");
    let r = other.call(1, "read_more", json!({"cursor": cursor}));
    assert_eq!(error_reason(&r), "unknown");
    assert_eq!(redis.cmd(&["FLUSHALL"]), "+OK");
    let r = b.call(1000, "read_more", json!({"cursor": cursor}));
    assert_eq!(error_reason(&r), "unknown");
}

#[test]
fn a_store_that_cannot_be_reached_stops_the_proxy_with_a_clear_error() {
    let port = free_port();
    let started = Instant::now();
    let out = Command::new(BIN)
        .args(["proxy", "--store", &format!("redis://127.0.0.1:{port}/0")])
        .args(["--", BIN, "fixture-server"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(started.elapsed() < Duration::from_secs(10));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("response store") && err.contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "stdout is the protocol channel");
}
