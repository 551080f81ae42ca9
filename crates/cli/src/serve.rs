//! `mcp-budget serve [OPTIONS] -- <COMMAND> [ARGS]...`: offers an MCP server over Streamable
//! HTTP, one upstream process per client session, shaped like `proxy`. The shaping and relay
//! flags are `proxy`'s own (flattened); this module adds the HTTP ones.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use mcp_budget_proxy::config;
use mcp_budget_proxy::serve::{self, ServeOptions, Server};

use crate::proxy;

/// Flags of `mcp-budget serve`.
#[derive(Debug, clap::Args)]
#[command(override_usage = "mcp-budget serve [OPTIONS] -- <COMMAND> [ARGS]...")]
pub(crate) struct ServeArgs {
    /// Address to listen on (port 0: any free port; the address is printed on stderr)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    listen: String,

    /// The MCP endpoint's path
    #[arg(long, value_name = "PATH", default_value = serve::DEFAULT_PATH)]
    path: String,

    /// Require `Authorization: Bearer <TOKEN>` on every request; sessions of one token share
    /// their cursors
    #[arg(
        long,
        value_name = "TOKEN",
        env = "MCP_BUDGET_AUTH_TOKEN",
        hide_env_values = true
    )]
    auth_token: Option<String>,

    /// An Origin (scheme://host[:port]) accepted besides localhost ones; `*` accepts any;
    /// repeatable
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,

    /// Largest request body, in bytes: 4194304, 4MiB
    #[arg(long, value_name = "BYTES", default_value = "4MiB", value_parser = config::parse_bytes)]
    max_body_bytes: usize,

    /// A session with no request for this long ends (its server is stopped): 90s, 30m, 2h
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = config::parse_duration)]
    session_idle: Duration,

    /// Most sessions (upstream processes) alive at once; more get 503
    #[arg(long, value_name = "N", default_value_t = serve::DEFAULT_MAX_SESSIONS)]
    max_sessions: usize,

    #[command(flatten)]
    proxy: proxy::Args,
}

/// Runs `mcp-budget serve` until SIGTERM, SIGINT or SIGHUP.
pub(crate) fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut settings = args.proxy.settings();
    args.proxy.init_logging(&mut settings)?;
    let upstream = args.proxy.upstream(&mut settings)?;
    let mut options = ServeOptions::default();
    options.path = if args.path.starts_with('/') {
        args.path.clone()
    } else {
        format!("/{}", args.path)
    };
    options.auth_token = args.auth_token.clone().filter(|t| !t.is_empty());
    options.allowed_origins = args.allow_origin.clone();
    options.max_body_bytes = args.max_body_bytes;
    options.session_idle = args.session_idle;
    options.max_sessions = args.max_sessions;
    let server = Server::new(
        options.clone(),
        upstream,
        args.proxy.relay_options(),
        settings,
    )?;

    let runtime = crate::runtime::runtime()?;
    let result = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let addr = listener.local_addr().context("no local address")?;
        if !addr.ip().is_loopback() && options.auth_token.is_none() {
            mcp_budget_proxy::logging::warn(format_args!(
                "warning: listening on {addr}, beyond this machine, with no --auth-token"
            ));
        }
        mcp_budget_proxy::logging::info(format_args!("serving http://{addr}{}", options.path));
        server
            .run(listener, serve::shutdown_signal())
            .await
            .map_err(anyhow::Error::from)?;
        anyhow::Ok(server)
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
    result?.finish();
    Ok(ExitCode::SUCCESS)
}
