//! Server-Sent Events: the stream that answers a POST (followed until its response, resumed
//! with `Last-Event-ID` when it drops), and the GET stream of the server's own messages.
//!
//! Source: MCP 2025-06-18 and 2025-11-25, Streamable HTTP, "Listening for Messages from the
//! Server" and "Resumability and Redelivery". Events are decoded by `sse-stream`; an event
//! whose type is neither absent nor `message`, or whose data is empty (a 2025-11-25 priming
//! event), carries no message.

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::{Stream, StreamExt as _};
use http::StatusCode;
use http::header::{ACCEPT, HeaderValue};
use http_body_util::BodyDataStream;
use sse_stream::SseByteStream;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::super::log;
use super::bounded::{EventBound, TooLong};
use super::client::{RequestBuilder, Response};
use super::exchange::{self, Handed, PROTOCOL_VERSION, Refusal, SESSION_ID, is_event_stream};
use super::message::Outgoing;
use super::transport::Transport;

/// How long to wait before resuming a stream when the server did not say (`retry`): 1 s.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The longest wait the server's `retry` can ask for: 30 s.
const MAX_RETRY: Duration = Duration::from_secs(30);
/// How many times in a row a stream is resumed without receiving anything: 3.
const MAX_RESUMES: u32 = 3;
/// How long the rest of a stream is read after its response (for the connection's reuse):
/// 100 ms.
const LINGER: Duration = Duration::from_millis(100);
/// How many times in a row the GET stream is reopened after failing: 5.
const MAX_LISTEN_FAILURES: u32 = 5;

/// How a stream ended.
enum End {
    /// The response of the exchange arrived.
    Answered,
    /// The stream closed (or broke, `why`) before that.
    Closed { why: Option<String> },
    /// The server sent what must not be resumed (an event past the bound): `why`.
    Broken { why: String },
    /// The server sent, for the exchange's request, what is no JSON-RPC message for the client
    /// (see [`Transport::hand`]).
    Refused(Refusal),
}

/// Where a stream is, for resuming it.
struct Cursor {
    /// The id of the last event received.
    last_id: Option<String>,
    /// The wait before reconnecting.
    retry: Duration,
    /// Whether the last stream delivered any event.
    progressed: bool,
}

impl Cursor {
    fn new() -> Cursor {
        Cursor {
            last_id: None,
            retry: DEFAULT_RETRY,
            progressed: false,
        }
    }
}

/// How long the first messages wait for the GET stream to open: 2 s.
pub(super) const LISTEN_WAIT: Duration = Duration::from_secs(2);

impl Transport {
    /// The slot of the GET stream's listener.
    pub(super) fn listener(&self) -> MutexGuard<'_, Option<AbortHandle>> {
        self.listener.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether no GET stream is listened on (none was opened, or its listener ended).
    pub(super) fn no_listener(&self) -> bool {
        self.listener()
            .as_ref()
            .is_none_or(AbortHandle::is_finished)
    }

    /// Starts listening on the current session's GET stream, in place of any listener before
    /// (aborted): one GET stream per session, as servers that allow one need. The receiver is
    /// told when the first attempt has its answer.
    pub(super) fn open_listener(self: &Arc<Self>) -> oneshot::Receiver<()> {
        let (ready, opened) = oneshot::channel();
        let task = tokio::spawn(Arc::clone(self).listen(ready));
        if let Some(old) = self.listener().replace(task.abort_handle()) {
            old.abort();
        }
        opened
    }

    /// Follows the SSE answer of `message` until its response, resuming it when it drops and
    /// the server gave event ids; answers the request with an error when it cannot. Returns,
    /// without answering, what the server sent for the request that is no JSON-RPC message for
    /// the client (the caller answers it, or renews the session).
    pub(super) async fn follow(&self, response: Response, message: &Outgoing) -> Option<Refusal> {
        let mut cursor = Cursor::new();
        let mut response = response;
        let mut resumes = 0;
        loop {
            let why = match self.drain(response, &mut cursor, Some(message)).await {
                End::Answered => return None,
                End::Refused(refusal) => return Some(refusal),
                End::Broken { why } => {
                    let text = format!(
                        "the upstream server at {} broke the protocol: {why}",
                        self.shown
                    );
                    self.fail_with(message, text).await;
                    return None;
                }
                End::Closed { why } => why.map_or_else(String::new, |w| format!(" ({w})")),
            };
            // A notification's stream: nothing to answer.
            message.id.as_ref()?;
            let Some(last_id) = cursor.last_id.clone() else {
                let text = format!(
                    "the upstream server at {} closed the event stream before answering{why}; it gave no event id to resume from",
                    self.shown
                );
                self.fail_with(message, text).await;
                return None;
            };
            resumes = if cursor.progressed { 1 } else { resumes + 1 };
            if resumes > MAX_RESUMES {
                let text = format!(
                    "the upstream server at {} closed the event stream before answering{why}, and resuming it {MAX_RESUMES} times brought nothing",
                    self.shown
                );
                self.fail_with(message, text).await;
                return None;
            }
            log::debug(format_args!(
                "resuming an upstream event stream after event {last_id:?} in {:?}{why}",
                cursor.retry
            ));
            tokio::time::sleep(cursor.retry).await;
            response = match self.get(Some(&last_id)).send().await {
                Ok(r) if r.status().is_success() && is_event_stream(&r) => r,
                Ok(r) => {
                    let text = format!(
                        "the upstream server at {} closed the event stream before answering{why}, and refused to resume it (HTTP {})",
                        self.shown,
                        r.status()
                    );
                    self.fail_with(message, text).await;
                    return None;
                }
                Err(e) => {
                    self.fail(message, exchange::Failure::Send(e)).await;
                    return None;
                }
            };
        }
    }

    /// Reads one SSE stream, handing each message to the relay, until it ends or (with an
    /// `exchange`) its response arrived.
    async fn drain(
        &self,
        response: Response,
        cursor: &mut Cursor,
        exchange: Option<&Outgoing>,
    ) -> End {
        let mut events = sse_events(response, self.max_event_bytes());
        cursor.progressed = false;
        let mut answered = false;
        loop {
            let next = if answered {
                // The server ends the stream right after the response: reading its end lets
                // the connection go back to the pool (dropping it unread closes it).
                match tokio::time::timeout(LINGER, events.next()).await {
                    Ok(next) => next,
                    Err(_) => return End::Answered,
                }
            } else {
                events.next().await
            };
            let Some(event) = next else {
                break;
            };
            let event = match event {
                Ok(event) => event,
                Err(_) if answered => return End::Answered,
                Err(e) if is_too_long(&e) => {
                    return End::Broken {
                        why: format!("{}", DisplayChain(&e)),
                    };
                }
                Err(e) => {
                    return End::Closed {
                        why: Some(e.to_string()),
                    };
                }
            };
            if let Some(id) = event.id {
                cursor.last_id = Some(id);
                cursor.progressed = true;
            }
            if let Some(retry) = event.retry {
                cursor.retry = Duration::from_millis(retry).min(MAX_RETRY);
            }
            if !matches!(event.event.as_deref(), None | Some("message")) {
                continue;
            }
            let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
                continue;
            };
            cursor.progressed = true;
            match self.hand(data.into_bytes(), exchange).await {
                Handed::Relayed { answers } => answered |= answers,
                Handed::Refused(refusal)
                    if !answered && exchange.is_some_and(|m| m.id.is_some()) =>
                {
                    return End::Refused(refusal);
                }
                Handed::Refused(_) | Handed::Blank => {}
            }
        }
        if answered {
            End::Answered
        } else {
            End::Closed { why: None }
        }
    }

    /// A GET of the MCP endpoint for an SSE stream, resuming after `last_id` when given.
    fn get(&self, last_id: Option<&str>) -> RequestBuilder<'_> {
        let mut request = self.client.get().header(ACCEPT, "text/event-stream");
        let (session, version) = {
            let state = self.state();
            (state.session.clone(), state.version.clone())
        };
        if let Some(session) = session {
            request = request.header(SESSION_ID, session);
        }
        if let Some(version) = version {
            request = request.header(PROTOCOL_VERSION, version);
        }
        if let Some(id) = last_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            request = request.header("last-event-id", id);
        }
        request
    }

    /// The GET stream of the server's own messages (requests such as `roots/list`,
    /// notifications): opened once `initialize` is answered, reopened (with `Last-Event-ID`)
    /// when it drops, until it fails [`MAX_LISTEN_FAILURES`] times in a row, the server says
    /// it has none (`405`: worth a warning, once, when a GET stream was open before) or forgot
    /// the session, or the session is not the one it was opened for (a renewed session has its
    /// own listener: one GET stream per session). `ready` is told when the first attempt has
    /// its answer. Runs until aborted.
    pub(super) async fn listen(self: Arc<Self>, ready: oneshot::Sender<()>) {
        let session = self.state().session.clone();
        let mut cursor = Cursor::new();
        let mut failures = 0u32;
        let mut ready = Some(ready);
        loop {
            if self.state().session != session {
                log::debug(format_args!(
                    "the upstream session changed: its old GET stream is not reopened"
                ));
                return;
            }
            let last_id = cursor.last_id.clone();
            let answer = self.get(last_id.as_deref()).send().await;
            if let Some(ready) = ready.take() {
                let _ = ready.send(());
            }
            match answer {
                Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    if self.listened.load(Ordering::Relaxed)
                        && !self.warned_405.swap(true, Ordering::Relaxed)
                    {
                        log::warn(format_args!(
                            "the upstream server at {} refused to reopen its GET stream (HTTP \
                             405): its own messages outside requests (notifications, \
                             roots/list) no longer arrive",
                            self.shown
                        ));
                    } else {
                        log::debug(format_args!(
                            "the upstream server offers no GET stream (HTTP 405)"
                        ));
                    }
                    return;
                }
                Ok(r) if r.status().is_success() && is_event_stream(&r) => {
                    log::debug(format_args!("the upstream server's GET stream is open"));
                    self.listened.store(true, Ordering::Relaxed);
                    let _ = self.drain(r, &mut cursor, None).await;
                    log::debug(format_args!("the upstream server's GET stream ended"));
                    failures = if cursor.progressed { 0 } else { failures + 1 };
                }
                Ok(r) => {
                    log::debug(format_args!(
                        "the upstream server's GET stream: HTTP {}",
                        r.status()
                    ));
                    if matches!(r.status(), StatusCode::NOT_FOUND | StatusCode::GONE) {
                        return;
                    }
                    failures += 1;
                }
                Err(e) => {
                    log::debug(format_args!(
                        "the upstream server's GET stream: {}",
                        self.describe_error(&e)
                    ));
                    failures += 1;
                }
            }
            if failures >= MAX_LISTEN_FAILURES {
                log::warn(format_args!(
                    "gave up listening for the upstream server's own messages (GET stream) after {failures} failures"
                ));
                return;
            }
            let backoff = cursor.retry * 2u32.pow(failures.min(5));
            tokio::time::sleep(backoff.min(MAX_RETRY)).await;
        }
    }
}

/// The SSE events of `response`, each bounded to `max_event_bytes` ([`EventBound`]; past it
/// the stream ends with an error that [`is_too_long`]).
pub(super) fn sse_events(
    response: Response,
    max_event_bytes: usize,
) -> Pin<Box<dyn Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send>> {
    let mut bound = EventBound::new(max_event_bytes);
    let bytes = BodyDataStream::new(response.into_body()).map(move |chunk| {
        let chunk = chunk.map_err(StreamError::Body)?;
        bound.feed(&chunk).map_err(StreamError::TooLong)?;
        Ok::<_, StreamError>(chunk)
    });
    Box::pin(SseByteStream::new(bytes))
}

/// Why the bounded byte stream of an SSE body failed.
#[derive(Debug, thiserror::Error)]
enum StreamError {
    /// Reading the body failed.
    #[error(transparent)]
    Body(hyper::Error),
    /// An event went past the bound.
    #[error(transparent)]
    TooLong(TooLong),
}

/// Whether the SSE decoder's error is [`StreamError::TooLong`].
pub(super) fn is_too_long(error: &sse_stream::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(StreamError::TooLong(_)) = e.downcast_ref::<StreamError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// An error and its causes, `: `-separated, each said once.
struct DisplayChain<'e>(&'e (dyn std::error::Error + 'static));

impl std::fmt::Display for DisplayChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut said: Vec<String> = Vec::new();
        let mut source = Some(self.0);
        while let Some(e) = source {
            let text = e.to_string();
            if !said.iter().any(|s| s.contains(&text)) {
                said.push(text);
            }
            source = e.source();
        }
        f.write_str(&said.join(": "))
    }
}
