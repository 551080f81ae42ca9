//! The relay with a remote upstream over Streamable HTTP, against a small scripted HTTP server
//! (hyper) on loopback: headers, sessions, SSE answers, resumption with `Last-Event-ID`, the
//! GET stream, the session's DELETE, and the errors that answer requests whose exchange failed.

mod http_support;

use std::sync::Arc;
use std::time::Duration;

use http_support::*;
use mcp_budget_proxy::relay::HttpUpstream;
use tokio::time::timeout;

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

/// A TLS server on loopback with a certificate for `localhost` that no one trusts (self-signed):
/// it takes every connection's handshake (which the client breaks off), until the test ends.
fn untrusted_tls_server() -> u16 {
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .expect("params")
        .self_signed(&key)
        .expect("certificate");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
    .expect("server config");
    let config = Arc::new(config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let Ok(conn) = rustls::ServerConnection::new(Arc::clone(&config)) else {
                return;
            };
            let mut tls = rustls::StreamOwned::new(conn, stream);
            let _ = std::io::Read::read(&mut tls, &mut [0u8; 64]);
        }
    });
    port
}

/// The message of the error that answers `initialize` sent to `url`, whose connection fails.
async fn connect_error(url: &str) -> String {
    let mut c = Client::start(upstream(url));
    c.send(INITIALIZE).await;
    let v = c.recv_json().await;
    assert_eq!(v["id"], 0);
    assert_eq!(v["error"]["code"], -32000);
    c.finish().await;
    error_message(&v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_upstream_whose_certificate_is_not_trusted_gets_a_clear_error() {
    let port = untrusted_tls_server();
    let message = connect_error(&format!("https://localhost:{port}/mcp")).await;
    let at = format!("cannot connect to the upstream server at https://localhost:{port}/mcp");
    assert!(message.contains(&at), "{message}");
    assert!(
        message.contains("invalid peer certificate"),
        "the TLS error is said: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_url_to_a_plain_http_server_gets_a_clear_error() {
    let server = Server::start(|_, _| status(200)).await;
    let message = connect_error(&server.url.replacen("http://", "https://", 1)).await;
    let at = "cannot connect to the upstream server at https://127.0.0.1:";
    assert!(message.contains(at), "{message}");
    assert!(
        message.contains("received corrupt message"),
        "the TLS error is said: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_not_followed_and_names_where_it_points() {
    let server = Server::start(|_, _| {
        Reply::Body(
            308,
            vec![("location", "/v2/mcp?token=hidden".to_owned())],
            String::new(),
        )
    })
    .await;
    let mut c = Client::start(upstream(&server.url));
    c.send(INITIALIZE).await;
    let v = c.recv_json().await;
    assert_eq!(v["error"]["code"], -32000);
    let message = error_message(&v);
    let base = server.url.trim_end_matches("/mcp");
    assert!(
        message.contains(&format!(
            "redirects to {base}/v2/mcp (HTTP 308 Permanent Redirect)"
        )),
        "{message}"
    );
    assert!(!message.contains("hidden"), "{message}");
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "one POST, not followed: {seen:?}");
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
    // OAuth was tried first (the server's metadata is missing) and says how else to go on.
    assert!(message.contains("OAuth"), "{message}");
    assert!(message.contains("mcp-budget login"), "{message}");
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
