//! `serve`'s resumable SSE streams (MCP 2025-11-25, Streamable HTTP, "Resumability and
//! Redelivery"), in process, in front of a scripted upstream: a client that drops a POST's
//! stream after its first event gets the rest, the response that came after the drop
//! included, with `GET` and `Last-Event-ID`.

mod http_support;

use std::time::Duration;

use http_support::*;
use mcp_budget_proxy::config::Settings;
use mcp_budget_proxy::relay::{RelayOptions, Upstream};
use mcp_budget_proxy::serve::{ServeOptions, Server as Serve};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::time::timeout;

/// `serve --upstream <url>` on a loopback port; its endpoint's URL. Stops when the sender drops.
async fn serve(upstream_url: &str) -> (String, oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = Serve::new(
        ServeOptions::default(),
        Upstream::http(upstream(upstream_url)),
        RelayOptions::default(),
        Settings::default(),
    )
    .expect("serve");
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = server
            .run(listener, async {
                let _ = stopped.await;
            })
            .await;
    });
    (format!("http://{addr}/mcp"), stop)
}

/// One SSE event: its id and data.
#[derive(Debug)]
struct Event {
    id: Option<String>,
    data: String,
}

fn events(text: &str) -> Vec<Event> {
    text.replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|block| {
            let mut event = Event {
                id: None,
                data: String::new(),
            };
            for line in block.lines() {
                if let Some(id) = line.strip_prefix("id:") {
                    event.id = Some(id.trim().to_owned());
                } else if let Some(data) = line.strip_prefix("data:") {
                    event.data.push_str(data.trim_start());
                }
            }
            (!event.data.is_empty()).then_some(event)
        })
        .collect()
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().build().expect("client")
}

fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let mut request = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(s) = session {
        request = request
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-06-18");
    }
    request
}

fn resume(
    client: &reqwest::Client,
    url: &str,
    session: &str,
    last: &str,
) -> reqwest::RequestBuilder {
    client
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .header("last-event-id", last)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_post_stream_is_resumed_with_last_event_id() {
    let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#;
    let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}}"#;
    let upstream = Server::start(
        move |seen, _| match (seen.method.as_str(), seen.body.as_str()) {
            ("POST", b) if b.contains("\"initialize\"") => Reply::Body(
                200,
                vec![
                    ("content-type", "application/json".to_owned()),
                    ("mcp-session-id", "u-1".to_owned()),
                ],
                initialize_result("2025-06-18"),
            ),
            // Progress at once, the response 600 ms later.
            ("POST", b) if b.contains("\"slow\"") => Reply::Later(
                format!("event: message\ndata: {progress}\n\n"),
                Duration::from_millis(600),
                format!("event: message\ndata: {answer}\n\n"),
            ),
            ("POST", _) => status(202),
            ("DELETE", _) => status(200),
            _ => status(405),
        },
    )
    .await;
    let (url, _stop) = serve(&upstream.url).await;
    let http = client();

    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let response = post(&http, &url, None, &init)
        .send()
        .await
        .expect("initialize");
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    drop(response.bytes().await);
    let initialized = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    let response = post(&http, &url, Some(&session), &initialized)
        .send()
        .await
        .expect("POST");
    assert_eq!(response.status(), 202);

    // The call's stream: read its first event, then drop the connection.
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
        "name":"slow","arguments":{},"_meta":{"progressToken":"t"}}});
    let mut response = post(&http, &url, Some(&session), &call)
        .send()
        .await
        .expect("POST");
    assert!(
        response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
    );
    let mut text = String::new();
    while !text.contains("\n\n") {
        let chunk = timeout(Duration::from_secs(10), response.chunk())
            .await
            .expect("in time")
            .expect("a chunk")
            .expect("not the end");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(response);
    let first = events(&text);
    assert_eq!(first.len(), 1, "{text}");
    assert_eq!(first[0].data, progress);
    let id = first[0].id.clone().expect("an event id");
    let (stream, n) = id.split_once('-').expect("<stream>-<n>");
    assert_eq!(n, "1", "{id}");

    // The response came after the drop; resuming gets it, and only it.
    tokio::time::sleep(Duration::from_millis(900)).await;
    for _ in 0..2 {
        let resumed = resume(&http, &url, &session, &id)
            .send()
            .await
            .expect("GET");
        assert_eq!(resumed.status(), 200);
        let text = timeout(Duration::from_secs(10), resumed.text())
            .await
            .expect("the stream ends after the response")
            .expect("a body");
        let rest = events(&text);
        assert_eq!(rest.len(), 1, "{text}");
        assert_eq!(rest[0].id.as_deref(), Some(format!("{stream}-2").as_str()));
        let v: Value = serde_json::from_str(&rest[0].data).expect("JSON");
        assert_eq!(v["id"], 1);
        assert_eq!(v["result"]["content"][0]["text"], "done", "{v}");
    }

    // From the start of the stream: both events.
    let resumed = resume(&http, &url, &session, &format!("{stream}-0"))
        .send()
        .await
        .expect("GET");
    let all = events(&resumed.text().await.expect("a body"));
    assert_eq!(all.len(), 2, "{all:?}");

    // Another stream's ids, and ids that are not ours.
    let unknown = resume(&http, &url, &session, "999-1")
        .send()
        .await
        .expect("GET");
    assert_eq!(unknown.status(), 404);
    let bad = resume(&http, &url, &session, "not-an-id")
        .send()
        .await
        .expect("GET");
    assert_eq!(bad.status(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_get_stream_s_events_are_numbered_and_replayed() {
    // The server logs right after `initialized`, with no POST open: it goes to the GET stream.
    let log = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}"#;
    let upstream = Server::start(
        move |seen, _| match (seen.method.as_str(), seen.body.as_str()) {
            ("POST", b) if b.contains("\"initialize\"") => Reply::Body(
                200,
                vec![
                    ("content-type", "application/json".to_owned()),
                    ("mcp-session-id", "u-2".to_owned()),
                ],
                initialize_result("2025-06-18"),
            ),
            ("GET", _) => Reply::Later(
                format!("event: message\ndata: {log}\n\n"),
                Duration::from_secs(30),
                String::new(),
            ),
            ("POST", _) => status(202),
            _ => status(200),
        },
    )
    .await;
    let (url, _stop) = serve(&upstream.url).await;
    let http = client();
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let response = post(&http, &url, None, &init)
        .send()
        .await
        .expect("initialize");
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    drop(response.bytes().await);

    let open = |last: Option<&str>| {
        let mut request = http
            .get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session);
        if let Some(last) = last {
            request = request.header("last-event-id", last);
        }
        request
    };
    let read_one = |mut response: reqwest::Response| async move {
        let mut text = String::new();
        while !events(&text).iter().any(|e| e.id.is_some()) {
            let chunk = timeout(Duration::from_secs(10), response.chunk())
                .await
                .expect("in time")
                .expect("a chunk")
                .expect("not the end");
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        events(&text)
    };
    let got = read_one(open(None).send().await.expect("GET")).await;
    assert_eq!(got[0].id.as_deref(), Some("0-1"));
    assert_eq!(got[0].data, log);
    // Dropped; resumed from the start of the GET stream: the event again.
    let again = read_one(open(Some("0-0")).send().await.expect("GET")).await;
    assert_eq!(again[0].id.as_deref(), Some("0-1"));
    assert_eq!(again[0].data, log);
}
