//! `mcp-budget wrap` / `unwrap` through the built binary, on sample configs of each client
//! (tests/fixtures/wrap/, written from each client's documented format): the wrapped file
//! (snapshots), idempotence, byte-exact unwrap, `--dry-run`, `--only`, the backup, bad files,
//! default paths, and a wrapped command line that really runs the fixture server behind the proxy.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

mod proxy_support;
use proxy_support::Proxy;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

/// The samples: (fixture file, `--client`, the file name the client uses).
const SAMPLES: &[(&str, &str, &str)] = &[
    ("claude-code.mcp.json", "claude-code", ".mcp.json"),
    ("claude-code.claude.json", "claude-code", ".claude.json"),
    (
        "claude_desktop_config.json",
        "claude-desktop",
        "claude_desktop_config.json",
    ),
    ("cursor.mcp.json", "cursor", "mcp.json"),
    ("vscode.mcp.json", "vscode", "mcp.json"),
    ("windsurf.mcp_config.json", "windsurf", "mcp_config.json"),
    ("codex.config.toml", "codex", "config.toml"),
];

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mcp-budget-wrap-{}-{}-{name}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create a temp dir");
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/wrap")
        .join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Copies fixture `name` into `dir` as `as_name`; returns its path.
fn place(dir: &Path, name: &str, as_name: &str) -> PathBuf {
    let path = dir.join(as_name);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("create dirs");
    }
    fs::write(&path, fixture(name)).expect("write the sample");
    path
}

/// Runs `mcp-budget <args>` in `cwd` with a throwaway HOME (so no real config is ever read).
fn run_in(cwd: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("CODEX_HOME")
        .output()
        .expect("run mcp-budget")
}

fn run(dir: &Path, args: &[&str]) -> Output {
    run_in(dir, dir, args)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        stdout(out),
        stderr(out)
    );
}

/// The binary's canonical path, as `wrap` writes it into configs.
fn exe() -> String {
    fs::canonicalize(BIN)
        .expect("canonical path of the binary")
        .to_str()
        .expect("UTF-8 path")
        .to_owned()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn backup_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".mcp-budget.bak");
    PathBuf::from(name)
}

#[test]
fn each_client_wraps_idempotently_and_unwraps_byte_for_byte() {
    for &(name, client, file_name) in SAMPLES {
        let dir = TempDir::new("roundtrip");
        let path = place(dir.path(), name, file_name);
        let config = path.to_str().expect("UTF-8 path");
        let original = fixture(name);

        let out = run(
            dir.path(),
            &[
                "wrap",
                "--client",
                client,
                "--config",
                config,
                "--max-tokens",
                "8000",
            ],
        );
        assert_ok(&out);
        let wrapped = read(&path);
        assert_ne!(wrapped, original, "{name}: wrap changed nothing");
        insta::assert_snapshot!(
            format!("wrapped_{name}"),
            wrapped.replace(&exe(), "<MCP_BUDGET>")
        );
        // The diff on stdout is the change, headed with the path.
        let diff = stdout(&out);
        assert!(
            diff.starts_with(&format!("--- {config}\n+++ {config}\n@@ ")),
            "{name}: {diff}"
        );
        assert!(
            diff.lines()
                .any(|l| l.starts_with('+') && !l.starts_with("+++") && l.contains(&exe())),
            "{name}: {diff}"
        );
        // The backup holds the original, beside the file, and stderr says where.
        assert_eq!(read(&backup_of(&path)), original, "{name}: backup");
        assert!(
            stderr(&out).contains(&backup_of(&path).display().to_string()),
            "{name}: {}",
            stderr(&out)
        );

        // Wrapping again changes nothing and writes nothing.
        let again = run(
            dir.path(),
            &["wrap", "--client", client, "--config", config],
        );
        assert_ok(&again);
        assert_eq!(read(&path), wrapped, "{name}: second wrap changed the file");
        assert_eq!(stdout(&again), "", "{name}: second wrap printed a diff");
        assert!(
            stderr(&again).contains("already wrapped"),
            "{name}: {}",
            stderr(&again)
        );

        // Unwrap gives back the original byte for byte.
        let out = run(
            dir.path(),
            &["unwrap", "--client", client, "--config", config],
        );
        assert_ok(&out);
        assert_eq!(
            read(&path),
            original,
            "{name}: unwrap is not byte-identical"
        );
        // The backup of that write is the wrapped file.
        assert_eq!(read(&backup_of(&path)), wrapped, "{name}: backup of unwrap");

        // Unwrap of a file that is not wrapped changes nothing.
        let out = run(
            dir.path(),
            &["unwrap", "--client", client, "--config", config],
        );
        assert_ok(&out);
        assert_eq!(read(&path), original, "{name}: second unwrap changed it");
        assert_eq!(stdout(&out), "", "{name}: second unwrap printed a diff");
    }
}

#[test]
fn wrapped_entries_keep_env_and_other_keys_and_route_remote_servers_through_upstream() {
    let dir = TempDir::new("keys");
    let path = place(dir.path(), "claude-code.mcp.json", ".mcp.json");
    let before: Value = serde_json::from_str(&read(&path)).expect("JSON");
    let out = run(dir.path(), &["wrap", "--client", "claude-code"]);
    assert_ok(&out);
    let after: Value = serde_json::from_str(&read(&path)).expect("JSON");
    let servers = &after["mcpServers"];

    assert_eq!(
        servers["airtable"],
        json!({"type": "stdio", "command": exe(),
               "args": ["proxy", "--client", "claude-code", "--", "npx", "-y", "airtable-mcp-server"],
               "env": {"AIRTABLE_API_KEY": "YOUR_KEY"}})
    );
    // No `args` before: the server's command alone after `--`; env and unknown keys kept.
    assert_eq!(
        servers["local-tool"]["args"],
        json!([
            "proxy",
            "--client",
            "claude-code",
            "--",
            "/opt/tools/my server"
        ])
    );
    assert_eq!(
        servers["local-tool"]["env"],
        before["mcpServers"]["local-tool"]["env"]
    );
    assert_eq!(servers["local-tool"]["alwaysAllow"], json!(["read"]));
    // A Streamable HTTP server goes through `proxy --upstream`, its headers as `--header`s
    // (the client expands `${…}`), its original entry kept for unwrap.
    let original = r#"{
      "type": "http",
      "url": "https://mcp.notion.com/mcp",
      "headers": {
        "Authorization": "Bearer ${NOTION_TOKEN}"
      }
    }"#;
    assert_eq!(
        servers["notion"],
        json!({"type": "stdio", "command": exe(),
               "args": ["proxy", "--client", "claude-code", "--upstream", "https://mcp.notion.com/mcp",
                        "--header", "Authorization: Bearer ${NOTION_TOKEN}",
                        "--wrapped-entry", original]})
    );
    // Legacy SSE stays as it was, and stderr says why.
    assert_eq!(servers["asana"], before["mcpServers"]["asana"]);
    let err = stderr(&out);
    assert!(
        err.contains("asana: skipped: remote server (https://mcp.asana.com/sse)")
            && err.contains("not legacy SSE"),
        "{err}"
    );
    // Key order of the whole file is the same.
    let keys = |v: &Value| -> Vec<String> {
        v["mcpServers"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    assert_eq!(keys(&after), keys(&before));
}

#[test]
fn dry_run_prints_the_diff_and_writes_nothing() {
    for &(name, client, file_name) in SAMPLES {
        let dir = TempDir::new("dry");
        let path = place(dir.path(), name, file_name);
        let config = path.to_str().expect("UTF-8 path");
        let out = run(
            dir.path(),
            &["wrap", "--client", client, "--config", config, "--dry-run"],
        );
        assert_ok(&out);
        assert_eq!(read(&path), fixture(name), "{name}: dry run wrote");
        assert!(!backup_of(&path).exists(), "{name}: dry run made a backup");
        let diff = stdout(&out);
        assert!(
            diff.lines()
                .any(|l| l.starts_with('+') && !l.starts_with("+++") && l.contains(&exe())),
            "{name}: {diff}"
        );
        assert!(stderr(&out).contains("dry run"), "{name}: {}", stderr(&out));
    }
}

#[test]
fn only_limits_the_change_to_the_named_servers() {
    let dir = TempDir::new("only");
    let path = place(dir.path(), "claude_desktop_config.json", "c.json");
    let config = path.to_str().expect("UTF-8 path");
    let out = run(
        dir.path(),
        &[
            "wrap",
            "--client",
            "claude-desktop",
            "--config",
            config,
            "--only",
            "memory",
        ],
    );
    assert_ok(&out);
    let before: Value = serde_json::from_str(&fixture("claude_desktop_config.json")).expect("JSON");
    let after: Value = serde_json::from_str(&read(&path)).expect("JSON");
    assert_eq!(
        after["mcpServers"]["filesystem"],
        before["mcpServers"]["filesystem"]
    );
    assert_eq!(after["mcpServers"]["memory"]["command"], exe());
    assert!(!stderr(&out).contains("filesystem"), "{}", stderr(&out));

    // Two names, comma-separated, on the Codex TOML.
    let toml = place(dir.path(), "codex.config.toml", "config.toml");
    let config = toml.to_str().expect("UTF-8 path");
    let out = run(
        dir.path(),
        &["wrap", "--config", config, "--only", "docs,multi"],
    );
    assert_ok(&out);
    let text = read(&toml);
    assert!(text.contains("command = '/opt/tools/local-mcp'"), "{text}");
    assert_eq!(text.matches(&exe()).count(), 2, "{text}");

    // Unwrap --only too.
    let out = run(
        dir.path(),
        &["unwrap", "--config", config, "--only", "multi"],
    );
    assert_ok(&out);
    assert_eq!(read(&toml).matches(&exe()).count(), 1);
}

#[test]
fn only_with_an_unknown_name_fails_without_touching_the_file() {
    let dir = TempDir::new("only-unknown");
    let path = place(dir.path(), "cursor.mcp.json", "mcp.json");
    let config = path.to_str().expect("UTF-8 path");
    let out = run(
        dir.path(),
        &["wrap", "--config", config, "--only", "time,nope"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no server named nope") && err.contains("server-name, time, userjot"),
        "{err}"
    );
    assert_eq!(read(&path), fixture("cursor.mcp.json"));
    assert!(!backup_of(&path).exists());
}

#[test]
fn a_bad_file_is_a_clear_error_and_stays_as_it_was() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "broken.json",
            "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",\n",
            "not valid JSON",
        ),
        (
            "servers-list.json",
            "{\"mcpServers\": [\"a\"]}\n",
            "`mcpServers` is not an object",
        ),
        ("array.json", "[1, 2]\n", "the top level is not an object"),
        (
            "broken.toml",
            "[mcp_servers.a]\ncommand = \"x\ncommand = 1\n",
            "not valid TOML",
        ),
        (
            "servers-value.toml",
            "mcp_servers = 3\n",
            "`mcp_servers` is not a table",
        ),
    ];
    for &(name, text, why) in cases {
        let dir = TempDir::new("bad");
        let path = dir.path().join(name);
        fs::write(&path, text).expect("write");
        let config = path.to_str().expect("UTF-8 path");
        let out = run(dir.path(), &["wrap", "--config", config]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("cannot wrap {config} (left as it is)")) && err.contains(why),
            "{name}: {err}"
        );
        assert_eq!(read(&path), text, "{name}: the file was touched");
        assert!(!backup_of(&path).exists(), "{name}: a backup was written");
        assert_eq!(stdout(&out), "", "{name}: printed on stdout");
    }
    // The position of a JSON error is given.
    let dir = TempDir::new("bad-pos");
    let path = dir.path().join("x.json");
    fs::write(&path, "{\n  \"mcpServers\": {,}\n}\n").expect("write");
    let out = run(
        dir.path(),
        &["wrap", "--config", path.to_str().expect("UTF-8")],
    );
    assert!(stderr(&out).contains("line 2"), "{}", stderr(&out));
}

#[test]
fn a_missing_file_names_the_os_error_once() {
    let dir = TempDir::new("missing");
    let out = run(dir.path(), &["wrap", "--config", "nonexist.json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("cannot read nonexist.json"), "{err}");
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
    // No client and no file: say what to give.
    let out = run(dir.path(), &["wrap"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("--client"), "{}", stderr(&out));
}

#[cfg(target_os = "linux")]
#[test]
fn default_paths_follow_each_client_s_documentation() {
    // (client, where its file is, relative to HOME or to the project directory, in project?)
    let cases: &[(&str, &str, &str, bool)] = &[
        ("claude-code", "claude-code.mcp.json", ".mcp.json", true),
        (
            "claude-code",
            "claude-code.claude.json",
            ".claude.json",
            false,
        ),
        (
            "claude-desktop",
            "claude_desktop_config.json",
            ".config/Claude/claude_desktop_config.json",
            false,
        ),
        ("cursor", "cursor.mcp.json", ".cursor/mcp.json", true),
        ("cursor", "cursor.mcp.json", ".cursor/mcp.json", false),
        ("vscode", "vscode.mcp.json", ".vscode/mcp.json", true),
        (
            "vscode",
            "vscode.mcp.json",
            ".config/Code/User/mcp.json",
            false,
        ),
        (
            "windsurf",
            "windsurf.mcp_config.json",
            ".codeium/windsurf/mcp_config.json",
            false,
        ),
        ("codex", "codex.config.toml", ".codex/config.toml", false),
        ("codex", "codex.config.toml", ".codex/config.toml", true),
    ];
    for &(client, name, relative, in_project) in cases {
        let home = TempDir::new("home");
        let project = TempDir::new("project");
        let base = if in_project {
            project.path()
        } else {
            home.path()
        };
        let path = place(base, name, relative);
        let out = run_in(project.path(), home.path(), &["wrap", "--client", client]);
        assert_ok(&out);
        assert!(
            read(&path).contains(&exe()),
            "{client} did not edit {}: {}",
            path.display(),
            stderr(&out)
        );
        assert!(
            stderr(&out).contains(&format!("restart {}", client_name(client))),
            "{}",
            stderr(&out)
        );
    }
    // CODEX_HOME moves Codex's file.
    let home = TempDir::new("codex-home");
    let path = place(home.path(), "codex.config.toml", "elsewhere/config.toml");
    let out = Command::new(BIN)
        .args(["wrap", "--client", "codex"])
        .current_dir(home.path())
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path().join("elsewhere"))
        .output()
        .expect("run");
    assert_ok(&out);
    assert!(read(&path).contains(&exe()));
}

fn client_name(client: &str) -> &'static str {
    match client {
        "claude-code" => "Claude Code",
        "claude-desktop" => "Claude Desktop",
        "cursor" => "Cursor",
        "vscode" => "VS Code",
        "windsurf" => "Windsurf",
        _ => "Codex",
    }
}

#[cfg(unix)]
#[test]
fn permissions_and_symlinks_survive_the_write() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = TempDir::new("perms");
    let real = place(dir.path(), "claude-code.claude.json", "real/claude.json");
    fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).expect("chmod");
    let link = dir.path().join(".claude.json");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let out = run(
        dir.path(),
        &["wrap", "--config", link.to_str().expect("UTF-8")],
    );
    assert_ok(&out);
    assert!(
        fs::symlink_metadata(&link)
            .expect("stat")
            .file_type()
            .is_symlink(),
        "the symlink was replaced by a file"
    );
    assert!(read(&real).contains(&exe()));
    let mode = |p: &Path| fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&real), 0o600);
    assert_eq!(mode(&backup_of(&real)), 0o600);
    // No temporary file is left behind.
    let left: Vec<_> = fs::read_dir(real.parent().expect("dir"))
        .expect("list")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

/// The point of it all: the command line a wrapped config holds starts the proxy in front of
/// the server, with the entry's `env`, and answers tools/list through it.
#[test]
fn a_wrapped_command_line_runs_the_server_behind_the_proxy() {
    let dir = TempDir::new("runs");
    let path = dir.path().join("claude_desktop_config.json");
    let config = json!({"mcpServers": {"fixture": {
        "command": BIN,
        "args": ["fixture-server"],
        "env": {"MCP_BUDGET_MAX_TOKENS": "3000"}
    }}});
    fs::write(
        &path,
        serde_json::to_string_pretty(&config).expect("JSON") + "\n",
    )
    .expect("write");
    let out = run(
        dir.path(),
        &[
            "wrap",
            "--config",
            path.to_str().expect("UTF-8"),
            "--max-tokens",
            "5000",
        ],
    );
    assert_ok(&out);
    let wrapped: Value = serde_json::from_str(&read(&path)).expect("JSON");
    let entry = &wrapped["mcpServers"]["fixture"];
    let command = entry["command"].as_str().expect("command");
    assert_eq!(command, exe());
    assert!(Path::new(command).is_absolute());
    let args: Vec<&str> = entry["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arg"))
        .collect();
    assert_eq!(
        args,
        ["proxy", "--max-tokens", "5000", "--", BIN, "fixture-server"]
    );

    let mut cmd = Command::new(command);
    cmd.args(&args);
    for (key, value) in entry["env"].as_object().expect("env") {
        cmd.env(key, value.as_str().expect("env value"));
    }
    let mut proxy = Proxy::spawn(&mut cmd);
    proxy.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "wrap-test", "version": "0"}}})
        .to_string(),
    );
    let init = proxy.recv_json();
    assert_eq!(init["id"], 0, "{init}");
    proxy.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    proxy.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#);
    let list = proxy.recv_json();
    assert_eq!(list["id"], 1, "{list}");
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    // The fixture's own tools, and the proxy's `read_more`: the answer came through the proxy.
    assert!(names.contains(&"directory_tree"), "{names:?}");
    assert!(names.contains(&"read_more"), "{names:?}");
}

/// Layouts other than the samples': each wraps, wraps again to the same bytes, and unwraps to
/// the exact input.
#[test]
fn odd_layouts_round_trip_exactly() {
    let cases: &[(&str, &str)] = &[
        // Compact JSON on one line.
        (
            "compact.json",
            r#"{"mcpServers":{"a":{"command":"x","args":["-y","srv"]},"b":{"command":"y"}}}"#,
        ),
        // CRLF line endings and a byte-order mark.
        (
            "crlf.json",
            "\u{feff}{\r\n  \"mcpServers\": {\r\n    \"a\": {\r\n      \"command\": \"x\",\r\n      \"args\": [\r\n        \"one\"\r\n      ]\r\n    }\r\n  }\r\n}\r\n",
        ),
        // Escapes in the command survive as written; an empty array; a one-line array with
        // odd spacing; comments and a trailing comma (VS Code).
        (
            "escapes.json",
            "{\n  \"servers\": {\n    \"a\": {\"command\": \"C:\\\\tools\\\\srv.exe\", \"args\": [ ]},\n    \"b\": {\"command\": \"\\u0078\", \"args\": [ \"p\" ,\"q\" ]}, // note\n    \"c\": {\"args\": [\"z\"], /* before */ \"command\": \"w\"},\n  }\n}\n",
        ),
        // Tabs.
        (
            "tabs.json",
            "{\n\t\"mcpServers\": {\n\t\t\"a\": {\n\t\t\t\"command\": \"x\",\n\t\t\t\"args\": [\n\t\t\t\t\"1\",\n\t\t\t\t\"2\"\n\t\t\t]\n\t\t}\n\t}\n}\n",
        ),
        // TOML: inline tables, a dotted server, a literal string, no args, args before
        // command, an empty array.
        (
            "inline.toml",
            "[mcp_servers]\na = { command = \"x\", args = [\"1\"] }\nb = {command='y'}\n\n[mcp_servers.c]\nargs = [\"k\"]\ncommand = \"z\"\n\n[mcp_servers.d]\ncommand = \"q\"\nargs = []\nenv.KEY = \"v\"\n",
        ),
        (
            "dotted.toml",
            "mcp_servers.a.command = \"x\"\nmcp_servers.a.args = [\"1\", \"2\"]\nmcp_servers.b.command = \"y\"\n",
        ),
        // A comment above a `command` with no `args`.
        (
            "comment.toml",
            "[mcp_servers.a]\n# what it is\ncommand = \"x\" # trailing\nenv = { K = \"v\" }\n",
        ),
    ];
    for &(name, text) in cases {
        let dir = TempDir::new("odd");
        let path = dir.path().join(name);
        fs::write(&path, text).expect("write");
        let config = path.to_str().expect("UTF-8");
        let out = run(dir.path(), &["wrap", "--config", config]);
        assert_ok(&out);
        let wrapped = read(&path);
        assert!(wrapped.contains(&exe()), "{name}: {wrapped}");
        assert!(
            !stderr(&out).contains("skipped"),
            "{name}: {}",
            stderr(&out)
        );
        assert_ok(&run(dir.path(), &["wrap", "--config", config]));
        assert_eq!(read(&path), wrapped, "{name}: not idempotent");
        assert_ok(&run(dir.path(), &["unwrap", "--config", config]));
        assert_eq!(read(&path), text, "{name}: unwrap is not exact");
    }
}

/// An entry wrapped by hand as the README once showed (`"command": "mcp-budget"`, on PATH) is
/// recognised: `wrap` leaves it, `unwrap` restores the server's command line.
#[test]
fn a_hand_wrapped_entry_is_recognised() {
    let dir = TempDir::new("by-hand");
    let path = dir.path().join(".mcp.json");
    let text = r#"{
  "mcpServers": {
    "filesystem": {
      "command": "mcp-budget",
      "args": ["proxy", "--max-tokens", "10000", "--",
               "npx", "-y", "@modelcontextprotocol/server-filesystem", "/path/to/dir"]
    }
  }
}
"#;
    fs::write(&path, text).expect("write");
    let out = run(dir.path(), &["wrap", "--client", "claude-code"]);
    assert_ok(&out);
    assert_eq!(read(&path), text);
    assert!(
        stderr(&out).contains("filesystem: already wrapped"),
        "{}",
        stderr(&out)
    );
    let out = run(dir.path(), &["unwrap", "--client", "claude-code"]);
    assert_ok(&out);
    assert_eq!(
        read(&path),
        r#"{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/path/to/dir"]
    }
  }
}
"#
    );
}
