//! One session: an upstream process behind its own relay, over in-memory pipes, and the routing
//! of the relay's output lines to the HTTP requests and streams waiting for them.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};
use tokio::sync::{mpsc, oneshot};

use super::principal::Principal;
use super::replay::{GET_STREAM, KEEP_STREAMS, Replay};
use crate::boundary::Boundary;
use crate::relay::{Relay, RelayOptions, Shaper, StopCause, Upstream, id_key};

/// Bytes buffered in each in-memory pipe between a session and its relay.
const PIPE_BYTES: usize = 256 * 1024;

/// What the router hands to a waiting POST.
#[derive(Debug)]
pub(crate) enum Routed {
    /// A server request or notification (one JSON-RPC message).
    Message(Vec<u8>),
    /// The response to the POST's request.
    Final(Vec<u8>),
}

/// A POST waiting for its response.
struct Waiter {
    tx: mpsc::UnboundedSender<Routed>,
    /// `id_key` of its `_meta.progressToken`.
    progress: Option<Vec<u8>>,
    /// Its client accepts an SSE stream (server messages may go to it).
    streams: bool,
    /// Order of arrival (the newest open POST takes unattributed server messages).
    seq: u64,
}

struct Routes {
    pending: HashMap<Vec<u8>, Waiter>,
    /// The GET stream's events (kept until a GET reads them, and for its resumption).
    get: Arc<Replay>,
    /// The SSE answers of the last POSTs, for their resumption.
    streams: VecDeque<Arc<Replay>>,
    seq: u64,
}

impl Default for Routes {
    fn default() -> Routes {
        Routes {
            pending: HashMap::new(),
            get: Replay::new(GET_STREAM),
            streams: VecDeque::new(),
            seq: 0,
        }
    }
}

/// One session (or one stateless worker, which has no id).
pub(crate) struct Session {
    /// The session id; `None` for a stateless worker.
    pub(crate) id: Option<String>,
    pub(crate) principal: Principal,
    input: tokio::sync::Mutex<Option<DuplexStream>>,
    routes: Mutex<Routes>,
    last_used: Mutex<Instant>,
    busy: AtomicUsize,
    ended: AtomicBool,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    /// Why it ended or is ending (set by whoever stops it, else from the relay's exit).
    reason: Mutex<Option<String>>,
    started: Instant,
    requests: AtomicUsize,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("label", &self.label())
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Session {
    /// Starts the upstream server and its relay for a new session. `on_end` runs once when the
    /// relay is done (the server exited or was killed), with the session and why it ended.
    pub(crate) fn start(
        id: Option<String>,
        principal: Principal,
        boundary: Arc<Boundary>,
        upstream: Upstream,
        options: RelayOptions,
        on_end: impl FnOnce(&Arc<Session>, String) + Send + 'static,
    ) -> Arc<Session> {
        let (ours_in, relay_in) = tokio::io::duplex(PIPE_BYTES);
        let (relay_out, ours_out) = tokio::io::duplex(PIPE_BYTES);
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let session = Arc::new(Session {
            id,
            principal,
            input: tokio::sync::Mutex::new(Some(ours_in)),
            routes: Mutex::new(Routes::default()),
            last_used: Mutex::new(Instant::now()),
            busy: AtomicUsize::new(0),
            ended: AtomicBool::new(false),
            stop: Mutex::new(Some(stop_tx)),
            reason: Mutex::new(None),
            started: Instant::now(),
            requests: AtomicUsize::new(0),
        });
        let driver = Arc::clone(&session);
        tokio::spawn(async move {
            let relay = Relay::new(options).with_shaper(boundary as Arc<dyn Shaper>);
            let stop = async {
                let _ = stop_rx.await;
            };
            let run = relay.run_until(&upstream, relay_in, relay_out, stop);
            let (exit, ()) = tokio::join!(run, driver.route_output(ours_out));
            let why = match exit {
                Ok(exit) => match exit.cause {
                    StopCause::UpstreamExited | StopCause::UpstreamOutputClosed => {
                        format!("the upstream server exited (code {})", exit.code)
                    }
                    _ => "ended".to_owned(),
                },
                Err(e) => format!("cannot start the upstream server: {e}"),
            };
            let why = lock(&driver.reason).get_or_insert(why).clone();
            driver.end();
            on_end(&driver, why);
        });
        session
    }

    /// A short, safe name for logs: the id's first 8 hex digits, or `stateless`.
    pub(crate) fn label(&self) -> String {
        match &self.id {
            Some(id) => format!("session {}", &id[..id.len().min(8)]),
            None => "stateless worker".to_owned(),
        }
    }

    /// How long it has lived.
    pub(crate) fn age(&self) -> Duration {
        self.started.elapsed()
    }

    /// Requests POSTed to it.
    pub(crate) fn request_count(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }

    /// Its relay is done.
    pub(crate) fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// It was told to stop ([`Session::stop`]): its relay may still be finishing, but no new
    /// request is for it (a client's DELETE answered `204` makes the id unknown at once).
    pub(crate) fn is_stopping(&self) -> bool {
        lock(&self.stop).is_none()
    }

    /// Why it ended (or, before that, why it is being stopped).
    pub(crate) fn end_reason(&self) -> String {
        lock(&self.reason)
            .clone()
            .unwrap_or_else(|| "the session ended".to_owned())
    }

    /// Idle: no request or stream open, and none for `limit`.
    pub(crate) fn idle_past(&self, limit: Duration) -> bool {
        self.busy.load(Ordering::Acquire) == 0 && lock(&self.last_used).elapsed() >= limit
    }

    /// Ends it: the relay closes the server's stdin, then kills it after the shutdown grace.
    /// The first reason given is the one logged.
    pub(crate) fn stop(&self, reason: &str) {
        lock(&self.reason).get_or_insert_with(|| reason.to_owned());
        if let Some(tx) = lock(&self.stop).take() {
            let _ = tx.send(());
        }
    }

    /// Marks a request or stream open until the guard drops (no idle expiry meanwhile).
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        *lock(&self.last_used) = Instant::now();
        Busy(Arc::clone(self))
    }

    /// Writes one message line (ending in `\n`) to the relay.
    ///
    /// # Errors
    /// When the session has ended.
    pub(crate) async fn write_line(&self, line: &[u8]) -> Result<(), ()> {
        let mut input = self.input.lock().await;
        let Some(pipe) = input.as_mut() else {
            return Err(());
        };
        if pipe.write_all(line).await.is_err() {
            *input = None;
            return Err(());
        }
        Ok(())
    }

    /// Registers a POST's request `id` (raw) before its line is written; the receiver gets
    /// what the router finds for it. `None` when a request with the same id is still open.
    pub(crate) fn wait_for(
        &self,
        id: &RawValue,
        progress: Option<&RawValue>,
        streams: bool,
    ) -> Option<(mpsc::UnboundedReceiver<Routed>, u64)> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let key = id_key(id.get().as_bytes());
        let mut routes = lock(&self.routes);
        if routes.pending.contains_key(&key) {
            return None;
        }
        routes.seq += 1;
        let seq = routes.seq;
        let (tx, rx) = mpsc::unbounded_channel();
        if self.has_ended() {
            // The receiver sees the channel closed at once.
            return Some((rx, seq));
        }
        routes.pending.insert(
            key,
            Waiter {
                tx,
                progress: progress.map(|p| id_key(p.get().as_bytes())),
                streams,
                seq,
            },
        );
        Some((rx, seq))
    }

    /// Forgets the waiter `seq` of request `id` (its client went away): a late response is
    /// dropped.
    pub(crate) fn forget(&self, id: &RawValue, seq: u64) {
        let key = id_key(id.get().as_bytes());
        let mut routes = lock(&self.routes);
        if routes.pending.get(&key).is_some_and(|w| w.seq == seq) {
            routes.pending.remove(&key);
        }
    }

    /// The session's GET stream: server messages not bound for a POST.
    pub(crate) fn get_stream(&self) -> Arc<Replay> {
        Arc::clone(&lock(&self.routes).get)
    }

    /// Keeps the SSE answer of a POST for its resumption (the last [`KEEP_STREAMS`]).
    pub(crate) fn keep_stream(&self, replay: &Arc<Replay>) {
        let mut routes = lock(&self.routes);
        if self.has_ended() {
            return;
        }
        if routes.streams.len() >= KEEP_STREAMS {
            routes.streams.pop_front();
        }
        routes.streams.push_back(Arc::clone(replay));
    }

    /// The stream numbered `stream` (0: the GET stream), if it is still kept.
    pub(crate) fn find_stream(&self, stream: u64) -> Option<Arc<Replay>> {
        let routes = lock(&self.routes);
        if stream == GET_STREAM {
            return Some(Arc::clone(&routes.get));
        }
        routes
            .streams
            .iter()
            .find(|r| r.stream() == stream)
            .map(Arc::clone)
    }

    /// Reads the relay's output and routes each line until the relay closes it.
    async fn route_output(&self, out: DuplexStream) {
        let mut reader = BufReader::new(out);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            while matches!(line.last(), Some(b'\n' | b'\r')) {
                line.pop();
            }
            if !line.is_empty() {
                self.route(std::mem::take(&mut line));
            }
        }
    }

    /// Routes one line of the relay's output (see the module docs of `serve`).
    fn route(&self, line: Vec<u8>) {
        let scan = crate::relay::Scanner::scan(&line);
        let mut routes = lock(&self.routes);
        if scan.has_outcome && !scan.has_method {
            let waiter = scan
                .id
                .as_deref()
                .and_then(|id| routes.pending.remove(&id_key(id)));
            match waiter {
                Some(w) => {
                    let _ = w.tx.send(Routed::Final(line));
                }
                None => eprintln!(
                    "mcp-budget: {}: dropped a response nobody waits for (its client went away)",
                    self.label()
                ),
            }
            return;
        }
        // A server request or notification.
        let token = progress_token(&line);
        let target = routes
            .pending
            .values()
            .filter(|w| w.streams && !w.tx.is_closed())
            .find(|w| token.is_some() && w.progress == token)
            .or_else(|| {
                routes
                    .pending
                    .values()
                    .filter(|w| w.streams && !w.tx.is_closed())
                    .max_by_key(|w| w.seq)
            })
            .map(|w| w.tx.clone());
        let line = match target {
            Some(tx) => match tx.send(Routed::Message(line)) {
                Ok(()) => return,
                Err(mpsc::error::SendError(Routed::Message(line) | Routed::Final(line))) => line,
            },
            None => line,
        };
        routes.get.push(line);
    }

    /// After the relay is done: every waiter and the GET stream see their channel close.
    fn end(&self) {
        self.ended.store(true, Ordering::Release);
        let mut routes = lock(&self.routes);
        routes.pending.clear();
        routes.get.finish();
        // A POST stream is finished by its pump, which writes the error of its request first.
        routes.streams.clear();
    }
}

/// `id_key` of `params.progressToken` of a `notifications/progress` line.
fn progress_token(line: &[u8]) -> Option<Vec<u8>> {
    #[derive(serde::Deserialize)]
    struct Note<'a> {
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow, rename = "progressToken")]
        progress_token: Option<&'a RawValue>,
    }
    if line.len() > 64 * 1024 || memchr::memmem::find(line, b"notifications/progress").is_none() {
        return None;
    }
    let note: Note<'_> = serde_json::from_slice(line).ok()?;
    Some(id_key(note.params?.progress_token?.get().as_bytes()))
}

/// A request or stream open on a session; dropping it marks the session used now.
#[derive(Debug)]
pub(crate) struct Busy(Arc<Session>);

impl Drop for Busy {
    fn drop(&mut self) {
        *lock(&self.0.last_used) = Instant::now();
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}
