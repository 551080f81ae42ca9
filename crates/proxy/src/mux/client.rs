//! The client's messages to the multi-server proxy: answered by the proxy (initialize, the
//! merged lists, the injected tools, ping), routed to one server (a tool, a prompt, a
//! resource), or sent to every server (notifications, `logging/setLevel`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures_util::future::join_all;
use serde_json::{Value, json};

use super::base::{LIST_PAGES, warn};
use super::hub::{Hub, Phase};
use super::merge;
use super::server::bring_up;
use crate::boundary::args_rewrite::Rewrite;
use crate::boundary::tools_list::CallRoute;
use crate::relay::id_key;

const INVALID_PARAMS: i64 = -32602;
const METHOD_NOT_FOUND: i64 = -32601;

/// Handles one message of the client. Requests that wait on servers run on tasks of their
/// own; what is forwarded keeps the client's order.
pub(crate) async fn handle(hub: &Arc<Hub>, message: Value) {
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let id = message.get("id").cloned();
    match (method.as_deref(), id) {
        (Some(method), Some(id)) => request(hub, method, id, message).await,
        (Some(method), None) => notification(hub, method, message).await,
        (None, Some(id)) => response(hub, &id, message).await,
        (None, None) => warn(format_args!(
            "dropped a client message with neither method nor id"
        )),
    }
}

async fn request(hub: &Arc<Hub>, method: &str, id: Value, message: Value) {
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let spawn = |f: fn(Arc<Hub>, Value, Value) -> futures_util::future::BoxFuture<'static, ()>| {
        drop(tokio::spawn(f(Arc::clone(hub), id.clone(), params.clone())));
    };
    match method {
        "initialize" => spawn(|h, i, p| Box::pin(initialize(h, i, p))),
        "ping" => hub.answer(&id, json!({})).await,
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            if params.get("cursor").is_some_and(|c| !c.is_null()) {
                let text = "invalid cursor: the proxy answers every list in one page";
                return hub.fail(&id, INVALID_PARAMS, text).await;
            }
            let hub = Arc::clone(hub);
            let method = method.to_owned();
            drop(tokio::spawn(async move { list(hub, id, &method).await }));
        }
        "tools/call" => call(hub, id, message).await,
        "prompts/get" => by_name(hub, id, message, &["params", "name"]).await,
        "completion/complete" => {
            let kind = params.pointer("/ref/type").and_then(Value::as_str);
            if kind == Some("ref/prompt") {
                by_name(hub, id, message, &["params", "ref", "name"]).await;
            } else {
                let uri = params.pointer("/ref/uri").and_then(Value::as_str);
                by_uri(hub, id, message, uri.map(str::to_owned)).await;
            }
        }
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            let uri = params.get("uri").and_then(Value::as_str).map(str::to_owned);
            by_uri(hub, id, message, uri).await;
        }
        "logging/setLevel" => spawn(|h, i, p| Box::pin(set_level(h, i, p))),
        _ => {
            let text = format!("Method not found: {method} (mcp-budget's multi-server proxy)");
            hub.fail(&id, METHOD_NOT_FOUND, &text).await;
        }
    }
}

/// `initialize`: every running server is initialized with the client's params; the answer
/// merges theirs (`merge::initialize_result`).
async fn initialize(hub: Arc<Hub>, id: Value, params: Value) {
    *hub.init_params
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(params.clone());
    let fresh: Vec<(usize, u64)> = (0..hub.names.len())
        .map(|i| (i, hub.link(i).generation))
        .collect();
    join_all(
        fresh
            .into_iter()
            .map(|(i, generation)| bring_up(Arc::clone(&hub), i, generation)),
    )
    .await;
    // A server started meanwhile (or not started yet: a client that initializes as soon as
    // the proxy runs may come before the supervisors) is initialized by its supervisor: wait
    // for it too.
    let deadline = tokio::time::Instant::now() + hub.init_timeout;
    while (0..hub.names.len()).any(|i| {
        matches!(
            hub.link(i).phase,
            Phase::Starting | Phase::Fresh | Phase::Initializing
        )
    }) && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let ready: Vec<(String, Value)> = (0..hub.names.len())
        .filter_map(|i| match &hub.link(i).phase {
            Phase::Ready(result) => Some((hub.names[i].clone(), result.clone())),
            _ => None,
        })
        .collect();
    for (i, name) in hub.names.iter().enumerate() {
        if !ready.iter().any(|(n, _)| n == name) {
            warn(format_args!(
                "server {name:?} is not ready at initialize: {:?}",
                hub.link(i).phase
            ));
        }
    }
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let result = merge::initialize_result(requested, &ready);
    hub.answer(&id, result).await;
}

/// Every page of `method`'s list from server `index`: its `key` items.
async fn fetch_all(hub: &Hub, index: usize, method: &str, key: &str) -> Result<Vec<Value>, String> {
    let tx = hub.usable(index)?;
    let mut items = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..LIST_PAGES {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let page = hub
            .ask(index, &tx, method, params, hub.init_timeout)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(list) = page.get(key).and_then(Value::as_array) {
            items.extend(list.iter().cloned());
        }
        match page.get("nextCursor") {
            Some(c) if !c.is_null() => cursor = Some(c.clone()),
            _ => return Ok(items),
        }
    }
    warn(format_args!(
        "server {:?}: {method} has more than {LIST_PAGES} pages; the rest is left out",
        hub.names[index]
    ));
    Ok(items)
}

/// The merged list of `method`: every ready server's items, fetched page by page, names of
/// tools and prompts prefixed, resource URIs kept (and remembered as the server's).
async fn list(hub: Arc<Hub>, id: Value, method: &str) {
    let key = match method {
        "tools/list" => "tools",
        "prompts/list" => "prompts",
        "resources/list" => "resources",
        _ => "resourceTemplates",
    };
    let capability = match key {
        "tools" => "tools",
        "prompts" => "prompts",
        _ => "resources",
    };
    let wanted: Vec<usize> = (0..hub.names.len())
        .filter(|&i| match &hub.link(i).phase {
            Phase::Ready(init) => init
                .get("capabilities")
                .is_some_and(|c| c.get(capability).is_some()),
            Phase::Fresh => true,
            _ => false,
        })
        .collect();
    let pages = join_all(wanted.iter().map(|&i| fetch_all(&hub, i, method, key))).await;
    let mut all = Vec::new();
    for (&i, items) in wanted.iter().zip(pages) {
        let name = &hub.names[i];
        let mut items = match items {
            Ok(items) => items,
            Err(e) => {
                warn(format_args!("server {name:?}: {method} failed: {e}"));
                continue;
            }
        };
        match key {
            "tools" => {
                let config = &hub.servers[i].tools_list;
                merge::prepare_tools(&mut items, config, &hub.boundary.settings().encoding);
                merge::prefix_names(&mut items, name, &hub.separator);
            }
            "prompts" => merge::prefix_names(&mut items, name, &hub.separator),
            "resources" => {
                let mut table = hub.table();
                for uri in items
                    .iter()
                    .filter_map(|r| r.get("uri").and_then(Value::as_str))
                {
                    table.resource_owner.insert(uri.to_owned(), i);
                }
            }
            _ => {}
        }
        all.extend(items);
    }
    let mut result = json!({ key: all });
    if key == "tools" {
        let boundary = Arc::clone(&hub.boundary);
        match tokio::task::spawn_blocking(move || boundary.shape_list_result(result, true)).await {
            Ok(shaped) => result = shaped,
            Err(e) => {
                warn(format_args!("shaping tools/list failed: {e}"));
                return hub
                    .fail(&id, -32603, "mcp-budget failed to merge the tool lists")
                    .await;
            }
        }
    }
    hub.answer(&id, result).await;
}

/// `tools/call`: deferred mode's tools and refusals (the boundary's `route_call`), the
/// injected tools (answered here), then a server's tool, called by its own name.
async fn call(hub: &Arc<Hub>, id: Value, mut message: Value) {
    let boundary = Arc::clone(&hub.boundary);
    let mut name = message
        .pointer("/params/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if boundary.may_route(&name) {
        let params = message.get("params").cloned().unwrap_or_default();
        match boundary.route_call(&params) {
            CallRoute::Forward => {}
            CallRoute::Answer(result) => return hub.answer(&id, result).await,
            CallRoute::Rewrite { params, tool } => {
                message["params"] = params;
                name = tool;
            }
        }
    }
    if boundary.answers(&name) {
        let params = message.get("params").cloned().unwrap_or_default();
        let hub = Arc::clone(hub);
        drop(tokio::spawn(async move {
            let answer =
                tokio::task::spawn_blocking(move || boundary.answer_injected(&params)).await;
            match answer {
                Ok(Some(result)) => hub.answer(&id, result).await,
                _ => {
                    hub.fail(
                        &id,
                        -32603,
                        "mcp-budget could not answer this call of its own tool",
                    )
                    .await
                }
            }
        }));
        return;
    }
    let Some((server, tool)) = merge::split(&hub.names, &hub.separator, &name) else {
        let body = json!({"error": "unknown_tool", "tool": name,
            "hint": format!("Tools are named <server>{}<tool>; list them with tools/list.", hub.separator)});
        let result =
            json!({"content": [{"type": "text", "text": body.to_string()}], "isError": true});
        return hub.answer(&id, result).await;
    };
    let tool = tool.to_owned();
    if let Some(rule) = hub.servers[server].tools_list.refusal(&tool) {
        return hub
            .answer(&id, merge::refused(&hub.names[server], &tool, &rule))
            .await;
    }
    if boundary.may_rewrite(&name) {
        let arguments = message
            .pointer("/params/arguments")
            .cloned()
            .unwrap_or_default();
        let full = name.clone();
        let rewritten =
            tokio::task::spawn_blocking(move || boundary.rewrite_call(&full, arguments)).await;
        match rewritten {
            Ok(Rewrite::Arguments(arguments)) => message["params"]["arguments"] = arguments,
            Ok(Rewrite::Answer(result)) => return hub.answer(&id, result).await,
            Ok(Rewrite::Forward) | Err(_) => {}
        }
    }
    message["params"]["name"] = json!(tool);
    hub.forward(server, message, Some(name)).await;
}

/// A request naming a prefixed prompt at `pointer` (`params.name`, `params.ref.name`): sent to
/// its server with the server's own name.
async fn by_name(hub: &Arc<Hub>, id: Value, mut message: Value, path: &[&str]) {
    let pointer: String = path.iter().map(|p| format!("/{p}")).collect();
    let full = message
        .pointer(&pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let Some((server, own)) = merge::split(&hub.names, &hub.separator, &full) else {
        let text = format!(
            "unknown name {full:?}: names are <server>{}<name>",
            hub.separator
        );
        return hub.fail(&id, INVALID_PARAMS, &text).await;
    };
    if let Some(slot) = message.pointer_mut(&pointer) {
        *slot = json!(own);
    }
    hub.forward(server, message, None).await;
}

/// A request about a resource `uri`: sent to the server that listed it; an unknown URI is
/// tried on each ready server in turn (the first answer that is not an error wins).
async fn by_uri(hub: &Arc<Hub>, id: Value, message: Value, uri: Option<String>) {
    let owner = uri
        .as_deref()
        .and_then(|u| hub.table().resource_owner.get(u).copied());
    if let Some(server) = owner {
        return hub.forward(server, message, None).await;
    }
    let hub = Arc::clone(hub);
    drop(tokio::spawn(async move {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let params = message.get("params").cloned().unwrap_or_default();
        let mut last = json!({"code": -32002, "message": format!("Resource not found: {}", uri.unwrap_or_default())});
        for server in 0..hub.names.len() {
            let Ok(tx) = hub.usable(server) else { continue };
            match hub
                .ask(server, &tx, &method, params.clone(), hub.init_timeout)
                .await
            {
                Ok(result) => {
                    if let Some(u) = params.get("uri").and_then(Value::as_str) {
                        hub.table().resource_owner.insert(u.to_owned(), server);
                    }
                    return hub.answer(&id, result).await;
                }
                Err(error) => last = error,
            }
        }
        hub.to_client(&json!({"jsonrpc": "2.0", "id": id, "error": last}))
            .await;
    }));
}

/// `logging/setLevel`: sent to every ready server that logs; answered once all answered.
async fn set_level(hub: Arc<Hub>, id: Value, params: Value) {
    let targets: Vec<usize> = (0..hub.names.len())
        .filter(|&i| match &hub.link(i).phase {
            Phase::Ready(init) => init.pointer("/capabilities/logging").is_some(),
            _ => false,
        })
        .collect();
    join_all(targets.into_iter().map(|i| {
        let hub = Arc::clone(&hub);
        let params = params.clone();
        async move {
            if let Ok(tx) = hub.usable(i) {
                let _ = hub
                    .ask(i, &tx, "logging/setLevel", params, hub.init_timeout)
                    .await;
            }
        }
    }))
    .await;
    hub.answer(&id, json!({})).await;
}

async fn notification(hub: &Arc<Hub>, method: &str, message: Value) {
    match method {
        "notifications/cancelled" => {
            let request = message.pointer("/params/requestId").cloned();
            let Some(request) = request else { return };
            let key = id_key(request.to_string().as_bytes());
            let target = {
                let table = hub.table();
                table.by_client.get(&key).and_then(|proxy_id| {
                    let server = match table.waiting.get(proxy_id)? {
                        super::hub::Waiter::Client { server, .. } => *server,
                        super::hub::Waiter::Internal { .. } => return None,
                    };
                    Some((server, *proxy_id))
                })
            };
            if let Some((server, proxy_id)) = target {
                let mut message = message;
                message["params"]["requestId"] = json!(proxy_id);
                send(hub, server, &message).await;
            }
        }
        "notifications/progress" => {
            let token = message
                .pointer("/params/progressToken")
                .map(|t| id_key(t.to_string().as_bytes()));
            let owner = token.and_then(|t| hub.table().progress_owner.get(&t).copied());
            if let Some(server) = owner {
                send(hub, server, &message).await;
            }
        }
        _ => {
            let initialized = method == "notifications/initialized";
            if initialized {
                hub.client_initialized.store(true, Ordering::SeqCst);
            }
            for server in 0..hub.names.len() {
                if initialized {
                    let mut link = hub.link(server);
                    if link.told_initialized || !matches!(link.phase, Phase::Ready(_)) {
                        continue;
                    }
                    link.told_initialized = true;
                }
                send(hub, server, &message).await;
            }
        }
    }
}

/// The client's answer to a server's request: back to that server, under its own id.
async fn response(hub: &Arc<Hub>, id: &Value, mut message: Value) {
    let asked = id.as_u64().and_then(|n| hub.table().asked.remove(&n));
    let Some(asked) = asked else {
        return warn(format_args!(
            "dropped a client answer to an unknown request {id}"
        ));
    };
    if hub.link(asked.server).generation != asked.generation {
        return; // the server that asked has restarted since
    }
    message["id"] = asked.id;
    send(hub, asked.server, &message).await;
}

/// Sends `message` to `server` if it is connected and reading (dropped otherwise, with a
/// line on stderr when it is not reading: one stuck server never holds up the others).
async fn send(hub: &Hub, server: usize, message: &Value) {
    let tx = hub.link(server).tx.clone();
    if let (Some(tx), Ok(line)) = (tx, serde_json::to_vec(message))
        && tx.try_send(line).is_err()
    {
        warn(format_args!(
            "server {:?} is not reading its input (or has exited): a message to it was dropped",
            hub.names[server]
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Settings, ToolsList};
    use crate::mux::MuxServer;
    use crate::relay::Upstream;
    use std::time::Duration;
    use tokio::sync::mpsc;

    /// An `initialize` that comes before the supervisors have started the servers waits for
    /// them (it was answered at once with no server: a race seen in CI under load).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn initialize_waits_for_servers_not_started_yet() {
        let server = |name: &str| MuxServer {
            name: name.to_owned(),
            upstream: Upstream::new("true", Vec::<String>::new()),
            tools_list: ToolsList::default(),
        };
        let Ok(boundary) = crate::boundary::Boundary::new(Settings::default()) else {
            panic!("a boundary");
        };
        let (out, mut lines) = mpsc::channel(8);
        let hub = Arc::new(Hub::new(
            vec![server("alpha"), server("beta")],
            "__".to_owned(),
            Arc::new(boundary),
            out,
            Duration::from_secs(10),
        ));
        assert!(matches!(hub.link(0).phase, Phase::Starting));
        let asked = tokio::spawn(initialize(
            Arc::clone(&hub),
            json!(0),
            json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
        ));
        tokio::time::sleep(Duration::from_millis(150)).await;
        for i in 0..2 {
            hub.link(i).phase = Phase::Ready(json!({"capabilities": {"tools": {}},
                "serverInfo": {"name": "fixture", "version": "1"}}));
        }
        let _ = asked.await;
        let line = lines.recv().await.unwrap_or_default();
        let answer: Value = serde_json::from_slice(&line).unwrap_or_default();
        assert_eq!(
            answer["result"]["serverInfo"]["title"], "mcp-budget: alpha, beta",
            "{answer}"
        );
    }
}
