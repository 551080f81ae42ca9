//! Server → client: the server's lines, forwarded to the client byte for byte, except the
//! results of `tools/call` and `tools/list`, which are shaped.
//!
//! Shaping runs on tokio's blocking pool, one job per result, so a 12 MB result does not hold
//! up the lines behind it: notifications and other answers keep flowing (in the server's
//! order among themselves) while the big one is shaped; a response over 1 MiB is even parsed
//! there, its result read on two threads (see [`decide_big`]).
//! Small results (up to 16 KiB) are shaped in place, which is faster than the trip; small
//! plain text that shaping would give back unchanged ([`Shaper::passes_unchanged`]) is not
//! even parsed: the server's line goes out byte for byte. A shaped result is spliced back into
//! the server's own line: the id's spelling and any unknown member stay as they were.

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::lines::{Frame, FrameSource};
use super::route::{self, Entry, Parsed, Track};
use super::scan::{Scan, Scanner, tail_id};
use super::shaper::{Shaper, Unchanged};
use super::shared::Shared;
use super::writer::ClientOut;
use super::{log, reply, split, unparsed};

/// Results up to this many bytes (of JSON text) are shaped on the reader task itself: 16 KiB,
/// a few thousand tokens, well under a millisecond of work.
const INLINE_SHAPE_BYTES: usize = 16 * 1024;

/// Lines longer than this whose first bytes show a response are handled entirely on the
/// blocking pool, parsing included (parsing 12 MB takes the reader 10–20 ms otherwise).
const OFFLOAD_BYTES: usize = 1024 * 1024;

/// How many first bytes of a long line are scanned to tell a response.
const HEAD_BYTES: usize = 64 * 1024;

/// Relays the server's lines until it closes its stdout (or the transport its queue).
pub(crate) async fn run<F: FrameSource>(mut lines: F, shared: Arc<Shared>, out: ClientOut) {
    loop {
        let frame = match lines.next_frame().await {
            Ok(frame) => frame,
            Err(e) => {
                log::warn(format_args!("cannot read from the upstream server: {e}"));
                return;
            }
        };
        // Stopped while reading (a thread cannot be aborted as a task is): nothing more.
        if shared.server_stopped() {
            return;
        }
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
            Frame::Line(line) if line.len() > OFFLOAD_BYTES => {
                let head = Scanner::head(&line, HEAD_BYTES);
                if !looks_like_response(&head) {
                    decide(line, &shared)
                } else {
                    // Answers may overtake each other and the lines behind them: JSON-RPC has no
                    // order between them, and nothing else is offloaded (but for an invalid line
                    // that begins like a response: it keeps no order either).
                    let shared = Arc::clone(&shared);
                    let out = out.job();
                    drop(tokio::task::spawn_blocking(move || {
                        let (line, sent) = match decide_big(line, head, &shared) {
                            Step::Send(line) => (line, Sent(None)),
                            Step::Shape(job) => job.run(),
                            Step::Drop => return,
                        };
                        let _ = out.send_blocking(line);
                        sent.done();
                    }));
                    continue;
                }
            }
            Frame::Line(line) => decide(line, &shared),
            Frame::Unterminated(line) => {
                let mut masked = None;
                if matches!(
                    route::parse_lenient(&line, &mut masked).0,
                    Parsed::Message(_) | Parsed::Batch
                ) {
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
                let (line, sent) = job.run();
                let _ = out.send(line).await;
                sent.done();
            }
            Step::Shape(job) => {
                let out = out.job();
                // The job's handle is not awaited: the relay's end waits for it to send its
                // line (see `ClientOut::drain`).
                drop(tokio::task::spawn_blocking(move || {
                    let (line, sent) = job.run();
                    let _ = out.send_blocking(line);
                    sent.done();
                }));
            }
            Step::Drop => {}
        }
    }
}

/// [`decide`] for a long line that looks like a response, its result read on two threads when
/// its request is one whose answer is shaped (or, when the line's id is neither in its head
/// nor at its end, when any waiting answer is shaped), and the scan of the head found where
/// the top-level `result` starts ([`Scan::result_at`]):
/// - by [`split::value_at`] where a long string runs through its middle; the envelope is then
///   read without the result's bytes ([`route_around`]);
/// - else by `serde_json` on a second thread while the envelope parse (which validates the
///   whole line) reads all of its bytes on this one.
///
/// The value read is used only when its span is exactly the result's span the envelope parse
/// found (a repeated `result` key: `serde_json` keeps the last), so it costs time at worst,
/// never correctness.
fn decide_big(line: Vec<u8>, head: Scan, shared: &Shared) -> Step {
    let start = head.result_at.filter(|_| {
        shared.shaper.is_some() && {
            // The id may come after the result (as the TypeScript SDK writes a response):
            // then it is read off the line's end, or, failing that, the result is parsed
            // beside the envelope when any answer is to be shaped.
            match head.id.or_else(|| tail_id(&line)) {
                Some(id) => shared.pending().is_shaped(&route::id_key(&id)),
                None => shared.pending().any_shaped(),
            }
        }
    });
    let Some(start) = start else {
        return decide(line, shared);
    };
    let mut line = line;
    let reading = Instant::now();
    let (routed, early) = match split::value_at(&mut line, start) {
        // Read on both threads: the envelope is then read without the result's bytes.
        Some((value, span)) => (
            route_around(&line, &span, reading.elapsed(), shared),
            Some((value, span)),
        ),
        None => std::thread::scope(|s| {
            let line = &line;
            let early = s.spawn(move || parse_value_at(line, start));
            let routed = route_line(line, shared);
            (routed, early.join().ok().flatten())
        }),
    };
    match routed.into_step(line) {
        Step::Shape(mut job) => {
            match early {
                Some((value, span)) if span == job.span => job.value = Some(Box::new(value)),
                _ => log::debug(format_args!(
                    "the result parsed beside the envelope was not the envelope's: parsing again"
                )),
            }
            Step::Shape(job)
        }
        step => step,
    }
}

/// [`route_line`] for `line` whose bytes at `result` are a JSON value already read (by
/// [`split::value_at`], which took `read_for`): the envelope is read with that value written
/// `0`, when that is where its `result` is (else the whole line is). The envelope and the
/// value each valid make the line valid. The upstream's time does not count `read_for`; the
/// previews of the line in the warnings of [`route_line`] show the result as `0`.
fn route_around(
    line: &[u8],
    result: &Range<usize>,
    read_for: std::time::Duration,
    shared: &Shared,
) -> Routed {
    let mut masked = Vec::with_capacity(line.len() - result.len() + 1);
    masked.extend_from_slice(&line[..result.start]);
    masked.push(b'0');
    masked.extend_from_slice(&line[result.end..]);
    let placeholder = result.start..result.start + 1;
    let at_placeholder = match route::parse_lenient(&masked, &mut None) {
        (Parsed::Message(envelope), text) => {
            envelope.method.is_none()
                && envelope.error.is_none()
                && envelope.id.is_some()
                && envelope.result.and_then(|r| route::span_in(text, r))
                    == Some(placeholder.clone())
        }
        _ => false,
    };
    if !at_placeholder {
        return route_line(line, shared);
    }
    match route_line(&masked, shared) {
        Routed::Shape {
            shaper,
            entry,
            span,
            upstream_ms,
        } => Routed::Shape {
            shaper,
            entry,
            // Its ends moved back to where they are in `line`: the placeholder (what the same
            // parse as the check above finds) becomes `result`.
            span: {
                let back = |p: usize| {
                    if p >= placeholder.end {
                        p + result.len() - 1
                    } else {
                        p
                    }
                };
                back(span.start)..back(span.end)
            },
            upstream_ms: upstream_ms
                .saturating_sub(u64::try_from(read_for.as_millis()).unwrap_or(u64::MAX)),
        },
        routed => routed,
    }
}

/// The JSON value that starts at `start` in `line`, and its byte range.
fn parse_value_at(line: &[u8], start: usize) -> Option<(Value, Range<usize>)> {
    let mut values = serde_json::Deserializer::from_slice(line.get(start..)?).into_iter::<Value>();
    let value = values.next()?.ok()?;
    Some((value, start..start + values.byte_offset()))
}

/// Whether the scan of a line's first [`HEAD_BYTES`] shows a JSON-RPC response: a top-level
/// `result` or `error` and no `method`. The id may come later: the TypeScript SDK writes
/// `{"result":…,"jsonrpc":"2.0","id":…}`. A request or notification never has a `result` or
/// `error` member (JSON-RPC 2.0, section 4), so no line whose order matters is taken for one.
fn looks_like_response(head: &Scan) -> bool {
    head.has_outcome && !head.has_method
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
    /// The result already parsed (from exactly `span`), if it was.
    value: Option<Box<Value>>,
}

impl Job {
    /// The line to send, and what to do once it is sent.
    fn run(self) -> (Vec<u8>, Sent) {
        let (line, unchanged) = shape(
            self.shaper.as_ref(),
            &self.entry,
            self.line,
            self.span,
            self.upstream_ms,
            self.value.map(|v| *v),
        );
        let sent = Sent(unchanged.map(|u| (self.shaper, u)));
        (line, sent)
    }
}

/// What is left to do once a shaped line is sent: the accounting of a result that went out
/// unchanged ([`Shaper::account_unchanged`]), if it was one.
#[must_use = "the call is accounted for only by `Sent::done`"]
struct Sent(Option<(Arc<dyn Shaper>, Unchanged)>);

impl Sent {
    fn done(self) {
        if let Some((shaper, unchanged)) = self.0 {
            // A panic there loses the accounting, never the relay.
            let _ = catch_unwind(AssertUnwindSafe(|| shaper.account_unchanged(unchanged)));
        }
    }
}

/// Routes one line: parses its envelope, settles its request in the pending table.
fn decide(line: Vec<u8>, shared: &Shared) -> Step {
    route_line(&line, shared).into_step(line)
}

/// What [`route_line`] decided for a line, without the line.
enum Routed {
    /// Send the line as it is.
    Send,
    /// Send this line instead.
    Replace(Vec<u8>),
    /// Nothing to send.
    Drop,
    /// Shape the result at `span`.
    Shape {
        shaper: Arc<dyn Shaper>,
        entry: Entry,
        span: Range<usize>,
        upstream_ms: u64,
    },
}

impl Routed {
    fn into_step(self, line: Vec<u8>) -> Step {
        match self {
            Routed::Send => Step::Send(line),
            Routed::Replace(other) => Step::Send(other),
            Routed::Drop => Step::Drop,
            Routed::Shape {
                shaper,
                entry,
                span,
                upstream_ms,
            } => Step::Shape(Job {
                shaper,
                entry,
                line,
                span,
                upstream_ms,
                value: None,
            }),
        }
    }
}

/// Routes one line: parses its envelope, settles its request in the pending table.
fn route_line(line: &[u8], shared: &Shared) -> Routed {
    // Timed for the debug line of a long one only: a small call skips the clock.
    let started = (line.len() > INLINE_SHAPE_BYTES && log::debug_on()).then(Instant::now);
    let mut masked = None;
    let (parsed, text) = route::parse_lenient(line, &mut masked);
    if let Some(started) = started {
        log::debug(format_args!(
            "envelope of a {}-byte line parsed in {:?}",
            line.len(),
            started.elapsed()
        ));
    }
    let (key, result, is_error) = match parsed {
        Parsed::Message(envelope) => match (envelope.method.is_some(), envelope.id) {
            // A response: the only kind the client's pending table knows.
            (false, Some(id)) => {
                let is_error = envelope.error.is_some();
                let result = if is_error {
                    None
                } else {
                    envelope.result.and_then(|r| route::span_in(text, r))
                };
                (
                    route::id_key(route::raw_in(line, text, id)),
                    result,
                    is_error,
                )
            }
            // Server requests (their own id space), notifications, anything else.
            _ => {
                if envelope.method.as_deref() == Some("notifications/progress")
                    && let Some(token) = route::progress_token(envelope.params)
                {
                    shared.pending().heard_progress(&token, Instant::now());
                }
                return Routed::Send;
            }
        },
        Parsed::Batch => return Routed::Send,
        Parsed::NotJson(scan) | Parsed::Invalid(scan) => {
            // Forwarding it would break the client's parser; stdout carries only JSON-RPC.
            log::warn(format_args!(
                "dropped an upstream line that is not a JSON-RPC message: {}",
                log::preview(line)
            ));
            let message = "the upstream server sent a malformed response (not a JSON-RPC message)";
            return answer_in_place_of_server(&scan, message, shared)
                .map_or(Routed::Drop, Routed::Replace);
        }
    };

    let entry = {
        let mut pending = shared.pending();
        match pending.take(&key) {
            Some(entry) => Some(entry),
            None if pending.was_abandoned(&key) => {
                log::warn(format_args!(
                    "dropped a late upstream answer to a request already answered with an error: {}",
                    log::preview(line)
                ));
                return Routed::Drop;
            }
            None if pending.is_closed() => {
                // The relay has answered every request left (the server exited): this one
                // would be a second answer.
                log::warn(format_args!(
                    "dropped an upstream answer that came after the relay ended: {}",
                    log::preview(line)
                ));
                return Routed::Drop;
            }
            None => None,
        }
    };
    match (entry, result, shared.shaper.clone()) {
        (Some(entry), None, Some(_)) if is_error => {
            // An error instead of a result: forwarded as is, but still one telemetry record.
            shared.note_call_error(&entry);
            Routed::Send
        }
        (Some(entry), Some(span), Some(shaper)) if entry.track != Track::Other => {
            let upstream_ms =
                u64::try_from(entry.sent_at.elapsed().as_millis()).unwrap_or(u64::MAX);
            Routed::Shape {
                shaper,
                entry,
                span,
                upstream_ms,
            }
        }
        _ => Routed::Send,
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

/// The line to send for a tracked response: the shaped result spliced into the server's line
/// (a result `serde_json` cannot read is recovered by [`unparsed::recover`]; a `tools/list`
/// one that stays unreadable goes unchanged: it is still valid JSON); a JSON-RPC error when
/// the shaper fails.
fn shape(
    shaper: &dyn Shaper,
    entry: &Entry,
    line: Vec<u8>,
    span: Range<usize>,
    upstream_ms: u64,
    parsed: Option<Value>,
) -> (Vec<u8>, Option<Unchanged>) {
    // The clock is read for the debug lines only.
    let started = log::debug_on().then(Instant::now);
    let elapsed = || started.map(|s| s.elapsed()).unwrap_or_default();
    // Small plain text the shaper would give back unchanged: the server's line as it came
    // (a panic there is as if it had said no: the result is then shaped).
    if let Track::Call { tool } = &entry.track
        && parsed.is_none()
        && span.len() <= INLINE_SHAPE_BYTES
        && let Ok(Some(unchanged)) = catch_unwind(AssertUnwindSafe(|| {
            shaper.passes_unchanged(tool, &line[span.clone()], upstream_ms)
        }))
    {
        if log::debug_on() {
            log::debug(format_args!(
                "{} result of {} bytes: passed unchanged in {:?}",
                entry.method,
                span.len(),
                elapsed()
            ));
        }
        return (line, Some(unchanged));
    }
    let (value, literals) =
        match parsed.map_or_else(|| serde_json::from_slice(&line[span.clone()]), Ok) {
            Ok(value) => (value, 0),
            Err(e) => {
                // Python's JSON (lone surrogate escapes, NaN), nesting deeper than serde_json's
                // 128 levels: the budget still holds (see `unparsed`).
                log::debug(format_args!("the result is not readable as a value: {e}"));
                let call = matches!(entry.track, Track::Call { .. });
                match unparsed::recover(&line[span.clone()], call) {
                    Some(got) => (got.value, got.literals),
                    None => return (line, None),
                }
            }
        };
    let parsed = elapsed();
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
    if log::debug_on() {
        log::debug(format_args!(
            "{} result of {} bytes: parsed in {parsed:?}, shaped and written in {:?}",
            entry.method,
            span_len,
            elapsed().saturating_sub(parsed)
        ));
    }
    let line = spliced.unwrap_or_else(|e| {
        if literals > 0 {
            // What the client would accept without the proxy is never turned into an error.
            log::warn(format_args!(
                "shaping the answer to {} failed ({e}); its result holds NaN/Infinity literals: passed unshaped",
                entry.method
            ));
            return line;
        }
        log::warn(format_args!(
            "shaping the answer to {} failed: {e}",
            entry.method
        ));
        let message = "mcp-budget failed to shape this result (internal error; see its stderr)";
        reply::error_line(&entry.raw_id, reply::INTERNAL_ERROR, message)
    });
    (line, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shaper that fails on every result.
    struct Failing;

    impl Shaper for Failing {
        fn may_answer(&self, _: &str) -> bool {
            false
        }
        fn answer_injected(&self, _: &Value) -> Option<Value> {
            None
        }
        fn shape_call_result(&self, _: &str, _: Value, _: u64) -> Value {
            panic!("this shaper fails")
        }
        fn shape_list_result(&self, _: Value, _: bool) -> Value {
            panic!("this shaper fails")
        }
    }

    /// The pending entry of `tools/call` 3 (tool `t`).
    fn call_3() -> Entry {
        Entry {
            raw_id: b"3".as_slice().into(),
            method: "tools/call".into(),
            track: Track::Call { tool: "t".into() },
            sent_at: Instant::now(),
            last_heard: Instant::now(),
            progress_token: None,
            cancelled: false,
        }
    }

    fn shape_with_failing_shaper(line: &[u8]) -> Vec<u8> {
        let entry = call_3();
        let mut masked = None;
        let (parsed, text) = route::parse_lenient(line, &mut masked);
        let Parsed::Message(envelope) = parsed else {
            panic!("a message: {}", String::from_utf8_lossy(line));
        };
        let span = envelope
            .result
            .and_then(|r| route::span_in(text, r))
            .unwrap_or_default();
        shape(&Failing, &entry, line.to_vec(), span, 0, None).0
    }

    #[test]
    fn a_result_with_literals_that_cannot_be_shaped_passes_unshaped_never_as_an_error() {
        let line = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"v":NaN}}}"#;
        assert_eq!(shape_with_failing_shaper(line), line.to_vec());
        // Strict JSON the shaper fails on is still the internal error it always was.
        let strict = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;
        let answer = shape_with_failing_shaper(strict);
        let v: Value = serde_json::from_slice(&answer).unwrap_or_default();
        assert_eq!(v["error"]["code"], reply::INTERNAL_ERROR, "{v}");
    }

    /// A long response as the TypeScript SDK writes it (`id` after `result`), and a relay
    /// waiting for the answer to `tools/call` 3.
    fn id_last_response() -> (Vec<u8>, Shared) {
        let text = "x".repeat(OFFLOAD_BYTES + 10);
        let line = format!(
            r#"{{"result":{{"content":[{{"type":"text","text":"{text}"}}]}},"jsonrpc":"2.0","id":3}}"#
        )
        .into_bytes();
        let shared = Shared::new(Some(Arc::new(Failing)), usize::MAX);
        let entry = call_3();
        let inserted = shared.pending().insert(route::id_key(b"3"), entry);
        assert!(matches!(inserted, Ok(None)));
        (line, shared)
    }

    #[test]
    fn a_long_response_with_its_id_last_is_offloaded_and_parsed_beside_its_envelope() {
        let (line, shared) = id_last_response();
        let head = Scanner::head(&line, HEAD_BYTES);
        assert!(
            looks_like_response(&head),
            "the head holds `result`, not `id`"
        );
        let Step::Shape(job) = decide_big(line, head, &shared) else {
            panic!("the answer to tools/call 3 is shaped");
        };
        assert!(
            job.value.is_some(),
            "the result was parsed beside the envelope"
        );
        assert_eq!(&*job.entry.raw_id, b"3");
        // A request or notification is never taken for a response.
        let mut note = br#"{"method":"notifications/message","params":{"data":""#.to_vec();
        note.extend(std::iter::repeat_n(b'x', OFFLOAD_BYTES));
        note.extend(br#""},"jsonrpc":"2.0"}"#);
        assert!(!looks_like_response(&Scanner::head(&note, HEAD_BYTES)));
    }

    #[test]
    fn the_scanned_result_start_parses_to_the_envelope_span() {
        let line = br#"{"jsonrpc":"2.0","id":7,"result" :  {"content":[{"type":"text","text":"a,b"}]},"x":1}"#;
        let start = Scanner::scan(line).result_at.unwrap_or(0);
        let (value, span) = parse_value_at(line, start).unwrap_or_default();
        let Parsed::Message(envelope) = route::parse(line) else {
            panic!("a message");
        };
        let real = envelope.result.and_then(|r| route::span_in(line, r));
        assert_eq!(Some(span.clone()), real);
        assert_eq!(
            value,
            serde_json::from_slice::<Value>(&line[span]).unwrap_or_default()
        );
    }

    #[test]
    fn a_nested_result_key_is_not_taken_for_the_result() {
        let line = br#"{"jsonrpc":"2.0","id":7,"_meta":{"result": 5},"result":{"content":[]}}"#;
        let start = Scanner::scan(line).result_at.unwrap_or(0);
        let scanned = parse_value_at(line, start).map(|(_, span)| span);
        let Parsed::Message(envelope) = route::parse(line) else {
            panic!("a message");
        };
        let real = envelope.result.and_then(|r| route::span_in(line, r));
        assert!(real.is_some());
        assert_eq!(scanned, real);
    }

    /// After the relay answered the requests left (the server exited), a late answer of the
    /// server is dropped: the client never gets two answers to one request.
    #[test]
    fn an_answer_after_the_table_closed_is_dropped() {
        let shared = Shared::new(None, usize::MAX);
        let inserted = shared.pending().insert(route::id_key(b"1"), call_3());
        assert!(matches!(inserted, Ok(None)));
        assert_eq!(shared.pending().close().len(), 1);
        let late = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        assert!(matches!(route_line(late, &shared), Routed::Drop));
        // Notifications still pass.
        let note = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#;
        assert!(matches!(route_line(note, &shared), Routed::Send));
    }
}
