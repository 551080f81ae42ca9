//! What a new user tripped on (issue 13), each a regression through the built binary.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_mcp-budget");

/// The OS error text of a missing file, as Rust's `std::io::Error` prints it.
const ENOENT: &str = "No such file or directory (os error 2)";

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mcp-budget")
}

/// Asserts that `args` failed with a message on stderr naming `os_error` exactly once, and
/// returns that stderr.
fn fails_naming_once(args: &[&str], os_error: &str) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "{args:?} succeeded; stderr: {stderr}"
    );
    assert_eq!(
        stderr.matches(os_error).count(),
        1,
        "{args:?}: the OS error must be named exactly once; stderr: {stderr}"
    );
    if args.first() == Some(&"proxy") {
        // In proxy mode stdout is the protocol channel.
        assert!(out.stdout.is_empty(), "{args:?} wrote to stdout");
    }
    stderr
}

/// Bug: `cannot read config file nonexist.toml: No such file or directory (os error 2): No
/// such file or directory (os error 2)`: the thiserror message embedded its source and
/// anyhow's `{:#}` printed the source again.
#[test]
fn a_path_error_names_the_os_error_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nonexist.toml");
    let missing = missing.to_str().expect("UTF-8 temp path");
    let no_dir_log = dir.path().join("no-such-dir").join("log.jsonl");
    let no_dir_log = no_dir_log.to_str().expect("UTF-8 temp path");
    let a_dir = dir.path().to_str().expect("UTF-8 temp path");

    let stderr = fails_naming_once(&["proxy", "--config", missing, "--", BIN], ENOENT);
    assert_eq!(
        stderr,
        format!("mcp-budget: cannot read config file {missing}: {ENOENT}\n")
    );

    let stderr = fails_naming_once(&["proxy", "--log", no_dir_log, "--", BIN], ENOENT);
    assert_eq!(
        stderr,
        format!("mcp-budget: cannot open telemetry log {no_dir_log}: {ENOENT}\n")
    );

    // A directory given as the log file: another OS error, named once too.
    let stderr = fails_naming_once(
        &["proxy", "--log", a_dir, "--", BIN],
        "Is a directory (os error 21)",
    );
    assert!(stderr.starts_with(&format!("mcp-budget: cannot open telemetry log {a_dir}: ")));

    // The upstream command that does not exist.
    let no_program = dir.path().join("no-such-server");
    let no_program = no_program.to_str().expect("UTF-8 temp path");
    let stderr = fails_naming_once(&["proxy", "--", no_program], ENOENT);
    assert!(
        stderr.contains("cannot start the upstream server"),
        "{stderr}"
    );

    // The other subcommands that read files.
    fails_naming_once(&["measure", missing], ENOENT);
    fails_naming_once(&["shape", missing], ENOENT);
    // `report` goes on past an unreadable log (its table names it) but exits non-zero.
    fails_naming_once(&["report", missing], ENOENT);
}
