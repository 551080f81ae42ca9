//! Diagnostics on stderr through [`tracing`] (stdout is the protocol channel in proxy mode).
//!
//! Two formats ([`LogFormat`], `--log-format` / `MCP_BUDGET_LOG_FORMAT` / `[logging] format`):
//!
//! - `text` (default): one line per event, `mcp-budget: <message>` (`mcp-budget: debug: …`
//!   for debug events), as before `tracing`.
//! - `json`: one JSON object per line, flat, with the field names OpenTelemetry collectors map
//!   to the log data model (e.g. the collector's `filelog` receiver with a `json_parser`):
//!   `timestamp` (RFC 3339, UTC, microseconds) → Timestamp, `level` (`ERROR`, `WARN`,
//!   `INFO`, `DEBUG`) → SeverityText, `message` → Body, `target` (the Rust module) →
//!   InstrumentationScope name; every other key is an attribute, named after OpenTelemetry's
//!   semantic conventions where one exists: `mcp.session.id` (the first 8 hex digits of a
//!   session id only), `gen_ai.tool.name`, and `mcp_budget.*` for the proxy's own (`outcome`,
//!   `tokens`, `bytes`, `bytes_pre`, `upstream_ms`, `shape_ms`).
//!
//! What is never logged: header values, bearer tokens, whole session ids, response ids, and
//! payloads (arguments, results, bodies). Warnings and session events are always written; one
//! event per answered `tools/call` (target [`CALL_TARGET`]) only in the `json` format (and in
//! `text` with `MCP_BUDGET_DEBUG` set); debug events only with `MCP_BUDGET_DEBUG` set.

use std::fmt;
use std::io::Write;
use std::str::FromStr;
use std::sync::OnceLock;

use mcp_budget_core::wire::Outcome;
use serde::Deserialize;
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::registry::LookupSpan;

/// Target of the per-call events (see the module docs).
pub const CALL_TARGET: &str = "mcp_budget::call";

/// How diagnostics are written on stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// `mcp-budget: <message>` lines.
    #[default]
    Text,
    /// One JSON object per line (OpenTelemetry-friendly field names).
    Json,
}

/// A log format name that is neither `text` nor `json`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown log format {0:?} (expected text or json)")]
pub struct BadLogFormat(String);

impl FromStr for LogFormat {
    type Err = BadLogFormat;
    fn from_str(s: &str) -> Result<LogFormat, BadLogFormat> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(BadLogFormat(s.to_owned())),
        }
    }
}

/// Whether debug lines are written (`MCP_BUDGET_DEBUG` set): lets a hot path skip the work
/// of a debug line's arguments.
pub fn debug_on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("MCP_BUDGET_DEBUG").is_some())
}

/// Whether the per-call event (target [`CALL_TARGET`]) is written: set by [`init`].
static CALLS_LOGGED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether [`init`] installed a subscriber that writes the per-call event.
pub(crate) fn calls_logged() -> bool {
    CALLS_LOGGED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Installs the process's subscriber writing `format` to stderr. Returns false when one was
/// installed already (the first one stays).
pub fn init(format: LogFormat) -> bool {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::{Layer as _, filter};
    let level = if debug_on() {
        filter::LevelFilter::DEBUG
    } else {
        filter::LevelFilter::INFO
    };
    let calls = format == LogFormat::Json || debug_on();
    if calls {
        CALLS_LOGGED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let keep = filter::filter_fn(move |m| calls || m.target() != CALL_TARGET);
    let registry = tracing_subscriber::registry();
    let installed = match format {
        LogFormat::Text => {
            let layer = tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .event_format(TextLine)
                .with_filter(level)
                .with_filter(keep);
            tracing::subscriber::set_global_default(registry.with(layer))
        }
        LogFormat::Json => {
            let layer = tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .with_target(true)
                .with_filter(level)
                .with_filter(keep);
            tracing::subscriber::set_global_default(registry.with(layer))
        }
    };
    installed.is_ok()
}

/// The `text` format: `mcp-budget: <message>`, without the other fields (the message says
/// what they say).
#[derive(Debug)]
struct TextLine;

impl<S, N> FormatEvent<S, N> for TextLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut message = MessageOnly(String::new());
        event.record(&mut message);
        let debug = *event.metadata().level() == tracing::Level::DEBUG;
        writeln!(
            writer,
            "mcp-budget: {}{}",
            if debug { "debug: " } else { "" },
            message.0
        )
    }
}

/// Collects an event's `message` field.
struct MessageOnly(String);

impl tracing::field::Visit for MessageOnly {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            value.clone_into(&mut self.0);
        }
    }
}

/// An error (the reason a run ends), as [`warn`].
pub fn error(args: fmt::Arguments<'_>) {
    if tracing::dispatcher::has_been_set() {
        tracing::error!("{args}");
    } else {
        let _ = writeln!(std::io::stderr().lock(), "mcp-budget: {args}");
    }
}

/// A warning: through `tracing` when a subscriber is installed, else straight to stderr as
/// `mcp-budget: <message>` (library use without [`init`]).
pub fn warn(args: fmt::Arguments<'_>) {
    if tracing::dispatcher::has_been_set() {
        tracing::warn!("{args}");
    } else {
        let _ = writeln!(std::io::stderr().lock(), "mcp-budget: {args}");
    }
}

/// An informational line (serving on …), as [`warn`].
pub fn info(args: fmt::Arguments<'_>) {
    if tracing::dispatcher::has_been_set() {
        tracing::info!("{args}");
    } else {
        let _ = writeln!(std::io::stderr().lock(), "mcp-budget: {args}");
    }
}

/// A debug line, written only with `MCP_BUDGET_DEBUG` set.
pub fn debug(args: fmt::Arguments<'_>) {
    if !debug_on() {
        return;
    }
    if tracing::dispatcher::has_been_set() {
        tracing::debug!("{args}");
    } else {
        let _ = writeln!(std::io::stderr().lock(), "mcp-budget: debug: {args}");
    }
}

/// A `serve` session (or stateless worker) event: `what` happened to the session whose id is
/// `session` (only its first 8 characters are logged), `message` the whole line.
pub fn session(session: Option<&str>, what: &'static str, message: fmt::Arguments<'_>) {
    if !tracing::dispatcher::has_been_set() {
        let _ = writeln!(std::io::stderr().lock(), "mcp-budget: {message}");
        return;
    }
    let id = session.map_or("", |s| &s[..s.len().min(8)]);
    tracing::info!(mcp.session.id = id, mcp_budget.event = what, "{message}");
}

/// The per-call event of one answered `tools/call` (target [`CALL_TARGET`]): the same
/// figures as a telemetry record, no content.
pub(crate) struct Call<'a> {
    /// The tool's name.
    pub(crate) tool: &'a str,
    /// What shaping did.
    pub(crate) outcome: Outcome,
    /// UTF-8 bytes of the model-visible text before shaping (0 for injected tools).
    pub(crate) bytes_pre: u64,
    /// … and after.
    pub(crate) bytes: u64,
    /// Tokens after shaping.
    pub(crate) tokens: u64,
    /// Milliseconds the upstream server took.
    pub(crate) upstream_ms: u64,
    /// Milliseconds the proxy took.
    pub(crate) shape_ms: u64,
}

/// Logs `call` (see [`Call`]).
pub(crate) fn call(call: &Call<'_>) {
    let outcome = serde_json::to_value(call.outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    tracing::event!(
        target: CALL_TARGET,
        tracing::Level::INFO,
        gen_ai.tool.name = call.tool,
        mcp_budget.outcome = outcome.as_str(),
        mcp_budget.bytes_pre = call.bytes_pre,
        mcp_budget.bytes = call.bytes,
        mcp_budget.tokens = call.tokens,
        mcp_budget.upstream_ms = call.upstream_ms,
        mcp_budget.shape_ms = call.shape_ms,
        "tools/call {} {}",
        call.tool,
        outcome
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_by_name() {
        assert_eq!("json".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert_eq!(" Text ".parse::<LogFormat>(), Ok(LogFormat::Text));
        assert!("xml".parse::<LogFormat>().is_err());
        #[derive(Deserialize)]
        struct T {
            f: LogFormat,
        }
        let t: T = toml::from_str(r#"f = "json""#).unwrap();
        assert_eq!(t.f, LogFormat::Json);
    }
}
