//! Answering a POSTed message: it is written into a session's (or a stateless worker's)
//! relay, and what comes back for a request becomes the HTTP response (`application/json`, a
//! plain SSE stream, or a resumable one opened by a priming event, see [`super::replay`]);
//! and the JSON-RPC error responses the handlers send. Used by the handlers of `http` and by
//! `stateless`; it imports neither (issue 35).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::envelope::{
    self, CONNECTION_CLOSED, HANDSHAKE_VERSIONS, INVALID_REQUEST, Incoming, Kind, MODERN_VERSIONS,
    UNSUPPORTED_VERSION, error_body,
};
use super::registry::{Registry, StartError};
use super::replay::Replay;
use super::session::{Busy, Routed, Session};

/// The header that carries a session's id: `Mcp-Session-Id`.
pub(super) const SESSION_HEADER: &str = "mcp-session-id";

/// The `retry` of a priming event: how long a client that lost the stream waits before it
/// resumes with `Last-Event-ID`: 1 s.
const PRIMING_RETRY: Duration = Duration::from_secs(1);

/// What the client's `Accept` allows.
#[derive(Debug, Clone, Copy)]
pub(super) struct Accepts {
    pub(super) json: bool,
    pub(super) sse: bool,
}

impl Accepts {
    /// An absent `Accept` accepts both.
    pub(super) fn of(headers: &HeaderMap) -> Accepts {
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

pub(super) fn session_not_found(id: Option<&RawValue>) -> Response {
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
