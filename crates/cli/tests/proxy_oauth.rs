//! OAuth sign-in of `mcp-budget proxy --upstream` through the built binary, against a test
//! server of our own that is both the MCP server (it wants a bearer token) and its
//! authorization server (metadata, registration, an authorization endpoint that approves at
//! once, a token endpoint that issues refresh tokens and can be told to refuse them): one
//! sign-in shared by two proxies, the token kept for the user only and never logged, refresh
//! ahead of expiry, a revoked refresh token answered with "run `mcp-budget login`", and
//! `login` / `auth status` / `logout`. (The official conformance suite's `auth/*` scenarios run
//! in tests/conformance.)

mod http_support;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

/// What the test server did and how it behaves.
#[derive(Default)]
struct State {
    base: String,
    /// Access tokens it takes.
    valid: HashSet<String>,
    /// The refresh token it takes.
    refresh: Option<String>,
    /// `expires_in` of the tokens it issues, seconds.
    expires_in: u64,
    /// Refuse every refresh (`invalid_grant`), as after a revocation.
    revoked: bool,
    issued: u64,
    registrations: u32,
    authorizations: u32,
    /// The `redirect_uri` and `client_id` of each authorization request.
    authorized: Vec<(String, String)>,
    code_grants: u32,
    refresh_grants: u32,
    /// The `Authorization` header of each MCP request, with its method.
    mcp_requests: Vec<(String, Option<String>)>,
}

type Shared = Arc<Mutex<State>>;

fn json_response(status: u16, body: &Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("response")
}

fn issue(state: &mut State) -> Value {
    state.issued += 1;
    let access = format!("at-{}", state.issued);
    let refresh = format!("rt-{}", state.issued);
    state.valid.insert(access.clone());
    state.refresh = Some(refresh.clone());
    json!({"access_token": access, "token_type": "Bearer", "expires_in": state.expires_in,
           "refresh_token": refresh, "scope": "mcp"})
}

async fn handle(state: Shared, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or("").to_owned();
    let method = request.method().clone();
    let authorization = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let form: HashMap<String, String> = url_decode(&body);
    let mut s = state.lock().expect("state");
    let base = s.base.clone();
    match (method.as_str(), path.as_str()) {
        ("POST", "/mcp") => {
            let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let rpc = message["method"].as_str().unwrap_or("").to_owned();
            s.mcp_requests.push((rpc.clone(), authorization.clone()));
            let token = authorization
                .as_deref()
                .and_then(|a| a.strip_prefix("Bearer "))
                .unwrap_or("");
            if !s.valid.contains(token) {
                return Response::builder()
                    .status(401)
                    .header(
                        "www-authenticate",
                        format!(
                            "Bearer error=\"invalid_token\", resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                        ),
                    )
                    .body(Full::new(Bytes::from_static(b"{\"error\":\"invalid_token\"}")))
                    .expect("response");
            }
            let id = message["id"].clone();
            if id.is_null() {
                return Response::builder()
                    .status(202)
                    .body(Full::new(Bytes::new()))
                    .expect("response");
            }
            let result = match rpc.as_str() {
                "initialize" => json!({"protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "t", "version": "1"}}),
                "tools/list" => json!({"tools": [{"name": "whoami",
                    "inputSchema": {"type": "object"}}]}),
                _ => json!({"content": [{"type": "text", "text": "hello"}]}),
            };
            json_response(200, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
        }
        ("GET", "/mcp") => Response::builder()
            .status(405)
            .body(Full::new(Bytes::new()))
            .expect("response"),
        ("GET", "/.well-known/oauth-protected-resource/mcp") => json_response(
            200,
            &json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => json_response(
            200,
            &json!({"issuer": base, "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"]}),
        ),
        ("POST", "/register") => {
            s.registrations += 1;
            let asked: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            json_response(
                201,
                &json!({"client_id": "client-1", "redirect_uris": asked["redirect_uris"],
                        "token_endpoint_auth_method": "none"}),
            )
        }
        ("GET", "/authorize") => {
            s.authorizations += 1;
            let q = url_decode(query.as_bytes());
            let ok = q.get("code_challenge_method").map(String::as_str) == Some("S256")
                && q.get("resource").map(String::as_str) == Some(&format!("{base}/mcp"));
            let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
            let client = q.get("client_id").cloned().unwrap_or_default();
            s.authorized.push((redirect.clone(), client));
            let state = q.get("state").cloned().unwrap_or_default();
            let code = if ok { "good-code" } else { "bad-code" };
            Response::builder()
                .status(302)
                .header("location", format!("{redirect}?code={code}&state={state}"))
                .body(Full::new(Bytes::new()))
                .expect("response")
        }
        ("POST", "/token") => match form.get("grant_type").map(String::as_str) {
            Some("authorization_code")
                if form.get("code").map(String::as_str) == Some("good-code")
                    && form.contains_key("code_verifier") =>
            {
                s.code_grants += 1;
                let answer = issue(&mut s);
                json_response(200, &answer)
            }
            Some("refresh_token") => {
                s.refresh_grants += 1;
                if s.revoked || form.get("refresh_token") != s.refresh.as_ref() {
                    json_response(
                        400,
                        &json!({"error": "invalid_grant", "error_description": "revoked"}),
                    )
                } else {
                    let answer = issue(&mut s);
                    json_response(200, &answer)
                }
            }
            _ => json_response(400, &json!({"error": "invalid_request"})),
        },
        _ => Response::builder()
            .status(404)
            .body(Full::new(Bytes::new()))
            .expect("response"),
    }
}

fn url_decode(bytes: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(bytes).into_owned().collect()
}

/// Starts the test server; its MCP URL and its state.
fn start(expires_in: u64) -> (String, Shared) {
    let state: Shared = Arc::new(Mutex::new(State {
        expires_in,
        ..State::default()
    }));
    let shared = Arc::clone(&state);
    let base = Arc::clone(&shared);
    let addr = http_support::serve(move |request| handle(Arc::clone(&base), request));
    shared.lock().expect("state").base = format!("http://{addr}");
    (format!("http://{addr}/mcp"), state)
}

/// A proxy of `url` keeping sign-ins in `dir`, approving them itself.
struct Proxy {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Proxy {
    fn start(url: &str, dir: &std::path::Path) -> Proxy {
        Proxy::start_with(url, dir, &[])
    }

    fn start_with(url: &str, dir: &std::path::Path, flags: &[&str]) -> Proxy {
        let mut child = Command::new(BIN)
            .args(["proxy", "--upstream", url])
            .args(flags)
            .env("MCP_BUDGET_OAUTH_DIR", dir)
            .env("MCP_BUDGET_OAUTH_AUTOAPPROVE", "1")
            .env("MCP_BUDGET_DEBUG", "1")
            .env_remove("MCP_BUDGET_UPSTREAM")
            .env_remove("MCP_BUDGET_HEADERS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp-budget");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Proxy { child, lines }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            let answer: Value = serde_json::from_str(&line).expect("JSON on stdout");
            if answer["id"] == id {
                return answer;
            }
        }
    }

    fn handshake(&mut self) -> Value {
        let answer = self.call(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }

    /// Closes stdin and returns stderr.
    fn finish(mut self) -> String {
        drop(self.child.stdin.take());
        let out = self.child.wait_with_output().expect("wait");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

#[test]
fn one_sign_in_serves_every_proxy_of_the_server_and_its_tokens_stay_private() {
    let (url, state) = start(3600);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut first = Proxy::start(&url, dir.path());
    let answer = first.handshake();
    assert_eq!(answer["result"]["serverInfo"]["name"], "t", "{answer}");
    let answer = first.call(2, "tools/call", json!({"name": "whoami", "arguments": {}}));
    assert_eq!(answer["result"]["content"][0]["text"], "hello", "{answer}");
    let stderr = first.finish();
    {
        let s = state.lock().expect("state");
        assert_eq!(
            (s.registrations, s.authorizations, s.code_grants),
            (1, 1, 1)
        );
        // The first initialize went without a token, every later request with it.
        assert_eq!(s.mcp_requests[0], ("initialize".to_owned(), None));
        assert!(
            s.mcp_requests[1..]
                .iter()
                .all(|(_, a)| a.as_deref() == Some("Bearer at-1")),
            "{:?}",
            s.mcp_requests
        );
    }
    assert!(
        !stderr.contains("at-1") && !stderr.contains("rt-1"),
        "{stderr}"
    );
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .expect("the sign-in directory")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(files.len(), 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = files[0].metadata().expect("metadata").permissions().mode();
        assert_eq!(mode & 0o077, 0, "readable by others: {mode:o}");
    }

    // A second proxy of the same server signs in no more: its first request carries the token.
    let mut second = Proxy::start(&url, dir.path());
    let answer = second.handshake();
    assert!(answer["result"].is_object(), "{answer}");
    second.finish();
    let s = state.lock().expect("state");
    assert_eq!(s.authorizations, 1);
    assert_eq!(
        s.mcp_requests.last().map(|(_, a)| a.clone()),
        Some(Some("Bearer at-1".to_owned()))
    );
}

#[test]
fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    // 10 s to live: within the 60 s margin, so every request refreshes first.
    let (url, state) = start(10);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut proxy = Proxy::start(&url, dir.path());
    proxy.handshake();
    let answer = proxy.call(2, "tools/list", json!({}));
    assert_eq!(answer["result"]["tools"][0]["name"], "whoami", "{answer}");
    proxy.finish();
    let s = state.lock().expect("state");
    assert_eq!(s.authorizations, 1);
    assert!(s.refresh_grants >= 1, "no refresh: {}", s.refresh_grants);
    let last = s.mcp_requests.last().and_then(|(_, a)| a.clone());
    assert_eq!(last, Some(format!("Bearer at-{}", s.issued)));
}

#[test]
fn a_revoked_refresh_token_is_answered_with_run_mcp_budget_login() {
    let (url, state) = start(3600);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut proxy = Proxy::start(&url, dir.path());
    proxy.handshake();
    proxy.finish();
    {
        // The server forgets its tokens and refuses the refresh token.
        let mut s = state.lock().expect("state");
        s.valid.clear();
        s.revoked = true;
    }
    let mut proxy = Proxy::start(&url, dir.path());
    let answer = proxy.handshake();
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("mcp-budget login") && message.contains("revoked"),
        "{answer}"
    );
    proxy.finish();
    // The tokens were dropped: a later request (here `notifications/initialized`) signs in
    // anew, as a first one does.
    let s = state.lock().expect("state");
    assert_eq!(s.refresh_grants, 1);
}

#[test]
fn login_status_and_logout_work_on_the_kept_sign_in() {
    let (url, state) = start(3600);
    let dir = tempfile::tempdir().expect("temp dir");
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .env("MCP_BUDGET_OAUTH_DIR", dir.path())
            .env("MCP_BUDGET_OAUTH_AUTOAPPROVE", "1")
            .output()
            .expect("run mcp-budget");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{args:?}: {text}");
        assert!(!text.contains("at-1") && !text.contains("rt-1"), "{text}");
        text
    };
    let out = run(&["login", &url, "--no-browser"]);
    assert!(out.contains("signed in to"), "{out}");
    let status = run(&["auth", "status"]);
    assert!(
        status.contains(&url) && status.contains("registered") && status.contains("yes"),
        "{status}"
    );
    // The proxy uses the sign-in `login` made: no authorization of its own.
    let mut proxy = Proxy::start(&url, dir.path());
    assert!(proxy.handshake()["result"].is_object());
    proxy.finish();
    assert_eq!(state.lock().expect("state").authorizations, 1);
    let out = run(&["logout", &url]);
    assert!(out.contains("signed out"), "{out}");
    let status = run(&["auth", "status"]);
    assert!(status.contains("no sign-ins kept"), "{status}");
}

#[test]
fn a_pre_registered_client_signs_in_on_its_registered_redirect_port() {
    let (url, state) = start(3600);
    let dir = tempfile::tempdir().expect("temp dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let port_text = port.to_string();
    let mut proxy = Proxy::start_with(
        &url,
        dir.path(),
        &[
            "--oauth-client-id",
            "pre-1",
            "--oauth-redirect-port",
            &port_text,
        ],
    );
    assert!(proxy.handshake()["result"].is_object());
    proxy.finish();
    let s = state.lock().expect("state");
    assert_eq!(s.registrations, 0, "a given client is not registered again");
    assert_eq!(
        s.authorized,
        [(
            format!("http://127.0.0.1:{port}/callback"),
            "pre-1".to_owned()
        )]
    );
}
