//! One upstream server of the multi-server proxy: its relay (the single-server relay of
//! `crate::relay`, unshaped, talking to the proxy through an in-memory pipe), restarted with
//! exponential backoff when it ends, and the lines it sends the client.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::base::{BACKOFF_MAX, BACKOFF_MIN, STABLE_AFTER, warn};
use super::hub::{Asked, Hub, Phase, Waiter};
use crate::relay::{Relay, RelayOptions, id_key};

/// Bytes buffered in each direction of the pipe between the proxy and a server's relay.
const PIPE_BYTES: usize = 1024 * 1024;

/// Runs server `index` until the proxy closes: starts its relay, initializes it when the
/// client has, and after it ends waits (doubling from [`BACKOFF_MIN`] to [`BACKOFF_MAX`],
/// back to the minimum after [`STABLE_AFTER`] of uptime) and starts it again.
pub(crate) async fn supervise(hub: Arc<Hub>, index: usize, options: RelayOptions) {
    let mut delay = BACKOFF_MIN;
    let name = hub.names[index].clone();
    loop {
        let started = Instant::now();
        let (proxy_end, relay_end) = tokio::io::duplex(PIPE_BYTES);
        let (relay_in, relay_out) = tokio::io::split(relay_end);
        let (from_relay, to_relay) = tokio::io::split(proxy_end);
        let (tx, rx) = mpsc::channel::<Vec<u8>>(crate::relay::WRITER_QUEUE);
        let writer = tokio::spawn(write_lines(to_relay, rx));
        let upstream = hub.servers[index].upstream.clone();
        let relay = Relay::new(options.clone());
        let run = tokio::spawn(async move { relay.run(&upstream, relay_in, relay_out).await });
        let generation = {
            let mut link = hub.link(index);
            link.generation += 1;
            link.tx = Some(tx.clone());
            link.phase = Phase::Fresh;
            link.told_initialized = false;
            link.generation
        };
        drop(tx);
        let reader = tokio::spawn(read_server(Arc::clone(&hub), index, generation, from_relay));
        if hub.init_params().is_some() {
            drop(tokio::spawn(bring_up(Arc::clone(&hub), index, generation)));
        }
        let why = match run.await {
            Ok(Ok(exit)) => format!("exited with code {} ({:?})", exit.code, exit.cause),
            Ok(Err(e)) => format!("could not start: {e}"),
            Err(e) => format!("its relay failed: {e}"),
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
        writer.abort();
        let closing = hub.closing.load(Ordering::SeqCst);
        if started.elapsed() >= STABLE_AFTER {
            delay = BACKOFF_MIN;
        }
        let why = if closing {
            why
        } else {
            format!("{why}; restarting in {:.1} s", delay.as_secs_f64())
        };
        if !closing {
            warn(format_args!("server {name:?} {why}"));
        }
        gone(&hub, index, &why).await;
        if closing {
            return;
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(BACKOFF_MAX);
        if hub.closing.load(Ordering::SeqCst) {
            return;
        }
    }
}

/// Marks server `index` down, answers what still waited on it, and tells the client its
/// lists changed (see [`tell_lists_changed`]).
async fn gone(hub: &Hub, index: usize, why: &str) {
    // Its `initialize` result, when it was ready.
    let initialized = {
        let mut link = hub.link(index);
        link.tx = None;
        let down = Phase::Down {
            why: why.to_owned(),
        };
        match std::mem::replace(&mut link.phase, down) {
            Phase::Ready(result) => Some(result),
            _ => None,
        }
    };
    for waiter in hub.drop_server(index) {
        match waiter {
            Waiter::Internal { reply, .. } => {
                let _ = reply.send(Err(json!({"code": -32000, "message": why})));
            }
            Waiter::Client { id, call, .. } => {
                hub.refuse(index, &id, call.as_deref(), why).await;
            }
        }
    }
    if let Some(result) = initialized
        && !hub.closing.load(Ordering::SeqCst)
    {
        tell_lists_changed(hub, &result).await;
    }
}

/// Tells the client that the merged lists changed because a server went away or came back
/// (`initialize_result`: that server's `initialize` result): `notifications/tools/list_changed`
/// always, `notifications/resources/list_changed` and `notifications/prompts/list_changed`
/// when the server offers resources or prompts (the merged capabilities then promise
/// `listChanged` for them; MCP 2025-11-25, "Server Features": List Changed Notification).
async fn tell_lists_changed(hub: &Hub, initialize_result: &Value) {
    let offers = |feature: &str| {
        initialize_result
            .get("capabilities")
            .and_then(|c| c.get(feature))
            .is_some_and(Value::is_object)
    };
    hub.to_client(&json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
        .await;
    for feature in ["resources", "prompts"] {
        if offers(feature) {
            let method = format!("notifications/{feature}/list_changed");
            hub.to_client(&json!({"jsonrpc": "2.0", "method": method}))
                .await;
        }
    }
}

/// Initializes server `index` (connection `generation`) with the client's `initialize`
/// params; then it is ready (or failed). A comeback is announced to the client
/// ([`tell_lists_changed`]).
pub(crate) async fn bring_up(hub: Arc<Hub>, index: usize, generation: u64) {
    let Some(params) = hub.init_params() else {
        return;
    };
    let tx = {
        let mut link = hub.link(index);
        if link.generation != generation || !matches!(link.phase, Phase::Fresh) {
            return;
        }
        let Some(tx) = link.tx.clone() else { return };
        link.phase = Phase::Initializing;
        tx
    };
    let answer = hub
        .ask(index, &tx, "initialize", params, hub.init_timeout)
        .await;
    let tell = hub.client_initialized.load(Ordering::SeqCst);
    let comeback = {
        let mut link = hub.link(index);
        if link.generation != generation {
            return;
        }
        match answer {
            Ok(result) => {
                let comeback = link.was_ready.then(|| result.clone());
                link.phase = Phase::Ready(result);
                link.told_initialized = tell;
                link.was_ready = true;
                comeback
            }
            Err(error) => {
                let why = format!("initialize failed: {error}");
                warn(format_args!("server {:?}: {why}", hub.names[index]));
                link.phase = Phase::Failed { why };
                return;
            }
        }
    };
    if tell {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let _ = tx.send(note.to_string().into_bytes()).await;
    }
    if let Some(result) = comeback {
        tell_lists_changed(&hub, &result).await;
    }
}

/// Writes each queued line and its `\n`; shuts the pipe down at the end, which the relay
/// reads as the client's EOF (it then closes the server's stdin).
async fn write_lines<W: AsyncWrite + Unpin>(mut out: W, mut queue: mpsc::Receiver<Vec<u8>>) {
    while let Some(mut line) = queue.recv().await {
        line.push(b'\n');
        if out.write_all(&line).await.is_err() {
            return;
        }
        if queue.is_empty() && out.flush().await.is_err() {
            return;
        }
    }
    let _ = out.shutdown().await;
}

/// Reads what server `index` (connection `generation`) sends through its relay until the
/// relay ends.
async fn read_server<R: tokio::io::AsyncRead + Unpin>(
    hub: Arc<Hub>,
    index: usize,
    generation: u64,
    input: R,
) {
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let end = line.len() - usize::from(line.last() == Some(&b'\n'));
        if line[..end].iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // A long result is read on two threads (`split`: the same value as one pass).
        let parsed = crate::relay::split::from_slice(&mut line[..end]);
        let text = &line[..end];
        match parsed {
            Ok(Value::Object(message)) => {
                from_server(&hub, index, generation, Value::Object(message), text).await;
            }
            _ => warn(format_args!(
                "server {:?}: dropped a line that is not a JSON-RPC object",
                hub.names[index]
            )),
        }
    }
}

/// One message of server `index`: an answer to the proxy's request, a request to the client
/// (its id remapped), or a notification.
async fn from_server(hub: &Arc<Hub>, index: usize, generation: u64, message: Value, raw: &[u8]) {
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id");
    match (method, id) {
        (Some(_), Some(id)) => {
            let proxy_id = hub.next_id();
            let mut message = message.clone();
            {
                let mut table = hub.table();
                table.asked.insert(
                    proxy_id,
                    Asked {
                        server: index,
                        generation,
                        id: id.clone(),
                    },
                );
                if let Some(token) = message
                    .get("params")
                    .and_then(|p| p.get("_meta"))
                    .and_then(|m| m.get("progressToken"))
                {
                    let key = id_key(token.to_string().as_bytes());
                    table.progress_owner.insert(key, index);
                }
            }
            message["id"] = json!(proxy_id);
            hub.to_client(&message).await;
        }
        (Some("notifications/cancelled"), None) => {
            // The server gives up a request of its own: name it by the proxy's id.
            let request = message.get("params").and_then(|p| p.get("requestId"));
            let found = request.and_then(|r| {
                hub.table()
                    .asked
                    .iter()
                    .find(|(_, a)| a.server == index && &a.id == r)
                    .map(|(k, _)| *k)
            });
            if let Some(proxy_id) = found {
                hub.table().asked.remove(&proxy_id);
                let mut message = message.clone();
                message["params"]["requestId"] = json!(proxy_id);
                hub.to_client(&message).await;
            }
        }
        (Some(_), None) => {
            // Progress, logging, list_changed, resources/updated: as they came.
            let _ = hub.out.send(raw.to_vec()).await;
        }
        (None, Some(id)) => {
            let Some(proxy_id) = id.as_u64() else {
                return warn(format_args!(
                    "server {:?} answered an id the proxy never sent",
                    hub.names[index]
                ));
            };
            let Some(waiter) = hub.take(proxy_id) else {
                return;
            };
            answered(hub, index, waiter, message).await;
        }
        (None, None) => warn(format_args!(
            "server {:?}: dropped a message with neither method nor id",
            hub.names[index]
        )),
    }
}

/// Routes a server's answer to whoever waited for it.
async fn answered(hub: &Arc<Hub>, index: usize, waiter: Waiter, mut message: Value) {
    match waiter {
        Waiter::Internal { reply, .. } => {
            let error = message.get("error").cloned();
            let outcome = match (message.get_mut("result"), error) {
                (Some(result), _) => Ok(result.take()),
                (None, Some(error)) => Err(error),
                (None, None) => Err(json!({"code": -32603, "message": "neither result nor error"})),
            };
            let _ = reply.send(outcome);
        }
        Waiter::Client {
            id, call, sent_at, ..
        } => {
            message["id"] = id.clone();
            if let Some(error) = message.get_mut("error") {
                // The relay's own errors (the server exited, timed out) name the server.
                let code = error.get("code").and_then(Value::as_i64);
                if matches!(code, Some(-32000 | -32001))
                    && let Some(text) = error.get("message").and_then(Value::as_str)
                {
                    error["message"] = json!(format!("server {:?}: {text}", hub.names[index]));
                }
                if let Some(tool) = call {
                    let ms = u64::try_from(sent_at.elapsed().as_millis()).unwrap_or(u64::MAX);
                    hub.boundary.note_call_error(&tool, ms);
                }
                return hub.to_client(&message).await;
            }
            let (Some(tool), Some(result)) = (call, message.get_mut("result")) else {
                return hub.to_client(&message).await;
            };
            let result = result.take();
            let ms = u64::try_from(sent_at.elapsed().as_millis()).unwrap_or(u64::MAX);
            let hub = Arc::clone(hub);
            drop(tokio::spawn(async move {
                let boundary = Arc::clone(&hub.boundary);
                let shaped = tokio::task::spawn_blocking(move || {
                    boundary.shape_call_result(&tool, result, ms)
                })
                .await;
                match shaped {
                    Ok(result) => message["result"] = result,
                    Err(e) => {
                        warn(format_args!("shaping a result failed: {e}"));
                        message = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603,
                            "message": "mcp-budget failed to shape this result (see its stderr)"}});
                    }
                }
                hub.to_client(&message).await;
            }));
        }
    }
}
