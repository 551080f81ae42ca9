//! `docs/reference/cli.md`, generated from the clap definition of the binary, so the reference of
//! every flag never drifts from the code: the test renders each visible subcommand's long help
//! (`--help`) and compares it with the file. `UPDATE_DOCS=1 cargo test -p mcp-budget --bin
//! mcp-budget cli_reference` rewrites the file instead.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::CommandFactory;

use crate::Cli;

/// Where the reference lives, from the workspace root.
const REFERENCE: &str = "docs/reference/cli.md";

/// The whole reference page: a heading and the long help of the binary and of each visible
/// subcommand (nested ones too), in the order clap lists them.
fn render() -> String {
    let mut root = Cli::command();
    // Environment values of the test's own process must not reach the page.
    root = root.mut_args(|a| a.hide_env_values(true));
    root.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
         Generated from the code (`crates/cli/src/cli_docs.rs` renders each command's `--help`);\n\
         do not edit by hand. Regenerate with\n\
         `UPDATE_DOCS=1 cargo test -p mcp-budget --bin mcp-budget cli_reference`.\n\
         Config file keys: [config.md](config.md).\n",
    );
    let mut stack = vec![(String::from("mcp-budget"), root)];
    while let Some((name, mut cmd)) = stack.pop() {
        cmd = cmd.mut_args(|a| a.hide_env_values(true));
        let help = cmd.render_long_help().to_string();
        let _ = write!(out, "\n## {name}\n\n```text\n{}\n```\n", help.trim_end());
        let subs: Vec<_> = cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
            .map(|s| (format!("{name} {}", s.get_name()), s.clone()))
            .collect();
        stack.extend(subs.into_iter().rev());
    }
    out
}

#[test]
fn cli_reference_matches_the_code() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(REFERENCE);
    let want = render();
    if std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &want).expect("write the CLI reference");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{REFERENCE} differs from the flags in the code; regenerate it with\n  \
         UPDATE_DOCS=1 cargo test -p mcp-budget --bin mcp-budget cli_reference\n\
         (first differing line: {:?})",
        have.lines()
            .zip(want.lines())
            .find(|(a, b)| a != b)
            .map_or_else(
                || "one is a prefix of the other".to_owned(),
                |(a, b)| format!("file {a:?} vs code {b:?}")
            )
    );
}
