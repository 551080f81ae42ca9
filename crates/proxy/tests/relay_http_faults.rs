//! The HTTP upstream against servers that forget sessions or misbehave, and the 2026-07-28
//! `x-mcp-header` parameters: a 404 on a session starts a new one transparently (or says why it
//! cannot), an endless SSE event is cut with an error, a `200` without a JSON-RPC response is
//! answered at once, and `tools/call` mirrors annotated parameters into `Mcp-Param-*` headers.

mod http_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http_support::*;

/// A server whose sessions are `s-1`, `s-2`, …: each `initialize` starts a new one, and it
/// forgets session `s-1` after its first `tools/call` (a restart). `version(n)` is the protocol
/// version the `n`-th initialize negotiates.
async fn forgetful(version: fn(usize) -> &'static str) -> Server {
    let sessions = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    Server::start(move |seen, _| {
        let session = seen.header("mcp-session-id").unwrap_or_default().to_owned();
        let current = format!("s-{}", sessions.load(Ordering::SeqCst));
        match (seen.method.as_str(), seen.body.as_str()) {
            ("POST", b) if b.contains("\"initialize\"") => {
                let n = sessions.fetch_add(1, Ordering::SeqCst) + 1;
                Reply::Body(
                    200,
                    vec![
                        ("content-type", "application/json".to_owned()),
                        ("mcp-session-id", format!("s-{n}")),
                    ],
                    initialize_result(version(n)),
                )
            }
            _ if session != current => status(404),
            ("POST", b) if b.contains("\"tools/call\"") => {
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    // The first call finds the server restarted: the session is gone.
                    sessions.fetch_add(100, Ordering::SeqCst);
                    return status(404);
                }
                let id = if b.contains("\"id\":1") { 1 } else { 2 };
                json(&format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok {session}"}}]}}}}"#
                ))
            }
            ("POST", _) => status(202),
            ("DELETE", _) => status(200),
            _ => status(405),
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_session_is_renewed_and_the_request_sent_again() {
    let server = forgetful(|_| "2025-06-18").await;
    let mut c = Client::start(upstream(&server.url));
    c.send(INITIALIZE).await;
    let v = c.recv_json().await;
    assert_eq!(v["result"]["protocolVersion"], "2025-06-18");
    c.send(INITIALIZED).await;
    c.send(CALL).await;
    let v = c.recv_json().await;
    assert_eq!(v["id"], 1, "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "ok s-102", "{v}");
    // The client sees one initialize answer only; later calls use the new session.
    c.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}"#)
        .await;
    let v = c.recv_json().await;
    assert_eq!(v["result"]["content"][0]["text"], "ok s-102", "{v}");
    c.finish().await;
    let seen = server.seen();
    let posts: Vec<&Seen> = seen.iter().filter(|s| s.method == "POST").collect();
    let initializes: Vec<&&Seen> = posts
        .iter()
        .filter(|s| s.body.contains("\"initialize\""))
        .collect();
    assert_eq!(initializes.len(), 2, "{posts:?}");
    assert_eq!(
        initializes[1].body, INITIALIZE,
        "the client's initialize, byte for byte"
    );
    assert_eq!(initializes[1].header("mcp-session-id"), None);
    let replayed = posts
        .iter()
        .filter(|s| s.body == INITIALIZED)
        .map(|s| s.header("mcp-session-id"))
        .collect::<Vec<_>>();
    assert_eq!(replayed, vec![Some("s-1"), Some("s-102")]);
    let delete = seen.iter().find(|s| s.method == "DELETE").expect("DELETE");
    assert_eq!(delete.header("mcp-session-id"), Some("s-102"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_cannot_be_renewed_is_said_expired() {
    // The restarted server negotiates another version: the client's session cannot go on.
    let server = forgetful(|n| if n == 1 { "2025-06-18" } else { "2025-11-25" }).await;
    let mut c = Client::start(upstream(&server.url));
    c.send(INITIALIZE).await;
    c.recv().await;
    c.send(INITIALIZED).await;
    c.send(CALL).await;
    let v = c.recv_json().await;
    assert_eq!(v["id"], 1);
    assert_eq!(v["error"]["code"], -32000, "{v}");
    let message = error_message(&v);
    assert!(
        message.contains("no longer knows this session (HTTP 404")
            && message.contains("negotiates protocol version 2025-11-25 instead of 2025-06-18")
            && message.contains("reconnect this MCP server"),
        "{message}"
    );
    c.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_event_is_cut_with_a_clear_error() {
    let server = Server::start(|seen, _| match seen.body.as_str() {
        b if b.contains("\"echo\"") => {
            Reply::Endless("event: message\ndata: {\"jsonrpc\":".to_owned())
        }
        _ => status(405),
    })
    .await;
    // 1 MiB lines: the event is cut past 1 MiB + 64 KiB.
    let mut c = Client::start_with(upstream(&server.url), |o| o.max_line_bytes = 1 << 20);
    let started = Instant::now();
    c.send(CALL).await;
    let v = c.recv_json().await;
    assert_eq!(v["id"], 1);
    let message = error_message(&v);
    assert!(
        message.contains("broke the protocol")
            && message.contains(&format!(
                "went past {} bytes without the blank line that ends it",
                (1 << 20) + 64 * 1024
            )),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    c.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_without_a_json_rpc_response_is_answered_at_once() {
    let server = Server::start(|seen, _| match seen.body.as_str() {
        b if b.contains("\"empty\"") => json(""),
        b if b.contains("\"html\"") => Reply::Body(
            200,
            vec![("content-type", "text/html".to_owned())],
            "<html><body>Sign in</body></html>".to_owned(),
        ),
        b if b.contains("\"note\"") => {
            json(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}"#)
        }
        _ => status(405),
    })
    .await;
    let mut c = Client::start(upstream(&server.url));
    let started = Instant::now();
    for (id, tool) in [(1, "empty"), (2, "html"), (3, "note")] {
        c.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}"}}}}"#
        ))
        .await;
        let mut v = c.recv_json().await;
        if tool == "note" {
            // The notification itself reaches the client, then the error.
            assert_eq!(v["method"], "notifications/message", "{v}");
            v = c.recv_json().await;
        }
        assert_eq!(v["id"], id, "{v}");
        let message = error_message(&v);
        assert!(
            message.contains("answered HTTP 200 OK")
                && message.contains("without a JSON-RPC response to this request"),
            "{message}"
        );
        match tool {
            "empty" => assert!(message.contains("the body is empty"), "{message}"),
            "html" => assert!(
                message.contains("\"text/html\"") && message.contains("Sign in"),
                "{message}"
            ),
            _ => {}
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered at once, not at a timeout"
    );
    c.finish().await;
}

const STATELESS_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_tool_calls_mirror_x_mcp_header_parameters() {
    let tools = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[
        {"name":"execute_sql","inputSchema":{"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "query":{"type":"string"}}}},
        {"name":"bad","inputSchema":{"type":"object","properties":{
            "ratio":{"type":"number","x-mcp-header":"Ratio"}}}},
        {"name":"plain","inputSchema":{"type":"object"}}]}}"#;
    let server = Server::start(move |seen, _| match seen.body.as_str() {
        b if b.contains("\"tools/list\"") => json(tools),
        _ => json(r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#),
    })
    .await;
    let mut c = Client::start(upstream(&server.url));
    c.send(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{STATELESS_META}}}}}"#
    ))
    .await;
    let v = c.recv_json().await;
    let names: Vec<&str> = v["result"]["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        names,
        vec!["execute_sql", "plain"],
        "a tool with an invalid annotation is dropped"
    );
    c.send(&format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"execute_sql","arguments":{{"region":"us-west1","query":"SELECT 1"}},{STATELESS_META}}}}}"#
    ))
    .await;
    let v = c.recv_json().await;
    assert_eq!(v["id"], 2);
    c.finish().await;
    let seen = server.seen();
    let call = seen
        .iter()
        .find(|s| s.body.contains("\"tools/call\""))
        .expect("the call");
    assert_eq!(call.header("mcp-param-region"), Some("us-west1"));
    assert_eq!(call.header("mcp-name"), Some("execute_sql"));
    assert_eq!(call.header("mcp-param-query"), None);
}
