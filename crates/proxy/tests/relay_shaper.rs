//! The relay's side of the seam with the shaper, with a recording mock shaper and `cat` as the
//! upstream server: whatever the client writes comes back from the "server", so a test makes
//! the server answer a request by writing the answer itself (it passes the client → server
//! path as a client's response, and comes back as the server's).

#![cfg(unix)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_budget_proxy::relay::{
    Relay, RelayExit, RelayOptions, Rewrite, Shaper, StopCause, Upstream,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;
use tokio::time::timeout;

/// What the mock saw: (tool or "list", upstream_ms or first_page as 0/1).
#[derive(Default)]
struct Mock {
    seen: Mutex<Vec<(String, u64)>>,
}

impl Shaper for Mock {
    fn may_answer(&self, tool: &str) -> bool {
        matches!(tool, "read_more" | "explode")
    }

    fn answer_injected(&self, params: &Value) -> Option<Value> {
        match params["name"].as_str() {
            Some("read_more") => Some(json!({"content": [{"type": "text", "text": "local page"}]})),
            Some("explode") => panic!("the mock's injected tool panics"),
            _ => None,
        }
    }

    fn shape_call_result(&self, tool: &str, result: Value, upstream_ms: u64) -> Value {
        if tool == "panics" {
            panic!("the mock's shaping panics");
        }
        if tool == "slow" {
            std::thread::sleep(Duration::from_millis(300));
        }
        if tool == "same" {
            return result;
        }
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((tool.to_owned(), upstream_ms));
        }
        json!({"shaped": true, "tool": tool, "bytes": result.to_string().len()})
    }

    fn shape_list_result(&self, result: Value, first_page: bool) -> Value {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(("list".to_owned(), u64::from(first_page)));
        }
        json!({"tools": result["tools"], "first_page": first_page})
    }

    fn may_rewrite(&self, tool: &str) -> bool {
        tool.starts_with("rw_")
    }

    fn rewrite_call(&self, tool: &str, arguments: Value) -> Rewrite {
        match tool {
            "rw_args" => Rewrite::Arguments(json!({"got": arguments, "x": 2})),
            "rw_deny" => Rewrite::Answer(
                json!({"content": [{"type": "text", "text": "denied"}], "isError": true}),
            ),
            "rw_slow" => {
                std::thread::sleep(Duration::from_millis(300));
                Rewrite::Arguments(json!({"slow": true}))
            }
            _ => Rewrite::Forward,
        }
    }
}

struct Client {
    to_relay: DuplexStream,
    from_relay: Lines<BufReader<DuplexStream>>,
    relay: JoinHandle<Result<RelayExit, mcp_budget_proxy::relay::RelayError>>,
    mock: Arc<Mock>,
}

impl Client {
    fn start() -> Client {
        let (to_relay, relay_in) = tokio::io::duplex(1 << 16);
        let (relay_out, from_relay) = tokio::io::duplex(1 << 16);
        let mock = Arc::new(Mock::default());
        let relay =
            Relay::new(RelayOptions::default()).with_shaper(Arc::clone(&mock) as Arc<dyn Shaper>);
        let relay = tokio::spawn(async move {
            relay
                .run(
                    &Upstream::new("cat", Vec::<String>::new()),
                    relay_in,
                    relay_out,
                )
                .await
        });
        Client {
            to_relay,
            from_relay: BufReader::new(from_relay).lines(),
            relay,
            mock,
        }
    }

    async fn send(&mut self, line: &str) {
        self.to_relay
            .write_all(line.as_bytes())
            .await
            .expect("write");
        self.to_relay.write_all(b"\n").await.expect("write");
    }

    async fn recv(&mut self) -> String {
        match timeout(Duration::from_secs(10), self.from_relay.next_line()).await {
            Ok(Ok(Some(line))) => line,
            other => panic!("no line from the relay: {other:?}"),
        }
    }

    /// Sends a request and reads back cat's echo of it (a request, forwarded unchanged).
    async fn request(&mut self, line: &str) {
        self.send(line).await;
        assert_eq!(self.recv().await, line);
    }

    async fn finish(mut self) -> RelayExit {
        drop(self.to_relay.shutdown().await);
        drop(self.to_relay);
        let rest = timeout(Duration::from_secs(10), self.from_relay.next_line()).await;
        assert!(
            matches!(rest, Ok(Ok(None))),
            "the relay closes its output with nothing more: {rest:?}"
        );
        match timeout(Duration::from_secs(10), self.relay).await {
            Ok(Ok(Ok(exit))) => exit,
            other => panic!("the relay did not end well: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shaped_results_are_spliced_into_the_server_line() {
    let mut c = Client::start();
    c.request(r#"{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"grep"}}"#)
        .await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    c.send(r#"{"jsonrpc":"2.0", "id" : 1.0 ,"result":{"content":[]},"_meta":{"z":[1.50]}}"#)
        .await;
    assert_eq!(
        c.recv().await,
        r#"{"jsonrpc":"2.0", "id" : 1.0 ,"result":{"shaped":true,"tool":"grep","bytes":14},"_meta":{"z":[1.50]}}"#
    );
    let seen = c.mock.seen.lock().map(|s| s.clone()).unwrap_or_default();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, "grep");
    assert!(
        seen[0].1 >= 150,
        "upstream_ms measures the server's time: {}",
        seen[0].1
    );
    let exit = c.finish().await;
    assert_eq!((exit.code, exit.cause), (0, StopCause::ClientClosed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_results_are_shaped_off_the_reader_and_others_overtake_them() {
    let mut c = Client::start();
    c.request(r#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"slow"}}"#)
        .await;
    let text = "x".repeat(2_000_000);
    let big = json!({"jsonrpc": "2.0", "id": "big", "result": {"content": [{"type": "text", "text": text}]}});
    c.send(&big.to_string()).await;
    let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"behind"}}"#;
    c.send(note).await;
    // The notification behind the big result is not held up by its shaping (300 ms).
    assert_eq!(c.recv().await, note);
    let shaped: Value = serde_json::from_str(&c.recv().await).unwrap_or_default();
    assert_eq!(shaped["id"], "big");
    assert_eq!(shaped["result"]["shaped"], true);
    assert!(shaped["result"]["bytes"].as_u64().unwrap_or(0) > 2_000_000);
    c.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_lines_are_forwarded_like_small_ones() {
    let mut c = Client::start();
    // An untracked request's big answer passes unchanged.
    c.request(r#"{"jsonrpc":"2.0","id":1,"method":"resources/read"}"#)
        .await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"blob":"{}"}}}}"#,
        "y".repeat(1_500_000)
    );
    c.send(&big).await;
    assert_eq!(c.recv().await, big);
    // A big notification keeps its place among the others.
    let big_note = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{}"}}}}"#,
        "n".repeat(1_500_000)
    );
    let small_note =
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"after"}}"#;
    c.send(&big_note).await;
    c.send(small_note).await;
    assert_eq!(c.recv().await, big_note);
    assert_eq!(c.recv().await, small_note);
    c.finish().await;
}

/// A pretty-printed JSON text of about `bytes` bytes: escapes every few bytes once in a line.
fn pretty_text(bytes: usize) -> String {
    let entry = "  {\n    \"name\": \"a \\\"b\\\" \\\\ c\",\n    \"children\": []\n  },\n";
    format!("[\n{}  {{}}\n]", entry.repeat(bytes / entry.len()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_results_read_on_two_threads_are_the_results_read_in_one() {
    let mut c = Client::start();
    let text = pretty_text(3_000_000);
    // Read on two threads: the TypeScript SDK's order (id last), a twin in structuredContent.
    // In one pass: a long string under a `"result":` in `_meta` before the result.
    let answers = [
        json!({"result": {"content": [{"type": "text", "text": text}]}, "jsonrpc": "2.0", "id": "a"}),
        json!({"jsonrpc": "2.0", "id": "b", "result": {"content": [{"type": "text", "text": text}], "structuredContent": {"content": text}}}),
        json!({"jsonrpc": "2.0", "id": "c", "_meta": {"result": text}, "result": {"content": [{"type": "text", "text": "small"}]}}),
    ];
    for answer in answers {
        let id = answer["id"].to_string();
        c.request(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"same"}}}}"#
        ))
        .await;
        c.send(&answer.to_string()).await;
        let got: Value = serde_json::from_str(&c.recv().await).unwrap_or_default();
        assert!(got == answer, "the answer to {id} came back as it went");
    }
    // An error whose data holds a long `result`: not shaped, forwarded byte for byte.
    c.request(r#"{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"same"}}"#)
        .await;
    let error = json!({"jsonrpc": "2.0", "id": "d", "error": {"code": -1, "message": "m", "data": {"result": text}}}).to_string();
    c.send(&error).await;
    assert!(c.recv().await == error, "the error came back byte for byte");
    c.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_pages_are_told_apart_by_their_cursor() {
    let mut c = Client::start();
    c.request(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .await;
    c.send(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"nextCursor":"2"}}"#)
        .await;
    assert_eq!(
        c.recv().await,
        r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"first_page":true}}"#
    );
    c.request(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"2"}}"#)
        .await;
    c.send(r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"b"}]}}"#)
        .await;
    assert_eq!(
        c.recv().await,
        r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"b"}],"first_page":false}}"#
    );
    c.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_tools_are_answered_locally_and_never_forwarded() {
    let mut c = Client::start();
    c.send(r#"{"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"read_more","arguments":{"cursor":"a.1"}}}"#).await;
    assert_eq!(
        c.recv().await,
        r#"{"jsonrpc":"2.0","id":"r","result":{"content":[{"type":"text","text":"local page"}]}}"#
    );
    // A panic in the shaper is an error for that request, and the relay goes on.
    c.send(r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"explode"}}"#)
        .await;
    let msg: Value = serde_json::from_str(&c.recv().await).unwrap_or_default();
    assert_eq!(
        (msg["id"].clone(), msg["error"]["code"].clone()),
        (json!("x"), json!(-32603))
    );
    // Nothing of the above reached the server: the next echo is this notification.
    let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#;
    c.send(note).await;
    assert_eq!(c.recv().await, note);
    c.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_and_untracked_answers_pass_unshaped_and_a_failing_shaper_is_an_error() {
    let mut c = Client::start();
    c.request(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#)
        .await;
    let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}"#;
    c.send(error).await;
    assert_eq!(c.recv().await, error);
    c.request(r#"{"jsonrpc":"2.0","id":2,"method":"resources/read"}"#)
        .await;
    let read = r#"{"jsonrpc":"2.0","id":2,"result":{"contents":[]}}"#;
    c.send(read).await;
    assert_eq!(c.recv().await, read);
    c.request(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"panics"}}"#)
        .await;
    c.send(r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#)
        .await;
    let msg: Value = serde_json::from_str(&c.recv().await).unwrap_or_default();
    assert_eq!(
        (msg["id"].clone(), msg["error"]["code"].clone()),
        (json!(3), json!(-32603))
    );
    c.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewritten_arguments_are_spliced_into_the_client_line() {
    let mut c = Client::start();
    // New arguments replace the old ones; every other byte of the line stays.
    c.send(r#"{"jsonrpc":"2.0", "id" : 7,"method":"tools/call","params":{"name":"rw_args","arguments": {"a" : 1.50},"_meta":{"k":1}}}"#)
        .await;
    assert_eq!(
        c.recv().await,
        r#"{"jsonrpc":"2.0", "id" : 7,"method":"tools/call","params":{"name":"rw_args","arguments": {"got":{"a":1.50},"x":2},"_meta":{"k":1}}}"#
    );
    // Forward: byte for byte; a tool the shaper does not ask about: byte for byte.
    c.request(r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"rw_same","arguments":{"a" :1}}}"#)
        .await;
    c.request(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"plain","arguments":{"a" :1}}}"#)
        .await;
    // Answer: the client gets the result, the server nothing (the next echo is the next line).
    c.send(r#"{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"rw_deny","arguments":{}}}"#)
        .await;
    assert_eq!(
        c.recv().await,
        r#"{"jsonrpc":"2.0","id":"d","result":{"content":[{"type":"text","text":"denied"}],"isError":true}}"#
    );
    c.request(r#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#)
        .await;
    // A slow rewrite holds the lines behind it: their order towards the server is kept.
    let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"behind"}}"#;
    c.send(r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"rw_slow","arguments":{}}}"#)
        .await;
    c.send(note).await;
    assert_eq!(
        c.recv().await,
        r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"rw_slow","arguments":{"slow":true}}}"#
    );
    assert_eq!(c.recv().await, note);
    // The forwarded requests are in flight: the "server" answers them (cat echoes them back).
    let mut ids = Vec::new();
    for id in [7, 8, 9, 10, 11] {
        c.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#
        ))
        .await;
    }
    for _ in 0..5 {
        let answer: Value = serde_json::from_str(&c.recv().await).unwrap_or_default();
        ids.push(answer["id"].as_u64().unwrap_or(0));
    }
    ids.sort_unstable();
    assert_eq!(ids, [7, 8, 9, 10, 11]);
    c.finish().await;
}
