//! The boundary: what the proxy shapes, and nothing else does.
//!
//! The relay hands [`Boundary`] the `result` of every `tools/list` and `tools/call` response
//! and every `tools/call` request that names an injected tool; everything else passes the
//! relay byte for byte. The shaping rules (DESIGN.md, "Wire contract of the proxy"):
//!
//! - **Model-visible tokens** of a result are the token counts of its `text` items, plus the
//!   `text` of its embedded `resource` items, plus its `structuredContent` when no text item
//!   carries it (a twin counts once: as its text item, plus whatever it holds beyond it), each
//!   counted on its own, exactly as it goes out. The budget bounds that sum for every result
//!   the boundary emits, the meta item included; the banner item is outside it. Images are not
//!   counted (their vision cost is not modelled).
//! - **Documents** (`parts.rs`): each model-visible part is a document — a `text` item's text,
//!   an embedded resource's text, a structuredContent no text item carries — paged in order as
//!   one sequence; each piece goes out in its own wrapper (a text item; a `resource` item with
//!   the piece as `resource.text`, its other members kept on every page; a plain text item for
//!   a structuredContent's page).
//! - **Compaction first** (`call.rs`): a `text` item (or embedded resource text) holding a
//!   JSON object or array is parsed, run through the tool's `transform` (jq; text items
//!   only), and re-emitted compact with floats rounded (an embedded resource only when it
//!   declares no `mimeType` or a JSON one:
//!   [`mcp_budget_core::shape::model::resource_may_be_json`]). A result that then fits comes back
//!   with no meta item (and a structuredContent no text item carries goes out whole, with no
//!   text item added).
//! - **Over budget**: page 1 and the meta item (the last content item), or with
//!   `overflow = "summary"` the elision envelope whose `next_cursor` (`<id>.0`) leads to
//!   page 1. The shaped full response is cached (`store/`: bounded in memory, least recently
//!   used content spilled to files first, TTL from last use) for `read_more` and
//!   `query_response` (`injected.rs`), which never call the upstream server.
//! - **Several documents** (`walk.rs`) are paged as one sequence in order: a page holds
//!   whole documents while they fit and cuts the first one that does not; each stays its own
//!   content item, so following the cursors gives every one back exactly. With a budget near
//!   the floor (below about 360 tokens), where a whole document beside the meta item might
//!   not fit and the core pager (floor 256) would not cut it, the documents are instead paged
//!   as one JSON array of their values (texts as JSON strings) in plain text items.
//! - **Units too big for a page**: long object keys and numbers are cut across pages by the
//!   core pager like long strings, so every page of a JSON document is JSON.
//! - **Page position in `_meta`** (`walk.rs`): every paged result (page 1, `read_more`, a
//!   paged `query_response`) carries `result._meta["mcp-budget/page"]` =
//!   `{"response_id","page" (0 = page 1),"location","next_cursor" (absent on the last
//!   page),"total_tokens" (page 1 of a response with a document over the budget:
//!   "total_tokens_estimate" instead, the exact count running after it is sent)}`; `location` is the meta item's `shown` never abbreviated, what a
//!   client merges pages by. Other members of an upstream `_meta` object are kept.
//! - **Other items** (`resource_link`, small images, unknown types) cost no model-visible
//!   tokens and are all kept on page 1, in their original order.
//! - **structuredContent** (`structured.rs`): a member that is a string twin of a text item
//!   (`{"content": <the text>}`, the filesystem server) carries what that text item carries
//!   (compacted text or page 1), so it stays valid against `{content: string}`. A value twin
//!   (equal to a text item's JSON), and a structuredContent no text item carries, follow the
//!   pages of their document: each page's structuredContent is that page completed from the
//!   original (members the page does not show filled in reduced: short values kept, arrays
//!   empty, long strings empty; arrays holding the elements the page shows), so types,
//!   required members and `additionalProperties: false` still hold. What it holds beyond its
//!   text item counts in the budget (`parts.rs` asks for a smaller page, then cuts its
//!   arrays); when even that cannot fit, page 1 of a tool that declares an outputSchema keeps
//!   it over the budget (the one exception) and later pages carry none. A value twin is
//!   dropped only when `tools/list` showed that the tool declares no outputSchema; without
//!   one, a page's structuredContent is the page itself.
//! - **Blobs** (`blobs.rs`): image/audio `data`, resource `blob`, and base64 / `data:`
//!   strings inside JSON text that decode to more than the threshold are written to files
//!   (SHA-256 names, mode 0600, directory 0700; an existing file is reused only when its
//!   content hashes to its name; files older than `--blob-max-age` are removed at startup)
//!   and replaced by a text description
//!   ([`mcp_budget_core::wire::BlobOffload`]) whose tokens count.
//! - **query_response** runs jq (the jaq crates) on the cached response: its one document
//!   as JSON (a text that is not JSON as a JSON string), or an array of its documents; one
//!   output is that value, several an array; a single string output is shown as plain text.
//!   The output is shaped and paged by the same rules under its own response id. The filter
//!   runs in a jq worker process (`crate::jq`: empty environment, no files, memory and CPU
//!   bounded, killed at the deadline, a capped number alive); every way it can fail answers
//!   `query_failed`. Every result the proxy writes itself (`query_failed`, `cursor_invalid`)
//!   fits the budget: a long message is cut, its full length (chars) said.
//! - **Response ids** are 12 lowercase hex digits derived from the shaped content, budget
//!   and precision (the same response gets the same id and the same pages); cursors are
//!   `<id>.<page number>`, page 1 being `.0`. With the shared store (`--store redis://…`,
//!   `store/remote`) they are 24 hex digits drawn at random (96 bits: unguessable; the same
//!   call made twice gets two ids). Either way a response belongs to the boundary's
//!   principal ([`Boundary::with_store`]): another principal's cursor is `unknown`.
//!
//! ```
//! use mcp_budget_engine::boundary::Boundary;
//! use mcp_budget_engine::config::Settings;
//! use serde_json::json;
//!
//! let b = Boundary::new(Settings { max_tokens: Some(300), ..Settings::default() }).unwrap();
//! let rows: Vec<_> = (0..500).map(|i| json!({"id": i, "name": format!("row {i}")})).collect();
//! let text = serde_json::to_string_pretty(&rows).unwrap();
//! let result = json!({"content": [{"type": "text", "text": text}]});
//! let shaped = b.shape_call_result("rows", result, 12);
//! let content = shaped["content"].as_array().unwrap();
//! let meta: serde_json::Value =
//!     serde_json::from_str(content.last().unwrap()["text"].as_str().unwrap()).unwrap();
//! assert_eq!(meta["truncated"], true);
//! let cursor = meta["next_cursor"].as_str().unwrap();
//! let page2 = b
//!     .answer_injected(&json!({"name": "read_more", "arguments": {"cursor": cursor}}))
//!     .unwrap();
//! assert!(page2.get("isError").is_none());
//! ```

mod answer;
mod args;
pub mod args_rewrite;
mod blobs;
mod call;
mod client_fit;
mod early;
#[cfg(test)]
mod early_tests;
mod images;
pub mod injected;
mod list;
mod parts;
mod plain;
mod state;
mod store;
#[cfg(test)]
mod structured_cache_tests;
pub mod tools_list;
mod walk;

use std::sync::Arc;
use std::time::Instant;

use mcp_budget_core::wire::Outcome;
use serde_json::Value;

use crate::config::Settings;
use crate::telemetry::{self, PendingRecord};
use mcp_budget_core::shape::model::ToolNames;
pub use state::Boundary;
pub use store::responses::StoreHandle;

/// Deadline of one command of the shared store (and of connecting to it): 2 s.
pub const STORE_TIMEOUT: std::time::Duration = crate::config::DEFAULT_STORE_TIMEOUT;

/// The largest compressed response the shared store writes: 32 MiB (larger ones stay in the
/// memory of the replica that made them).
pub const STORE_MAX_ENTRY_BYTES: usize = crate::config::DEFAULT_STORE_MAX_ENTRY_BYTES;

/// Bound of each replica's cache of parsed responses read from the shared store: 64 MiB.
pub const STORE_CACHE_BYTES: usize = crate::config::DEFAULT_STORE_CACHE_BYTES;

/// A `tools/call` result that goes out as the server wrote it
/// ([`Boundary::pass_unchanged`]), to be accounted for once it has gone out
/// ([`Boundary::account_unchanged`]). Opaque.
pub struct Unchanged {
    /// The tool's name; empty when no one sees the accounting (`took` is then `None`).
    tool: String,
    passed: plain::Passed,
    upstream_ms: u64,
    /// How long the check took: the call's shaping time (a count left for later is not on
    /// the call's path). `None` when no one saw the accounting when the check began
    /// ([`Boundary::calls_observed`]): the call is then not accounted for.
    took: Option<std::time::Duration>,
}

impl std::fmt::Debug for Unchanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unchanged")
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

impl Boundary {
    /// The settings in force (with the config file loaded).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// A client's `tools/call` whose tool is one the proxy injected (`read_more`,
    /// `query_response`, or their prefixed names): `Some(result)` — the `result` JSON of the
    /// CallToolResult — to answer locally, never forwarded. `None` for any other tool.
    ///
    /// `params` is the request's `params` (`{"name": …, "arguments": {…}}`).
    pub fn answer_injected(&self, params: &Value) -> Option<Value> {
        let started = Instant::now();
        let answer = match tools_list::answer_find(self, params) {
            Some(a) => a,
            None => client_fit::answer_injected(self, params)?,
        };
        let tool = params.get("name").and_then(Value::as_str).unwrap_or("");
        crate::metrics::global().result(tool, answer.outcome, 0, answer.bytes, answer.tokens);
        crate::logging::call(&crate::logging::Call {
            tool,
            outcome: answer.outcome,
            bytes_pre: 0,
            bytes: answer.bytes,
            tokens: answer.tokens,
            upstream_ms: 0,
            shape_ms: started.elapsed().as_millis() as u64,
        });
        if let Some(t) = &self.telemetry {
            let tool = params.get("name").and_then(Value::as_str).unwrap_or("");
            t.send(PendingRecord {
                record: telemetry::record(
                    tool,
                    0,
                    answer.bytes,
                    answer.tokens,
                    0,
                    started.elapsed().as_millis() as u64,
                    answer.outcome,
                    answer.response_id.clone(),
                ),
                pre_texts: Vec::new(),
            });
        }
        Some(answer.result)
    }

    /// Shapes the `result` of a `tools/call` response. `tool` is the request's `params.name`;
    /// `upstream_ms` how long the upstream server took (milliseconds, for telemetry).
    /// Never fails: a result that is not a CallToolResult comes back unchanged.
    pub fn shape_call_result(&self, tool: &str, result: Value, upstream_ms: u64) -> Value {
        let started = Instant::now();
        let mut shaped = client_fit::shape_call(self, tool, result);
        let result = std::mem::take(&mut shaped.result);
        self.account(tool, shaped, upstream_ms, started);
        result
    }

    /// Whether the `tools/call` result `raw` (its JSON bytes) goes out exactly as it came:
    /// small plain text within the budget, which shaping would give back unchanged (see
    /// `boundary/plain.rs` for the rules). When it does, the call is accounted for (metrics,
    /// log line, telemetry) as [`Boundary::shape_call_result`] would have; when not, nothing
    /// happens and the result is to be shaped. `upstream_ms` as there.
    pub fn passes_unchanged(&self, tool: &str, raw: &[u8], upstream_ms: u64) -> bool {
        let Some(passed) = self.pass_unchanged(tool, raw, upstream_ms) else {
            return false;
        };
        self.account_unchanged(passed);
        true
    }

    /// [`Boundary::passes_unchanged`] in two steps: whether `raw` goes out as it came (`None`:
    /// it is to be shaped), and then, once it has gone out, [`Boundary::account_unchanged`]
    /// (which may count its tokens only then).
    pub fn pass_unchanged(&self, tool: &str, raw: &[u8], upstream_ms: u64) -> Option<Unchanged> {
        // Nothing copied and no clock read for an accounting no one sees (the stdio proxy's
        // default): this runs before the server's line goes out.
        let started = self.calls_observed().then(Instant::now);
        let passed = plain::check_then_count(self, tool, raw)?;
        Some(Unchanged {
            tool: started.map(|_| tool.to_owned()).unwrap_or_default(),
            passed,
            upstream_ms,
            took: started.map(|s| s.elapsed()),
        })
    }

    /// Accounts (metrics, log line, telemetry) for a result that went out as it came, as
    /// [`Boundary::shape_call_result`] would have; nothing when no one saw the accounting when
    /// the check began (no telemetry file, no per-call log event, metrics unread: the stdio
    /// proxy's default).
    pub fn account_unchanged(&self, unchanged: Unchanged) {
        let Some(took) = unchanged.took else {
            return;
        };
        let shaped = unchanged.passed.count(self);
        let started = Instant::now()
            .checked_sub(took)
            .unwrap_or_else(Instant::now);
        self.account(&unchanged.tool, shaped, unchanged.upstream_ms, started);
    }

    /// Whether anyone sees the accounting of a call: a telemetry file, the per-call log event,
    /// or metrics that may be read (not the stdio proxy's, which serves no `/metrics`).
    pub(crate) fn calls_observed(&self) -> bool {
        self.telemetry.is_some() || crate::metrics::read() || crate::logging::calls_logged()
    }

    /// Metrics, the log line and the telemetry record of one shaped call (`shaped.result` is
    /// not looked at); `started` when shaping began.
    fn account(
        &self,
        tool: &str,
        shaped: mcp_budget_core::shape::model::Shaped,
        upstream_ms: u64,
        started: Instant,
    ) {
        crate::metrics::global().result(
            tool,
            shaped.outcome,
            shaped.bytes_pre,
            shaped.bytes,
            shaped.tokens,
        );
        crate::logging::call(&crate::logging::Call {
            tool,
            outcome: shaped.outcome,
            bytes_pre: shaped.bytes_pre,
            bytes: shaped.bytes,
            tokens: shaped.tokens,
            upstream_ms,
            shape_ms: started.elapsed().as_millis() as u64,
        });
        if let Some(t) = &self.telemetry {
            t.send(PendingRecord {
                record: telemetry::record(
                    tool,
                    shaped.bytes_pre,
                    shaped.bytes,
                    shaped.tokens,
                    upstream_ms,
                    started.elapsed().as_millis() as u64,
                    shaped.outcome,
                    shaped.response_id,
                ),
                pre_texts: shaped.pre_texts,
            });
        }
    }

    /// Accounts for a `tools/call` of `tool` that got a JSON-RPC error instead of a result
    /// (from the server, or written by the relay when the server exited or timed out): one
    /// telemetry record with `outcome: "error"` and zero bytes and tokens (nothing reached the
    /// model through a result). `upstream_ms` in milliseconds. No-op without `--log`.
    pub fn note_call_error(&self, tool: &str, upstream_ms: u64) {
        if let Some(t) = &self.telemetry {
            t.send(PendingRecord {
                record: telemetry::record(tool, 0, 0, 0, upstream_ms, 0, Outcome::Error, None),
                pre_texts: Vec::new(),
            });
        }
    }

    /// Shapes the `result` of a `tools/list` response: adds the injected tools when
    /// `first_page` (the request had no cursor), applies `description_suffix` rules, and
    /// remembers which tools declare an outputSchema. Never fails.
    pub fn shape_list_result(&self, result: Value, first_page: bool) -> Value {
        list::shape(self, result, first_page)
    }

    /// What to do with a client's `tools/call` (its `params`) before forwarding it: refuse a
    /// tool `[tools_list]` denies, or turn `call_tool` into a call of the named tool
    /// ([`tools_list::CallRoute`]). Cheap: no tokenizing except for the error it may write.
    pub fn route_call(&self, params: &Value) -> tools_list::CallRoute {
        tools_list::route(self, params)
    }

    /// Whether a `tools/call` of `tool` may be one [`Boundary::route_call`] changes.
    pub fn may_route(&self, tool: &str) -> bool {
        tools_list::may_route(self, tool)
    }

    /// Whether a `tools/call` of `tool` is one the proxy answers itself (`read_more`,
    /// `query_response`, deferred mode's `find_tools`).
    pub fn answers(&self, tool: &str) -> bool {
        // Borrowed under the lock, not cloned: the relay asks this of every call.
        let listed = self.tools.read().map(|s| s.names.answers(tool));
        listed.unwrap_or_else(|_| ToolNames::default().answers(tool))
            || tools_list::is_find_tools(self, tool)
    }

    /// The names the injected tools are listed under: (`read_more`, `query_response`), or
    /// their `budget_`-prefixed names when an upstream tool has the name.
    pub fn injected_names(&self) -> (String, String) {
        let n = self.names();
        (n.read_more, n.query_response)
    }

    /// Removes the cache's spill directory and files (call once, at exit: cursors of spilled
    /// responses stop working).
    pub fn remove_spill_files(&self) {
        self.store.remove_spill_dir();
    }

    /// Blocks until every telemetry record queued so far is written (no-op without `--log`).
    pub fn flush_telemetry(&self) {
        if let Some(t) = &self.telemetry {
            t.flush();
        }
    }

    fn names(&self) -> ToolNames {
        let mut names: ToolNames = self
            .tools
            .read()
            .map(|s| s.names.clone())
            .unwrap_or_default();
        names.refs = self.refs_hint;
        names
    }

    /// Whether `tool` declares an outputSchema; `None` when `tools/list` has not shown it.
    fn has_output_schema(&self, tool: &str) -> Option<bool> {
        self.tools
            .read()
            .ok()
            .and_then(|s| s.schemas.get(tool).map(Option::is_some))
    }

    /// The outputSchema `tool` declares, when `tools/list` has shown one.
    fn output_schema(&self, tool: &str) -> Option<Arc<Value>> {
        self.tools
            .read()
            .ok()
            .and_then(|s| s.schemas.get(tool).cloned().flatten())
    }

    fn remember_tools(
        &self,
        seen: Vec<(String, Option<Arc<Value>>)>,
        names: Option<ToolNames>,
        fresh: bool,
    ) {
        if let Ok(mut s) = self.tools.write() {
            if fresh {
                s.schemas.clear();
            }
            s.schemas.extend(seen);
            if let Some(n) = names {
                s.names = n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundary_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Boundary>();
    }
}
