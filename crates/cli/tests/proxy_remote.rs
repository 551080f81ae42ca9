//! `mcp-budget proxy --upstream <URL>` through the built binary: where the URL and headers come
//! from (flags, MCP_BUDGET_UPSTREAM / MCP_BUDGET_HEADERS, `[upstream]` of the config file) and
//! which wins, that header values never reach stderr, that a wrapped remote entry's command
//! line runs, and the errors of a wrong command line.

mod http_support;

use std::collections::HashMap;
use std::io::Write as _;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

type Headers = HashMap<String, String>;

/// A server that records the headers of each request and answers 401.
fn start_server() -> (String, Arc<Mutex<Vec<Headers>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let addr = http_support::serve(move |request: Request<Incoming>| {
        let headers: Headers = request
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("?").to_owned()))
            .collect();
        if let Ok(mut r) = record.lock() {
            r.push(headers);
        }
        async {
            Response::builder()
                .status(401)
                .body(Full::new(Bytes::from_static(b"no")))
                .expect("response")
        }
    });
    (format!("http://{addr}/mcp"), seen)
}

/// Runs the binary with `args` and `env`, writes `INITIALIZE` to its stdin and closes it.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_remove("MCP_BUDGET_UPSTREAM")
        .env_remove("MCP_BUDGET_HEADERS")
        .env("MCP_BUDGET_DEBUG", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("spawn mcp-budget");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(format!("{INITIALIZE}\n").as_bytes());
    }
    child.wait_with_output().expect("wait")
}

fn first_answer(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn headers_come_from_config_env_and_flags_and_their_values_are_never_logged() {
    let (url, seen) = start_server();
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("budget.toml");
    std::fs::write(
        &config,
        format!(
            "[upstream]\nurl = \"{url}\"\nheaders = {{ Authorization = \"Bearer from-config\", X-Team = \"config-team\", X-Only-Config = \"c1\" }}\n"
        ),
    )
    .expect("write config");
    let config = config.to_string_lossy().into_owned();
    let out = run(
        &[
            "proxy",
            "--config",
            &config,
            "--header",
            "authorization: Bearer from-flag",
        ],
        &[("MCP_BUDGET_HEADERS", "X-Team: env-team\nX-Only-Env: e1\n")],
    );
    assert!(out.status.success(), "{out:?}");
    let answer = first_answer(&out);
    assert_eq!(answer["id"], 1);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("HTTP 401"),
        "{answer}"
    );
    let headers = seen.lock().map(|s| s[0].clone()).unwrap_or_default();
    assert_eq!(headers["authorization"], "Bearer from-flag");
    assert_eq!(headers["x-team"], "env-team");
    assert_eq!(headers["x-only-config"], "c1");
    assert_eq!(headers["x-only-env"], "e1");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for secret in [
        "from-flag",
        "from-config",
        "env-team",
        "config-team",
        "c1",
        "e1",
    ] {
        assert!(!stderr.contains(secret), "{secret} in stderr: {stderr}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains(secret),
            "{secret} in stdout"
        );
    }
}

#[test]
fn the_url_comes_from_the_flag_then_the_environment_then_the_config() {
    let (url, seen) = start_server();
    let out = run(&["proxy"], &[("MCP_BUDGET_UPSTREAM", &url)]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        first_answer(&out)["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("HTTP 401")
    );
    assert_eq!(seen.lock().map(|s| s.len()).unwrap_or_default(), 1);
    // The flag wins over the environment (which names a port nothing listens on).
    let out = run(
        &["proxy", "--upstream", &url],
        &[("MCP_BUDGET_UPSTREAM", "http://127.0.0.1:9/mcp")],
    );
    assert!(
        first_answer(&out)["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("HTTP 401")
    );
    assert_eq!(seen.lock().map(|s| s.len()).unwrap_or_default(), 2);
}

#[test]
fn a_wrapped_remote_entry_s_command_line_runs() {
    let (url, seen) = start_server();
    let original = format!(r#"{{"type": "http", "url": "{url}"}}"#);
    let out = run(
        &[
            "proxy",
            "--max-tokens",
            "4000",
            "--upstream",
            &url,
            "--header",
            "Authorization: Bearer t",
            "--wrapped-entry",
            &original,
        ],
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(first_answer(&out)["id"], 1);
    let headers = seen.lock().map(|s| s[0].clone()).unwrap_or_default();
    assert_eq!(headers["authorization"], "Bearer t");
}

#[test]
fn a_wrong_command_line_is_a_clear_error() {
    let both = run(
        &["proxy", "--upstream", "http://127.0.0.1:9/mcp", "--", "cat"],
        &[],
    );
    assert!(!both.status.success());
    assert!(
        String::from_utf8_lossy(&both.stderr).contains("not both"),
        "{both:?}"
    );
    let neither = run(&["proxy"], &[]);
    assert!(!neither.status.success());
    assert!(
        String::from_utf8_lossy(&neither.stderr).contains("--upstream <URL>"),
        "{neither:?}"
    );
    let bad = run(&["proxy", "--upstream", "ftp://x/mcp"], &[]);
    assert!(!bad.status.success());
    let header = run(
        &[
            "proxy",
            "--upstream",
            "http://127.0.0.1:9/mcp",
            "--header",
            "NoColonSecretValue",
        ],
        &[],
    );
    assert!(!header.status.success());
    let stderr = String::from_utf8_lossy(&header.stderr);
    assert!(stderr.contains("Name: value"), "{stderr}");
}
