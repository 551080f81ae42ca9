//! The multi-server proxy's shared state: each server's connection, the requests in flight
//! both ways (with their id maps), and the lines owed to the client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::base::{MuxServer, warn};
use crate::boundary::Boundary;
use crate::relay::id_key;

/// What a request the proxy sent to a server waits for.
pub(crate) enum Waiter {
    /// A client's request, forwarded: its answer goes back under the client's `id`.
    Client {
        /// The client's id, as sent.
        id: Value,
        /// The server it went to.
        server: usize,
        /// The prefixed tool name of a `tools/call` (its result is shaped).
        call: Option<String>,
        /// When it was forwarded.
        sent_at: Instant,
    },
    /// The proxy's own request (initialize, list pages).
    Internal {
        /// The server it went to.
        server: usize,
        /// Where the `result` (or the `error` object) goes.
        reply: oneshot::Sender<Result<Value, Value>>,
    },
}

impl Waiter {
    fn server(&self) -> usize {
        match self {
            Waiter::Client { server, .. } | Waiter::Internal { server, .. } => *server,
        }
    }
}

/// A server's request to the client, under the proxy's id.
pub(crate) struct Asked {
    pub(crate) server: usize,
    pub(crate) generation: u64,
    /// The server's own id.
    pub(crate) id: Value,
}

/// Where a server stands.
#[derive(Debug, Clone)]
pub(crate) enum Phase {
    /// Its supervisor has not started it yet (the proxy itself is starting): an `initialize`
    /// of the client waits for it as for a server being initialized.
    Starting,
    /// Not running: `why`, and when it is tried again.
    Down { why: String },
    /// Running, not initialized yet (the client has not initialized either).
    Fresh,
    /// `initialize` sent, not answered yet.
    Initializing,
    /// Initialized: its `initialize` result.
    Ready(Value),
    /// Running, but its `initialize` failed: `why`.
    Failed { why: String },
}

/// One server's current connection.
pub(crate) struct Link {
    /// Lines to the server (through its relay); `None` while it is down.
    pub(crate) tx: Option<mpsc::Sender<Vec<u8>>>,
    /// Counts connections: a new process is a new generation.
    pub(crate) generation: u64,
    pub(crate) phase: Phase,
    /// Whether it got `notifications/initialized`.
    pub(crate) told_initialized: bool,
    /// Whether it was ever ready (a later ready is a comeback).
    pub(crate) was_ready: bool,
}

/// Tables guarded together.
#[derive(Default)]
pub(crate) struct Table {
    /// Requests sent to servers, by the proxy's id.
    pub(crate) waiting: HashMap<u64, Waiter>,
    /// The proxy's id of a forwarded client request, by the client id's `id_key`.
    pub(crate) by_client: HashMap<Vec<u8>, u64>,
    /// Servers' requests to the client, by the proxy's id.
    pub(crate) asked: HashMap<u64, Asked>,
    /// Which server listed a resource URI.
    pub(crate) resource_owner: HashMap<String, usize>,
    /// Which server a progress token of a server's request to the client belongs to.
    pub(crate) progress_owner: HashMap<Vec<u8>, usize>,
}

/// The state every task of the multi-server proxy shares.
pub(crate) struct Hub {
    pub(crate) servers: Vec<MuxServer>,
    pub(crate) names: Vec<String>,
    pub(crate) separator: String,
    pub(crate) boundary: Arc<Boundary>,
    pub(crate) out: mpsc::Sender<Vec<u8>>,
    pub(crate) links: Vec<Mutex<Link>>,
    table: Mutex<Table>,
    next_id: AtomicU64,
    /// The client's `initialize` params, once it sent them.
    pub(crate) init_params: Mutex<Option<Value>>,
    pub(crate) client_initialized: AtomicBool,
    pub(crate) closing: AtomicBool,
    pub(crate) init_timeout: Duration,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Hub {
    pub(crate) fn new(
        servers: Vec<MuxServer>,
        separator: String,
        boundary: Arc<Boundary>,
        out: mpsc::Sender<Vec<u8>>,
        init_timeout: Duration,
    ) -> Hub {
        let names = servers.iter().map(|s| s.name.clone()).collect();
        let links = servers
            .iter()
            .map(|_| {
                Mutex::new(Link {
                    tx: None,
                    generation: 0,
                    phase: Phase::Starting,
                    told_initialized: false,
                    was_ready: false,
                })
            })
            .collect();
        Hub {
            servers,
            names,
            separator,
            boundary,
            out,
            links,
            table: Mutex::new(Table::default()),
            next_id: AtomicU64::new(1),
            init_params: Mutex::new(None),
            client_initialized: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            init_timeout,
        }
    }

    pub(crate) fn table(&self) -> MutexGuard<'_, Table> {
        lock(&self.table)
    }

    pub(crate) fn link(&self, server: usize) -> MutexGuard<'_, Link> {
        lock(&self.links[server])
    }

    /// A fresh id for a message the proxy sends (to a server or to the client).
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends a line to the client.
    pub(crate) async fn to_client(&self, message: &Value) {
        match serde_json::to_vec(message) {
            Ok(line) => {
                let _ = self.out.send(line).await;
            }
            Err(e) => warn(format_args!("cannot serialize a message: {e}")),
        }
    }

    /// Answers the client's request `id` with `result`.
    pub(crate) async fn answer(&self, id: &Value, result: Value) {
        self.to_client(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await;
    }

    /// Answers the client's request `id` with a JSON-RPC error.
    pub(crate) async fn fail(&self, id: &Value, code: i64, message: &str) {
        self.to_client(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        )
        .await;
    }

    /// The sender of a server that takes requests now (`Fresh` or `Ready`), or why not.
    pub(crate) fn usable(&self, server: usize) -> Result<mpsc::Sender<Vec<u8>>, String> {
        let link = self.link(server);
        match (&link.phase, &link.tx) {
            (Phase::Ready(_) | Phase::Fresh, Some(tx)) => Ok(tx.clone()),
            (Phase::Down { why } | Phase::Failed { why }, _) => Err(why.clone()),
            (Phase::Initializing, _) => Err("still starting".into()),
            (Phase::Starting, _) => Err("not started yet".into()),
            (_, None) => Err("not connected".into()),
        }
    }

    /// Sends `message` (its `id` replaced by the proxy's) to `server` and waits at most
    /// `limit` for the answer: `Ok(result)`, or `Err(error object)`.
    pub(crate) async fn ask(
        &self,
        server: usize,
        tx: &mpsc::Sender<Vec<u8>>,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, Value> {
        let id = self.next_id();
        let (reply, answer) = oneshot::channel();
        self.table()
            .waiting
            .insert(id, Waiter::Internal { server, reply });
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let sent = match serde_json::to_vec(&message) {
            Ok(line) => matches!(tokio::time::timeout(limit, tx.send(line)).await, Ok(Ok(()))),
            Err(_) => false,
        };
        if !sent {
            self.table().waiting.remove(&id);
            return Err(json!({"code": -32000, "message": "the server is not reading"}));
        }
        match tokio::time::timeout(limit, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(json!({"code": -32000, "message": "the server went away"})),
            Err(_) => {
                self.table().waiting.remove(&id);
                Err(
                    json!({"code": -32001, "message": format!("no answer within {} s", limit.as_secs())}),
                )
            }
        }
    }

    /// Forwards the client's request `message` (an object) to `server` under a proxy id;
    /// `call` is the prefixed tool of a `tools/call`. Answers the client itself when the
    /// server cannot take it.
    pub(crate) async fn forward(&self, server: usize, mut message: Value, call: Option<String>) {
        let client_id = message.get("id").cloned().unwrap_or(Value::Null);
        let tx = match self.usable(server) {
            Ok(tx) => tx,
            Err(why) => return self.refuse(server, &client_id, call.as_deref(), &why).await,
        };
        let id = self.next_id();
        if let Some(object) = message.as_object_mut() {
            object.insert("id".into(), json!(id));
        }
        let key = id_key(client_id.to_string().as_bytes());
        {
            let mut table = self.table();
            table.waiting.insert(
                id,
                Waiter::Client {
                    id: client_id.clone(),
                    server,
                    call: call.clone(),
                    sent_at: Instant::now(),
                },
            );
            table.by_client.insert(key.clone(), id);
        }
        // Never waits: a server that stopped reading its input (256 lines queued) must not
        // hold up the client's messages to the others.
        let sent = match serde_json::to_vec(&message) {
            Ok(line) => tx.try_send(line).is_ok(),
            Err(_) => false,
        };
        if !sent {
            let taken = {
                let mut table = self.table();
                table.by_client.remove(&key);
                table.waiting.remove(&id)
            };
            if taken.is_some() {
                let why = "it is not reading its input";
                self.refuse(server, &client_id, call.as_deref(), why).await;
            }
        }
    }

    /// Answers a request the server cannot take: an `isError` result for a tool call, a
    /// -32000 error for anything else; both name the server.
    pub(crate) async fn refuse(&self, server: usize, id: &Value, call: Option<&str>, why: &str) {
        let name = &self.names[server];
        if call.is_some() {
            self.answer(id, super::merge::unavailable(name, why)).await;
        } else {
            let message = format!("mcp-budget: server {name:?} is unavailable ({why})");
            self.fail(id, -32000, &message).await;
        }
    }

    /// Removes and returns what waits for the answer with the proxy id `id`.
    pub(crate) fn take(&self, id: u64) -> Option<Waiter> {
        let mut table = self.table();
        let waiter = table.waiting.remove(&id)?;
        if let Waiter::Client { id: client, .. } = &waiter {
            table
                .by_client
                .remove(&id_key(client.to_string().as_bytes()));
        }
        Some(waiter)
    }

    /// Removes everything still waiting on `server` (it is gone), and its requests to the
    /// client; returns the waiters.
    pub(crate) fn drop_server(&self, server: usize) -> Vec<Waiter> {
        let mut table = self.table();
        let ids: Vec<u64> = table
            .waiting
            .iter()
            .filter(|(_, w)| w.server() == server)
            .map(|(id, _)| *id)
            .collect();
        let mut left = Vec::new();
        for id in ids {
            if let Some(w) = table.waiting.remove(&id) {
                if let Waiter::Client { id: client, .. } = &w {
                    table
                        .by_client
                        .remove(&id_key(client.to_string().as_bytes()));
                }
                left.push(w);
            }
        }
        table.asked.retain(|_, a| a.server != server);
        table.progress_owner.retain(|_, s| *s != server);
        left
    }

    /// Whether the client sent `initialize` (servers are then initialized as they come up).
    pub(crate) fn init_params(&self) -> Option<Value> {
        lock(&self.init_params).clone()
    }
}
