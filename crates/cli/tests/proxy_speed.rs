//! Speed of `mcp-budget proxy` against the same fixture server without it (issue 4, "Speed").
//!
//! Ignored by default (it takes a while and wants an optimized build):
//! `cargo test --release -p mcp-budget --test proxy_speed -- --ignored --nocapture`
//!
//! Both paths run side by side, requests interleaved, so a busy machine slows both alike; the
//! figures are medians. The client parses every line it gets as JSON, as a real client would.
//! - small: round trip of a tools/call whose result is a few bytes (target: ratio ≤ 1.05);
//! - big: a ~12 MB directory tree; direct, the client gets all of it; through the proxy, page 1
//!   (target: page 1 arrives no later than the direct result).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod proxy_support;
use proxy_support::Proxy;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

fn handshake(p: &mut Proxy) {
    p.send(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",
            "capabilities":{},"clientInfo":{"name":"speed","version":"0"}}})
        .to_string(),
    );
    p.recv_json();
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    p.send(r#"{"jsonrpc":"2.0","id":"l","method":"tools/list"}"#);
    p.recv_json();
}

fn timed_call(p: &mut Proxy, id: u64, tool: &str, arguments: &Value) -> (Duration, usize) {
    let line = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                      "params":{"name":tool,"arguments":arguments}})
    .to_string();
    let start = Instant::now();
    p.send(&line);
    let reply = p.recv(); // parses the line as JSON
    let elapsed = start.elapsed();
    let v: Value = serde_json::from_slice(&reply).unwrap_or_default();
    assert_eq!(v["id"], id, "answer to the wrong request");
    assert!(
        v.get("result").is_some(),
        "no result: {}",
        String::from_utf8_lossy(&reply[..reply.len().min(300)])
    );
    (elapsed, reply.len())
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort_unstable();
    xs[xs.len() / 2]
}

#[test]
#[ignore = "speed measurement: run with --release -- --ignored --nocapture"]
fn proxy_speed_against_direct() {
    let mut direct = Proxy::spawn(std::process::Command::new(BIN).arg("fixture-server"));
    let mut proxied = Proxy::start(&[], &[BIN, "fixture-server"]);
    handshake(&mut direct);
    handshake(&mut proxied);

    let echo = json!({"q": "small"});
    let (mut d, mut x) = (Vec::new(), Vec::new());
    for i in 0..3000u64 {
        let (t, _) = timed_call(&mut direct, i, "echo", &echo);
        let (u, _) = timed_call(&mut proxied, i, "echo", &echo);
        if i >= 200 {
            d.push(t);
            x.push(u);
        }
    }
    let (d, x) = (median(d), median(x));
    let small_ratio = x.as_secs_f64() / d.as_secs_f64();
    println!(
        "small tools/call round trip: direct {:.1} us, proxy {:.1} us, ratio {small_ratio:.2}",
        d.as_secs_f64() * 1e6,
        x.as_secs_f64() * 1e6
    );

    let tree = json!({"entries": 45_000});
    let (mut d, mut x) = (Vec::new(), Vec::new());
    let (mut d_bytes, mut x_bytes) = (0, 0);
    for i in 0..7u64 {
        let (t, n) = timed_call(&mut direct, 10_000 + i, "directory_tree", &tree);
        let (u, m) = timed_call(&mut proxied, 10_000 + i, "directory_tree", &tree);
        (d_bytes, x_bytes) = (n, m);
        d.push(t);
        x.push(u);
    }
    let (d, x) = (median(d), median(x));
    let big_ratio = x.as_secs_f64() / d.as_secs_f64();
    println!(
        "big result: direct {:.1} MB in {:.1} ms, proxy page 1 ({:.1} KB) in {:.1} ms, ratio {big_ratio:.2}",
        d_bytes as f64 / 1e6,
        d.as_secs_f64() * 1e3,
        x_bytes as f64 / 1e3,
        x.as_secs_f64() * 1e3
    );
    assert!(d_bytes > 10_000_000, "the direct result is the big one");
    assert!(
        x_bytes < 200_000,
        "the proxy sends a page, not the whole result"
    );
    // Loose bounds: a debug build or a loaded machine must not make this flaky.
    assert!(small_ratio < 3.0, "small round trip ratio {small_ratio:.2}");
    assert!(big_ratio < 3.0, "big result ratio {big_ratio:.2}");
}
