//! Server → client: the server's lines, forwarded to the client byte for byte, except the
//! results of `tools/call` and `tools/list`, which are shaped.
//!
//! Shaping runs on tokio's blocking pool, one job per result, so a 12 MB result does not hold
//! up the lines behind it: notifications and other answers keep flowing (in the server's
//! order among themselves) while the big one is shaped; a response over 1 MiB is even parsed
//! there. Small results (up to 16 KiB) are shaped in place, which is faster than the trip. A shaped result is spliced back into
//! the server's own line: the id's spelling and any unknown member stay as they were.

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio::io::AsyncRead;
use tokio::sync::mpsc;

use super::lines::{Frame, LineReader};
use super::route::{self, Entry, Parsed, Track};
use super::scan::{Scan, Scanner};
use super::{Shaper, Shared, log, reply};

/// Results up to this many bytes (of JSON text) are shaped on the reader task itself: 16 KiB,
/// a few thousand tokens, well under a millisecond of work.
const INLINE_SHAPE_BYTES: usize = 16 * 1024;

/// Lines longer than this whose first bytes show a response are handled entirely on the
/// blocking pool, parsing included (parsing 12 MB takes the reader 10–20 ms otherwise).
const OFFLOAD_BYTES: usize = 1024 * 1024;

/// How many first bytes of a long line are scanned to tell a response.
const HEAD_BYTES: usize = 64 * 1024;

/// Relays the server's lines until it closes its stdout.
pub(crate) async fn run<R: AsyncRead + Unpin>(
    mut lines: LineReader<R>,
    shared: Arc<Shared>,
    out: mpsc::Sender<Vec<u8>>,
) {
    loop {
        let frame = match lines.next_frame().await {
            Ok(frame) => frame,
            Err(e) => {
                log::warn(format_args!("cannot read from the upstream server: {e}"));
                return;
            }
        };
        let step = match frame {
            Frame::Eof => return,
            Frame::TooLong { bytes, scan } => {
                log::warn(format_args!(
                    "dropped an upstream line of {bytes} bytes: over the limit of {} bytes (--max-line-bytes)",
                    shared.max_line_bytes
                ));
                let message = format!(
                    "the upstream server's response of {bytes} bytes exceeds the proxy's limit of {} bytes per line (mcp-budget --max-line-bytes)",
                    shared.max_line_bytes
                );
                answer_in_place_of_server(&scan, &message, &shared).map_or(Step::Drop, Step::Send)
            }
            Frame::Line(line) if line.len() > OFFLOAD_BYTES && looks_like_response(&line) => {
                // Answers may overtake each other and the lines behind them: JSON-RPC has no
                // order between them, and nothing else is ever offloaded.
                let shared = Arc::clone(&shared);
                let out = out.clone();
                drop(tokio::task::spawn_blocking(move || {
                    let line = match decide(line, &shared) {
                        Step::Send(line) => line,
                        Step::Shape(job) => job.run(),
                        Step::Drop => return,
                    };
                    let _ = out.blocking_send(line);
                }));
                continue;
            }
            Frame::Line(line) => decide(line, &shared),
            Frame::Unterminated(line) => {
                if matches!(route::parse(&line), Parsed::Message(_) | Parsed::Batch) {
                    decide(line, &shared)
                } else {
                    // Cut off by the server's exit: its request gets the exit's error.
                    log::warn(format_args!(
                        "the upstream server's last line was cut off: {}",
                        log::preview(&line)
                    ));
                    Step::Drop
                }
            }
        };
        match step {
            Step::Send(line) => {
                let _ = out.send(line).await;
            }
            Step::Shape(job) if job.span.len() <= INLINE_SHAPE_BYTES => {
                // Small: shaping costs less than a trip to the blocking pool, and keeps order.
                let _ = out.send(job.run()).await;
            }
            Step::Shape(job) => {
                let out = out.clone();
                // The job's handle is not awaited: the writer's queue closes only when this job
                // has sent its line (it holds a sender), which the relay waits for at the end.
                drop(tokio::task::spawn_blocking(move || {
                    let _ = out.blocking_send(job.run());
                }));
            }
            Step::Drop => {}
        }
    }
}

/// Whether the first bytes of a line show a JSON-RPC response: an `id`, a `result` or `error`,
/// and no `method`, before [`HEAD_BYTES`].
fn looks_like_response(line: &[u8]) -> bool {
    let mut scanner = Scanner::new();
    scanner.feed(&line[..line.len().min(HEAD_BYTES)]);
    let head = scanner.partial();
    head.id.is_some() && head.has_outcome && !head.has_method
}

/// What to do with one line from the server.
enum Step {
    /// Send this line to the client.
    Send(Vec<u8>),
    /// Shape a result, then send the line.
    Shape(Job),
    /// Nothing to send.
    Drop,
}

/// A tracked response whose result is to be shaped.
struct Job {
    shaper: Arc<dyn Shaper>,
    entry: Entry,
    line: Vec<u8>,
    span: Range<usize>,
    upstream_ms: u64,
}

impl Job {
    fn run(self) -> Vec<u8> {
        shape(
            self.shaper.as_ref(),
            &self.entry,
            self.line,
            self.span,
            self.upstream_ms,
        )
    }
}

/// Routes one line: parses its envelope, settles its request in the pending table.
fn decide(line: Vec<u8>, shared: &Shared) -> Step {
    let started = Instant::now();
    let parsed = route::parse(&line);
    if line.len() > INLINE_SHAPE_BYTES {
        log::debug(format_args!(
            "envelope of a {}-byte line parsed in {:?}",
            line.len(),
            started.elapsed()
        ));
    }
    let (key, result) = match parsed {
        Parsed::Message(envelope) => match (envelope.method.is_some(), envelope.id) {
            // A response: the only kind the client's pending table knows.
            (false, Some(id)) => {
                let result = if envelope.error.is_none() {
                    envelope.result.and_then(|r| route::span_in(&line, r))
                } else {
                    None
                };
                (route::id_key(id.get().as_bytes()), result)
            }
            // Server requests (their own id space), notifications, anything else.
            _ => {
                if envelope.method.as_deref() == Some("notifications/progress")
                    && let Some(token) = route::progress_token(envelope.params)
                {
                    shared.pending().heard_progress(&token, Instant::now());
                }
                return Step::Send(line);
            }
        },
        Parsed::Batch => return Step::Send(line),
        Parsed::NotJson(scan) | Parsed::Invalid(scan) => {
            // Forwarding it would break the client's parser; stdout carries only JSON-RPC.
            log::warn(format_args!(
                "dropped an upstream line that is not a JSON-RPC message: {}",
                log::preview(&line)
            ));
            let message = "the upstream server sent a malformed response (not a JSON-RPC message)";
            return answer_in_place_of_server(&scan, message, shared)
                .map_or(Step::Drop, Step::Send);
        }
    };

    let entry = {
        let mut pending = shared.pending();
        match pending.take(&key) {
            Some(entry) => Some(entry),
            None if pending.was_abandoned(&key) => {
                log::warn(format_args!(
                    "dropped a late upstream answer to a request already answered with an error: {}",
                    log::preview(&line)
                ));
                return Step::Drop;
            }
            None => None,
        }
    };
    match (entry, result, shared.shaper.clone()) {
        (Some(entry), Some(span), Some(shaper)) if entry.track != Track::Other => {
            let upstream_ms =
                u64::try_from(entry.sent_at.elapsed().as_millis()).unwrap_or(u64::MAX);
            Step::Shape(Job {
                shaper,
                entry,
                line,
                span,
                upstream_ms,
            })
        }
        _ => Step::Send(line),
    }
}

/// The error line answering the client request that a dropped server line was the response
/// to, if that request is still waiting (it is then marked as answered).
fn answer_in_place_of_server(scan: &Scan, message: &str, shared: &Shared) -> Option<Vec<u8>> {
    if scan.has_method {
        return None;
    }
    let key = route::id_key(scan.id.as_deref()?);
    let entry = {
        let mut pending = shared.pending();
        let entry = pending.take(&key)?;
        pending.abandon(key);
        entry
    };
    Some(reply::error_line(
        &entry.raw_id,
        reply::INTERNAL_ERROR,
        message,
    ))
}

/// The line to send for a tracked response: the shaped result spliced into the server's line;
/// the line unchanged when its result cannot be read as a value (it is still valid JSON); a
/// JSON-RPC error when the shaper fails.
fn shape(
    shaper: &dyn Shaper,
    entry: &Entry,
    line: Vec<u8>,
    span: Range<usize>,
    upstream_ms: u64,
) -> Vec<u8> {
    let started = Instant::now();
    let value: Value = match serde_json::from_slice(&line[span.clone()]) {
        Ok(value) => value,
        Err(e) => {
            // E.g. nesting deeper than serde_json's limit of 128 levels.
            log::warn(format_args!("passing a result through unshaped: {e}"));
            return line;
        }
    };
    let parsed = started.elapsed();
    let shaped = catch_unwind(AssertUnwindSafe(|| match &entry.track {
        Track::Call { tool } => shaper.shape_call_result(tool, value, upstream_ms),
        Track::List { first_page } => shaper.shape_list_result(value, *first_page),
        Track::Other => value,
    }));
    let span_len = span.len();
    let spliced = match shaped {
        Ok(shaped) => reply::splice(&line, span, &shaped).map_err(|e| e.to_string()),
        Err(_) => Err("the shaper panicked".to_owned()),
    };
    log::debug(format_args!(
        "{} result of {} bytes: parsed in {parsed:?}, shaped and written in {:?}",
        entry.method,
        span_len,
        started.elapsed() - parsed
    ));
    spliced.unwrap_or_else(|e| {
        log::warn(format_args!(
            "shaping the answer to {} failed: {e}",
            entry.method
        ));
        let message = "mcp-budget failed to shape this result (internal error; see its stderr)";
        reply::error_line(&entry.raw_id, reply::INTERNAL_ERROR, message)
    })
}
