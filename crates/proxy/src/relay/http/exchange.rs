//! One client message's exchange: the POST, its answer (JSON, SSE, `202 Accepted`), and the
//! JSON-RPC error that answers a request whose exchange failed.
//!
//! Failures are answered with code -32000 (the SDKs' "connection closed"/server error) and a
//! message that says what happened and what to do; when the server's error body is itself a
//! JSON-RPC error, its code and message are kept.

use std::sync::Arc;

use http::StatusCode;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderValue, LOCATION, WWW_AUTHENTICATE};

use super::super::lines::Frame;
use super::super::route::{self, Parsed};
use super::super::scan::Scanner;
use super::super::{log, reply};
use super::client::{self, Bounded, ClientError, RequestBuilder, Response};
use super::message::{self, Outgoing, Received, Stray, classify, header_safe, negotiated_version};
use super::oauth::Challenge;
use super::transport::Transport;

/// `Mcp-Session-Id` (MCP 2025-06-18, "Session Management").
pub(super) const SESSION_ID: &str = "mcp-session-id";
/// `MCP-Protocol-Version` (MCP 2025-06-18, "Protocol Version Header").
pub(super) const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method` (MCP 2026-07-28, "Standard Request Headers").
const METHOD: &str = "mcp-method";
/// `Mcp-Name` (MCP 2026-07-28, "Standard Request Headers").
const NAME: &str = "mcp-name";
/// How many sign-ins (or refreshes) one request may cause: 3 (the conformance suite's
/// `auth/scope-retry-limit` allows no more).
const SIGN_IN_ATTEMPTS: usize = 3;
/// What a POST accepts (MCP: "MUST include an Accept header listing both").
const ACCEPT_POST: &str = "application/json, text/event-stream";

/// How many bytes of an error status's body are read (quoted, or parsed as a JSON-RPC error):
/// 64 KiB, so a server that answers an error with an endless body costs no more.
const ERROR_BODY_BYTES: usize = 64 * 1024;

/// How many bytes of an error body are quoted in a message.
const QUOTED_BODY: usize = 300;

/// Why an exchange failed.
pub(super) enum Failure {
    /// The request could not be sent or its answer read (connection refused, TLS, reset …).
    Send(ClientError),
    /// The server answered with a status that is not success.
    Status(StatusCode, Response),
    /// The server's answer was no response to the request: said in words, with the server's
    /// JSON-RPC error (code, message) when it gave one.
    Server(String, Option<(i64, String)>),
    /// Anything else, said in words.
    Other(String),
}

/// What became of one message received ([`Transport::hand`]).
pub(super) enum Handed {
    /// Handed to the relay; `answers`: it is the response to the exchange's request.
    Relayed { answers: bool },
    /// Blank: nothing to hand.
    Blank,
    /// Not handed: it is no JSON-RPC message for the client.
    Refused(Refusal),
}

/// Why a received message was not handed to the client.
pub(super) enum Refusal {
    /// A response addressed to no request (its id `null` or absent).
    Stray(Stray),
    /// No JSON-RPC message (`json`: JSON of another shape); `quoted`: its start, as [`quote`]
    /// writes it.
    NotJsonRpc { json: bool, quoted: String },
    /// Longer than `max_line_bytes`: its length in bytes, in words (`more than N` when it was
    /// not read to its end).
    TooLong { bytes: String },
}

/// Messages up to this many bytes are classified on the transport's task: 1 MiB (a longer one
/// whose ends do not decide it is parsed on the blocking pool).
const CLASSIFY_INLINE_BYTES: usize = 1024 * 1024;

/// Whether a status to a request of a session says the server does not know the session:
/// `404` (MCP 2025-06-18, "Session Management") or `410 Gone` (typescript-sdk#1402).
fn is_session_gone(status: StatusCode) -> bool {
    matches!(status, StatusCode::NOT_FOUND | StatusCode::GONE)
}

impl Transport {
    /// POSTs one client message and hands what comes back to the relay.
    ///
    /// A session the server no longer knows (`404`; `410 Gone`, typescript-sdk#1402; a `200`
    /// whose answer says so, keryx#503) is renewed once ([`renew`](super::renew)) and the
    /// message sent again.
    pub(super) async fn exchange(self: Arc<Self>, line: Vec<u8>, message: Outgoing) {
        let line = bytes::Bytes::from(line);
        let expired = {
            let mut state = self.state();
            if message.is_initialize() {
                state.expired = false;
            }
            state.expired
        };
        if expired {
            let text = format!(
                "the upstream server at {} no longer knows this session and a new one could not \
                 be started; reconnect this MCP server in your client",
                self.shown
            );
            return self.fail_with(&message, text).await;
        }
        let mut renewed = false;
        loop {
            let sent_session = self.state().session.clone();
            let Some(response) = self.send_authorized(&line, &message).await else {
                return;
            };
            let stale = sent_session.filter(|_| !renewed && !message.is_initialize());
            let status = response.status();
            let gone = if stale.is_some() && is_session_gone(status) {
                Some(format!("HTTP {status}"))
            } else {
                self.answer(response, &message, stale.is_some()).await
            };
            let (Some(why), Some(stale)) = (gone, stale) else {
                return;
            };
            // The server forgot the session: start a new one and send this once more.
            if let Err(failed) = self.renew(&stale, &why).await {
                {
                    let mut state = self.state();
                    state.session = None;
                    state.version = None;
                    state.expired = true;
                }
                let text = format!(
                    "the upstream server at {} no longer knows this session ({why}: it expired or \
                     the server restarted), and a new one could not be started ({failed}); \
                     reconnect this MCP server in your client",
                    self.shown
                );
                return self.fail_with(&message, text).await;
            }
            renewed = true;
        }
    }

    /// POSTs `line` with the sign-in's token: a `401` with a `Bearer` challenge signs in (or
    /// refreshes), a `403 insufficient_scope` steps up, at most [`SIGN_IN_ATTEMPTS`] times, the
    /// message sent again after each ([`oauth`](super::oauth)). `None` when the request was
    /// answered with an error (it could not be sent, or signing in failed).
    async fn send_authorized(&self, line: &bytes::Bytes, message: &Outgoing) -> Option<Response> {
        if let Some(auth) = &self.auth {
            auth.before_send().await;
        }
        let mut sent_bearer = self.auth.as_ref().and_then(|a| a.current());
        let mut response = match self.post(line.clone(), message).send().await {
            Ok(response) => response,
            Err(e) => {
                self.fail(message, Failure::Send(e)).await;
                return None;
            }
        };
        let Some(auth) = &self.auth else {
            return Some(response);
        };
        for _ in 0..SIGN_IN_ATTEMPTS {
            // Most answers are neither: their headers are not read.
            if !matches!(
                response.status(),
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
            ) {
                break;
            }
            let challenge = Challenge::parse(
                response
                    .headers()
                    .get_all(WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|v| v.to_str().ok()),
            );
            let retry = match response.status() {
                // Only a `Bearer` challenge asks for OAuth (RFC 6750 §3); a server that wants
                // Basic or an API key is answered as before.
                _ if !challenge.bearer => break,
                StatusCode::UNAUTHORIZED => auth.unauthorized(&challenge, sent_bearer).await,
                StatusCode::FORBIDDEN if challenge.is_insufficient_scope() => {
                    auth.forbidden(&challenge, sent_bearer).await
                }
                _ => break,
            };
            if let Err(text) = retry {
                self.fail_with(message, text).await;
                return None;
            }
            sent_bearer = auth.current();
            response = match self.post(line.clone(), message).send().await {
                Ok(response) => response,
                Err(e) => {
                    self.fail(message, Failure::Send(e)).await;
                    return None;
                }
            };
        }
        Some(response)
    }

    /// Reads the answer to the POST of `message` and hands its messages to the relay, or
    /// answers the request with an error (a failed status, no response in it, a message that
    /// is not for the client).
    ///
    /// Returns why the session is gone, without answering, when the answer says the server
    /// does not know it and `renewable` (the caller then renews it).
    ///
    /// A JSON body is read up to `max_line_bytes` + 1 bytes ([`client::bytes_within`]): a
    /// longer one is answered with an error without being held. A valid answer within the
    /// bound peaks at about 4× its size in memory (the body read, then the shaper's parsed
    /// value and its output: a 200 MB answer ~800 MiB).
    async fn answer(
        &self,
        response: Response,
        message: &Outgoing,
        renewable: bool,
    ) -> Option<String> {
        let status = response.status();
        if message.is_initialize() && status.is_success() {
            let session = response.headers().get(SESSION_ID).cloned();
            self.state().session = session;
        }
        if !status.is_success() {
            self.fail(message, Failure::Status(status, response)).await;
            return None;
        }
        if status == StatusCode::ACCEPTED {
            if message.id.is_some() {
                log::debug(format_args!(
                    "the upstream server accepted {} without answering it (HTTP 202)",
                    message.method.as_deref().unwrap_or("a request")
                ));
            }
            return None;
        }
        if is_event_stream(&response) {
            let refusal = self.follow(response, message).await?;
            let source = "sent an event on its SSE stream";
            return self
                .refuse(message, refusal, renewable, source, "the event")
                .await;
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let what = content_type.map_or_else(
            || "no Content-Type".to_owned(),
            |t| format!("Content-Type {t:?}"),
        );
        let source = format!("answered HTTP {status} ({what})");
        let body = match client::bytes_within(response, self.max_line_bytes).await {
            Ok(Bounded::Whole(body)) => body,
            Ok(Bounded::TooLong { declared }) => {
                let bytes = declared.map_or_else(
                    || format!("more than {}", self.max_line_bytes),
                    |n| n.to_string(),
                );
                log::warn(format_args!(
                    "dropped an upstream answer of {bytes} bytes: over the limit of {} bytes \
                     (--max-line-bytes)",
                    self.max_line_bytes
                ));
                let refusal = Refusal::TooLong { bytes };
                return self
                    .refuse(message, refusal, false, &source, "the body")
                    .await;
            }
            Err(e) => {
                self.fail(message, Failure::Send(e)).await;
                return None;
            }
        };
        let quoted = message.id.is_some().then(|| quote(&body));
        match self.hand(body, Some(message)).await {
            Handed::Relayed { answers: true } => None,
            Handed::Refused(refusal) => {
                self.refuse(message, refusal, renewable, &source, "the body")
                    .await
            }
            Handed::Relayed { answers: false } | Handed::Blank => {
                if let Some(quoted) = quoted {
                    // Nothing else will answer it: say so now rather than at the timeout.
                    let text = format!(
                        "the upstream server at {} {source} without a JSON-RPC response to this \
                         request{quoted}",
                        self.shown
                    );
                    self.fail_with(message, text).await;
                }
                None
            }
        }
    }

    /// Answers the request of `message` with the error that `refusal` calls for: the server's
    /// answer (`source`, e.g. `answered HTTP 200 OK (…)`; `part`: `the body`, `the event`) is
    /// no JSON-RPC message for the client. Returns why the session is gone instead, without
    /// answering, when the server's words say it does not know the session and `renewable`.
    async fn refuse(
        &self,
        message: &Outgoing,
        refusal: Refusal,
        renewable: bool,
        source: &str,
        part: &str,
    ) -> Option<String> {
        let url = &self.shown;
        let failure = match refusal {
            Refusal::Stray(stray) if stray.session_gone && renewable => {
                return Some(format!("HTTP 200 with {:?}", stray.words));
            }
            Refusal::Stray(stray) => {
                let text = format!(
                    "the upstream server at {url} {source} with an answer addressed to no request \
                     (its id is null or absent) instead of the response to this request"
                );
                match stray.code {
                    Some(code) => Failure::Server(text, Some((code, stray.words))),
                    None => Failure::Server(format!("{text}: {}", stray.words), None),
                }
            }
            Refusal::NotJsonRpc { json, quoted } => {
                let kind = if json {
                    "JSON but not a JSON-RPC message"
                } else {
                    "not JSON"
                };
                Failure::Other(format!(
                    "the upstream server at {url} {source} without a JSON-RPC response to this \
                     request: {part} is {kind}{quoted}"
                ))
            }
            Refusal::TooLong { bytes } => Failure::Other(format!(
                "the upstream server's response of {bytes} bytes exceeds the proxy's limit of {} \
                 bytes per line (mcp-budget --max-line-bytes)",
                self.max_line_bytes
            )),
        };
        self.fail(message, failure).await;
        None
    }

    /// The POST of `line` with the headers the protocol asks for.
    fn post(&self, line: bytes::Bytes, message: &Outgoing) -> RequestBuilder<'_> {
        let mut request = self
            .client
            .post()
            .header(ACCEPT, ACCEPT_POST)
            .header(CONTENT_TYPE, "application/json");
        let (session, version) = {
            let state = self.state();
            (state.session.clone(), state.version.clone())
        };
        if let Some(version) = &message.stateless_version {
            request = request.header(PROTOCOL_VERSION, version.as_str());
            if let Some(method) = &message.method
                && let Ok(value) = HeaderValue::from_str(method)
            {
                request = request.header(METHOD, value);
            }
            if let Some(name) = &message.name
                && let Ok(value) = HeaderValue::from_str(&header_safe(name))
            {
                request = request.header(NAME, value);
            }
            if let (Some(name), Some(arguments)) = (&message.name, &message.arguments) {
                let params = self
                    .params
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get(name)
                    .cloned();
                for (header, value) in params
                    .map(|p| super::params::headers_for(&p, arguments))
                    .unwrap_or_default()
                {
                    request = request.header(header, value);
                }
            }
        } else if let Some(version) = version
            && !message.is_initialize()
        {
            request = request.header(PROTOCOL_VERSION, version);
        }
        if let Some(session) = session
            && !message.is_initialize()
        {
            request = request.header(SESSION_ID, session);
        }
        request.body(line)
    }

    /// Hands one received message of the exchange of `exchange` (`None`: the GET stream) to the
    /// relay as one line, when it is a JSON-RPC message for the client ([`classify`]);
    /// `initialize`'s answer also sets the version later requests send. What is not (a
    /// response addressed to no request, no JSON-RPC message, and for a request's exchange a
    /// message longer than `max_line_bytes`) never reaches the client: it is returned, for the
    /// caller to answer the request with, or (without a request) dropped with a warning.
    pub(super) async fn hand(&self, mut message: Vec<u8>, exchange: Option<&Outgoing>) -> Handed {
        // Pretty-printed JSON and multi-line SSE data: a line break outside a string is
        // whitespace, and a JSON string holds none.
        // (memchr: a byte loop costs ~0.5 ms per MB, and most messages hold no line break.)
        let mut at = 0;
        while let Some(i) = message
            .get(at..)
            .and_then(|m| memchr::memchr2(b'\n', b'\r', m))
        {
            message[at + i] = b' ';
            at += i + 1;
        }
        if message.starts_with(b"\xEF\xBB\xBF") {
            message.drain(..3);
        }
        if message.iter().all(u8::is_ascii_whitespace) {
            return Handed::Blank;
        }
        let request = exchange.and_then(|m| m.id.as_deref()).map(route::id_key);
        if message.len() > self.max_line_bytes {
            return self.hand_too_long(message, request.as_deref()).await;
        }
        let (message, received) = if message.len() > CLASSIFY_INLINE_BYTES {
            // Long messages the ends do not decide are parsed whole: off the runtime's threads.
            let decided = message::classify_head(&message, request.as_deref());
            match decided {
                Some(received) => (message, received),
                None => {
                    let parsing = tokio::task::spawn_blocking(move || {
                        let received = classify(&message, request.as_deref());
                        (message, received)
                    });
                    match parsing.await {
                        Ok(done) => done,
                        Err(_) => {
                            let quoted = String::new();
                            return Handed::Refused(Refusal::NotJsonRpc {
                                json: false,
                                quoted,
                            });
                        }
                    }
                }
            }
        } else {
            let received = classify(&message, request.as_deref());
            (message, received)
        };
        let (response, answers) = match received {
            Received::Message { response, answers } => (response, answers),
            Received::Stray(stray) => {
                return self.refused(exchange, Refusal::Stray(stray), &message);
            }
            Received::NotJsonRpc { json } => {
                let quoted = quote(&message);
                return self.refused(exchange, Refusal::NotJsonRpc { json, quoted }, &message);
            }
        };
        let mut message = message;
        if response && memchr::memmem::find(&message, b"\"x-mcp-header\"").is_some() {
            self.learn_params(&mut message);
        }
        if answers
            && exchange.is_some_and(Outgoing::is_initialize)
            && let Some(version) = negotiated_version(&message)
        {
            self.state().version = Some(version);
        }
        // Fails only when the relay is shutting down.
        let _ = self.frames.send(Frame::Line(message)).await;
        Handed::Relayed { answers }
    }

    /// [`Transport::hand`] of a message longer than `max_line_bytes`: the relay gets it as
    /// [`Frame::TooLong`] (it logs it, and answers the request its scan names) unless it is
    /// for the exchange's request (`request`: its id key), which is then refused.
    async fn hand_too_long(&self, message: Vec<u8>, request: Option<&[u8]>) -> Handed {
        let scan = Scanner::scan(&message);
        let bytes = message.len();
        drop(message);
        let other = scan.id.as_deref().map(route::id_key);
        if let Some(request) = request
            && !scan.has_method
            && other.as_deref().is_none_or(|other| other == request)
        {
            log::warn(format_args!(
                "dropped an upstream message of {bytes} bytes: over the limit of {} bytes \
                 (--max-line-bytes)",
                self.max_line_bytes
            ));
            return Handed::Refused(Refusal::TooLong {
                bytes: bytes.to_string(),
            });
        }
        let _ = self
            .frames
            .send(Frame::TooLong {
                bytes: bytes as u64,
                scan,
            })
            .await;
        Handed::Relayed { answers: false }
    }

    /// A message refused by [`Transport::hand`]: returned for a request's exchange, else
    /// dropped with a warning.
    fn refused(&self, exchange: Option<&Outgoing>, refusal: Refusal, message: &[u8]) -> Handed {
        if exchange.is_none_or(|m| m.id.is_none()) {
            let what = match &refusal {
                Refusal::Stray(_) => "an answer addressed to no request",
                Refusal::NotJsonRpc { .. } | Refusal::TooLong { .. } => {
                    "what is not a JSON-RPC message"
                }
            };
            log::warn(format_args!(
                "dropped {what} from the upstream server at {}: {}",
                self.shown,
                log::preview(message)
            ));
        }
        Handed::Refused(refusal)
    }

    /// Learns the `x-mcp-header` parameters of a `tools/list` result, and drops the tools whose
    /// annotations are invalid from it (MCP 2026-07-28: a client MUST exclude them).
    fn learn_params(&self, message: &mut Vec<u8>) {
        let Some(learned) = super::params::learn(message) else {
            return;
        };
        for (tool, why) in &learned.rejected {
            log::warn(format_args!(
                "dropped tool {tool:?} of the upstream server's tools/list: {why}"
            ));
        }
        if !learned.rejected.is_empty()
            && let Some(rewritten) = super::params::without_tools(message, &learned.rejected)
        {
            *message = rewritten;
        }
        self.params
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(learned.tools);
    }

    /// Answers the request of a failed exchange with a JSON-RPC error (through the relay's
    /// server side, like an answer of the server); a failed notification or response is
    /// logged.
    pub(super) async fn fail(&self, message: &Outgoing, failure: Failure) {
        let (text, upstream_error) = match failure {
            Failure::Send(e) => (self.describe_error(&e), None),
            Failure::Other(text) => (text, None),
            Failure::Server(text, error) => (text, error),
            Failure::Status(status, response) => self.describe_status(status, response).await,
        };
        let what = message.method.as_deref().unwrap_or("a message");
        let Some(id) = &message.id else {
            log::warn(format_args!("could not deliver {what} upstream: {text}"));
            return;
        };
        log::warn(format_args!("{what} {}: {text}", log::preview(id)));
        let line = match upstream_error {
            Some((code, upstream)) => reply::error_line(id, code, &format!("{text}: {upstream}")),
            None => reply::error_line(id, reply::CONNECTION_CLOSED, &text),
        };
        let _ = self.frames.send(Frame::Line(line)).await;
    }

    /// What a status means for the user, and the server's JSON-RPC error (code, message) when
    /// its body is one.
    async fn describe_status(
        &self,
        status: StatusCode,
        response: Response,
    ) -> (String, Option<(i64, String)>) {
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_whitespace().next())
            .map(str::to_owned);
        // Where a redirect points, shown as the upstream URL is (no user info, query).
        let location = response
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| url::Url::parse(&self.shown).ok()?.join(v).ok())
            .map(|u| super::client::shown_url(&u));
        let body = client::bytes_at_most(response, ERROR_BODY_BYTES).await;
        let upstream_error = json_rpc_error(&body);
        let quoted = || {
            let text = String::from_utf8_lossy(&body[..body.len().min(QUOTED_BODY)]);
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if text.is_empty() {
                String::new()
            } else {
                format!(": {text}")
            }
        };
        let url = &self.shown;
        let text = match status {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                let scheme = challenge
                    .as_deref()
                    .map_or_else(String::new, |s| format!(", asks for {s}"));
                let fix = if self.has_authorization {
                    "the Authorization header given was refused: check the token (`--header`, \
                     MCP_BUDGET_HEADERS or [upstream.headers] in the config)"
                } else if challenge
                    .as_deref()
                    .is_some_and(|s| s.eq_ignore_ascii_case("bearer"))
                {
                    "signing in again did not help: run `mcp-budget logout <URL>` then \
                     `mcp-budget login <URL>`, or pass a token with `--header 'Authorization: \
                     Bearer <token>'`"
                } else {
                    "pass the credentials it expects, e.g. `--header 'Authorization: Bearer <token>'` \
                     (or MCP_BUDGET_HEADERS, or [upstream.headers] in the config)"
                };
                format!(
                    "the upstream server at {url} refused the request (HTTP {status}{scheme}); \
                     {fix}"
                )
            }
            s if is_session_gone(s) && self.state().session.is_some() => {
                // Every later request would get the same: forget the session, so that a client
                // that initializes again gets a new one.
                let mut state = self.state();
                state.session = None;
                state.version = None;
                drop(state);
                format!(
                    "the upstream server no longer knows this session (HTTP {status}: it expired \
                     or the server restarted); reconnect this MCP server in your client to start \
                     a new one"
                )
            }
            s if s.is_redirection() && location.is_some() => format!(
                "the upstream server at {url} redirects to {} (HTTP {status}); give that URL as \
                 --upstream (redirects are not followed: they could take the credentials elsewhere)",
                location.as_deref().unwrap_or_default()
            ),
            StatusCode::NOT_FOUND if upstream_error.is_none() => {
                format!("no MCP endpoint at {url} (HTTP 404 Not Found); check the --upstream URL")
            }
            s if s.is_server_error() => format!(
                "the upstream server at {url} failed (HTTP {status}){}",
                if upstream_error.is_some() {
                    String::new()
                } else {
                    quoted()
                }
            ),
            _ => format!(
                "the upstream server at {url} answered HTTP {status}{}",
                if upstream_error.is_some() {
                    String::new()
                } else {
                    quoted()
                }
            ),
        };
        (text, upstream_error)
    }

    /// [`Failure::Other`] for the request of `message`.
    pub(super) async fn fail_with(&self, message: &Outgoing, text: String) {
        self.fail(message, Failure::Other(text)).await;
    }
}

/// The start of a body for a message: `: <text>`, whitespace collapsed, at most
/// [`QUOTED_BODY`] bytes; empty for an empty body (then `: empty body`).
fn quote(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(QUOTED_BODY)]);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        ": the body is empty".to_owned()
    } else {
        format!(": {text}")
    }
}

/// Whether the answer is an SSE stream.
pub(super) fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        })
}

/// The code and message of a JSON-RPC error response in `body`.
fn json_rpc_error(body: &[u8]) -> Option<(i64, String)> {
    let Parsed::Message(envelope) = route::parse(body) else {
        return None;
    };
    #[derive(serde::Deserialize)]
    struct Error {
        code: i64,
        message: String,
    }
    let error: Error = serde_json::from_str(envelope.error?.get()).ok()?;
    Some((error.code, error.message))
}

impl Transport {
    /// A client error in words, with its causes (connection refused, the TLS error …), the
    /// proxy when one is used, and without the URL's secrets (the shown URL).
    pub(super) fn describe_error(&self, error: &ClientError) -> String {
        let url = match self.client.proxy() {
            Some(proxy) => format!("{} through the proxy {proxy}", self.shown),
            None => self.shown.clone(),
        };
        let what = if error.is_connect() {
            format!("cannot connect to the upstream server at {url}")
        } else if error.is_timeout() {
            format!("the upstream server at {url} did not answer in time")
        } else if error.is_body() {
            format!("the answer of the upstream server at {url} broke off")
        } else {
            format!("the request to the upstream server at {url} failed")
        };
        let mut causes = Vec::new();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !causes.contains(&text) {
                causes.push(text);
            }
            source = cause.source();
        }
        if causes.is_empty() {
            what
        } else {
            format!("{what}: {}", causes.join(": "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_rpc_error_bodies_are_read() {
        let body = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: No valid session ID provided"}}"#;
        assert_eq!(
            json_rpc_error(body),
            Some((
                -32600,
                "Bad Request: No valid session ID provided".to_owned()
            ))
        );
        assert_eq!(json_rpc_error(b"Internal Server Error"), None);
    }
}
