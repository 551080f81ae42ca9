//! `--upstream <URL>` and `--header 'Name: value'`: the proxy in front of a remote MCP server
//! over Streamable HTTP, its URL and headers from flags, the environment and the config file.
//!
//! Precedence: the URL from `--upstream`, else `MCP_BUDGET_UPSTREAM`, else `[upstream] url`;
//! headers from `[upstream] headers`, then `MCP_BUDGET_HEADERS` (one `Name: value` a line),
//! then `--header`, a later one replacing an earlier one of the same name. Header values are
//! never printed.

use anyhow::Context as _;
use mcp_budget_proxy::config::FileUpstream;
use mcp_budget_proxy::relay::{HttpUpstream, Upstream};

/// The environment variable of the remote server's URL.
const ENV_URL: &str = "MCP_BUDGET_UPSTREAM";
/// The environment variable of headers: `Name: value` lines.
const ENV_HEADERS: &str = "MCP_BUDGET_HEADERS";

/// Flags of a remote upstream.
#[derive(Debug, clap::Args)]
pub(crate) struct RemoteArgs {
    /// A remote MCP server's Streamable HTTP endpoint, instead of `-- <COMMAND>` [env:
    /// MCP_BUDGET_UPSTREAM]
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,

    /// With --upstream: a header for every request, as `Name: value` (repeatable; also
    /// MCP_BUDGET_HEADERS, one a line); e.g. 'Authorization: Bearer <token>'
    #[arg(long = "header", short = 'H', value_name = "NAME: VALUE")]
    headers: Vec<String>,

    /// The client config entry `mcp-budget wrap` replaced (kept there for `unwrap`; ignored)
    #[arg(long, value_name = "JSON", hide = true)]
    wrapped_entry: Option<String>,

    /// The client config entries `mcp-budget wrap --merge` replaced (kept there for `unwrap`;
    /// ignored)
    #[arg(long, value_name = "JSON", hide = true)]
    merged_entries: Option<String>,
}

impl RemoteArgs {
    /// Whether a remote server is given by flag or environment (not by the config file).
    pub(crate) fn given(&self) -> bool {
        self.upstream.is_some() || std::env::var(ENV_URL).is_ok_and(|u| !u.trim().is_empty())
    }

    /// With a server command: `--upstream` and `--header` make no sense.
    pub(crate) fn refuse_with_command(&self) -> anyhow::Result<()> {
        if self.upstream.is_some() {
            anyhow::bail!("give either --upstream <URL> or `-- <COMMAND>`, not both");
        }
        if !self.headers.is_empty() {
            anyhow::bail!("--header is for a remote server (--upstream <URL>)");
        }
        Ok(())
    }

    /// The remote upstream from flags, the environment and `[upstream]` of the config file.
    pub(crate) fn upstream(&self, file: Option<&FileUpstream>) -> anyhow::Result<Upstream> {
        let env_url = std::env::var(ENV_URL).ok().filter(|u| !u.trim().is_empty());
        let url = self
            .upstream
            .clone()
            .or(env_url)
            .or_else(|| file.and_then(|f| f.url.clone()))
            .context(
                "missing the upstream server: give its command after `--`, or the URL of a \
                 remote one with --upstream <URL>",
            )?;
        let mut upstream = HttpUpstream::new(&url)?;
        if let Some(file) = file {
            for (name, value) in &file.headers {
                upstream
                    .set_header(name, value)
                    .context("in [upstream] headers of the config file")?;
            }
        }
        if let Ok(lines) = std::env::var(ENV_HEADERS) {
            for line in lines.lines().filter(|l| !l.trim().is_empty()) {
                upstream
                    .set_header_line(line)
                    .with_context(|| format!("in {ENV_HEADERS}"))?;
            }
        }
        for line in &self.headers {
            upstream.set_header_line(line)?;
        }
        Ok(Upstream::http(upstream))
    }
}
