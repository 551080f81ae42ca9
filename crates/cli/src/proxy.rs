//! `mcp-budget proxy [OPTIONS] -- <COMMAND> [ARGS]...`: runs an MCP server behind the budget
//! proxy on stdio. Flags become settings and a relay; the relay runs on a small tokio runtime.
//! `mcp-budget proxy [OPTIONS] --upstream <URL> [--header 'Name: value']...`: the same for a
//! remote server over Streamable HTTP (see `remote`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcp_budget_core::client::Profile;
use mcp_budget_core::tokens::Encoding;
use mcp_budget_proxy::boundary::Boundary;
use mcp_budget_proxy::config::{self, Settings};
use mcp_budget_proxy::relay::{DEFAULT_MAX_LINE_BYTES, Relay, RelayOptions, Shaper, Upstream};

pub(crate) mod remote;
mod servers;

/// Flags of `mcp-budget proxy`.
///
/// Flags win over their environment variables; see the proxy's config docs for how they meet
/// the TOML file.
#[derive(Debug, clap::Args)]
#[command(
    override_usage = "mcp-budget proxy [OPTIONS] -- <COMMAND> [ARGS]...\n       mcp-budget proxy [OPTIONS] --upstream <URL> [--header 'Name: value']...\n       mcp-budget proxy [OPTIONS] --config <FILE with [servers.<name>] tables>"
)]
pub(crate) struct Args {
    /// Budget in tokens for one tools/call result [default: 10000]
    #[arg(long, value_name = "N", env = "MCP_BUDGET_MAX_TOKENS")]
    max_tokens: Option<usize>,

    /// Tokenizer: cl100k_base | o200k_base | chars4 | bytes | <path to tokenizer.json>
    /// [default: the client's, cl100k_base but for codex and copilot-cli: o200k_base]
    #[arg(long, value_name = "E", env = "MCP_BUDGET_ENCODING")]
    encoding: Option<Encoding>,

    /// How the client hands results to its model: generic (default; safe in every client at
    /// the default budget), claude-code, claude-desktop, codex, vscode, cursor, gemini-cli,
    /// opencode, copilot-cli, windsurf, kiro, cline
    #[arg(long, value_name = "NAME", env = "MCP_BUDGET_CLIENT")]
    client: Option<Profile>,

    /// Significant digits for floats, 0 = exact [default: 9]
    #[arg(long, value_name = "N", env = "MCP_BUDGET_PRECISION")]
    precision: Option<u32>,

    /// TOML file of defaults and per-tool rules
    #[arg(long, value_name = "FILE", env = "MCP_BUDGET_CONFIG")]
    config: Option<PathBuf>,

    /// Telemetry: one JSON object per tools/call, appended to FILE
    #[arg(long, value_name = "FILE", env = "MCP_BUDGET_LOG")]
    log: Option<PathBuf>,

    /// Text item put first in every tools/call result, outside the budget
    #[arg(long, value_name = "TEXT")]
    banner: Option<String>,

    /// Memory the cached responses may hold (parsed results by their heap estimate, texts by
    /// their bytes); older ones spill to files past it: 268435456, 256MiB, 1G [default: 256MiB]
    #[arg(long, value_name = "BYTES", env = "MCP_BUDGET_CACHE_BYTES", value_parser = config::parse_bytes)]
    cache_bytes: Option<usize>,

    /// How long a cached response stays readable after its last use: 3600, 90s, 15m, 24h
    /// [default: 1h]
    #[arg(long, value_name = "DURATION", env = "MCP_BUDGET_CACHE_TTL", value_parser = config::parse_duration)]
    cache_ttl: Option<Duration>,

    /// Where the cache's spill directory is made (mode 0700, removed at exit) [default: the
    /// temp dir]
    #[arg(long, value_name = "DIR", env = "MCP_BUDGET_CACHE_DIR")]
    cache_dir: Option<PathBuf>,

    /// Blob files older than this are removed at startup; 0 = never [default: 24h]
    #[arg(long, value_name = "DURATION", env = "MCP_BUDGET_BLOB_MAX_AGE", value_parser = config::parse_duration)]
    blob_max_age: Option<Duration>,

    /// Keep cached responses in Redis, shared by every proxy (replica) using it:
    /// redis://host:port/db [default: in this process's memory]
    #[arg(long, value_name = "URL", env = "MCP_BUDGET_STORE")]
    store: Option<String>,

    /// rediss://: PEM file of the CA(s) that sign Redis's certificate [default: the system's
    /// roots]
    #[arg(long, value_name = "FILE", env = "MCP_BUDGET_STORE_CA")]
    store_ca: Option<PathBuf>,

    /// This replica's cache of parsed responses read from Redis (repeated read_more skip the
    /// fetch and parse): 67108864, 64MiB; 0 = none [default: 64MiB]
    #[arg(long, value_name = "BYTES", env = "MCP_BUDGET_STORE_CACHE_BYTES", value_parser = config::parse_bytes)]
    store_cache_bytes: Option<usize>,

    /// Diagnostics on stderr: text (lines) or json (one OpenTelemetry-friendly object per
    /// line) [default: text]
    #[arg(long, value_name = "FORMAT", env = "MCP_BUDGET_LOG_FORMAT")]
    log_format: Option<mcp_budget_proxy::logging::LogFormat>,

    /// Whose responses these are in a shared store: only the same principal reads their
    /// cursors [default: local]
    #[arg(long, value_name = "NAME", env = "MCP_BUDGET_PRINCIPAL")]
    principal: Option<String>,

    /// Longest JSON-RPC line accepted from either side, in bytes; longer ones are answered
    /// with an error
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_LINE_BYTES)]
    max_line_bytes: usize,

    /// Seconds a request may wait for the server's answer (progress notifications restart the
    /// clock) before the proxy answers it with an error; 0 = wait for ever
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    request_timeout: u64,

    /// query_response: most jq worker processes alive at once; more queries wait (up to the
    /// query deadline) or are refused [default: 2]
    #[arg(long, value_name = "N", env = "MCP_BUDGET_JQ_WORKERS")]
    jq_workers: Option<usize>,

    /// query_response: memory bound of one jq worker process, in MiB [default: 1024]
    #[arg(long, value_name = "MIB", env = "MCP_BUDGET_JQ_MEMORY_MIB")]
    jq_memory_mib: Option<u64>,

    /// query_response: milliseconds a jq query may run before its worker is killed
    #[arg(long, value_name = "MS", default_value_t = 10_000, hide = true)]
    jq_timeout_ms: u64,

    /// Milliseconds the server gets to exit after the client closed stdin, before it is killed
    #[arg(long, value_name = "MS", default_value_t = 5000, hide = true)]
    shutdown_grace_ms: u64,

    /// Boxed: `Command`'s variants stay close in size.
    #[command(flatten)]
    remote: Box<remote::RemoteArgs>,

    /// The upstream MCP server's command and its arguments (after `--`)
    #[arg(
        value_name = "COMMAND",
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    command: Vec<OsString>,
}

impl Args {
    /// The upstream server: its command line, or the remote one of `--upstream` (its URL and
    /// headers from flags, the environment and `[upstream]` of the config file, which is then
    /// loaded into `settings`).
    ///
    /// # Errors
    /// When neither or both are given, or the config file or a header is bad.
    pub(crate) fn upstream(&self, settings: &mut Settings) -> anyhow::Result<Upstream> {
        match self.command.split_first() {
            Some((program, server_args)) => {
                self.remote.refuse_with_command()?;
                Ok(Upstream::new(program, server_args))
            }
            None => {
                // `[upstream]` of the config file is read here, before the boundary reads the rest.
                settings.load_config_file()?;
                let file = settings.file.as_ref().map(|f| &f.upstream);
                self.remote.upstream(file)
            }
        }
    }

    /// Installs the stderr log format: the flag or `MCP_BUDGET_LOG_FORMAT`, else `[logging]
    /// format` of the config file (loaded into `settings` here), else text.
    ///
    /// # Errors
    /// When the config file cannot be read or parsed.
    pub(crate) fn init_logging(&self, settings: &mut Settings) -> anyhow::Result<()> {
        let format = match self.log_format {
            Some(f) => f,
            None => {
                settings.load_config_file()?;
                settings
                    .file
                    .as_ref()
                    .and_then(|f| f.logging.format)
                    .unwrap_or_default()
            }
        };
        mcp_budget_proxy::logging::init(format);
        Ok(())
    }

    /// The relay's limits from the flags.
    pub(crate) fn relay_options(&self) -> RelayOptions {
        let mut options = RelayOptions::default();
        options.max_line_bytes = self.max_line_bytes;
        options.shutdown_grace = Duration::from_millis(self.shutdown_grace_ms);
        options.request_timeout =
            (self.request_timeout > 0).then(|| Duration::from_secs(self.request_timeout));
        options
    }

    /// The shaping settings from the flags.
    pub(crate) fn settings(&self) -> Settings {
        Settings {
            max_tokens: self.max_tokens,
            encoding: self.encoding.clone().unwrap_or_else(|| {
                let profile = self.client.clone().unwrap_or_default();
                profile.encoding.parse().unwrap_or_default()
            }),
            client: self.client.clone(),
            precision: self.precision,
            config_path: self.config.clone(),
            log_path: self.log.clone(),
            banner: self.banner.clone(),
            jq_workers: self.jq_workers,
            jq_memory_mib: self.jq_memory_mib,
            jq_deadline: Duration::from_millis(self.jq_timeout_ms.max(1)),
            cache_bytes: self.cache_bytes,
            cache_ttl: self.cache_ttl,
            cache_dir: self.cache_dir.clone(),
            blob_max_age: self.blob_max_age,
            store: self.store.clone(),
            principal: self.principal.clone(),
            store_ca: self.store_ca.clone(),
            store_cache_bytes: self.store_cache_bytes,
            ..Settings::default()
        }
    }
}

/// Runs `mcp-budget proxy` until the upstream server is gone; exits with its status.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let options = args.relay_options();
    let mut settings = args.settings();
    args.init_logging(&mut settings)?;
    // `[servers]` in the config file and no single server given: many servers behind one proxy.
    if args.command.is_empty() && !args.remote.given() {
        settings.load_config_file()?;
        if settings
            .file
            .as_ref()
            .is_some_and(|f| !f.servers.is_empty())
        {
            return servers::run(settings, options);
        }
    }
    let upstream = args.upstream(&mut settings)?;
    let boundary = Arc::new(Boundary::new(settings)?);
    let relay = Relay::new(options).with_shaper(Arc::clone(&boundary) as Arc<dyn Shaper>);

    // The stdio proxy serves no /metrics.
    mcp_budget_proxy::metrics::unread();
    let runtime = crate::runtime::runtime()?;
    let result = runtime.block_on(relay.run_stdio(&upstream));
    // tokio reads stdin on a blocking thread that may sit in read(2) forever.
    runtime.shutdown_timeout(Duration::from_millis(100));
    // Telemetry records are written off the hot path: make sure the last ones are on disk.
    boundary.flush_telemetry();
    // Tasks still running may hold the boundary: remove the spill files now, not on drop.
    boundary.remove_spill_files();
    let exit = result?;
    Ok(ExitCode::from(u8::try_from(exit.code).unwrap_or(1)))
}
