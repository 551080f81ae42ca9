//! `[upstream.oauth]` and `[servers.<name>.oauth]` of the TOML file.

use serde::Deserialize;

/// `[upstream.oauth]` and `[servers.<name>.oauth]`: the OAuth client the proxy is at the
/// server's authorization server (`relay::oauth`). Absent keys: a dynamically registered
/// public client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileOAuth {
    /// A pre-registered client ID.
    pub client_id: Option<String>,
    /// Its secret (prefer `MCP_BUDGET_OAUTH_CLIENT_SECRET`: a config file is often shared).
    pub client_secret: Option<String>,
    /// The path of the client's PEM private key, for `private_key_jwt`.
    pub private_key: Option<String>,
    /// The URL of a client ID metadata document, used as the client ID where the
    /// authorization server takes them.
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for, space-separated, instead of the ones the server names.
    pub scope: Option<String>,
    /// The port of the loopback redirect URI, for a client registered with that exact URI.
    pub redirect_port: Option<u16>,
}
