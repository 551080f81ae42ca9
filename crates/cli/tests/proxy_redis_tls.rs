//! `mcp-budget proxy --store rediss://…` through the binary, against a real `redis-server`
//! that speaks TLS only (`--port 0 --tls-port N`; its certificate signed by a CA made by the
//! test): two proxies share cursors over TLS when they trust that CA (`--store-ca`, or
//! `MCP_BUDGET_STORE_CA`); without it the certificate is refused with a clear error.

use std::process::Command;
use std::time::{Duration, Instant};

use mcp_budget_core::paginate::reassemble_from_wire;
use serde_json::{Value, json};

mod proxy_support;
#[path = "../../proxy/tests/redis_support/mod.rs"]
mod redis_support;
use proxy_support::Proxy;
use redis_support::Redis;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

fn first_text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .expect("text")
        .to_owned()
}

fn position(result: &Value) -> &Value {
    &result["_meta"]["mcp-budget/page"]
}

const FLAGS: [&str; 6] = [
    "--max-tokens",
    "1500",
    "--precision",
    "0",
    "--principal",
    "team",
];

#[test]
fn two_proxies_share_cursors_over_tls_with_a_private_ca() {
    let Some(redis) = Redis::start_tls() else {
        return;
    };
    let url = redis.url();
    assert!(url.starts_with("rediss://localhost:"), "{url}");
    let ca = redis.ca_file();
    let ca = ca.to_str().unwrap();
    let args = json!({"rows": 400, "seed": 3});
    let want: Value = {
        let mut server = Proxy::spawn(Command::new(BIN).arg("fixture-server"));
        server.initialize();
        serde_json::from_str(&first_text(&server.call(1, "table_rows", args.clone()))).unwrap()
    };
    // A: the flag; B: the environment variable.
    let mut a = Proxy::start(
        &[&FLAGS[..], &["--store", &url, "--store-ca", ca]].concat(),
        &[BIN, "fixture-server"],
    );
    a.initialize();
    let mut b = Proxy::spawn(
        Command::new(BIN)
            .arg("proxy")
            .args(FLAGS)
            .args(["--store", &url])
            .env("MCP_BUDGET_STORE_CA", ca)
            .args(["--", BIN, "fixture-server"]),
    );
    b.initialize();
    let first = a.call(1, "table_rows", args);
    assert_eq!(
        position(&first)["response_id"].as_str().map(str::len),
        Some(24),
        "{first}"
    );
    let mut pages = vec![first];
    let mut n = 10;
    while let Some(c) = position(pages.last().unwrap())["next_cursor"].as_str() {
        let page = b.call(n, "read_more", json!({"cursor": c}));
        assert!(page.get("isError").is_none(), "{page}");
        pages.push(page);
        n += 1;
    }
    assert!(pages.len() > 3, "{} pages", pages.len());
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
    assert_eq!(reassemble_from_wire(&w), Some(want));
}

fn refused(flags: &[&str]) -> String {
    let started = Instant::now();
    let out = Command::new(BIN)
        .arg("proxy")
        .args(flags)
        .args(["--", BIN, "fixture-server"])
        .env_remove("MCP_BUDGET_STORE_CA")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(out.stdout.is_empty(), "stdout is the protocol channel");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_untrusted_certificate_or_a_ca_without_tls_is_a_clear_error() {
    let Some(redis) = Redis::start_tls() else {
        return;
    };
    // The test CA is not among the system's roots.
    let err = refused(&["--store", &redis.url()]);
    assert!(
        err.contains("response store") && err.contains(&format!("localhost:{}", redis.port)),
        "{err}"
    );
    let ca = redis.ca_file();
    let ca = ca.to_str().unwrap();
    let err = refused(&["--store", "redis://127.0.0.1:1/0", "--store-ca", ca]);
    assert!(err.contains("rediss://"), "{err}");
    let err = refused(&["--store", &redis.url(), "--store-ca", "/nonexistent/ca.pem"]);
    assert!(err.contains("cannot read the CA file"), "{err}");
    // A plain client on the TLS port: no answer it can read, bounded by the deadline.
    let plain = redis.url().replace("rediss://", "redis://");
    let err = refused(&["--store", &plain]);
    assert!(err.contains("response store"), "{err}");
}
