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

    #[command(flatten)]
    pub(crate) oauth: OAuthArgs,

    /// The client config entry `mcp-budget wrap` replaced (kept there for `unwrap`; ignored)
    #[arg(long, value_name = "JSON", hide = true)]
    wrapped_entry: Option<String>,

    /// The client config entries `mcp-budget wrap --merge` replaced (kept there for `unwrap`;
    /// ignored)
    #[arg(long, value_name = "JSON", hide = true)]
    merged_entries: Option<String>,
}

/// How to sign in to a remote server that asks for OAuth (`proxy --upstream`, `login`).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct OAuthArgs {
    /// OAuth: a client registered ahead at the server's authorization server (default: the
    /// proxy registers itself, or uses --oauth-client-metadata-url)
    #[arg(long, value_name = "ID", env = "MCP_BUDGET_OAUTH_CLIENT_ID")]
    oauth_client_id: Option<String>,

    /// OAuth: that client's secret (prefer the environment variable: argv is visible to other
    /// users of the machine)
    #[arg(
        long,
        value_name = "SECRET",
        env = "MCP_BUDGET_OAUTH_CLIENT_SECRET",
        hide_env_values = true
    )]
    oauth_client_secret: Option<String>,

    /// OAuth: the client's PEM private key file, for `private_key_jwt` client authentication
    /// (the variable may hold the PEM text itself)
    #[arg(
        long,
        value_name = "FILE",
        env = "MCP_BUDGET_OAUTH_PRIVATE_KEY",
        hide_env_values = true
    )]
    oauth_private_key: Option<String>,

    /// OAuth: the HTTPS URL of your client ID metadata document, used as the client ID where
    /// the authorization server takes them
    #[arg(long, value_name = "URL", env = "MCP_BUDGET_OAUTH_CLIENT_METADATA_URL")]
    oauth_client_metadata_url: Option<String>,

    /// OAuth: the scopes to ask for, space-separated (default: the ones the server names)
    #[arg(long, value_name = "SCOPES", env = "MCP_BUDGET_OAUTH_SCOPE")]
    oauth_scope: Option<String>,

    /// OAuth: the port of the loopback redirect URI http://127.0.0.1:PORT/callback, for a
    /// client registered with that exact URI (default: any free port)
    #[arg(long, value_name = "PORT", env = "MCP_BUDGET_OAUTH_REDIRECT_PORT")]
    oauth_redirect_port: Option<u16>,
}

impl OAuthArgs {
    /// The options: `file`'s keys, then these flags (and their variables) over them.
    pub(crate) fn options(
        &self,
        file: Option<&mcp_budget_proxy::config::FileOAuth>,
    ) -> mcp_budget_proxy::relay::oauth::OAuthOptions {
        let mut options = mcp_budget_proxy::relay::oauth::OAuthOptions::new();
        if let Some(file) = file {
            options = options.with_file(file);
        }
        let flags = mcp_budget_proxy::config::FileOAuth {
            client_id: self.oauth_client_id.clone(),
            client_secret: self.oauth_client_secret.clone(),
            private_key: self.oauth_private_key.clone(),
            client_metadata_url: self.oauth_client_metadata_url.clone(),
            scope: self.oauth_scope.clone(),
            redirect_port: None,
        };
        let mut options = options.with_file(&flags);
        if self.oauth_redirect_port.is_some() {
            options.redirect_port = self.oauth_redirect_port;
        }
        options
    }
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
        upstream.set_oauth(self.oauth.options(file.and_then(|f| f.oauth.as_ref())));
        Ok(Upstream::http(upstream))
    }
}
