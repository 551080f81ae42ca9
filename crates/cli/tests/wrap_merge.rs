//! `mcp-budget wrap --merge` / `unwrap` through the built binary (issue 15 §3: "`wrap` can offer
//! to merge a client's servers into one entry"): the merged client file and servers file
//! (snapshots), byte-exact unwrap, idempotence, `--dry-run`, `--only`, names the proxy refuses,
//! and a merged entry that really runs two fixture servers behind one proxy.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

mod proxy_support;
use proxy_support::Proxy;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/wrap")
        .join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Runs `mcp-budget <args>` in `dir` with `dir` as HOME (so no real config is ever read).
fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".config"))
        .env_remove("CODEX_HOME")
        .output()
        .expect("run mcp-budget")
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

fn exe() -> String {
    fs::canonicalize(BIN)
        .expect("canonical path")
        .to_str()
        .expect("UTF-8")
        .to_owned()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The servers file `wrap --merge` writes for `config` (canonical) and entry `name`.
fn servers_of(config: &Path, name: &str) -> PathBuf {
    let mut s = fs::canonicalize(config)
        .expect("canonical")
        .into_os_string();
    s.push(format!(".{name}.toml"));
    PathBuf::from(s)
}

/// A temp dir with a canonical path (macOS' /var is a symlink).
fn temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = fs::canonicalize(dir.path()).expect("canonical");
    (dir, path)
}

/// Replaces the machine-dependent paths for snapshots.
fn portable(text: &str, dir: &Path) -> String {
    let dir = dir.to_str().expect("UTF-8");
    let json_dir = serde_json::to_string(dir).expect("JSON");
    let json_dir = &json_dir[1..json_dir.len() - 1];
    text.replace(&exe(), "<MCP_BUDGET>")
        .replace(dir, "<DIR>")
        .replace(json_dir, "<DIR>")
}

/// merge, merge again, unwrap, on one sample: returns (merged client file, servers file).
fn round_trip(sample: &str, client: &str, file_name: &str) -> (String, String, PathBuf) {
    let (_keep, dir) = temp();
    let path = dir.join(file_name);
    let original = fixture(sample);
    fs::write(&path, &original).expect("write");
    let config = path.to_str().expect("UTF-8");

    let out = run(
        &dir,
        &["wrap", "--merge", "--client", client, "--config", config],
    );
    assert_ok(&out);
    let merged = read(&path);
    let servers_path = servers_of(&path, "mcp-budget");
    let servers = read(&servers_path);
    assert_ne!(merged, original, "{sample}: merge changed nothing");
    // Both changes are printed as diffs; the backup holds the original.
    let diff = stdout(&out);
    assert!(diff.starts_with(&format!("--- {config}\n")), "{diff}");
    assert!(
        diff.contains(&format!("+++ {}\n", servers_path.display())),
        "{diff}"
    );
    assert_eq!(
        read(&dir.join(format!("{file_name}.mcp-budget.bak"))),
        original
    );
    // The entry names the servers file by its absolute path.
    assert!(
        merged.contains(servers_path.to_str().expect("UTF-8")),
        "{merged}"
    );

    // Merging again changes nothing and prints no diff.
    let again = run(
        &dir,
        &["wrap", "--merge", "--client", client, "--config", config],
    );
    assert_ok(&again);
    assert_eq!(
        read(&path),
        merged,
        "{sample}: second merge changed the file"
    );
    assert_eq!(read(&servers_path), servers);
    assert_eq!(stdout(&again), "");
    assert!(
        stderr(&again).contains("already merged"),
        "{}",
        stderr(&again)
    );

    // Unwrap gives back the original byte for byte and removes the servers file.
    let out = run(&dir, &["unwrap", "--client", client, "--config", config]);
    assert_ok(&out);
    assert_eq!(
        read(&path),
        original,
        "{sample}: unwrap is not byte-identical"
    );
    assert!(!servers_path.exists(), "{sample}: servers file left behind");
    (portable(&merged, &dir), portable(&servers, &dir), dir)
}

#[test]
fn claude_code_merges_what_the_proxy_runs_and_unwraps_byte_for_byte() {
    let (merged, servers, _) = round_trip("claude-code.mcp.json", "claude-code", ".mcp.json");
    insta::assert_snapshot!("merged_claude_code", merged);
    insta::assert_snapshot!("servers_claude_code", servers);
    let json: Value = serde_json::from_str(&merged).expect("merged is JSON");
    let names: Vec<&String> = json["mcpServers"]
        .as_object()
        .expect("map")
        .keys()
        .collect();
    // Merged: filesystem (its place), airtable, no-args-listed. Left: local-tool (alwaysAllow),
    // notion (${NOTION_TOKEN}), asana (SSE).
    assert_eq!(names, ["mcp-budget", "local-tool", "notion", "asana"]);
    assert!(servers.contains("[servers.filesystem]"), "{servers}");
    assert!(servers.contains("AIRTABLE_API_KEY"), "{servers}");
    assert!(!servers.contains("notion"), "{servers}");
}

#[test]
fn codex_merges_tables_and_unwraps_byte_for_byte() {
    let (merged, servers, _) = round_trip("codex.config.toml", "codex", "config.toml");
    insta::assert_snapshot!("merged_codex", merged);
    insta::assert_snapshot!("servers_codex", servers);
    // figma (bearer_token_env_var) stays its own entry; docs keeps its env sub-table's values.
    let headers: Vec<&str> = merged.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(headers, ["[mcp_servers.mcp-budget]", "[mcp_servers.figma]"]);
    assert!(servers.contains("API_KEY = \"value\""), "{servers}");
}

#[test]
fn dry_run_writes_nothing() {
    let (_keep, dir) = temp();
    let path = dir.join(".mcp.json");
    let original = fixture("claude-code.mcp.json");
    fs::write(&path, &original).expect("write");
    let out = run(
        &dir,
        &[
            "wrap",
            "--merge",
            "--dry-run",
            "--config",
            path.to_str().expect("UTF-8"),
        ],
    );
    assert_ok(&out);
    assert!(
        stdout(&out).contains("+[servers.airtable]"),
        "{}",
        stdout(&out)
    );
    assert_eq!(read(&path), original);
    assert!(!servers_of(&path, "mcp-budget").exists());
    assert!(!dir.join(".mcp.json.mcp-budget.bak").exists());
}

#[test]
fn only_scattered_servers_and_odd_names_round_trip() {
    let (_keep, dir) = temp();
    let path = dir.join("claude_desktop_config.json");
    let original = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n    \"b\": {\"command\": \"y\"},\n    \"my.server\": {\"command\": \"z\"},\n    \"c\": {\"command\": \"w\", \"args\": [\"1\"]}\n  },\n  \"other\": true\n}\n";
    fs::write(&path, original).expect("write");
    let config = path.to_str().expect("UTF-8");
    let out = run(
        &dir,
        &[
            "wrap",
            "--merge",
            "all-in-one",
            "--only",
            "a,c,my.server",
            "--config",
            config,
        ],
    );
    assert_ok(&out);
    assert!(
        stderr(&out).contains("my.server: skipped: not a server name"),
        "{}",
        stderr(&out)
    );
    let merged: Value = serde_json::from_str(&read(&path)).expect("JSON");
    let names: Vec<&String> = merged["mcpServers"]
        .as_object()
        .expect("map")
        .keys()
        .collect();
    assert_eq!(names, ["all-in-one", "b", "my.server"]);
    assert_eq!(merged["other"], json!(true));
    let servers = read(&servers_of(&path, "all-in-one"));
    assert!(servers.contains("[servers.a]") && servers.contains("[servers.c]"));
    assert!(!servers.contains("[servers.b]"), "{servers}");
    // `unwrap --only <the merged entry>` puts them back where they were.
    let out = run(
        &dir,
        &["unwrap", "--only", "all-in-one", "--config", config],
    );
    assert_ok(&out);
    assert_eq!(read(&path), original);

    // A bad entry name, or one taken by a server that is not merged, is refused.
    let bad = run(&dir, &["wrap", "--merge", "a b", "--config", config]);
    assert!(!bad.status.success());
    let taken = run(
        &dir,
        &["wrap", "--merge", "b", "--only", "a", "--config", config],
    );
    assert!(!taken.status.success());
    assert!(
        stderr(&taken).contains("is there already"),
        "{}",
        stderr(&taken)
    );
    assert_eq!(read(&path), original);
}

#[test]
fn codex_scattered_tables_round_trip() {
    let (_keep, dir) = temp();
    let path = dir.join("config.toml");
    let original = "# top\n[mcp_servers.a]\ncommand = \"x\"\n\n[profiles.p]\nmodel = \"m\"\n\n# b comes next\n[mcp_servers.b]\ncommand = \"y\"\nargs = [\"1\"]\n[mcp_servers.b.env]\nK = \"v\"\n\n[mcp_servers.c]\ncommand = \"z\"\n";
    fs::write(&path, original).expect("write");
    let config = path.to_str().expect("UTF-8");
    let out = run(
        &dir,
        &["wrap", "--merge", "--only", "a,c", "--config", config],
    );
    assert_ok(&out);
    let merged = read(&path);
    let headers: Vec<&str> = merged.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(
        headers,
        [
            "[mcp_servers.mcp-budget]",
            "[profiles.p]",
            "[mcp_servers.b]",
            "[mcp_servers.b.env]"
        ]
    );
    let out = run(&dir, &["unwrap", "--config", config]);
    assert_ok(&out);
    assert_eq!(read(&path), original);
}

#[test]
fn a_wrapped_file_merges_with_the_servers_own_command_lines_and_unwraps_to_the_start() {
    let (_keep, dir) = temp();
    let path = dir.join(".mcp.json");
    let original = "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"1\"]}, \"b\": {\"command\": \"y\"}}}\n";
    fs::write(&path, original).expect("write");
    let config = path.to_str().expect("UTF-8");
    assert_ok(&run(&dir, &["wrap", "--config", config]));
    assert_ok(&run(&dir, &["wrap", "--merge", "--config", config]));
    let servers = read(&servers_of(&path, "mcp-budget"));
    assert!(
        servers.contains("[servers.a]\ncommand = \"x\"\nargs = [\"1\"]"),
        "{servers}"
    );
    assert_ok(&run(&dir, &["unwrap", "--config", config]));
    assert_eq!(read(&path), original);
}

#[test]
fn the_merged_entry_runs_both_servers_behind_one_proxy() {
    let (_keep, dir) = temp();
    let path = dir.join("claude_desktop_config.json");
    let config = json!({"mcpServers": {
        "one": {"command": BIN, "args": ["fixture-server"]},
        "two": {"command": BIN, "args": ["fixture-server"], "env": {"UNUSED": "1"}}
    }});
    fs::write(&path, serde_json::to_string_pretty(&config).expect("JSON")).expect("write");
    let out = run(
        &dir,
        &[
            "wrap",
            "--merge",
            "--max-tokens",
            "5000",
            "--config",
            path.to_str().expect("UTF-8"),
        ],
    );
    assert_ok(&out);
    let merged: Value = serde_json::from_str(&read(&path)).expect("JSON");
    let entries = merged["mcpServers"].as_object().expect("map");
    assert_eq!(entries.len(), 1);
    let entry = &entries["mcp-budget"];
    let command = entry["command"].as_str().expect("command");
    let args: Vec<&str> = entry["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string"))
        .collect();
    assert_eq!(
        &args[..5],
        [
            "proxy",
            "--max-tokens",
            "5000",
            "--config",
            servers_of(&path, "mcp-budget").to_str().expect("UTF-8")
        ]
    );

    let mut proxy = Proxy::spawn(Command::new(command).args(&args));
    proxy.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "merge-test", "version": "0"}}})
        .to_string(),
    );
    let init = proxy.recv_json();
    assert_eq!(init["id"], 0, "{init}");
    proxy.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    proxy.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#);
    let list = loop {
        let msg = proxy.recv_json();
        if msg["id"] == 1 {
            break msg;
        }
    };
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"one__echo"), "{names:?}");
    assert!(names.contains(&"two__echo"), "{names:?}");
    proxy.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "two__echo", "arguments": {"text": "hi"}}})
        .to_string(),
    );
    let answer = loop {
        let msg = proxy.recv_json();
        if msg["id"] == 2 {
            break msg;
        }
    };
    assert!(answer.get("result").is_some(), "{answer}");
}
