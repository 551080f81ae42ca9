//! The process's Prometheus metrics (`serve` exposes them at `/metrics`, text format), counted
//! by every boundary of the process:
//!
//! - `mcp_budget_calls_total{tool,outcome}`: `tools/call` results shaped (outcome as in
//!   telemetry: `fit|compacted|paged|elided|offloaded|error`) and injected calls answered
//!   (`tool` = `read_more` / `query_response`; outcome `paged`, `fit` or `error`);
//! - `mcp_budget_bytes_before_total{tool}` / `mcp_budget_bytes_after_total{tool}`: UTF-8 bytes
//!   of the model-visible text before and after shaping (telemetry's `bytes_pre` / `bytes`);
//!   `mcp_budget_tokens_after_total{tool}`: its tokens after shaping (the tokens before are
//!   counted off the hot path, in the `--log` telemetry only);
//! - `mcp_budget_pages_served_total{tool}`: paged results sent (page 1 and `read_more` pages);
//! - `mcp_budget_store_lookups_total{result}`: cursor and response-id lookups in the response
//!   store, `hit`, `unknown`, `expired` or `unavailable` (hits and misses);
//! - `mcp_budget_store_errors_total{op}` and `mcp_budget_store_seconds{op}` (histogram): the
//!   shared store's commands (`put`, `get`, `save`) that failed or timed out, and how long each
//!   took, in seconds.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use mcp_budget_core::wire::Outcome;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

fn new_histogram() -> Histogram {
    // 50 µs to ~0.8 s.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 15))
}

/// Every metric of the process.
pub struct Metrics {
    registry: Registry,
    calls: Family<Labels, Counter>,
    bytes_before: Family<Labels, Counter>,
    bytes_after: Family<Labels, Counter>,
    tokens_after: Family<Labels, Counter>,
    pages: Family<Labels, Counter>,
    lookups: Family<Labels, Counter>,
    store_errors: Family<Labels, Counter>,
    store_seconds: Family<Labels, Histogram, fn() -> Histogram>,
    replica_cache: Family<Labels, Counter>,
    /// The counters of each tool seen, so that a result costs one map lookup instead of four
    /// family lookups (each allocating and hashing its labels): the relay counts every call.
    tools: RwLock<HashMap<String, Arc<ToolCounters>>>,
}

/// Handles on one tool's counters (a handle shares its value with the family's). Those a
/// result of that tool always touches are made with the entry; the others on first use, so
/// the rendered text is the same as without the cache (no zero series).
struct ToolCounters {
    bytes_before: Counter,
    bytes_after: Counter,
    tokens_after: Counter,
    /// `calls{tool,outcome}`, indexed by [`outcome_index`].
    calls: [OnceLock<Counter>; 6],
    pages: OnceLock<Counter>,
}

fn outcome_index(o: Outcome) -> usize {
    match o {
        Outcome::Fit => 0,
        Outcome::Compacted => 1,
        Outcome::Paged => 2,
        Outcome::Elided => 3,
        Outcome::Offloaded => 4,
        Outcome::Error => 5,
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Whether anyone reads the process's metrics (see [`unread`]).
static READ: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Tells the process that no one reads its metrics (the stdio proxy serves no `/metrics`):
/// work done only for them is skipped from then on (counting the tokens of a result that
/// goes out unchanged, when no telemetry file or call log wants them either).
pub fn unread() {
    READ.store(false, std::sync::atomic::Ordering::Relaxed);
}

/// Whether the metrics may be read ([`unread`] was not called).
pub(crate) fn read() -> bool {
    READ.load(std::sync::atomic::Ordering::Relaxed)
}

/// The process's metrics, registered on first use.
pub fn global() -> &'static Metrics {
    static GLOBAL: OnceLock<Metrics> = OnceLock::new();
    GLOBAL.get_or_init(Metrics::new)
}

/// Every metric in the Prometheus / OpenMetrics text format (`# EOF` last).
pub fn render() -> String {
    let mut out = String::new();
    // Writing to a String does not fail.
    let _ = encode(&mut out, &global().registry);
    out
}

fn tool_labels(tool: &str) -> Labels {
    vec![("tool", tool.to_owned())]
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Fit => "fit",
        Outcome::Compacted => "compacted",
        Outcome::Paged => "paged",
        Outcome::Elided => "elided",
        Outcome::Offloaded => "offloaded",
        Outcome::Error => "error",
    }
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("mcp_budget");
        let m = Metrics {
            calls: Family::default(),
            bytes_before: Family::default(),
            bytes_after: Family::default(),
            tokens_after: Family::default(),
            pages: Family::default(),
            lookups: Family::default(),
            store_errors: Family::default(),
            store_seconds: Family::new_with_constructor(new_histogram),
            replica_cache: Family::default(),
            registry: Registry::default(),
            tools: RwLock::default(),
        };
        registry.register("calls", "Tool calls shaped or answered", m.calls.clone());
        registry.register(
            "bytes_before",
            "Model-visible bytes of results before shaping",
            m.bytes_before.clone(),
        );
        registry.register(
            "bytes_after",
            "Model-visible bytes of results after shaping",
            m.bytes_after.clone(),
        );
        registry.register(
            "tokens_after",
            "Model-visible tokens of results after shaping",
            m.tokens_after.clone(),
        );
        registry.register(
            "pages_served",
            "Pages of paged results sent",
            m.pages.clone(),
        );
        registry.register(
            "store_lookups",
            "Response store lookups by result",
            m.lookups.clone(),
        );
        registry.register(
            "store_errors",
            "Shared store commands that failed or timed out",
            m.store_errors.clone(),
        );
        registry.register(
            "store_seconds",
            "Shared store command latency in seconds",
            m.store_seconds.clone(),
        );
        registry.register(
            "replica_cache",
            "Shared store lookups answered from this replica's cache of parsed responses",
            m.replica_cache.clone(),
        );
        Metrics { registry, ..m }
    }

    /// One result of `tool` sent: `bytes_before` / `bytes_after` / `tokens_after` as in
    /// telemetry.
    pub fn result(
        &self,
        tool: &str,
        outcome: Outcome,
        bytes_before: u64,
        bytes_after: u64,
        tokens_after: u64,
    ) {
        let counters = self.tool_counters(tool);
        counters.calls[outcome_index(outcome)]
            .get_or_init(|| {
                let labels: Labels = vec![
                    ("tool", tool.to_owned()),
                    ("outcome", outcome_name(outcome).to_owned()),
                ];
                self.calls.get_or_create(&labels).clone()
            })
            .inc();
        counters.bytes_before.inc_by(bytes_before);
        counters.bytes_after.inc_by(bytes_after);
        counters.tokens_after.inc_by(tokens_after);
        if outcome == Outcome::Paged {
            counters
                .pages
                .get_or_init(|| self.pages.get_or_create(&tool_labels(tool)).clone())
                .inc();
        }
    }

    /// The cached counters of `tool`, made on its first result.
    fn tool_counters(&self, tool: &str) -> Arc<ToolCounters> {
        if let Some(c) = self
            .tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tool)
        {
            return Arc::clone(c);
        }
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        let c = tools.entry(tool.to_owned()).or_insert_with(|| {
            let t = tool_labels(tool);
            Arc::new(ToolCounters {
                bytes_before: self.bytes_before.get_or_create(&t).clone(),
                bytes_after: self.bytes_after.get_or_create(&t).clone(),
                tokens_after: self.tokens_after.get_or_create(&t).clone(),
                calls: Default::default(),
                pages: OnceLock::new(),
            })
        });
        Arc::clone(c)
    }

    /// One lookup in the response store: `hit`, `unknown`, `expired` or `unavailable`.
    pub fn lookup(&self, result: &'static str) {
        self.lookups
            .get_or_create(&vec![("result", result.to_owned())])
            .inc();
    }

    /// One command of the shared store (`op`): how long it took, and whether it failed.
    pub fn store_op(&self, op: &'static str, took: Duration, failed: bool) {
        let l: Labels = vec![("op", op.to_owned())];
        self.store_seconds
            .get_or_create(&l)
            .observe(took.as_secs_f64());
        if failed {
            self.store_errors.get_or_create(&l).inc();
        }
    }
}

impl Metrics {
    /// One shared-store lookup through this replica's cache: `hit` or `miss`.
    pub fn replica_cache(&self, result: &'static str) {
        self.replica_cache
            .get_or_create(&vec![("result", result.to_owned())])
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_render_in_the_text_format() {
        let m = global();
        m.result("rows", Outcome::Paged, 1000, 300, 90);
        m.lookup("hit");
        m.store_op("get", Duration::from_millis(1), true);
        let text = render();
        assert!(
            text.contains(r#"mcp_budget_calls_total{tool="rows",outcome="paged"}"#),
            "{text}"
        );
        assert!(text.contains(r#"mcp_budget_pages_served_total{tool="rows"}"#));
        assert!(text.contains(r#"mcp_budget_store_lookups_total{result="hit"}"#));
        assert!(text.contains(r#"mcp_budget_store_errors_total{op="get"}"#));
        assert!(text.contains("mcp_budget_store_seconds_bucket"));
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn cached_counters_add_up_and_make_no_empty_series() {
        let m = Metrics::new();
        for _ in 0..3 {
            m.result("cached", Outcome::Fit, 10, 5, 2);
        }
        m.result("cached", Outcome::Paged, 100, 40, 9);
        m.result("fits_only", Outcome::Fit, 1, 1, 1);
        let mut text = String::new();
        assert!(encode(&mut text, &m.registry).is_ok());
        for line in [
            r#"mcp_budget_calls_total{tool="cached",outcome="fit"} 3"#,
            r#"mcp_budget_calls_total{tool="cached",outcome="paged"} 1"#,
            r#"mcp_budget_bytes_before_total{tool="cached"} 130"#,
            r#"mcp_budget_bytes_after_total{tool="cached"} 55"#,
            r#"mcp_budget_tokens_after_total{tool="cached"} 15"#,
            r#"mcp_budget_pages_served_total{tool="cached"} 1"#,
            r#"mcp_budget_calls_total{tool="fits_only",outcome="fit"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in {text}");
        }
        // Only what happened is rendered: no paged series for a tool that never paged.
        assert!(
            !text.contains(r#"pages_served_total{tool="fits_only"}"#),
            "{text}"
        );
        assert!(!text.contains(r#"outcome="error""#), "{text}");
    }
}
