//! Helpers of the integration tests: a server and rmcp's own client over an in-memory pipe,
//! a raw JSON-RPC client for what rmcp's typed client would not show, token counts.

#![allow(dead_code, unreachable_pub)]

use mcp_budget_core::tokens::Encoding;
use rmcp::service::RunningService;
use rmcp::{RoleClient, RoleServer, Service, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// The budget of these tests, in tokens.
pub const BUDGET: usize = 2_000;

/// `server` behind a budget of [`BUDGET`] tokens.
pub fn budgeted<S: Service<RoleServer>>(server: S) -> mcp_budget_rmcp::Budgeted<S> {
    mcp_budget_rmcp::Budget::new()
        .max_tokens(BUDGET)
        .wrap(server)
        .expect("default settings")
}

/// rmcp's client (`()`) connected to `server` over a duplex pipe; the server runs on a task.
pub async fn connect<S: Service<RoleServer>>(server: S) -> RunningService<RoleClient, ()> {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_end).await.expect("initialize")
}

/// Model-visible tokens of a CallToolResult (wire JSON): its `text` items, cl100k_base.
pub fn visible_tokens(result: &Value) -> usize {
    texts(result)
        .iter()
        .map(|t| Encoding::Cl100kBase.count(t))
        .sum()
}

/// The `text` of every text item.
pub fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["text"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The meta item (the last text item, when it is the layer's JSON with `truncated`).
pub fn meta_item(result: &Value) -> Option<Value> {
    let last = texts(result).pop()?;
    let v: Value = serde_json::from_str(&last).ok()?;
    (v.get("truncated") == Some(&Value::Bool(true))).then_some(v)
}

/// A JSON-RPC client that writes and reads raw lines: what goes over the wire, unknown
/// members and all.
pub struct Raw {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    write: WriteHalf<DuplexStream>,
    next_id: u64,
}

impl Raw {
    /// Connects to `server` (running on a task) and completes initialize (protocol
    /// 2025-11-25).
    pub async fn connect<S: Service<RoleServer>>(server: S) -> Raw {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_end).await {
                let _ = running.waiting().await;
            }
        });
        let (read, write) = tokio::io::split(client_end);
        let mut raw = Raw {
            lines: BufReader::new(read).lines(),
            write,
            next_id: 1,
        };
        let init = raw
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}),
            )
            .await;
        assert!(init.get("result").is_some(), "initialize: {init}");
        raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        raw
    }

    /// Writes one JSON-RPC message and does not wait for an answer.
    pub async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.write.write_all(line.as_bytes()).await.expect("write");
        self.write.flush().await.expect("flush");
    }

    /// Sends a request and returns its response (the whole JSON-RPC message).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .expect("read")
                .expect("a response");
            let message: Value = serde_json::from_str(&line).expect("JSON-RPC");
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
        }
    }

    /// `tools/call` of `name` with `arguments`: its `result`.
    pub async fn call(&mut self, name: &str, arguments: Value) -> Value {
        let response = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        response
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("tools/call {name}: {response}"))
    }
}
