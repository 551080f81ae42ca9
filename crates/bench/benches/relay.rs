//! Small calls through the proxy against a pure byte-copy relay, in one run (issue 14: ≤ 1.05×).
//!
//! ```text
//! cargo build --release -p mcp-budget
//! cargo bench -p mcp-budget-bench --bench relay
//! ```
//!
//! Paths to the same fixture server (`mcp-budget fixture-server`, its `echo` tool): `direct`
//! (the server's own pipes), `relay` (`copy-relay` of this crate: stdin → child stdin, child
//! stdout → stdout on two blocking threads, nothing parsed; the tightest floor a stdio proxy
//! pays for its hop), `proxy` (`mcp-budget proxy`) and, when `socat` is on the `PATH`, `socat`
//! (`socat -b 65536 STDIO EXEC:<server>,pipes`: the byte-copy relay issue 14 measured its
//! 1.02–1.03× against, talking to the server over pipes as the other paths do; `RELAY_SOCAT=0`
//! leaves it out, and so does a server command with a word socat's address syntax would
//! change). Calls take turns across the paths, in a new random order each round, so a change
//! of load on the shared machine hits all of them alike; each timed call is one
//! `tools/call` round trip, written as one line in one write (as the SDKs' stdio transports
//! write a message), the reply read as a line and parsed as JSON, as a client would. Prints
//! the medians and the ratios of the proxy to each other path. With
//! `MCP_BUDGET_BASELINE=<another mcp-budget binary>`, its proxy runs as one more path.
//!
//! The `mcp-budget` binary: `MCP_BUDGET_BIN`, else `mcp-budget` beside this bench's target
//! directory (`target/release/mcp-budget`). `RELAY_CALLS` sets the calls per path (default
//! 3,000; the first 10% are a warm-up). `RELAY_SERVER="<command> <args>…"` (split at
//! whitespace) puts another server behind all the paths, e.g. issue 14's own case,
//! `@modelcontextprotocol/server-everything` (`node …/server-everything/dist/index.js stdio`):
//! the call is then `echo` with `{"message":"small"}`.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Path {
    name: &'static str,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Path {
    fn spawn(name: &'static str, command: &mut Command) -> Option<Path> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| eprintln!("cannot start the {name} path: {e}"))
            .ok()?;
        let stdin = child.stdin.take()?;
        let stdout = BufReader::new(child.stdout.take()?);
        Some(Path {
            name,
            child,
            stdin,
            stdout,
        })
    }

    /// Sends `line`, returns the first reply line with `id` (parsed).
    fn request(&mut self, line: &str, id: &Value) -> Option<Value> {
        // One write of the line and its `\n`, as the SDKs' stdio transports write a message.
        let mut framed = Vec::with_capacity(line.len() + 1);
        framed.extend_from_slice(line.as_bytes());
        framed.push(b'\n');
        self.stdin.write_all(&framed).ok()?;
        self.stdin.flush().ok()?;
        let mut buf = String::new();
        loop {
            buf.clear();
            if self.stdout.read_line(&mut buf).ok()? == 0 {
                return None;
            }
            let v: Value = serde_json::from_str(&buf).ok()?;
            if v.get("id") == Some(id) {
                return Some(v);
            }
        }
    }

    fn handshake(&mut self) -> Option<()> {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"relay-bench","version":"0"}}});
        self.request(&init.to_string(), &json!(0))?;
        self.stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .ok()?;
        self.request(
            r#"{"jsonrpc":"2.0","id":"l","method":"tools/list"}"#,
            &json!("l"),
        )?;
        Some(())
    }

    fn call(&mut self, id: u64, arguments: &Value) -> Option<Duration> {
        let line = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"echo","arguments":arguments}})
        .to_string();
        let t = Instant::now();
        let v = self.request(&line, &json!(id))?;
        let d = t.elapsed();
        v.get("result")?;
        Some(d)
    }
}

impl Drop for Path {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn mcp_budget_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MCP_BUDGET_BIN") {
        return Some(PathBuf::from(p));
    }
    // target/release/deps/relay-<hash> → target/release/mcp-budget
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("mcp-budget");
    bin.exists().then_some(bin)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    // `cargo bench` passes `--bench`; a filter that is not ours skips the run.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with("--") && !"relay".contains(a.as_str()))
    {
        return;
    }
    let Some(bin) = mcp_budget_bin() else {
        eprintln!(
            "no mcp-budget binary: build it (cargo build --release -p mcp-budget) or set MCP_BUDGET_BIN"
        );
        return;
    };
    let calls: u64 = std::env::var("RELAY_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let warmup = calls / 10;
    let relay = env!("CARGO_BIN_EXE_copy-relay");
    // The server behind every path, and the echo's arguments.
    let (server, arguments, server_name): (Vec<std::ffi::OsString>, Value, String) =
        match std::env::var("RELAY_SERVER") {
            Ok(cmd) if !cmd.trim().is_empty() => (
                cmd.split_whitespace().map(Into::into).collect(),
                json!({"message": "small"}),
                cmd.trim().to_owned(),
            ),
            _ => (
                vec![bin.clone().into(), "fixture-server".into()],
                json!({"q": "small"}),
                "fixture".to_owned(),
            ),
        };
    let Some((program, server_args)) = server.split_first() else {
        return;
    };
    let mut paths: Vec<Path> = [
        Path::spawn("direct", Command::new(program).args(server_args)),
        Path::spawn("relay", Command::new(relay).arg("--").args(&server)),
        Path::spawn(
            "proxy",
            Command::new(&bin).args(["proxy", "--"]).args(&server),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut expected = 3;
    if std::env::var("RELAY_SOCAT").as_deref() != Ok("0") && on_path("socat") {
        match socat_exec(&server) {
            Some(exec) => {
                paths.extend(Path::spawn(
                    "socat",
                    Command::new("socat").args(["-b", "65536", "STDIO", &exec]),
                ));
                expected += 1;
            }
            None => eprintln!(
                "(no socat path: a word of the server's command has a character socat's EXEC would read as syntax)"
            ),
        }
    }
    // `MCP_BUDGET_BASELINE=<another mcp-budget>`: its proxy as one more path (before/after).
    if let Some(b) = std::env::var_os("MCP_BUDGET_BASELINE") {
        paths.extend(Path::spawn(
            "baseline",
            Command::new(b).args(["proxy", "--"]).args(&server),
        ));
        expected += 1;
    }
    if paths.len() != expected || paths.iter_mut().any(|p| p.handshake().is_none()) {
        eprintln!("a path did not start or answer the handshake");
        return;
    }
    let n = paths.len();
    // The proxy's time of each round ÷ each path's (neighbours in time).
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); n];
    // Each round takes the paths in a new random order: a fixed rotation would always run the
    // same path just before the proxy, and what ran just before sets what is left in the
    // shared caches (measured: a second proxy 3–7% faster than the first when it always ran
    // right after it).
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = 0x9E37_79B9_7F4A_7C15_u64;
    for i in 0..calls {
        let mut round = vec![0.0; n];
        for k in (1..n).rev() {
            // xorshift64: a fair enough shuffle for a bench.
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            order.swap(k, (rng % (k as u64 + 1)) as usize);
        }
        for &p in &order {
            let Some(d) = paths[p].call(10 + i, &arguments) else {
                eprintln!("the {} path stopped answering", paths[p].name);
                return;
            };
            round[p] = d.as_secs_f64();
        }
        if i >= warmup {
            for p in 0..n {
                times[p].push(round[p]);
                ratios[p].push(round[PROXY] / round[p]);
            }
        }
    }
    println!(
        "\n## Small tools/call round trips ({} calls per path, `echo` of {server_name})\n",
        calls - warmup
    );
    println!(
        "| path | median µs | proxy ÷ path (ratio of medians) | proxy ÷ path (median of per-round ratios) |"
    );
    println!("|---|---:|---:|---:|");
    let medians: Vec<f64> = times.into_iter().map(median).collect();
    for ((p, m), r) in paths.iter().zip(&medians).zip(ratios) {
        println!(
            "| {} | {:.1} | {:.3}× | {:.3}× |",
            p.name,
            m * 1e6,
            medians[PROXY] / m,
            median(r)
        );
    }
    println!(
        "\nIssue 14's goal: proxy ÷ a byte-copy relay ≤ 1.05 (`relay`, and `socat` when present)."
    );
}

/// The index of the proxy's path in `paths`.
const PROXY: usize = 2;

/// socat's `EXEC:<command>,pipes` address for the server's words, or `None` when a word has a
/// character other than `A-Za-z0-9@%+=./_-`: socat strips quotes and backslashes, reads `,`
/// and `:` as its own separators, and then splits the command at spaces, so no quoting keeps
/// such a word whole.
fn socat_exec(words: &[std::ffi::OsString]) -> Option<String> {
    let safe = |w: &str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"@%+=./_-".contains(&b))
    };
    let words: Vec<&str> = words.iter().map(|w| w.to_str()).collect::<Option<_>>()?;
    words
        .iter()
        .all(|w| safe(w))
        .then(|| format!("EXEC:{},pipes", words.join(" ")))
}

/// Whether `program` is found on the `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
