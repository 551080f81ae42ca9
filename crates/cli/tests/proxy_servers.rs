//! Issue 15 §3 through the binary: many servers behind one proxy (`mcp-budget proxy --config
//! servers.toml` with `[servers.<name>]` tables), each a fixture server.

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod proxy_support;
use proxy_support::Proxy;
mod serve_support;
use serve_support::Serve;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

fn request(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn call(id: u64, tool: &str, arguments: Value) -> String {
    request(
        json!(id),
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// `[servers.<name>]` of a fixture server, with `extra` TOML lines after it.
fn fixture(name: &str, extra: &str) -> String {
    format!("[servers.{name}]\ncommand = {BIN:?}\nargs = [\"fixture-server\"]\n{extra}\n")
}

/// The multi-server proxy with `config` as its TOML file, initialized (the client offers
/// roots); returns the `initialize` answer too.
fn start(config: &str) -> (Proxy, tempfile::NamedTempFile, Value) {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(config.as_bytes()).unwrap();
    let path = file.path().to_str().unwrap().to_owned();
    let mut proxy = Proxy::spawn(Command::new(BIN).args(["proxy", "--config", &path]));
    proxy.send(&request(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {}},
               "clientInfo": {"name": "test", "version": "0"}}),
    ));
    let init = recv_id(&proxy, &json!(0), &mut Vec::new());
    proxy.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    (proxy, file, init)
}

/// Reads messages until the answer with `id`; every other message is pushed on `others`.
fn recv_id(proxy: &Proxy, id: &Value, others: &mut Vec<Value>) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let msg = proxy.recv_json_within(left);
        if msg.get("method").is_none() && msg.get("id") == Some(id) {
            return msg;
        }
        others.push(msg);
    }
}

/// The answers with `ids`, in that order, whatever order they come in.
fn recv_ids(proxy: &Proxy, ids: &[u64]) -> Vec<Value> {
    recv_ids_and(proxy, ids, &mut Vec::new())
}

/// [`recv_ids`], every other message pushed on `others`.
fn recv_ids_and(proxy: &Proxy, ids: &[u64], others: &mut Vec<Value>) -> Vec<Value> {
    let mut found: Vec<Option<Value>> = vec![None; ids.len()];
    let deadline = Instant::now() + Duration::from_secs(30);
    while found.iter().any(Option::is_none) {
        let left = deadline.saturating_duration_since(Instant::now());
        let msg = proxy.recv_json_within(left);
        let i = ids.iter().position(|id| msg.get("id") == Some(&json!(id)));
        match i {
            Some(i) if msg.get("method").is_none() => found[i] = Some(msg),
            _ => others.push(msg),
        }
    }
    found.into_iter().flatten().collect()
}

/// Pretty JSON for a snapshot (numbers as written: serde_json's `arbitrary_precision` is on).
fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn text_of(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn initialize_and_tools_list_are_merged_with_prefixes_and_per_server_rules() {
    let config = format!(
        "{}{}",
        fixture(
            "alpha",
            "[servers.alpha.tools_list]\nallow = [\"echo\", \"roots\"]"
        ),
        fixture(
            "beta",
            "[servers.beta.tools_list]\nallow = [\"echo\", \"crash\"]\ndeny = [\"crash\"]\ndescription_max_tokens = 4"
        )
    );
    let (mut proxy, _file, init) = start(&config);
    let mut init = init["result"].clone();
    init["serverInfo"]["version"] = json!("[version]");
    insta::assert_snapshot!("servers_initialize", pretty(&init));

    proxy.send(&request(json!(1), "tools/list", json!({})));
    let list = recv_id(&proxy, &json!(1), &mut Vec::new());
    assert_eq!(
        tool_names(&list),
        [
            "alpha__roots",
            "alpha__echo",
            "beta__echo",
            "read_more",
            "query_response"
        ],
        "{list}"
    );
    insta::assert_snapshot!("servers_tools_list", pretty(&list["result"]));

    // A tool denied by beta's own rule is refused without reaching beta.
    proxy.send(&call(2, "beta__crash", json!({})));
    let refused = recv_id(&proxy, &json!(2), &mut Vec::new());
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let body: Value = serde_json::from_str(&text_of(&refused)).unwrap();
    assert_eq!(body["error"], "tool_refused");
    assert_eq!(body["server"], "beta");
    assert!(body["rule"].as_str().unwrap().contains("crash"), "{body}");
    // An unknown server prefix is no call either.
    proxy.send(&call(3, "gamma__echo", json!({})));
    let unknown = recv_id(&proxy, &json!(3), &mut Vec::new());
    assert_eq!(unknown["result"]["isError"], true, "{unknown}");
    assert!(text_of(&unknown).contains("unknown_tool"));
    // beta still works: the refusal did not crash it.
    proxy.send(&call(4, "beta__echo", json!({"who": "beta"})));
    let echo = recv_id(&proxy, &json!(4), &mut Vec::new());
    assert_eq!(text_of(&echo), r#"{"who":"beta"}"#, "{echo}");
}

#[test]
fn calls_are_routed_and_big_results_of_either_server_read_back_with_one_read_more() {
    let config = format!("{}{}", fixture("one", ""), fixture("two", ""));
    let (mut proxy, _file, _) = start(&config);
    // The same request id space for both: the client's ids are its own.
    proxy.send(&call(1, "one__directory_tree", json!({"entries": 3000})));
    proxy.send(&call(2, "two__table_rows", json!({"rows": 2000})));
    for (next, answer) in (10..).zip(recv_ids(&proxy, &[1, 2])) {
        let page = &answer["result"]["_meta"]["mcp-budget/page"];
        let cursor = page["next_cursor"]
            .as_str()
            .unwrap_or_else(|| panic!("a paged result: {answer}"));
        proxy.send(&call(next, "read_more", json!({"cursor": cursor})));
        let more = recv_id(&proxy, &json!(next), &mut Vec::new());
        assert!(more["result"]["isError"].is_null(), "{more}");
        let more_page = &more["result"]["_meta"]["mcp-budget/page"];
        assert_eq!(more_page["page"], 1, "{more}");
        assert_eq!(more_page["response_id"], page["response_id"]);
    }
}

#[test]
fn server_requests_are_renumbered_and_answered_to_the_server_that_asked() {
    let config = format!("{}{}", fixture("a", ""), fixture("b", ""));
    let (mut proxy, _file, _) = start(&config);
    // Both fixtures ask `roots/list` under the same id ("fixture-roots-0").
    proxy.send(&call(1, "a__roots", json!({})));
    let mut asks = Vec::new();
    let first = proxy.recv_json();
    assert_eq!(first["method"], "roots/list", "{first}");
    asks.push(first);
    proxy.send(&call(2, "b__roots", json!({})));
    let second = proxy.recv_json();
    assert_eq!(second["method"], "roots/list", "{second}");
    asks.push(second);
    assert_ne!(asks[0]["id"], asks[1]["id"], "ids never collide");
    assert_ne!(asks[0]["id"], json!("fixture-roots-0"));
    // Answer b's first: each answer reaches the server that asked.
    for (ask, root) in [(&asks[1], "file:///b"), (&asks[0], "file:///a")] {
        proxy.send(
            &json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": root}]}})
                .to_string(),
        );
    }
    let answers = recv_ids(&proxy, &[1, 2]);
    let (a, b) = (&answers[0], &answers[1]);
    assert!(text_of(a).contains("file:///a"), "{a}");
    assert!(text_of(b).contains("file:///b"), "{b}");
}

#[test]
fn progress_reaches_the_client_under_its_token() {
    let config = format!("{}{}", fixture("a", ""), fixture("b", ""));
    let (mut proxy, _file, _) = start(&config);
    proxy.send(&request(
        json!(5),
        "tools/call",
        json!({"name": "b__progress", "arguments": {"steps": 2}, "_meta": {"progressToken": "tok"}}),
    ));
    let mut others = Vec::new();
    let done = recv_id(&proxy, &json!(5), &mut others);
    assert!(text_of(&done).contains("done 2 steps"), "{done}");
    let progress: Vec<&Value> = others
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 2, "{others:?}");
    assert!(
        progress
            .iter()
            .all(|m| m["params"]["progressToken"] == "tok")
    );
}

#[test]
fn a_crashed_server_is_isolated_and_restarted() {
    let config = format!("{}{}", fixture("a", ""), fixture("b", ""));
    let (mut proxy, _file, _) = start(&config);
    proxy.send(&call(1, "a__crash", json!({})));
    let mut others = Vec::new();
    let crashed = recv_id(&proxy, &json!(1), &mut others);
    let error = crashed["error"]["message"].as_str().unwrap_or_default();
    let result_text = text_of(&crashed);
    assert!(
        error.contains("\"a\"") || result_text.contains("\"a\""),
        "the error names the server: {crashed}"
    );
    // The other server keeps working meanwhile.
    proxy.send(&call(2, "b__echo", json!({"still": "here"})));
    let echo = recv_id(&proxy, &json!(2), &mut others);
    assert_eq!(text_of(&echo), r#"{"still":"here"}"#, "{echo}");
    // a comes back (first retry after 500 ms) and answers again.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut id = 3;
    loop {
        assert!(Instant::now() < deadline, "a never came back: {others:?}");
        proxy.send(&call(id, "a__echo", json!({"back": true})));
        let answer = recv_id(&proxy, &json!(id), &mut others);
        if answer["result"]["isError"].is_null() && answer.get("error").is_none() {
            assert_eq!(text_of(&answer), r#"{"back":true}"#);
            break;
        }
        assert!(
            text_of(&answer).contains("server \"a\" is unavailable"),
            "{answer}"
        );
        id += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    let changes = others
        .iter()
        .filter(|m| m["method"] == "notifications/tools/list_changed")
        .count();
    // Once when its tools went away; the comeback's may still be on its way.
    assert!(changes >= 1, "{others:?}");
    proxy.send(&request(json!(99), "tools/list", json!({})));
    let list = recv_id(&proxy, &json!(99), &mut others);
    assert!(tool_names(&list).contains(&"a__echo".to_owned()), "{list}");
    proxy.close_stdin();
    assert!(proxy.wait(Duration::from_secs(20)).success());
}

#[test]
fn a_crashed_server_with_prompts_and_resources_announces_those_lists_too() {
    let config = format!(
        "{}{}",
        fixture("a", "").replace(
            "args = [\"fixture-server\"]",
            "args = [\"fixture-server\", \"--lists\"]"
        ),
        fixture("b", "")
    );
    let (mut proxy, _file, init) = start(&config);
    assert!(
        init["result"]["capabilities"]["prompts"]["listChanged"] == true,
        "{init}"
    );
    proxy.send(&call(1, "a__crash", json!({})));
    let mut others = Vec::new();
    recv_id(&proxy, &json!(1), &mut others);
    // Gone and back: each list is told changed twice.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut id = 2;
    loop {
        assert!(Instant::now() < deadline, "a never came back: {others:?}");
        proxy.send(&call(id, "a__echo", json!({})));
        let answer = recv_id(&proxy, &json!(id), &mut others);
        if answer["result"]["isError"].is_null() && answer.get("error").is_none() {
            break;
        }
        id += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    // The comeback's notifications may still be on their way: ping until they are in.
    let methods = [
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
    ];
    let told =
        |others: &[Value], method: &str| others.iter().filter(|m| m["method"] == method).count();
    let mut ping = 1000;
    while methods.iter().any(|m| told(&others, m) < 2) {
        assert!(Instant::now() < deadline, "{others:?}");
        std::thread::sleep(Duration::from_millis(50));
        proxy.send(&request(json!(ping), "ping", json!({})));
        recv_id(&proxy, &json!(ping), &mut others);
        ping += 1;
    }
    for method in methods {
        assert_eq!(told(&others, method), 2, "{method}: {others:?}");
    }
    proxy.close_stdin();
    assert!(proxy.wait(Duration::from_secs(20)).success());
}

#[test]
fn a_server_that_cannot_start_leaves_the_others_working() {
    let config = format!(
        "{}[servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n",
        fixture("ok", "")
    );
    let (mut proxy, _file, init) = start(&config);
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-budget");
    proxy.send(&call(1, "broken__anything", json!({})));
    let answer = recv_id(&proxy, &json!(1), &mut Vec::new());
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(text_of(&answer).contains("\"broken\""), "{answer}");
    proxy.send(&call(2, "ok__echo", json!({})));
    let echo = recv_id(&proxy, &json!(2), &mut Vec::new());
    assert_eq!(text_of(&echo), "{}", "{echo}");
}

#[test]
fn deferred_mode_finds_and_calls_the_tools_of_every_server() {
    let config = format!(
        "[tools_list]\nmode = \"defer\"\npinned = [\"a__echo\"]\n{}{}",
        fixture("a", ""),
        fixture("b", "")
    );
    let (mut proxy, _file, _) = start(&config);
    proxy.send(&request(json!(1), "tools/list", json!({})));
    let list = recv_id(&proxy, &json!(1), &mut Vec::new());
    let names = tool_names(&list);
    for name in [
        "a__echo",
        "find_tools",
        "call_tool",
        "read_more",
        "query_response",
    ] {
        assert!(names.contains(&name.to_owned()), "{names:?}");
    }
    assert!(!names.contains(&"b__echo".to_owned()), "{names:?}");
    proxy.send(&call(
        2,
        "find_tools",
        json!({"query": "arguments compact JSON"}),
    ));
    let found = recv_id(&proxy, &json!(2), &mut Vec::new());
    let text = found["result"]["content"]
        .as_array()
        .and_then(|items| items.last())
        .and_then(|item| item["text"].as_str())
        .unwrap_or_default()
        .to_owned();
    assert!(text.contains("b__echo"), "{found}");
    proxy.send(&call(
        3,
        "call_tool",
        json!({"name": "b__echo", "arguments": {"via": "call_tool"}}),
    ));
    let called = recv_id(&proxy, &json!(3), &mut Vec::new());
    assert_eq!(text_of(&called), r#"{"via":"call_tool"}"#, "{called}");
}

/// A stub server (Python) named by its first argument: reports every line it reads as a
/// `test/received` notification; `ask` sends the client a `sampling/createMessage` under the
/// id "same" (every stub uses it) and answers with the client's reply; `hang` never answers.
const STUB: &str = r#"
import json, sys
name = sys.argv[1]
pending = None
def out(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    out({"jsonrpc": "2.0", "method": "test/received", "params": {"server": name, "message": m}})
    method = m.get("method")
    if method == "initialize":
        out({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-03-26",
             "capabilities": {"tools": {}}, "serverInfo": {"name": "stub", "version": "0"}}})
    elif method == "tools/list":
        tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("ask", "hang")]
        out({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": tools}})
    elif method == "tools/call" and m["params"]["name"] == "ask":
        pending = m["id"]
        out({"jsonrpc": "2.0", "id": "same", "method": "sampling/createMessage",
             "params": {"messages": [], "maxTokens": 1}})
    elif method is None and m.get("id") == "same":
        text = name + ":" + json.dumps(m.get("result"))
        out({"jsonrpc": "2.0", "id": pending, "result": {"content": [{"type": "text", "text": text}]}})
"#;

fn stub(name: &str) -> String {
    format!("[servers.{name}]\ncommand = \"python3\"\nargs = [\"-c\", {STUB:?}, {name:?}]\n")
}

/// What stub `server` reported receiving, in order, among `messages`.
fn received<'a>(messages: &'a [Value], server: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "test/received" && m["params"]["server"] == server)
        .map(|m| &m["params"]["message"])
        .collect()
}

#[test]
fn colliding_server_request_ids_and_cancellations_reach_the_right_server() {
    let config = format!("{}{}{}", stub("s1"), stub("s2"), fixture("fx", ""));
    let (mut proxy, _file, init) = start(&config);
    // The stubs answer 2025-03-26, the fixture 2025-06-18: the oldest is the proxy's.
    assert_eq!(init["result"]["protocolVersion"], "2025-03-26", "{init}");
    let mut seen = Vec::new();
    proxy.send(&call(1, "s1__ask", json!({})));
    proxy.send(&call(2, "s2__ask", json!({})));
    let mut asks = Vec::new();
    while asks.len() < 2 {
        let msg = proxy.recv_json();
        if msg["method"] == "sampling/createMessage" {
            asks.push(msg);
        } else {
            seen.push(msg);
        }
    }
    assert_ne!(
        asks[0]["id"], asks[1]["id"],
        "both servers said \"same\": {asks:?}"
    );
    for ask in &asks {
        let reply = json!({"jsonrpc": "2.0", "id": ask["id"],
                           "result": {"role": "assistant", "content": {"type": "text", "text": format!("for {}", ask["id"])}}});
        proxy.send(&reply.to_string());
    }
    let answers = recv_ids_and(&proxy, &[1, 2], &mut seen);
    for (answer, server) in answers.iter().zip(["s1", "s2"]) {
        let text = text_of(answer);
        assert!(text.starts_with(&format!("{server}:")), "{answer}");
    }
    // Each stub got exactly one answer, under its own id "same", with the text meant for it.
    let mut hang = json!(null);
    proxy.send(&call(3, "s2__hang", json!({})));
    proxy.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3, "reason": "test"}})
            .to_string(),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let cancelled = loop {
        assert!(
            Instant::now() < deadline,
            "no cancellation reached s2: {seen:?}"
        );
        seen.push(proxy.recv_json());
        let s2 = received(&seen, "s2");
        if let Some(call) = s2
            .iter()
            .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "hang")
        {
            hang = call["id"].clone();
        }
        if let Some(c) = s2.iter().find(|m| m["method"] == "notifications/cancelled") {
            break (*c).clone();
        }
    };
    assert_eq!(
        cancelled["params"]["requestId"], hang,
        "the proxy's id of the call"
    );
    assert!(
        received(&seen, "s1")
            .iter()
            .all(|m| m["method"] != "notifications/cancelled"),
        "s1 got no cancellation"
    );
    for server in ["s1", "s2"] {
        let replies: Vec<_> = received(&seen, server)
            .into_iter()
            .filter(|m| m.get("method").is_none())
            .cloned()
            .collect();
        assert_eq!(replies.len(), 1, "{server}: {replies:?}");
        assert_eq!(replies[0]["id"], "same");
        let sent_to = asks
            .iter()
            .find(|a| replies[0]["result"]["content"]["text"] == format!("for {}", a["id"]));
        assert!(sent_to.is_some(), "{replies:?}");
    }
}

#[test]
fn a_remote_server_over_http_sits_beside_a_local_one() {
    // `mcp-budget serve` in front of a fixture is the remote server (its own budget set high,
    // so the multi-server proxy's boundary does the paging).
    let remote = Serve::fixture(&["--max-tokens", "100000000"]);
    let config = format!(
        "{}[servers.web]\nurl = {:?}\nheaders = {{ X-Test = \"1\" }}\n",
        fixture("local", ""),
        remote.url
    );
    let (mut proxy, _file, _) = start(&config);
    proxy.send(&request(json!(1), "tools/list", json!({})));
    let names = tool_names(&recv_id(&proxy, &json!(1), &mut Vec::new()));
    assert!(names.contains(&"web__echo".to_owned()), "{names:?}");
    assert!(names.contains(&"local__echo".to_owned()), "{names:?}");
    proxy.send(&call(2, "web__echo", json!({"over": "http"})));
    let echo = recv_id(&proxy, &json!(2), &mut Vec::new());
    assert_eq!(text_of(&echo), r#"{"over":"http"}"#, "{echo}");
    proxy.send(&call(3, "web__table_rows", json!({"rows": 2000})));
    let big = recv_id(&proxy, &json!(3), &mut Vec::new());
    let cursor = big["result"]["_meta"]["mcp-budget/page"]["next_cursor"]
        .as_str()
        .unwrap_or_else(|| panic!("paged: {big}"))
        .to_owned();
    proxy.send(&call(4, "read_more", json!({"cursor": cursor})));
    let more = recv_id(&proxy, &json!(4), &mut Vec::new());
    assert_eq!(
        more["result"]["_meta"]["mcp-budget/page"]["page"], 1,
        "{more}"
    );
}
