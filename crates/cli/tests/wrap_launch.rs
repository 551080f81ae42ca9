//! `wrap --command uvx|npx|path` through the built binary: the package runners' entries
//! (`uvx mcp-budget@<version> proxy …`, `npx -y mcp-budget@<version> proxy …`; snapshots),
//! recognised as wrapped whichever way they were launched, unwrapped byte for byte, merged, and
//! `path` (the default) unchanged. tests/packaging runs these command lines against the real
//! packages.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/wrap")
        .join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Runs `mcp-budget <args>` in `dir` with `dir` as HOME (no real config is ever read).
fn run(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("USERPROFILE", dir)
        .env("APPDATA", dir)
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .expect("run mcp-budget");
    assert!(
        out.status.success(),
        "{args:?}: exit {:?}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn package_runner_entries_wrap_once_and_unwrap_byte_for_byte() {
    let samples = [
        ("claude_desktop_config.json", "claude-desktop"),
        ("codex.config.toml", "codex"),
        ("vscode.mcp.json", "vscode"),
    ];
    for (name, client) in samples {
        for how in ["uvx", "npx"] {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join(name);
            let original = fixture(name);
            fs::write(&path, &original).expect("write the sample");
            let config = path.to_str().expect("UTF-8 path");
            let wrap = [
                "wrap",
                "--client",
                client,
                "--config",
                config,
                "--command",
                how,
            ];
            run(dir.path(), &wrap);
            let wrapped = fs::read_to_string(&path).expect("read");
            assert!(
                !wrapped.contains(BIN) && wrapped.contains(&format!("mcp-budget@{VERSION}")),
                "{name} {how}: {wrapped}"
            );
            if name != "vscode.mcp.json" {
                insta::assert_snapshot!(
                    format!("launch_{how}_{name}"),
                    wrapped.replace(VERSION, "<VERSION>")
                );
            }
            // Already wrapped, whichever launcher the second run would use.
            for again in ["uvx", "npx", "path"] {
                let wrap = [
                    "wrap",
                    "--client",
                    client,
                    "--config",
                    config,
                    "--command",
                    again,
                ];
                let out = run(dir.path(), &wrap);
                assert!(out.stdout.is_empty(), "{name} {how} then {again}");
                assert!(stderr(&out).contains("already wrapped"), "{}", stderr(&out));
                assert_eq!(fs::read_to_string(&path).expect("read"), wrapped);
            }
            run(
                dir.path(),
                &["unwrap", "--client", client, "--config", config],
            );
            assert_eq!(
                fs::read_to_string(&path).expect("read"),
                original,
                "{name} {how}: unwrap is not byte-identical"
            );
        }
    }
}

#[test]
fn the_default_is_the_absolute_path_of_this_binary() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("c.json");
    fs::write(&path, r#"{"mcpServers": {"s": {"command": "srv"}}}"#).expect("write");
    let config = path.to_str().expect("UTF-8 path");
    let exe = fs::canonicalize(BIN).expect("canonical path");
    for args in [
        &["wrap", "--config", config][..],
        &["wrap", "--config", config, "--command", "path"][..],
    ] {
        run(dir.path(), args);
        let doc: Value =
            serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("JSON");
        assert_eq!(
            doc["mcpServers"]["s"]["command"],
            exe.to_str().expect("UTF-8")
        );
        assert_eq!(
            doc["mcpServers"]["s"]["args"],
            serde_json::json!(["proxy", "--", "srv"])
        );
        run(dir.path(), &["unwrap", "--config", config]);
    }
}

#[test]
fn a_merged_entry_runs_through_npx_and_unmerges() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("claude_desktop_config.json");
    let original = fixture("claude_desktop_config.json");
    fs::write(&path, &original).expect("write");
    let config = path.to_str().expect("UTF-8 path");
    run(
        dir.path(),
        &["wrap", "--config", config, "--merge", "--command", "npx"],
    );
    let doc: Value = serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("JSON");
    let entry = &doc["mcpServers"]["mcp-budget"];
    assert_eq!(entry["command"], "npx");
    let args: Vec<&str> = entry["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(args[..3], ["-y", &format!("mcp-budget@{VERSION}"), "proxy"]);
    assert!(args.contains(&"--config"), "{args:?}");
    run(dir.path(), &["unwrap", "--config", config]);
    assert_eq!(fs::read_to_string(&path).expect("read"), original);
}
