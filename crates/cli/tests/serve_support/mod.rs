//! The harness of `serve`'s integration tests: the built `mcp-budget serve` on a free local
//! port in front of the fixture server (or any command), its stderr kept, and a small
//! Streamable HTTP client (reqwest) that speaks the transport's POST/GET/DELETE.
#![allow(dead_code)] // each test file uses a part

#[path = "../wait_support/mod.rs"]
mod wait_support;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;

use reqwest::blocking::{Client, RequestBuilder, Response};
use serde_json::{Value, json};

/// `mcp-budget serve` running in the background; killed on drop.
pub struct Serve {
    child: Child,
    pub url: String,
    stderr: Arc<Mutex<String>>,
}

impl Serve {
    /// `mcp-budget serve --listen 127.0.0.1:0 <flags> -- mcp-budget fixture-server`.
    pub fn fixture(flags: &[&str]) -> Serve {
        let bin = env!("CARGO_BIN_EXE_mcp-budget");
        Serve::start(flags, &[bin, "fixture-server"])
    }

    /// `mcp-budget serve --listen 127.0.0.1:0 <flags> -- <upstream...>`.
    pub fn start(flags: &[&str], upstream: &[&str]) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-budget"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(flags)
            .arg("--")
            .args(upstream)
            .env_remove("MCP_BUDGET_AUTH_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mcp-budget serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut reader = BufReader::new(child.stderr.take().expect("stderr"));
        let mut first = String::new();
        let url = loop {
            first.clear();
            let n = reader.read_line(&mut first).expect("read stderr");
            assert!(
                n > 0,
                "serve exited before it listened: {}",
                stderr.lock().unwrap()
            );
            stderr.lock().unwrap().push_str(&first);
            if let Some(at) = first.find("serving ") {
                // A JSON log line (`--log-format json`) ends the URL at its closing quote.
                let rest = first[at + 8..].trim();
                break rest.split('"').next().unwrap_or(rest).to_owned();
            }
        };
        let sink = Arc::clone(&stderr);
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    return;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Serve { child, url, stderr }
    }

    /// The serve process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What serve wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// What serve wrote on stderr, once it holds `needle` (or after 10 s).
    pub fn wait_for_stderr(&self, needle: &str) -> String {
        wait_support::until_it_holds(|| self.stderr(), needle)
    }

    /// A POST of `body` to the endpoint with the headers a client sends.
    pub fn post(&self, session: Option<&str>, body: &Value) -> RequestBuilder {
        let mut req = client()
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        req
    }

    /// initialize + notifications/initialized; the session id.
    pub fn initialize(&self, token: Option<&str>) -> String {
        let mut req = self.post(None, &initialize_body());
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().expect("initialize");
        assert_eq!(
            resp.status(),
            200,
            "initialize: {}",
            resp.text().unwrap_or_default()
        );
        let id = resp
            .headers()
            .get("mcp-session-id")
            .expect("Mcp-Session-Id on the initialize response")
            .to_str()
            .unwrap()
            .to_owned();
        let _ = resp.text();
        let mut note = self.post(
            Some(&id),
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        );
        if let Some(t) = token {
            note = note.bearer_auth(t);
        }
        assert_eq!(note.send().expect("initialized").status(), 202);
        id
    }

    /// A tools/call in `session`; the JSON-RPC response (SSE or JSON).
    pub fn call(
        &self,
        session: &str,
        token: Option<&str>,
        id: u64,
        tool: &str,
        args: Value,
    ) -> Value {
        let body = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}});
        let mut req = self.post(Some(session), &body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        response_of(req.send().expect("tools/call"))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client without a total timeout.
pub fn client() -> Client {
    builder().build().expect("reqwest client")
}

/// A client builder.
pub fn builder() -> reqwest::blocking::ClientBuilder {
    Client::builder()
}

pub fn initialize_body() -> Value {
    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},
        "clientInfo":{"name":"serve-tests","version":"1"}}})
}

/// The JSON-RPC response in a POST's reply: the body (application/json) or the last SSE
/// event's data (text/event-stream).
pub fn response_of(resp: Response) -> Value {
    let sse = resp
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap_or("").starts_with("text/event-stream"));
    let text = resp.text().expect("body");
    if !sse {
        return serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    }
    sse_messages(&text).pop().expect("an SSE event")
}

/// Every SSE event's data in `text`, parsed.
pub fn sse_messages(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
                .collect();
            (!data.is_empty())
                .then(|| serde_json::from_str(&data.join("\n")).expect("event data is JSON"))
        })
        .collect()
}

/// The meta item of a paged tools/call response.
pub fn meta_item(response: &Value) -> Value {
    let content = response["result"]["content"].as_array().expect("content");
    let text = content.last().expect("an item")["text"]
        .as_str()
        .expect("text");
    serde_json::from_str(text).expect("meta item JSON")
}

/// The first text item.
pub fn first_text(response: &Value) -> String {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
