//! The shared response store against a real `redis-server` (started by each test on a free
//! port): boundaries sharing one Redis are replicas; any of them answers any cursor of the
//! same principal.

mod boundary_util;
mod redis_support;

use std::time::{Duration, Instant};

use boundary_util::{error_of, jq_worker, meta, read_more, texts};
use mcp_budget_core::paginate::reassemble_from_wire;
use mcp_budget_proxy::boundary::{Boundary, StoreHandle};
use mcp_budget_proxy::config::{ConfigError, ConfigFile, Settings};
use redis_support::{Redis, free_port};
use serde_json::{Value, json};

const BUDGET: usize = 400;

fn settings(redis: &Redis, principal: &str, blobs: &tempfile::TempDir) -> Settings {
    Settings {
        max_tokens: Some(BUDGET),
        blob_dir: Some(blobs.path().join("blobs")),
        jq_worker: jq_worker(),
        store: Some(redis.url()),
        store_timeout: Some(Duration::from_millis(500)),
        principal: Some(principal.to_owned()),
        ..Settings::default()
    }
}

fn replica(redis: &Redis, principal: &str, blobs: &tempfile::TempDir) -> Boundary {
    Boundary::new(settings(redis, principal, blobs)).expect("redis is up")
}

fn rows(n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"id": i, "name": format!("row {i}"), "tags": ["a", "b"], "ok": i % 3 == 0}))
            .collect(),
    )
}

fn call(b: &Boundary, value: &Value) -> Value {
    let text = serde_json::to_string_pretty(value).unwrap();
    b.shape_call_result(
        "rows",
        json!({"content": [{"type": "text", "text": text}]}),
        1,
    )
}

fn next_cursor(page: &Value) -> Option<String> {
    meta(page).and_then(|m| m["next_cursor"].as_str().map(str::to_owned))
}

fn response_id(page: &Value) -> String {
    page["_meta"]["mcp-budget/page"]["response_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Follows the cursors of `first`, each `read_more` on the replica `pick(n)` gives.
fn follow_on<'a>(first: Value, pick: impl Fn(usize) -> &'a Boundary) -> Vec<Value> {
    let mut pages = vec![first];
    for n in 1..10_000 {
        let Some(c) = next_cursor(pages.last().unwrap()) else {
            break;
        };
        let before = pages.last().unwrap()["_meta"]["mcp-budget/page"]["page"]
            .as_u64()
            .unwrap();
        let page = pick(n).answer_injected(&read_more(&c)).unwrap();
        assert!(page.get("isError").is_none(), "page {n}: {page}");
        assert_eq!(page["_meta"]["mcp-budget/page"]["page"], json!(before + 1));
        pages.push(page);
    }
    pages
}

/// The one-document JSON response the pages hold, merged by their `_meta` locations.
fn reassemble(pages: &[Value]) -> Value {
    let wire: Vec<(Value, Option<String>)> = pages
        .iter()
        .map(|p| {
            let t = texts(p);
            (
                serde_json::from_str(&t[0]).unwrap(),
                p["_meta"]["mcp-budget/page"]["location"]
                    .as_str()
                    .map(str::to_owned),
            )
        })
        .collect();
    let w: Vec<(Value, Option<&str>)> = wire
        .iter()
        .map(|(v, s)| (v.clone(), s.as_deref()))
        .collect();
    reassemble_from_wire(&w).expect("pages fit together")
}

fn query(b: &Boundary, id: &str, q: &str) -> Value {
    b.answer_injected(
        &json!({"name": "query_response", "arguments": {"response_id": id, "query": q}}),
    )
    .unwrap()
}

#[test]
fn page_1_from_a_every_read_more_from_b_reassembles_the_direct_result() {
    let Some(redis) = Redis::start() else { return };
    let blobs = tempfile::tempdir().unwrap();
    let a = replica(&redis, "alice", &blobs);
    let b = replica(&redis, "alice", &blobs);
    let value = rows(300);
    let first = call(&a, &value);
    let id = response_id(&first);
    assert_eq!(id.len(), 24, "96 random bits: {id}");
    assert!(
        id.bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    let pages = follow_on(first, |_| &b);
    assert!(pages.len() > 10, "{} pages", pages.len());
    assert_eq!(reassemble(&pages), value);
    for p in &pages {
        let tokens: usize = texts(p)
            .iter()
            .map(|t| mcp_budget_core::tokens::Encoding::Cl100kBase.count(t))
            .sum();
        assert!(tokens <= BUDGET, "{tokens}");
    }
    // query_response on both replicas: the same answer.
    for r in [&a, &b] {
        let q = query(r, &id, "[length, .[299].name]");
        assert!(q.get("isError").is_none(), "{q}");
        assert_eq!(texts(&q).join(""), r#"[300,"row 299"]"#);
    }
    // What Redis holds: one hash and one tombstone per response.
    assert_eq!(redis.dbsize(), 2);
}

#[test]
fn pages_alternating_between_replicas_and_read_twice_are_the_same_pages() {
    let Some(redis) = Redis::start() else { return };
    let blobs = tempfile::tempdir().unwrap();
    let a = replica(&redis, "alice", &blobs);
    let b = replica(&redis, "alice", &blobs);
    let value = rows(200);
    let pages = follow_on(call(&a, &value), |n| if n % 2 == 0 { &a } else { &b });
    assert_eq!(reassemble(&pages), value);
    // Every cursor read again, on the other replica, gives the very same page.
    for (n, p) in pages.iter().enumerate().skip(1) {
        let cursor = next_cursor(&pages[n - 1]).unwrap();
        let again = if n % 2 == 0 { &b } else { &a }
            .answer_injected(&read_more(&cursor))
            .unwrap();
        assert_eq!(&again, p, "page {n}");
    }
}

#[test]
fn a_replica_dropped_mid_way_loses_nothing() {
    let Some(redis) = Redis::start() else { return };
    let blobs = tempfile::tempdir().unwrap();
    let value = rows(200);
    let a = replica(&redis, "alice", &blobs);
    let first = call(&a, &value);
    let second = a
        .answer_injected(&read_more(&next_cursor(&first).unwrap()))
        .unwrap();
    drop(a);
    let b = replica(&redis, "alice", &blobs);
    let mut pages = vec![first];
    pages.extend(follow_on(second, |_| &b));
    assert_eq!(reassemble(&pages), value);
}

#[test]
fn the_same_call_twice_gets_two_ids_and_both_read_back() {
    let Some(redis) = Redis::start() else { return };
    let blobs = tempfile::tempdir().unwrap();
    let a = replica(&redis, "alice", &blobs);
    let value = rows(100);
    let one = call(&a, &value);
    let two = call(&a, &value);
    assert_ne!(response_id(&one), response_id(&two));
    assert_eq!(reassemble(&follow_on(one, |_| &a)), value);
    assert_eq!(reassemble(&follow_on(two, |_| &a)), value);
}

#[test]
fn another_principal_gets_unknown() {
    let Some(redis) = Redis::start() else { return };
    let blobs = tempfile::tempdir().unwrap();
    let a = replica(&redis, "alice", &blobs);
    let mallory = replica(&redis, "mallory", &blobs);
    let first = call(&a, &rows(100));
    let cursor = next_cursor(&first).unwrap();
    let e = error_of(&mallory.answer_injected(&read_more(&cursor)).unwrap());
    assert_eq!(e["reason"], "unknown", "{e}");
    let e = error_of(&query(&mallory, &response_id(&first), "length"));
    assert_eq!(e["reason"], "unknown", "{e}");
    // The owner still reads it.
    let ok = a.answer_injected(&read_more(&cursor)).unwrap();
    assert!(ok.get("isError").is_none());
}

#[test]
fn flushall_gives_unknown_and_the_ttl_gives_expired() {
    let Some(redis) = Redis::start() else { return };
    let blobs = tempfile::tempdir().unwrap();
    let a = replica(&redis, "alice", &blobs);
    let cursor = next_cursor(&call(&a, &rows(100))).unwrap();
    assert_eq!(redis.cmd(&["FLUSHALL"]), "+OK");
    let e = error_of(&a.answer_injected(&read_more(&cursor)).unwrap());
    assert_eq!(e["reason"], "unknown", "{e}");

    let short = Boundary::new(Settings {
        cache_ttl: Some(Duration::from_millis(300)),
        ..settings(&redis, "alice", &blobs)
    })
    .unwrap();
    let cursor = next_cursor(&call(&short, &rows(100))).unwrap();
    std::thread::sleep(Duration::from_millis(450));
    // The hash is gone, its tombstone (twice the TTL) is left.
    let e = error_of(&short.answer_injected(&read_more(&cursor)).unwrap());
    assert_eq!(e["reason"], "expired", "{e}");
}

#[test]
fn each_read_refreshes_the_ttl() {
    let Some(redis) = Redis::start() else { return };
    let blobs = tempfile::tempdir().unwrap();
    let b = Boundary::new(Settings {
        cache_ttl: Some(Duration::from_millis(600)),
        ..settings(&redis, "alice", &blobs)
    })
    .unwrap();
    let first = call(&b, &rows(300));
    let mut cursor = next_cursor(&first).unwrap();
    // 5 reads 300 ms apart: 1.5 s in all, each within the TTL of the one before.
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(300));
        let page = b.answer_injected(&read_more(&cursor)).unwrap();
        assert!(page.get("isError").is_none(), "{page}");
        cursor = next_cursor(&page).unwrap();
    }
}

#[test]
fn redis_killed_gives_a_bounded_error_and_a_restart_works_again() {
    let Some(mut redis) = Redis::start() else {
        return;
    };
    let blobs = tempfile::tempdir().unwrap();
    let a = replica(&redis, "alice", &blobs);
    let value = rows(100);
    let cursor = next_cursor(&call(&a, &value)).unwrap();
    redis.kill();
    let started = Instant::now();
    let answer = a.answer_injected(&read_more(&cursor)).unwrap();
    let e = error_of(&answer);
    assert_eq!(e["reason"], "expired", "{e}");
    assert!(
        e["hint"].as_str().unwrap().contains("did not answer"),
        "{e}"
    );
    // The deadline is 500 ms (+1 s guard at most).
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // A new call meanwhile: page 1 comes back all the same (kept in this replica's memory).
    let started = Instant::now();
    let local = call(&a, &value);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(reassemble(&follow_on(local, |_| &a)), value);

    // Redis back (empty): the old cursor is unknown, new calls are shared again.
    redis.restart();
    let b = replica(&redis, "alice", &blobs);
    let mut answer = Value::Null;
    for _ in 0..50 {
        answer = a.answer_injected(&read_more(&cursor)).unwrap();
        if error_of(&answer)["reason"] == "unknown" {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(error_of(&answer)["reason"], "unknown", "{answer}");
    let first = call(&a, &value);
    assert_eq!(reassemble(&follow_on(first, |_| &b)), value);
}

#[test]
fn redis_unreachable_at_start_is_a_clear_error() {
    let port = free_port();
    let started = Instant::now();
    let err = StoreHandle::open(&Settings {
        store: Some(format!("redis://127.0.0.1:{port}/0")),
        store_timeout: Some(Duration::from_millis(300)),
        ..Settings::default()
    })
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    let msg = err.to_string();
    assert!(matches!(err, ConfigError::Store { .. }), "{msg}");
    assert!(msg.contains(&format!("127.0.0.1:{port}")), "{msg}");
    for bad in ["http://x", "rediss://127.0.0.1:1/0"] {
        let err = StoreHandle::open(&Settings {
            store: Some(bad.into()),
            ..Settings::default()
        })
        .unwrap_err();
        assert!(matches!(err, ConfigError::Store { .. }), "{err}");
    }
    // Credentials never appear in the message.
    let err = StoreHandle::open(&Settings {
        store: Some(format!("redis://user:s3cret@127.0.0.1:{port}/0")),
        store_timeout: Some(Duration::from_millis(300)),
        ..Settings::default()
    })
    .unwrap_err();
    assert!(!err.to_string().contains("s3cret"), "{err}");
}

#[test]
fn concurrent_reads_of_one_cursor_on_two_replicas_agree() {
    let Some(redis) = Redis::start() else { return };
    let blobs = tempfile::tempdir().unwrap();
    let a = replica(&redis, "alice", &blobs);
    let b = replica(&redis, "alice", &blobs);
    let value = rows(400);
    let first = call(&a, &value);
    let mut pages = vec![first];
    // Every page is asked for by 4 threads at once, 2 on each replica: all get the same page.
    while let Some(c) = next_cursor(pages.last().unwrap()) {
        let got: Vec<Value> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|i| {
                    let r = if i % 2 == 0 { &a } else { &b };
                    let c = c.clone();
                    s.spawn(move || r.answer_injected(&read_more(&c)).unwrap())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for g in &got {
            assert!(g.get("isError").is_none(), "{g}");
            assert_eq!(g, &got[0]);
        }
        pages.push(got[0].clone());
    }
    assert_eq!(reassemble(&pages), value);
}

#[test]
fn a_response_over_the_entry_bound_stays_in_its_replica() {
    let Some(redis) = Redis::start() else { return };
    let blobs = tempfile::tempdir().unwrap();
    let file: ConfigFile = toml_file("[store]\nmax_entry_bytes = 200\n");
    let with_bound = |p: &str| {
        Boundary::new(Settings {
            file: Some(file.clone()),
            ..settings(&redis, p, &blobs)
        })
        .unwrap()
    };
    let a = with_bound("alice");
    let b = with_bound("alice");
    let value = rows(100);
    let first = call(&a, &value);
    let cursor = next_cursor(&first).unwrap();
    assert_eq!(redis.dbsize(), 0);
    assert_eq!(
        error_of(&b.answer_injected(&read_more(&cursor)).unwrap())["reason"],
        "unknown"
    );
    assert_eq!(reassemble(&follow_on(first, |_| &a)), value);
}

/// `mcp_budget_replica_cache_total{result="…"}` of this process so far.
fn replica_cache(result: &str) -> u64 {
    let needle = format!("mcp_budget_replica_cache_total{{result=\"{result}\"}} ");
    mcp_budget_proxy::metrics::render()
        .lines()
        .find_map(|l| l.strip_prefix(&needle)?.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn repeated_reads_come_from_the_replica_cache_and_agree_with_an_uncached_replica() {
    let Some(redis) = Redis::start() else { return };
    let blobs = tempfile::tempdir().unwrap();
    let cached = replica(&redis, "alice", &blobs);
    let uncached = Boundary::new(Settings {
        store_cache_bytes: Some(0),
        ..settings(&redis, "alice", &blobs)
    })
    .unwrap();
    let first = call(&cached, &rows(300));
    let hits = replica_cache("hit");
    // Every read_more on the replica that wrote page 1 is a hit (its copy was kept on write).
    let from_cache = follow_on(first.clone(), |_| &cached);
    assert!(from_cache.len() > 3, "{} pages", from_cache.len());
    assert!(replica_cache("hit") >= hits + from_cache.len() as u64 - 1);
    // The same pages from a replica without a cache, and from both in turn.
    let plain = follow_on(first.clone(), |_| &uncached);
    let mixed = follow_on(first, |n| if n % 2 == 0 { &cached } else { &uncached });
    assert_eq!(from_cache, plain);
    assert_eq!(from_cache, mixed);
    // The cache holds only the body: the book and the TTL are Redis's. Flushed: unknown,
    // though the replica still has the parsed copy.
    let cursor = next_cursor(&from_cache[1]).unwrap();
    assert_eq!(redis.cmd(&["FLUSHALL"]), "+OK");
    let e = error_of(&cached.answer_injected(&read_more(&cursor)).unwrap());
    assert_eq!(e["reason"], "unknown", "{e}");
}

fn toml_file(text: &str) -> ConfigFile {
    ConfigFile::parse(text, std::path::Path::new("test.toml")).unwrap()
}
