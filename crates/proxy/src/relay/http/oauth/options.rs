//! How the proxy signs in (the client it is at the authorization server, how approval
//! happens), from the command line, the environment and the configuration file.

use std::fmt;

use crate::config::FileOAuth;

/// The environment variable that approves sign-ins without a browser (tests only).
pub const AUTOAPPROVE_ENV: &str = "MCP_BUDGET_OAUTH_AUTOAPPROVE";

/// How the proxy signs in: the client it is at the authorization server, and how approval
/// happens. `Default` is a dynamically registered public client approved in a browser.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct OAuthOptions {
    /// A pre-registered client ID (`--oauth-client-id`, `MCP_BUDGET_OAUTH_CLIENT_ID`).
    pub client_id: Option<String>,
    /// Its secret (`--oauth-client-secret`, `MCP_BUDGET_OAUTH_CLIENT_SECRET`).
    pub client_secret: Option<String>,
    /// The client's private key for `private_key_jwt` (RFC 7523): PEM text, or the path of a
    /// PEM file (`--oauth-private-key`, `MCP_BUDGET_OAUTH_PRIVATE_KEY`).
    pub private_key: Option<String>,
    /// The URL of a client ID metadata document to use as the client ID where the
    /// authorization server takes them (`--oauth-client-metadata-url`).
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for, space-separated, instead of the server's (`--oauth-scope`).
    pub scope: Option<String>,
    /// The loopback port of the redirect URI (`http://127.0.0.1:<port>/callback`), for a
    /// pre-registered client whose authorization server wants the registered URI exactly
    /// (`--oauth-redirect-port`); any free port when `None` (RFC 8252 §7.3).
    pub redirect_port: Option<u16>,
    /// Approve the sign-in without a browser (`MCP_BUDGET_OAUTH_AUTOAPPROVE=1`; tests).
    pub autoapprove: bool,
    /// Open the sign-in URL in the desktop's browser.
    pub open_browser: bool,
}

impl OAuthOptions {
    /// The options of a proxy: browser opening on, and `autoapprove` when the environment
    /// has `MCP_BUDGET_OAUTH_AUTOAPPROVE=1` (a test aid).
    pub fn new() -> OAuthOptions {
        OAuthOptions {
            open_browser: true,
            autoapprove: std::env::var(AUTOAPPROVE_ENV).is_ok_and(|v| v.trim() == "1"),
            ..OAuthOptions::default()
        }
    }
}

impl OAuthOptions {
    /// These options with the keys that `file` (`[upstream.oauth]`, `[servers.<name>.oauth]`)
    /// sets put over them; keys it leaves out keep their value here.
    pub fn with_file(mut self, file: &FileOAuth) -> OAuthOptions {
        let set = |slot: &mut Option<String>, value: &Option<String>| {
            if value.is_some() {
                slot.clone_from(value);
            }
        };
        set(&mut self.client_id, &file.client_id);
        set(&mut self.client_secret, &file.client_secret);
        set(&mut self.private_key, &file.private_key);
        set(&mut self.client_metadata_url, &file.client_metadata_url);
        set(&mut self.scope, &file.scope);
        if file.redirect_port.is_some() {
            self.redirect_port = file.redirect_port;
        }
        self
    }
}

impl fmt::Debug for OAuthOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthOptions")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("private_key", &self.private_key.as_ref().map(|_| "…"))
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scope", &self.scope)
            .field("redirect_port", &self.redirect_port)
            .field("autoapprove", &self.autoapprove)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key of `[upstream.oauth]` reaches the options, and a key the file leaves out
    /// keeps what the flags gave. The destructuring names every field of [`FileOAuth`], so a
    /// new key does not compile here until it is carried and checked.
    #[test]
    fn with_file_carries_every_file_key() {
        let file = FileOAuth {
            client_id: Some("id-f".into()),
            client_secret: Some("secret-f".into()),
            private_key: Some("/k.pem".into()),
            client_metadata_url: Some("https://c.example/meta".into()),
            scope: Some("read write".into()),
            redirect_port: Some(8765),
        };
        let got = OAuthOptions::default().with_file(&file);
        let FileOAuth {
            client_id,
            client_secret,
            private_key,
            client_metadata_url,
            scope,
            redirect_port,
        } = &file;
        assert_eq!(&got.client_id, client_id);
        assert_eq!(&got.client_secret, client_secret);
        assert_eq!(&got.private_key, private_key);
        assert_eq!(&got.client_metadata_url, client_metadata_url);
        assert_eq!(&got.scope, scope);
        assert_eq!(&got.redirect_port, redirect_port);

        let flags = OAuthOptions {
            client_id: Some("id-flag".into()),
            redirect_port: Some(9000),
            ..OAuthOptions::default()
        };
        let kept = flags.with_file(&FileOAuth::default());
        assert_eq!(kept.client_id.as_deref(), Some("id-flag"));
        assert_eq!(kept.redirect_port, Some(9000));
    }
}
