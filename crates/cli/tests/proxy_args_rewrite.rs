//! Issue 12 §1 and §4 through the binary and the fixture server: `uuid_prefix` shortens UUIDs
//! in results and expands the prefixes a later call passes back (a prefix of two UUIDs is
//! answered `isError` and never forwarded), and `response_refs` replaces
//! `{"$response":…,"query":…}` arguments by the cached response after the filter. The
//! fixture's `echo` answers with the arguments it received: what was forwarded.

use std::path::Path;
use std::process::Command;

use mcp_budget_core::uuid;
use serde_json::{Value, json};

mod proxy_support;
use proxy_support::{Proxy, visible_tokens};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

fn call_line(id: u64, tool: &str, arguments: &Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
           "params":{"name":tool,"arguments":arguments}})
    .to_string()
}

/// The `result` of a `tools/call` (the answer must be the next line, with this id).
fn call(p: &mut Proxy, id: u64, tool: &str, arguments: Value) -> Value {
    p.send(&call_line(id, tool, &arguments));
    let msg = p.recv_json();
    assert_eq!(msg["id"], id, "{msg}");
    msg["result"].clone()
}

/// A proxy in front of the fixture server with `config` as its config file.
fn proxy(dir: &Path, config: &str, flags: &[&str]) -> Proxy {
    let path = dir.join("mcp-budget.toml");
    std::fs::write(&path, config).expect("write the config");
    Proxy::spawn(
        Command::new(BIN)
            .arg("proxy")
            .arg("--config")
            .arg(&path)
            .args(flags)
            .args(["--", BIN, "fixture-server"]),
    )
}

/// The fixture's answer to `tool`, without the proxy.
fn direct(tool: &str, arguments: Value) -> Value {
    let mut server = Proxy::spawn(Command::new(BIN).arg("fixture-server"));
    call(&mut server, 1, tool, arguments)
}

fn first_text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().expect("a text item")
}

/// The parsed text of the last content item.
fn last_json(result: &Value) -> Value {
    let text = result["content"]
        .as_array()
        .and_then(|items| items.last())
        .and_then(|i| i["text"].as_str())
        .expect("a text item");
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// What `echo` received, from its answer.
fn echoed(result: &Value) -> Value {
    assert!(result.get("isError").is_none(), "{result}");
    serde_json::from_str(first_text(result)).expect("echo answers JSON")
}

/// `text` with every UUID whose prefix is not in `whole` shortened (what the proxy must show).
fn shortened(text: &str, whole: &[&str]) -> String {
    let mut out = String::new();
    let mut copied = 0;
    for s in uuid::uuid_starts(text) {
        let full = &text[s..s + uuid::UUID_LEN];
        if whole.contains(&full) {
            continue;
        }
        out.push_str(&text[copied..s]);
        out.push_str(&uuid::prefix_of(full));
        copied = s + uuid::UUID_LEN;
    }
    out.push_str(&text[copied..]);
    out
}

#[test]
fn uuids_are_shortened_in_results_and_expanded_back_in_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut p = proxy(dir.path(), "[tools.entities]\nuuid_prefix = true\n", &[]);
    // The note is in the description of the tool whose ids are shortened, and only there.
    p.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let list = p.recv_json();
    let tools = list["result"]["tools"].as_array().expect("tools");
    let desc = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t["description"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    assert!(desc("entities").ends_with("they are expanded to the full UUID.)"));
    assert!(!desc("echo").contains("UUID"));

    let original = direct("entities", json!({"count": 30}));
    let original_text = first_text(&original);
    let result = call(&mut p, 2, "entities", json!({"count": 30}));
    let text = first_text(&result);
    assert_eq!(text, shortened(original_text, &[]));
    assert_eq!(uuid::uuid_starts(text).count(), 0, "{text}");
    // structuredContent the same way (the fixture's is the text's value).
    assert_eq!(
        result["structuredContent"],
        serde_json::from_str::<Value>(text).expect("JSON")
    );
    assert!(
        text.len() * 10 < original_text.len() * 8,
        "{} vs {}",
        text.len(),
        original_text.len()
    );

    // Prefixes passed back, as a whole value, inside a string, as a key, in upper case: the
    // upstream receives the full UUIDs.
    let issues = original["structuredContent"]["issues"]
        .as_array()
        .expect("issues");
    let id0 = issues[0]["id"].as_str().expect("id");
    let id1 = issues[1]["id"].as_str().expect("id");
    let owner = issues[2]["assignee_id"].as_str().expect("assignee");
    let (p0, p1, po) = (
        uuid::prefix_of(id0),
        uuid::prefix_of(id1),
        uuid::prefix_of(owner),
    );
    let args = json!({"issue_id": p0, "comment": format!("blocked by {p1}."),
        "by_owner": {po.to_uppercase(): [1]}, "untouched": "abcdefabcdef", "n": 1.50});
    let got = echoed(&call(&mut p, 3, "echo", args));
    assert_eq!(
        got,
        json!({"issue_id": id0, "comment": format!("blocked by {id1}."),
            "by_owner": {owner: [1]}, "untouched": "abcdefabcdef", "n": 1.50})
    );
    // A full UUID passes as it is.
    let got = echoed(&call(&mut p, 4, "echo", json!({"id": id0})));
    assert_eq!(got, json!({"id": id0}));
}

#[test]
fn a_prefix_of_two_uuids_answers_the_candidates_and_is_not_forwarded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut p = proxy(dir.path(), "[defaults]\nuuid_prefix = true\n", &[]);
    // First result: the first id is shown as its prefix.
    let plain = direct("entities", json!({"count": 3}));
    let id0 = plain["structuredContent"]["issues"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let prefix = uuid::prefix_of(&id0);
    let first = call(&mut p, 1, "entities", json!({"count": 3}));
    assert!(first_text(&first).contains(&format!("\"id\":\"{prefix}\"")));
    // Second result: another id with the same first 12 hex digits. Both are shown whole
    // there, since a prefix would name two ids; the other ids are still shortened.
    let forced = direct("entities", json!({"count": 3, "collide": true}));
    let id1 = forced["structuredContent"]["issues"][1]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_ne!(id0, id1);
    assert_eq!(uuid::prefix_of(&id1), prefix);
    let second = call(&mut p, 2, "entities", json!({"count": 3, "collide": true}));
    assert_eq!(
        first_text(&second),
        shortened(first_text(&forced), &[&id0, &id1])
    );

    // The prefix the first result showed now names two UUIDs.
    let answer = call(&mut p, 3, "echo", json!({"issue_id": prefix}));
    assert_eq!(answer["isError"], true, "{answer}");
    let error = last_json(&answer);
    assert_eq!(error["error"], "ambiguous_id");
    assert_eq!(error["prefix"], prefix);
    assert_eq!(error["candidates"], json!([id0, id1]));
    // Nothing reached the server: the next line answers the next call.
    let got = echoed(&call(&mut p, 4, "echo", json!({"issue_id": id1})));
    assert_eq!(got, json!({"issue_id": id1}));
    // Written in upper case inside an array: the same answer.
    let answer = call(&mut p, 5, "echo", json!({"x": [prefix.to_uppercase()]}));
    assert_eq!(last_json(&answer)["candidates"], json!([id0, id1]));
}

#[test]
fn query_response_sees_full_uuids_and_answers_shortened_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut p = proxy(
        dir.path(),
        "[tools.entities]\nuuid_prefix = true\n",
        &["--max-tokens", "600"],
    );
    let original = direct("entities", json!({"count": 200}));
    let id7 = original["structuredContent"]["issues"][7]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let result = call(&mut p, 1, "entities", json!({"count": 200}));
    let meta = last_json(&result);
    let rid = meta["response_id"].as_str().expect("paged").to_owned();
    // The filter sees full UUIDs; a prefix written in it matches them.
    let q = format!(
        r#"[.issues[] | select(.id == "{}") | .id | length] + ([.issues[].id | length] | unique)"#,
        uuid::prefix_of(&id7)
    );
    let answer = call(
        &mut p,
        2,
        "query_response",
        json!({"response_id": rid, "query": q}),
    );
    assert_eq!(first_text(&answer), "[36,36]", "{answer}");
    // Its output shows prefixes, like the result it queried.
    let answer = call(
        &mut p,
        3,
        "query_response",
        json!({"response_id": rid, "query": ".issues[7].id"}),
    );
    assert_eq!(first_text(&answer), uuid::prefix_of(&id7));
}

#[test]
fn response_refs_send_a_cached_result_back_without_the_model_writing_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut p = proxy(
        dir.path(),
        "[defaults]\nresponse_refs = true\n[tools.echo]\nmax_tokens = 100000\n",
        // `wire`: the echo of a whole cached response (~60,000 chars) comes back whole, past
        // the `generic` profile's 50,000-char cap (Claude Code's save-to-file threshold).
        &["--max-tokens", "400", "--client", "wire"],
    );
    let result = call(&mut p, 1, "entities", json!({"count": 200}));
    let meta = last_json(&result);
    let rid = meta["response_id"].as_str().expect("paged").to_owned();
    // The longer hint still fits the budget, on page 1 and on later pages.
    assert!(
        visible_tokens(&result) <= 400,
        "{}",
        visible_tokens(&result)
    );
    let cursor = meta["next_cursor"].as_str().expect("more").to_owned();
    let page2 = call(&mut p, 30, "read_more", json!({"cursor": cursor}));
    assert!(visible_tokens(&page2) <= 400, "{}", visible_tokens(&page2));
    assert!(
        last_json(&page2)["hint"]
            .as_str()
            .unwrap_or_default()
            .contains("$response")
    );
    // The hint of a paged result says how.
    let hint = meta["hint"].as_str().expect("hint");
    assert!(
        hint.ends_with(&format!(
            r#"Pass it to a tool as an argument: {{"$response":"{rid}","query":"<jq>"}}."#
        )),
        "{hint}"
    );

    let original = direct("entities", json!({"count": 200}));
    let issues = &original["structuredContent"]["issues"];
    let args = json!({
        "picked": {"$response": rid, "query": "[.issues[:2][] | .identifier]"},
        "deep": [{"all": {"$response": format!("{rid}.1")}}],
        "kept": {"$response": rid, "other": 1}
    });
    let got = echoed(&call(&mut p, 2, "echo", args));
    assert_eq!(got["picked"], json!(["ENG-100", "ENG-101"]));
    // No query: the whole cached response (a cursor names its response too).
    assert!(
        got["deep"][0]["all"]["issues"] == *issues,
        "the whole cached response is forwarded"
    );
    // Not a reference (another member): forwarded as it is.
    assert_eq!(got["kept"], json!({"$response": rid, "other": 1}));

    // Unknown, malformed, failing: isError, nothing forwarded.
    let cases = [
        (json!({"$response": "ffffffffffff"}), "unknown"),
        (json!({"$response": "nope"}), "malformed"),
        (
            json!({"$response": rid, "query": "error(\"no\")"}),
            "query_failed",
        ),
        (json!({"$response": rid, "query": ".[["}), "query_failed"),
    ];
    for (i, (reference, reason)) in cases.into_iter().enumerate() {
        let answer = call(
            &mut p,
            10 + i as u64,
            "echo",
            json!({"x": {"y": reference}}),
        );
        assert_eq!(answer["isError"], true, "{answer}");
        let error = last_json(&answer);
        assert_eq!(error["error"], "response_ref_failed", "{error}");
        assert_eq!(error["reason"], reason, "{error}");
        assert_eq!(error["argument"], "x.y", "{error}");
        let got = echoed(&call(&mut p, 20 + i as u64, "echo", json!({"after": i})));
        assert_eq!(got, json!({"after": i}));
    }
}

#[test]
fn without_the_options_arguments_pass_as_they_are() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut p = proxy(dir.path(), "", &["--max-tokens", "400"]);
    let result = call(&mut p, 1, "entities", json!({"count": 200}));
    let meta = last_json(&result);
    let rid = meta["response_id"].as_str().expect("paged").to_owned();
    assert!(
        !meta["hint"]
            .as_str()
            .unwrap_or_default()
            .contains("$response")
    );
    let id0 = direct("entities", json!({"count": 1}))["structuredContent"]["issues"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert!(first_text(&result).contains(&id0), "UUIDs stay whole");
    let args = json!({"r": {"$response": rid}, "p": uuid::prefix_of(&id0)});
    assert_eq!(echoed(&call(&mut p, 2, "echo", args.clone())), args);
}
