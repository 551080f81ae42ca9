//! The relay with a remote upstream over Streamable HTTP, against a small scripted HTTP server
//! (hyper) on loopback: headers, sessions, SSE answers, resumption with `Last-Event-ID`, the
//! GET stream, the session's DELETE, and the errors that answer requests whose exchange failed.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use mcp_budget_proxy::relay::{HttpUpstream, Relay, RelayExit, RelayOptions, Upstream};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio::time::timeout;

/// One request the server received.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    headers: HashMap<String, String>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// What the server answers.
enum Reply {
    /// A status, headers and a body.
    Body(u16, Vec<(&'static str, String)>, String),
    /// `200 text/event-stream` with this SSE text (the stream ends after it).
    Events(Vec<(&'static str, String)>, String),
    /// `200 text/event-stream` with this SSE text, then nothing, open until the client closes
    /// it, which sets the flag.
    Hang(String, Arc<std::sync::atomic::AtomicBool>),
}

/// Sets its flag when dropped (the server's end of a stream the client closed).
struct OnDrop(Arc<std::sync::atomic::AtomicBool>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

fn json(body: &str) -> Reply {
    Reply::Body(
        200,
        vec![("content-type", "application/json".to_owned())],
        body.to_owned(),
    )
}

fn status(code: u16) -> Reply {
    Reply::Body(code, Vec::new(), String::new())
}

type Script = Arc<dyn Fn(&Seen, usize) -> Reply + Send + Sync>;

/// A scripted Streamable HTTP server: `script(request, index)` answers each request.
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    async fn start(script: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr: SocketAddr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script: Script = Arc::new(script);
        let record = Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (script, record) = (Arc::clone(&script), Arc::clone(&record));
                tokio::spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let (script, record) = (Arc::clone(&script), Arc::clone(&record));
                        async move { Ok::<_, Infallible>(answer(request, &script, &record).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Server {
            url: format!("http://{addr}/mcp"),
            seen,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn answer(
    request: Request<Incoming>,
    script: &Script,
    record: &Mutex<Vec<Seen>>,
) -> Response<Body> {
    use futures_util::StreamExt as _;
    use http_body_util::BodyExt as _;
    let method = request.method().to_string();
    let headers = request
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("?").to_owned()))
        .collect();
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_default();
    let seen = Seen {
        method,
        headers,
        body,
    };
    let index = {
        let mut record = record.lock().expect("lock");
        record.push(seen.clone());
        record.len() - 1
    };
    let (code, headers, body): (u16, Vec<(&str, String)>, Body) = match script(&seen, index) {
        Reply::Body(code, headers, body) => (code, headers, Full::new(Bytes::from(body)).boxed()),
        Reply::Events(headers, text) => {
            let mut headers = headers;
            headers.push(("content-type", "text/event-stream".to_owned()));
            (200, headers, Full::new(Bytes::from(text)).boxed())
        }
        Reply::Hang(text, closed) => {
            let guard = OnDrop(closed);
            let first = futures_util::stream::iter([Ok::<_, Infallible>(
                hyper::body::Frame::data(Bytes::from(text)),
            )]);
            let rest = futures_util::stream::pending().map(move |()| {
                let _ = &guard;
                Ok(hyper::body::Frame::data(Bytes::new()))
            });
            let body = http_body_util::StreamBody::new(first.chain(rest));
            (
                200,
                vec![("content-type", "text/event-stream".to_owned())],
                http_body_util::BodyExt::boxed(body),
            )
        }
    };
    let mut response = Response::builder().status(code);
    for (name, value) in headers {
        response = response.header(name, value);
    }
    response.body(body).expect("response")
}

/// The client's end of a relay to `upstream`.
struct Client {
    to_relay: DuplexStream,
    from_relay: Lines<BufReader<DuplexStream>>,
    relay: JoinHandle<Result<RelayExit, mcp_budget_proxy::relay::RelayError>>,
}

impl Client {
    fn start(upstream: HttpUpstream) -> Client {
        let (to_relay, relay_in) = tokio::io::duplex(1 << 16);
        let (relay_out, from_relay) = tokio::io::duplex(1 << 16);
        let mut options = RelayOptions::default();
        options.shutdown_grace = Duration::from_millis(500);
        let relay = Relay::new(options);
        let relay = tokio::spawn(async move {
            relay
                .run(&Upstream::http(upstream), relay_in, relay_out)
                .await
        });
        Client {
            to_relay,
            from_relay: BufReader::new(from_relay).lines(),
            relay,
        }
    }

    async fn send(&mut self, line: &str) {
        self.to_relay
            .write_all(line.as_bytes())
            .await
            .expect("write");
        self.to_relay.write_all(b"\n").await.expect("write");
    }

    async fn recv(&mut self) -> String {
        match timeout(Duration::from_secs(10), self.from_relay.next_line()).await {
            Ok(Ok(Some(line))) => line,
            other => panic!("no line from the relay: {other:?}"),
        }
    }

    async fn recv_json(&mut self) -> Value {
        let line = self.recv().await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    async fn finish(mut self) -> RelayExit {
        drop(self.to_relay.shutdown().await);
        drop(self.to_relay);
        let rest = timeout(Duration::from_secs(10), self.from_relay.next_line()).await;
        assert!(
            matches!(rest, Ok(Ok(None))),
            "the relay closes its output with nothing more: {rest:?}"
        );
        match timeout(Duration::from_secs(10), self.relay).await {
            Ok(Ok(Ok(exit))) => exit,
            other => panic!("the relay did not end well: {other:?}"),
        }
    }
}

fn upstream(url: &str) -> HttpUpstream {
    HttpUpstream::new(url).expect("url")
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const CALL: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#;

fn initialize_result(version: &str) -> String {
    format!(
        r#"{{"result":{{"protocolVersion":"{version}","capabilities":{{}},"serverInfo":{{"name":"s","version":"1"}}}},"jsonrpc":"2.0","id":0}}"#
    )
}

fn error_message(v: &Value) -> String {
    v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_s_id_and_version_are_sent_and_it_is_deleted_at_the_end() {
    let server = Server::start(|seen, _| match (seen.method.as_str(), seen.body.as_str()) {
        ("POST", b) if b.contains("\"initialize\"") => Reply::Body(
            200,
            vec![
                ("content-type", "application/json".to_owned()),
                ("mcp-session-id", "s-123".to_owned()),
            ],
            // Pretty-printed: made one line.
            initialize_result("2025-06-18").replace(",", ",\n  "),
        ),
        ("POST", b) if b.contains("notifications/") => status(202),
        ("POST", _) => Reply::Events(
            Vec::new(),
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n\
             data: {\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\\nb\"}]},\ndata: \"jsonrpc\":\"2.0\",\"id\":1}\n\n"
                .to_owned(),
        ),
        ("GET", _) => status(405),
        _ => status(200),
    })
    .await;
    let mut up = upstream(&server.url);
    up.set_header_line("Authorization: Bearer secret-token")
        .expect("header");
    let mut c = Client::start(up);
    c.send(INITIALIZE).await;
    let init = c.recv_json().await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    c.send(INITIALIZED).await;
    c.send(CALL).await;
    let progress = c.recv_json().await;
    assert_eq!(progress["method"], "notifications/progress");
    // Two `data:` fields are one message; its line break became a space.
    assert_eq!(
        c.recv().await,
        r#"{"result":{"content":[{"type":"text","text":"a\nb"}]}, "jsonrpc":"2.0","id":1}"#
    );
    let exit = c.finish().await;
    assert_eq!(exit.code, 0);

    let seen = server.seen();
    let posts: Vec<_> = seen.iter().filter(|s| s.method == "POST").collect();
    assert_eq!(posts.len(), 3, "{seen:?}");
    for post in &posts {
        assert_eq!(
            post.header("accept"),
            Some("application/json, text/event-stream")
        );
        assert_eq!(post.header("content-type"), Some("application/json"));
        assert_eq!(post.header("authorization"), Some("Bearer secret-token"));
    }
    assert_eq!(posts[0].body, INITIALIZE, "the body is the client's line");
    assert_eq!(posts[0].header("mcp-session-id"), None);
    for later in &posts[1..] {
        assert_eq!(later.header("mcp-session-id"), Some("s-123"));
        assert_eq!(later.header("mcp-protocol-version"), Some("2025-06-18"));
    }
    let delete = seen
        .iter()
        .find(|s| s.method == "DELETE")
        .expect("the session is deleted at the end");
    assert_eq!(delete.header("mcp-session-id"), Some("s-123"));
    assert!(
        seen.iter().any(|s| s.method == "GET"),
        "a GET stream was tried"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_down_at_start_answers_each_request_with_a_clear_error() {
    // A port nothing listens on.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let mut c = Client::start(upstream(&format!("http://127.0.0.1:{port}/mcp?key=hidden")));
    c.send(INITIALIZE).await;
    let v = c.recv_json().await;
    assert_eq!(v["id"], 0);
    assert_eq!(v["error"]["code"], -32000);
    let message = error_message(&v);
    assert!(
        message.contains("cannot connect to the upstream server at http://127.0.0.1:"),
        "{message}"
    );
    assert!(message.to_lowercase().contains("refused"), "{message}");
    assert!(
        !message.contains("hidden"),
        "the query is not shown: {message}"
    );
    c.send(CALL).await;
    let v = c.recv_json().await;
    assert_eq!(v["id"], 1);
    assert!(error_message(&v).contains("cannot connect"), "{v}");
    c.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthorized_names_the_header_to_set() {
    let server = Server::start(|_, _| {
        Reply::Body(
            401,
            vec![(
                "www-authenticate",
                "Bearer resource_metadata=\"x\"".to_owned(),
            )],
            "unauthorized".to_owned(),
        )
    })
    .await;
    let mut c = Client::start(upstream(&server.url));
    c.send(INITIALIZE).await;
    let v = c.recv_json().await;
    let message = error_message(&v);
    assert_eq!(v["error"]["code"], -32000);
    assert!(message.contains("HTTP 401 Unauthorized"), "{message}");
    assert!(
        message.contains("--header 'Authorization: Bearer"),
        "{message}"
    );
    assert!(message.contains("OAuth"), "{message}");
    c.finish().await;

    // With a token that is refused, the message says so, and never shows it.
    let mut up = upstream(&server.url);
    up.set_header("authorization", "Bearer wrong-token")
        .expect("header");
    let mut c = Client::start(up);
    c.send(INITIALIZE).await;
    let message = error_message(&c.recv_json().await);
    assert!(message.contains("was refused"), "{message}");
    assert!(!message.contains("wrong-token"), "{message}");
    c.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_event_stream_is_resumed_with_last_event_id() {
    let server = Server::start(|seen, _| match seen.method.as_str() {
        "POST" if seen.body.contains("\"initialize\"") => Reply::Body(
            200,
            vec![
                ("content-type", "application/json".to_owned()),
                ("mcp-session-id", "s-1".to_owned()),
            ],
            initialize_result("2025-11-25"),
        ),
        // A priming event, a progress notification, then the stream drops.
        "POST" => Reply::Events(
            Vec::new(),
            "id: e0\nretry: 50\ndata:\n\n\
             id: e1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":1}}\n\n"
                .to_owned(),
        ),
        "GET" if seen.header("last-event-id") == Some("e1") => Reply::Events(
            Vec::new(),
            "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n".to_owned(),
        ),
        _ => status(405),
    })
    .await;
    let mut c = Client::start(upstream(&server.url));
    c.send(INITIALIZE).await;
    c.recv().await;
    c.send(CALL).await;
    assert_eq!(c.recv_json().await["method"], "notifications/progress");
    assert_eq!(
        c.recv().await,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#
    );
    c.finish().await;
    let seen = server.seen();
    let resume = seen
        .iter()
        .find(|s| s.method == "GET" && s.header("last-event-id").is_some())
        .expect("a GET with Last-Event-ID");
    assert_eq!(resume.header("mcp-session-id"), Some("s-1"));
    assert_eq!(resume.header("mcp-protocol-version"), Some("2025-11-25"));
    assert_eq!(resume.header("accept"), Some("text/event-stream"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_drops_without_event_ids_is_an_error() {
    let server = Server::start(|_, _| {
        Reply::Events(
            Vec::new(),
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"
                .to_owned(),
        )
    })
    .await;
    let mut c = Client::start(upstream(&server.url));
    c.send(CALL).await;
    assert_eq!(c.recv_json().await["method"], "notifications/message");
    let v = c.recv_json().await;
    assert_eq!(v["id"], 1);
    assert!(
        error_message(&v).contains("closed the event stream before answering"),
        "{v}"
    );
    c.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_and_server_errors_are_said_clearly() {
    let server = Server::start(|seen, _| match seen.body.as_str() {
        b if b.contains("\"initialize\"") => Reply::Body(
            200,
            vec![
                ("content-type", "application/json".to_owned()),
                ("mcp-session-id", "gone".to_owned()),
            ],
            initialize_result("2025-06-18"),
        ),
        b if b.contains("\"echo\"") => status(404),
        b if b.contains("\"boom\"") => Reply::Body(503, Vec::new(), "overloaded, try later".to_owned()),
        b if b.contains("\"bad\"") => Reply::Body(
            400,
            vec![("content-type", "application/json".to_owned())],
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: invalid params"}}"#.to_owned(),
        ),
        _ => status(405),
    })
    .await;
    let mut c = Client::start(upstream(&server.url));
    c.send(INITIALIZE).await;
    c.recv().await;
    c.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"boom"}}"#)
        .await;
    let v = c.recv_json().await;
    assert_eq!(v["id"], 2);
    let message = error_message(&v);
    assert!(
        message.contains("failed (HTTP 503 Service Unavailable): overloaded, try later"),
        "{message}"
    );
    c.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bad"}}"#)
        .await;
    let v = c.recv_json().await;
    assert_eq!(v["id"], 3);
    assert_eq!(
        v["error"]["code"], -32600,
        "the server's own error code: {v}"
    );
    assert!(
        error_message(&v).contains("HTTP 400 Bad Request: Bad Request: invalid params"),
        "{v}"
    );
    c.send(CALL).await;
    let v = c.recv_json().await;
    assert_eq!(v["id"], 1);
    let message = error_message(&v);
    assert!(
        message.contains("no longer knows this session"),
        "{message}"
    );
    assert!(message.contains("HTTP 404"), "{message}");
    c.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_requests_carry_their_version_method_and_name() {
    let server = Server::start(|_, _| {
        json(r#"{"jsonrpc":"2.0","id":5,"result":{"content":[],"resultType":"complete"}}"#)
    })
    .await;
    let mut c = Client::start(upstream(&server.url));
    let call = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"héllo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    c.send(call).await;
    assert_eq!(
        c.recv().await,
        r#"{"jsonrpc":"2.0","id":5,"result":{"content":[],"resultType":"complete"}}"#
    );
    c.finish().await;
    let seen = server.seen();
    let post = seen.iter().find(|s| s.method == "POST").expect("a POST");
    assert_eq!(post.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(post.header("mcp-method"), Some("tools/call"));
    assert_eq!(post.header("mcp-name"), Some("=?base64?aMOpbGxv?="));
    assert_eq!(post.header("mcp-session-id"), None);
    assert!(
        seen.iter().all(|s| s.method == "POST"),
        "no session: no GET, no DELETE: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_get_stream_brings_server_requests_and_the_answers_are_posted() {
    let server = Server::start(|seen, _| match (seen.method.as_str(), seen.body.as_str()) {
        ("POST", b) if b.contains("\"initialize\"") => Reply::Body(
            200,
            vec![
                ("content-type", "application/json".to_owned()),
                ("mcp-session-id", "s-9".to_owned()),
            ],
            initialize_result("2025-06-18"),
        ),
        ("POST", _) => status(202),
        ("GET", _) => Reply::Events(
            Vec::new(),
            "retry: 60000\nid: g1\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"roots/list\"}\n\n"
                .to_owned(),
        ),
        _ => status(200),
    })
    .await;
    let mut c = Client::start(upstream(&server.url));
    c.send(INITIALIZE).await;
    c.recv().await;
    c.send(INITIALIZED).await;
    let request = c.recv_json().await;
    assert_eq!(request["method"], "roots/list");
    assert_eq!(request["id"], "srv-1");
    let answer = r#"{"jsonrpc":"2.0","id":"srv-1","result":{"roots":[]}}"#;
    c.send(answer).await;
    // The answer is POSTed (202, nothing comes back).
    let posted = async {
        loop {
            if server.seen().iter().any(|s| s.body == answer) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    timeout(Duration::from_secs(5), posted)
        .await
        .expect("the client's answer reaches the server");
    c.finish().await;
    let seen = server.seen();
    let get = seen.iter().position(|s| s.method == "GET").expect("a GET");
    assert_eq!(seen[get].header("accept"), Some("text/event-stream"));
    assert_eq!(seen[get].header("mcp-session-id"), Some("s-9"));
    // Opened before `notifications/initialized` is sent: a server that asks for roots right
    // after it finds the stream there.
    let initialized = seen
        .iter()
        .position(|s| s.body == INITIALIZED)
        .expect("initialized was sent");
    assert!(get < initialized, "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_stateless_request_closes_its_stream_instead_of_posting() {
    let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&closed);
    let server = Server::start(move |_, _| {
        Reply::Hang(
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":9,\"progress\":1}}\n\n".to_owned(),
            Arc::clone(&flag),
        )
    })
    .await;
    let mut c = Client::start(upstream(&server.url));
    let meta =
        r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":9}"#;
    c.send(&format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"slow",{meta}}}}}"#
    ))
    .await;
    assert_eq!(c.recv_json().await["method"], "notifications/progress");
    c.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}"#)
        .await;
    let gone = async {
        while !closed.load(std::sync::atomic::Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    timeout(Duration::from_secs(5), gone)
        .await
        .expect("the request's stream is closed");
    c.finish().await;
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "the cancellation is not POSTed: {seen:?}");
}

#[test]
fn bad_urls_and_headers_are_refused_without_showing_values() {
    assert!(HttpUpstream::new("ftp://x/mcp").is_err());
    assert!(HttpUpstream::new("not a url").is_err());
    let mut up = upstream("https://example.invalid/mcp?token=t0ps3cret");
    let e = up
        .set_header_line("X-Key secret-value")
        .expect_err("no colon");
    assert!(!e.to_string().contains("secret-value"), "{e}");
    let e = up
        .set_header("X-Key", "bad\nvalue-secret")
        .expect_err("a line break");
    assert!(!e.to_string().contains("value-secret"), "{e}");
    up.set_header_line("Authorization: Bearer t0ps3cret")
        .expect("header");
    let shown = format!("{up:?}");
    assert!(!shown.contains("t0ps3cret"), "{shown}");
    assert!(shown.contains("authorization"), "{shown}");
}
