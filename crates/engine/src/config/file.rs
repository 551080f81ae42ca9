//! The TOML file: `[defaults]`, `[tools.<name>]`, `[cache]`, `[blobs]`, `[store]`,
//! `[logging]`, `[client]`, `[upstream]`, `[tools_list]`, `[servers.<name>]` and `[mux]`, as
//! serde data (unknown keys are errors).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcp_budget_core::client::Profile;
use serde::Deserialize;

use super::error::ConfigError;
use super::images::{ImageCost, ImageMode};
use super::oauth::FileOAuth;
use super::servers::{MuxSection, ServerEntry};
use super::tools_list::ToolsList;

/// What an over-budget result turns into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Overflow {
    /// Page 1 and a meta item (the default).
    #[default]
    Page,
    /// The elision envelope (bounded summary, response id, cursor of page 1).
    Summary,
}

/// Whether arrays of objects in results are written as tables
/// ([`mcp_budget_core::table`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tables {
    /// Plain compact JSON (the default).
    #[default]
    Off,
    /// Tables where they save at least
    /// [`mcp_budget_core::table::AUTO_MIN_SAVING_PERCENT`] % of a value's tokens.
    Auto,
}

/// `[defaults]` of the TOML file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileDefaults {
    /// Budget in tokens.
    pub max_tokens: Option<usize>,
    /// Significant digits of floats, 0 = exact.
    pub precision: Option<u32>,
    /// Overflow mode.
    pub overflow: Option<Overflow>,
    /// Most jq worker processes alive at once (`query_response`).
    pub jq_workers: Option<usize>,
    /// Memory bound of one jq worker process, in MiB.
    pub jq_memory_mib: Option<u64>,
    /// Default of [`ToolRule::uuid_prefix`].
    pub uuid_prefix: Option<bool>,
    /// Default of [`ToolRule::response_refs`].
    pub response_refs: Option<bool>,
    /// Tables for arrays of objects.
    pub tables: Option<Tables>,
    /// Where image items go.
    pub images: Option<ImageMode>,
    /// What an image costs the model.
    pub image_tokens: Option<ImageCost>,
    /// Default of [`ToolRule::image_max_side`].
    pub image_max_side: Option<u32>,
}

/// `[tools.<name>]` of the TOML file: a rule for one upstream tool (matched by exact name).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolRule {
    /// Budget in tokens for this tool's results.
    pub max_tokens: Option<usize>,
    /// Significant digits of floats, 0 = exact.
    pub precision: Option<u32>,
    /// A jq filter applied to the JSON value of each JSON `text` item before shaping. Several
    /// outputs become an array, none becomes `null`; a runtime error leaves the item as it was.
    pub transform: Option<String>,
    /// Overflow mode.
    pub overflow: Option<Overflow>,
    /// Appended (after one space) to the tool's description in `tools/list`.
    pub description_suffix: Option<String>,
    /// UUIDs in this tool's results are shown as their 12-hex prefix, and prefixes in later
    /// calls' arguments are expanded back (`crate::boundary::args_rewrite`). Default false.
    pub uuid_prefix: Option<bool>,
    /// An argument `{"$response":"<id>","query":"<jq>"}` in a call of this tool is replaced
    /// by the cached response after the filter (`crate::boundary::args_rewrite`). Default
    /// false.
    pub response_refs: Option<bool>,
    /// Tables for arrays of objects.
    pub tables: Option<Tables>,
    /// Where this tool's image items go.
    pub images: Option<ImageMode>,
    /// What an image costs the model, and the size it gets (default: the client profile's
    /// [`mcp_budget_core::client::Profile::image_cost`]).
    pub image_tokens: Option<ImageCost>,
    /// The longest side, in pixels, of an image sent inline (default
    /// [`mcp_budget_core::vision::DEFAULT_MAX_SIDE`], 2,000; at least 16).
    pub image_max_side: Option<u32>,
}

/// `[cache]` of the TOML file: the response cache (proxy-wide).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileCache {
    /// Bytes of memory the cached responses may hold.
    pub bytes: Option<usize>,
    /// Seconds a cached response stays readable after its last use.
    pub ttl_secs: Option<u64>,
    /// Directory under which the spill directory is made.
    pub dir: Option<PathBuf>,
}

/// `[blobs]` of the TOML file: offloaded blob files (proxy-wide).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileBlobs {
    /// Seconds after which a blob file (by its modification time) is removed at startup;
    /// 0 = never.
    pub max_age_secs: Option<u64>,
}

/// `[store]` of the TOML file: the shared response store (proxy-wide).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileStore {
    /// `redis://[user:password@]host:port/db`: keep cached responses in Redis.
    pub url: Option<String>,
    /// Milliseconds one Redis command (or connecting) may take.
    pub timeout_ms: Option<u64>,
    /// Bytes of the largest compressed response written to Redis.
    pub max_entry_bytes: Option<usize>,
    /// PEM file of the CA(s) to trust for `rediss://` (instead of the system's roots).
    pub ca_file: Option<PathBuf>,
    /// Bytes of this replica's cache of parsed responses read from Redis; 0 = none.
    pub cache_bytes: Option<usize>,
}

/// `[logging]` of the TOML file: the diagnostics on stderr (proxy-wide).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileLogging {
    /// `text` or `json` ([`crate::logging::LogFormat`]).
    pub format: Option<crate::logging::LogFormat>,
}

/// The parsed TOML file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// `[defaults]`.
    #[serde(default)]
    pub defaults: FileDefaults,
    /// `[cache]`.
    #[serde(default)]
    pub cache: FileCache,
    /// `[blobs]`.
    #[serde(default)]
    pub blobs: FileBlobs,
    /// `[store]`.
    #[serde(default)]
    pub store: FileStore,
    /// `[logging]`.
    #[serde(default)]
    pub logging: FileLogging,
    /// `[tools.<name>]`, by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolRule>,
    /// `[tools_list]`: listing, compaction and deferral of the upstream tools.
    #[serde(default)]
    pub tools_list: ToolsList,
    /// `[upstream]`.
    #[serde(default)]
    pub upstream: FileUpstream,
    /// `[servers.<name>]`: several servers behind one proxy (see [`super::servers`]), by name.
    #[serde(default)]
    pub servers: BTreeMap<String, ServerEntry>,
    /// `[mux]`: options of the multi-server proxy.
    #[serde(default)]
    pub mux: MuxSection,
    /// `[client]`: how the client hands results to its model (`name = "codex"`).
    #[serde(default)]
    pub client: FileClient,
}

/// `[upstream]` of the TOML file: a remote MCP server over Streamable HTTP, used by `proxy`
/// when no server command is given. `--upstream`/`MCP_BUDGET_UPSTREAM` win over `url`; a
/// header of the same name from `--header` or `MCP_BUDGET_HEADERS` wins over `headers`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileUpstream {
    /// The server's URL (`http://` or `https://`).
    pub url: Option<String>,
    /// Headers sent with every request, by name (credentials: `Authorization`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `[upstream.oauth]`: how to sign in when the server asks (flags and env win).
    pub oauth: Option<FileOAuth>,
}

impl ConfigFile {
    /// Parses the TOML text of a config file.
    ///
    /// # Errors
    /// [`ConfigError::Toml`] on bad TOML, a wrong type or an unknown key.
    pub fn parse(text: &str, path: &Path) -> Result<ConfigFile, ConfigError> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| ConfigError::Toml {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        if let Some(name) = &file.client.name
            && let Err(e) = name.parse::<Profile>()
        {
            return Err(ConfigError::Toml {
                path: path.to_path_buf(),
                message: format!("[client] name: {e}"),
            });
        }
        Ok(file)
    }
}

/// `[client]` of the config file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileClient {
    /// A profile name of [`mcp_budget_core::client::PROFILES`] (`generic`, `claude-code`,
    /// `codex`, …).
    pub name: Option<String>,
}
