//! A scripted Streamable HTTP server (hyper) on loopback and a client of the relay, shared by
//! the HTTP upstream's tests.
#![allow(dead_code)]

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
pub struct Seen {
    pub method: String,
    pub headers: HashMap<String, String>,
    pub body: String,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// What the server answers.
pub enum Reply {
    /// A status, headers and a body.
    Body(u16, Vec<(&'static str, String)>, String),
    /// `200 text/event-stream` with this SSE text (the stream ends after it).
    Events(Vec<(&'static str, String)>, String),
    /// `200 text/event-stream` with this SSE text, then nothing, open until the client closes
    /// it, which sets the flag.
    Hang(String, Arc<std::sync::atomic::AtomicBool>),
    /// `200 text/event-stream` with this SSE text, then 64 KiB chunks of `x` without end
    /// (until the client closes the stream).
    Endless(String),
    /// `200 text/event-stream`: the first SSE text, then after the pause the second, then the
    /// end.
    Later(String, Duration, String),
}

/// Sets its flag when dropped (the server's end of a stream the client closed).
pub struct OnDrop(Arc<std::sync::atomic::AtomicBool>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

pub fn json(body: &str) -> Reply {
    Reply::Body(
        200,
        vec![("content-type", "application/json".to_owned())],
        body.to_owned(),
    )
}

pub fn status(code: u16) -> Reply {
    Reply::Body(code, Vec::new(), String::new())
}

pub type Script = Arc<dyn Fn(&Seen, usize) -> Reply + Send + Sync>;

/// A scripted Streamable HTTP server: `script(request, index)` answers each request.
pub struct Server {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub async fn start(script: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Server {
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

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

pub type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

pub async fn answer(
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
        Reply::Later(first, pause, rest) => {
            let first = futures_util::stream::iter([Ok::<_, Infallible>(
                hyper::body::Frame::data(Bytes::from(first)),
            )]);
            let rest = futures_util::stream::once(async move {
                tokio::time::sleep(pause).await;
                Ok(hyper::body::Frame::data(Bytes::from(rest)))
            });
            let body = http_body_util::StreamBody::new(first.chain(rest));
            (
                200,
                vec![("content-type", "text/event-stream".to_owned())],
                http_body_util::BodyExt::boxed(body),
            )
        }
        Reply::Endless(text) => {
            let first = futures_util::stream::iter([Ok::<_, Infallible>(
                hyper::body::Frame::data(Bytes::from(text)),
            )]);
            let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
            let rest = futures_util::stream::repeat_with(move || {
                Ok(hyper::body::Frame::data(chunk.clone()))
            });
            let body = http_body_util::StreamBody::new(first.chain(rest));
            (
                200,
                vec![("content-type", "text/event-stream".to_owned())],
                http_body_util::BodyExt::boxed(body),
            )
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
pub struct Client {
    to_relay: DuplexStream,
    from_relay: Lines<BufReader<DuplexStream>>,
    relay: JoinHandle<Result<RelayExit, mcp_budget_proxy::relay::RelayError>>,
}

impl Client {
    pub fn start(upstream: HttpUpstream) -> Client {
        Client::start_with(upstream, |_| {})
    }

    /// [`Client::start`] with the relay's options changed by `change`.
    pub fn start_with(upstream: HttpUpstream, change: impl FnOnce(&mut RelayOptions)) -> Client {
        let (to_relay, relay_in) = tokio::io::duplex(1 << 16);
        let (relay_out, from_relay) = tokio::io::duplex(1 << 16);
        let mut options = RelayOptions::default();
        options.shutdown_grace = Duration::from_millis(500);
        change(&mut options);
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

    pub async fn send(&mut self, line: &str) {
        self.to_relay
            .write_all(line.as_bytes())
            .await
            .expect("write");
        self.to_relay.write_all(b"\n").await.expect("write");
    }

    pub async fn recv(&mut self) -> String {
        match timeout(Duration::from_secs(10), self.from_relay.next_line()).await {
            Ok(Ok(Some(line))) => line,
            other => panic!("no line from the relay: {other:?}"),
        }
    }

    pub async fn recv_json(&mut self) -> Value {
        let line = self.recv().await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    pub async fn finish(mut self) -> RelayExit {
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

pub fn upstream(url: &str) -> HttpUpstream {
    HttpUpstream::new(url).expect("url")
}

pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
pub const CALL: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#;

pub fn initialize_result(version: &str) -> String {
    format!(
        r#"{{"result":{{"protocolVersion":"{version}","capabilities":{{}},"serverInfo":{{"name":"s","version":"1"}}}},"jsonrpc":"2.0","id":0}}"#
    )
}

pub fn error_message(v: &Value) -> String {
    v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
