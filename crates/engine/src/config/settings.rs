//! [`Settings`]: the flags and environment of one proxy, the loaded TOML file, and the
//! settings that are not per-tool rules (cache, store, blobs, jq), each resolved flag or
//! environment first, then the file, then the built-in default.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_budget_core::client::Profile;
use mcp_budget_core::tokens::Encoding;

use super::defaults::{
    DEFAULT_BLOB_MAX_AGE, DEFAULT_BLOB_THRESHOLD, DEFAULT_CACHE_BYTES, DEFAULT_CACHE_TTL,
    DEFAULT_JQ_DEADLINE, DEFAULT_JQ_MEMORY_BYTES, DEFAULT_JQ_WORKERS, DEFAULT_STORE_CACHE_BYTES,
    DEFAULT_STORE_MAX_ENTRY_BYTES, DEFAULT_STORE_TIMEOUT, JqLimits,
};
use super::error::ConfigError;
use super::file::ConfigFile;

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
    /// [`DEFAULT_JQ_WORKERS`], 2).
    pub jq_workers: Option<usize>,
    /// `--jq-memory-mib` / `MCP_BUDGET_JQ_MEMORY_MIB`: address-space bound of one jq worker,
    /// in MiB. `None` when not given (then `[defaults] jq_memory_mib`, then 1024).
    pub jq_memory_mib: Option<u64>,
    /// Deadline of one jq run (the worker is killed then). Default
    /// [`DEFAULT_JQ_DEADLINE`] (10 s).
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
            jq_deadline: DEFAULT_JQ_DEADLINE,
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

    /// The value of a process-wide option: the flag or environment variable (`flag`), else
    /// what the TOML file (if loaded) gives (`file`); `None` when neither does (the caller
    /// then takes its built-in default). Per-tool options go through `config::rule` instead.
    fn flag_or_file<T: Clone>(
        &self,
        flag: &Option<T>,
        file: impl FnOnce(&ConfigFile) -> Option<T>,
    ) -> Option<T> {
        flag.clone().or_else(|| self.file.as_ref().and_then(file))
    }

    /// The limits of `query_response` filter runs: flag or environment, then `[defaults]`,
    /// then the built-in defaults (2 workers, 1024 MiB, 10 s). At least 1 worker and 16 MiB.
    pub fn jq_limits(&self) -> JqLimits {
        let workers = self
            .flag_or_file(&self.jq_workers, |f| f.defaults.jq_workers)
            .unwrap_or(DEFAULT_JQ_WORKERS)
            .max(1);
        let memory_bytes = self
            .flag_or_file(&self.jq_memory_mib, |f| f.defaults.jq_memory_mib)
            .map_or(DEFAULT_JQ_MEMORY_BYTES, |mib| {
                mib.max(16).saturating_mul(1024 * 1024)
            });
        JqLimits {
            workers,
            memory_bytes,
            deadline: self.jq_deadline,
        }
    }

    /// The cache bound in bytes: the flag or environment variable, else `[cache] bytes`, else
    /// [`DEFAULT_CACHE_BYTES`].
    pub fn cache_bytes(&self) -> usize {
        self.flag_or_file(&self.cache_bytes, |f| f.cache.bytes)
            .unwrap_or(DEFAULT_CACHE_BYTES)
    }

    /// The cache TTL: the flag or environment variable, else `[cache] ttl_secs`, else
    /// [`DEFAULT_CACHE_TTL`].
    pub fn cache_ttl(&self) -> Duration {
        self.flag_or_file(&self.cache_ttl, |f| {
            f.cache.ttl_secs.map(Duration::from_secs)
        })
        .unwrap_or(DEFAULT_CACHE_TTL)
    }

    /// The shared store's URL: the flag or environment variable, else `[store] url`; `None`:
    /// the memory store. An empty value counts as none.
    pub fn store_url(&self) -> Option<String> {
        self.flag_or_file(&self.store, |f| f.store.url.clone())
            .filter(|u| !u.trim().is_empty())
    }

    /// Deadline of one Redis command: [`Settings::store_timeout`], else `[store] timeout_ms`,
    /// else 2 s; at least 1 ms.
    pub fn store_timeout(&self) -> Duration {
        self.flag_or_file(&self.store_timeout, |f| {
            f.store.timeout_ms.map(Duration::from_millis)
        })
        .unwrap_or(DEFAULT_STORE_TIMEOUT)
        .max(Duration::from_millis(1))
    }

    /// Bytes of the largest compressed response written to Redis: `[store] max_entry_bytes`,
    /// else 32 MiB.
    pub fn store_max_entry_bytes(&self) -> usize {
        self.file
            .as_ref()
            .and_then(|f| f.store.max_entry_bytes)
            .unwrap_or(DEFAULT_STORE_MAX_ENTRY_BYTES)
    }

    /// The CA file trusted for `rediss://`: [`Settings::store_ca`], else `[store] ca_file`;
    /// `None`: the system's roots.
    pub fn store_ca_file(&self) -> Option<PathBuf> {
        self.flag_or_file(&self.store_ca, |f| f.store.ca_file.clone())
    }

    /// Bytes of the replica cache of parsed responses read from Redis:
    /// [`Settings::store_cache_bytes`], else `[store] cache_bytes`, else 64 MiB; 0 = none.
    pub fn store_cache_bytes(&self) -> usize {
        self.flag_or_file(&self.store_cache_bytes, |f| f.store.cache_bytes)
            .unwrap_or(DEFAULT_STORE_CACHE_BYTES)
    }

    /// The principal: [`Settings::principal`], else `local`.
    pub fn principal(&self) -> String {
        self.principal.clone().unwrap_or_else(|| "local".to_owned())
    }

    /// The directory under which the spill directory is made: the flag or environment
    /// variable, else `[cache] dir`, else the system temp dir.
    pub fn cache_base_dir(&self) -> PathBuf {
        self.flag_or_file(&self.cache_dir, |f| f.cache.dir.clone())
            .unwrap_or_else(std::env::temp_dir)
    }

    /// The age past which blob files are removed at startup (zero: never): the flag or
    /// environment variable, else `[blobs] max_age_secs`, else [`DEFAULT_BLOB_MAX_AGE`].
    pub fn blob_max_age(&self) -> Duration {
        self.flag_or_file(&self.blob_max_age, |f| {
            f.blobs.max_age_secs.map(Duration::from_secs)
        })
        .unwrap_or(DEFAULT_BLOB_MAX_AGE)
    }

    /// The directory offloaded blobs go to.
    pub fn blob_dir(&self) -> PathBuf {
        self.blob_dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("mcp-budget-blobs"))
    }
}
