//! Client → server: the client's lines, forwarded to the server's stdin byte for byte.
//!
//! Requests are recorded in the pending table before they are forwarded (so the answer can
//! never outrun its record). A `tools/call` of an injected tool (`read_more`,
//! `query_response`) is answered here and never reaches the server: on a task of its own, so
//! the lines behind it keep flowing while a slow `query_response` runs (its answer may
//! overtake them). The line order of everything forwarded is the client's order.
//! A `tools/call` the shaper routes (`[tools_list]`: a refused tool, deferred mode's
//! `call_tool`) is answered here or forwarded as the rewritten call it names.

use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWriteExt, BufWriter};
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

use super::lines::{Frame, LineReader};
use super::protocol::is_stateless;
use super::route::{self, Entry, Parsed, Track};
use super::scan::Scan;
use super::shaper::{CallRoute, Shaper};
use super::shared::Shared;
use super::threads::BlockingStdin;
use super::writer::ClientOut;
use super::{log, reply, rewrite};

/// The server's stdin, or the queue of a transport that moves whole messages (Streamable
/// HTTP), until it breaks. Dropping it closes the pipe (or the queue); the stdio relay's
/// blocking pipe is closed by [`BlockingStdin::close`] instead.
pub(crate) enum ToServer {
    /// A child's stdin, written through the reactor.
    Pipe(BufWriter<ChildStdin>),
    /// A child's stdin, written with blocking writes (the stdio relay's client thread).
    Blocking(Arc<BlockingStdin>),
    /// Whole messages handed to a transport task.
    Queue(mpsc::Sender<Vec<u8>>),
    /// The server no longer reads.
    Gone,
}

impl ToServer {
    /// Lines written to a child's stdin.
    pub(crate) fn pipe(stdin: ChildStdin) -> ToServer {
        ToServer::Pipe(BufWriter::with_capacity(64 * 1024, stdin))
    }

    /// Whole messages handed to a transport task.
    pub(crate) fn queue(queue: mpsc::Sender<Vec<u8>>) -> ToServer {
        ToServer::Queue(queue)
    }

    /// Writes one line and its `\n`; `false` when the server no longer reads.
    async fn send(&mut self, line: &[u8]) -> bool {
        let result = match self {
            ToServer::Queue(queue) => {
                if queue.send(line.to_vec()).await.is_ok() {
                    return true;
                }
                log::warn(format_args!("the upstream transport has stopped"));
                *self = ToServer::Gone;
                return false;
            }
            ToServer::Pipe(stdin) => {
                let mut result = stdin.write_all(line).await;
                if result.is_ok() {
                    result = stdin.write_all(b"\n").await;
                }
                result
            }
            ToServer::Blocking(stdin) => {
                match stdin.with(|w| {
                    std::io::Write::write_all(w, line)?;
                    std::io::Write::write_all(w, b"\n")
                }) {
                    Some(result) => result,
                    None => return false,
                }
            }
            ToServer::Gone => return false,
        };
        self.check(result)
    }

    async fn flush(&mut self) -> bool {
        let result = match self {
            ToServer::Queue(_) => return true,
            ToServer::Pipe(stdin) => stdin.flush().await,
            ToServer::Blocking(stdin) => match stdin.with(std::io::Write::flush) {
                Some(result) => result,
                None => return false,
            },
            ToServer::Gone => return false,
        };
        self.check(result)
    }

    fn check(&mut self, result: std::io::Result<()>) -> bool {
        if let Err(e) = result {
            log::warn(format_args!(
                "the upstream server no longer reads its stdin: {e}"
            ));
            *self = ToServer::Gone;
            return false;
        }
        true
    }
}

/// Relays the client's lines until the client closes its end (or its stdin fails), and
/// returns the server's stdin, flushed: the caller closes it (by dropping it, or with
/// [`BlockingStdin::close`]), which tells a well-behaved server to exit, once it has taken
/// note that the client left first.
pub(crate) async fn run<I: AsyncRead + Unpin>(
    mut lines: LineReader<I>,
    mut server: ToServer,
    shared: Arc<Shared>,
    out: ClientOut,
) -> ToServer {
    loop {
        let frame = match lines.next_frame().await {
            Ok(frame) => frame,
            Err(e) => {
                log::warn(format_args!("cannot read from the client: {e}"));
                break;
            }
        };
        match frame {
            Frame::Eof => break,
            Frame::TooLong { bytes, scan } => {
                log::warn(format_args!(
                    "dropped a client line of {bytes} bytes: over the limit of {} bytes (--max-line-bytes)",
                    shared.max_line_bytes
                ));
                if let (Some(id), false) = (scan.id, scan.has_outcome) {
                    let message = format!(
                        "request of {bytes} bytes exceeds the proxy's limit of {} bytes per line (mcp-budget --max-line-bytes)",
                        shared.max_line_bytes
                    );
                    send(
                        &out,
                        reply::error_line(&id, reply::INVALID_REQUEST, &message),
                    )
                    .await;
                }
            }
            // A last line without its newline is still a message.
            Frame::Line(line) | Frame::Unterminated(line) => {
                relay_line(&line, &mut server, &shared, &out).await;
            }
        }
        if !lines.has_buffered_line() {
            server.flush().await;
        }
    }
    server.flush().await;
    log::debug(format_args!(
        "client closed its end; closing the upstream server's stdin"
    ));
    server
}

async fn send(out: &ClientOut, line: Vec<u8>) {
    // Fails only when the writer is gone, i.e. the relay is shutting down.
    let _ = out.send(line).await;
}

async fn relay_line(line: &[u8], server: &mut ToServer, shared: &Arc<Shared>, out: &ClientOut) {
    let mut masked = None;
    let (parsed, text) = route::parse_lenient(line, &mut masked);
    let envelope = match parsed {
        Parsed::Message(envelope) => envelope,
        Parsed::Batch => {
            log::debug(format_args!(
                "forwarding a batch unchanged (its calls are not shaped)"
            ));
            server.send(line).await;
            return;
        }
        Parsed::NotJson(scan) => return refuse(line, scan, true, out).await,
        Parsed::Invalid(scan) => return refuse(line, scan, false, out).await,
    };
    let (Some(method), Some(id)) = (envelope.method.as_deref(), envelope.id) else {
        if envelope.method.as_deref() == Some("notifications/cancelled")
            && let Some(request) = route::cancelled_request(envelope.params)
        {
            shared.pending().cancel(&route::id_key(&request));
        }
        // Notifications, and the client's answers to the server's own requests.
        server.send(line).await;
        return;
    };
    let raw_id = route::raw_in(line, text, id);

    let (mut track, progress_token) = route::request_info(method, envelope.params);
    let parse_params = || -> serde_json::Value {
        envelope
            .params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default()
    };
    // `[tools_list]`: a refused tool is answered here; `call_tool` becomes a call of its tool.
    let mut rewritten: Option<(Vec<u8>, serde_json::Value)> = None;
    if let Track::Call { tool } = &track
        && let Some(shaper) = shared.shaper.clone()
        && shaper.may_route(tool)
    {
        match shaper.route_call(&parse_params()) {
            CallRoute::Forward => {}
            CallRoute::Answer(result) => {
                let stateless = is_stateless(&parse_params());
                send(out, result_line(raw_id, result, stateless)).await;
                return;
            }
            CallRoute::Rewrite { params, tool } => {
                rewritten = Some((rewrite_line(raw_id, &params), params));
                track = Track::Call { tool };
            }
        }
    }
    if let Track::Call { tool } = &track
        && let Some(shaper) = shared.shaper.clone()
        && shaper.may_answer(tool)
    {
        let params = match &rewritten {
            Some((_, p)) => p.clone(),
            None => parse_params(),
        };
        if params.get("name").and_then(serde_json::Value::as_str) == Some(tool.as_str()) {
            // Answered on a task of its own: an injected tool may run jq over a cached 12 MB
            // response (on the blocking pool, jq itself in a worker process with a deadline), and the
            // client's later lines must keep flowing meanwhile.
            drop(tokio::spawn(answer_injected(
                shaper,
                params,
                raw_id.to_vec(),
                out.job(),
            )));
            return;
        }
    }

    // A call whose arguments the shaper may rewrite (`uuid_prefix`, `response_refs`): the
    // client's later lines wait for it, so their order towards the server is kept.
    // A `call_tool` already rewritten above is rewritten again from its new line.
    let mut with_args = None;
    if let Track::Call { tool } = &track
        && let Some(shaper) = shared.shaper.clone()
        && shaper.may_rewrite(tool)
    {
        let outcome = match &rewritten {
            None => rewrite::rewrite(shaper, tool, line, text, envelope.params, raw_id).await,
            Some((routed, _)) => rewrite::rewrite_routed(shaper, tool, routed, raw_id).await,
        };
        match outcome {
            rewrite::Outcome::Keep => {}
            rewrite::Outcome::Line(new) => with_args = Some(new),
            rewrite::Outcome::Answer(answer) => return send(out, answer).await,
        }
    }
    let line: &[u8] = match (&with_args, &rewritten) {
        (Some(new), _) => new,
        (None, Some((routed, _))) => routed,
        (None, None) => line,
    };

    let key = route::id_key(raw_id);
    let now = Instant::now();
    let entry = Entry {
        raw_id: raw_id.into(),
        method: method.to_owned(),
        track,
        sent_at: now,
        last_heard: now,
        progress_token,
        cancelled: false,
    };
    let tracked = entry.track != Track::Other;
    let inserted = shared.pending().insert(key, entry);
    match inserted {
        Ok(None) => {}
        Ok(Some(_)) => log::warn(format_args!(
            "the client reused the id {} of a request still in flight",
            log::preview(raw_id)
        )),
        Err(route::Closed) => {
            let message = "upstream server has exited; the request was not delivered";
            send(
                out,
                reply::error_line(raw_id, reply::CONNECTION_CLOSED, message),
            )
            .await;
            return;
        }
    }
    if tracked && log::debug_on() {
        log::debug(format_args!("{method} {} forwarded", log::preview(raw_id)));
    }
    if !server.send(line).await {
        // The server stopped reading: answer now rather than when it is reaped.
        let taken = shared.pending().take(&route::id_key(raw_id));
        if taken.is_some() {
            let message = "upstream server is not reading its input (it may have exited); the request was not delivered";
            send(
                out,
                reply::error_line(raw_id, reply::CONNECTION_CLOSED, message),
            )
            .await;
        }
    }
}

/// Answers a client's call of an injected tool (`params` as sent; `raw_id` the id's bytes) and
/// sends the answer through the client writer. The shaper runs on the blocking pool; it
/// returns within twice jq's deadline (`jq::DEFAULT_DEADLINE` unless set: a wait for a free
/// worker, then the run) plus the shaping time, so this task never holds up the relay's
/// shutdown for long.
async fn answer_injected(
    shaper: Arc<dyn Shaper>,
    params: serde_json::Value,
    raw_id: Vec<u8>,
    out: ClientOut,
) {
    let stateless = is_stateless(&params);
    let answer = tokio::task::spawn_blocking(move || shaper.answer_injected(&params)).await;
    let line = match answer {
        Ok(Some(result)) => result_line(&raw_id, result, stateless),
        Ok(None) => reply::error_line(
            &raw_id,
            reply::INTERNAL_ERROR,
            "mcp-budget could not answer this call of its own tool",
        ),
        Err(e) => {
            log::warn(format_args!("answering an injected tool failed: {e}"));
            let message = "mcp-budget failed to answer this call (internal error; see its stderr)";
            reply::error_line(&raw_id, reply::INTERNAL_ERROR, message)
        }
    };
    // On a task of its own: never a blocking write on the runtime's workers.
    let _ = out.send_from_task(line).await;
}

/// The response line of a result the proxy writes itself; a stateless request's result gets
/// `resultType: "complete"` (2026-07-28: every result says what it is).
fn result_line(raw_id: &[u8], mut result: serde_json::Value, stateless: bool) -> Vec<u8> {
    if stateless
        && let Some(object) = result.as_object_mut()
        && !object.contains_key("resultType")
    {
        object.insert("resultType".to_owned(), "complete".into());
    }
    reply::result_line(raw_id, &result).unwrap_or_else(|e| {
        reply::error_line(raw_id, reply::INTERNAL_ERROR, &format!("mcp-budget: {e}"))
    })
}

/// A `tools/call` request line with id `raw_id` (its bytes, kept as sent, so the response
/// finds its pending entry) and `params`.
fn rewrite_line(raw_id: &[u8], params: &serde_json::Value) -> Vec<u8> {
    let mut line = b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec();
    line.extend_from_slice(raw_id);
    line.extend_from_slice(b",\"method\":\"tools/call\",\"params\":");
    line.extend_from_slice(params.to_string().as_bytes());
    line.push(b'}');
    line
}

/// Drops a line that is not a JSON-RPC message; answers it when it was a request whose id
/// could be recovered (-32700 when it was not JSON, -32600 when it was JSON but no message).
async fn refuse(line: &[u8], scan: Scan, not_json: bool, out: &ClientOut) {
    log::warn(format_args!(
        "dropped a client line that is not {}: {}",
        if not_json {
            "JSON"
        } else {
            "a JSON-RPC message"
        },
        log::preview(line)
    ));
    if let (Some(id), false) = (scan.id, scan.has_outcome) {
        let (code, message) = if not_json {
            (
                reply::PARSE_ERROR,
                "Parse error: the request is not valid JSON",
            )
        } else {
            (
                reply::INVALID_REQUEST,
                "Invalid Request: not a JSON-RPC 2.0 message",
            )
        };
        send(out, reply::error_line(&id, code, message)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use std::io::Read;

    #[cfg(unix)]
    fn pipe() -> (std::fs::File, std::fs::File) {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        (
            std::fs::File::from(std::os::fd::OwnedFd::from(reader)),
            std::fs::File::from(std::os::fd::OwnedFd::from(writer)),
        )
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_blocking_stdin_writes_lines_and_closes_once() {
        let (mut reader, writer) = pipe();
        let stdin = BlockingStdin::new(writer);
        let mut server = ToServer::Blocking(Arc::clone(&stdin));
        assert!(server.send(b"{\"a\":1}").await);
        assert!(server.flush().await);
        assert!(server.send(b"{\"b\":2}").await);
        assert!(server.flush().await);
        stdin.close();
        // Closed: the reader sees the end, the writer is refused.
        assert!(!server.send(b"{\"c\":3}").await);
        let mut got = String::new();
        reader.read_to_string(&mut got).expect("read");
        assert_eq!(got, "{\"a\":1}\n{\"b\":2}\n");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn closing_a_blocking_stdin_drops_what_was_not_flushed() {
        let (mut reader, writer) = pipe();
        let stdin = BlockingStdin::new(writer);
        let mut server = ToServer::Blocking(Arc::clone(&stdin));
        assert!(server.send(b"{\"a\":1}").await);
        stdin.close();
        let mut got = String::new();
        reader.read_to_string(&mut got).expect("read");
        assert_eq!(got, "");
    }
}
