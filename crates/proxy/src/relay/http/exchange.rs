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
use super::Transport;
use super::client::{self, ClientError, RequestBuilder, Response};
use super::message::{Outgoing, header_safe, negotiated_version};
use super::oauth::Challenge;

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
    /// Anything else, said in words.
    Other(String),
}

impl Transport {
    /// POSTs one client message and hands what comes back to the relay.
    pub(super) async fn exchange(self: Arc<Self>, line: Vec<u8>, message: Outgoing) {
        let line = bytes::Bytes::from(line);
        let (sent_session, expired) = {
            let mut state = self.state();
            if message.is_initialize() {
                state.expired = false;
            }
            (state.session.clone(), state.expired)
        };
        if expired {
            let text = format!(
                "the upstream server at {} no longer knows this session and a new one could not \
                 be started; reconnect this MCP server in your client",
                self.shown
            );
            return self.fail_with(&message, text).await;
        }
        if let Some(auth) = &self.auth {
            auth.before_send().await;
        }
        let mut sent_bearer = self.auth.as_ref().and_then(|a| a.current());
        let mut response = match self.post(line.clone(), &message).send().await {
            Ok(response) => response,
            Err(e) => return self.fail(&message, Failure::Send(e)).await,
        };
        // OAuth: a 401 signs in (or refreshes), a 403 insufficient_scope steps up; at most
        // `SIGN_IN_ATTEMPTS` times for one request.
        if let Some(auth) = &self.auth {
            for _ in 0..SIGN_IN_ATTEMPTS {
                let challenge = Challenge::parse(
                    response
                        .headers()
                        .get_all(WWW_AUTHENTICATE)
                        .iter()
                        .filter_map(|v| v.to_str().ok()),
                );
                let retry = match response.status() {
                    // Only a `Bearer` challenge asks for OAuth (RFC 6750 §3); a server that
                    // wants Basic or an API key is answered as before.
                    _ if !challenge.bearer => break,
                    StatusCode::UNAUTHORIZED => auth.unauthorized(&challenge, sent_bearer).await,
                    StatusCode::FORBIDDEN if challenge.is_insufficient_scope() => {
                        auth.forbidden(&challenge, sent_bearer).await
                    }
                    _ => break,
                };
                if let Err(text) = retry {
                    return self.fail_with(&message, text).await;
                }
                sent_bearer = auth.current();
                response = match self.post(line.clone(), &message).send().await {
                    Ok(response) => response,
                    Err(e) => return self.fail(&message, Failure::Send(e)).await,
                };
            }
        }
        if response.status() == StatusCode::NOT_FOUND
            && !message.is_initialize()
            && let Some(stale) = sent_session
        {
            // The server forgot the session: start a new one and send this once more.
            match self.renew(&stale).await {
                Ok(()) => {
                    response = match self.post(line, &message).send().await {
                        Ok(response) => response,
                        Err(e) => return self.fail(&message, Failure::Send(e)).await,
                    };
                }
                Err(why) => {
                    {
                        let mut state = self.state();
                        state.session = None;
                        state.version = None;
                        state.expired = true;
                    }
                    let text = format!(
                        "the upstream server at {} no longer knows this session (HTTP 404: it \
                         expired or the server restarted), and a new one could not be started \
                         ({why}); reconnect this MCP server in your client",
                        self.shown
                    );
                    return self.fail_with(&message, text).await;
                }
            }
        }
        let status = response.status();
        if message.is_initialize() && status.is_success() {
            let session = response.headers().get(SESSION_ID).cloned();
            self.state().session = session;
        }
        if !status.is_success() {
            return self.fail(&message, Failure::Status(status, response)).await;
        }
        if status == StatusCode::ACCEPTED {
            if message.id.is_some() {
                log::debug(format_args!(
                    "the upstream server accepted {} without answering it (HTTP 202)",
                    message.method.as_deref().unwrap_or("a request")
                ));
            }
            return;
        }
        if is_event_stream(&response) {
            return self.follow(response, &message).await;
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        match client::bytes(response).await {
            Ok(body) => {
                let quoted = (message.id.is_some()).then(|| quote(&body));
                let answered = self.hand(Vec::from(body), message.is_initialize()).await;
                if let Some(quoted) = quoted.filter(|_| !answered) {
                    // Nothing else will answer it: say so now rather than at the timeout.
                    let what = content_type.map_or_else(
                        || "no Content-Type".to_owned(),
                        |t| format!("Content-Type {t:?}"),
                    );
                    let text = format!(
                        "the upstream server at {} answered HTTP {status} ({what}) without a \
                         JSON-RPC response to this request{quoted}",
                        self.shown
                    );
                    self.fail_with(&message, text).await;
                }
            }
            Err(e) => self.fail(&message, Failure::Send(e)).await,
        }
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

    /// Hands one received message to the relay as one line; `initialize`'s answer also sets the
    /// version later requests send. Returns whether it was a response.
    pub(super) async fn hand(&self, mut message: Vec<u8>, initialize: bool) -> bool {
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
            return false;
        }
        let response = super::message::is_response(&message);
        if response && memchr::memmem::find(&message, b"\"x-mcp-header\"").is_some() {
            self.learn_params(&mut message);
        }
        if initialize
            && response
            && let Some(version) = negotiated_version(&message)
        {
            self.state().version = Some(version);
        }
        let frame = if message.len() > self.max_line_bytes {
            Frame::TooLong {
                bytes: message.len() as u64,
                scan: Scanner::scan(&message),
            }
        } else {
            Frame::Line(message)
        };
        // Fails only when the relay is shutting down.
        let _ = self.frames.send(frame).await;
        response
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
            .map(|u| super::shown_url(&u));
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
            StatusCode::NOT_FOUND if self.state().session.is_some() => {
                // Every later request would get the same: forget the session, so that a client
                // that initializes again gets a new one.
                let mut state = self.state();
                state.session = None;
                state.version = None;
                drop(state);
                "the upstream server no longer knows this session (HTTP 404: it expired or the \
                 server restarted); reconnect this MCP server in your client to start a new one"
                    .to_owned()
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
