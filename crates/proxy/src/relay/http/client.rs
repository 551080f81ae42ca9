//! The HTTP/1.1 client under the transport: hyper-util's pooled client (keep-alive
//! connections, one request at a time on each) over rustls on ring with the platform's
//! certificate verifier (`rustls-platform-verifier`), for `http://` and `https://` URLs.
//!
//! Why not a higher-level client: a request goes out and its answer comes back without
//! per-request URL parsing, redirect and retry layers (the transport follows no redirects: a Streamable HTTP endpoint answers at its own URL). Measured on a small
//! `tools/call` through `serve --upstream` (December 2026): a minimal forwarder on this client
//! added 0.13–0.16× of the direct latency where the same forwarder on reqwest added 0.18–0.21×.
//!
//! Every request carries the upstream's extra headers (`--header`) unless it sets a header of
//! that name itself, and a `User-Agent` of `mcp-budget/<version>` (in place of one given with
//! `--header`). A user and password in the
//! URL (`https://user:token@host/mcp`) are sent as `Authorization: Basic` (RFC 7617) unless an
//! `Authorization` header is given, and left out of the request's URI.
//!
//! A proxy named by the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, lowercase too,
//! and `NO_PROXY`, as hyper-util's `Matcher::from_env` reads them) is used for the upstream's
//! URL: the connection goes through the proxy's `CONNECT` tunnel (RFC 9110 §9.3.6), for an
//! `http://` upstream too, with `Proxy-Authorization: Basic` when the proxy's URL holds a user
//! and password; the proxy itself may be `http://` or `https://` (SOCKS is refused at start).
//! TLS to an `https://` upstream runs inside the tunnel.
//!
//! Making a connection (TCP, the proxy's tunnel, the TLS handshake) may take the connect
//! timeout in all; connections send TCP keepalives (every 15 s after 15 s idle, 3 probes) and,
//! on Linux, give up on data unacknowledged for 30 s (`TCP_USER_TIMEOUT`), so that a peer gone
//! silently (a sleeping laptop, a dropped NAT entry) ends a stream instead of hanging it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue, USER_AGENT};
use http::{Method, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioTimer};

/// An answer: its status, headers and a body read as it arrives.
pub(super) type Response = http::Response<hyper::body::Incoming>;

/// A boxed error of the layers below (TLS setup, an invalid header, hyper).
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum ClientError {
    /// The request could not be built: a header name or value is not valid in HTTP.
    #[error("the request is not valid")]
    Request(#[source] http::Error),
    /// The request could not be sent or its answer's head not read (connection refused, TLS,
    /// reset …).
    #[error("the request failed")]
    Send(#[source] hyper_util::client::legacy::Error),
    /// No answer within the request's time limit.
    #[error("no answer in time")]
    Timeout,
    /// The answer's body broke off.
    #[error("the body broke off")]
    Body(#[source] hyper::Error),
}

impl ClientError {
    /// The connection could not be opened (refused, no route, DNS, TLS handshake, connect
    /// timeout).
    pub(super) fn is_connect(&self) -> bool {
        matches!(self, ClientError::Send(e) if e.is_connect())
    }

    /// The request's time limit passed.
    pub(super) fn is_timeout(&self) -> bool {
        matches!(self, ClientError::Timeout)
    }

    /// Reading the answer's body failed.
    pub(super) fn is_body(&self) -> bool {
        matches!(self, ClientError::Body(_))
    }
}

/// hyper-util's client over a connector `C`, TLS (`https://`) on top, the whole bounded in
/// time.
type Pooled<C> = hyper_util::client::legacy::Client<Limited<HttpsConnector<C>>, Full<Bytes>>;

/// The pooled client: straight to the upstream, or through a proxy's tunnel (the proxy reached
/// over plain TCP or TLS).
enum Inner {
    Direct(Pooled<HttpConnector>),
    Tunneled(Box<Pooled<Tunnel<HttpsConnector<HttpConnector>>>>),
}

/// TCP keepalive: first probe after 15 s idle, then every 15 s, 3 probes (reqwest's defaults).
const KEEPALIVE: Duration = Duration::from_secs(15);
/// Data unacknowledged this long ends the connection (Linux `TCP_USER_TIMEOUT`): 30 s.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "fuchsia"))]
const USER_TIMEOUT: Duration = Duration::from_secs(30);

/// A connector whose connections must be made within `limit` (everything the inner connector
/// does: TCP, a proxy's tunnel, TLS); past it the attempt fails with [`std::io::ErrorKind::TimedOut`].
#[derive(Clone)]
pub(super) struct Limited<C> {
    inner: C,
    limit: Duration,
}

impl<C> Limited<C> {
    fn new(inner: C, limit: Duration) -> Limited<C> {
        Limited { inner, limit }
    }
}

impl<C> tower_service::Service<Uri> for Limited<C>
where
    C: tower_service::Service<Uri>,
    C::Future: Send + 'static,
    C::Response: Send + 'static,
    C::Error: Into<BoxError>,
{
    type Response = C::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<C::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let limit = self.limit;
        let connecting = self.inner.call(dst);
        Box::pin(async move {
            match tokio::time::timeout(limit, connecting).await {
                Ok(made) => made.map_err(Into::into),
                Err(_) => Err(Box::new(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no connection within {} s", limit.as_secs_f64()),
                )) as BoxError),
            }
        })
    }
}

/// The client for one upstream URL.
pub(super) struct Client {
    inner: Inner,
    uri: Uri,
    /// The upstream's extra headers and the `User-Agent`.
    defaults: HeaderMap,
    /// The proxy's URL, scheme, host and port only, when one is used.
    proxy: Option<String>,
    /// Whether the URL held a user or password (sent as `Authorization: Basic`).
    url_credentials: bool,
    /// The OAuth sign-in's `Authorization` value, read at each send (relay::http::oauth).
    bearer: Option<Arc<RwLock<Option<HeaderValue>>>>,
}

impl Client {
    /// A client for `url` whose requests carry `headers` (see the module docs), through the
    /// proxy the environment names for it; connecting may take up to `connect_timeout`.
    ///
    /// # Errors
    ///
    /// The URL is not a valid HTTP URI, the platform's certificate verifier cannot be set up,
    /// or the environment names a proxy that is not `http://` or `https://` (SOCKS).
    pub(super) fn new(
        url: &url::Url,
        headers: &HeaderMap,
        connect_timeout: Duration,
    ) -> Result<Client, BoxError> {
        Client::with_proxies(url, headers, connect_timeout, &Matcher::from_env())
    }

    /// [`Client::new`] with the proxy rules `proxies` instead of the environment's.
    ///
    /// # Errors
    ///
    /// As [`Client::new`].
    fn with_proxies(
        url: &url::Url,
        headers: &HeaderMap,
        connect_timeout: Duration,
        proxies: &Matcher,
    ) -> Result<Client, BoxError> {
        let mut defaults = headers.clone();
        let mut url = url.clone();
        let credentials = take_credentials(&mut url);
        let url_credentials = credentials.is_some();
        if let Some(credentials) = credentials
            && !defaults.contains_key(AUTHORIZATION)
        {
            defaults.insert(AUTHORIZATION, credentials);
        }
        let user_agent =
            HeaderValue::from_static(concat!("mcp-budget/", env!("CARGO_PKG_VERSION")));
        let mut uri: Uri = url.as_str().parse()?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(connect_timeout));
        http.set_keepalive(Some(KEEPALIVE));
        http.set_keepalive_interval(Some(KEEPALIVE));
        http.set_keepalive_retries(Some(3));
        #[cfg(any(target_os = "linux", target_os = "android", target_os = "fuchsia"))]
        http.set_tcp_user_timeout(Some(USER_TIMEOUT));
        let tls = || {
            hyper_rustls::HttpsConnectorBuilder::new()
                .try_with_platform_verifier()
                .map(|b| b.https_or_http().enable_http1())
        };
        let mut builder = hyper_util::client::legacy::Client::builder(TokioExecutor::new());
        // Idle connections are closed after the pool's idle timeout (90 s) by its timer.
        builder.pool_timer(TokioTimer::new());
        let (inner, proxy) = match proxies.intercept(&uri) {
            None => (
                Inner::Direct(
                    builder.build(Limited::new(tls()?.wrap_connector(http), connect_timeout)),
                ),
                None,
            ),
            Some(proxy) => {
                let at = proxy.uri();
                if !matches!(at.scheme_str(), Some("http" | "https")) {
                    return Err(format!(
                        "the proxy the environment names (HTTPS_PROXY, HTTP_PROXY or ALL_PROXY) \
                         is {}://…; only http:// and https:// proxies are supported",
                        at.scheme_str().unwrap_or_default()
                    )
                    .into());
                }
                let shown = format!(
                    "{}://{}",
                    at.scheme_str().unwrap_or_default(),
                    at.authority().map_or("", |a| a
                        .as_str()
                        .rsplit('@')
                        .next()
                        .unwrap_or_default())
                );
                // The tunnel asks for the URL's port, 443 when it has none: an `http://` URL
                // names its default port (the same origin, RFC 9110 §4.2.1).
                if uri.scheme_str() == Some("http") && uri.port().is_none() {
                    uri = with_port(&uri, 80)?;
                }
                let mut connect = HeaderMap::new();
                connect.insert(USER_AGENT, user_agent.clone());
                let mut tunnel =
                    Tunnel::new(at.clone(), tls()?.wrap_connector(http)).with_headers(connect);
                if let Some(auth) = proxy.basic_auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                (
                    Inner::Tunneled(Box::new(
                        builder.build(Limited::new(tls()?.wrap_connector(tunnel), connect_timeout)),
                    )),
                    Some(shown),
                )
            }
        };
        defaults.insert(USER_AGENT, user_agent);
        Ok(Client {
            inner,
            uri,
            defaults,
            proxy,
            url_credentials,
            bearer: None,
        })
    }

    /// Requests without an `Authorization` header of their own carry the value in `bearer`
    /// when it holds one.
    pub(super) fn with_bearer(mut self, bearer: Arc<RwLock<Option<HeaderValue>>>) -> Client {
        self.bearer = Some(bearer);
        self
    }

    /// The proxy the connection goes through (`scheme://host:port`), if any.
    pub(super) fn proxy(&self) -> Option<&str> {
        self.proxy.as_deref()
    }

    /// Whether the URL held credentials (sent as `Authorization: Basic`).
    pub(super) fn has_url_credentials(&self) -> bool {
        self.url_credentials
    }

    /// A POST to the upstream URL.
    pub(super) fn post(&self) -> RequestBuilder<'_> {
        self.request(Method::POST)
    }

    /// A GET of the upstream URL.
    pub(super) fn get(&self) -> RequestBuilder<'_> {
        self.request(Method::GET)
    }

    /// A DELETE of the upstream URL.
    pub(super) fn delete(&self) -> RequestBuilder<'_> {
        self.request(Method::DELETE)
    }

    /// A request of `method` to the client's URL.
    pub(super) fn request(&self, method: Method) -> RequestBuilder<'_> {
        RequestBuilder {
            client: self,
            builder: http::Request::builder()
                .method(method)
                .uri(self.uri.clone()),
            body: Bytes::new(),
            timeout: None,
        }
    }
}

/// One request being built (headers, body, time limit), then sent.
pub(super) struct RequestBuilder<'c> {
    client: &'c Client,
    builder: http::request::Builder,
    body: Bytes,
    timeout: Option<Duration>,
}

impl RequestBuilder<'_> {
    /// Adds a header (several of one name are all sent). An invalid name or value fails the
    /// request when it is sent.
    pub(super) fn header<K, V>(mut self, name: K, value: V) -> Self
    where
        HeaderName: TryFrom<K>,
        <HeaderName as TryFrom<K>>::Error: Into<http::Error>,
        HeaderValue: TryFrom<V>,
        <HeaderValue as TryFrom<V>>::Error: Into<http::Error>,
    {
        self.builder = self.builder.header(name, value);
        self
    }

    /// The body (empty unless set).
    pub(super) fn body(mut self, body: Bytes) -> Self {
        self.body = body;
        self
    }

    /// How long the request may wait for its answer's head.
    pub(super) fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Sends it; resolves when the answer's head has arrived (its body is read as it comes).
    ///
    /// # Errors
    ///
    /// [`ClientError::Request`] for an invalid header, [`ClientError::Send`] when the
    /// connection or the exchange fails, [`ClientError::Timeout`] past the time limit.
    pub(super) async fn send(self) -> Result<Response, ClientError> {
        let mut request = self
            .builder
            .body(Full::new(self.body))
            .map_err(ClientError::Request)?;
        let headers = request.headers_mut();
        for (name, value) in &self.client.defaults {
            if !headers.contains_key(name) {
                headers.insert(name.clone(), value.clone());
            }
        }
        if !headers.contains_key(AUTHORIZATION)
            && let Some(bearer) = &self.client.bearer
            && let Some(value) = bearer
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        {
            headers.insert(AUTHORIZATION, value);
        }
        let sent = match &self.client.inner {
            Inner::Direct(client) => client.request(request),
            Inner::Tunneled(client) => client.request(request),
        };
        let answer = match self.timeout {
            Some(limit) => tokio::time::timeout(limit, sent)
                .await
                .map_err(|_| ClientError::Timeout)?,
            None => sent.await,
        };
        answer.map_err(ClientError::Send)
    }
}

/// Removes the user and password from `url`; returns them as a `Basic` credential (RFC 7617:
/// `user:password` percent-decoded, Base64), marked sensitive. `None` when the URL has none.
fn take_credentials(url: &mut url::Url) -> Option<HeaderValue> {
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
    let mut pair = decode(url.username());
    pair.push(b':');
    pair.extend(decode(url.password().unwrap_or_default()));
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
    let mut value = HeaderValue::from_str(&format!("Basic {encoded}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// `uri` with its authority's port set to `port`.
fn with_port(uri: &Uri, port: u16) -> Result<Uri, BoxError> {
    let host = uri.host().ok_or("the URL has no host")?;
    let mut parts = uri.clone().into_parts();
    parts.authority = Some(format!("{host}:{port}").parse()?);
    Ok(Uri::from_parts(parts)?)
}

/// The first `max` bytes of the body of `response` (fewer when it is shorter or breaks off):
/// for a body that is only quoted or read for an error, whatever size the server sends.
pub(super) async fn bytes_at_most(response: Response, max: usize) -> Bytes {
    let mut body = response.into_body();
    let mut kept = bytes::BytesMut::new();
    while kept.len() < max {
        let Some(Ok(frame)) = body.frame().await else {
            break;
        };
        if let Some(data) = frame.data_ref() {
            kept.extend_from_slice(&data[..data.len().min(max - kept.len())]);
        }
    }
    kept.freeze()
}

/// The whole body of `response` (for tests: the transport reads bodies with
/// [`bytes_within`]).
///
/// # Errors
///
/// [`ClientError::Body`] when the body breaks off.
#[cfg(test)]
pub(super) async fn bytes(response: Response) -> Result<Bytes, ClientError> {
    Ok(response
        .into_body()
        .collect()
        .await
        .map_err(ClientError::Body)?
        .to_bytes())
}

/// A body read up to a bound ([`bytes_within`]).
#[derive(Debug)]
pub(super) enum Bounded {
    /// The whole body, in one buffer.
    Whole(Vec<u8>),
    /// The body is longer than the bound; `declared`: its `Content-Length`, when it gave one
    /// (then nothing was read).
    TooLong { declared: Option<u64> },
}

/// The body of `response` when it holds at most `max` bytes: read into one buffer (sized by
/// `Content-Length` when there is one, so it is not grown by copies). A longer body is read
/// no further than `max` + 1 bytes (none when its `Content-Length` says so) and dropped, which
/// closes its connection: a 200 MB body past a 16 MiB bound costs 16 MiB at most.
///
/// # Errors
///
/// [`ClientError::Body`] when the body breaks off.
pub(super) async fn bytes_within(response: Response, max: usize) -> Result<Bounded, ClientError> {
    let declared = response
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(length) = declared
        && usize::try_from(length).map_or(true, |n| n > max)
    {
        return Ok(Bounded::TooLong {
            declared: Some(length),
        });
    }
    // At most the bound up front: a wrong Content-Length costs no more than that.
    let capacity = declared
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
        .min(max);
    let mut kept = Vec::with_capacity(capacity);
    let mut body = response.into_body();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(ClientError::Body)?;
        if let Some(data) = frame.data_ref() {
            if data.len() > max - kept.len() {
                return Ok(Bounded::TooLong { declared: None });
            }
            kept.extend_from_slice(data);
        }
    }
    Ok(Bounded::Whole(kept))
}

/// `url` without user info, query or fragment (they may hold credentials).
pub(super) fn shown_url(url: &url::Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.set_fragment(None);
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::net::{TcpListener, TcpStream};
    use std::sync::mpsc;
    use std::thread;

    use super::*;

    /// Reads one request head (up to its blank line) and, with `Content-Length`, its body.
    fn read_head(stream: &mut TcpStream) -> String {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match stream.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => break,
            }
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let length = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length:")
                    .map(|v| v.trim().parse().unwrap_or(0))
            })
            .unwrap_or(0usize);
        let mut body = vec![0u8; length];
        let _ = stream.read_exact(&mut body);
        head
    }

    /// A listener on a free loopback port, and the port.
    fn bound() -> (TcpListener, u16) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        (listener, port)
    }

    /// An HTTP server on loopback that answers each request `200 {}` and reports its head.
    fn target() -> (u16, mpsc::Receiver<String>) {
        let (listener, port) = bound();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let tx = tx.clone();
                thread::spawn(move || {
                    loop {
                        let head = read_head(&mut stream);
                        if head.is_empty() || tx.send(head).is_err() {
                            return;
                        }
                        let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                        if stream.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (port, rx)
    }

    /// A proxy that serves `CONNECT` (and nothing else): it reports each head and relays bytes
    /// both ways; a target it cannot reach gets `502`.
    fn proxy() -> (u16, mpsc::Receiver<String>) {
        let (listener, port) = bound();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut client) = stream else { return };
                let head = read_head(&mut client);
                let target = head
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                let _ = tx.send(head);
                let Ok(server) = TcpStream::connect(&target) else {
                    let _ =
                        client.write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n");
                    continue;
                };
                let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                let (mut c2, mut s2) = (
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                let (mut client, mut server) = (client, server);
                // Either side's end closes both (a clone left open would hold the socket).
                thread::spawn(move || {
                    let _ = std::io::copy(&mut c2, &mut s2);
                    let _ = s2.shutdown(std::net::Shutdown::Both);
                    let _ = c2.shutdown(std::net::Shutdown::Both);
                });
                thread::spawn(move || {
                    let _ = std::io::copy(&mut server, &mut client);
                    let _ = client.shutdown(std::net::Shutdown::Both);
                    let _ = server.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        (port, rx)
    }

    fn client(url: &str, headers: &HeaderMap, proxies: &Matcher) -> Client {
        let url = url::Url::parse(url).expect("url");
        Client::with_proxies(&url, headers, Duration::from_secs(5), proxies).expect("client")
    }

    fn recv(rx: &mpsc::Receiver<String>) -> String {
        rx.recv_timeout(Duration::from_secs(10))
            .expect("a request arrives")
    }

    /// The value of header `name` in `head`; the test fails when it is sent more than once.
    fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
        let mut values = head.lines().filter_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        });
        let first = values.next();
        assert_eq!(values.next(), None, "{name} sent twice: {head}");
        first
    }

    #[tokio::test]
    async fn a_proxy_s_tunnel_carries_the_request_with_the_proxy_s_credentials() {
        let (target_port, seen) = target();
        let (proxy_port, connects) = proxy();
        let proxies = Matcher::builder()
            .all(format!("http://us%3Aer:pass@127.0.0.1:{proxy_port}"))
            .build();
        let c = client(
            &format!("http://127.0.0.1:{target_port}/mcp"),
            &HeaderMap::new(),
            &proxies,
        );
        let response = c
            .post()
            .body(Bytes::from_static(b"{}"))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 200);
        assert_eq!(&bytes(response).await.expect("body")[..], b"{}");
        let connect = recv(&connects);
        assert!(
            connect.starts_with(&format!("CONNECT 127.0.0.1:{target_port} HTTP/1.1\r\n")),
            "{connect}"
        );
        // "us:er:pass" (the user's `%3A` decoded), Base64.
        assert_eq!(
            header(&connect, "proxy-authorization"),
            Some("Basic dXM6ZXI6cGFzcw==")
        );
        let request = recv(&seen);
        assert!(
            request.starts_with("POST /mcp HTTP/1.1\r\n"),
            "origin form inside the tunnel: {request}"
        );
        assert_eq!(header(&request, "proxy-authorization"), None, "{request}");
    }

    #[tokio::test]
    async fn an_http_url_without_a_port_is_tunneled_to_port_80() {
        let (proxy_port, connects) = proxy();
        let proxies = Matcher::builder()
            .all(format!("http://127.0.0.1:{proxy_port}"))
            .build();
        let c = client("http://mcp.invalid/mcp", &HeaderMap::new(), &proxies);
        let failed = c
            .post()
            .send()
            .await
            .expect_err("the proxy cannot reach it");
        assert!(failed.is_connect(), "{failed:?}");
        assert!(recv(&connects).starts_with("CONNECT mcp.invalid:80 HTTP/1.1\r\n"));
    }

    #[tokio::test]
    async fn no_proxy_goes_straight_to_the_server() {
        let (target_port, seen) = target();
        let (proxy_port, connects) = proxy();
        let proxies = Matcher::builder()
            .all(format!("http://127.0.0.1:{proxy_port}"))
            .no("127.0.0.1")
            .build();
        let c = client(
            &format!("http://127.0.0.1:{target_port}/mcp"),
            &HeaderMap::new(),
            &proxies,
        );
        assert_eq!(c.get().send().await.expect("sent").status(), 200);
        assert!(recv(&seen).starts_with("GET /mcp HTTP/1.1\r\n"));
        assert!(connects.try_recv().is_err(), "the proxy saw nothing");
    }

    #[tokio::test]
    async fn url_credentials_are_sent_as_basic_unless_an_authorization_header_is_given() {
        let (port, seen) = target();
        let url = format!("http://us%40er:p%3Ass@127.0.0.1:{port}/mcp");
        let none = Matcher::builder().build();
        let c = client(&url, &HeaderMap::new(), &none);
        c.post().send().await.expect("sent");
        let request = recv(&seen);
        assert!(request.starts_with("POST /mcp HTTP/1.1\r\n"), "{request}");
        // "us@er:p:ss", Base64.
        assert_eq!(
            header(&request, "authorization"),
            Some("Basic dXNAZXI6cDpzcw==")
        );
        assert_eq!(
            header(&request, "host"),
            Some(&*format!("127.0.0.1:{port}"))
        );
        assert_eq!(
            header(&request, "user-agent"),
            Some(concat!("mcp-budget/", env!("CARGO_PKG_VERSION")))
        );

        let mut given = HeaderMap::new();
        given.insert(AUTHORIZATION, HeaderValue::from_static("Bearer t"));
        given.insert(http::header::ACCEPT, HeaderValue::from_static("a/b"));
        let c = client(&url, &given, &none);
        c.post()
            .header(http::header::ACCEPT, "x")
            .send()
            .await
            .expect("sent");
        let request = recv(&seen);
        assert_eq!(header(&request, "authorization"), Some("Bearer t"));
        assert_eq!(header(&request, "accept"), Some("x"));
    }

    #[tokio::test]
    async fn tls_to_an_https_upstream_runs_inside_the_proxy_s_tunnel() {
        // The target reports the first bytes it gets and hangs up.
        let (listener, target_port) = bound();
        let (tx, first) = mpsc::channel();
        thread::spawn(move || {
            if let Some(Ok(mut stream)) = listener.incoming().next() {
                let mut bytes = [0u8; 3];
                let _ = stream.read_exact(&mut bytes);
                let _ = tx.send(bytes);
            }
        });
        let (proxy_port, connects) = proxy();
        let proxies = Matcher::builder()
            .all(format!("http://127.0.0.1:{proxy_port}"))
            .build();
        let c = client(
            &format!("https://localhost:{target_port}/mcp"),
            &HeaderMap::new(),
            &proxies,
        );
        assert_eq!(c.proxy(), Some(&*format!("http://127.0.0.1:{proxy_port}")));
        let failed = c.post().send().await.expect_err("the target hangs up");
        assert!(failed.is_connect(), "{failed:?}");
        let connect = recv(&connects);
        assert!(
            connect.starts_with(&format!("CONNECT localhost:{target_port} HTTP/1.1\r\n")),
            "{connect}"
        );
        assert_eq!(
            header(&connect, "user-agent"),
            Some(concat!("mcp-budget/", env!("CARGO_PKG_VERSION")))
        );
        // A TLS record of type handshake (22), version 3.x: the ClientHello, through the tunnel.
        let bytes = first.recv_timeout(Duration::from_secs(10)).expect("bytes");
        assert_eq!(bytes[..2], [22, 3], "{bytes:?}");
    }

    #[tokio::test]
    async fn a_connection_that_never_finishes_its_handshake_fails_at_the_connect_timeout() {
        // Accepts, never answers the TLS ClientHello.
        let (listener, port) = bound();
        let _held = thread::spawn(move || {
            let kept: Vec<_> = listener.incoming().take(4).collect();
            thread::sleep(Duration::from_secs(30));
            drop(kept);
        });
        let url = url::Url::parse(&format!("https://localhost:{port}/mcp")).expect("url");
        let c = Client::with_proxies(
            &url,
            &HeaderMap::new(),
            Duration::from_millis(500),
            &Matcher::builder().build(),
        )
        .expect("client");
        let started = std::time::Instant::now();
        let failed = c.post().send().await.expect_err("no handshake");
        assert!(failed.is_connect(), "{failed:?}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(
            format!("{failed:?}").contains("no connection within 0.5 s"),
            "{failed:?}"
        );
    }

    #[test]
    fn a_socks_proxy_is_refused_at_start() {
        let url = url::Url::parse("https://example.com/mcp").expect("url");
        let proxies = Matcher::builder().all("socks5://127.0.0.1:1080").build();
        let refused =
            Client::with_proxies(&url, &HeaderMap::new(), Duration::from_secs(1), &proxies)
                .err()
                .expect("refused");
        assert!(refused.to_string().contains("socks5://"), "{refused}");
    }

    #[tokio::test]
    async fn an_error_body_is_read_up_to_its_bound() {
        // 1 MB promised and sent; only the bound is kept.
        let (listener, port) = bound();
        thread::spawn(move || {
            if let Some(Ok(mut stream)) = listener.incoming().next() {
                let _ = read_head(&mut stream);
                let head = "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 1000000\r\n\r\n";
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&vec![b'x'; 1_000_000]);
            }
        });
        let c = client(
            &format!("http://127.0.0.1:{port}/mcp"),
            &HeaderMap::new(),
            &Matcher::builder().build(),
        );
        let response = c.post().send().await.expect("sent");
        assert_eq!(response.status(), 500);
        let kept = bytes_at_most(response, 1000).await;
        assert_eq!(&kept[..], &[b'x'; 1000][..]);
    }
}
