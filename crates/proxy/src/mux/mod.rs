//! Many MCP servers behind one proxy (`mcp-budget proxy --config servers.toml` with
//! `[servers.<name>]` entries, see [`crate::config::servers`]): the client sees ONE server.
//!
//! Each upstream server runs behind the single-server relay of [`crate::relay`] (unshaped:
//! its child process or HTTP session, line limits, request timeouts, answers for what is left
//! when it exits), spoken to through an in-memory pipe. This module sits between those relays
//! and the client, and parses every message (it re-serializes the ones it passes; unknown
//! fields are kept, the key order of objects may change):
//!
//! - **Names.** A server's tools and prompts are listed as `<server><separator><name>`
//!   (`[mux] prefix_separator`, default `__`: `fs__read_file`) and called back under the
//!   server's own name. Resource URIs are kept as they are: `resources/read`, `subscribe`,
//!   `unsubscribe` and resource completions go to the server whose `resources/list` had the
//!   URI; an URI never listed (a template's) is tried on each server in turn (name order), the
//!   first answer that is not an error wins.
//! - **One boundary.** Every `tools/call` result is shaped by one [`Boundary`] (one store, one
//!   pair of injected tools `read_more`/`query_response`, answered by the proxy whichever server
//!   produced the response). Its `[tools.<name>]` rules and `[tools_list] pinned` globs see the
//!   prefixed names. `[tools_list]` allow/deny and compaction apply per server, on the server's
//!   own names: `[servers.<name>.tools_list]` when given, else the global `[tools_list]`;
//!   `mode = "defer"` of the global `[tools_list]` applies to the merged list.
//! - **Lists.** `tools/list`, `prompts/list`, `resources/list` and `resources/templates/list`
//!   are answered by the proxy in one page (no `nextCursor`): it fetches every page of every
//!   ready server (at most [`LIST_PAGES`] each) and concatenates them in server-name order.
//! - **initialize.** When the client initializes, the proxy initializes every running server
//!   with the client's own params (its requested `protocolVersion`, capabilities, clientInfo)
//!   and answers itself: `protocolVersion` is the OLDEST version the servers answered (dates
//!   order as strings), so the client never speaks a version one of them refused; capabilities
//!   are merged (`tools` always, with `listChanged: true`; `resources`, `prompts`, `logging`,
//!   `completions` when any server has them); `serverInfo.name` is `mcp-budget`; the servers'
//!   `instructions` are joined, each under a `## <server>` heading. A server that does not
//!   answer within the init timeout (10 s) is left out until it restarts. The stateless
//!   protocol (2026-07-28, `server/discover`) is not offered by the multi-server proxy.
//! - **Ids.** Every request the proxy sends a server has an id of the proxy's (a counter), and
//!   every request a server sends the client is renumbered the same way: two servers' ids never
//!   collide, the client's answer goes back to the server that asked under that server's id.
//!   `notifications/cancelled` from the client names the proxy's id towards the server; one from
//!   a server names the proxy's id towards the client. Progress tokens pass unchanged (the
//!   client's reach the server that got the request; a server's request's token routes the
//!   client's progress back to that server).
//! - **Crashes.** A server that exits is isolated: what waited on it is answered (a tool call
//!   with an `isError` result naming the server, other requests with a -32000 error naming it),
//!   its calls are answered the same way while it is down, the others keep working. It is
//!   restarted after [`BACKOFF_MIN`], doubling up to [`BACKOFF_MAX`] (back to the minimum after
//!   [`STABLE_AFTER`] of uptime), initialized with the client's params again; the client gets
//!   `notifications/tools/list_changed` when its tools go away and when they come back (and
//!   `notifications/resources/list_changed`, `notifications/prompts/list_changed` when that
//!   server offers resources or prompts).
//! - **Back-pressure.** The client's messages are never held up by one server: a server with
//!   256 lines queued (it stopped reading its input) gets no more; a request for it is answered
//!   as for a server that is down, a notification for it is dropped (a line on stderr).
//! - Other requests the proxy does not know get -32601; `ping` is answered by the proxy;
//!   `logging/setLevel` goes to every server that logs; notifications of the client go to
//!   every server, those of servers to the client as they came.

mod base;
mod client;
mod hub;
mod merge;
mod server;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use crate::boundary::Boundary;
use crate::config::{ServerEntry, ToolsList};
use crate::relay::{
    ClientLines, Frame, HttpUpstream, HttpUpstreamError, RelayOptions, Upstream, UpstreamCommand,
};
use base::warn;
use hub::Hub;

pub use base::{
    BACKOFF_MAX, BACKOFF_MIN, DEFAULT_INIT_TIMEOUT, LIST_PAGES, MuxServer, STABLE_AFTER,
};

/// A `[servers.<name>]` entry that cannot be turned into a server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MuxError {
    /// The table breaks a rule of `config::servers`.
    #[error(transparent)]
    Config(#[from] crate::config::servers::ServersError),
    /// A remote server's URL or header is bad.
    #[error("[servers.{name}]: {source}")]
    Http {
        /// The server's name.
        name: String,
        /// What is wrong.
        source: HttpUpstreamError,
    },
}

/// The servers of `[servers]` (name order), each with its own `[tools_list]` or `global`.
///
/// # Errors
///
/// [`MuxError`] when the table breaks a rule or an URL or header is bad.
pub fn servers_from_config(
    entries: &BTreeMap<String, ServerEntry>,
    separator: &str,
    global: &ToolsList,
) -> Result<Vec<MuxServer>, MuxError> {
    crate::config::servers::check(entries, separator)?;
    let mut servers = Vec::with_capacity(entries.len());
    for (name, entry) in entries {
        let upstream = match (&entry.command, &entry.url) {
            (Some(command), _) => {
                let mut c = UpstreamCommand::new(command, &entry.args);
                for (k, v) in &entry.env {
                    c = c.env(k, v);
                }
                Upstream::Command(c)
            }
            (None, Some(url)) => {
                let http = |source| MuxError::Http {
                    name: name.clone(),
                    source,
                };
                let mut h = HttpUpstream::new(url).map_err(http)?;
                for (k, v) in &entry.headers {
                    h.set_header(k, v).map_err(http)?;
                }
                if let Some(oauth) = &entry.oauth {
                    h.set_oauth(h.oauth().clone().with_file(oauth));
                }
                Upstream::Http(h)
            }
            (None, None) => {
                return Err(
                    crate::config::servers::ServersError::Transport { name: name.clone() }.into(),
                );
            }
        };
        servers.push(MuxServer {
            name: name.clone(),
            upstream,
            tools_list: entry.tools_list.clone().unwrap_or_else(|| global.clone()),
        });
    }
    Ok(servers)
}

/// The global `[tools_list]` as the multi-server proxy's boundary must see it: allow/deny and
/// compaction are applied per server by the proxy (on the servers' own names), so only `mode`
/// and `pinned` are left to the boundary.
pub fn boundary_tools_list(global: &ToolsList) -> ToolsList {
    ToolsList {
        mode: global.mode,
        pinned: global.pinned.clone(),
        ..ToolsList::default()
    }
}

/// The multi-server proxy.
pub struct Mux {
    servers: Vec<MuxServer>,
    separator: String,
    boundary: Arc<Boundary>,
    options: RelayOptions,
    init_timeout: Duration,
}

impl std::fmt::Debug for Mux {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mux")
            .field("servers", &self.servers)
            .field("separator", &self.separator)
            .finish_non_exhaustive()
    }
}

impl Mux {
    /// The proxy for `servers`, their names joined to their tools' by `separator`; results
    /// shaped by `boundary` (built with [`boundary_tools_list`] as its `[tools_list]`); each
    /// server's relay with `options`.
    pub fn new(
        servers: Vec<MuxServer>,
        separator: impl Into<String>,
        boundary: Arc<Boundary>,
        options: RelayOptions,
    ) -> Mux {
        Mux {
            servers,
            separator: separator.into(),
            boundary,
            options,
            init_timeout: DEFAULT_INIT_TIMEOUT,
        }
    }

    /// [`Mux::run`] on the process's stdin and stdout; SIGTERM or SIGHUP stops it like the
    /// client's EOF.
    pub async fn run_stdio(&self) {
        let (client_in, client_out) = crate::relay::client_pipes();
        self.run_until(client_in, client_out, crate::relay::terminated())
            .await;
        crate::relay::restore_blocking();
    }

    /// Serves the client (`client_in`: what it writes; `client_out`: what it reads) until it
    /// closes its end or `stop` completes; then closes every server's input and waits for
    /// them (each relay's shutdown grace).
    pub async fn run_until<I, O, S>(&self, client_in: I, client_out: O, stop: S)
    where
        I: AsyncRead + Unpin + Send + 'static,
        O: AsyncWrite + Unpin + Send + 'static,
        S: Future<Output = ()>,
    {
        let (out, queue) = mpsc::channel(crate::relay::WRITER_QUEUE);
        let writer = tokio::spawn(crate::relay::write_lines(client_out, queue));
        let hub = Arc::new(Hub::new(
            self.servers.clone(),
            self.separator.clone(),
            Arc::clone(&self.boundary),
            out,
            self.init_timeout,
        ));
        let supervisors: Vec<_> = (0..self.servers.len())
            .map(|i| tokio::spawn(server::supervise(Arc::clone(&hub), i, self.options.clone())))
            .collect();
        let max = self.options.max_line_bytes;
        tokio::select! {
            () = read_client(Arc::clone(&hub), ClientLines::new(client_in, max)) => {}
            () = stop => warn(format_args!("stopping: closing the upstream servers' input")),
        }
        hub.closing.store(true, Ordering::SeqCst);
        for i in 0..self.servers.len() {
            hub.link(i).tx = None;
        }
        let wait = self.options.shutdown_grace * 2 + Duration::from_secs(1);
        for s in supervisors {
            if tokio::time::timeout(wait, s).await.is_err() {
                warn(format_args!("a server did not stop in time"));
            }
        }
        drop(hub);
        let _ = tokio::time::timeout(Duration::from_secs(60), writer).await;
    }
}

/// Reads the client's messages until its EOF.
async fn read_client<I: AsyncRead + Unpin>(hub: Arc<Hub>, mut lines: ClientLines<I>) {
    loop {
        let frame = match lines.next_frame().await {
            Ok(frame) => frame,
            Err(e) => {
                warn(format_args!("cannot read from the client: {e}"));
                return;
            }
        };
        let line = match frame {
            Frame::Eof => return,
            Frame::TooLong { bytes, scan } => {
                warn(format_args!(
                    "dropped a client line of {bytes} bytes: over the limit"
                ));
                if let (Some(id), false) = (scan.id, scan.has_outcome) {
                    let id: Value = serde_json::from_slice(&id).unwrap_or(Value::Null);
                    hub.fail(
                        &id,
                        -32600,
                        "request exceeds the proxy's limit per line (mcp-budget --max-line-bytes)",
                    )
                    .await;
                }
                continue;
            }
            Frame::Line(line) | Frame::Unterminated(line) => line,
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(&line) {
            Ok(message @ Value::Object(_)) => client::handle(&hub, message).await,
            Ok(Value::Array(_)) => {
                hub.fail(
                    &Value::Null,
                    -32600,
                    "batches are not supported by the multi-server proxy",
                )
                .await;
            }
            Ok(_) => {
                hub.fail(
                    &Value::Null,
                    -32600,
                    "Invalid Request: not a JSON-RPC 2.0 message",
                )
                .await
            }
            Err(_) => {
                hub.fail(
                    &Value::Null,
                    -32700,
                    "Parse error: the request is not valid JSON",
                )
                .await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ListMode;

    #[test]
    fn entries_become_servers_with_their_own_or_the_global_tools_list() {
        let text = "[servers.b]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { X-Key = \"k\" }\n\
                    [servers.a]\ncommand = \"srv\"\nargs = [\"-v\"]\nenv = { K = \"v\" }\n\
                    [servers.a.tools_list]\ndeny = [\"x\"]\n";
        let entries: BTreeMap<String, ServerEntry> =
            toml::from_str::<BTreeMap<String, BTreeMap<String, ServerEntry>>>(text)
                .unwrap()
                .remove("servers")
                .unwrap();
        let global: ToolsList =
            toml::from_str("allow = [\"y\"]\nmode = \"defer\"\npinned = [\"a__y\"]").unwrap();
        let servers = servers_from_config(&entries, "__", &global).unwrap();
        assert_eq!(
            servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!(matches!(servers[0].upstream, Upstream::Command(_)));
        assert_eq!(servers[0].tools_list.deny, ["x"]);
        assert!(matches!(servers[1].upstream, Upstream::Http(_)));
        assert_eq!(servers[1].tools_list, global);
        // The boundary keeps only what applies to the merged list.
        let b = boundary_tools_list(&global);
        assert_eq!(
            (b.mode, b.pinned.clone()),
            (ListMode::Defer, vec!["a__y".to_owned()])
        );
        assert!(b.allow.is_empty());
        let bad: BTreeMap<String, ServerEntry> = BTreeMap::from([(
            "w".to_owned(),
            ServerEntry {
                url: Some("ftp://x".into()),
                ..ServerEntry::default()
            },
        )]);
        assert!(matches!(
            servers_from_config(&bad, "__", &global),
            Err(MuxError::Http { .. })
        ));
    }
}
