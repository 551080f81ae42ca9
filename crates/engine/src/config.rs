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

mod defaults;
mod error;
mod file;
mod images;
mod oauth;
mod rule;
pub mod servers;
mod settings;
mod tools_list;
mod units;

pub use defaults::{
    DEFAULT_BLOB_MAX_AGE, DEFAULT_BLOB_THRESHOLD, DEFAULT_CACHE_BYTES, DEFAULT_CACHE_TTL,
    DEFAULT_JQ_DEADLINE, DEFAULT_JQ_MEMORY_BYTES, DEFAULT_JQ_WORKERS, DEFAULT_STORE_CACHE_BYTES,
    DEFAULT_STORE_MAX_ENTRY_BYTES, DEFAULT_STORE_TIMEOUT, JqLimits,
};
pub use error::ConfigError;
pub use file::{
    ConfigFile, FileBlobs, FileCache, FileClient, FileDefaults, FileLogging, FileStore,
    FileUpstream, Overflow, Tables, ToolRule,
};
pub use images::{ImageCost, ImageMode};
pub use oauth::FileOAuth;
pub use rule::{EffectiveRule, MIN_IMAGE_SIDE};
pub use servers::{MuxSection, ServerEntry};
pub use settings::{Settings, WorkerCommand};
pub use tools_list::{ListMode, ToolsList};
pub use units::{parse_bytes, parse_duration};

#[cfg(test)]
mod tests;
