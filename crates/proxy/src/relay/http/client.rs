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
    pub(super) fn with_proxies(
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
