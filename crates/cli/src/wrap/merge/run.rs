//! The command side of `wrap --merge` and of `unwrap` on a merged entry: files, diff, messages.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};

use super::plan::{HEADER, Plan, Record, entry_args, plan_merge, plan_unmerge, valid_name};
use crate::wrap::client::Format;
use crate::wrap::files;
use crate::wrap::form::Launch;
use crate::wrap::select::{Selection, Selectors, resolve};

/// Where the servers file of the merged entry `name` for the client file `path` goes:
/// `<path>.<name>.toml`, beside the real file (symlinks followed), absolute.
///
/// # Errors
/// The path cannot be resolved or is not UTF-8.
fn servers_path(path: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let real = std::fs::canonicalize(path)
        .with_context(|| format!("cannot resolve {}", path.display()))?;
    let mut file = real.as_os_str().to_owned();
    file.push(format!(".{name}.toml"));
    Ok(PathBuf::from(file))
}

/// The merge plan of `text` (pure: no file is read or written).
#[allow(clippy::too_many_arguments)]
fn plan(
    text: &str,
    format: &Format,
    selection: &Selection,
    name: &str,
    launch: &Launch,
    max_tokens: Option<usize>,
    servers: &str,
    from: &str,
) -> anyhow::Result<Plan> {
    let args = |record: &Record| launch.then(entry_args(max_tokens, servers, record));
    let exe = launch.command.as_str();
    let selects = |n: &str| selection.selects(n);
    match format {
        Format::Json(places) => super::json::with_members(text, places, &|members, entry| {
            plan_merge(
                text,
                members,
                name,
                &selects,
                &|first, record| entry(first, name, args(record), exe),
                from,
            )
        }),
        Format::Toml => {
            let members = super::toml::members(text)?;
            plan_merge(
                text,
                &members,
                name,
                &selects,
                &|_, record| super::toml::entry_text(name, exe, &args(record)),
                from,
            )
        }
    }
}

/// The unmerge plan of `text`, when it has a selected merged entry.
///
/// # Errors
/// The text does not parse.
pub(crate) fn unmerge(
    text: &str,
    format: &Format,
    selection: &Selection,
) -> anyhow::Result<Option<Plan>> {
    let selects = |n: &str| selection.selects(n);
    match format {
        Format::Json(places) => super::json::with_members(text, places, &|members, _| {
            plan_unmerge(text, members, &selects)
        }),
        Format::Toml => plan_unmerge(text, &super::toml::members(text)?, &selects),
    }
}

/// Removes the servers file a merged entry named, if `wrap --merge` wrote it (its first line
/// says so); says what happened on stderr.
pub(crate) fn remove_servers_file(path: &str) {
    match std::fs::read_to_string(path) {
        Ok(text) if text.starts_with(HEADER) => match std::fs::remove_file(path) {
            Ok(()) => eprintln!("removed {path}"),
            Err(e) => eprintln!("note: cannot remove {path}: {e}"),
        },
        Ok(_) => eprintln!("note: {path} was not written by `wrap --merge`; left as it is"),
        Err(_) => {}
    }
}

/// Runs `mcp-budget wrap --merge [NAME]`.
///
/// # Errors
/// A bad name, an unreadable or unparsable config, `--only` naming no server, or a file that
/// cannot be written.
pub(crate) fn run_merge(
    selectors: &Selectors,
    name: &str,
    launch: &Launch,
    max_tokens: Option<usize>,
) -> anyhow::Result<ExitCode> {
    if !valid_name(name) {
        bail!("--merge {name:?}: the entry's name has 1 to 64 of A-Z a-z 0-9 _ - (no `__`)");
    }
    let (path, format, client) = resolve(selectors)?;
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let servers = servers_path(&path, name)?;
    let servers_str = servers
        .to_str()
        .context("the servers file's path is not UTF-8, so no config can name it")?;
    let selection = Selection(selectors.only.clone());
    let plan = plan(
        &text,
        &format,
        &selection,
        name,
        launch,
        max_tokens,
        servers_str,
        &path.display().to_string(),
    )
    .with_context(|| format!("cannot merge {} (left as it is)", path.display()))?;

    let missing: Vec<&str> = selectors
        .only
        .iter()
        .filter(|n| !plan.names.contains(n))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        bail!(
            "no server named {} in {}; nothing was written",
            missing.join(", "),
            path.display()
        );
    }
    if plan.notes.is_empty() {
        eprintln!("{}: no MCP servers found", path.display());
    }
    for (label, what) in &plan.notes {
        eprintln!("  {label}: {what}");
    }
    let Some(servers_text) = plan.servers_file.as_deref().filter(|_| plan.text != text) else {
        eprintln!(
            "{}: nothing to merge; the file was not touched",
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    };
    let existing = std::fs::read_to_string(&servers).ok();
    if existing.as_ref().is_some_and(|e| !e.starts_with(HEADER)) {
        {
            bail!(
                "{} exists and was not written by `wrap --merge`; move it away or merge under \
                 another name (`--merge NAME`); nothing was written",
                servers.display()
            );
        }
    }
    print!("{}", files::unified_diff(&text, &plan.text, &path));
    print!(
        "{}",
        files::unified_diff(existing.as_deref().unwrap_or(""), servers_text, &servers)
    );
    if selectors.dry_run {
        eprintln!(
            "dry run: neither {} nor {} was written",
            path.display(),
            servers.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let permissions = std::fs::metadata(&path)
        .with_context(|| format!("cannot read the permissions of {}", path.display()))?
        .permissions();
    files::write_new(&servers, servers_text.as_bytes(), &permissions)
        .with_context(|| format!("cannot write {}", servers.display()))?;
    let backup = match files::replace(&path, &text, &plan.text) {
        Ok(backup) => backup,
        Err(e) => {
            if existing.is_none() {
                let _ = std::fs::remove_file(&servers);
            }
            return Err(e);
        }
    };
    eprintln!(
        "wrote {} and {} (the previous version of the first is in {})",
        servers.display(),
        path.display(),
        backup.display()
    );
    if let Some(client) = client {
        eprintln!(
            "restart {} (or reload its MCP servers) to use it",
            client.name()
        );
    }
    Ok(ExitCode::SUCCESS)
}
