//! The HTTP handlers of the MCP endpoint: POST (messages), GET (the session's stream), DELETE
//! (end a session), and the checks in front of them. A POST's answer is built by
//! [`super::respond`]; a stateless one's by [`super::stateless`].

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::envelope::{
    CONNECTION_CLOSED, HANDSHAKE_VERSIONS, INVALID_REQUEST, Incoming, MODERN_VERSIONS, PARSE_ERROR,
    Refused,
};
use super::options::{ServeError, ServeOptions};
use super::principal::{Principal, Shapers};
use super::registry::Registry;
use super::replay::parse_event_id;
use super::respond::{
    Accepts, SESSION_HEADER, deliver, rpc_error, session_not_found, start_failed,
    unsupported_version,
};
use super::security::{Denied, Guard};
use super::session::Session;
use super::stateless;
use crate::config::Settings;
use crate::relay::{RelayOptions, Upstream};

const VERSION_HEADER: &str = "mcp-protocol-version";

/// The first protocol version whose POST streams open with a priming event: 2025-11-25, the
/// revision that asks for it. Earlier clients may take an event with empty data for a
/// malformed message (the TypeScript SDK primes from this version on, for the same reason).
const PRIMING_SINCE: &str = "2025-11-25";

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
            stateless::post(
                &app.registry,
                &app.stateless_principal(),
                &headers,
                msg,
                &body,
                accepts,
            )
            .await
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
