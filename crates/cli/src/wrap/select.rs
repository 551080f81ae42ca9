//! Which config and which servers `wrap` and `unwrap` act on: the flags both take
//! ([`Selectors`]), the config file and format they name ([`resolve`]), and the servers
//! `--only` names ([`Selection`]).

use std::path::PathBuf;

use anyhow::{Context as _, bail};

use super::client::{self, Client, Format};

/// Which config and which servers (flags shared by `wrap` and `unwrap`).
#[derive(Debug, clap::Args)]
pub(crate) struct Selectors {
    /// The client whose MCP config to edit (its documented file; a project's file in the
    /// current directory wins over the user's)
    #[arg(long, value_enum, required_unless_present = "config")]
    pub(crate) client: Option<Client>,

    /// The config file to edit, instead of the client's default
    #[arg(long, value_name = "PATH")]
    pub(crate) config: Option<PathBuf>,

    /// Only these servers (names as in the config, comma-separated)
    #[arg(long, value_name = "NAME,…", value_delimiter = ',')]
    pub(crate) only: Vec<String>,

    /// Print the diff only; write nothing
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// The servers `--only` names (all when empty).
pub(crate) struct Selection(pub(crate) Vec<String>);

impl Selection {
    /// Whether the server `name` is one to act on.
    pub(crate) fn selects(&self, name: &str) -> bool {
        self.0.is_empty() || self.0.iter().any(|n| n == name)
    }
}

/// The config file to edit, its format and its client (when known).
pub(crate) fn resolve(selectors: &Selectors) -> anyhow::Result<(PathBuf, Format, Option<Client>)> {
    Ok(match (&selectors.config, selectors.client) {
        (Some(path), Some(client)) => (path.clone(), client.format(), Some(client)),
        (Some(path), None) => {
            let client = Client::guess(path);
            let format = client.map_or_else(|| client::any_format(path), Client::format);
            (path.clone(), format, client)
        }
        (None, Some(client)) => {
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            (client.default_path(&cwd)?, client.format(), Some(client))
        }
        (None, None) => bail!("name a client with --client or a file with --config"),
    })
}
