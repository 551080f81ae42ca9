//! `mcp-budget wrap` / `unwrap`: route each stdio MCP server in a client's config through
//! `mcp-budget proxy`, or take it out again.
//!
//! A wrapped entry runs `<absolute path of this binary> proxy [--max-tokens N] -- <command>
//! <args>…` (absolute, since Claude Desktop does not read the shell's `PATH`), or with
//! `--command uvx|npx` the published package of this very version (`uvx mcp-budget@V proxy …`,
//! `npx -y mcp-budget@V proxy …`); `env` and every other key stay as they were. Wrapping twice
//! changes nothing; `unwrap` gives back the file byte for byte. The change is printed as a
//! unified diff on stdout; what happened to each server, and where the backup went, on stderr.

use std::process::ExitCode;

use anyhow::{Context as _, bail};

mod client;
mod files;
mod form;
mod json;
mod merge;
mod select;
mod toml;

use client::{Client, Format};
use form::{Action, Launch, Wrapper};
use select::{Selection, Selectors, resolve};

/// Flags of `mcp-budget wrap`.
#[derive(Debug, clap::Args)]
pub(crate) struct WrapArgs {
    #[command(flatten)]
    selectors: Selectors,

    /// Budget in tokens for the proxy of each wrapped server (`proxy --max-tokens N`)
    #[arg(long, value_name = "N")]
    max_tokens: Option<usize>,

    /// How each wrapped entry starts mcp-budget: `path` (this binary's absolute path), `uvx`
    /// (`uvx mcp-budget@<this version>`, the PyPI package) or `npx` (`npx -y
    /// mcp-budget@<this version>`, the npm package)
    #[arg(long = "command", value_enum, value_name = "HOW", default_value_t = LaunchKind::Path)]
    launch: LaunchKind,

    /// Merge the servers into ONE entry (named NAME, default `mcp-budget`) running
    /// `mcp-budget proxy --config <config>.<NAME>.toml` with a `[servers.<name>]` each
    #[arg(long, value_name = "NAME", num_args = 0..=1, default_missing_value = "mcp-budget")]
    merge: Option<String>,
}

/// `wrap --command`: how a wrapped entry starts mcp-budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LaunchKind {
    /// The absolute path of the running binary.
    Path,
    /// uv's package runner, with the PyPI package of the running version.
    Uvx,
    /// npm's package runner, with the npm package of the running version.
    Npx,
}

impl LaunchKind {
    /// The launch of this kind; the package runners get the running binary's version (Cargo's
    /// `CARGO_PKG_VERSION`, the one version of the binary, the wheel and the npm packages).
    ///
    /// # Errors
    /// `Path` only: the running binary's path cannot be found or is not UTF-8.
    fn launch(self) -> anyhow::Result<Launch> {
        const VERSION: &str = env!("CARGO_PKG_VERSION");
        Ok(match self {
            LaunchKind::Path => Launch::path(this_exe()?),
            LaunchKind::Uvx => Launch::uvx(VERSION),
            LaunchKind::Npx => Launch::npx(VERSION),
        })
    }
}

/// Flags of `mcp-budget unwrap`.
#[derive(Debug, clap::Args)]
pub(crate) struct UnwrapArgs {
    #[command(flatten)]
    selectors: Selectors,
}

/// Runs `mcp-budget wrap`.
pub(crate) fn run_wrap(args: WrapArgs) -> anyhow::Result<ExitCode> {
    if args.max_tokens == Some(0) {
        bail!("--max-tokens must be at least 1");
    }
    let launch = args.launch.launch()?;
    if let Some(name) = args.merge {
        return merge::run_merge(&args.selectors, &name, &launch, args.max_tokens);
    }
    let action = Action::Wrap(Wrapper {
        launch,
        max_tokens: args.max_tokens,
        client: args.selectors.client.map(Client::profile),
    });
    run(args.selectors, &action)
}

/// The absolute path of this binary, as configs name it.
fn this_exe() -> anyhow::Result<String> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .context("cannot find the path of this mcp-budget binary")?;
    let exe = exe
        .to_str()
        .context("the path of this mcp-budget binary is not UTF-8, so no config can name it")?;
    // Windows' canonical form is `\\?\C:\…`; clients expect the plain `C:\…`.
    let exe = match exe.strip_prefix(r"\\?\") {
        Some(plain) if plain.as_bytes().get(1) == Some(&b':') => plain.to_owned(),
        _ => exe.to_owned(),
    };
    if in_build_tree(&exe) {
        eprintln!(
            "note: {exe} is in a cargo build directory; the config will point there (install \
             with `cargo install --locked --path crates/cli` for a lasting path)"
        );
    }
    Ok(exe)
}

/// Whether `exe` sits in a cargo `target/{debug,release}` directory.
fn in_build_tree(exe: &str) -> bool {
    let parts: Vec<&str> = exe.split(['/', '\\']).collect();
    parts
        .windows(2)
        .any(|w| w[0] == "target" && (w[1] == "debug" || w[1] == "release"))
}

/// Runs `mcp-budget unwrap`.
pub(crate) fn run_unwrap(args: UnwrapArgs) -> anyhow::Result<ExitCode> {
    run(args.selectors, &Action::Unwrap)
}

fn run(selectors: Selectors, action: &Action) -> anyhow::Result<ExitCode> {
    let (path, format, client) = resolve(&selectors)?;
    let original = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let selection = Selection(selectors.only.clone());
    // `unwrap` first puts back the servers of a merged entry (`wrap --merge`).
    let unmerged = match action {
        Action::Unwrap => merge::unmerge(&original, &format, &selection)
            .with_context(|| format!("cannot unwrap {} (left as it is)", path.display()))?,
        Action::Wrap(_) => None,
    };
    let text = unmerged
        .as_ref()
        .map_or(original.as_str(), |p| p.text.as_str());
    let verb = match action {
        Action::Wrap(_) => "wrap",
        Action::Unwrap => "unwrap",
    };
    let rewritten = match &format {
        Format::Json(places) => json::rewrite(text, places, action, &selection),
        Format::Toml => toml::rewrite(text, action, &selection),
    }
    .with_context(|| format!("cannot {verb} {} (left as it is)", path.display()))?;

    let missing: Vec<&str> = selectors
        .only
        .iter()
        .filter(|n| {
            !rewritten.names.contains(n) && !unmerged.as_ref().is_some_and(|p| p.names.contains(n))
        })
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        bail!(
            "no server named {} in {} (its servers: {}); nothing was written",
            missing.join(", "),
            path.display(),
            if rewritten.names.is_empty() {
                "none".to_owned()
            } else {
                rewritten.names.join(", ")
            }
        );
    }

    if rewritten.notes.is_empty() && unmerged.is_none() {
        eprintln!("{}: no MCP servers found", path.display());
    }
    for (label, what) in unmerged.iter().flat_map(|p| &p.notes) {
        eprintln!("  {label}: {what}");
    }
    for note in &rewritten.notes {
        eprintln!("  {}: {}", note.label, note.outcome);
    }
    let text = original.as_str();
    if rewritten.text == text {
        eprintln!(
            "{}: nothing to {verb}; the file was not touched",
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", files::unified_diff(text, &rewritten.text, &path));
    if selectors.dry_run {
        eprintln!("dry run: {} was not written", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let backup = files::replace(&path, text, &rewritten.text)?;
    eprintln!(
        "wrote {} (the previous version is in {})",
        path.display(),
        backup.display()
    );
    if let Some(servers) = unmerged.and_then(|p| p.removed_file) {
        merge::remove_servers_file(&servers);
    }
    if let Some(client) = client {
        eprintln!(
            "restart {} (or reload its MCP servers) to use it",
            client.name()
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_tree_paths_are_noticed() {
        assert!(in_build_tree("/work/repo/target/debug/mcp-budget"));
        assert!(in_build_tree(r"C:\src\target\release\mcp-budget.exe"));
        assert!(!in_build_tree("/home/me/.cargo/bin/mcp-budget"));
        assert!(!in_build_tree("/opt/target/mcp-budget"));
    }
}
