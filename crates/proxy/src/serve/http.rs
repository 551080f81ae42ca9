//! The HTTP handlers of the MCP endpoint: POST (messages), GET (the session's stream), DELETE
//! (end a session), and the checks in front of them.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::envelope::{
    self, CONNECTION_CLOSED, HANDSHAKE_VERSIONS, INVALID_REQUEST, Incoming, Kind, MODERN_VERSIONS,
    PARSE_ERROR, Refused, UNSUPPORTED_VERSION, error_body,
};
use super::principal::{Principal, Shapers};
use super::registry::{Registry, StartError};
use super::replay::{Replay, parse_event_id};
use super::security::{Denied, Guard};
use super::session::{Busy, Routed, Session};
use super::{ServeError, ServeOptions};
use crate::config::Settings;
use crate::relay::{RelayOptions, Upstream};

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// The first protocol version whose POST streams open with a priming event: 2025-11-25, the
/// revision that asks for it. Earlier clients may take an event with empty data for a
/// malformed message (the TypeScript SDK primes from this version on, for the same reason).
const PRIMING_SINCE: &str = "2025-11-25";

/// The `retry` of a priming event: how long a client that lost the stream waits before it
/// resumes with `Last-Event-ID`: 1 s.
const PRIMING_RETRY: Duration = Duration::from_secs(1);

/// The server's state, shared by every handler.
pub(crate) struct App {
    options: ServeOptions,
    guard: Guard,
    pub(super) registry: Arc<Registry>,
    /// The principal of the bearer token, when one is required.
    token: Option<Principal>,
    sweeper: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("path", &self.options.path)
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl App {
    pub(crate) fn new(
        options: ServeOptions,
        upstream: Upstream,
        relay: RelayOptions,
        settings: Settings,
    ) -> Result<App, ServeError> {
        let shapers = Shapers::new(settings)?;
        let token = options.auth_token.as_deref().map(Principal::token);
        // Built now so a bad config file or log path stops `serve` at once.
        shapers.for_principal(token.as_ref().unwrap_or(&Principal::Local))?;
        let registry = Arc::new(Registry::new(
            upstream,
            relay,
            shapers,
            options.max_sessions.max(1),
        ));
        Ok(App {
            guard: Guard::new(&options.allowed_origins, options.auth_token.as_deref()),
            registry,
            token,
            sweeper: Mutex::new(None),
            options,
        })
    }

    /// Ends every session (after the HTTP server stopped).
    pub(crate) async fn shut_down(&self) {
        if let Some(s) = self
            .sweeper
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            s.abort();
        }
        self.registry.stop_all(Duration::from_secs(15)).await;
    }

    pub(crate) fn finish(&self) {
        self.registry.shapers.finish();
    }

    pub(super) fn stateless_principal(&self) -> Principal {
        self.token.clone().unwrap_or(Principal::Local)
    }
}

/// The endpoint's routes, with the checks and the body limit; starts the idle sweep.
pub(crate) fn router(app: Arc<App>) -> Router {
    let idle = app.options.session_idle;
    let registry = Arc::clone(&app.registry);
    let sweeper = tokio::spawn(async move {
        let period = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(10));
        let mut tick = tokio::time::interval(period);
        loop {
            tick.tick().await;
            registry.sweep(idle);
        }
    });
    *app.sweeper.lock().unwrap_or_else(PoisonError::into_inner) = Some(sweeper);
    Router::new()
        .route(
            &app.options.path,
            post(post_message).get(open_stream).delete(end_session),
        )
        // Prometheus metrics of the process (`crate::metrics`), behind the same Origin and
        // bearer-token checks as the endpoint.
        .route("/metrics", get(metrics))
        .layer(DefaultBodyLimit::max(app.options.max_body_bytes))
        .layer(middleware::from_fn_with_state(Arc::clone(&app), check))
        .with_state(app)
}

/// `GET /metrics`: [`crate::metrics::render`], in the OpenMetrics text format.
async fn metrics() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        )],
        crate::metrics::render(),
    )
        .into_response()
}

/// `Origin`, then the bearer token, on every request.
async fn check(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let challenge = |extra: &str| {
        let value = format!(r#"Bearer realm="mcp-budget"{extra}"#);
        [(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("Bearer")),
        )]
    };
    match app.guard.check(req.headers()) {
        Ok(()) => next.run(req).await,
        Err(Denied::Origin(origin)) => rpc_error(
            StatusCode::FORBIDDEN,
            None,
            INVALID_REQUEST,
            &format!("Origin {origin:?} is not allowed (mcp-budget serve --allow-origin)"),
        ),
        Err(Denied::NoToken) => (
            challenge(""),
            rpc_error(
                StatusCode::UNAUTHORIZED,
                None,
                INVALID_REQUEST,
                "missing Authorization: Bearer <token>",
            ),
        )
            .into_response(),
        Err(Denied::BadToken) => (
            challenge(r#", error="invalid_token""#),
            rpc_error(
                StatusCode::UNAUTHORIZED,
                None,
                INVALID_REQUEST,
                "invalid bearer token",
            ),
        )
            .into_response(),
    }
}

/// What the client's `Accept` allows.
#[derive(Debug, Clone, Copy)]
pub(super) struct Accepts {
    pub(super) json: bool,
    pub(super) sse: bool,
}

impl Accepts {
    /// An absent `Accept` accepts both.
    fn of(headers: &HeaderMap) -> Accepts {
        let Some(value) = headers.get(header::ACCEPT) else {
            return Accepts {
                json: true,
                sse: true,
            };
        };
        let v = String::from_utf8_lossy(value.as_bytes()).to_ascii_lowercase();
        let any = v.contains("*/*");
        Accepts {
            json: any || v.contains("application/json") || v.contains("application/*"),
            sse: any || v.contains("text/event-stream") || v.contains("text/*"),
        }
    }
}

/// A header's value; `Err(name)` when it is not visible ASCII.
fn text_header<'h, 'n>(headers: &'h HeaderMap, name: &'n str) -> Result<Option<&'h str>, &'n str> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v.to_str().map(Some).map_err(|_| name),
    }
}

async fn post_message(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    let msg = match Incoming::parse(&body) {
        Ok(msg) => msg,
        Err(Refused::NotJson(e)) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                PARSE_ERROR,
                &format!("body is not JSON: {e}"),
            );
        }
        Err(Refused::Batch) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                INVALID_REQUEST,
                "JSON-RPC batches are not accepted: POST one message per request",
            );
        }
        Err(Refused::NotMessage) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                INVALID_REQUEST,
                "not a JSON-RPC request, notification or response",
            );
        }
    };
    let accepts = Accepts::of(&headers);
    if !accepts.json && !accepts.sse {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            msg.id.as_deref(),
            INVALID_REQUEST,
            "Accept must list application/json and text/event-stream",
        );
    }
    let (version, session_id) = match (
        text_header(&headers, VERSION_HEADER),
        text_header(&headers, SESSION_HEADER),
    ) {
        (Ok(v), Ok(s)) => (v, s),
        (Err(name), _) | (_, Err(name)) => {
            let message = format!("{name} is not visible ASCII");
            return rpc_error(
                StatusCode::BAD_REQUEST,
                msg.id.as_deref(),
                INVALID_REQUEST,
                &message,
            );
        }
    };
    match session_id {
        Some(id) => {
            let Some(session) = app.registry.get(id) else {
                return session_not_found(msg.id.as_deref());
            };
            if let Some(v) = version
                && !HANDSHAKE_VERSIONS.contains(&v)
                && !MODERN_VERSIONS.contains(&v)
            {
                return unsupported_version(msg.id.as_deref(), v);
            }
            // A request of a session speaking 2025-11-25 or later: its SSE answer opens at once.
            let prime = version.is_some_and(|v| v >= PRIMING_SINCE);
            deliver(session, msg, &body, accepts, None, None, prime).await
        }
        None if msg.is_initialize() => initialize(&app, msg, &body, accepts).await,
        None if version.is_some_and(|v| !HANDSHAKE_VERSIONS.contains(&v)) => {
            super::stateless::post(&app, &headers, msg, &body, accepts).await
        }
        None => rpc_error(
            StatusCode::BAD_REQUEST,
            msg.id.as_deref(),
            INVALID_REQUEST,
            "missing Mcp-Session-Id header: initialize a session first (or send \
             MCP-Protocol-Version: 2026-07-28 for a stateless request)",
        ),
    }
}

/// A new session: 128 random bits as 32 lowercase hex digits.
fn new_session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

async fn initialize(app: &App, msg: Incoming, body: &[u8], accepts: Accepts) -> Response {
    let Some(id) = new_session_id() else {
        return rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            msg.id.as_deref(),
            CONNECTION_CLOSED,
            "no random bytes for a session id",
        );
    };
    let principal = app
        .token
        .clone()
        .unwrap_or_else(|| Principal::Session(id.clone()));
    match app.registry.start(Some(id.clone()), principal) {
        Ok(session) => deliver(session, msg, body, accepts, Some(id), None, false).await,
        Err(e) => start_failed(msg.id.as_deref(), e),
    }
}

pub(super) fn start_failed(id: Option<&RawValue>, e: StartError) -> Response {
    match e {
        StartError::Full(n) => (
            [(header::RETRY_AFTER, HeaderValue::from_static("30"))],
            rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                id,
                CONNECTION_CLOSED,
                &format!(
                    "mcp-budget serve: {n} sessions are open, the most it allows (--max-sessions); \
                     end one (HTTP DELETE) or retry when an idle one has expired"
                ),
            ),
        )
            .into_response(),
        StartError::Shaper(e) => rpc_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            id,
            CONNECTION_CLOSED,
            &format!("mcp-budget serve: cannot set up shaping: {e}"),
        ),
    }
}

/// Writes the message into the session's relay; for a request, answers with what comes back.
/// `new_session`: the id to return in `Mcp-Session-Id` (initialize). `pool`: the registry a
/// stateless worker goes back to once its request is answered. `prime`: when the client
/// accepts SSE, answer with a resumable stream at once, opened by a priming event
/// ([`resumable`]), instead of waiting for the first message.
pub(super) async fn deliver(
    session: Arc<Session>,
    msg: Incoming,
    body: &[u8],
    accepts: Accepts,
    new_session: Option<String>,
    pool: Option<Arc<Registry>>,
    prime: bool,
) -> Response {
    let busy = session.busy();
    let line = envelope::one_line(body);
    let Some(id) = msg.id.filter(|_| msg.kind == Kind::Request) else {
        return match session.write_line(&line).await {
            Ok(()) => StatusCode::ACCEPTED.into_response(),
            Err(()) => session_not_found(None),
        };
    };
    let Some((rx, seq)) = session.wait_for(&id, msg.progress_token.as_deref(), accepts.sse) else {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            Some(&id),
            INVALID_REQUEST,
            "a request with this id is still open in this session",
        );
    };
    let mut call = Call {
        session: Arc::clone(&session),
        id,
        seq,
        rx,
        finished: false,
        pool,
        _busy: busy,
    };
    // A failed write means the relay is gone: the receiver then closes.
    let _ = session.write_line(&line).await;
    let mut headers = HeaderMap::new();
    if let Some(sid) = new_session
        .as_deref()
        .and_then(|s| HeaderValue::from_str(s).ok())
    {
        headers.insert(SESSION_HEADER, sid);
    }
    if prime && accepts.sse && call.pool.is_none() {
        return resumable(call, None, headers, true);
    }
    match call.rx.recv().await {
        Some(Routed::Final(line)) if accepts.json => {
            call.finished = true;
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            (headers, line).into_response()
        }
        Some(first) if call.pool.is_none() => resumable(call, Some(first), headers, false),
        Some(first) => stream(call, first, headers),
        None => {
            call.finished = true;
            let why = session.end_reason();
            // No session id for a session that never came up.
            rpc_error(
                StatusCode::BAD_GATEWAY,
                Some(&call.id),
                CONNECTION_CLOSED,
                &why,
            )
        }
    }
}

/// One POSTed request in flight. Dropped unfinished (the client went away): its waiter is
/// forgotten; a stateless one is cancelled upstream and its worker ended.
struct Call {
    session: Arc<Session>,
    id: Box<RawValue>,
    seq: u64,
    rx: mpsc::UnboundedReceiver<Routed>,
    finished: bool,
    pool: Option<Arc<Registry>>,
    _busy: Busy,
}

impl Drop for Call {
    fn drop(&mut self) {
        if self.finished {
            if let Some(pool) = self.pool.take() {
                pool.checkin(Arc::clone(&self.session));
            }
            return;
        }
        self.session.forget(&self.id, self.seq);
        if self.pool.is_some() {
            // 2026-07-28: closing the response stream cancels the request.
            let session = Arc::clone(&self.session);
            let line =
                envelope::cancelled_line(&self.id, "the HTTP client closed the response stream");
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let _ = session.write_line(&line).await;
                    session.stop("its request was cancelled (the client closed the stream)");
                });
            }
        }
    }
}

/// A session request's SSE stream, resumable ([`super::replay`]): a task moves what comes for
/// the request into the stream's buffer until its response (so a client that drops the
/// connection can get the rest with `Last-Event-ID`), and the response body reads the buffer.
/// `first`: what came for the request already. `prime`: the stream opens with a priming event
/// ([`priming_event`]), so that a client that drops it before the first message can resume.
fn resumable(
    mut call: Call,
    first: Option<Routed>,
    mut headers: HeaderMap,
    prime: bool,
) -> Response {
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    let replay = Replay::new(call.seq);
    call.session.keep_stream(&replay);
    let pump = Arc::clone(&replay);
    tokio::spawn(async move {
        let mut next = first;
        loop {
            match next.take() {
                Some(Routed::Message(line)) => pump.push(line),
                Some(Routed::Final(line)) => {
                    pump.push(line);
                    break;
                }
                None => match call.rx.recv().await {
                    Some(routed) => next = Some(routed),
                    None => {
                        let why = call.session.end_reason();
                        let body = error_body(Some(&call.id), CONNECTION_CLOSED, &why, None);
                        pump.push(body.into_bytes());
                        break;
                    }
                },
            }
        }
        call.finished = true;
        drop(call);
        pump.finish();
    });
    // The session is kept busy by the pump's `Call` until the response.
    let stream = Sse::new(replay.events(0, ())).into_response();
    if !prime {
        return (headers, stream).into_response();
    }
    // axum's `Event` cannot carry an empty `data` field: the priming event goes before the
    // stream's own bytes (same headers).
    let (parts, body) = stream.into_parts();
    let priming = futures_util::stream::once(std::future::ready(Ok::<_, axum::Error>(
        priming_event(replay.stream()),
    )));
    let primed = futures_util::StreamExt::chain(priming, body.into_data_stream());
    (
        headers,
        Response::from_parts(parts, axum::body::Body::from_stream(primed)),
    )
        .into_response()
}

/// The priming event of POST stream `stream` (MCP 2025-11-25, Streamable HTTP, "Sending
/// Messages to the Server": the server SHOULD immediately send an SSE event consisting of an
/// event ID and an empty data field, to prime the client to reconnect): the id `<stream>-0`
/// (resuming from it replays the whole stream), the `retry` to wait before resuming
/// ([`PRIMING_RETRY`], in milliseconds), and an empty `data` field.
fn priming_event(stream: u64) -> Bytes {
    Bytes::from(format!(
        "id: {stream}-0\nretry: {}\ndata:\n\n",
        PRIMING_RETRY.as_millis()
    ))
}

/// The request's SSE stream: server messages for it, then its response, then the end.
fn stream(call: Call, first: Routed, mut headers: HeaderMap) -> Response {
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    let events =
        futures_util::stream::unfold((Some(call), Some(first)), |(call, first)| async move {
            let mut call = call?;
            let next = match first {
                Some(routed) => Some(routed),
                None => call.rx.recv().await,
            };
            let (data, done) = match next {
                Some(Routed::Message(line)) => (line, false),
                Some(Routed::Final(line)) => (line, true),
                None => {
                    let why = call.session.end_reason();
                    let body = error_body(Some(&call.id), CONNECTION_CLOSED, &why, None);
                    (body.into_bytes(), true)
                }
            };
            let event = Ok::<_, std::convert::Infallible>(event(data));
            if done {
                call.finished = true;
                drop(call);
                Some((event, (None, None)))
            } else {
                Some((event, (Some(call), None)))
            }
        });
    (headers, Sse::new(events)).into_response()
}

fn event(line: Vec<u8>) -> Event {
    let text = String::from_utf8(line)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Event::default().event("message").data(text)
}

/// GET: the session's stream of server messages not bound for a POST.
async fn open_stream(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let Some(session) = session_of(&app, &headers) else {
        return no_session(&headers);
    };
    let Some(session) = session else {
        return session_not_found(None);
    };
    if !Accepts::of(&headers).sse {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            INVALID_REQUEST,
            "Accept must list text/event-stream",
        );
    }
    let last_event = match headers.get("last-event-id").map(|v| v.to_str()) {
        None => None,
        Some(Ok(id)) => match parse_event_id(id) {
            Some(at) => Some(at),
            None => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    None,
                    INVALID_REQUEST,
                    "Last-Event-ID is not an event id of this server",
                );
            }
        },
        Some(Err(_)) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                INVALID_REQUEST,
                "Last-Event-ID is not visible ASCII",
            );
        }
    };
    let (replay, after) = match last_event {
        Some((stream, n)) => match session.find_stream(stream) {
            Some(replay) => (replay, n),
            None => {
                return rpc_error(
                    StatusCode::NOT_FOUND,
                    None,
                    INVALID_REQUEST,
                    "the stream of this Last-Event-ID is no longer kept",
                );
            }
        },
        None => {
            let replay = session.get_stream();
            if replay.has_reader() {
                return rpc_error(
                    StatusCode::CONFLICT,
                    None,
                    INVALID_REQUEST,
                    "this session's GET stream is already open",
                );
            }
            let after = replay.delivered();
            (replay, after)
        }
    };
    let busy = session.busy();
    (
        [("x-accel-buffering", HeaderValue::from_static("no"))],
        Sse::new(replay.events(after, busy)).keep_alive(KeepAlive::default()),
    )
        .into_response()
}

/// DELETE: ends the session (its server is stopped).
async fn end_session(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let Some(session) = session_of(&app, &headers) else {
        return no_session(&headers);
    };
    let Some(session) = session else {
        return session_not_found(None);
    };
    session.stop("deleted by the client");
    StatusCode::NO_CONTENT.into_response()
}

/// `None`: no `Mcp-Session-Id` header; `Some(None)`: an unknown or ended session.
fn session_of(app: &App, headers: &HeaderMap) -> Option<Option<Arc<Session>>> {
    let id = headers
        .get(SESSION_HEADER)?
        .to_str()
        .ok()
        .unwrap_or_default();
    Some(app.registry.get(id))
}

/// GET or DELETE without a session: 405 for a stateless (2026-07-28) client (the revision has
/// neither), else 400.
fn no_session(headers: &HeaderMap) -> Response {
    let version = headers.get(VERSION_HEADER).and_then(|v| v.to_str().ok());
    if version.is_some_and(|v| MODERN_VERSIONS.contains(&v)) {
        return (
            [(header::ALLOW, HeaderValue::from_static("POST"))],
            StatusCode::METHOD_NOT_ALLOWED,
        )
            .into_response();
    }
    rpc_error(
        StatusCode::BAD_REQUEST,
        None,
        INVALID_REQUEST,
        "missing Mcp-Session-Id header",
    )
}

fn session_not_found(id: Option<&RawValue>) -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        id,
        INVALID_REQUEST,
        "session not found: it ended or expired; initialize a new one",
    )
}

pub(super) fn unsupported_version(id: Option<&RawValue>, version: &str) -> Response {
    let supported: Vec<&str> = HANDSHAKE_VERSIONS
        .iter()
        .chain(MODERN_VERSIONS)
        .copied()
        .collect();
    let body = error_body(
        id,
        UNSUPPORTED_VERSION,
        &format!("unsupported MCP-Protocol-Version {version:?}"),
        Some(serde_json::json!({ "supported": supported, "requested": version })),
    );
    json_response(StatusCode::BAD_REQUEST, body)
}

pub(super) fn rpc_error(
    status: StatusCode,
    id: Option<&RawValue>,
    code: i64,
    message: &str,
) -> Response {
    json_response(status, error_body(id, code, message, None))
}

fn json_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// `90s`, `30m`, `2h` for logs.
pub(crate) fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s == 0 {
        format!("{} ms", d.as_millis())
    } else if s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}
