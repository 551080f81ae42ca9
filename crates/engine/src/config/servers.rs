//! `[servers.<name>]` and `[mux]` of the TOML file: several MCP servers behind one proxy
//! (`mcp-budget proxy --config servers.toml`, see `mcp_budget_proxy::mux`).
//!
//! ```toml
//! [mux]
//! prefix_separator = "__"          # tool `read_file` of server `fs` is listed as `fs__read_file`
//!
//! [servers.fs]                     # a local server: started as a child process, stdio
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]
//! env = { NODE_OPTIONS = "--max-old-space-size=512" }   # added to the proxy's environment
//!
//! [servers.fs.tools_list]          # replaces the global [tools_list] for this server's tools
//! deny = ["write_*", "move_file"]
//!
//! [servers.docs]                   # a remote server: Streamable HTTP
//! url = "https://mcp.example.com/mcp"
//! headers = { Authorization = "Bearer …" }
//! ```
//!
//! A server name is 1–64 characters of `A-Z a-z 0-9 _ -` and must not contain the
//! separator (so that `<name><separator><tool>` splits back in exactly one way). Each entry has
//! exactly one of `command` (with `args`, `env`) or `url` (with `headers`). Servers are taken in
//! the order of their names (TOML tables have no order that survives parsing).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::tools_list::ToolsList;

/// The separator between a server's name and its tool or prompt names when `[mux]` does not
/// give one: `fs__read_file`.
pub const DEFAULT_PREFIX_SEPARATOR: &str = "__";

/// The longest server name, in characters.
pub const MAX_SERVER_NAME: usize = 64;

/// `[servers.<name>]`: one upstream MCP server of the multi-server proxy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerEntry {
    /// The program that starts a local server (looked up on `PATH`).
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables set for it, on top of the proxy's own environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The Streamable HTTP endpoint of a remote server (`http://` or `https://`).
    pub url: Option<String>,
    /// Headers sent with every HTTP request to it, by name.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `[servers.<name>.oauth]`: how to sign in to it when it asks.
    pub oauth: Option<super::oauth::FileOAuth>,
    /// `[servers.<name>.tools_list]`: allow/deny globs (matched against the server's own,
    /// unprefixed tool names) and compaction for this server's tools; absent: the global
    /// `[tools_list]` applies to it. Its `mode` and `pinned` are not used: deferral is
    /// proxy-wide (the global `[tools_list]`, over the merged list).
    pub tools_list: Option<ToolsList>,
}

/// `[mux]`: options of the multi-server proxy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MuxSection {
    /// What separates a server's name from its tool and prompt names; default
    /// [`DEFAULT_PREFIX_SEPARATOR`]. Non-empty; at most 8 characters.
    pub prefix_separator: Option<String>,
}

impl MuxSection {
    /// The separator in force.
    pub fn separator(&self) -> &str {
        self.prefix_separator
            .as_deref()
            .unwrap_or(DEFAULT_PREFIX_SEPARATOR)
    }
}

/// A `[servers]` table that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServersError {
    /// A server name that is empty, too long, has other characters than `A-Z a-z 0-9 _ -`,
    /// or contains the separator.
    #[error("[servers.{name}]: {reason}")]
    BadName {
        /// The name as written.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An entry with neither `command` nor `url`, or with both.
    #[error(
        "[servers.{name}]: give exactly one of `command` (a local server) or `url` (a remote one)"
    )]
    Transport {
        /// The server's name.
        name: String,
    },
    /// `args`/`env` with `url`, or `headers` with `command`.
    #[error("[servers.{name}]: `{key}` does not go with `{with}`")]
    Mismatch {
        /// The server's name.
        name: String,
        /// The misplaced key.
        key: &'static str,
        /// The transport key it does not go with.
        with: &'static str,
    },
    /// An empty or over-long `[mux] prefix_separator`.
    #[error("[mux] prefix_separator must be 1 to 8 characters, not {0:?}")]
    Separator(String),
}

/// Checks the `[servers]` table against the rules of the module docs.
///
/// # Errors
///
/// The first rule broken, as a [`ServersError`].
pub fn check(servers: &BTreeMap<String, ServerEntry>, separator: &str) -> Result<(), ServersError> {
    if separator.is_empty() || separator.chars().count() > 8 {
        return Err(ServersError::Separator(separator.to_owned()));
    }
    for (name, entry) in servers {
        let bad = |reason: String| ServersError::BadName {
            name: name.clone(),
            reason,
        };
        if name.is_empty() || name.chars().count() > MAX_SERVER_NAME {
            return Err(bad(format!(
                "a server name has 1 to {MAX_SERVER_NAME} characters"
            )));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(bad("a server name has only A-Z a-z 0-9 _ -".into()));
        }
        if name.contains(separator) {
            return Err(bad(format!(
                "a server name must not contain the prefix separator {separator:?}"
            )));
        }
        match (&entry.command, &entry.url) {
            (Some(_), None) if !entry.headers.is_empty() => {
                return Err(ServersError::Mismatch {
                    name: name.clone(),
                    key: "headers",
                    with: "command",
                });
            }
            (None, Some(_)) if !entry.args.is_empty() || !entry.env.is_empty() => {
                return Err(ServersError::Mismatch {
                    name: name.clone(),
                    key: if entry.args.is_empty() { "env" } else { "args" },
                    with: "url",
                });
            }
            (Some(_), None) | (None, Some(_)) => {}
            _ => return Err(ServersError::Transport { name: name.clone() }),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        servers: BTreeMap<String, ServerEntry>,
        #[serde(default)]
        mux: MuxSection,
    }

    fn parse(text: &str) -> File {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn entries_parse_with_their_own_tools_list() {
        let f = parse(
            "[mux]\nprefix_separator = \"-\"\n[servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"x\"]\nenv = { A = \"1\" }\n[servers.fs.tools_list]\ndeny = [\"write_*\"]\n[servers.web]\nurl = \"http://localhost:1/mcp\"\nheaders = { Authorization = \"Bearer t\" }\n",
        );
        assert_eq!(f.mux.separator(), "-");
        let fs = &f.servers["fs"];
        assert_eq!(fs.command.as_deref(), Some("npx"));
        assert_eq!(fs.env["A"], "1");
        assert_eq!(
            fs.tools_list.as_ref().map(|t| t.deny.clone()),
            Some(vec!["write_*".to_owned()])
        );
        assert!(f.servers["web"].tools_list.is_none());
        // `-` is in no name here, so the names pass.
        assert_eq!(check(&f.servers, "__"), Ok(()));
        assert!(toml::from_str::<File>("[servers.a]\ncommand = \"x\"\nargz = []\n").is_err());
    }

    #[test]
    fn names_and_transports_are_checked() {
        let local = ServerEntry {
            command: Some("x".into()),
            ..ServerEntry::default()
        };
        let one = |name: &str, entry: ServerEntry| BTreeMap::from([(name.to_owned(), entry)]);
        assert!(check(&one("git", local.clone()), "__").is_ok());
        for name in ["", "a b", "é", "fs__x", &"n".repeat(65)] {
            assert!(
                matches!(
                    check(&one(name, local.clone()), "__"),
                    Err(ServersError::BadName { .. })
                ),
                "{name:?}"
            );
        }
        let both = ServerEntry {
            url: Some("http://h/".into()),
            ..local.clone()
        };
        assert!(matches!(
            check(&one("a", both), "__"),
            Err(ServersError::Transport { .. })
        ));
        assert!(matches!(
            check(&one("a", ServerEntry::default()), "__"),
            Err(ServersError::Transport { .. })
        ));
        let remote_with_args = ServerEntry {
            url: Some("http://h/".into()),
            args: vec!["a".into()],
            ..ServerEntry::default()
        };
        assert!(matches!(
            check(&one("a", remote_with_args), "__"),
            Err(ServersError::Mismatch { key: "args", .. })
        ));
        assert!(matches!(
            check(&one("a", local), ""),
            Err(ServersError::Separator(_))
        ));
    }
}
