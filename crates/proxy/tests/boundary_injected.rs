//! read_more and query_response: cache only, errors as isError results, clamped max_tokens.

mod boundary_util;

use std::time::Duration;

use boundary_util::*;
use mcp_budget_proxy::boundary::Boundary;
use mcp_budget_proxy::config::Settings;
use serde_json::{Value, json};

fn paged(b: &Boundary) -> Value {
    let out = b.shape_call_result("directory_tree", fixture("fs.call1.directory_tree.json"), 1);
    meta(&out).expect("paged")
}

fn query(id: &str, q: &str) -> Value {
    json!({"name": "query_response", "arguments": {"response_id": id, "query": q}})
}

#[test]
fn bad_cursors_are_cursor_invalid_with_each_reason() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    let m = paged(&b);
    let id = m["response_id"].as_str().unwrap();
    let cases = [
        (json!({"cursor": "nope"}), "malformed"),
        (json!({"cursor": format!("{id}.x")}), "malformed"),
        (json!({"cursor": id.to_uppercase() + ".1"}), "malformed"),
        (json!({"cursor": "0123456789ab.1"}), "unknown"),
        (json!({"cursor": format!("{id}.999")}), "unknown"),
    ];
    for (args, reason) in cases {
        let out = b
            .answer_injected(&json!({"name": "read_more", "arguments": args}))
            .unwrap();
        let e = error_of(&out);
        assert_eq!(e["error"], "cursor_invalid", "{args}");
        assert_eq!(e["reason"], reason, "{args}");
        assert!(e["hint"].as_str().unwrap().len() > 10);
    }
    // Arguments that do not match the schema are invalid_arguments, not a cursor fault.
    for (args, argument) in [
        (json!({}), "cursor"),
        (json!({"cursor": 5}), "cursor"),
        (
            json!({"cursor": format!("{id}.1"), "max_tokens": "abc"}),
            "max_tokens",
        ),
    ] {
        let out = b
            .answer_injected(&json!({"name": "read_more", "arguments": args}))
            .unwrap();
        let e = error_of(&out);
        assert_eq!(e["error"], "invalid_arguments", "{args}");
        assert_eq!(e["argument"], argument, "{args}");
    }
    let e = error_of(&b.answer_injected(&query("zz", ".")).unwrap());
    assert_eq!(e["reason"], "malformed");
    let e = error_of(&b.answer_injected(&query("0123456789ab", ".")).unwrap());
    assert_eq!(e["reason"], "unknown");
}

#[test]
fn expired_cursors_say_expired() {
    let dir = tempfile::tempdir().unwrap();
    let b = Boundary::new(Settings {
        max_tokens: Some(300),
        cache_ttl: Some(Duration::from_millis(20)),
        blob_dir: Some(dir.path().to_path_buf()),
        jq_worker: jq_worker(),
        ..Settings::default()
    })
    .unwrap();
    let m = paged(&b);
    std::thread::sleep(Duration::from_millis(100));
    let out = b
        .answer_injected(&read_more(m["next_cursor"].as_str().unwrap()))
        .unwrap();
    let e = error_of(&out);
    assert_eq!(e["reason"], "expired");
    let out = b
        .answer_injected(&query(m["response_id"].as_str().unwrap(), "length"))
        .unwrap();
    assert_eq!(error_of(&out)["reason"], "expired");
}

#[test]
fn the_cache_bound_spills_least_recently_used_to_files_and_they_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let spill = tempfile::tempdir().unwrap();
    let b = Boundary::new(Settings {
        max_tokens: Some(300),
        cache_bytes: Some(20_000),
        cache_dir: Some(spill.path().to_path_buf()),
        blob_dir: Some(dir.path().to_path_buf()),
        ..Settings::default()
    })
    .unwrap();
    let first = paged(&b); // its parsed tree alone is over 20 kB
    let rows: Vec<Value> = (0..1500).map(|i| json!({"i": i})).collect();
    let r = json!({"content": [{"type": "text", "text": serde_json::to_string(&rows).unwrap()}]});
    let second = meta(&b.shape_call_result("rows", r, 1)).unwrap();
    let spilled: Vec<_> = std::fs::read_dir(spill.path()).unwrap().flatten().collect();
    assert_eq!(spilled.len(), 1, "one spill directory");
    assert!(std::fs::read_dir(spilled[0].path()).unwrap().count() >= 1);
    for m in [&first, &second, &first] {
        let out = b
            .answer_injected(&read_more(m["next_cursor"].as_str().unwrap()))
            .unwrap();
        assert!(out.get("isError").is_none(), "{out}");
    }
    b.remove_spill_files();
    assert_eq!(std::fs::read_dir(spill.path()).unwrap().count(), 0);
}

#[test]
fn query_response_selects_from_the_cached_response() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    let m = paged(&b);
    let id = m["response_id"].as_str().unwrap();
    let out = b.answer_injected(&query(id, "length")).unwrap();
    assert!(out.get("isError").is_none());
    let top = fixture("fs.call1.directory_tree.json")["content"][0]["text"]
        .as_str()
        .map(|t| {
            serde_json::from_str::<Value>(t)
                .unwrap()
                .as_array()
                .unwrap()
                .len()
        })
        .unwrap();
    assert_eq!(texts(&out), vec![top.to_string()]);
    assert!(meta(&out).is_none());
    // Several outputs become an array.
    let out = b.answer_injected(&query(id, ".[].name")).unwrap();
    let names: Value = serde_json::from_str(&texts(&out)[0]).unwrap();
    assert_eq!(names[0], ".git");
    // A single string output is plain text.
    let out = b.answer_injected(&query(id, ".[0].name")).unwrap();
    assert_eq!(texts(&out), vec![".git".to_owned()]);
    // A big output is paged under its own response id, within the budget.
    let out = b
        .answer_injected(&query(
            id,
            "[.. | objects | select(.type == \"file\") | .name]",
        ))
        .unwrap();
    let qm = meta(&out).expect("paged");
    assert_ne!(qm["response_id"], m["response_id"]);
    let pages = follow(&b, out, 300);
    let mut all = Vec::new();
    for (i, p) in pages.iter().enumerate() {
        let v: Value = serde_json::from_str(&texts(p)[0]).unwrap();
        assert!(v.is_array(), "page {i}");
        all.extend(v.as_array().unwrap().iter().cloned());
    }
    assert!(all.len() > 100, "{}", all.len());
    assert!(all.iter().all(Value::is_string));
}

#[test]
fn query_response_on_text_sees_a_json_string() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    let out = b.shape_call_result(
        "log",
        json!({"content": [{"type": "text", "text": text}]}),
        1,
    );
    let id = meta(&out).unwrap()["response_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = b
        .answer_injected(&query(&id, "split(\"\\n\") | .[1500]"))
        .unwrap();
    assert_eq!(texts(&out), vec!["line 1500".to_owned()]);
}

#[test]
fn jq_errors_are_is_error_results_with_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    let m = paged(&b);
    let id = m["response_id"].as_str().unwrap();
    for (q, word) in [
        (".[", "syntax"),
        ("nosuch(1)", "nosuch"),
        (".[0].name + 1", "runtime"),
    ] {
        let e = error_of(&b.answer_injected(&query(id, q)).unwrap());
        assert_eq!(e["error"], "query_failed", "{q}");
        assert!(e["message"].as_str().unwrap().contains(word), "{q}: {e}");
    }
    let out = b
        .answer_injected(&json!({"name": "query_response", "arguments": {"response_id": id}}))
        .unwrap();
    // A missing filter does not match the tool's inputSchema.
    let e = error_of(&out);
    assert_eq!(e["error"], "invalid_arguments");
    assert_eq!(e["argument"], "query");
}

#[test]
fn max_tokens_is_clamped_between_the_floor_and_the_ceiling() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(2000, &dir);
    let rows: Vec<Value> = (0..3000)
        .map(|i| json!({"id": i, "name": format!("item {i}")}))
        .collect();
    let r = json!({"content": [{"type": "text", "text": serde_json::to_string(&rows).unwrap()}]});
    let out = b.shape_call_result("rows", r, 1);
    let c = meta(&out).unwrap()["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let small = b
        .answer_injected(&json!({"name": "read_more", "arguments": {"cursor": c, "max_tokens": 5}}))
        .unwrap();
    let t = visible_tokens(&small, false);
    assert!(t <= 256 && t > 150, "clamped up to 256: {t}");
    let big = b
        .answer_injected(
            &json!({"name": "read_more", "arguments": {"cursor": c, "max_tokens": 1_000_000}}),
        )
        .unwrap();
    let t = visible_tokens(&big, false);
    assert!(t <= 2000 && t > 1500, "clamped down to 2000: {t}");
    // The small page's own cursor continues from where it ended, not from the big one.
    let next = meta(&small).unwrap()["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(next, meta(&big).unwrap()["next_cursor"].as_str().unwrap());
    assert!(
        b.answer_injected(&read_more(&next))
            .unwrap()
            .get("isError")
            .is_none()
    );
}

#[test]
fn other_tools_are_not_answered_locally() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    assert!(
        b.answer_injected(&json!({"name": "directory_tree", "arguments": {}}))
            .is_none()
    );
    assert!(b.answer_injected(&json!({})).is_none());
}

#[test]
fn the_same_response_again_keeps_earlier_cursors_valid() {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(300, &dir);
    let m1 = paged(&b);
    let p2 = b
        .answer_injected(&read_more(m1["next_cursor"].as_str().unwrap()))
        .unwrap();
    let c3 = meta(&p2).unwrap()["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let m2 = paged(&b);
    assert_eq!(m1, m2, "same response, same id and page 1");
    let p3 = b.answer_injected(&read_more(&c3)).unwrap();
    assert!(p3.get("isError").is_none(), "{p3}");
}

/// A worker program that cannot start, or is not a jq worker, gives `query_failed` saying so
/// (never a hang, never a wrong result); the in-process `transform` is unaffected.
#[test]
fn a_wrong_jq_worker_program_is_query_failed() {
    use mcp_budget_proxy::config::WorkerCommand;
    for (worker, word) in [
        (
            WorkerCommand::new("/nonexistent/mcp-budget", ["jq-worker"]),
            "cannot start",
        ),
        (
            WorkerCommand::new("/bin/sh", ["-c", "echo '\"o1\"'; cat >/dev/null"]),
            "did not answer",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let b = Boundary::new(Settings {
            max_tokens: Some(300),
            blob_dir: Some(dir.path().to_path_buf()),
            jq_worker: worker,
            ..Settings::default()
        })
        .unwrap();
        let m = paged(&b);
        let out = b
            .answer_injected(&query(m["response_id"].as_str().unwrap(), "length"))
            .unwrap();
        let e = error_of(&out);
        assert_eq!(e["error"], "query_failed", "{e}");
        assert!(e["message"].as_str().unwrap().contains(word), "{e}");
    }
}

/// Limits from the settings: a deadline of 300 ms stops a runaway, and a worker that dies of
/// a stack overflow is named as such.
#[test]
fn the_worker_is_stopped_at_the_deadline_and_its_death_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let with = |deadline: Duration| {
        Boundary::new(Settings {
            max_tokens: Some(300),
            blob_dir: Some(dir.path().to_path_buf()),
            jq_worker: jq_worker(),
            jq_deadline: deadline,
            jq_memory_mib: Some(128),
            ..Settings::default()
        })
        .unwrap()
    };
    let b = with(Duration::from_millis(300));
    let m = paged(&b);
    let id = m["response_id"].as_str().unwrap();
    let started = std::time::Instant::now();
    let e = error_of(&b.answer_injected(&query(id, "def f: f; f")).unwrap());
    assert!(started.elapsed() < Duration::from_secs(3));
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("too long") && message.contains("0.3 s"),
        "{e}"
    );
    // The same cached response (same id) under a boundary with a longer deadline.
    let b = with(Duration::from_secs(20));
    let id = paged(&b)["response_id"].as_str().unwrap().to_owned();
    let deep = "(\"[\" * 1000000) + (\"]\" * 1000000) | fromjson";
    let e = error_of(&b.answer_injected(&query(&id, deep)).unwrap());
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("stack overflow"), "{e}");
    let e = error_of(
        &b.answer_injected(&query(
            &id,
            "reduce range(40) as $i (\"x\"; . + .) | length",
        ))
        .unwrap(),
    );
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("out of memory") && message.contains("128 MiB"),
        "{e}"
    );
    // And the next query is served as ever.
    let out = b.answer_injected(&query(&id, "length")).unwrap();
    assert!(out.get("isError").is_none(), "{out}");
}
