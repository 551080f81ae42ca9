//! The harness of the proxy's integration tests: a child process with piped stdio, whose
//! stdout lines are read on a thread and handed out with a timeout, and whose stderr is kept.
#![allow(dead_code)] // each test file uses a part

#[path = "../wait_support/mod.rs"]
mod wait_support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long any one expected line may take.
pub const STEP: Duration = Duration::from_secs(10);

pub struct Proxy {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Set when the copy of stderr reached the pipe's end.
    stderr_done: Arc<AtomicBool>,
}

impl Proxy {
    /// `mcp-budget proxy <flags> -- <upstream...>` with piped stdio.
    pub fn start(flags: &[&str], upstream: &[&str]) -> Proxy {
        Self::spawn(
            Command::new(env!("CARGO_BIN_EXE_mcp-budget"))
                .arg("proxy")
                .args(flags)
                .arg("--")
                .args(upstream),
        )
    }

    /// Any command that speaks MCP on stdio (e.g. the fixture server directly).
    pub fn spawn(command: &mut Command) -> Proxy {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the command");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        assert_eq!(line.pop(), Some(b'\n'), "every line ends with a newline");
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut err_pipe = child.stderr.take().expect("stderr");
        let sink = Arc::clone(&stderr);
        let stderr_done = Arc::new(AtomicBool::new(false));
        let done = Arc::clone(&stderr_done);
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .expect("stderr buffer")
                    .extend_from_slice(&buf[..n]);
            }
            done.store(true, Ordering::SeqCst);
        });
        let stdin = child.stdin.take();
        Proxy {
            child,
            stdin,
            lines,
            stderr,
            stderr_done,
        }
    }

    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).expect("write to proxy");
        stdin.write_all(b"\n").expect("write to proxy");
        stdin.flush().expect("flush to proxy");
    }

    pub fn emit(&mut self, lines: &[&str]) {
        self.send(
            &json!({"jsonrpc":"2.0","method":"test/emit","params":{"lines":lines}}).to_string(),
        );
    }

    /// The next line from the proxy's stdout, which must be JSON (stdout carries only JSON-RPC).
    pub fn recv(&self) -> Vec<u8> {
        match self.lines.recv_timeout(STEP) {
            Ok(line) => {
                assert!(
                    serde_json::from_slice::<Value>(&line).is_ok(),
                    "stdout carried a line that is not JSON: {}",
                    String::from_utf8_lossy(&line)
                );
                line
            }
            Err(RecvTimeoutError::Timeout) => panic!(
                "no line from the proxy within {STEP:?}; its stderr: {}",
                self.stderr_text()
            ),
            Err(RecvTimeoutError::Disconnected) => {
                panic!(
                    "the proxy closed its stdout; its stderr: {}",
                    self.stderr_text()
                )
            }
        }
    }

    /// The next line from the proxy's stdout, as it came (JSON of any dialect: `NaN` and
    /// `Infinity` literals are not strict JSON), or `None` when none comes within `limit`.
    pub fn recv_raw_within(&self, limit: Duration) -> Option<Vec<u8>> {
        self.lines.recv_timeout(limit).ok()
    }

    /// The next line from the proxy's stdout, as JSON, waiting at most `limit`.
    pub fn recv_json_within(&self, limit: Duration) -> Value {
        match self.lines.recv_timeout(limit) {
            Ok(line) => serde_json::from_slice(&line).unwrap_or_else(|e| {
                panic!(
                    "stdout carried a line that is not JSON ({e}): {}",
                    String::from_utf8_lossy(&line)
                )
            }),
            Err(e) => panic!(
                "no line from the proxy within {limit:?} ({e}); its stderr: {}",
                self.stderr_text()
            ),
        }
    }

    /// The next line from the proxy's stdout, as JSON, or `None` when none came within `limit`.
    pub fn try_recv_json(&self, limit: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(limit).ok()?;
        Some(serde_json::from_slice(&line).unwrap_or_else(|e| {
            panic!(
                "stdout carried a line that is not JSON ({e}): {}",
                String::from_utf8_lossy(&line)
            )
        }))
    }

    pub fn recv_json(&self) -> Value {
        serde_json::from_slice(&self.recv()).expect("JSON")
    }

    /// The line the upstream reports having received next.
    pub fn received_by_upstream(&self) -> String {
        let msg = self.recv_json();
        assert_eq!(
            msg["method"], "test/received",
            "expected an echo, got {msg}"
        );
        msg["params"]["line"].as_str().expect("line").to_owned()
    }

    /// Sends a marker through the upstream and expects it back next: everything sent before
    /// has been handled, and nothing else came out in between.
    pub fn sync(&mut self, marker: &str) {
        let line =
            format!(r#"{{"jsonrpc":"2.0","method":"sync/marker","params":{{"m":"{marker}"}}}}"#);
        self.send(&line);
        assert_eq!(self.received_by_upstream(), line);
    }

    /// Every line still to come, once the proxy has closed its stdout.
    pub fn lines_left(&self) -> Vec<Vec<u8>> {
        let mut left = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(STEP) {
            left.push(line);
        }
        left
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                // What it wrote last is still being copied (for up to 2 s: a server it
                // started may hold the pipe open longer).
                let copied = Instant::now() + Duration::from_secs(2);
                while !self.stderr_done.load(Ordering::SeqCst) && Instant::now() < copied {
                    thread::sleep(Duration::from_millis(10));
                }
                return status;
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                panic!(
                    "the proxy did not exit within {limit:?}; stderr: {}",
                    self.stderr_text()
                );
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The MCP handshake (protocol 2025-06-18, no client capabilities): `initialize` with id
    /// 0, its response checked, then `notifications/initialized`.
    pub fn initialize(&mut self) {
        self.send(
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-06-18","capabilities":{},
                "clientInfo":{"name":"test","version":"0"}}})
            .to_string(),
        );
        let msg = self.recv_json();
        assert_eq!(msg["id"], 0, "{msg}");
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }

    /// The `result` of a `tools/call` of `tool` with `arguments`, sent with `id`.
    pub fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.send(
            &json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                    "params":{"name":tool,"arguments":arguments}})
            .to_string(),
        );
        let msg = self.recv_json();
        assert_eq!(msg["id"], id, "{msg}");
        msg["result"].clone()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("stderr buffer")).into_owned()
    }

    /// What the proxy wrote on stderr, once it holds `needle` (or after 10 s): a thread of the
    /// test copies the pipe, so a line the proxy wrote before its answer may come after it.
    pub fn wait_for_stderr(&self, needle: &str) -> String {
        wait_support::until_it_holds(|| self.stderr_text(), needle)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The model-visible tokens of a result (DESIGN.md), counted with cl100k_base: its `text`
/// items, the `text` of its embedded `resource` items, and its `structuredContent` when no
/// text item carries it. A structuredContent that a text item carries (a string member equal
/// to the text, or the text's JSON page completed with more members and fewer array
/// elements: [`carries`]) counts once, as that text item plus whatever more tokens it has.
pub fn visible_tokens(result: &Value) -> usize {
    let count = |t: &str| mcp_budget_core::tokens::Encoding::Cl100kBase.count(t);
    let items = result["content"].as_array().cloned().unwrap_or_default();
    let mut texts = Vec::new();
    let mut total = 0;
    for item in &items {
        if item["type"] == "text"
            && let Some(t) = item["text"].as_str()
        {
            total += count(t);
            texts.push(t.to_owned());
        }
        if item["type"] == "resource"
            && let Some(t) = item["resource"]["text"].as_str()
        {
            total += count(t);
        }
    }
    let Some(sc) = result.get("structuredContent") else {
        return total;
    };
    // The meta item inside page 1's structuredContent is a twin of the meta item (client
    // profiles, `mcp_budget_core::wire::STRUCTURED_META_KEY`): counted once, as that item.
    let mut sc = sc.clone();
    if let Value::Object(o) = &mut sc {
        o.shift_remove(mcp_budget_core::wire::STRUCTURED_META_KEY);
    }
    let sc = &sc;
    // `{"page": <a text item's JSON>}` (client profiles: a page whose first item is a JSON
    // array gets it, for Gemini CLI) is a twin of that item.
    if let Value::Object(o) = sc
        && o.len() == 1
        && let Some(page) = o.get("page")
        && texts
            .iter()
            .any(|t| serde_json::from_str::<Value>(t).ok().as_ref() == Some(page))
    {
        return total;
    }
    if let Value::Object(o) = sc
        && o.values()
            .any(|v| v.as_str().is_some_and(|s| texts.iter().any(|t| t == s)))
    {
        return total;
    }
    let sc_tokens = count(&sc.to_string());
    let carried = texts
        .iter()
        .filter_map(|t| {
            let v: Value = serde_json::from_str(t).ok()?;
            carries_within(sc, &v).then(|| sc_tokens.saturating_sub(count(t)))
        })
        .min();
    total + carried.unwrap_or(sc_tokens)
}

/// Whether `sc`, or a value inside it, [`carries`] `page` (a page whose body is rooted below
/// `$` is carried inside its ancestors).
pub fn carries_within(sc: &Value, page: &Value) -> bool {
    carries(sc, page)
        || match sc {
            Value::Object(o) => o.values().any(|v| carries_within(v, page)),
            Value::Array(a) => a.iter().any(|v| carries_within(v, page)),
            _ => false,
        }
}

/// Whether `sc` carries `page` (a JSON page of it): every member the page shows is in `sc`,
/// carried the same way; arrays element by element (`sc` may hold fewer, not none); scalars equal.
pub fn carries(sc: &Value, page: &Value) -> bool {
    match (sc, page) {
        (Value::Object(s), Value::Object(p)) => p
            .iter()
            .all(|(k, pv)| s.get(k).is_some_and(|sv| carries(sv, pv))),
        (Value::Array(s), Value::Array(p)) => {
            s.len() <= p.len()
                && (!s.is_empty() || p.is_empty())
                && s.iter().zip(p).all(|(sv, pv)| carries(sv, pv))
        }
        _ => sc == page,
    }
}
