//! `mcp-budget serve`: a Streamable HTTP endpoint for MCP clients, shaping exactly like the
//! stdio proxy.
//!
//! Transport rules: MCP specification 2025-11-25, "Transports", section "Streamable HTTP", and
//! 2026-07-28, "Streamable HTTP" (stateless requests).
//!
//! # Sessions
//!
//! Each client session (an `initialize` POST without an `Mcp-Session-Id` header) gets its own
//! upstream server process and its own [`Relay`](crate::relay::Relay), which talks to the
//! session over in-memory pipes: the relay is the stdio proxy's, unchanged, so a session is
//! shaped exactly as `mcp-budget proxy` shapes. The session id (128 random bits, 32 lowercase
//! hex digits) comes back in `Mcp-Session-Id` and is required on every later request: 400
//! without it, 404 when it is unknown or the session ended. DELETE ends a session (the
//! server's stdin is closed; it is killed after the relay's shutdown grace).
//!
//! Each POSTed message is written as one line into the session's relay (newlines between JSON
//! tokens become spaces; nothing else changes). Lines coming out of the relay are routed
//! ([`session`]): a response goes to the POST that carried its request, as `application/json`
//! when it is the first thing for that POST, else as the last event of an SSE stream (a POST
//! whose `MCP-Protocol-Version` is 2025-11-25 or later and that accepts SSE gets its SSE
//! stream at once, opened by a priming event: see [`replay`]); a server
//! request or notification goes to the POST whose request its `progressToken` names, else to
//! the newest open POST, else to the session's GET stream, else it waits (bounded) for a GET
//! stream. Each message goes to exactly one stream. A session's streams are resumable
//! ([`replay`]): each event has an id `<stream>-<n>`, and a `GET` with `Last-Event-ID` replays
//! the rest of that stream (a POST's answer too, up to its response). A client that
//! disconnects does not cancel its request (2025-11-25); its answer is kept for resumption
//! (from the priming event's id `<stream>-0` when nothing else had come yet).
//!
//! # Stateless requests (2026-07-28)
//!
//! A POST without `Mcp-Session-Id` whose `MCP-Protocol-Version` is a stateless version
//! (2026-07-28) is served by a pool of upstream processes per principal, each carrying one
//! request at a time (so the ids of different clients never meet in one process), reused
//! while idle and expired like sessions. Its headers are checked against the body (400 with
//! `-32020` HeaderMismatch, `-32022` for an unsupported version); closing the response stream
//! cancels the request (a `notifications/cancelled` goes upstream and that process is ended).
//! Client notifications are accepted (202) and dropped: the revision defines none over HTTP.
//! `server/discover` is such a request: a server that does not know it answers with an error,
//! and a client in "auto" mode then falls back to `initialize` (a session).
//!
//! # Principals
//!
//! Response ids and cursors belong to a [`Principal`]: the bearer token when `--auth-token` is
//! set (all sessions of the token share one shaper, so a cursor made in one works in another),
//! else the session (another session's cursor gets `cursor_invalid`, reason `unknown`); the
//! stateless requests of a server without a token share the [`Principal::Local`] one.
//!
//! # Security (the spec's "Security Warning")
//!
//! Binds 127.0.0.1 by default. A request whose `Origin` is present and neither a localhost
//! origin nor listed in [`ServeOptions::allowed_origins`] gets 403 (DNS rebinding). With
//! [`ServeOptions::auth_token`], every request needs `Authorization: Bearer <token>` (401 with
//! `WWW-Authenticate: Bearer` otherwise; compared in constant time). Bodies past
//! [`ServeOptions::max_body_bytes`] get 413. Sessions idle for [`ServeOptions::session_idle`]
//! end. At most [`ServeOptions::max_sessions`] upstream processes live at once; past that an
//! `initialize` gets 503.

use crate::config::Settings;
use crate::relay::{RelayOptions, Upstream};
use std::future::Future;
use std::sync::Arc;

mod envelope;
mod http;
mod options;
mod principal;
mod registry;
mod replay;
mod respond;
mod security;
mod session;
mod stateless;

pub use options::{
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_SESSIONS, DEFAULT_PATH, DEFAULT_SESSION_IDLE, ServeError,
    ServeOptions,
};
pub use principal::Principal;

/// The Streamable HTTP server: one upstream command, the relay's options and the shaping
/// settings every principal's shaper is built from.
#[derive(Debug)]
pub struct Server {
    state: Arc<http::App>,
}

impl Server {
    /// A server that starts `upstream` once per session, relays with `relay`, and shapes with
    /// a [`Boundary`](crate::boundary::Boundary) built from `settings` per principal.
    ///
    /// # Errors
    /// [`ServeError::Config`] when `options.auth_token` is set and the token principal's
    /// shaper cannot be built (a bad config file, an unopenable log): found at startup rather
    /// than at the first request.
    pub fn new(
        options: ServeOptions,
        upstream: Upstream,
        relay: RelayOptions,
        settings: Settings,
    ) -> Result<Server, ServeError> {
        let state = http::App::new(options, upstream, relay, settings)?;
        Ok(Server {
            state: Arc::new(state),
        })
    }

    /// Serves on `listener` until `shutdown` completes, then ends every session (their
    /// servers get the relay's shutdown grace) and returns.
    ///
    /// # Errors
    /// [`ServeError::Http`] when serving fails.
    pub async fn run<F>(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: F,
    ) -> Result<(), ServeError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        use axum::serve::ListenerExt as _;
        let router = http::router(Arc::clone(&self.state));
        // SSE events are small writes each: without TCP_NODELAY, Nagle holds the second one
        // until the client's delayed ACK (tens of ms).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await;
        self.state.shut_down().await;
        served.map_err(ServeError::Http)
    }

    /// Writes pending telemetry and removes cache spill files of every shaper still alive
    /// (call after [`Server::run`]).
    pub fn finish(&self) {
        self.state.finish();
    }
}

/// Completes on SIGTERM, SIGINT or SIGHUP (Unix), or Ctrl-C elsewhere: the end of `serve`.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::hangup()),
        ) {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
                _ = hup.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
