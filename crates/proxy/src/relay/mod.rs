//! The stdio relay: newline-delimited JSON-RPC between an MCP client (our stdin/stdout) and an
//! upstream MCP server (a child process), hand-rolled over tokio.
//!
//! Every line is forwarded byte for byte, both ways, except the results of `tools/call` and
//! `tools/list`, which a [`Shaper`] rewrites, and the client's calls of the injected tools,
//! which the shaper answers. Only each message's envelope is parsed (`id`, `method`, where
//! `result` sits). The relay does not care about the protocol version: initialize-based
//! (2024-11-05 … 2025-11-25) and stateless (2026-07-28: `server/discover`, `_meta` on every
//! request, `resultType` in results) sessions pass the same way.
//!
//! Tasks: one reads the client and writes the server's stdin (in the client's order); one
//! reads the server's stdout; one writes every line bound for the client (so lines never
//! interleave); one answers requests past [`RelayOptions::request_timeout`]; the caller's task
//! watches the child. Shaping runs on tokio's blocking pool, except for small results.
//! [`Relay::run_stdio`] with a child process runs the two readers on threads of their own
//! instead, with blocking reads and writes and no writer task (each writes its lines in
//! place): a small call then costs about what a byte-copy relay costs (see `threads`).
//! Order: lines that are not shaped keep their order in each direction (notifications,
//! progress, cancellations among themselves); a shaped result may be overtaken by the lines
//! behind it.
//!
//! JSON is read as Python servers write it ([`mcp_budget_core::dialect`]): a line with `NaN`,
//! `Infinity` or `-Infinity` literals or lone surrogate escapes is a message like any other
//! (forwarded byte for byte unless shaped), and a UTF-8 byte-order mark at the start of a line
//! is dropped. The answer to a request is found by the value of its id, not its spelling
//! (`-0` = `0`, `1e3` = `1000.0`; see `route::id_key`), and is forwarded with the server's
//! spelling.
//!
//! Faults never stop the relay: a line that is not JSON, or longer than
//! [`RelayOptions::max_line_bytes`], is dropped, logged to stderr and answered with a JSON-RPC
//! error when it was a request whose id can be recovered (-32700 parse error, -32600 invalid
//! request; -32603 for a bad answer of the server, whose late real answer is then dropped). A
//! request the server stays silent about (no answer, no progress) for the request timeout gets
//! -32001. When the server exits, every request still waiting (and not cancelled by the
//! client) gets a -32000 error naming the exit status, and [`Relay::run`] returns. When the
//! client closes its end, the server's stdin is closed; the server gets
//! [`RelayOptions::shutdown_grace`] to exit before it is killed. Answers the server sends
//! meanwhile still reach the client.
//!
//! Not shaped: JSON-RPC batches (arrays, protocol 2025-03-26 only) pass through untouched,
//! results included. A `tools/call` result that serde_json cannot read is shaped anyway (lone
//! surrogate escapes replaced by U+FFFD, `NaN`/`Infinity` kept as they came; nesting deeper
//! than 128 levels paged as JSON text); one whose literals the shaper cannot carry passes
//! unshaped with a line on stderr, never as an error.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcp_budget_proxy::relay::RelayError> {
//! use mcp_budget_proxy::relay::{Relay, RelayOptions, Upstream};
//!
//! let upstream = Upstream::new("npx", ["-y", "@modelcontextprotocol/server-everything"]);
//! let exit = Relay::new(RelayOptions::default()).run_stdio(&upstream).await?;
//! std::process::exit(exit.code);
//! # }
//! ```

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::timeout;

mod child;
mod error;
mod from_client;
mod from_server;
mod http;
mod lines;
mod log;
mod protocol;
mod remote;
mod reply;
mod rewrite;
mod route;
mod scan;
mod shaper;
mod shared;
pub mod split;
mod stdio;
mod threads;
mod unparsed;
mod upstream;
mod writer;

pub use child::UpstreamCommand;
pub use error::RelayError;
pub use http::oauth;
pub use http::{HttpUpstream, HttpUpstreamError};
pub use shaper::CallRoute;
pub use shaper::Rewrite;
pub use shaper::Shaper;
pub use shaper::Unchanged;
pub use upstream::Upstream;

use lines::LineReader;
use shared::Shared;
use threads::{BlockingRead, Client, Worker};
use writer::ClientOut;
// The Streamable HTTP server (`crate::serve`) routes the relay's output by the same rules.
pub(crate) use route::id_key;
pub(crate) use scan::Scanner;
// The multi-server proxy (`crate::mux`) reuses the client side's pieces.
pub(crate) use lines::{Frame, LineReader as ClientLines};
pub(crate) use stdio::{client_pipes, restore_blocking, terminated};
pub(crate) use writer::{QUEUE as WRITER_QUEUE, run as write_lines};

/// The default bound on one line, in bytes: 256 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 256 * 1024 * 1024;

/// The default time the server gets to exit after the client closed its end: 5 s.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The default time a request may go without an answer or a progress notification: 10 min.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// How long the relay keeps reading the server's stdout after the server exited (a grandchild
/// may hold the pipe open): 2 s.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

/// How long the relay waits, at the end, for shaping jobs and the client writer: 60 s.
const WRITER_DRAIN: Duration = Duration::from_secs(60);

/// Limits of the relay.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RelayOptions {
    /// The longest line accepted from either side, in bytes (the `\n` not counted). A longer
    /// line is read through without being held, dropped, and answered with an error when it
    /// was a request or a response of a known request. Default [`DEFAULT_MAX_LINE_BYTES`].
    pub max_line_bytes: usize,
    /// How long the server gets to exit after the client closed its end (and the relay closed
    /// the server's stdin) before it is killed. Default [`DEFAULT_SHUTDOWN_GRACE`].
    pub shutdown_grace: Duration,
    /// How long a client's request may wait for the server's answer, counted from when it was
    /// forwarded or from the server's last progress notification for it (its
    /// `_meta.progressToken`). A request past it gets a -32001 error, and a late answer is
    /// dropped. `None`: wait for ever (a hung server then hangs its requests). Default
    /// [`DEFAULT_REQUEST_TIMEOUT`] (10 minutes).
    pub request_timeout: Option<Duration>,
}

impl Default for RelayOptions {
    fn default() -> Self {
        RelayOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
        }
    }
}

/// Why the relay stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopCause {
    /// The server exited on its own (a crash, or its reaction to something).
    UpstreamExited,
    /// The client closed its end, and the server then exited within the grace time.
    ClientClosed,
    /// The client closed its end (or the relay was stopped) and the server did not exit within
    /// the grace time: killed.
    UpstreamKilled,
    /// The relay was told to stop (`run_until`'s future; for `run_stdio`, SIGTERM or SIGHUP),
    /// and the server then exited within the grace time.
    Stopped,
    /// The server closed its stdout and did not exit within the grace time; its stdin was
    /// closed, and it was killed if it did not exit within another grace time.
    UpstreamOutputClosed,
}

/// How the relay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayExit {
    /// The exit code for the proxy: the server's exit code (128 + the signal number when a
    /// signal ended it), or 0 when the relay killed the server after the client had left.
    pub code: i32,
    /// Why it stopped.
    pub cause: StopCause,
}

/// The relay between one client and one upstream server.
pub struct Relay {
    options: RelayOptions,
    shaper: Option<Arc<dyn Shaper>>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("options", &self.options)
            .field("shaping", &self.shaper.is_some())
            .finish()
    }
}

impl Relay {
    /// A relay that forwards everything unchanged (no shaper yet).
    pub fn new(options: RelayOptions) -> Relay {
        Relay {
            options,
            shaper: None,
        }
    }

    /// Shapes `tools/call` and `tools/list` results and answers injected tools with `shaper`.
    pub fn with_shaper(mut self, shaper: Arc<dyn Shaper>) -> Relay {
        self.shaper = Some(shaper);
        self
    }

    /// [`Relay::run`] on the process's stdin and stdout; SIGTERM or SIGHUP (on Unix) stops it
    /// like the client's EOF, so the server is never left behind.
    ///
    /// The thread that reads stdin may outlive the relay, blocked in a read (a thread of its own,
    /// or tokio's blocking thread): shut the runtime down with a timeout
    /// (`Runtime::shutdown_timeout`) after this returns, and exit.
    ///
    /// # Errors
    ///
    /// As [`Relay::run`].
    pub async fn run_stdio(&self, upstream: &Upstream) -> Result<RelayExit, RelayError> {
        // A child behind our own pipes: each direction on a thread of its own.
        let files = match upstream {
            Upstream::Command(_) => threads::client_files(),
            Upstream::Http(_) => None,
        };
        let exit = match (upstream, files) {
            (Upstream::Command(command), Some((input, output))) => {
                // (The stream types are unused with files.)
                let client: Client<stdio::ClientIn, stdio::ClientOut> =
                    Client::Files(input, output);
                self.run_command(command, client, stdio::terminated()).await
            }
            _ => {
                let (client_in, client_out) = stdio::client_pipes();
                self.run_until(upstream, client_in, client_out, stdio::terminated())
                    .await
            }
        };
        stdio::restore_blocking();
        exit
    }

    /// Starts the server and relays between it and the client (`client_in`: what the client
    /// writes; `client_out`: what it reads) until the server is gone.
    ///
    /// Returns once the server has exited (or was killed) and every line owed to the client
    /// was written: the answers the server sent, shaped results, and an error for each request
    /// left unanswered. With an [`Upstream::Http`] server, "started" means its HTTP client is
    /// set up, and the relay runs until the client closes its end (or `stop`); the session is
    /// then ended with an HTTP DELETE (see [`HttpUpstream`]).
    ///
    /// # Errors
    ///
    /// [`RelayError::Spawn`] when the server cannot be started, [`RelayError::Pipes`] when its
    /// stdio cannot be captured, [`RelayError::Wait`] when waiting for it fails,
    /// [`RelayError::HttpClient`] when the HTTP client cannot be built. Bad input from either
    /// side, and a remote server that cannot be reached, are never errors (each request is
    /// answered with a JSON-RPC error instead).
    pub async fn run<I, O>(
        &self,
        upstream: &Upstream,
        client_in: I,
        client_out: O,
    ) -> Result<RelayExit, RelayError>
    where
        I: AsyncRead + Unpin + Send + 'static,
        O: AsyncWrite + Unpin + Send + 'static,
    {
        self.run_until(upstream, client_in, client_out, std::future::pending())
            .await
    }

    /// [`Relay::run`], and when `stop` completes first, shut down as on the client's EOF: the
    /// server's stdin is closed, it gets [`RelayOptions::shutdown_grace`] to exit, then is
    /// killed ([`StopCause::Stopped`]).
    ///
    /// # Errors
    ///
    /// As [`Relay::run`].
    pub async fn run_until<I, O, S>(
        &self,
        upstream: &Upstream,
        client_in: I,
        client_out: O,
        stop: S,
    ) -> Result<RelayExit, RelayError>
    where
        I: AsyncRead + Unpin + Send + 'static,
        O: AsyncWrite + Unpin + Send + 'static,
        S: Future<Output = ()>,
    {
        match upstream {
            Upstream::Command(command) => {
                self.run_command(command, Client::Streams(client_in, client_out), stop)
                    .await
            }
            Upstream::Http(http) => self.run_http(http, client_in, client_out, stop).await,
        }
    }

    /// [`Relay::run_until`] with a child process: the client's side on tasks (its streams) or
    /// on threads (our own stdin and stdout: see [`threads`]).
    async fn run_command<I, O, S>(
        &self,
        upstream: &UpstreamCommand,
        client: Client<I, O>,
        stop: S,
    ) -> Result<RelayExit, RelayError>
    where
        I: AsyncRead + Unpin + Send + 'static,
        O: AsyncWrite + Unpin + Send + 'static,
        S: Future<Output = ()>,
    {
        let mut child = upstream.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(RelayError::Pipes);
        };
        let max = self.options.max_line_bytes;
        let shared = Arc::new(Shared::new(self.shaper.clone(), max));
        // The server's stdin as the threaded relay holds it (closed from here, not dropped).
        let mut blocking_stdin = None;
        let (out, writer, mut client, mut server) = match client {
            Client::Streams(client_in, client_out) => {
                let (out, writer) = ClientOut::queue(client_out);
                let writer = Some(writer);
                let client = Worker::Task(tokio::spawn(from_client::run(
                    LineReader::new(client_in, max),
                    from_client::ToServer::pipe(stdin),
                    Arc::clone(&shared),
                    out.clone(),
                )));
                let server = Worker::Task(tokio::spawn(from_server::run(
                    LineReader::new(stdout, max),
                    Arc::clone(&shared),
                    out.clone(),
                )));
                (out, writer, client, server)
            }
            Client::Files(input, output) => {
                let (out, writer) = (ClientOut::pipe(output), None);
                let Some((stdin, stdout)) = threads::child_files(stdin, stdout) else {
                    let _ = child.start_kill();
                    return Err(RelayError::Pipes);
                };
                let stdin = threads::BlockingStdin::new(stdin);
                blocking_stdin = Some(Arc::clone(&stdin));
                let handle = tokio::runtime::Handle::current();
                let client = Worker::thread(
                    "relay-from-client",
                    handle.clone(),
                    from_client::run(
                        LineReader::new(BlockingRead(input), max),
                        from_client::ToServer::Blocking(stdin),
                        Arc::clone(&shared),
                        out.clone(),
                    ),
                );
                let server = Worker::thread(
                    "relay-from-server",
                    handle,
                    from_server::run(
                        LineReader::new(BlockingRead(stdout), max),
                        Arc::clone(&shared),
                        out.clone(),
                    ),
                );
                let (Some(client), Some(server)) = (client, server) else {
                    let _ = child.start_kill();
                    return Err(RelayError::Pipes);
                };
                (out, writer, client, server)
            }
        };
        // Closes the server's stdin: drops the client task (and the stdin it holds), or closes
        // the threaded relay's pipe.
        let close_stdin = |client: &Worker<from_client::ToServer>| match &blocking_stdin {
            Some(stdin) => stdin.close(),
            None => client.abort(),
        };

        let sweeper = self.options.request_timeout.map(|limit| {
            tokio::spawn(expire_requests(
                Arc::clone(&shared),
                out.clone(),
                limit,
                None,
            ))
        });

        enum First {
            Client,
            Server,
            Exited(std::process::ExitStatus),
            Stopped,
        }
        let first = tokio::select! {
            () = stop => {
                log::warn(format_args!("stopping: closing the upstream server's stdin"));
                close_stdin(&client);
                First::Stopped
            }
            // Dropping what the client task returns closes the server's stdin: only now,
            // so that a server exiting on that is never taken for one that exited first.
            stdin = &mut client => {
                drop(stdin);
                close_stdin(&client);
                First::Client
            }
            _ = &mut server => First::Server,
            status = child.wait() => First::Exited(status.map_err(RelayError::Wait)?),
        };
        let (client_done, server_done) = (
            matches!(first, First::Client | First::Stopped),
            matches!(first, First::Server),
        );
        let grace = self.options.shutdown_grace;
        let (status, cause) = match first {
            First::Exited(status) => (status, StopCause::UpstreamExited),
            // Its stdout closed: usually it is exiting right now.
            First::Server => match timeout(grace, child.wait()).await {
                Ok(status) => (status.map_err(RelayError::Wait)?, StopCause::UpstreamExited),
                Err(_) => {
                    log::warn(format_args!(
                        "the upstream server closed its stdout but did not exit within {grace:?}; closing its stdin"
                    ));
                    close_stdin(&client);
                    let status = match timeout(grace, child.wait()).await {
                        Ok(status) => status,
                        Err(_) => {
                            log::warn(format_args!("killing the upstream server"));
                            let _ = child.start_kill();
                            child.wait().await
                        }
                    };
                    (
                        status.map_err(RelayError::Wait)?,
                        StopCause::UpstreamOutputClosed,
                    )
                }
            },
            First::Client | First::Stopped => match timeout(grace, child.wait()).await {
                Ok(status) => {
                    let cause = if matches!(first, First::Stopped) {
                        StopCause::Stopped
                    } else {
                        StopCause::ClientClosed
                    };
                    (status.map_err(RelayError::Wait)?, cause)
                }
                Err(_) => {
                    log::warn(format_args!(
                        "the upstream server did not exit {grace:?} after its stdin was closed; killing it"
                    ));
                    let _ = child.start_kill();
                    let status = child.wait().await.map_err(RelayError::Wait)?;
                    (status, StopCause::UpstreamKilled)
                }
            },
        };

        // What the server wrote before it exited is still in the pipe: relay it first.
        if !server_done && timeout(DRAIN_AFTER_EXIT, &mut server).await.is_err() {
            shared.stop_server(&server);
        }
        if let Some(sweeper) = sweeper {
            sweeper.abort();
        }
        let why = format!("upstream server exited with {}", child::describe(status));
        if cause == StopCause::UpstreamExited {
            log::warn(format_args!("{why}"));
        }
        answer_orphans(&shared, &out, &why).await;
        if !client_done {
            // (The threaded relay's client thread may still read: it can write no more.)
            close_stdin(&client);
            client.abort();
        }
        out.drain(writer, WRITER_DRAIN).await;
        let code = match cause {
            StopCause::UpstreamKilled => 0,
            _ => child::exit_code(status),
        };
        Ok(RelayExit { code, cause })
    }
}

/// Closes the pending table (later requests are refused) and answers every request still
/// waiting with a -32000 error: "`why` before answering this request (<method>)".
/// Gives up after [`WRITER_DRAIN`] (a client that reads nothing).
async fn answer_orphans(shared: &Shared, out: &ClientOut, why: &str) {
    let orphans = shared.pending().close();
    let answers = async {
        for entry in orphans {
            shared.note_call_error(&entry);
            let message = format!("{why} before answering this request ({})", entry.method);
            let _ = out
                .send_from_task(reply::error_line(
                    &entry.raw_id,
                    reply::CONNECTION_CLOSED,
                    &message,
                ))
                .await;
        }
    };
    if timeout(WRITER_DRAIN, answers).await.is_err() {
        log::warn(format_args!(
            "gave up answering the requests left after {WRITER_DRAIN:?}: the client reads nothing"
        ));
    }
}

/// Answers, with a -32001 error, every request the server has been silent about for `limit`,
/// and names each (its raw id) to `given_up` when there is one (the HTTP transport then
/// cancels it upstream); runs until aborted.
async fn expire_requests(
    shared: Arc<Shared>,
    out: ClientOut,
    limit: Duration,
    given_up: Option<tokio::sync::mpsc::UnboundedSender<Box<[u8]>>>,
) {
    let period = (limit / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let expired = shared.pending().expire(std::time::Instant::now(), limit);
        for entry in expired {
            shared.note_call_error(&entry);
            log::warn(format_args!(
                "the upstream server did not answer {} {} within {limit:?}; answering with an error",
                entry.method,
                log::preview(&entry.raw_id)
            ));
            let message = format!(
                "upstream server did not answer within {} s (mcp-budget --request-timeout)",
                limit.as_secs_f64()
            );
            let line = reply::error_line(&entry.raw_id, reply::REQUEST_TIMEOUT, &message);
            if !out.send_from_task(line).await {
                return;
            }
            if let Some(given_up) = &given_up {
                let _ = given_up.send(entry.raw_id);
            }
        }
    }
}
