//! `mcp-budget serve` through the built binary, over real HTTP, in front of the fixture server:
//! session ids, principals (cursor scope), the security checks and the limits, faults.

mod serve_support;

use std::io::Read as _;
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};
use serve_support::{
    Serve, client, first_text, initialize_body, meta_item, response_of, sse_messages,
};

fn is_hex_id(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[test]
fn sessions_get_random_ids_which_later_requests_need() {
    let serve = Serve::fixture(&[]);
    let a = serve.initialize(None);
    let b = serve.initialize(None);
    assert!(is_hex_id(&a) && is_hex_id(&b), "{a} {b}");
    assert_ne!(a, b);

    // No session id after initialize: 400. An unknown one: 404.
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
    let resp = serve.post(None, &list).send().unwrap();
    assert_eq!(resp.status(), 400);
    assert!(resp.text().unwrap().contains("Mcp-Session-Id"));
    let resp = serve
        .post(Some("0123456789abcdef0123456789abcdef"), &list)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 404);

    // A session works; its tools/list carries the injected tools.
    let listed = response_of(serve.post(Some(&a), &list).send().unwrap());
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"read_more") && names.contains(&"query_response"),
        "{names:?}"
    );

    // DELETE ends it (its server stopped); the id is then unknown. The other session lives.
    let resp = client()
        .delete(&serve.url)
        .header("mcp-session-id", &a)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 204);
    let resp = serve.post(Some(&a), &list).send().unwrap();
    assert_eq!(resp.status(), 404);
    let again = response_of(serve.post(Some(&b), &list).send().unwrap());
    assert!(again["result"]["tools"].is_array());
    let log = serve.wait_for_stderr("deleted by the client");
    assert!(
        log.contains(&format!("session {} started", &a[..8])),
        "{log}"
    );
    assert!(log.contains(&format!("session {} ended", &a[..8])), "{log}");
    // Logs never carry a whole session id.
    assert!(!log.contains(&a), "{log}");
}

#[test]
fn another_sessions_cursor_is_unknown_without_a_token() {
    let serve = Serve::fixture(&["--max-tokens", "2000"]);
    let a = serve.initialize(None);
    let b = serve.initialize(None);
    let first = serve.call(&a, None, 1, "table_rows", json!({}));
    let cursor = meta_item(&first)["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    // The owner reads on.
    let own = serve.call(&a, None, 2, "read_more", json!({"cursor": cursor}));
    assert_ne!(own["result"]["isError"], json!(true), "{own}");
    // Another session: cursor_invalid, reason unknown.
    let other = serve.call(&b, None, 1, "read_more", json!({"cursor": cursor}));
    assert_eq!(other["result"]["isError"], json!(true), "{other}");
    let err: Value = serde_json::from_str(&first_text(&other)).unwrap();
    assert_eq!(err["error"], "cursor_invalid");
    assert_eq!(err["reason"], "unknown");
}

#[test]
fn sessions_of_one_token_share_cursors() {
    let serve = Serve::fixture(&["--max-tokens", "2000", "--auth-token", "tok-1"]);
    let a = serve.initialize(Some("tok-1"));
    let b = serve.initialize(Some("tok-1"));
    let first = serve.call(&a, Some("tok-1"), 1, "table_rows", json!({}));
    let cursor = meta_item(&first)["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let page2 = serve.call(&b, Some("tok-1"), 1, "read_more", json!({"cursor": cursor}));
    assert_ne!(page2["result"]["isError"], json!(true), "{page2}");
    assert!(first_text(&page2).contains("row-"), "{page2}");
}

#[test]
fn a_missing_or_bad_token_gets_401() {
    let serve = Serve::fixture(&["--auth-token", "right"]);
    for token in [None, Some("wrong"), Some("righ"), Some("right ")] {
        let mut req = serve.post(None, &initialize_body());
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let resp = req.send().unwrap();
        // "right " is trimmed: it is the token.
        if token == Some("right ") {
            assert_eq!(resp.status(), 200);
            continue;
        }
        assert_eq!(resp.status(), 401, "{token:?}");
        let challenge = resp.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(challenge.starts_with("Bearer"), "{challenge}");
    }
    // GET and DELETE need it too.
    let resp = client().delete(&serve.url).send().unwrap();
    assert_eq!(resp.status(), 401);
    let id = serve.initialize(Some("right"));
    assert!(is_hex_id(&id));
}

#[test]
fn a_foreign_origin_gets_403_and_localhost_passes() {
    let serve = Serve::fixture(&["--allow-origin", "https://app.example.com"]);
    for (origin, status) in [
        ("http://evil.example", 403),
        ("null", 403),
        ("http://localhost:5173", 200),
        ("http://127.0.0.1:8080", 200),
        ("https://app.example.com", 200),
    ] {
        let resp = serve
            .post(None, &initialize_body())
            .header("origin", origin)
            .send()
            .unwrap();
        assert_eq!(resp.status(), status, "{origin}");
    }
}

#[test]
fn a_body_past_the_limit_gets_413() {
    let serve = Serve::fixture(&["--max-body-bytes", "1KiB"]);
    let id = serve.initialize(None);
    let big = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"echo","arguments":{"pad":"x".repeat(2000)}}});
    let resp = serve.post(Some(&id), &big).send().unwrap();
    assert_eq!(resp.status(), 413);
    let small = serve.call(&id, None, 2, "echo", json!({"pad": "x"}));
    assert_eq!(first_text(&small), r#"{"pad":"x"}"#);
}

#[test]
fn past_max_sessions_initialize_gets_503() {
    let serve = Serve::fixture(&["--max-sessions", "1"]);
    let a = serve.initialize(None);
    let resp = serve.post(None, &initialize_body()).send().unwrap();
    assert_eq!(resp.status(), 503);
    assert!(resp.headers().contains_key("retry-after"));
    let body: Value = serde_json::from_str::<Value>(&resp.text().unwrap()).unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-sessions"),
        "{body}"
    );
    // Ending one frees its place.
    client()
        .delete(&serve.url)
        .header("mcp-session-id", &a)
        .send()
        .unwrap();
    serve.wait_for_stderr("(0 of 1 live)");
    serve.initialize(None);
}

#[test]
fn idle_sessions_expire() {
    let serve = Serve::fixture(&["--session-idle", "1s"]);
    let id = serve.initialize(None);
    let log = serve.wait_for_stderr("idle for 1s");
    assert!(log.contains("idle for 1s"), "{log}");
    let resp = serve
        .post(
            Some(&id),
            &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        )
        .send()
        .unwrap();
    assert_eq!(resp.status(), 404);
}

#[test]
fn a_request_in_flight_keeps_its_session_from_expiring() {
    let serve = Serve::fixture(&["--session-idle", "1s"]);
    let id = serve.initialize(None);
    let slow = serve.call(&id, None, 1, "slow", json!({"ms": 2500}));
    assert_eq!(first_text(&slow), "slept 2500 ms");
}

#[test]
fn a_client_that_disconnects_mid_call_leaves_the_session_working() {
    let serve = Serve::fixture(&[]);
    let id = serve.initialize(None);
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"slow","arguments":{"ms":800}}});
    let quick = serve_support::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let gone = quick
        .post(&serve.url)
        .header("mcp-session-id", &id)
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string())
        .send();
    assert!(gone.is_err(), "the call should have timed out client-side");
    // The late answer is dropped, not sent elsewhere; the same id can be used again.
    let log = serve.wait_for_stderr("dropped a response nobody waits for");
    assert!(log.contains("dropped a response nobody waits for"), "{log}");
    let again = serve.call(&id, None, 1, "echo", json!({"after": "disconnect"}));
    assert_eq!(first_text(&again), r#"{"after":"disconnect"}"#);
}

#[test]
fn server_messages_during_a_call_stream_before_its_response() {
    let serve = Serve::fixture(&[]);
    let id = serve.initialize(None);
    let body = json!({"jsonrpc":"2.0","id":9,"method":"tools/call",
        "params":{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"tok"}}});
    let resp = serve.post(Some(&id), &body).send().unwrap();
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let messages = sse_messages(&resp.text().unwrap());
    let methods: Vec<&str> = messages
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("(response)"))
        .collect();
    assert_eq!(
        methods,
        [
            "notifications/progress",
            "notifications/progress",
            "notifications/progress",
            "notifications/message",
            "(response)"
        ]
    );
    assert_eq!(messages[4]["id"], 9);
}

#[test]
fn the_get_stream_opens_once_per_session() {
    let serve = Serve::fixture(&[]);
    let id = serve.initialize(None);
    let mut get = client()
        .get(&serve.url)
        .header("mcp-session-id", &id)
        .header("accept", "text/event-stream")
        .send()
        .unwrap();
    assert_eq!(get.status(), 200);
    assert_eq!(get.headers()["content-type"], "text/event-stream");
    let second = client()
        .get(&serve.url)
        .header("mcp-session-id", &id)
        .header("accept", "text/event-stream")
        .send()
        .unwrap();
    assert_eq!(second.status(), 409);
    // DELETE ends the session, which ends its GET stream.
    client()
        .delete(&serve.url)
        .header("mcp-session-id", &id)
        .send()
        .unwrap();
    let mut rest = String::new();
    let _ = get.read_to_string(&mut rest);
    // Without a session: 400; a stateless (2026-07-28) client: 405.
    assert_eq!(client().get(&serve.url).send().unwrap().status(), 400);
    let modern = client()
        .get(&serve.url)
        .header("mcp-protocol-version", "2026-07-28")
        .send()
        .unwrap();
    assert_eq!(modern.status(), 405);
}

#[test]
fn an_upstream_that_cannot_start_gets_a_clear_error() {
    let serve = Serve::start(&["--max-sessions", "1"], &["/nonexistent/mcp-server"]);
    for _ in 0..2 {
        let resp = serve.post(None, &initialize_body()).send().unwrap();
        assert_eq!(resp.status(), 502);
        assert!(!resp.headers().contains_key("mcp-session-id"));
        let body: Value = serde_json::from_str::<Value>(&resp.text().unwrap()).unwrap();
        assert_eq!(body["id"], 0);
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("cannot start the upstream server"),
            "{message}"
        );
        // Its place is given back: the next attempt fails the same way, not with 503.
        serve.wait_for_stderr("(0 of 1 live)");
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn stateless_requests_check_their_headers() {
    let serve = Serve::fixture(&[]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},
        "io.modelcontextprotocol/clientCapabilities":{}});
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"echo","arguments":{},"_meta":meta}});
    let post = |version: &str, method: &str, name: &str| {
        client()
            .post(&serve.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", version)
            .header("mcp-method", method)
            .header("mcp-name", name)
            .body(call.to_string())
            .send()
            .unwrap()
    };
    let unsupported = post("2099-01-01", "tools/call", "echo");
    assert_eq!(unsupported.status(), 400);
    let body: Value = serde_json::from_str::<Value>(&unsupported.text().unwrap()).unwrap();
    assert_eq!(body["error"]["code"], -32022);
    assert!(
        body["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    for (method, name) in [("tools/list", "echo"), ("tools/call", "other")] {
        let resp = post("2026-07-28", method, name);
        assert_eq!(resp.status(), 400, "{method} {name}");
        let body: Value = serde_json::from_str::<Value>(&resp.text().unwrap()).unwrap();
        assert_eq!(body["error"]["code"], -32020, "{body}");
    }
    // Base64 sentinel of "echo" (2026-07-28 "Value Encoding").
    let ok = post("2026-07-28", "tools/call", "=?base64?ZWNobw==?=");
    assert_eq!(ok.status(), 200);
    assert!(ok.headers().get("mcp-session-id").is_none());
    assert_eq!(first_text(&response_of(ok)), "{}");
}

#[test]
fn serve_upstream_gives_each_session_its_own_remote_session() {
    // HTTP → HTTP: the inner `serve` stands for any remote Streamable HTTP server.
    let inner = Serve::fixture(&[]);
    let outer = Serve::start(&["--upstream", &inner.url], &[]);
    let a = outer.initialize(None);
    let b = outer.initialize(None);
    let echoed = outer.call(&a, None, 1, "echo", json!({"over": "http twice"}));
    assert_eq!(first_text(&echoed), r#"{"over":"http twice"}"#);
    let slow = outer.call(&b, None, 1, "slow", json!({"ms": 10}));
    assert_eq!(first_text(&slow), "slept 10 ms");
    // One remote session per client session.
    let log = inner.wait_for_stderr("2 of 32 live");
    assert!(log.contains("2 of 32 live"), "{log}");
    // Ending the client's session ends its remote one (HTTP DELETE upstream).
    let resp = client()
        .delete(&outer.url)
        .header("mcp-session-id", &a)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 204);
    let log = inner.wait_for_stderr("deleted by the client");
    assert!(log.contains("deleted by the client"), "{log}");
    let still = outer.call(&b, None, 2, "echo", json!({"b": 1}));
    assert_eq!(first_text(&still), r#"{"b":1}"#);
}

#[test]
fn stateless_requests_reuse_an_idle_worker_and_share_the_local_principal() {
    let bin = env!("CARGO_BIN_EXE_mcp-budget");
    let serve = Serve::start(
        &["--max-tokens", "2000"],
        &[bin, "fixture-server", "--protocol", "2026-07-28"],
    );
    let meta = json!({"io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},
        "io.modelcontextprotocol/clientCapabilities":{}});
    let call = |id: u64, tool: &str, args: Value| {
        let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":tool,"arguments":args,"_meta":meta}});
        let resp = client()
            .post(&serve.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool)
            .body(body.to_string())
            .send()
            .unwrap();
        assert_eq!(resp.status(), 200);
        response_of(resp)
    };
    let first = call(1, "table_rows", json!({}));
    let cursor = meta_item(&first)["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    // Another request, with the same id as the first (another client): the cursor works.
    let page2 = call(1, "read_more", json!({"cursor": cursor}));
    assert_ne!(page2["result"]["isError"], json!(true), "{page2}");
    assert!(first_text(&page2).contains("row-"), "{page2}");
    let log = serve.stderr();
    assert_eq!(log.matches("stateless worker started").count(), 1, "{log}");
}

/// A POST and its headers as a 2025-11-25 client sends them.
fn post_2025_11_25(
    serve: &Serve,
    session: &str,
    accept: &str,
    body: &Value,
) -> reqwest::blocking::Response {
    client()
        .post(&serve.url)
        .header("content-type", "application/json")
        .header("accept", accept)
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string())
        .send()
        .unwrap()
}

/// MCP 2025-11-25, Streamable HTTP: "the server SHOULD immediately send an SSE event consisting
/// of an event ID and an empty data field in order to prime the client to reconnect". A client
/// that drops the stream before the first message resumes from that id and gets the answer.
#[test]
fn a_call_stream_is_primed_at_once_and_resumed_from_the_priming_event() {
    let serve = Serve::fixture(&[]);
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"serve-tests","version":"1"}}});
    let resp = serve.post(None, &init).send().unwrap();
    let id = resp.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = resp.text();
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let accept = "application/json, text/event-stream";
    assert_eq!(post_2025_11_25(&serve, &id, accept, &note).status(), 202);

    // A slow call: the headers and the priming event come at once, long before the answer.
    let started = std::time::Instant::now();
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"slow","arguments":{"ms":1500}}});
    let mut resp = post_2025_11_25(&serve, &id, accept, &call);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut text = String::new();
    let mut buf = [0u8; 256];
    while !text.contains("\n\n") {
        let n = resp.read(&mut buf).unwrap();
        assert!(n > 0, "the stream ended early: {text:?}");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(
        started.elapsed() < Duration::from_millis(1000),
        "primed at once, not with the answer: {:?}",
        started.elapsed()
    );
    let (stream, rest) = text
        .strip_prefix("id: ")
        .and_then(|t| t.split_once("-0\n"))
        .unwrap_or_else(|| panic!("an id <stream>-0 first: {text:?}"));
    assert!(stream.parse::<u64>().is_ok(), "{text:?}");
    assert_eq!(
        rest, "retry: 1000\ndata:\n\n",
        "id, retry and empty data: {text:?}"
    );
    // Dropped before the first message.
    drop(resp);

    let resumed = client()
        .get(&serve.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", format!("{stream}-0"))
        .send()
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let text = resumed.text().unwrap();
    assert!(
        text.contains(&format!("id: {stream}-1\n")),
        "the answer is event 1 of the stream: {text:?}"
    );
    let answer = sse_messages(&text).pop().expect("the answer");
    assert_eq!(answer["id"], 1);
    assert_eq!(first_text(&answer), "slept 1500 ms");

    // A client that takes JSON only gets JSON, as before.
    let echo = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"echo","arguments":{"json":"only"}}});
    let resp = post_2025_11_25(&serve, &id, "application/json", &echo);
    assert_eq!(resp.headers()["content-type"], "application/json");
    assert_eq!(first_text(&response_of(resp)), r#"{"json":"only"}"#);
}
