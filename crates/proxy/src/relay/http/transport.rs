//! The transport's state: the HTTP client, what it learned from the server (session,
//! version, the client's handshake), the `x-mcp-header` parameters of each tool, the sign-in and
//! the GET stream's listener. Its steps are in the sibling modules (`exchange`, `events`,
//! `renew`); the parent runs them.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, MutexGuard, PoisonError};

use http::header::HeaderValue;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::super::lines::Frame;
use super::{client, oauth, params};

/// What the transport learned from the server.
#[derive(Debug, Default)]
pub(super) struct State {
    /// `Mcp-Session-Id` from the answer to `initialize`.
    pub(super) session: Option<HeaderValue>,
    /// The protocol version of `initialize`'s result.
    pub(super) version: Option<String>,
    /// The client's `initialize` and `notifications/initialized`, as sent: replayed for a new
    /// session when the server forgot this one ([`renew`]).
    pub(super) handshake: Option<(bytes::Bytes, Option<bytes::Bytes>)>,
    /// The session expired and no new one could be started: every request but a new
    /// `initialize` is answered with an error saying so.
    pub(super) expired: bool,
}

/// The transport: POSTs the client's messages and hands what comes back to the relay.
pub(crate) struct Transport {
    pub(super) client: client::Client,
    /// The URL as messages show it.
    pub(super) shown: String,
    /// Whether the user gave an `Authorization` header (named in 401/403 messages).
    pub(super) has_authorization: bool,
    pub(super) state: Mutex<State>,
    pub(super) frames: mpsc::Sender<Frame>,
    pub(super) max_line_bytes: usize,
    /// The `x-mcp-header` parameters of each tool, from `tools/list` results ([`params`]).
    pub(super) params: Mutex<HashMap<String, Vec<params::ParamHeader>>>,
    /// Held while a new session is started ([`renew`]): one at a time.
    pub(super) renewing: tokio::sync::Mutex<()>,
    /// The task listening on the session's GET stream: one per transport, replaced (the old
    /// one aborted) when a renewed session opens its own.
    pub(super) listener: Mutex<Option<AbortHandle>>,
    /// A GET stream was open once (a `405` after that is worth a warning).
    pub(super) listened: AtomicBool,
    /// The warning of a `405` to a reopened GET stream was written (it is written once).
    pub(super) warned_405: AtomicBool,
    /// The OAuth sign-in, unless the user set `Authorization` ([`oauth`]).
    pub(super) auth: Option<oauth::Authenticator>,
}

impl Transport {
    /// The most bytes one SSE event may take: a message of `max_line_bytes` and 64 KiB for
    /// its field names, line ends and other fields.
    pub(super) fn max_event_bytes(&self) -> usize {
        self.max_line_bytes.saturating_add(64 * 1024)
    }

    pub(super) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
