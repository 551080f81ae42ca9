//! A scripted MCP client over a child process's stdin/stdout: newline-delimited JSON-RPC,
//! one request at a time. Enough to drive the fixture server directly or through the proxy.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};

/// How long one request may take before the demo gives up (a debug build pages megabytes).
const REPLY_TIMEOUT: Duration = Duration::from_secs(300);

/// The protocol version the demo's client asks for.
pub(crate) const PROTOCOL_VERSION: &str = "2025-06-18";

/// A running MCP server (or proxy) and the client end of its pipes.
pub(crate) struct RpcClient {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<std::io::Result<String>>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
    /// Notifications received so far (`method` and `params`), in order.
    pub(crate) notifications: Vec<Value>,
    /// Server-to-client requests answered so far (their `method`).
    pub(crate) server_requests: Vec<String>,
}

impl RpcClient {
    /// Starts `program args…` with piped stdin/stdout; its stderr is kept for error messages.
    /// `MCP_BUDGET_*` variables are not passed on: the demo shows the defaults, whatever the
    /// user's environment sets.
    ///
    /// # Errors
    /// When the program cannot be started.
    pub(crate) fn spawn(
        name: &str,
        program: &std::path::Path,
        args: &[&str],
    ) -> anyhow::Result<Self> {
        let mut command = Command::new(program);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("MCP_BUDGET_") {
                command.env_remove(key);
            }
        }
        let mut child = command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {name}: {}", program.display()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow!("{name}: no stdout pipe"))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| anyhow!("{name}: no stderr pipe"))?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) => return,
                    Ok(_) => {
                        if tx.send(Ok(line)).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
        });
        let kept = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&kept);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(mut s) = sink.lock() {
                    // Keep the tail only: enough to explain a failure.
                    if s.len() > 64 * 1024 {
                        s.clear();
                    }
                    s.push_str(&line);
                    s.push('\n');
                }
            }
        });
        Ok(RpcClient {
            name: name.to_owned(),
            stdin: child.stdin.take(),
            child,
            lines: rx,
            stderr: kept,
            next_id: 1,
            notifications: Vec::new(),
            server_requests: Vec::new(),
        })
    }

    fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| anyhow!("{}: stdin closed", self.name))?;
        let mut line = serde_json::to_string(message)?;
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .with_context(|| format!("{}: writing a request{}", self.name, self.stderr_tail()))
    }

    fn stderr_tail(&self) -> String {
        let s = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        if s.trim().is_empty() {
            String::new()
        } else {
            format!("; its stderr:\n{}", s.trim_end())
        }
    }

    /// Sends a request and waits for its response, answering the server's own requests
    /// (`roots/list`) and recording notifications meanwhile. Returns the `result`.
    ///
    /// # Errors
    /// A JSON-RPC error response, a closed pipe, a line that is not JSON, or no answer within
    /// five minutes.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let line = match self.lines.recv_timeout(REPLY_TIMEOUT) {
                Ok(Ok(line)) => line,
                Ok(Err(e)) => bail!("{}: reading: {e}", self.name),
                Err(RecvTimeoutError::Timeout) => {
                    bail!("{}: no answer to {method} in 5 minutes", self.name)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    bail!(
                        "{}: closed its stdout during {method}{}",
                        self.name,
                        self.stderr_tail()
                    )
                }
            };
            let message: Value = serde_json::from_str(&line).with_context(|| {
                format!("{}: a line that is not JSON: {:.200}", self.name, line)
            })?;
            let has_method = message
                .get("method")
                .and_then(Value::as_str)
                .map(str::to_owned);
            match (has_method, message.get("id")) {
                (Some(m), Some(server_id)) => {
                    let server_id = server_id.clone();
                    self.answer_server_request(&m, server_id)?;
                }
                (Some(_), None) => self.notifications.push(message),
                (None, Some(got)) if *got == json!(id) => {
                    if let Some(error) = message.get("error") {
                        bail!("{}: {method} failed: {error}", self.name);
                    }
                    return message.get("result").cloned().ok_or_else(|| {
                        anyhow!("{}: {method}: a response without result", self.name)
                    });
                }
                (None, _) => {} // a response to something else: not ours
            }
        }
    }

    fn answer_server_request(&mut self, method: &str, id: Value) -> anyhow::Result<()> {
        self.server_requests.push(method.to_owned());
        let reply = if method == "roots/list" {
            json!({"jsonrpc": "2.0", "id": id,
                   "result": {"roots": [{"uri": "file:///tmp/mcp-budget-demo", "name": "demo"}]}})
        } else {
            json!({"jsonrpc": "2.0", "id": id,
                   "error": {"code": -32601, "message": format!("the demo client has no {method}")}})
        };
        self.send(&reply)
    }

    /// `initialize` then `notifications/initialized`. Returns the initialize result.
    ///
    /// # Errors
    /// As [`RpcClient::request`].
    pub(crate) fn initialize(&mut self) -> anyhow::Result<Value> {
        let result = self.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"roots": {"listChanged": false}},
                "clientInfo": {"name": "mcp-budget-demo", "version": env!("CARGO_PKG_VERSION")}
            }),
        )?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(result)
    }

    /// `tools/call` of `name` with `arguments`; returns the `result`.
    ///
    /// # Errors
    /// As [`RpcClient::request`].
    pub(crate) fn call_tool(&mut self, name: &str, arguments: Value) -> anyhow::Result<Value> {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// Closes stdin and waits for the process to exit.
    ///
    /// # Errors
    /// When waiting fails.
    pub(crate) fn close(mut self) -> anyhow::Result<ExitStatus> {
        drop(self.stdin.take());
        for _ in 0..100 {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill()?;
        Ok(self.child.wait()?)
    }
}

impl Drop for RpcClient {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
