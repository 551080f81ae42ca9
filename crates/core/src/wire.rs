//! Every shape that a model or an MCP client sees from mcp-budget, in one module.
//!
//! DESIGN.md ("Wire contract of the proxy") is the source of the field names. Serialize these
//! with [`crate::compact::to_string`] or `serde_json::to_string` (compact; no pretty-printing).

use serde::{Deserialize, Serialize};

/// `truncation_reason` of a meta item whose result was cut to fit the token budget.
pub const TRUNCATION_TOKEN_BUDGET: &str = "token_budget";

/// The meta item: the last `text` content item of an over-budget page.
///
/// Compact JSON such as
/// `{"truncated":true,"truncation_reason":"token_budget","response_id":"3fa9c2e1b07d",
/// "next_cursor":"3fa9c2e1b07d.1","shown":"$[0].children[0:40]","total_tokens":104213,"hint":"…"}`.
/// `next_cursor` is absent on the last page. Its own tokens count against the budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// Always `true`: a meta item exists only when the result did not fit.
    pub truncated: bool,
    /// Why: [`TRUNCATION_TOKEN_BUDGET`].
    pub truncation_reason: String,
    /// Lowercase hex id of the cached full response (for `query_response`).
    pub response_id: String,
    /// Cursor of the next page for `read_more`; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub next_cursor: Option<String>,
    /// Where this page is in the whole: a JSONPath-like range for JSON (`$[0].children[40:80]`),
    /// or `lines 1-120 of 5000` for text.
    pub shown: String,
    /// For text: the 1-based line the next page starts at; absent for JSON and on the last page.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub next_start_line: Option<u64>,
    /// Tokens of the whole shaped (compacted, untrimmed) response, in the proxy's encoding:
    /// exact. Absent when only an estimate was known when the page was written (page 1 of a
    /// response over the budget, whose exact count runs after page 1 is sent): then
    /// `total_tokens_estimate` is there instead, and the later pages carry the exact count.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub total_tokens: Option<u64>,
    /// An estimate of `total_tokens` (two significant digits), present only when the exact
    /// count is not.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub total_tokens_estimate: Option<u64>,
    /// One sentence for the model: how to get more and how to select.
    pub hint: String,
}

/// The elision envelope of summary-first mode (`overflow = "summary"`).
///
/// `{"elided":true,"bytes":N,"tokens":N,"preview":{…},"response_id":"…","next_cursor":"…","hint":"…"}`;
/// `bytes` is the UTF-8 byte length and `tokens` the token count of the whole shaped response;
/// `preview` is [`crate::summary`]'s bounded structural summary; `next_cursor` leads to page 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElisionEnvelope {
    /// Always `true`.
    pub elided: bool,
    /// Bytes (UTF-8) of the whole shaped response.
    pub bytes: u64,
    /// Tokens of the whole shaped response, in the proxy's encoding.
    pub tokens: u64,
    /// The bounded structural summary.
    pub preview: serde_json::Value,
    /// Lowercase hex id of the cached full response.
    pub response_id: String,
    /// Cursor of page 1.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub next_cursor: Option<String>,
    /// How to read on or select.
    pub hint: String,
}

/// Why a cursor or response id was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CursorFault {
    /// Not of the form `<hex id>.<page number>` (or not a hex id).
    Malformed,
    /// Well formed, but no cached response has that id or page.
    Unknown,
    /// The cached response was dropped (TTL or memory bound).
    Expired,
}

/// The text of an `isError: true` result for a bad cursor or response id:
/// `{"error":"cursor_invalid","reason":"malformed|unknown|expired","hint":"…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CursorInvalid {
    /// Always `cursor_invalid`.
    pub error: String,
    /// Which fault.
    pub reason: CursorFault,
    /// What to do instead (e.g. call the original tool again).
    pub hint: String,
}

/// The text that replaces an offloaded base64 blob (an `image`/`audio` item's `data`, a
/// resource's `blob`, or a long base64 / `data:` string inside JSON text).
///
/// Compact JSON such as
/// `{"offloaded":"image","mimeType":"image/png","bytes":5380,"width":20,"height":20,"path":"/tmp/mcp-budget-blobs/3fa9….png"}`.
/// `bytes` is the decoded size in bytes; `width`/`height` are pixels, present for images whose
/// header could be read. Its tokens count against the budget like any text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlobOffload {
    /// What was offloaded: `image`, `audio`, `blob` (resource blob) or `base64` (a string in JSON).
    pub offloaded: String,
    /// MIME type as declared by the item, or sniffed from the bytes, or `application/octet-stream`.
    #[serde(rename = "mimeType")]
    pub mime_type: String,
    /// Decoded size in bytes.
    pub bytes: u64,
    /// Pixel width, for images.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub width: Option<u64>,
    /// Pixel height, for images.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub height: Option<u64>,
    /// Absolute path of the file holding the decoded bytes (named by SHA-256, mode 0600).
    pub path: String,
}

/// What the proxy did to one `tools/call` result (telemetry `outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Emitted unchanged: it fit as it was.
    Fit,
    /// Fit after compaction (JSON re-emitted compact, floats rounded).
    Compacted,
    /// Over budget: page 1 and a meta item.
    Paged,
    /// Over budget in summary-first mode: the elision envelope.
    Elided,
    /// Fit after base64 blobs were written to files.
    Offloaded,
    /// The upstream result was an `isError` result (or not a CallToolResult) and fit.
    Error,
}

/// One line of the telemetry JSONL (`--log`): one per `tools/call`. No payload content.
///
/// `bytes`/`tokens` are UTF-8 bytes / tokens of the model-visible text (the `text` items, meta
/// included, banner excluded); `_pre` is the same for the upstream result before shaping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TelemetryRecord {
    /// UTC time the result was shaped, RFC 3339 with milliseconds (`2026-11-30T07:54:08.123Z`).
    pub ts: String,
    /// `params.name` of the call.
    pub tool: String,
    /// Bytes before shaping.
    pub bytes_pre: u64,
    /// Bytes after shaping.
    pub bytes: u64,
    /// Tokens before shaping.
    pub tokens_pre: u64,
    /// Tokens after shaping.
    pub tokens: u64,
    /// Milliseconds the upstream server took (0 for calls answered by the proxy).
    pub upstream_ms: u64,
    /// Milliseconds the proxy spent shaping.
    pub shape_ms: u64,
    /// What was done.
    pub outcome: Outcome,
    /// Id of the cached full response, when one was kept (paged or elided).
    pub response_id: Option<String>,
}

/// The text of an `isError: true` result of `query_response` whose jq filter failed:
/// `{"error":"query_failed","message":"jq syntax error: …","hint":"…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryFailed {
    /// Always `query_failed`.
    pub error: String,
    /// The jq error (syntax or runtime), or what argument was missing.
    pub message: String,
    /// What to do instead.
    pub hint: String,
}

/// The text of an `isError: true` result of an injected tool (`read_more`, `query_response`)
/// whose arguments do not match its `inputSchema`:
/// `{"error":"invalid_arguments","argument":"max_tokens","reason":"…","hint":"…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvalidArguments {
    /// Always `invalid_arguments`.
    pub error: String,
    /// The argument at fault (`arguments` when they are not a JSON object).
    pub argument: String,
    /// Why: a wrong type, a value below the minimum, a missing required argument.
    pub reason: String,
    /// The arguments the tool takes.
    pub hint: String,
}

/// The member of a paged result's `structuredContent` object that carries its meta item (the
/// same object as the last content item's text), so that a client which hands its model only
/// `JSON.stringify(structuredContent)` (Claude Code, VS Code, Codex) still shows that the
/// result is paged and how to read on. The proxy declares it in every `outputSchema` it lists
/// ([`structured_meta_schema`]), so the page stays valid against that schema.
pub const STRUCTURED_META_KEY: &str = "mcp-budget";

/// The note put beside the meta item inside a page's `structuredContent`: members the page does
/// not show are given reduced (arrays empty, long strings empty) to keep the value valid
/// against its schema, and must not be read as data.
pub const STRUCTURED_META_NOTE: &str = "Paged: only the part named by `shown` is data; other arrays and strings here may be left empty. Read the rest with the hint.";

/// The JSON Schema of [`STRUCTURED_META_KEY`] as listed in an `outputSchema`: an object,
/// present only on paged results.
pub fn structured_meta_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "description": "Present only when the result was paged by mcp-budget: where this page is and how to read the rest (read_more / query_response)."
    })
}

/// `_meta` of the injected tools in `tools/list`: `anthropic/alwaysLoad` keeps Claude Code from
/// deferring them behind its tool search (so reading on needs no search round trip), and
/// `anthropic/searchHint` says what they are for when a client searches anyway.
pub fn injected_tool_meta() -> serde_json::Value {
    serde_json::json!({
        "anthropic/alwaysLoad": true,
        "anthropic/searchHint": "read the rest of a paged (truncated) tool result: next_cursor, response_id"
    })
}
