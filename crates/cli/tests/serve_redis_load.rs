//! A bounded load test of `serve` replicas sharing Redis (localhost only; stops by itself):
//! R replicas × S concurrent client sessions × C paged calls each. Every session opens a
//! session on each replica (one bearer token: one principal) and, for each call, takes page 1
//! from one replica and every `read_more` from the next ones in turn; each call's pages must
//! reassemble to the fixture's direct result (0 lost or mismatched pages). The same run with
//! the memory store (each session on one replica) gives the baseline of `read_more` latency;
//! the test prints p50/p99 of both, their ratio, and each replica's RSS. The Redis run is made
//! twice: with each replica's cache of parsed responses (the default) and without it
//! (`--store-cache-bytes 0`), the before/after of that cache.
//!
//! CI runs a small version (2 × 4 × 3). The issue's full size: `scripts/load-redis.sh`
//! (MCP_BUDGET_LOAD=4x50x20).

use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
const TOKEN: &str = "load-token";
/// Distinct results the calls ask for (seeds).
const SEEDS: u64 = 4;

fn size() -> (usize, usize, usize) {
    let spec = std::env::var("MCP_BUDGET_LOAD").unwrap_or_else(|_| "2x4x3".into());
    let n: Vec<usize> = spec.split('x').map(|p| p.parse().unwrap()).collect();
    (n[0], n[1], n[2])
}

fn args(seed: u64) -> Value {
    json!({"rows": 120, "seed": seed})
}

fn direct(seed: u64) -> Value {
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
                "params":{"name":"table_rows","arguments":args(seed)}})
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
            Some((
                serde_json::from_str(&first_text(p)).ok()?,
                position(p)["location"].as_str().map(str::to_owned),
            ))
        })
        .collect::<Option<Vec<_>>>()?;
    let w: Vec<(Value, Option<&str>)> = wire
        .iter()
        .map(|(v, s)| (v.clone(), s.as_deref()))
        .collect();
    reassemble_from_wire(&w)
}

/// The peak resident set size of process `pid` (`VmHWM`), KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

struct Outcome {
    /// `read_more` latencies, microseconds.
    latencies: Vec<u64>,
    pages: usize,
    bad: usize,
    rss_kib: Vec<u64>,
    /// Each replica's `/metrics`.
    metrics: Vec<String>,
}

/// One run: `shared` = replicas on Redis (pages from every replica in turn), else the memory
/// store (each session on its own replica).
fn run(
    redis: Option<&Redis>,
    cache: bool,
    replicas: usize,
    sessions: usize,
    calls: usize,
) -> Outcome {
    let wants: Vec<Value> = (0..SEEDS).map(direct).collect();
    let url = redis.map(Redis::url);
    let limit = (sessions + 2).to_string();
    let servers: Vec<Serve> = (0..replicas)
        .map(|_| {
            let mut flags = vec![
                "--max-tokens",
                "600",
                "--precision",
                "0",
                "--auth-token",
                TOKEN,
                "--max-sessions",
                &limit,
            ];
            if let Some(u) = &url {
                flags.extend(["--store", u]);
                if !cache {
                    flags.extend(["--store-cache-bytes", "0"]);
                }
            }
            Serve::fixture(&flags)
        })
        .collect();
    let latencies = Mutex::new(Vec::new());
    let pages = Mutex::new(0usize);
    let bad = Mutex::new(0usize);
    let deadline = Instant::now() + Duration::from_secs(600);
    let running = std::sync::atomic::AtomicUsize::new(sessions);
    let scrapes = Mutex::new(0usize);
    std::thread::scope(|s| {
        // /metrics scraped during the load, every 100 ms, from every replica in turn.
        let (servers_ref, running_ref, scrapes_ref) = (&servers, &running, &scrapes);
        s.spawn(move || {
            let mut r = 0;
            while running_ref.load(std::sync::atomic::Ordering::Acquire) > 0 {
                let url = servers_ref[r % servers_ref.len()]
                    .url
                    .replace("/mcp", "/metrics");
                let resp = serve_support::client()
                    .get(&url)
                    .bearer_auth(TOKEN)
                    .send()
                    .unwrap();
                assert_eq!(resp.status(), 200);
                assert!(resp.text().unwrap().ends_with("# EOF\n"));
                *scrapes_ref.lock().unwrap() += 1;
                r += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        for k in 0..sessions {
            let (servers, wants, latencies, pages, bad) =
                (&servers, &wants, &latencies, &pages, &bad);
            let shared = redis.is_some();
            let running = &running;
            s.spawn(move || {
                let _done = Done(running);
                let home = k % replicas;
                // A session on every replica it reads from (one token: one principal).
                let ids: Vec<Option<String>> = (0..replicas)
                    .map(|r| (shared || r == home).then(|| servers[r].initialize(Some(TOKEN))))
                    .collect();
                let mut n = 1;
                for c in 0..calls {
                    if Instant::now() > deadline {
                        *bad.lock().unwrap() += 1;
                        return;
                    }
                    let seed = (k + c) as u64 % SEEDS;
                    let at = |i: usize| if shared { (home + i) % replicas } else { home };
                    let r0 = at(c);
                    let first = servers[r0].call(
                        ids[r0].as_deref().unwrap(),
                        Some(TOKEN),
                        n,
                        "table_rows",
                        args(seed),
                    );
                    n += 1;
                    let mut got = vec![first];
                    while let Some(cur) = position(got.last().unwrap())["next_cursor"].as_str() {
                        let r = at(c + got.len());
                        let started = Instant::now();
                        let page = servers[r].call(
                            ids[r].as_deref().unwrap(),
                            Some(TOKEN),
                            n,
                            "read_more",
                            json!({"cursor": cur}),
                        );
                        latencies
                            .lock()
                            .unwrap()
                            .push(started.elapsed().as_micros() as u64);
                        n += 1;
                        if page["result"]["isError"] == json!(true) || got.len() > 200 {
                            break;
                        }
                        got.push(page);
                    }
                    *pages.lock().unwrap() += got.len();
                    if reassemble(&got).as_ref() != Some(&wants[seed as usize]) {
                        *bad.lock().unwrap() += 1;
                    }
                }
            });
        }
    });
    assert!(
        *scrapes.lock().unwrap() > 0,
        "/metrics never scraped during the load"
    );
    let rss_kib = servers.iter().map(|s| rss_kib(s.pid())).collect();
    // Scrape /metrics of every replica (Prometheus text format, behind the token).
    let metrics = servers
        .iter()
        .map(|s| {
            let url = s.url.replace("/mcp", "/metrics");
            let resp = serve_support::client()
                .get(&url)
                .bearer_auth(TOKEN)
                .send()
                .unwrap();
            assert_eq!(resp.status(), 200);
            resp.text().unwrap()
        })
        .collect();
    Outcome {
        metrics,
        latencies: latencies.into_inner().unwrap(),
        pages: pages.into_inner().unwrap(),
        bad: bad.into_inner().unwrap(),
        rss_kib,
    }
}

/// Counts a session thread down when it ends (even by a panic).
struct Done<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// p50 and p99 of `latencies` (sorted here).
fn quantiles(latencies: &mut [u64]) -> (u64, u64) {
    latencies.sort_unstable();
    (percentile(latencies, 0.5), percentile(latencies, 0.99))
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

#[test]
fn replicas_on_redis_lose_no_page_under_concurrent_sessions() {
    let Some(redis) = Redis::start() else { return };
    let (replicas, sessions, calls) = size();
    let started = Instant::now();
    let mut shared = run(Some(&redis), true, replicas, sessions, calls);
    let shared_secs = started.elapsed().as_secs_f64();
    let mut uncached = run(Some(&redis), false, replicas, sessions, calls);
    let started = Instant::now();
    let mut memory = run(None, true, replicas, sessions, calls);
    let memory_secs = started.elapsed().as_secs_f64();
    assert_eq!(shared.bad, 0, "lost or mismatched calls on Redis");
    assert_eq!(
        uncached.bad, 0,
        "lost or mismatched calls on Redis without the cache"
    );
    assert_eq!(memory.bad, 0, "lost or mismatched calls in memory");
    assert!(shared.pages > sessions * calls, "{} pages", shared.pages);
    // Not always the same count: the meta item's tokens depend on the random id's digits.
    assert!(
        uncached.pages > sessions * calls,
        "{} pages",
        uncached.pages
    );
    // Not the same count: a 24-hex id makes the meta item longer than a 12-hex one.
    assert!(memory.pages > sessions * calls, "{} pages", memory.pages);
    let (m50, m99) = quantiles(&mut memory.latencies);
    eprintln!(
        "load {replicas}x{sessions}x{calls}: pages redis {} in {shared_secs:.1}s, memory {} in {memory_secs:.1}s; 0 lost or mismatched",
        shared.pages, memory.pages
    );
    for (name, run) in [
        ("redis+cache", &mut shared),
        ("redis, no cache", &mut uncached),
    ] {
        let (r50, r99) = quantiles(&mut run.latencies);
        eprintln!(
            "read_more {name}: p50 {r50} us / memory {m50} us = {:.2}; p99 {r99} us / memory {m99} us = {:.2}",
            r50 as f64 / m50.max(1) as f64,
            r99 as f64 / m99.max(1) as f64
        );
    }
    eprintln!(
        "replica peak RSS KiB: redis+cache {:?}, redis no cache {:?}, memory {:?}",
        shared.rss_kib, uncached.rss_kib, memory.rss_kib
    );
    for m in &shared.metrics {
        assert!(
            m.contains(r#"mcp_budget_replica_cache_total{result="hit"}"#),
            "{m}"
        );
    }
    for (m, mem) in shared.metrics.iter().zip(&memory.metrics) {
        for text in [m, mem] {
            assert!(
                text.contains(r#"mcp_budget_pages_served_total{tool="read_more"}"#),
                "{text}"
            );
            assert!(text.contains(r#"mcp_budget_calls_total{tool="table_rows",outcome="paged"}"#));
            assert!(text.contains(r#"mcp_budget_store_lookups_total{result="hit"}"#));
        }
        assert!(
            m.contains(r#"mcp_budget_store_seconds_count{op="get"}"#),
            "{m}"
        );
        assert!(!mem.contains("mcp_budget_store_seconds_count"), "{mem}");
    }
    // Each replica's memory stays bounded (the fixture's results are ~10 KB each).
    for kib in shared
        .rss_kib
        .iter()
        .chain(&uncached.rss_kib)
        .chain(&memory.rss_kib)
    {
        assert!(*kib < 512 * 1024, "{kib} KiB");
    }
}
