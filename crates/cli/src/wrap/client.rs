//! The MCP clients `wrap` knows: where each keeps its MCP servers and in which format.
//!
//! Sources (each client's documentation):
//! - Claude Code: `.mcp.json` in the project (project scope) and `~/.claude.json` (user scope in
//!   its top-level `mcpServers`, local scope in `projects.<path>.mcpServers`).
//! - Claude Desktop: `claude_desktop_config.json`, `mcpServers`; in
//!   `~/Library/Application Support/Claude/` (macOS), `%APPDATA%\Claude\` (Windows),
//!   `~/.config/Claude/` (Linux).
//! - Cursor: `.cursor/mcp.json` in the project or `~/.cursor/mcp.json`, `mcpServers`.
//! - VS Code: `.vscode/mcp.json` in the workspace or `mcp.json` in the user profile, `servers`
//!   (plus `inputs`, left alone); comments allowed.
//! - Windsurf: `~/.codeium/windsurf/mcp_config.json`, `mcpServers` (remote ones use
//!   `serverUrl`).
//! - Codex: `~/.codex/config.toml` (`$CODEX_HOME/config.toml`) or `.codex/config.toml` in a
//!   trusted project, `[mcp_servers.<name>]` tables.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// A client whose MCP config `wrap` edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Client {
    ClaudeCode,
    ClaudeDesktop,
    Cursor,
    Vscode,
    Windsurf,
    Codex,
}

/// Where a JSON config keeps its server maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// A top-level object of servers: `mcpServers` (most clients) or `servers` (VS Code).
    Key(&'static str),
    /// Claude Code's `~/.claude.json`: `projects.<path>.mcpServers`.
    ClaudeProjects,
}

/// How a config file is read and where its servers are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Format {
    Json(Vec<Place>),
    /// Codex's TOML (`mcp_servers`).
    Toml,
}

impl Client {
    /// The proxy's `--client` profile for this client (`mcp_budget_core::client::PROFILES`).
    pub(crate) fn profile(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::Windsurf => "windsurf",
            Client::Codex => "codex",
        }
    }

    /// The file format and the places of servers in the client's config.
    pub(crate) fn format(self) -> Format {
        match self {
            Client::ClaudeCode => {
                Format::Json(vec![Place::Key("mcpServers"), Place::ClaudeProjects])
            }
            Client::ClaudeDesktop | Client::Cursor | Client::Windsurf => {
                Format::Json(vec![Place::Key("mcpServers")])
            }
            Client::Vscode => Format::Json(vec![Place::Key("servers")]),
            Client::Codex => Format::Toml,
        }
    }

    /// What the client's documentation calls the file, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Claude Code",
            Client::ClaudeDesktop => "Claude Desktop",
            Client::Cursor => "Cursor",
            Client::Vscode => "VS Code",
            Client::Windsurf => "Windsurf",
            Client::Codex => "Codex",
        }
    }

    /// The config file to edit: the project's file in `cwd` when the client has one and it
    /// exists, else the user's file.
    ///
    /// # Errors
    /// The home directory (or `%APPDATA%` on Windows) is unknown.
    pub(crate) fn default_path(self, cwd: &Path) -> anyhow::Result<PathBuf> {
        let project = match self {
            Client::ClaudeCode => Some(cwd.join(".mcp.json")),
            Client::Cursor => Some(cwd.join(".cursor").join("mcp.json")),
            Client::Vscode => Some(cwd.join(".vscode").join("mcp.json")),
            Client::Codex => Some(cwd.join(".codex").join("config.toml")),
            Client::ClaudeDesktop | Client::Windsurf => None,
        };
        if let Some(project) = project.filter(|p| p.is_file()) {
            return Ok(project);
        }
        let home = || std::env::home_dir().context("cannot tell the home directory; use --config");
        Ok(match self {
            Client::ClaudeCode => home()?.join(".claude.json"),
            Client::Cursor => home()?.join(".cursor").join("mcp.json"),
            Client::Windsurf => home()?
                .join(".codeium")
                .join("windsurf")
                .join("mcp_config.json"),
            Client::Codex => match std::env::var_os("CODEX_HOME") {
                Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("config.toml"),
                _ => home()?.join(".codex").join("config.toml"),
            },
            Client::ClaudeDesktop => app_config_dir()?
                .join("Claude")
                .join("claude_desktop_config.json"),
            Client::Vscode => app_config_dir()?.join("Code").join("User").join("mcp.json"),
        })
    }

    /// The client a config path belongs to, guessed from its name (for `--config` alone).
    pub(crate) fn guess(path: &Path) -> Option<Client> {
        let name = path.file_name()?.to_str()?;
        let parent = path
            .parent()
            .and_then(Path::file_name)
            .and_then(|p| p.to_str())
            .unwrap_or("");
        match (name, parent) {
            (_, _) if name.ends_with(".toml") => Some(Client::Codex),
            (".mcp.json" | ".claude.json", _) => Some(Client::ClaudeCode),
            ("claude_desktop_config.json", _) => Some(Client::ClaudeDesktop),
            ("mcp_config.json", _) => Some(Client::Windsurf),
            ("mcp.json", ".cursor") => Some(Client::Cursor),
            ("mcp.json", ".vscode" | "User") => Some(Client::Vscode),
            _ => None,
        }
    }
}

/// The format of a file no client was named for: TOML by extension, else JSON with every place
/// a client keeps servers.
pub(crate) fn any_format(path: &Path) -> Format {
    if path.extension().is_some_and(|e| e == "toml") {
        Format::Toml
    } else {
        Format::Json(vec![
            Place::Key("mcpServers"),
            Place::Key("servers"),
            Place::ClaudeProjects,
        ])
    }
}

/// The per-user application config directory: `~/Library/Application Support` (macOS),
/// `%APPDATA%` (Windows), `$XDG_CONFIG_HOME` or `~/.config` (elsewhere).
fn app_config_dir() -> anyhow::Result<PathBuf> {
    let home = || std::env::home_dir().context("cannot tell the home directory; use --config");
    if cfg!(target_os = "macos") {
        return Ok(home()?.join("Library").join("Application Support"));
    }
    if cfg!(windows) {
        return std::env::var_os("APPDATA")
            .map(PathBuf::from)
            .context("%APPDATA% is not set; use --config");
    }
    match std::env::var_os("XDG_CONFIG_HOME") {
        Some(dir) if !dir.is_empty() => Ok(PathBuf::from(dir)),
        _ => Ok(home()?.join(".config")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guesses_the_client_from_the_file_name() {
        let cases = [
            ("/p/.mcp.json", Some(Client::ClaudeCode)),
            ("/home/u/.claude.json", Some(Client::ClaudeCode)),
            (
                "/x/Claude/claude_desktop_config.json",
                Some(Client::ClaudeDesktop),
            ),
            ("/home/u/.cursor/mcp.json", Some(Client::Cursor)),
            ("/p/.vscode/mcp.json", Some(Client::Vscode)),
            (
                "/home/u/.codeium/windsurf/mcp_config.json",
                Some(Client::Windsurf),
            ),
            ("/home/u/.codex/config.toml", Some(Client::Codex)),
            ("/tmp/other.json", None),
        ];
        for (path, client) in cases {
            assert_eq!(Client::guess(Path::new(path)), client, "{path}");
        }
    }

    #[test]
    fn a_project_file_wins_when_it_exists() {
        let dir =
            std::env::temp_dir().join(format!("mcp-budget-wrap-client-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".cursor")).expect("temp dir");
        std::fs::write(dir.join(".cursor").join("mcp.json"), "{}").expect("write");
        let path = Client::Cursor.default_path(&dir).expect("path");
        assert_eq!(path, dir.join(".cursor").join("mcp.json"));
        // No project file for VS Code here: the user profile's file.
        let user = Client::Vscode.default_path(&dir).expect("path");
        assert!(user.ends_with(Path::new("Code").join("User").join("mcp.json")));
        std::fs::remove_dir_all(&dir).expect("clean up");
    }
}
