//! Server → client: the server's lines, forwarded to the client byte for byte, except the
//! results of `tools/call` and `tools/list`, which are shaped.
//!
//! Shaping runs on tokio's blocking pool, one job per result, so a 12 MB result does not hold
//! up the lines behind it: notifications and other answers keep flowing (in the server's
//! order among themselves) while the big one is shaped. A shaped result is spliced back into
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
use super::scan::Scan;
use super::{Shaper, Shared, log, reply};

/// Results up to this many bytes (of JSON text) are shaped on the reader task itself: 16 KiB,
/// a few thousand tokens, well under a millisecond of work.
const INLINE_SHAPE_BYTES: usize = 16 * 1024;

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
        match frame {
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
                answer_in_place_of_server(scan, &message, &shared, &out).await;
            }
            Frame::Line(line) => relay_line(line, &shared, &out).await,
            Frame::Unterminated(line) => {
                if matches!(route::parse(&line), Parsed::Message(_) | Parsed::Batch) {
                    relay_line(line, &shared, &out).await;
                } else {
                    // Cut off by the server's exit: its request gets the exit's error.
                    log::warn(format_args!(
                        "the upstream server's last line was cut off: {}",
                        log::preview(&line)
                    ));
                }
            }
        }
    }
}

/// Answers, with an error, the client request that a dropped server line was the response to.
async fn answer_in_place_of_server(
    scan: Scan,
    message: &str,
    shared: &Shared,
    out: &mpsc::Sender<Vec<u8>>,
) {
    let Some(id) = scan.id.filter(|_| !scan.has_method) else {
        return;
    };
    let key = route::id_key(&id);
    let entry = {
        let mut pending = shared.pending();
        let entry = pending.take(&key);
        if entry.is_some() {
            pending.abandon(key);
        }
        entry
    };
    if let Some(entry) = entry {
        let _ = out
            .send(reply::error_line(
                &entry.raw_id,
                reply::INTERNAL_ERROR,
                message,
            ))
            .await;
    }
}

async fn relay_line(line: Vec<u8>, shared: &Shared, out: &mpsc::Sender<Vec<u8>>) {
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
                let _ = out.send(line).await;
                return;
            }
        },
        Parsed::Batch => {
            let _ = out.send(line).await;
            return;
        }
        Parsed::NotJson(scan) | Parsed::Invalid(scan) => {
            // Forwarding it would break the client's parser; stdout carries only JSON-RPC.
            log::warn(format_args!(
                "dropped an upstream line that is not a JSON-RPC message: {}",
                log::preview(&line)
            ));
            let message = "the upstream server sent a malformed response (not a JSON-RPC message)";
            answer_in_place_of_server(scan, message, shared, out).await;
            return;
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
                return;
            }
            None => None,
        }
    };
    let (Some(entry), Some(span), Some(shaper)) = (entry, result, shared.shaper.clone()) else {
        let _ = out.send(line).await;
        return;
    };
    if entry.track == Track::Other {
        let _ = out.send(line).await;
        return;
    }
    let upstream_ms = u64::try_from(entry.sent_at.elapsed().as_millis()).unwrap_or(u64::MAX);
    if span.len() <= INLINE_SHAPE_BYTES {
        // Small: shaping costs less than a trip to the blocking pool, and keeps line order.
        let line = shape(shaper.as_ref(), &entry, line, span, upstream_ms);
        let _ = out.send(line).await;
        return;
    }
    let out = out.clone();
    // The job's handle is not awaited: the writer's queue closes only when this job has sent
    // its line (it holds a sender), which is what the relay waits for at shutdown.
    drop(tokio::task::spawn_blocking(move || {
        let line = shape(shaper.as_ref(), &entry, line, span, upstream_ms);
        let _ = out.blocking_send(line);
    }));
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
