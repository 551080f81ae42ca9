//! The boundary's plain data: what a shaped response is made of and what its pages carry,
//! shared by every stage (paging, structuredContent, the store, the injected tools). A leaf:
//! it imports no other module of the boundary but the structuredContent plan, so every stage can name these types without
//! reaching back into the stages that make them.

use crate::paginate::{PathStep, Position};
use crate::wire::Outcome;
use serde_json::{Map, Value, json};

use super::structured::Plan;

/// Names of the injected tools, for hints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolNames {
    /// `read_more`, or its prefixed name.
    pub read_more: String,
    /// `query_response`, or its prefixed name.
    pub query_response: String,
    /// `response_refs` is on for some tool: hints say how to pass a response by reference.
    pub refs: bool,
}

impl ToolNames {
    /// Whether `tool` is one of the two injected tools.
    pub fn answers(&self, tool: &str) -> bool {
        tool == self.read_more || tool == self.query_response
    }
}

impl Default for ToolNames {
    fn default() -> ToolNames {
        ToolNames {
            read_more: super::model::READ_MORE.to_owned(),
            query_response: super::model::QUERY_RESPONSE.to_owned(),
            refs: false,
        }
    }
}

/// One text item (or the part of one) on a page.
#[derive(Debug, Clone)]
pub struct Part {
    /// Index of the text item in the response.
    pub item: usize,
    /// The text that goes out.
    pub body: String,
    /// Where the part starts in its item ([`Position::start`] for a whole item or page 1).
    pub start: Position,
    /// For a JSON part, the path of its body in the item (empty: rooted at `$`).
    pub root: Vec<PathStep>,
}

/// A page of a cached response.
#[derive(Debug, Clone)]
pub struct SeqPage {
    /// How many pages come before this one (0 = page 1), whatever its page number.
    pub ordinal: usize,
    /// The text items of the page, in order.
    pub parts: Vec<Part>,
    /// The meta item's text.
    pub meta: String,
    /// Tokens of the parts plus the meta: at most the budget.
    pub tokens: usize,
    /// The page's full location (the meta item's `shown`, never abbreviated).
    pub location: String,
    /// The cursor of the next page; `None` on the last page.
    pub next_cursor: Option<String>,
    /// The total its meta item shows.
    pub total: Total,
}

/// The key of a paged result's `_meta` member that holds the page's machine-readable position.
pub const PAGE_META_KEY: &str = "mcp-budget/page";

/// The total a page's meta item shows: `total_tokens` (exact) or `total_tokens_estimate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Total {
    /// The exact tokens of the whole response.
    Exact(u64),
    /// An estimate (two significant digits), while the exact count runs.
    Estimate(u64),
}

/// Where a page starts in a response of several text items: item index and position in it.
pub type SeqPos = (usize, Position);

/// How the pieces of one document go out.
#[derive(Debug, Clone, PartialEq)]
pub enum Carrier {
    /// A `text` item; the map holds its members besides `type` and `text`.
    Text(Map<String, Value>),
    /// An embedded `resource` item: the item without `resource.text`.
    Resource(Map<String, Value>),
    /// A structuredContent that no text item carries: its pages go out as plain text items
    /// (only when the result is paged).
    Structured,
}

impl Carrier {
    /// The content item carrying `body`, a piece (or the whole) of the document.
    pub fn item(&self, body: String) -> Value {
        match self {
            Carrier::Text(extra) => text_item(body, extra),
            Carrier::Structured => text_item(body, &Map::new()),
            Carrier::Resource(item) => {
                let mut item = item.clone();
                if let Some(Value::Object(r)) = item.get_mut("resource") {
                    r.insert("text".into(), Value::String(body));
                }
                Value::Object(item)
            }
        }
    }
}

/// `{"type":"text","text":text, …extra}`.
pub fn text_item(text: String, extra: &Map<String, Value>) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String("text".into()));
    m.insert("text".into(), Value::String(text));
    for (k, v) in extra {
        m.insert(k.clone(), v.clone());
    }
    Value::Object(m)
}

/// The text of an embedded resource item (`type` `resource` whose `resource.text` is a
/// string), moved out of it: `(text, the item without it)`. `Err(item)` for any other item.
pub fn take_resource_text(item: Value) -> Result<(String, Map<String, Value>), Value> {
    let is_text_resource = item.get("type").and_then(Value::as_str) == Some("resource")
        && item
            .get("resource")
            .and_then(|r| r.get("text"))
            .is_some_and(Value::is_string);
    if !is_text_resource {
        return Err(item);
    }
    let Value::Object(mut m) = item else {
        return Err(item);
    };
    let text = match m.get_mut("resource") {
        Some(Value::Object(r)) => match r.remove("text") {
            Some(Value::String(t)) => t,
            _ => String::new(),
        },
        _ => String::new(),
    };
    Ok((text, m))
}

/// Whether an embedded resource whose `resource.mimeType` is `mime` may be read as JSON (and
/// so compacted and rounded): no `mimeType`, or a JSON media type: subtype `json` or a
/// `+json` structured-syntax suffix (RFC 6839 §3.1), parameters and case ignored. A resource
/// that declares any other type (`text/plain`, `text/markdown`, `text/csv` …) is text the
/// server meant as it is: `{} ` in a `.txt` file comes back `{} `, byte for byte.
pub fn resource_may_be_json(mime: Option<&str>) -> bool {
    let Some(mime) = mime else {
        return true;
    };
    let essence = mime.split(';').next().unwrap_or("").trim();
    let Some((_, subtype)) = essence.split_once('/') else {
        return false;
    };
    let subtype = subtype.trim().to_ascii_lowercase();
    subtype == "json" || subtype.ends_with("+json")
}

/// Name of the paging tool when no upstream tool has it.
pub const READ_MORE: &str = "read_more";
/// Name of the query tool when no upstream tool has it.
pub const QUERY_RESPONSE: &str = "query_response";
/// Prefix given to an injected tool whose name an upstream tool already has.
pub const PREFIX: &str = "budget_";

/// The sentence a paged result's hint gets when `response_refs` is on: how to pass the
/// cached response `id` to a tool without writing it out.
pub fn refs_hint(id: &str) -> String {
    format!(
        " Pass it to a tool as an argument: {{\"{}\":\"{id}\",\"query\":\"<jq>\"}}.",
        super::model::REF_KEY
    )
}

/// The member that makes an object a response reference.
pub const REF_KEY: &str = "$response";

/// The names deferred mode lists its two tools under (prefixed on a clash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeferNames {
    /// The tool that searches the catalog (`find_tools`, prefixed on a clash).
    pub find_tools: String,
    /// The tool that calls a tool of the catalog by name (`call_tool`, prefixed on a clash).
    pub call_tool: String,
}

/// What deferred mode remembers of `tools/list`.
#[derive(Debug, Default)]
pub struct Catalog {
    /// The listed (allowed, compacted) tools of every page seen.
    pub tools: Vec<Value>,
    /// Set once a first page was deferred.
    pub names: Option<DeferNames>,
}

/// Where each content item of the upstream result went.
#[derive(Debug, Clone)]
pub enum Slot {
    /// A text item: `doc` indexes the shaped documents; `extra` holds its other members
    /// (`annotations`, `_meta`).
    Text {
        /// Index into the documents.
        doc: usize,
        /// Members besides `type` and `text`.
        extra: Map<String, Value>,
    },
    /// An embedded resource with `text`: `doc` indexes the documents; `item` is the item
    /// without `resource.text`.
    Resource {
        /// Index into the documents.
        doc: usize,
        /// The item, its resource's `text` taken out.
        item: Map<String, Value>,
    },
    /// The result's structuredContent, following the pages of a document (see
    /// the proxy's `boundary::parts`); places a text item only when its own document is paged.
    Structured(Plan),
    /// Any other item, kept as it was.
    Other(Value),
}

impl Slot {
    /// The document this slot places on a page, with its carrier.
    pub fn carrier(&self) -> Option<(usize, Carrier)> {
        match self {
            Slot::Text { doc, extra } => Some((*doc, Carrier::Text(extra.clone()))),
            Slot::Resource { doc, item } => Some((*doc, Carrier::Resource(item.clone()))),
            Slot::Structured(plan) if plan.own => plan.doc.map(|d| (d, Carrier::Structured)),
            Slot::Structured(_) | Slot::Other(_) => None,
        }
    }
}

/// A shaped result and what telemetry needs to know about it.
#[derive(Debug)]
pub struct Shaped {
    /// The `CallToolResult` that goes out.
    pub result: Value,
    /// What shaping did (fit, compacted, paged, elided, …).
    pub outcome: Outcome,
    /// The cached response's id when it was paged or elided (its `read_more` cursor's owner).
    pub response_id: Option<String>,
    /// Bytes of the upstream result's model-visible texts (text items and embedded resource
    /// texts), before shaping.
    pub bytes_pre: u64,
    /// Bytes of the documents' texts as they went out.
    pub bytes: u64,
    /// Tokens of the documents' texts as they went out (the result's encoding).
    pub tokens: u64,
    /// The upstream's model-visible texts, kept only for telemetry (counted later, off the
    /// reply path); empty otherwise.
    pub pre_texts: Vec<String>,
    /// The vision cost of the inline images in `tokens` (tokens).
    pub image_tokens: u64,
}

/// How the documents were fit (the proxy's `boundary::call::emit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmitMode {
    /// Every document went out whole (compacted, maybe).
    Whole,
    /// Page 1 and its meta item went out; the rest is cached behind a cursor.
    Paged,
    /// The elision envelope went out (`overflow = "elide"`); the whole is cached.
    Elided,
}

/// `name`, prefixed with [`PREFIX`] as many times as needed to differ from every name in
/// `taken`.
pub fn free_name(name: &str, taken: &[&str]) -> String {
    let mut n = name.to_owned();
    while taken.contains(&n.as_str()) {
        n = format!("{PREFIX}{n}");
    }
    n
}

/// The two tool definitions for `tools/list`. Their model-visible definition tokens
/// (`crate::tooldefs::definition_tokens`: name, description, inputSchema) are at
/// most 150 cl100k tokens together (a test pins it); DESIGN.md "What is not advertised is not
/// used": each says what it does and names every argument.
pub fn definitions(names: &ToolNames) -> [Value; 2] {
    [
        json!({
            "name": names.read_more,
            "title": "Read more of a long tool result",
            "description": "Next page of a shortened tool result, from the proxy's cache.",
            "inputSchema": read_more_schema(),
            "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false},
            "_meta": crate::wire::injected_tool_meta()
        }),
        json!({
            "name": names.query_response,
            "title": "Query a long tool result with jq",
            "description": "Run a jq query on the full cached result of a shortened response, e.g. '.items|length'.",
            "inputSchema": query_response_schema(),
            "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false},
            "_meta": crate::wire::injected_tool_meta()
        }),
    ]
}

/// The `inputSchema` of `read_more`. `max_tokens` takes any positive integer: below
/// [`crate::MIN_BUDGET_TOKENS`] it counts as that, above the budget as the budget.
pub fn read_more_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "cursor": {"type": "string", "description": "next_cursor of the result"},
            "max_tokens": max_tokens_schema()
        },
        "required": ["cursor"]
    })
}

/// The `inputSchema` of `query_response` (`max_tokens` as in [`read_more_schema`]).
pub fn query_response_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "response_id": {"type": "string"},
            "query": {"type": "string", "description": "jq filter"},
            "max_tokens": max_tokens_schema()
        },
        "required": ["response_id", "query"]
    })
}

fn max_tokens_schema() -> Value {
    json!({"type": "integer", "minimum": 1, "description": "page size"})
}

#[cfg(test)]
mod tests {
    use super::resource_may_be_json;

    #[test]
    fn only_json_media_types_and_no_type_are_read_as_json() {
        for yes in [
            None,
            Some("application/json"),
            Some("Application/JSON; charset=utf-8"),
            Some("application/geo+json"),
            Some("text/json"),
        ] {
            assert!(resource_may_be_json(yes), "{yes:?}");
        }
        for no in [
            Some("text/plain"),
            Some("text/markdown"),
            Some("application/x-ndjson"),
            Some("application/jsonl"),
            Some(""),
            Some("json"),
        ] {
            assert!(!resource_may_be_json(no), "{no:?}");
        }
    }
}
