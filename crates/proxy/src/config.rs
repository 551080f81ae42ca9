//! Settings of the proxy's shaping, and the TOML file of defaults and per-tool rules.
//!
//! # Precedence
//!
//! For every value that a tool's rule can set, the first one given wins:
//!
//! 1. the per-tool rule in the TOML file (`[tools.<name>]`),
//! 2. the command-line flag (`--max-tokens`, `--precision`),
//! 3. the environment variable (`MCP_BUDGET_MAX_TOKENS`, `MCP_BUDGET_PRECISION`),
//! 4. the TOML file's `[defaults]`,
//! 5. the built-in default (10000 tokens, 9 significant digits, `overflow = "page"`).
//!
//! Flags and environment variables are one layer here: the CLI resolves flag-over-env (clap's
//! `env`) and puts the result in [`Settings::max_tokens`] / [`Settings::precision`], `None`
//! when neither was given. A rule for one tool is more specific than any global setting, so
//! it wins over the command line; the file's `[defaults]` are the weakest explicit layer, so a
//! flag can override a shared config file for one run.
//!
//! # The TOML file
//!
//! ```toml
//! [defaults]
//! max_tokens = 8000        # tokens (clamped up to 256)
//! precision = 6            # significant digits of floats, 0 = exact
//! overflow = "page"        # "page" (page 1 + meta) or "summary" (elision envelope first)
//! jq_workers = 2           # query_response: most jq worker processes alive at once
//! jq_memory_mib = 1024     # query_response: memory bound of one jq worker, MiB
//! uuid_prefix = true       # UUIDs in results → 12-hex prefixes, expanded back in arguments
//! response_refs = true     # {"$response":"<id>","query":"<jq>"} arguments → cached response
//! images = "auto"          # "auto" | "inline" | "file": where image items go (config::images)
//! image_tokens = "anthropic"  # "anthropic" | "openai" | "openai-low" | "gemini": an image's
//!                             # cost and the size its model gets (default: the client profile's)
//! image_max_side = 2000    # pixels: no image goes out with a longer side
//!
//! [tools.directory_tree]
//! max_tokens = 4000
//! precision = 0
//! transform = 'del(.. | .duration_ns?)'   # jq filter on the JSON of each text item
//! overflow = "summary"
//! description_suffix = "Large trees are paged; use read_more."
//! tables = "auto"          # arrays of objects as header + rows where that saves >= 10%
//!
//! [cache]                  # proxy-wide; flags and MCP_BUDGET_CACHE_* win over these
//! bytes = 268435456        # memory the cached responses may hold (--cache-bytes)
//! ttl_secs = 3600          # a cached response is dropped this long after its last use
//! dir = "/var/tmp"         # where spill directories are made (default: the temp dir)
//!
//! [blobs]
//! max_age_secs = 86400     # blob files older than this are removed at startup; 0 = never
//!
//! [store]                  # the shared response store; --store / MCP_BUDGET_STORE win
//! url = "redis://127.0.0.1:6379/0"   # cached responses in Redis (replicas share cursors)
//! timeout_ms = 2000        # deadline of one Redis command (and of connecting)
//! max_entry_bytes = 33554432  # largest compressed response written to Redis
//! ca_file = "/etc/redis/ca.pem"  # rediss://: trust only this CA (default: the system's roots)
//! cache_bytes = 67108864   # this replica's cache of parsed responses read from Redis; 0 = none
//! [logging]                # --log-format / MCP_BUDGET_LOG_FORMAT win
//! format = "json"          # stderr diagnostics: "text" (default) or "json" (one object a line)
//! [upstream]               # a remote server (`proxy` without `-- <command>`); flags and env win
//! url = "https://mcp.example.com/mcp"
//! headers = { Authorization = "Bearer …" }
//! ```
//! `[tools_list]` (allow/deny globs, description caps, schema compaction, deferred mode) is
//! described in [`ToolsList`]; `[servers.<name>]` and `[mux]` (many servers behind one proxy)
//! in [`servers`].
//!
//! Unknown keys are errors (a typo must not silently do nothing).

mod tools_list;
pub use tools_list::{ListMode, ToolsList};
pub mod servers;
pub use servers::{MuxSection, ServerEntry};

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_budget_core::client::Profile;
use mcp_budget_core::tokens::Encoding;
use serde::Deserialize;

mod images;
pub use images::{ImageCost, ImageMode};

/// The built-in cache bound: the cached responses hold at most 256 MiB of memory (parsed
/// trees by their heap estimate, compact texts by their bytes; the rest is spilled to files).
pub const DEFAULT_CACHE_BYTES: usize = 256 * 1024 * 1024;

/// The built-in time a cached response stays readable after its last use: one hour.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(3600);

/// The built-in age past which blob files are removed at startup: 24 hours.
pub const DEFAULT_BLOB_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// The built-in blob threshold: base64 payloads and `data:` URIs that decode to more than
/// 1024 bytes are written to a file ([`mcp_budget_core::blob::DEFAULT_BLOB_THRESHOLD_BYTES`]).
pub const DEFAULT_BLOB_THRESHOLD: usize = mcp_budget_core::blob::DEFAULT_BLOB_THRESHOLD_BYTES;

/// The command that starts a jq worker process (see [`crate::jq::worker`]): the program and
/// its first arguments; the worker's own flags are appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The program.
    pub program: PathBuf,
    /// Arguments before the worker's own flags (e.g. the `jq-worker` subcommand).
    pub args: Vec<OsString>,
}

impl WorkerCommand {
    /// `program` with `args`.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> WorkerCommand {
        WorkerCommand {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        }
    }

    /// This running program with the hidden subcommand `jq-worker` (the `mcp-budget` binary).
    /// On Linux the program is `/proc/self/exe`, which names the running binary even after
    /// its file was replaced or removed (an upgrade during a session); elsewhere
    /// [`std::env::current_exe`], or `mcp-budget` from `PATH` when that is unknown.
    pub fn current_exe() -> WorkerCommand {
        let proc_self = Path::new("/proc/self/exe");
        let program = if cfg!(target_os = "linux") && proc_self.exists() {
            proc_self.to_path_buf()
        } else {
            std::env::current_exe().unwrap_or_else(|_| PathBuf::from("mcp-budget"))
        };
        WorkerCommand::new(program, ["jq-worker"])
    }
}

/// Parses a size in bytes: an integer, optionally followed by `K`, `M`, `G` (powers of 1024,
/// case-insensitive, with or without `iB`/`B`): `268435456`, `256MiB`, `256m`, `1G`.
///
/// # Errors
/// A message naming the accepted forms, for anything else or an overflow.
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (n, unit) = t.split_at(digits);
    let n: usize = n
        .parse()
        .map_err(|_| format!("{text:?} is not a size (like 268435456, 256MiB, 1G)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => {
            return Err(format!(
                "{text:?} is not a size (like 268435456, 256MiB, 1G)"
            ));
        }
    };
    n.checked_mul(1usize << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Parses a duration: an integer of seconds, optionally followed by `s`, `m`, `h` or `d`:
/// `3600`, `90s`, `15m`, `24h`, `7d`.
///
/// # Errors
/// A message naming the accepted forms, for anything else or an overflow.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (n, unit) = t.split_at(digits);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (like 3600, 90s, 15m, 24h, 7d)"))?;
    let secs = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "{text:?} is not a duration (like 3600, 90s, 15m, 24h, 7d)"
            ));
        }
    };
    n.checked_mul(secs)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?} is too long"))
}

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
    /// `[servers.<name>]`: several servers behind one proxy (see [`servers`]), by name.
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

impl FileOAuth {
    /// `options` with this table's keys set on it.
    pub fn apply(
        &self,
        mut options: crate::relay::oauth::OAuthOptions,
    ) -> crate::relay::oauth::OAuthOptions {
        let set = |slot: &mut Option<String>, value: &Option<String>| {
            if value.is_some() {
                slot.clone_from(value);
            }
        };
        set(&mut options.client_id, &self.client_id);
        set(&mut options.client_secret, &self.client_secret);
        set(&mut options.private_key, &self.private_key);
        set(&mut options.client_metadata_url, &self.client_metadata_url);
        set(&mut options.scope, &self.scope);
        if self.redirect_port.is_some() {
            options.redirect_port = self.redirect_port;
        }
        options
    }
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

/// Errors of loading settings.
///
/// The operating system's error is the [`std::error::Error::source`] of [`ConfigError::Read`]
/// and [`ConfigError::Log`], not part of their message, so a report that prints the chain
/// (`{:#}` of anyhow, as the binary does) names it once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("cannot read config file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why (the error's source).
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid TOML for this schema.
    #[error("bad config file {path}: {message}")]
    Toml {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A `transform` is not a valid jq filter.
    #[error("bad transform for tool {tool:?}: {message}")]
    Transform {
        /// The tool whose rule it is.
        tool: String,
        /// The jq error.
        message: String,
    },
    /// The telemetry log could not be opened for appending.
    #[error("cannot open telemetry log {}", path.display())]
    Log {
        /// The file.
        path: PathBuf,
        /// Why (the error's source).
        #[source]
        source: std::io::Error,
    },
    /// The shared response store (`--store`) cannot be used.
    #[error("response store: {message}")]
    Store {
        /// What failed (the URL's credentials never appear).
        message: String,
    },
}

/// Everything that decides how the proxy shapes results.
///
/// Build it with [`Settings::default`] and set the public fields from the command line; then
/// [`Settings::load_config_file`] (or [`crate::boundary::Boundary::new`], which calls it when
/// [`Settings::config_path`] is set and [`Settings::file`] is still `None`) merges the TOML
/// file. See the module docs for the precedence.
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--max-tokens` / `MCP_BUDGET_MAX_TOKENS`: budget in tokens for one `tools/call` result.
    /// `None` when not given (then `[defaults]`, then 10000).
    pub max_tokens: Option<usize>,
    /// `--encoding` / `MCP_BUDGET_ENCODING`. Default `cl100k_base`.
    pub encoding: Encoding,
    /// `--precision` / `MCP_BUDGET_PRECISION`: significant digits, 0 = exact. `None` when not
    /// given (then `[defaults]`, then 9).
    pub precision: Option<u32>,
    /// `--config` / `MCP_BUDGET_CONFIG`: the TOML file. Default none.
    pub config_path: Option<PathBuf>,
    /// `--log` / `MCP_BUDGET_LOG`: telemetry JSONL, appended to. Default none (no telemetry).
    pub log_path: Option<PathBuf>,
    /// `--banner`: a text item put first in every `tools/call` result, outside the budget.
    /// Default none.
    pub banner: Option<String>,
    /// `--cache-bytes` / `MCP_BUDGET_CACHE_BYTES`: bytes of memory the cached responses may
    /// hold (parsed trees by their heap estimate, compact texts by their bytes); least
    /// recently used content is spilled to files past it. `None` when not given (then
    /// `[cache] bytes`, then [`DEFAULT_CACHE_BYTES`]); see [`Settings::cache_bytes`].
    pub cache_bytes: Option<usize>,
    /// `--cache-ttl` / `MCP_BUDGET_CACHE_TTL`: how long a cached response stays readable after
    /// its last use. `None` when not given (then `[cache] ttl_secs`, then
    /// [`DEFAULT_CACHE_TTL`]).
    pub cache_ttl: Option<Duration>,
    /// `--cache-dir` / `MCP_BUDGET_CACHE_DIR`: where the spill directory is made. `None` when
    /// not given (then `[cache] dir`, then the system temp dir).
    pub cache_dir: Option<PathBuf>,
    /// `--blob-max-age` / `MCP_BUDGET_BLOB_MAX_AGE`: blob files older than this (modification
    /// time) are removed at startup; zero = never. `None` when not given (then `[blobs]
    /// max_age_secs`, then [`DEFAULT_BLOB_MAX_AGE`]).
    pub blob_max_age: Option<Duration>,
    /// Decoded size in bytes above which a base64 payload is offloaded to a file. Default
    /// [`DEFAULT_BLOB_THRESHOLD`] (1024).
    pub blob_threshold: usize,
    /// Directory of offloaded blobs. Default `mcp-budget-blobs` in the system temp dir.
    pub blob_dir: Option<PathBuf>,
    /// The parsed config file, once loaded (or set directly, e.g. by tests).
    pub file: Option<ConfigFile>,
    /// The program that runs `query_response` filters. Default
    /// [`WorkerCommand::current_exe`].
    pub jq_worker: WorkerCommand,
    /// `--jq-workers` / `MCP_BUDGET_JQ_WORKERS`: most jq worker processes alive at once.
    /// `None` when not given (then `[defaults] jq_workers`, then
    /// [`crate::jq::DEFAULT_WORKERS`], 2).
    pub jq_workers: Option<usize>,
    /// `--jq-memory-mib` / `MCP_BUDGET_JQ_MEMORY_MIB`: address-space bound of one jq worker,
    /// in MiB. `None` when not given (then `[defaults] jq_memory_mib`, then 1024).
    pub jq_memory_mib: Option<u64>,
    /// Deadline of one jq run (the worker is killed then). Default
    /// [`crate::jq::DEFAULT_DEADLINE`] (10 s).
    pub jq_deadline: Duration,
    /// `--store` / `MCP_BUDGET_STORE`: `redis://host:port/db` keeps cached responses in Redis,
    /// shared between replicas. `None` when not given (then `[store] url`, then the memory
    /// store).
    pub store: Option<String>,
    /// Deadline of one Redis command. `None`: `[store] timeout_ms`, then 2 s.
    pub store_timeout: Option<Duration>,
    /// Whose responses this boundary makes and reads (`serve`: the session, or the bearer
    /// token's SHA-256). `None`: `local`.
    pub principal: Option<String>,
    /// `--client` / `MCP_BUDGET_CLIENT`: how the client hands results to its model. `None`
    /// when not given (then `[client] name`, then `generic`); see [`Settings::profile`].
    /// [`Settings::default`] sets `wire` (no client rendering: what the library's tests and a
    /// program reading the wire expect); the binary sets what `--client` says, `None` when
    /// not given.
    pub client: Option<Profile>,
    /// `--store-ca` / `MCP_BUDGET_STORE_CA`: PEM CA file trusted for `rediss://`. `None`:
    /// `[store] ca_file`, then the system's roots.
    pub store_ca: Option<PathBuf>,
    /// `--store-cache-bytes` / `MCP_BUDGET_STORE_CACHE_BYTES`: bound of the replica cache of
    /// parsed responses read from Redis. `None`: `[store] cache_bytes`, then 64 MiB.
    pub store_cache_bytes: Option<usize>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            max_tokens: None,
            encoding: Encoding::default(),
            precision: None,
            config_path: None,
            log_path: None,
            banner: None,
            cache_bytes: None,
            cache_ttl: None,
            cache_dir: None,
            blob_max_age: None,
            blob_threshold: DEFAULT_BLOB_THRESHOLD,
            blob_dir: None,
            file: None,
            jq_worker: WorkerCommand::current_exe(),
            jq_workers: None,
            jq_memory_mib: None,
            jq_deadline: crate::jq::DEFAULT_DEADLINE,
            store: None,
            store_timeout: None,
            principal: None,
            store_ca: None,
            store_cache_bytes: None,
            client: Some(Profile::wire()),
        }
    }
}

impl Settings {
    /// The client profile in force: `--client`, then `[client] name` of the config file (an
    /// unknown name there was refused when the file was loaded), then `generic`.
    pub fn profile(&self) -> Profile {
        if let Some(p) = &self.client {
            return p.clone();
        }
        self.file
            .as_ref()
            .and_then(|f| f.client.name.as_deref())
            .and_then(|n| n.parse().ok())
            .unwrap_or_default()
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

/// The smallest `image_max_side` taken, in pixels (a smaller value is raised to it).
pub const MIN_IMAGE_SIDE: u32 = 16;

/// The rule in force for one tool, after applying the precedence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectiveRule {
    /// Budget in tokens (at least [`mcp_budget_core::MIN_BUDGET_TOKENS`]).
    pub max_tokens: usize,
    /// Significant digits, 0 = exact.
    pub precision: u32,
    /// Overflow mode.
    pub overflow: Overflow,
    /// jq filter applied before shaping.
    pub transform: Option<String>,
    /// Suffix of the tool's description.
    pub description_suffix: Option<String>,
    /// Shorten UUIDs in results to their 12-hex prefix (`uuid_prefix`).
    pub uuid_prefix: bool,
    /// Replace `{"$response":…,"query":…}` arguments by cached responses (`response_refs`).
    pub response_refs: bool,
    /// Tables for arrays of objects (`[tools.<name>]`, then `[defaults]`; default off).
    pub tables: Tables,
    /// Where image items go (default [`ImageMode::Auto`]).
    pub images: ImageMode,
    /// What an image costs the model and the size it gets (default: the client profile's).
    pub image_tokens: ImageCost,
    /// The longest side, in pixels, of an image sent inline (default 2,000, at least 16).
    pub image_max_side: u32,
}

impl Settings {
    /// Reads and parses [`Settings::config_path`] into [`Settings::file`]; does nothing when no
    /// path is set.
    ///
    /// # Errors
    /// [`ConfigError::Read`] when the file cannot be read, [`ConfigError::Toml`] when it does
    /// not parse.
    pub fn load_config_file(&mut self) -> Result<(), ConfigError> {
        let Some(path) = &self.config_path else {
            return Ok(());
        };
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        self.file = Some(ConfigFile::parse(&text, path)?);
        Ok(())
    }

    /// [`Settings::load_config_file`] by value.
    ///
    /// # Errors
    /// As [`Settings::load_config_file`].
    pub fn with_file(mut self) -> Result<Settings, ConfigError> {
        self.load_config_file()?;
        Ok(self)
    }

    /// The rule in force for `tool` (see the module docs for the precedence).
    pub fn rule_for(&self, tool: &str) -> EffectiveRule {
        self.resolve(self.file.as_ref().and_then(|f| f.tools.get(tool)))
    }

    /// The proxy-wide rule (flags, env, `[defaults]`; no per-tool rule).
    pub fn global_rule(&self) -> EffectiveRule {
        self.resolve(None)
    }

    fn resolve(&self, rule: Option<&ToolRule>) -> EffectiveRule {
        let empty_defaults = FileDefaults::default();
        let defaults = self.file.as_ref().map_or(&empty_defaults, |f| &f.defaults);
        let max_tokens = rule
            .and_then(|r| r.max_tokens)
            .or(self.max_tokens)
            .or(defaults.max_tokens)
            .unwrap_or(mcp_budget_core::DEFAULT_BUDGET_TOKENS)
            .max(mcp_budget_core::MIN_BUDGET_TOKENS);
        let precision = rule
            .and_then(|r| r.precision)
            .or(self.precision)
            .or(defaults.precision)
            .unwrap_or(mcp_budget_core::DEFAULT_PRECISION);
        let overflow = rule
            .and_then(|r| r.overflow)
            .or(defaults.overflow)
            .unwrap_or_default();
        EffectiveRule {
            max_tokens,
            precision,
            overflow,
            transform: rule.and_then(|r| r.transform.clone()),
            description_suffix: rule.and_then(|r| r.description_suffix.clone()),
            uuid_prefix: rule
                .and_then(|r| r.uuid_prefix)
                .or(defaults.uuid_prefix)
                .unwrap_or(false),
            response_refs: rule
                .and_then(|r| r.response_refs)
                .or(defaults.response_refs)
                .unwrap_or(false),
            tables: rule
                .and_then(|r| r.tables)
                .or(defaults.tables)
                .unwrap_or_default(),
            images: rule
                .and_then(|r| r.images)
                .or(defaults.images)
                .unwrap_or_default(),
            image_tokens: rule
                .and_then(|r| r.image_tokens)
                .or(defaults.image_tokens)
                .unwrap_or_else(|| self.profile().image_cost),
            image_max_side: rule
                .and_then(|r| r.image_max_side)
                .or(defaults.image_max_side)
                .unwrap_or(mcp_budget_core::vision::DEFAULT_MAX_SIDE)
                .max(MIN_IMAGE_SIDE),
        }
    }

    /// Whether `response_refs` is on for some tool (in `[defaults]` or a `[tools.<name>]`):
    /// then the hint of a paged result says how to send it back by reference.
    pub fn response_refs_anywhere(&self) -> bool {
        self.file.as_ref().is_some_and(|f| {
            f.defaults.response_refs == Some(true)
                || f.tools.values().any(|r| r.response_refs == Some(true))
        })
    }

    /// The limits of `query_response` filter runs: flag or environment, then `[defaults]`,
    /// then the built-in defaults (2 workers, 1024 MiB, 10 s). At least 1 worker and 16 MiB.
    pub fn jq_limits(&self) -> crate::jq::JqLimits {
        let defaults = self.file.as_ref().map(|f| &f.defaults);
        let workers = self
            .jq_workers
            .or(defaults.and_then(|d| d.jq_workers))
            .unwrap_or(crate::jq::DEFAULT_WORKERS)
            .max(1);
        let memory_bytes = self
            .jq_memory_mib
            .or(defaults.and_then(|d| d.jq_memory_mib))
            .map_or(crate::jq::DEFAULT_MEMORY_BYTES, |mib| {
                mib.max(16).saturating_mul(1024 * 1024)
            });
        crate::jq::JqLimits {
            workers,
            memory_bytes,
            deadline: self.jq_deadline,
        }
    }

    /// The cache bound in bytes: the flag or environment variable, else `[cache] bytes`, else
    /// [`DEFAULT_CACHE_BYTES`].
    pub fn cache_bytes(&self) -> usize {
        self.cache_bytes
            .or(self.file.as_ref().and_then(|f| f.cache.bytes))
            .unwrap_or(DEFAULT_CACHE_BYTES)
    }

    /// The cache TTL: the flag or environment variable, else `[cache] ttl_secs`, else
    /// [`DEFAULT_CACHE_TTL`].
    pub fn cache_ttl(&self) -> Duration {
        self.cache_ttl
            .or(self
                .file
                .as_ref()
                .and_then(|f| f.cache.ttl_secs)
                .map(Duration::from_secs))
            .unwrap_or(DEFAULT_CACHE_TTL)
    }

    /// The shared store's URL: the flag or environment variable, else `[store] url`; `None`:
    /// the memory store. An empty value counts as none.
    pub fn store_url(&self) -> Option<String> {
        self.store
            .clone()
            .or(self.file.as_ref().and_then(|f| f.store.url.clone()))
            .filter(|u| !u.trim().is_empty())
    }

    /// Deadline of one Redis command: [`Settings::store_timeout`], else `[store] timeout_ms`,
    /// else 2 s; at least 1 ms.
    pub fn store_timeout(&self) -> Duration {
        self.store_timeout
            .or(self
                .file
                .as_ref()
                .and_then(|f| f.store.timeout_ms)
                .map(Duration::from_millis))
            .unwrap_or(crate::boundary::STORE_TIMEOUT)
            .max(Duration::from_millis(1))
    }

    /// Bytes of the largest compressed response written to Redis: `[store] max_entry_bytes`,
    /// else 32 MiB.
    pub fn store_max_entry_bytes(&self) -> usize {
        self.file
            .as_ref()
            .and_then(|f| f.store.max_entry_bytes)
            .unwrap_or(crate::boundary::STORE_MAX_ENTRY_BYTES)
    }

    /// The CA file trusted for `rediss://`: [`Settings::store_ca`], else `[store] ca_file`;
    /// `None`: the system's roots.
    pub fn store_ca_file(&self) -> Option<PathBuf> {
        self.store_ca
            .clone()
            .or(self.file.as_ref().and_then(|f| f.store.ca_file.clone()))
    }

    /// Bytes of the replica cache of parsed responses read from Redis:
    /// [`Settings::store_cache_bytes`], else `[store] cache_bytes`, else 64 MiB; 0 = none.
    pub fn store_cache_bytes(&self) -> usize {
        self.store_cache_bytes
            .or(self.file.as_ref().and_then(|f| f.store.cache_bytes))
            .unwrap_or(crate::boundary::STORE_CACHE_BYTES)
    }

    /// The principal: [`Settings::principal`], else `local`.
    pub fn principal(&self) -> String {
        self.principal.clone().unwrap_or_else(|| "local".to_owned())
    }

    /// The directory under which the spill directory is made: the flag or environment
    /// variable, else `[cache] dir`, else the system temp dir.
    pub fn cache_base_dir(&self) -> PathBuf {
        self.cache_dir
            .clone()
            .or(self.file.as_ref().and_then(|f| f.cache.dir.clone()))
            .unwrap_or_else(std::env::temp_dir)
    }

    /// The age past which blob files are removed at startup (zero: never): the flag or
    /// environment variable, else `[blobs] max_age_secs`, else [`DEFAULT_BLOB_MAX_AGE`].
    pub fn blob_max_age(&self) -> Duration {
        self.blob_max_age
            .or(self
                .file
                .as_ref()
                .and_then(|f| f.blobs.max_age_secs)
                .map(Duration::from_secs))
            .unwrap_or(DEFAULT_BLOB_MAX_AGE)
    }

    /// The directory offloaded blobs go to.
    pub fn blob_dir(&self) -> PathBuf {
        self.blob_dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("mcp-budget-blobs"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[defaults]
max_tokens = 5000
precision = 4
overflow = "summary"

[tools.big]
max_tokens = 700
transform = "del(.. | .duration_ns?)"
description_suffix = "Paged."

[tools.exact]
precision = 0
overflow = "page"
"#;

    fn with(file: &str, flag_tokens: Option<usize>, flag_precision: Option<u32>) -> Settings {
        Settings {
            max_tokens: flag_tokens,
            precision: flag_precision,
            file: Some(ConfigFile::parse(file, Path::new("t.toml")).unwrap()),
            ..Settings::default()
        }
    }

    #[test]
    fn per_tool_rule_beats_flag_beats_file_defaults() {
        let s = with(FILE, Some(9000), Some(7));
        assert_eq!(s.rule_for("big").max_tokens, 700);
        assert_eq!(s.rule_for("other").max_tokens, 9000);
        assert_eq!(s.rule_for("big").precision, 7);
        assert_eq!(s.rule_for("exact").precision, 0);
        assert_eq!(s.rule_for("exact").overflow, Overflow::Page);
        assert_eq!(s.rule_for("other").overflow, Overflow::Summary);
    }

    #[test]
    fn file_defaults_beat_built_in_defaults() {
        let s = with(FILE, None, None);
        assert_eq!(s.rule_for("other").max_tokens, 5000);
        assert_eq!(s.rule_for("other").precision, 4);
        let bare = Settings::default();
        assert_eq!(bare.rule_for("x").max_tokens, 10_000);
        assert_eq!(bare.rule_for("x").precision, 9);
        assert_eq!(bare.rule_for("x").overflow, Overflow::Page);
    }

    #[test]
    fn budget_is_clamped_to_the_floor() {
        let s = Settings {
            max_tokens: Some(10),
            ..Settings::default()
        };
        assert_eq!(
            s.rule_for("x").max_tokens,
            mcp_budget_core::MIN_BUDGET_TOKENS
        );
    }

    #[test]
    fn jq_limits_flag_beats_file_defaults_beats_built_in() {
        let file = "[defaults]\njq_workers = 3\njq_memory_mib = 64\n";
        let s = with(file, None, None);
        assert_eq!(s.jq_limits().workers, 3);
        assert_eq!(s.jq_limits().memory_bytes, 64 << 20);
        let s = Settings {
            jq_workers: Some(1),
            jq_memory_mib: Some(1),
            ..with(file, None, None)
        };
        assert_eq!(s.jq_limits().workers, 1);
        assert_eq!(s.jq_limits().memory_bytes, 16 << 20, "clamped up to 16 MiB");
        let bare = Settings::default().jq_limits();
        assert_eq!(bare, crate::jq::JqLimits::default());
        assert_eq!(bare.workers, 2);
    }

    #[test]
    fn sizes_and_durations_parse() {
        assert_eq!(parse_bytes("268435456"), Ok(268_435_456));
        assert_eq!(parse_bytes("256MiB"), Ok(256 << 20));
        assert_eq!(parse_bytes("256m"), Ok(256 << 20));
        assert_eq!(parse_bytes("1G"), Ok(1 << 30));
        assert_eq!(parse_bytes("64 KiB"), Ok(64 << 10));
        for bad in ["", "MiB", "-1", "1.5G", "1T", "99999999999999999999"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_duration("3600"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "h", "1.5h", "1w", "-3"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cache_and_blob_settings_flag_beats_file_beats_default() {
        let file = "[cache]\nbytes = 1000\nttl_secs = 7\ndir = \"/x\"\n[blobs]\nmax_age_secs = 0\n";
        let s = with(file, None, None);
        assert_eq!(s.cache_bytes(), 1000);
        assert_eq!(s.cache_ttl(), Duration::from_secs(7));
        assert_eq!(s.cache_base_dir(), PathBuf::from("/x"));
        assert_eq!(s.blob_max_age(), Duration::ZERO);
        let s = Settings {
            cache_bytes: Some(5),
            cache_ttl: Some(Duration::from_secs(1)),
            cache_dir: Some(PathBuf::from("/y")),
            blob_max_age: Some(Duration::from_secs(2)),
            ..s
        };
        assert_eq!(s.cache_bytes(), 5);
        assert_eq!(s.cache_ttl(), Duration::from_secs(1));
        assert_eq!(s.cache_base_dir(), PathBuf::from("/y"));
        assert_eq!(s.blob_max_age(), Duration::from_secs(2));
        let bare = Settings::default();
        assert_eq!(bare.cache_bytes(), DEFAULT_CACHE_BYTES);
        assert_eq!(bare.cache_ttl(), DEFAULT_CACHE_TTL);
        assert_eq!(bare.cache_base_dir(), std::env::temp_dir());
        assert_eq!(bare.blob_max_age(), DEFAULT_BLOB_MAX_AGE);
        let e = ConfigFile::parse("[cache]\nbyte = 3\n", Path::new("t.toml"));
        assert!(matches!(e, Err(ConfigError::Toml { .. })), "{e:?}");
    }

    #[test]
    fn uuid_prefix_and_response_refs_per_tool_beat_defaults() {
        let file = "[defaults]\nuuid_prefix = true\n[tools.raw]\nuuid_prefix = false\nresponse_refs = true\n";
        let s = with(file, None, None);
        assert!(s.rule_for("any").uuid_prefix);
        assert!(!s.rule_for("raw").uuid_prefix);
        assert!(s.rule_for("raw").response_refs);
        assert!(!s.rule_for("any").response_refs);
        assert!(s.response_refs_anywhere());
        let bare = Settings::default();
        assert!(!bare.rule_for("x").uuid_prefix && !bare.rule_for("x").response_refs);
        assert!(!bare.response_refs_anywhere());
    }

    #[test]
    fn unknown_keys_are_errors() {
        let e = ConfigFile::parse("[defaults]\nmax_token = 3\n", Path::new("t.toml"));
        assert!(matches!(e, Err(ConfigError::Toml { .. })), "{e:?}");
        let e = ConfigFile::parse("[tools.x]\noverflow = \"cut\"\n", Path::new("t.toml"));
        assert!(matches!(e, Err(ConfigError::Toml { .. })), "{e:?}");
    }

    #[test]
    fn load_config_file_reads_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, FILE).unwrap();
        let s = Settings {
            config_path: Some(path),
            ..Settings::default()
        }
        .with_file()
        .unwrap();
        assert_eq!(
            s.rule_for("big").description_suffix.as_deref(),
            Some("Paged.")
        );
        let missing = Settings {
            config_path: Some(dir.path().join("nope.toml")),
            ..Settings::default()
        }
        .with_file();
        assert!(matches!(missing, Err(ConfigError::Read { .. })));
    }

    #[test]
    fn tables_per_tool_then_defaults_then_off() {
        let s = with(
            "[defaults]\ntables = \"auto\"\n[tools.a]\ntables = \"off\"\n",
            None,
            None,
        );
        assert_eq!(s.rule_for("a").tables, Tables::Off);
        assert_eq!(s.rule_for("b").tables, Tables::Auto);
        assert_eq!(Settings::default().rule_for("b").tables, Tables::Off);
        let bad = ConfigFile::parse("[defaults]\ntables = \"on\"\n", Path::new("t.toml"));
        assert!(bad.is_err());
    }
}
