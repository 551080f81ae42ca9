//! Latency of a `tools/call` through `mcp-budget serve --upstream <URL>` and through
//! `mcp-budget proxy --upstream <URL>`, against calling the same Streamable HTTP server
//! directly (issue 10, "Performance": a small call adds ≤ 1.2× the direct latency; a big
//! result's page 1 arrives no later than the direct result).
//!
//! ```text
//! cargo bench -p mcp-budget-bench --bench serve_latency -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Everything runs in this process, on loopback, each part on a runtime of its own as the
//! separate processes would be:
//! - the upstream: a small Streamable HTTP MCP server (axum, one worker thread) with two
//!   endpoints, `/json` (answers as `application/json`) and `/sse` (answers as a one-event
//!   `text/event-stream`, as the TypeScript SDK does by default), and two tools: `echo`
//!   (`Echo: <message>`) and `big` (a JSON array of rows of `bytes` bytes, as text);
//! - mcp-budget (two worker threads, as the binary): `serve` (its HTTP endpoint, one session)
//!   and `proxy` (the relay over in-memory pipes, as over stdio), both with `--upstream` and
//!   the default shaping (10,000 tokens, `cl100k_base`);
//! - the client (reqwest on a current-thread runtime, keep-alive, `TCP_NODELAY`): each call is
//!   a POST and the parse of its answer into a `serde_json::Value` (for the proxy: a line
//!   written and the answer line read and parsed).
//!
//! Groups: `small_call/<json|sse>` (`direct`, `serve`, `proxy`: `tools/call echo`) and
//! `big_result/<bytes>` (`direct`: the whole result; `serve-page1` and `proxy-page1`: page 1).
//! Criterion measures each at a different moment and the load of a shared machine drifts, so
//! the tables at the end time the variants in back-to-back rounds (rotating which goes first)
//! and give the median of each and the ratio of the medians: the figure the issue asks for
//! ("ratio in one run"). `SERVE_ROUNDS` (default 300) and `BIG_ROUNDS` (default 8) set the
//! rounds; to print only the tables:
//! `cargo bench -p mcp-budget-bench --bench serve_latency -- no-criterion-benchmark-matches-this`.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use criterion::{BenchmarkId, Criterion};
use mcp_budget_proxy::boundary::Boundary;
use mcp_budget_proxy::config::Settings;
use mcp_budget_proxy::relay::{HttpUpstream, Relay, RelayOptions, Shaper, Upstream};
use mcp_budget_proxy::serve::{ServeOptions, Server};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, Lines};
use tokio::runtime::Runtime;
use tokio::sync::Mutex;

const MB: usize = 1_000_000;
/// The sizes of the big results, in bytes of the tool's text.
const BIG_SIZES: [usize; 2] = [MB, 12 * MB];
const VERSION: &str = "2025-06-18";

// ---------------------------------------------------------------------------------------------
// The upstream server.

/// The `result` of `big` per size, serialized once.
fn big_results() -> &'static HashMap<usize, String> {
    static BIG: OnceLock<HashMap<usize, String>> = OnceLock::new();
    BIG.get_or_init(|| {
        BIG_SIZES
            .iter()
            .map(|&n| {
                let text = mcp_budget_bench::float_rows(n);
                let result = json!({"content": [{"type": "text", "text": text}]});
                (n, result.to_string())
            })
            .collect()
    })
}

#[derive(Clone, Copy)]
enum Mode {
    Json,
    Sse,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Json => "json",
            Mode::Sse => "sse",
        }
    }
}

async fn upstream_post(State(mode): State<Mode>, body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let Some(id) = request
        .get("id")
        .filter(|_| request.get("method").is_some())
    else {
        return StatusCode::ACCEPTED.into_response();
    };
    let params = &request["params"];
    let mut headers = HeaderMap::new();
    let result = match request["method"].as_str().unwrap_or_default() {
        "initialize" => {
            headers.insert("mcp-session-id", HeaderValue::from_static("bench-session"));
            json!({
                "protocolVersion": params["protocolVersion"].as_str().unwrap_or(VERSION),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench-upstream", "version": "1"}
            })
            .to_string()
        }
        "tools/list" => json!({"tools": [
            {"name": "echo", "inputSchema": {"type": "object"}},
            {"name": "big", "inputSchema": {"type": "object"}}
        ]})
        .to_string(),
        "tools/call" if params["name"] == "big" => {
            let bytes = params["arguments"]["bytes"].as_u64().unwrap_or(0) as usize;
            big_results().get(&bytes).cloned().unwrap_or_default()
        }
        "tools/call" => {
            let message = params["arguments"]["message"].as_str().unwrap_or_default();
            json!({"content": [{"type": "text", "text": format!("Echo: {message}")}]}).to_string()
        }
        _ => String::new(),
    };
    let body = if result.is_empty() {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"unknown"}}}}"#)
    } else {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
    };
    let (content_type, body) = match mode {
        Mode::Json => ("application/json", body),
        Mode::Sse => (
            "text/event-stream",
            format!("event: message\ndata: {body}\n\n"),
        ),
    };
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    (headers, body).into_response()
}

fn upstream_router() -> Router {
    let endpoint = |mode| {
        post(upstream_post)
            .get(|| async { StatusCode::METHOD_NOT_ALLOWED })
            .delete(|| async { StatusCode::OK })
            .with_state(mode)
    };
    Router::new()
        .route("/json", endpoint(Mode::Json))
        .route("/sse", endpoint(Mode::Sse))
}

/// Binds loopback and serves `router` on `rt`; returns `http://127.0.0.1:<port>`.
fn serve_router(rt: &Runtime, router: Router) -> String {
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local address");
        tokio::spawn(async move {
            use axum::serve::ListenerExt as _;
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let _ = axum::serve(listener, router).await;
        });
        format!("http://{addr}")
    })
}

// ---------------------------------------------------------------------------------------------
// Clients.

/// An MCP client session over Streamable HTTP.
struct HttpSession {
    client: reqwest::Client,
    url: String,
    session: Option<String>,
}

impl HttpSession {
    async fn open(client: &reqwest::Client, url: String) -> HttpSession {
        let mut s = HttpSession {
            client: client.clone(),
            url,
            session: None,
        };
        let (answer, session) = s.post_raw(&initialize()).await;
        assert!(answer.get("result").is_some(), "initialize: {answer}");
        s.session = session;
        let _ = s.post_raw(&initialized()).await;
        s
    }

    async fn post_raw(&self, body: &str) -> (Value, Option<String>) {
        let mut request = self
            .client
            .post(&self.url)
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header(header::CONTENT_TYPE, "application/json")
            .body(body.to_owned());
        if let Some(s) = &self.session {
            request = request
                .header("mcp-session-id", s)
                .header("mcp-protocol-version", VERSION);
        }
        let response = request.send().await.expect("POST");
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let bytes = response.bytes().await.expect("body");
        if bytes.is_empty() {
            return (Value::Null, session);
        }
        let value = if sse {
            last_sse_message(&bytes)
        } else {
            serde_json::from_slice(&bytes).expect("JSON body")
        };
        (value, session)
    }

    async fn call(&self, body: &str) -> Value {
        self.post_raw(body).await.0
    }
}

/// The last `data:` message of an SSE body (each event of these streams has one data line).
fn last_sse_message(bytes: &[u8]) -> Value {
    let text = std::str::from_utf8(bytes).expect("UTF-8 SSE");
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .rfind(|d| !d.trim().is_empty())
        .map(|d| serde_json::from_str(d.trim_start()).expect("JSON event"))
        .unwrap_or(Value::Null)
}

/// An MCP client of `proxy --upstream` over its stdio (in-memory pipes here).
struct StdioSession {
    to_proxy: Mutex<DuplexStream>,
    from_proxy: Mutex<Lines<BufReader<DuplexStream>>>,
}

impl StdioSession {
    async fn open(rt: &Runtime, url: String) -> StdioSession {
        let (to_proxy, relay_in) = tokio::io::duplex(1 << 20);
        let (relay_out, from_proxy) = tokio::io::duplex(1 << 20);
        let boundary = Boundary::new(Settings::default()).expect("boundary");
        let relay =
            Relay::new(RelayOptions::default()).with_shaper(Arc::new(boundary) as Arc<dyn Shaper>);
        let upstream = Upstream::http(HttpUpstream::new(&url).expect("URL"));
        rt.spawn(async move {
            let _ = relay.run(&upstream, relay_in, relay_out).await;
        });
        let s = StdioSession {
            to_proxy: Mutex::new(to_proxy),
            from_proxy: Mutex::new(BufReader::new(from_proxy).lines()),
        };
        let answer = s.call(&initialize()).await;
        assert!(answer.get("result").is_some(), "initialize: {answer}");
        s.send(&initialized()).await;
        s
    }

    async fn send(&self, line: &str) {
        let mut w = self.to_proxy.lock().await;
        w.write_all(line.as_bytes()).await.expect("write");
        w.write_all(b"\n").await.expect("write");
    }

    async fn call(&self, line: &str) -> Value {
        self.send(line).await;
        let mut lines = self.from_proxy.lock().await;
        loop {
            let line = lines.next_line().await.expect("read").expect("a line");
            let v: Value = serde_json::from_str(&line).expect("JSON line");
            if v.get("id").is_some() && v.get("method").is_none() {
                return v;
            }
        }
    }
}

fn initialize() -> String {
    json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion": VERSION, "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
    .to_string()
}

fn initialized() -> String {
    json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string()
}

fn echo(id: u64) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":"echo","arguments":{"message":"hi"}}})
    .to_string()
}

fn big(id: u64, bytes: usize) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":"big","arguments":{"bytes":bytes}}})
    .to_string()
}

fn echoed(answer: &Value) -> bool {
    answer["result"]["content"][0]["text"] == "Echo: hi"
}

/// The text of the first content item (the page, or the whole result).
fn first_text_len(answer: &Value) -> usize {
    answer["result"]["content"][0]["text"]
        .as_str()
        .map_or(0, str::len)
}

// ---------------------------------------------------------------------------------------------
// The setup.

/// The three ways to one upstream endpoint.
struct Ways {
    direct: HttpSession,
    serve: HttpSession,
    proxy: StdioSession,
}

struct Bench {
    client_rt: Runtime,
    ways: Vec<(Mode, Ways)>,
    _upstream_rt: Runtime,
    _budget_rt: Runtime,
}

fn setup() -> Bench {
    let runtime = |threads: usize, name: &str| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name(name)
            .enable_all()
            .build()
            .expect("runtime")
    };
    let upstream_rt = runtime(1, "upstream");
    let budget_rt = runtime(2, "mcp-budget");
    let client_rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let upstream = serve_router(&upstream_rt, upstream_router());
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .expect("client");
    let mut ways = Vec::new();
    for mode in [Mode::Json, Mode::Sse] {
        let url = format!("{upstream}/{}", mode.name());
        let serve_url = budget_rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
            let server = Server::new(
                ServeOptions::default(),
                Upstream::http(HttpUpstream::new(&url).expect("URL")),
                RelayOptions::default(),
                Settings::default(),
            )
            .expect("serve");
            tokio::spawn(async move {
                let _ = server.run(listener, std::future::pending()).await;
            });
            format!("http://{addr}/mcp")
        });
        let w = client_rt.block_on(async {
            Ways {
                direct: HttpSession::open(&client, url.clone()).await,
                serve: HttpSession::open(&client, serve_url).await,
                proxy: StdioSession::open(&budget_rt, url.clone()).await,
            }
        });
        // The three answer alike.
        client_rt.block_on(async {
            assert!(echoed(&w.direct.call(&echo(1)).await));
            assert!(echoed(&w.serve.call(&echo(1)).await));
            assert!(echoed(&w.proxy.call(&echo(1)).await));
        });
        ways.push((mode, w));
    }
    Bench {
        client_rt,
        ways,
        _upstream_rt: upstream_rt,
        _budget_rt: budget_rt,
    }
}

// ---------------------------------------------------------------------------------------------
// Criterion.

fn criterion_groups(c: &mut Criterion, bench: &Bench) {
    let rt = &bench.client_rt;
    for (mode, w) in &bench.ways {
        let mut group = c.benchmark_group(format!("small_call/{}", mode.name()));
        group.bench_function("direct", |b| {
            b.iter(|| rt.block_on(async { black_box(w.direct.call(&echo(7)).await) }));
        });
        group.bench_function("serve", |b| {
            b.iter(|| rt.block_on(async { black_box(w.serve.call(&echo(7)).await) }));
        });
        group.bench_function("proxy", |b| {
            b.iter(|| rt.block_on(async { black_box(w.proxy.call(&echo(7)).await) }));
        });
        group.finish();
    }
    let Some((_, w)) = bench.ways.iter().find(|(m, _)| matches!(m, Mode::Sse)) else {
        return;
    };
    for bytes in BIG_SIZES {
        let mut group = c.benchmark_group("big_result");
        group.sample_size(10);
        group.bench_function(BenchmarkId::new("direct", bytes), |b| {
            b.iter(|| rt.block_on(async { black_box(w.direct.call(&big(8, bytes)).await) }));
        });
        group.bench_function(BenchmarkId::new("serve-page1", bytes), |b| {
            b.iter(|| rt.block_on(async { black_box(w.serve.call(&big(8, bytes)).await) }));
        });
        group.bench_function(BenchmarkId::new("proxy-page1", bytes), |b| {
            b.iter(|| rt.block_on(async { black_box(w.proxy.call(&big(8, bytes)).await) }));
        });
        group.finish();
    }
}

// ---------------------------------------------------------------------------------------------
// Rounds: the variants back to back.

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn rounds(env: &str, default: usize) -> usize {
    std::env::var(env)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Times the three ways in `rounds` rounds, rotating which goes first; returns the times in
/// seconds per way (direct, serve, proxy).
fn timed_rounds(
    bench: &Bench,
    w: &Ways,
    rounds: usize,
    body: &dyn Fn(u64) -> String,
) -> [Vec<f64>; 3] {
    let mut times: [Vec<f64>; 3] = Default::default();
    for i in 0..rounds {
        for k in 0..3 {
            let way = (i + k) % 3;
            let line = body(i as u64 + 100);
            let start = Instant::now();
            let answer = bench.client_rt.block_on(async {
                match way {
                    0 => w.direct.call(&line).await,
                    1 => w.serve.call(&line).await,
                    _ => w.proxy.call(&line).await,
                }
            });
            let elapsed = start.elapsed().as_secs_f64();
            assert!(answer.get("result").is_some(), "{answer}");
            black_box(answer);
            times[way].push(elapsed);
        }
    }
    times
}

fn tables(bench: &Bench) {
    let n = rounds("SERVE_ROUNDS", 300);
    if n > 0 {
        println!("\n## Small tools/call (echo), {n} rounds of direct, serve, proxy back to back\n");
        println!(
            "| upstream answers | direct median (p90) ms | serve --upstream median (p90) ms | proxy --upstream median (p90) ms | serve ÷ direct | proxy ÷ direct |"
        );
        println!("|---|---:|---:|---:|---:|---:|");
        for (mode, w) in &bench.ways {
            // Warm-up, not counted.
            let _ = timed_rounds(bench, w, 20, &echo);
            let [mut d, mut s, mut p] = timed_rounds(bench, w, n, &echo);
            let p90 = |v: &[f64]| v[(v.len() * 9 / 10).min(v.len() - 1)] * 1e3;
            let (dm, sm, pm) = (median(&mut d), median(&mut s), median(&mut p));
            println!(
                "| {} | {:.3} ({:.3}) | {:.3} ({:.3}) | {:.3} ({:.3}) | {:.2}× | {:.2}× |",
                mode.name(),
                dm * 1e3,
                p90(&d),
                sm * 1e3,
                p90(&s),
                pm * 1e3,
                p90(&p),
                sm / dm,
                pm / dm
            );
        }
    }
    let n = rounds("BIG_ROUNDS", 8);
    let sse = std::env::var("BIG_UPSTREAM").map_or(true, |m| m != "json");
    let Some((_, w)) = bench
        .ways
        .iter()
        .find(|(m, _)| matches!(m, Mode::Sse) == sse)
    else {
        return;
    };
    if n > 0 {
        println!(
            "\n## Big result: the whole result direct vs page 1 through mcp-budget, {n} rounds (upstream answers as BIG_UPSTREAM says: SSE unless `json`)\n"
        );
        println!(
            "| result | direct whole median ms | serve page 1 median ms | proxy page 1 median ms | serve ÷ direct | proxy ÷ direct | page 1 text bytes |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|");
        for bytes in BIG_SIZES {
            let page = bench
                .client_rt
                .block_on(async { w.serve.call(&big(9, bytes)).await });
            let whole = bench
                .client_rt
                .block_on(async { w.direct.call(&big(9, bytes)).await });
            assert!(
                first_text_len(&page) < first_text_len(&whole),
                "page 1 is a page"
            );
            let [mut d, mut s, mut p] = timed_rounds(bench, w, n, &|id| big(id, bytes));
            let (dm, sm, pm) = (median(&mut d), median(&mut s), median(&mut p));
            println!(
                "| {} MB rows | {:.1} | {:.1} | {:.1} | {:.2}× | {:.2}× | {} |",
                bytes / MB,
                dm * 1e3,
                sm * 1e3,
                pm * 1e3,
                sm / dm,
                pm / dm,
                first_text_len(&page)
            );
        }
    }
}

fn main() {
    let bench = setup();
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    criterion_groups(&mut c, &bench);
    c.final_summary();
    tables(&bench);
}
