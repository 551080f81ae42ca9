//! The relay of `mcp-budget proxy`, driven over pipes: the real binary in front of a scripted
//! upstream (a small Python program that echoes what it receives and writes what it is told).
//!
//! The upstream understands notifications whose method starts with `test/` (never echoed):
//! - `test/emit {"lines":[...]}`: writes each string as one raw line on its stdout;
//! - `test/emit_long {"head":s,"n":N,"tail":t}`: writes `head + "x"*N + tail` as one line;
//! - `test/exit {"code":N}`: exits with status N at once.
//!
//! Every other line it receives comes back as `{"method":"test/received","params":{"line":…}}`,
//! so a test sees the exact bytes that reached the server. On end of input it writes
//! `upstream: eof` to stderr and exits 0 (or, started with `ignore-eof`, sleeps 30 s).
//!
//! Shaping of tools/call and tools/list results is not tested here: the lines used are other
//! methods (forwarded byte for byte), or only the id and error of a tools/call are checked.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod proxy_support;
use proxy_support::{Proxy, STEP};

const UPSTREAM: &str = r#"
import json, os, sys, time
out = sys.stdout.buffer
def write(b):
    out.write(b + b"\n")
    out.flush()
for raw in sys.stdin.buffer:
    line = raw[:-1] if raw.endswith(b"\n") else raw
    try:
        msg = json.loads(line)
    except Exception:
        msg = None
    method = msg.get("method") if isinstance(msg, dict) else None
    if isinstance(method, str) and method.startswith("test/"):
        p = msg.get("params") or {}
        if method == "test/emit":
            for l in p["lines"]:
                write(l.encode())
        elif method == "test/emit_long":
            write((p["head"] + "x" * p["n"] + p["tail"]).encode())
        elif method == "test/exit":
            out.flush()
            os._exit(p["code"])
        continue
    echo = {"jsonrpc": "2.0", "method": "test/received",
            "params": {"line": line.decode("utf-8", "surrogateescape")}}
    write(json.dumps(echo).encode())
sys.stderr.write("upstream: eof\n")
sys.stderr.flush()
if len(sys.argv) > 1 and sys.argv[1] == "ignore-eof":
    time.sleep(30)
"#;

/// The proxy with `flags`, in front of the scripted upstream started with `upstream_args`.
fn start(flags: &[&str], upstream_args: &[&str]) -> Proxy {
    let mut command = vec!["python3", "-c", UPSTREAM];
    command.extend_from_slice(upstream_args);
    Proxy::start(flags, &command)
}

fn assert_error(msg: &Value, id: Value, code: i64) {
    assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
    assert_eq!(msg["id"], id, "{msg}");
    assert_eq!(msg["error"]["code"], code, "{msg}");
    assert!(
        msg["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{msg}"
    );
}

#[test]
fn client_messages_reach_the_server_byte_for_byte() {
    let mut proxy = start(&[], &[]);
    let lines = [
        // Unknown method, unknown members, odd spacing, ids of every JSON type.
        r#"{"jsonrpc":"2.0","id":1,"method":"vendor/unknown","params":{"a":[1.50,2e3,-0.0]},"extra":{"z":null}}"#,
        r#"{ "id" : "abc\u00e9" , "jsonrpc" : "2.0" , "method" : "resources/read" }"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1.0,"method":"ping"}"#,
        // `_meta` on requests and notifications.
        r#"{"jsonrpc":"2.0","id":"m","method":"prompts/get","params":{"name":"p","_meta":{"progressToken":"t1","x.y/z":[{}]}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized","_meta":{"a":1}}"#,
        // A batch (protocol 2025-03-26) and a line with a CR before its newline.
        r#"[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"n"}]"#,
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}\r",
        // Non-ASCII text, unescaped.
        r#"{"jsonrpc":"2.0","id":3,"method":"x","params":{"t":"日本語 — ok"}}"#,
    ];
    for line in lines {
        proxy.send(line);
        assert_eq!(proxy.received_by_upstream(), line);
    }
}

#[test]
fn server_messages_reach_the_client_byte_for_byte() {
    let mut proxy = start(&[], &[]);
    // Requests the client made, answered by the emitted responses below.
    for id in ["7", r#""s-1""#, "null"] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/list"}}"#);
        proxy.send(&line);
        assert_eq!(proxy.received_by_upstream(), line);
    }
    let lines = [
        r#"{"jsonrpc":"2.0","id":7,"result":{"resources":[],"nextCursor":"c2"},"_meta":{"k":1}}"#,
        r#"{ "result" : { "x" : 1.50 } , "id" : "s-1" , "jsonrpc" : "2.0" }"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found","data":{"m":"resources/list"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"é":"ü"}}}"#,
        r#"{"jsonrpc":"2.0","method":"vendor/unknown","params":[1,2,3],"extra":true}"#,
        // An answer to nothing the client asked (the relay does not judge it).
        r#"{"jsonrpc":"2.0","id":999,"result":{}}"#,
    ];
    proxy.emit(&lines);
    for line in lines {
        assert_eq!(String::from_utf8_lossy(&proxy.recv()), line);
    }
}

#[test]
fn server_requests_use_their_own_id_space() {
    let mut proxy = start(&[], &[]);
    // The client's request 1 is in flight...
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a"}}"#;
    proxy.send(request);
    assert_eq!(proxy.received_by_upstream(), request);
    // ...when the server asks the client something with the same id.
    let roots = r#"{"jsonrpc":"2.0","id":1,"method":"roots/list","params":{"_meta":{"t":1}}}"#;
    let elicit =
        r#"{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"?"}}"#;
    let sampling = r#"{"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}}"#;
    proxy.emit(&[roots, elicit, sampling]);
    assert_eq!(String::from_utf8_lossy(&proxy.recv()), roots);
    assert_eq!(String::from_utf8_lossy(&proxy.recv()), elicit);
    assert_eq!(String::from_utf8_lossy(&proxy.recv()), sampling);
    let sampled = r#"{"jsonrpc":"2.0","id":2,"result":{"role":"assistant","content":{"type":"text","text":"yo"},"model":"m"}}"#;
    proxy.send(sampled);
    assert_eq!(proxy.received_by_upstream(), sampled);
    // The client's answers go to the server unchanged.
    let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"roots":[{"uri":"file:///w","name":"w"}]}}"#;
    proxy.send(answer);
    assert_eq!(proxy.received_by_upstream(), answer);
    let declined = r#"{"jsonrpc":"2.0","id":"e1","error":{"code":-1,"message":"declined"}}"#;
    proxy.send(declined);
    assert_eq!(proxy.received_by_upstream(), declined);
    // And the server's answer to the client's request 1 still gets through.
    let response = r#"{"jsonrpc":"2.0","id":1,"result":{"contents":[]}}"#;
    proxy.emit(&[response]);
    assert_eq!(String::from_utf8_lossy(&proxy.recv()), response);
    proxy.sync("end");
}

#[test]
fn notifications_pass_through_in_order() {
    let mut proxy = start(&[], &[]);
    let request = r#"{"jsonrpc":"2.0","id":"p","method":"vendor/long","params":{"_meta":{"progressToken":"tok"}}}"#;
    proxy.send(request);
    assert_eq!(proxy.received_by_upstream(), request);
    let mut lines = Vec::new();
    for i in 0..300 {
        lines.push(match i % 3 {
            0 => format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"tok","progress":{i},"total":300}}}}"#
            ),
            1 => format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"debug","data":"step {i}"}}}}"#
            ),
            _ => format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{i},"reason":"r"}}}}"#
            ),
        });
    }
    lines.push(r#"{"jsonrpc":"2.0","id":"p","result":{"done":true}}"#.to_owned());
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    proxy.emit(&refs);
    for line in &lines {
        assert_eq!(&String::from_utf8_lossy(&proxy.recv()), line);
    }
    // The client's cancellation reaches the server in order too.
    let cancel =
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"p"}}"#;
    proxy.send(cancel);
    assert_eq!(proxy.received_by_upstream(), cancel);
}

#[test]
fn calls_in_flight_are_answered_in_any_order() {
    let mut proxy = start(&[], &[]);
    for id in 1..=5 {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t{id}","arguments":{{}}}}}}"#
        );
        proxy.send(&line);
        assert_eq!(proxy.received_by_upstream(), line);
    }
    let answers: Vec<String> = [4, 2, 5, 1, 3]
        .iter()
        .map(|id| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"answer {id}"}}]}}}}"#
            )
        })
        .collect();
    let refs: Vec<&str> = answers.iter().map(String::as_str).collect();
    proxy.emit(&refs);
    let mut seen = Vec::new();
    for _ in 0..5 {
        let msg = proxy.recv_json();
        let id = msg["id"].as_i64().expect("numeric id");
        let text = msg["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert_eq!(text, format!("answer {id}"), "{msg}");
        seen.push(id);
    }
    seen.sort_unstable();
    assert_eq!(seen, [1, 2, 3, 4, 5]);
    proxy.sync("end");
}

#[test]
fn malformed_client_lines_are_answered_and_the_relay_goes_on() {
    let mut proxy = start(&[], &[]);
    proxy.send(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call",oops}"#);
    assert_error(&proxy.recv_json(), json!(9), -32700);
    proxy.send(r#"{"jsonrpc":"2.0","id":"s","method":"x","params":{"a":"#);
    assert_error(&proxy.recv_json(), json!("s"), -32700);
    proxy.send(r#"{"jsonrpc":"2.0","id":10,"method":5}"#);
    assert_error(&proxy.recv_json(), json!(10), -32600);
    // No id to answer: dropped and logged, nothing on stdout.
    proxy.send("not json at all");
    proxy.send("42");
    proxy.send(r#"{"jsonrpc":"2.0","id":11,"result":{"broken""#);
    proxy.sync("after-garbage");
    let stderr = proxy.wait_for_stderr("not JSON");
    assert!(stderr.contains("not JSON"), "{stderr}");
}

#[test]
fn an_over_long_client_line_is_answered_and_the_relay_goes_on() {
    let mut proxy = start(&["--max-line-bytes", "500"], &[]);
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{{"name":"t","arguments":{{"q":"{}"}}}}}}"#,
        "y".repeat(5000)
    );
    proxy.send(&long);
    assert_error(&proxy.recv_json(), json!("big"), -32600);
    proxy.send(&format!(
        r#"{{"jsonrpc":"2.0","method":"n","params":"{}"}}"#,
        "z".repeat(2000)
    ));
    proxy.sync("after-long");
    let stderr = proxy.wait_for_stderr("--max-line-bytes");
    assert!(stderr.contains("--max-line-bytes"), "{stderr}");
}

#[test]
fn bad_server_answers_become_errors_for_their_requests() {
    let mut proxy = start(&["--max-line-bytes", "600"], &[]);
    for id in [20, 21] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read"}}"#);
        proxy.send(&line);
        assert_eq!(proxy.received_by_upstream(), line);
    }
    // A broken answer to 20, then its late real answer, which must not reach the client twice.
    proxy.emit(&[
        r#"{"jsonrpc":"2.0","id":20,"result":{"contents":[{"uri":"#,
        r#"{"jsonrpc":"2.0","id":20,"result":{"contents":[]}}"#,
        "Traceback (most recent call last): garbage",
    ]);
    assert_error(&proxy.recv_json(), json!(20), -32603);
    // An over-long answer to 21.
    proxy.send(
        &json!({"jsonrpc":"2.0","method":"test/emit_long","params":{
            "head": r#"{"jsonrpc":"2.0","id":21,"result":{"text":""#, "n": 5000, "tail": r#""}}"#}})
        .to_string(),
    );
    let msg = proxy.recv_json();
    assert_error(&msg, json!(21), -32603);
    assert!(
        msg["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("--max-line-bytes"),
        "{msg}"
    );
    proxy.sync("after-bad-answers");
}

#[test]
fn a_big_broken_answer_is_an_error_for_its_request() {
    let mut proxy = start(&[], &[]);
    let line = r#"{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"t"}}"#;
    proxy.send(line);
    assert_eq!(proxy.received_by_upstream(), line);
    // 2 MB, cut before its closing braces.
    proxy.send(
        &json!({"jsonrpc":"2.0","method":"test/emit_long","params":{
            "head": r#"{"jsonrpc":"2.0","id":22,"result":{"content":[{"type":"text","text":""#,
            "n": 2_000_000, "tail": r#""}]"#}})
        .to_string(),
    );
    assert_error(&proxy.recv_json(), json!(22), -32603);
    proxy.sync("after-big-broken");
}

#[test]
fn a_server_exit_fails_every_request_in_flight_and_sets_the_exit_code() {
    let mut proxy = start(&[], &[]);
    let call = r#"{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"slow","arguments":{}}}"#;
    let read = r#"{"jsonrpc":"2.0","id":"31","method":"resources/read","params":{"uri":"u"}}"#;
    for line in [call, read] {
        proxy.send(line);
        assert_eq!(proxy.received_by_upstream(), line);
    }
    proxy.send(r#"{"jsonrpc":"2.0","method":"test/exit","params":{"code":3}}"#);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let msg = proxy.recv_json();
        assert_eq!(msg["error"]["code"], -32000, "{msg}");
        let message = msg["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("upstream server exited with status 3"),
            "{msg}"
        );
        ids.push(msg["id"].clone());
    }
    assert_eq!(ids, [json!(30), json!("31")]);
    let status = proxy.wait(STEP);
    assert_eq!(status.code(), Some(3));
    let stderr = proxy.wait_for_stderr("exited with status 3");
    assert!(stderr.contains("exited with status 3"), "{stderr}");
}

#[test]
fn client_eof_closes_the_server_stdin_and_the_proxy_exits_with_its_status() {
    let mut proxy = start(&[], &[]);
    proxy.sync("hello");
    let start = Instant::now();
    proxy.close_stdin();
    let status = proxy.wait(STEP);
    assert_eq!(status.code(), Some(0));
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "took {:?}",
        start.elapsed()
    );
    // The server's stderr passes through the proxy's.
    let stderr = proxy.wait_for_stderr("upstream: eof");
    assert!(stderr.contains("upstream: eof"), "{stderr}");
}

#[test]
fn a_server_that_ignores_eof_is_killed_after_the_grace_time() {
    let mut proxy = start(&["--shutdown-grace-ms", "300"], &["ignore-eof"]);
    proxy.sync("hello");
    let start = Instant::now();
    proxy.close_stdin();
    let status = proxy.wait(STEP);
    assert_eq!(status.code(), Some(0));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    let stderr = proxy.wait_for_stderr("killing it");
    assert!(stderr.contains("killing it"), "{stderr}");
}

#[test]
fn stateless_2026_07_28_messages_pass() {
    let mut proxy = start(&[], &[]);
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let discover =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{meta}}}}}"#);
    proxy.send(&discover);
    assert_eq!(proxy.received_by_upstream(), discover);
    let discovered = r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":60000,"cacheScope":"private"}}"#;
    proxy.emit(&[discovered]);
    assert_eq!(String::from_utf8_lossy(&proxy.recv()), discovered);

    let list = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{{meta}}}}}"#);
    proxy.send(&list);
    assert_eq!(proxy.received_by_upstream(), list);
    proxy.emit(&[
        r#"{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}"#,
    ]);
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], 2);
    assert_eq!(msg["result"]["resultType"], "complete");
    assert_eq!(msg["result"]["tools"][0]["name"], "echo");

    let call = format!(
        r#"{{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{{"name":"echo","arguments":{{"x":1}},{meta}}}}}"#
    );
    proxy.send(&call);
    assert_eq!(proxy.received_by_upstream(), call);
    proxy.emit(&[
        r#"{"jsonrpc":"2.0","id":"c","result":{"resultType":"complete","content":[{"type":"text","text":"hi"}]}}"#,
    ]);
    let msg = proxy.recv_json();
    assert_eq!(msg["id"], "c");
    assert_eq!(msg["result"]["resultType"], "complete");
    assert_eq!(msg["result"]["content"][0]["text"], "hi");
}

#[test]
fn a_missing_upstream_command_is_an_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-budget"))
        .args(["proxy", "--", "/nonexistent/mcp-server"])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot start the upstream server"),
        "{stderr}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_mcp-budget"))
        .args(["proxy"])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
}

#[test]
fn a_cancelled_request_gets_no_error_when_the_server_exits() {
    let mut proxy = start(&[], &[]);
    let cancelled = r#"{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow"}}"#;
    let live = r#"{"jsonrpc":"2.0","id":"c2","method":"tools/call","params":{"name":"slow"}}"#;
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"user"}}"#;
    for line in [cancelled, live, cancel] {
        proxy.send(line);
        assert_eq!(proxy.received_by_upstream(), line);
    }
    proxy.send(r#"{"jsonrpc":"2.0","method":"test/exit","params":{"code":0}}"#);
    let msg = proxy.recv_json();
    assert_error(&msg, json!("c2"), -32000);
    assert_eq!(proxy.wait(STEP).code(), Some(0));
    assert!(
        proxy.lines_left().is_empty(),
        "only the live request is answered"
    );
}

#[test]
fn sigterm_closes_the_server_stdin_and_the_proxy_leaves_no_server_behind() {
    let mut proxy = start(&[], &[]);
    proxy.sync("hello");
    let status = Command::new("kill")
        .args(["-TERM", &proxy.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    let status = proxy.wait(STEP);
    assert_eq!(status.code(), Some(0));
    let stderr = proxy.wait_for_stderr("upstream: eof");
    assert!(stderr.contains("upstream: eof"), "{stderr}");
}

#[test]
fn a_hung_request_times_out_unless_the_server_reports_progress() {
    let mut proxy = start(&["--request-timeout", "1"], &[]);
    let silent = r#"{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"hang"}}"#;
    let busy = r#"{"jsonrpc":"2.0","id":51,"method":"tools/call","params":{"name":"work","_meta":{"progressToken":"t51"}}}"#;
    let start = Instant::now();
    for line in [silent, busy] {
        proxy.send(line);
        assert_eq!(proxy.received_by_upstream(), line);
    }
    // 51 gets progress every 300 ms for 2.4 s; 50 hears nothing and times out after ~1 s.
    let mut timed_out = Vec::new();
    for step in 0..8 {
        std::thread::sleep(Duration::from_millis(300));
        let progress = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"t51","progress":{step}}}}}"#
        );
        proxy.emit(&[&progress]);
        loop {
            let line = proxy.recv();
            if String::from_utf8_lossy(&line) == progress {
                break;
            }
            let msg: Value = serde_json::from_slice(&line).expect("JSON");
            assert_error(&msg, msg["id"].clone(), -32001);
            timed_out.push((msg["id"].clone(), start.elapsed()));
        }
    }
    assert_eq!(timed_out.len(), 1, "{timed_out:?}");
    assert_eq!(timed_out[0].0, json!(50));
    assert!(
        timed_out[0].1 >= Duration::from_millis(900),
        "{timed_out:?}"
    );
    // Progress stopped: 51 times out too; its late answer is dropped.
    let msg = proxy.recv_json();
    assert_error(&msg, json!(51), -32001);
    assert!(
        start.elapsed() >= Duration::from_millis(3300),
        "{:?}",
        start.elapsed()
    );
    proxy.emit(&[r#"{"jsonrpc":"2.0","id":51,"result":{"content":[]}}"#]);
    proxy.sync("after-timeouts");
}

#[test]
fn bad_settings_are_errors_before_the_server_starts() {
    let marker =
        std::env::temp_dir().join(format!("mcp-budget-never-started-{}", std::process::id()));
    let script = format!("open({:?}, 'w').write('started')", marker.to_string_lossy());
    for flags in [
        vec!["--config", "/nonexistent/mcp-budget.toml"],
        vec!["--encoding", "no_such_encoding"],
        vec!["--max-tokens", "lots"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_mcp-budget"))
            .arg("proxy")
            .args(&flags)
            .args(["--", "python3", "-c", &script])
            .stdin(Stdio::null())
            .output()
            .expect("run");
        assert!(!out.status.success(), "{flags:?}");
        assert!(out.stdout.is_empty(), "{flags:?}");
        assert!(!out.stderr.is_empty(), "{flags:?}");
        assert!(!marker.exists(), "the server was started despite {flags:?}");
    }
}
