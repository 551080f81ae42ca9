//! `mcp-budget proxy --upstream <URL>` through the built binary, against scripted Streamable
//! HTTP servers that reproduce the faults users report: a `200` that is not the answer (an
//! error addressed to no request, keryx#503's `{"error":"Session not found"}`), JSON that is no
//! JSON-RPC message, `410 Gone` for a session (typescript-sdk#1402), a request past
//! `--request-timeout` (cancelled upstream, its stream closed), a JSON body past
//! `--max-line-bytes` (not read whole), and the GET stream after a renewal and after a `405`.
//! Whatever the server does, stdout carries only JSON-RPC messages for the client.

mod http_support;
mod proxy_support;

use std::convert::Infallible;
use std::pin::Pin;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use proxy_support::Proxy;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// One request the server received.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    session: Option<String>,
    body: String,
}

/// What the server answers.
enum Reply {
    /// A status, a content type (none: no header) and a body (with its `Content-Length`).
    Body(u16, Option<&'static str>, Vec<u8>),
    /// `200 text/event-stream` with this text, then the end.
    Events(String),
    /// `200` of this content type, without `Content-Length`: `first`, then `chunk` every
    /// `every` (`count` times, or without end) until the client closes the stream, which sets
    /// `closed`.
    Drip {
        content_type: &'static str,
        first: String,
        chunk: Bytes,
        every: Duration,
        count: Option<usize>,
        closed: Arc<AtomicBool>,
    },
    /// `200 text/event-stream`: this text, then nothing, open until the client closes it
    /// (`open` counts the streams held open meanwhile).
    Hang(String, Arc<AtomicUsize>),
}

type Script = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// A body fed by a task, chunk by chunk.
struct Fed(mpsc::Receiver<Bytes>);

impl hyper::body::Body for Fed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|c| c.map(|c| Ok(Frame::data(c))))
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// A scripted server on loopback: its URL and what it received.
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn start(script: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Server {
        let script: Script = Arc::new(script);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let addr = http_support::serve(move |request: Request<Incoming>| {
            let (script, record) = (Arc::clone(&script), Arc::clone(&record));
            async move { answer(request, &script, &record).await }
        });
        Server {
            url: format!("http://{addr}/mcp"),
            seen,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// What it received, once `done` holds of it (or after 10 s).
    fn seen_when(&self, done: impl Fn(&[Seen]) -> bool) -> Vec<Seen> {
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let seen = self.seen();
            if done(&seen) || Instant::now() > until {
                return seen;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

async fn answer(
    request: Request<Incoming>,
    script: &Script,
    record: &Mutex<Vec<Seen>>,
) -> Response<Body> {
    let method = request.method().to_string();
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_default();
    let seen = Seen {
        method,
        session,
        body,
    };
    if let Ok(mut record) = record.lock() {
        record.push(seen.clone());
    }
    let (status, content_type, body): (u16, Option<&str>, Body) = match script(&seen) {
        Reply::Body(status, content_type, body) => (
            status,
            content_type,
            http_body_util::Full::new(Bytes::from(body)).boxed(),
        ),
        Reply::Events(text) => (
            200,
            Some("text/event-stream"),
            http_body_util::Full::new(Bytes::from(text)).boxed(),
        ),
        Reply::Drip {
            content_type,
            first,
            chunk,
            every,
            count,
            closed,
        } => {
            let (tx, rx) = mpsc::channel(4);
            tokio::spawn(async move {
                let mut sent = 0;
                let mut next = Bytes::from(first);
                while tx.send(next).await.is_ok() {
                    if count.is_some_and(|n| sent >= n) {
                        return;
                    }
                    sent += 1;
                    if !every.is_zero() {
                        tokio::time::sleep(every).await;
                    }
                    next = chunk.clone();
                }
                closed.store(true, Ordering::SeqCst);
            });
            (200, Some(content_type), Fed(rx).boxed())
        }
        Reply::Hang(text, open) => {
            let (tx, rx) = mpsc::channel(1);
            tokio::spawn(async move {
                open.fetch_add(1, Ordering::SeqCst);
                if tx.send(Bytes::from(text)).await.is_ok() {
                    tx.closed().await;
                }
                open.fetch_sub(1, Ordering::SeqCst);
            });
            (200, Some("text/event-stream"), Fed(rx).boxed())
        }
    };
    let mut response = Response::builder().status(status);
    if let Some(content_type) = content_type {
        response = response.header("content-type", content_type);
    }
    if seen.body.contains("\"initialize\"") {
        let n = SESSIONS.fetch_add(1, Ordering::SeqCst) + 1;
        response = response.header("mcp-session-id", format!("s-{n}"));
    }
    response.body(body).expect("response")
}

/// Session ids handed out (`s-<n>`, one for each `initialize`), over every server of the test
/// binary: a test reads the ids its server gave from what it saw ([`Seen::session`]).
static SESSIONS: AtomicUsize = AtomicUsize::new(0);

fn json(body: &str) -> Reply {
    Reply::Body(200, Some("application/json"), body.as_bytes().to_vec())
}

fn status(code: u16) -> Reply {
    Reply::Body(code, None, Vec::new())
}

fn sse(data: &str) -> Reply {
    Reply::Events(format!("event: message\ndata: {data}\n\n"))
}

fn initialize_result() -> Reply {
    json(
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#,
    )
}

fn call(id: u64, tool: &str) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":{}}})
        .to_string()
}

fn ok(id: u64, text: &str) -> Reply {
    json(
        &json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":text}]}})
            .to_string(),
    )
}

/// `mcp-budget proxy --upstream <url> <flags>`, its handshake done.
fn proxy(url: &str, flags: &[&str]) -> Proxy {
    let mut proxy = Proxy::spawn(
        Command::new(env!("CARGO_BIN_EXE_mcp-budget"))
            .args(["proxy", "--upstream", url, "--shutdown-grace-ms", "1000"])
            .args(flags)
            .env_remove("MCP_BUDGET_UPSTREAM")
            .env_remove("MCP_BUDGET_HEADERS")
            .env_remove("MCP_BUDGET_DEBUG"),
    );
    proxy.initialize();
    proxy
}

/// Closes the proxy's stdin: every line still to come (none is expected), once it exited.
fn finish(mut proxy: Proxy) -> Vec<Value> {
    proxy.close_stdin();
    let status = proxy.wait(Duration::from_secs(20));
    assert!(status.success(), "{status:?}: {}", proxy.stderr_text());
    proxy
        .lines_left()
        .iter()
        .map(|l| {
            serde_json::from_slice(l).unwrap_or_else(|e| {
                panic!(
                    "stdout carried a line that is not JSON ({e}): {}",
                    String::from_utf8_lossy(l)
                )
            })
        })
        .collect()
}

fn error_message(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or_default()
}

/// Answers to initialize, `notifications/*` (202), DELETE (200) and GET (405); `None` for
/// anything else.
fn basics(seen: &Seen) -> Option<Reply> {
    match seen.method.as_str() {
        "GET" => Some(status(405)),
        "DELETE" => Some(status(200)),
        _ if seen.body.contains("\"initialize\"") => Some(initialize_result()),
        _ if seen.body.contains("\"notifications/") => Some(status(202)),
        _ => None,
    }
}

#[test]
fn an_answer_addressed_to_no_request_answers_the_request_at_once_with_the_server_s_words() {
    let server = Server::start(|seen| {
        basics(seen).unwrap_or_else(|| {
            let null = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Invalid params: no tool named so"}}"#;
            if seen.body.contains("\"json_null\"") {
                json(null)
            } else if seen.body.contains("\"sse_null\"") {
                sse(null)
            } else {
                // An error without id nor code, as a bare string.
                sse(r#"{"error":"Rate limit exceeded"}"#)
            }
        })
    });
    let mut p = proxy(&server.url, &[]);
    let started = Instant::now();
    for (id, tool) in [(1, "json_null"), (2, "sse_null")] {
        p.send(&call(id, tool));
        let v = p.recv_json();
        assert_eq!(v["id"], id, "the request's own id: {v}");
        assert_eq!(v["error"]["code"], -32602, "the server's code: {v}");
        let message = error_message(&v);
        assert!(
            message.contains("addressed to no request")
                && message.ends_with("Invalid params: no tool named so"),
            "{message}"
        );
    }
    p.send(&call(3, "bare"));
    let v = p.recv_json();
    assert_eq!(v["id"], 3);
    assert_eq!(v["error"]["code"], -32000);
    assert!(error_message(&v).ends_with(": Rate limit exceeded"), "{v}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered at once, not at the request timeout"
    );
    assert_eq!(finish(p), Vec::<Value>::new());
}

/// keryx#503: a `200` whose SSE stream carries `{"error":"Session not found"}` is a session
/// the server forgot, renewed as for a `404`.
#[test]
fn a_200_saying_session_not_found_renews_the_session() {
    let forgotten = Arc::new(AtomicBool::new(false));
    let once = Arc::clone(&forgotten);
    let server = Server::start(move |seen| {
        basics(seen).unwrap_or_else(|| {
            if !once.swap(true, Ordering::SeqCst) {
                sse(r#"{"error":"Session not found"}"#)
            } else {
                ok(
                    1,
                    &format!("ok {}", seen.session.as_deref().unwrap_or("none")),
                )
            }
        })
    });
    let mut p = proxy(&server.url, &[]);
    p.send(&call(1, "echo"));
    let v = p.recv_json();
    assert_eq!(v["id"], 1, "{v}");
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("ok s-"), "answered in a new session: {v}");
    let seen = server.seen();
    let initializes = seen
        .iter()
        .filter(|s| s.body.contains("\"initialize\""))
        .count();
    assert_eq!(initializes, 2, "{seen:?}");
    let calls: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.body.contains("tools/call"))
        .collect();
    assert_eq!(calls.len(), 2, "sent once more: {calls:?}");
    assert_ne!(calls[1].session, calls[0].session);
    assert_eq!(
        text,
        format!("ok {}", calls[1].session.as_deref().unwrap_or_default())
    );
    let log = p.wait_for_stderr("started a new one");
    assert!(
        log.contains("forgot the session (HTTP 200 with \"Session not found\")"),
        "{log}"
    );
    assert_eq!(finish(p), Vec::<Value>::new());
}

/// typescript-sdk#1402: `410 Gone` for a session is renewed as a `404`, not sent again and
/// again with the dead id.
#[test]
fn a_410_gone_session_is_renewed() {
    let gone = Arc::new(Mutex::new(None::<String>));
    let first = Arc::clone(&gone);
    let server = Server::start(move |seen| {
        basics(seen).unwrap_or_else(|| {
            let mut first = first.lock().expect("lock");
            match (&*first, &seen.session) {
                (None, Some(s)) => {
                    *first = Some(s.clone());
                    status(410)
                }
                (Some(dead), Some(s)) if dead == s => status(410),
                _ => ok(if seen.body.contains("\"id\":2") { 2 } else { 1 }, "ok"),
            }
        })
    });
    let mut p = proxy(&server.url, &[]);
    for id in [1, 2] {
        p.send(&call(id, "echo"));
        let v = p.recv_json();
        assert_eq!(v["id"], id, "{v}");
        assert_eq!(v["result"]["content"][0]["text"], "ok", "{v}");
    }
    let seen = server.seen();
    let dead = gone.lock().expect("lock").clone();
    let with_dead = seen
        .iter()
        .filter(|s| s.method == "POST" && s.session == dead && s.body.contains("tools/call"))
        .count();
    assert_eq!(with_dead, 1, "the dead id is sent once: {seen:?}");
    let log = p.wait_for_stderr("started a new one");
    assert!(log.contains("(HTTP 410 Gone)"), "{log}");
    assert_eq!(finish(p), Vec::<Value>::new());
}

/// Valid JSON that is no JSON-RPC message (a body of 2 MB, an SSE event) never reaches
/// stdout: the request is answered with an error that says what came.
#[test]
fn json_that_is_no_json_rpc_message_never_reaches_the_client() {
    let big = format!(r#"{{"rows":[{}0]}}"#, "12345678,".repeat(240_000));
    assert!(big.len() > 2_000_000);
    let server = Server::start(move |seen| {
        basics(seen).unwrap_or_else(|| {
            if seen.body.contains("\"big\"") {
                json(&big)
            } else {
                sse(r#"{"status":"ok","items":[1,2,3]}"#)
            }
        })
    });
    let mut p = proxy(&server.url, &[]);
    p.send(&call(1, "big"));
    let v = p.recv_json();
    assert_eq!(v["id"], 1, "{v}");
    let message = error_message(&v);
    assert!(
        message.contains("without a JSON-RPC response to this request: the body is JSON but not a JSON-RPC message: {\"rows\":[12345678,"),
        "{message}"
    );
    assert!(message.len() < 1000, "only its start is quoted");
    p.send(&call(2, "event"));
    let v = p.recv_json();
    assert_eq!(v["id"], 2, "{v}");
    assert!(
        error_message(&v).contains("sent an event on its SSE stream without a JSON-RPC response to this request: the event is JSON but not a JSON-RPC message"),
        "{v}"
    );
    assert_eq!(finish(p), Vec::<Value>::new());
}

/// `--request-timeout`: the client is answered, the server gets `notifications/cancelled`
/// for the request, and the request's stream (an event that never ends, dripping) is closed,
/// not buffered on.
#[test]
fn a_request_past_the_timeout_is_cancelled_upstream_and_its_stream_closed() {
    let closed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&closed);
    let server = Server::start(move |seen| {
        basics(seen).unwrap_or_else(|| Reply::Drip {
            content_type: "text/event-stream",
            first: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":\""
                .to_owned(),
            chunk: Bytes::from(vec![b'x'; 16 * 1024]),
            every: Duration::from_millis(20),
            count: None,
            closed: Arc::clone(&flag),
        })
    });
    let mut p = proxy(&server.url, &["--request-timeout", "1"]);
    let started = Instant::now();
    p.send(&call(1, "endless"));
    let v = p.recv_json();
    assert_eq!(v["id"], 1, "{v}");
    assert_eq!(v["error"]["code"], -32001, "{v}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let seen = server.seen_when(|s| s.iter().any(|s| s.body.contains("notifications/cancelled")));
    let cancelled = seen
        .iter()
        .find(|s| s.body.contains("notifications/cancelled"))
        .unwrap_or_else(|| panic!("no notifications/cancelled: {seen:?}"));
    let note: Value = serde_json::from_str(&cancelled.body).expect("JSON");
    assert_eq!(note["params"]["requestId"], 1, "{note}");
    assert!(
        note["params"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("--request-timeout")),
        "{note}"
    );
    let call = seen
        .iter()
        .find(|s| s.body.contains("\"endless\""))
        .expect("the call");
    assert!(call.session.is_some());
    assert_eq!(cancelled.session, call.session, "in the call's session");
    let until = Instant::now() + Duration::from_secs(5);
    while !closed.load(Ordering::SeqCst) && Instant::now() < until {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(
        closed.load(Ordering::SeqCst),
        "the stream of the request was closed"
    );
    assert_eq!(finish(p), Vec::<Value>::new());
}

/// The peak resident memory of process `pid` (`VmHWM`), in bytes; `None` off Linux.
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A 200 MB JSON body (chunked: no `Content-Length` to refuse it by) past `--max-line-bytes
/// 16MiB` is read no further than the bound, then answered with an error.
#[test]
fn a_json_body_past_max_line_bytes_is_not_read_whole() {
    let server = Server::start(move |seen| {
        basics(seen).unwrap_or_else(|| {
            if seen.body.contains("\"declared\"") {
                Reply::Body(200, Some("application/json"), vec![b' '; 32 * 1024 * 1024])
            } else {
                Reply::Drip {
                    content_type: "application/json",
                    first:
                        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""#
                            .to_owned(),
                    chunk: Bytes::from(vec![b'x'; 1024 * 1024]),
                    every: Duration::ZERO,
                    count: Some(200),
                    closed: Arc::new(AtomicBool::new(false)),
                }
            }
        })
    });
    let limit = 16 * 1024 * 1024;
    let mut p = proxy(&server.url, &["--max-line-bytes", &limit.to_string()]);
    p.send(&call(1, "chunked"));
    let v = p.recv_json_within(Duration::from_secs(30));
    assert_eq!(v["id"], 1, "{v}");
    assert!(
        error_message(&v).contains(&format!(
            "response of more than {limit} bytes exceeds the proxy's limit of {limit} bytes per line"
        )),
        "{v}"
    );
    // A Content-Length past the bound: refused without reading.
    p.send(&call(2, "declared"));
    let v = p.recv_json_within(Duration::from_secs(30));
    assert_eq!(v["id"], 2, "{v}");
    assert!(
        error_message(&v).contains(&format!("response of {} bytes exceeds", 32 * 1024 * 1024)),
        "{v}"
    );
    if let Some(peak) = peak_rss(p.pid()) {
        // The whole body held would be 200 MB at least.
        assert!(peak < 100 * 1024 * 1024, "peak RSS {} MiB", peak >> 20);
    }
    assert_eq!(finish(p), Vec::<Value>::new());
}

/// After a renewal the old session's GET stream is closed and only the new session's listens
/// (servers that allow one GET stream per session refuse a second).
#[test]
fn after_a_renewal_one_get_stream_listens() {
    let open = Arc::new(AtomicUsize::new(0));
    let streams = Arc::clone(&open);
    let forgot = Arc::new(AtomicBool::new(false));
    let once = Arc::clone(&forgot);
    let server = Server::start(move |seen| match seen.method.as_str() {
        "GET" => Reply::Hang(": open\n\n".to_owned(), Arc::clone(&streams)),
        _ => basics(seen).unwrap_or_else(|| {
            if once.swap(true, Ordering::SeqCst) {
                ok(1, "ok")
            } else {
                status(404)
            }
        }),
    });
    let mut p = proxy(&server.url, &[]);
    server.seen_when(|s| s.iter().any(|s| s.method == "GET"));
    p.send(&call(1, "echo"));
    let v = p.recv_json();
    assert_eq!(v["result"]["content"][0]["text"], "ok", "{v}");
    let seen = server.seen_when(|s| s.iter().filter(|s| s.method == "GET").count() >= 2);
    let gets: Vec<&Seen> = seen.iter().filter(|s| s.method == "GET").collect();
    assert_eq!(gets.len(), 2, "{gets:?}");
    assert_ne!(gets[0].session, gets[1].session);
    // The old one is closed by the proxy; one stays open.
    let until = Instant::now() + Duration::from_secs(5);
    while open.load(Ordering::SeqCst) != 1 && Instant::now() < until {
        thread::sleep(Duration::from_millis(20));
    }
    thread::sleep(Duration::from_millis(300));
    assert_eq!(open.load(Ordering::SeqCst), 1, "one GET stream per session");
    assert_eq!(
        server.seen().iter().filter(|s| s.method == "GET").count(),
        2,
        "no other GET"
    );
    assert_eq!(finish(p), Vec::<Value>::new());
}

/// A GET stream that was open, ended, and is refused on reopening (`405`) says so once on
/// stderr (a server that never offered one is only a debug line).
#[test]
fn a_405_on_a_reopened_get_stream_is_a_warning() {
    let gets = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&gets);
    let server = Server::start(move |seen| {
        match seen.method.as_str() {
        "GET" if counted.fetch_add(1, Ordering::SeqCst) == 0 => Reply::Events(
            "id: g-1\nretry: 20\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"hi\"}}\n\n".to_owned(),
        ),
        _ => basics(seen).unwrap_or_else(|| ok(1, "ok")),
    }
    });
    let p = proxy(&server.url, &[]);
    let note = p.recv_json();
    assert_eq!(note["method"], "notifications/message", "{note}");
    let log = p.wait_for_stderr("refused to reopen its GET stream (HTTP 405)");
    assert_eq!(
        log.matches("refused to reopen its GET stream").count(),
        1,
        "{log}"
    );
    assert_eq!(gets.load(Ordering::SeqCst), 2);
    assert!(finish(p).is_empty());

    // A server without a GET stream: nothing on stderr about it.
    let plain = Server::start(|seen| basics(seen).unwrap_or_else(|| ok(1, "ok")));
    let p = proxy(&plain.url, &[]);
    plain.seen_when(|s| s.iter().any(|s| s.method == "GET"));
    thread::sleep(Duration::from_millis(200));
    assert!(
        !p.stderr_text().contains("GET stream"),
        "{}",
        p.stderr_text()
    );
    assert!(finish(p).is_empty());
}
