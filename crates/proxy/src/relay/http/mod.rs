//! The Streamable HTTP transport, client side: the relay's upstream is a remote MCP server
//! (`mcp-budget proxy --upstream <URL>`).
//!
//! Source: the MCP specification's transport section, "Streamable HTTP", revisions 2025-06-18,
//! 2025-11-25 (sessions, a GET stream, resumable SSE streams) and 2026-07-28 (stateless: no
//! session, no GET stream, `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` on every
//! request).
//!
//! How a message moves:
//! - Every client message is POSTed on its own (`Accept: application/json,
//!   text/event-stream`), the body being the client's line byte for byte. Requests are sent
//!   concurrently in the client's order, except `initialize`, whose answer (the session id and
//!   the negotiated version) is awaited before anything else is sent.
//! - The answer is a JSON body or an SSE stream. Each JSON-RPC message received (the body, or
//!   each event's `data`) goes to the relay's server side as one line, so the relay routes and
//!   shapes it as it does a child's line. A message spread over several lines (pretty-printed
//!   JSON, several `data:` fields) is made one line by turning its line breaks into spaces:
//!   outside strings they are whitespace, and JSON strings hold no raw line break, so the
//!   message means the same.
//! - `Mcp-Session-Id` from the answer to `initialize` is sent on every later request and the
//!   version in its result as `MCP-Protocol-Version`; a request of the stateless protocol
//!   (`_meta["io.modelcontextprotocol/protocolVersion"]` of 2026-07-28 or later) sends its own
//!   version, `Mcp-Method` and, for `tools/call`, `resources/read` and `prompts/get`,
//!   `Mcp-Name` (Base64 sentinel when not plain ASCII), and for `tools/call` the
//!   `Mcp-Param-{Name}` headers of the tool's `x-mcp-header` parameters, learned from the
//!   `tools/list` results that passed (a tool whose annotations break the rules is dropped from
//!   those results, as the revision requires; see [`params`]).
//! - Once `initialize` is answered, a GET stream for the server's own messages is opened
//!   (`405` means the server offers none), before the client's next message is sent (up to
//!   2 s), so that a request the server sends right after `notifications/initialized`
//!   (`roots/list`) is not lost. It is reopened with `Last-Event-ID` when it drops, a few times
//!   at most (a `405` then is a warning, once). One listens at a time: a renewed session's
//!   replaces the old session's.
//! - An SSE answer that ends before the response (a dropped connection, or a 2025-11-25 server
//!   that closes the stream to be polled) is resumed with a GET carrying `Last-Event-ID` when
//!   the server gave event ids, waiting the `retry` it asked for. One event may take at most
//!   `max_line_bytes` + 64 KiB ([`bounded`]): a stream that never ends its event is cut and the
//!   request answered with an error.
//! - A `404` or `410 Gone` to a request of a session, or a `200` whose answer addressed to no
//!   request says the session is not found, starts a new session: the client's `initialize`
//!   and `notifications/initialized` are replayed and the request sent once more ([`renew`]).
//! - Only JSON-RPC messages for the client reach it ([`message::classify`]): the response to
//!   the request (its id's value), the server's requests and notifications. An answer with no
//!   JSON-RPC response for the request (an empty or HTML `200`, a notification, JSON of
//!   another shape, a response whose id is `null` or absent) answers the request with an error
//!   at once, in the server's words, not at the request timeout. A JSON body is read up to
//!   `max_line_bytes` + 1 bytes, no further.
//! - A request the relay answered at its request timeout is given up: its stream is closed
//!   and, but for a stateless request (whose cancellation that is), `notifications/cancelled`
//!   is POSTed for it.
//! - A client's `notifications/cancelled` of a stateless (2026-07-28) request closes that
//!   request's stream instead of being sent (the transport's cancellation); for earlier
//!   versions it is POSTed like any notification.
//! - When the client leaves, the requests in flight get the grace time to finish, then the
//!   session is ended with `DELETE`.
//!
//! - A `401` with a `Bearer` challenge signs in with OAuth (or refreshes the token) and sends
//!   the request again; a `403 insufficient_scope` steps up the scopes ([`oauth`]). Unless the
//!   user set an `Authorization` header: then it is sent as given.
//!
//! HTTP failures are answered to the client as JSON-RPC errors of the request that caused them
//! (code -32000, see [`exchange`]): connection refused, TLS errors, 401/403 (naming the
//! `--header` to set), 404 on a session (expired), other statuses with the server's own text.
//! Header values are never logged or put into messages; only their names are.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::timeout;
use url::Url;

use super::error::RelayError;
use super::lines::Frame;
use super::log;
use super::route;

mod bounded;
mod client;
#[cfg(test)]
mod client_tests;
mod events;
mod exchange;
mod message;
pub mod oauth;
mod params;
mod renew;
mod transport;

pub(crate) use transport::Transport;

use message::Outgoing;
use transport::State;

/// How long making a connection to the server (TCP, a proxy's tunnel, TLS) may take: 30 s.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the DELETE that ends the session may take: 2 s.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

/// A remote MCP server reached over Streamable HTTP: its URL and the headers sent with every
/// request (credentials, typically `Authorization`).
///
/// Its `Debug` form and every message name the headers but never show their values, and show
/// the URL without its query and user info.
#[derive(Clone)]
pub struct HttpUpstream {
    url: Url,
    headers: HeaderMap,
    /// Boxed: most upstreams never sign in, and `Upstream`'s variants stay alike in size.
    oauth: Box<oauth::OAuthOptions>,
}

/// A bad `--upstream` URL or `--header`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpUpstreamError {
    /// The URL does not parse, or is not `http` or `https`.
    #[error("bad upstream URL: {message}")]
    Url {
        /// What is wrong (the URL itself is not repeated: it may hold a token).
        message: String,
    },
    /// A header is not `Name: value`, or its name or value is not valid in HTTP.
    #[error("bad header {name:?}: {message}")]
    Header {
        /// The header's name as given (never its value).
        name: String,
        /// What is wrong.
        message: String,
    },
}

impl HttpUpstream {
    /// The server at `url` (`http://` or `https://`), with no extra headers.
    ///
    /// # Errors
    ///
    /// [`HttpUpstreamError::Url`] when `url` does not parse or has another scheme.
    pub fn new(url: &str) -> Result<HttpUpstream, HttpUpstreamError> {
        let url = Url::parse(url.trim()).map_err(|e| HttpUpstreamError::Url {
            message: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(HttpUpstreamError::Url {
                message: format!(
                    "the scheme is {:?}; only http and https are supported",
                    url.scheme()
                ),
            });
        }
        Ok(HttpUpstream {
            url,
            headers: HeaderMap::new(),
            oauth: Box::new(oauth::OAuthOptions::new()),
        })
    }

    /// Sends `name: value` with every request, replacing an earlier header of that name
    /// (names are case-insensitive, RFC 9110 §5.1). The value is marked sensitive.
    ///
    /// # Errors
    ///
    /// [`HttpUpstreamError::Header`] when the name is not an HTTP token or the value holds a
    /// line break or another control character.
    pub fn set_header(&mut self, name: &str, value: &str) -> Result<(), HttpUpstreamError> {
        let bad = |message: &str| HttpUpstreamError::Header {
            name: name.to_owned(),
            message: message.to_owned(),
        };
        let header = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| bad("not a valid header name"))?;
        let mut value = HeaderValue::from_str(value.trim())
            .map_err(|_| bad("the value holds a character not allowed in a header"))?;
        value.set_sensitive(true);
        self.headers.insert(header, value);
        Ok(())
    }

    /// [`HttpUpstream::set_header`] from one `Name: value` text (as `--header` takes it; curl's
    /// form). Whitespace around the name and the value is dropped.
    ///
    /// # Errors
    ///
    /// [`HttpUpstreamError::Header`] when there is no `:` or the parts are not valid.
    pub fn set_header_line(&mut self, line: &str) -> Result<(), HttpUpstreamError> {
        let Some((name, value)) = line.split_once(':') else {
            let name = line.split_whitespace().next().unwrap_or_default();
            return Err(HttpUpstreamError::Header {
                name: name.to_owned(),
                message: "expected `Name: value`".to_owned(),
            });
        };
        self.set_header(name, value)
    }

    /// How the proxy signs in when the server asks (`401`), unless an `Authorization` header
    /// is set ([`oauth`]).
    pub fn set_oauth(&mut self, options: oauth::OAuthOptions) {
        *self.oauth = options;
    }

    /// The sign-in options.
    pub fn oauth(&self) -> &oauth::OAuthOptions {
        &self.oauth
    }

    /// The server's URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The names of the extra headers, lowercase.
    pub fn header_names(&self) -> impl Iterator<Item = &str> {
        self.headers.keys().map(HeaderName::as_str)
    }

    /// The URL without user info, query or fragment, for messages.
    pub(crate) fn shown_url(&self) -> String {
        client::shown_url(&self.url)
    }
}

impl fmt::Debug for HttpUpstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpUpstream")
            .field("url", &self.shown_url())
            .field("headers", &self.header_names().collect::<Vec<_>>())
            .finish()
    }
}

/// The `notifications/cancelled` of the request `raw_id` the relay gave up on.
fn cancelled_line(raw_id: &[u8]) -> Vec<u8> {
    let mut line =
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"#.to_vec();
    line.extend_from_slice(raw_id);
    line.extend_from_slice(
        br#","reason":"mcp-budget: no answer within the request timeout (--request-timeout)"}}"#,
    );
    line
}

impl Transport {
    /// A transport to `upstream` that hands received messages to `frames`; messages longer
    /// than `max_line_bytes` are handed as [`Frame::TooLong`].
    ///
    /// # Errors
    ///
    /// [`RelayError::HttpClient`] when the HTTP client cannot be built.
    pub(crate) fn new(
        upstream: &HttpUpstream,
        frames: mpsc::Sender<Frame>,
        max_line_bytes: usize,
    ) -> Result<Arc<Transport>, RelayError> {
        // rustls on ring: the process's crypto provider (the platform verifier takes it).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = client::Client::new(&upstream.url, &upstream.headers, CONNECT_TIMEOUT)
            .map_err(RelayError::HttpClient)?;
        let has_authorization =
            oauth::user_authorizes(&upstream.headers) || client.has_url_credentials();
        let (client, auth) = if has_authorization {
            (client, None)
        } else {
            let bearer = Arc::new(std::sync::RwLock::new(None));
            let auth = oauth::Authenticator::new(
                &upstream.url,
                (*upstream.oauth).clone(),
                Arc::clone(&bearer),
            );
            (client.with_bearer(bearer), Some(auth))
        };
        Ok(Arc::new(Transport {
            client,
            shown: upstream.shown_url(),
            has_authorization,
            state: Mutex::new(State::default()),
            frames,
            max_line_bytes,
            params: Mutex::new(HashMap::new()),
            renewing: tokio::sync::Mutex::new(()),
            listener: Mutex::new(None),
            listened: AtomicBool::new(false),
            warned_405: AtomicBool::new(false),
            auth,
        }))
    }

    /// Sends the client's messages until the queue closes (the client left); then gives the
    /// requests in flight `grace` to finish, and ends the session.
    ///
    /// `expired` names (by raw id) the requests the relay answered itself because the server
    /// did not within the request timeout: each is cancelled upstream ([`Transport::abandon`]).
    pub(crate) async fn run(
        self: Arc<Self>,
        mut messages: mpsc::Receiver<Vec<u8>>,
        mut expired: mpsc::UnboundedReceiver<Box<[u8]>>,
        grace: Duration,
    ) {
        let mut in_flight = JoinSet::new();
        // The requests in flight, by id key: their exchange (closing its stream cancels a
        // stateless request, and ends one given up on) and whether they are stateless.
        let mut requests: HashMap<Vec<u8>, (AbortHandle, bool)> = HashMap::new();
        let mut expiring = true;
        loop {
            let line = tokio::select! {
                line = messages.recv() => match line {
                    Some(line) => line,
                    None => break,
                },
                raw = expired.recv(), if expiring => {
                    match raw {
                        Some(raw) => {
                            let key = route::id_key(&raw);
                            if let Some((exchange, stateless)) = requests.remove(&key) {
                                self.abandon(&raw, &exchange, stateless, &mut in_flight);
                            }
                        }
                        None => expiring = false,
                    }
                    continue;
                }
            };
            while let Some(done) = in_flight.try_join_next_with_id() {
                let id = match done {
                    Ok((id, ())) => id,
                    Err(e) => e.id(),
                };
                requests.retain(|_, (handle, _)| handle.id() != id);
            }
            let message = Outgoing::read(&line);
            if let Some(cancelled) = message.cancels.as_ref()
                && let Some((handle, true)) = requests.get(cancelled)
            {
                // MCP 2026-07-28, Streamable HTTP, "Cancellation": closing the SSE response
                // stream is the cancellation; no `notifications/cancelled` is sent.
                handle.abort();
                requests.remove(cancelled);
                continue;
            }
            if message.is_initialize() {
                self.state().handshake = Some((bytes::Bytes::from(line.clone()), None));
                // Its answer holds the session id and the version every later request sends.
                Arc::clone(&self).exchange(line, message).await;
                if self.no_listener() && self.state().version.is_some() {
                    // The GET stream is opened before anything else is sent: a server that
                    // sends a request (roots/list) right after `notifications/initialized`
                    // would otherwise send it before the stream exists, and it would be lost.
                    let opened = self.open_listener();
                    let _ = timeout(events::LISTEN_WAIT, opened).await;
                }
                continue;
            }
            if message.method.as_deref() == Some("notifications/initialized") {
                if let Some((_, initialized)) = self.state().handshake.as_mut() {
                    *initialized = Some(bytes::Bytes::from(line.clone()));
                }
                // Before any request of the session.
                Arc::clone(&self).exchange(line, message).await;
                continue;
            }
            let key = message.id.as_deref().map(route::id_key);
            let stateless = message.stateless_version.is_some();
            let handle = in_flight.spawn(Arc::clone(&self).exchange(line, message));
            if let Some(key) = key {
                requests.insert(key, (handle, stateless));
            }
        }
        if !in_flight.is_empty() {
            log::debug(format_args!(
                "client left; waiting up to {grace:?} for {} upstream exchanges",
                in_flight.len()
            ));
        }
        let _ = timeout(grace, async {
            while in_flight.join_next().await.is_some() {}
        })
        .await;
        in_flight.abort_all();
        if let Some(listener) = self.listener().take() {
            listener.abort();
        }
        self.end_session().await;
    }

    /// Gives up on the request `raw_id` (the relay answered it at the request timeout): its
    /// exchange is aborted, which closes its stream (nothing more of it is read or held), and
    /// the server is told with `notifications/cancelled` (MCP 2025-06-18 and 2025-11-25,
    /// "Cancellation": the request's id and a reason), POSTed like the client's own. For a
    /// stateless (2026-07-28) request closing the stream is the cancellation: nothing is sent.
    fn abandon(
        self: &Arc<Self>,
        raw_id: &[u8],
        exchange: &AbortHandle,
        stateless: bool,
        in_flight: &mut JoinSet<()>,
    ) {
        exchange.abort();
        log::debug(format_args!(
            "closed the upstream stream of request {} (answered at the request timeout)",
            log::preview(raw_id)
        ));
        if stateless {
            return;
        }
        let line = cancelled_line(raw_id);
        let message = Outgoing::read(&line);
        in_flight.spawn(Arc::clone(self).exchange(line, message));
    }

    /// `DELETE` of the session, if there is one (2025-06-18 §"Session Management": a client
    /// that no longer needs a session SHOULD end it; `405` means the server does not allow it).
    async fn end_session(&self) {
        let (session, version) = {
            let state = self.state();
            (state.session.clone(), state.version.clone())
        };
        let Some(session) = session else {
            return;
        };
        let mut request = self
            .client
            .delete()
            .header(exchange::SESSION_ID, session)
            .timeout(DELETE_TIMEOUT);
        if let Some(version) = version {
            request = request.header(exchange::PROTOCOL_VERSION, version);
        }
        match request.send().await {
            Ok(response) => log::debug(format_args!(
                "ended the upstream session: HTTP {}",
                response.status()
            )),
            Err(e) => log::debug(format_args!(
                "could not end the upstream session: {}",
                self.describe_error(&e)
            )),
        }
    }
}
