//! The numbers a measurement produces: the wire types of `mcp-budget measure --json`.
//!
//! Every type serializes with serde; the field names are an interface (docs/guide/shape-and-measure.md).
//! Units are in the field names: `bytes` (UTF-8 bytes), `chars` (Unicode scalar values),
//! `tokens` (tokens of the encoding named by the map key), `*_pct` (percent, rounded to 0.01).

use serde::Serialize;
use serde::ser::SerializeMap;

/// One value per encoding, in the order the encodings were given.
///
/// Serializes as a JSON object keyed by encoding name: `{"cl100k_base":812,"o200k_base":790}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PerEncoding<T> {
    entries: Vec<(String, T)>,
}

impl<T> PerEncoding<T> {
    /// Pairs of (encoding name, value), in order.
    pub fn new(entries: Vec<(String, T)>) -> Self {
        PerEncoding { entries }
    }

    /// The value for the encoding called `name`, if measured.
    pub fn get(&self, name: &str) -> Option<&T> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The value for the first encoding (the one tables sort by).
    pub fn first(&self) -> Option<&T> {
        self.entries.first().map(|(_, v)| v)
    }

    /// (encoding name, value) pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v))
    }

    /// The values in encoding order.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// A new map with `f` applied to every value.
    pub fn map<U>(&self, mut f: impl FnMut(&T) -> U) -> PerEncoding<U> {
        PerEncoding {
            entries: self
                .entries
                .iter()
                .map(|(n, v)| (n.clone(), f(v)))
                .collect(),
        }
    }

    /// A new map combining `self` and `other` value by value (same encodings, same order).
    pub fn zip<U, V>(
        &self,
        other: &PerEncoding<U>,
        mut f: impl FnMut(&T, &U) -> V,
    ) -> PerEncoding<V> {
        PerEncoding {
            entries: self
                .entries
                .iter()
                .zip(other.entries.iter())
                .map(|((n, a), (_, b))| (n.clone(), f(a, b)))
                .collect(),
        }
    }
}

impl<T: Serialize> Serialize for PerEncoding<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (name, value) in &self.entries {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// What kind of input was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A JSON document that is not a recognized JSON-RPC result.
    Json,
    /// A JSON-RPC response (or bare result) of `tools/call`: a `content` array.
    ToolsCall,
    /// A JSON-RPC response (or bare result) of `tools/list`: a `tools` array.
    ToolsList,
    /// Any other text.
    Text,
}

impl Kind {
    /// The snake_case name used in `--json` and the tables.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Json => "json",
            Kind::ToolsCall => "tools_call",
            Kind::ToolsList => "tools_list",
            Kind::Text => "text",
        }
    }
}

/// Everything measured about one input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// What the input was recognized as.
    pub kind: Kind,
    /// Section 1: one row per part; the first row is always the whole input.
    pub size: Vec<SizeRow>,
    /// Section 2: the what-ifs that apply, in a fixed order (compact, floats 4/6/9/12, uuids,
    /// tables, structured twin).
    pub what_ifs: Vec<WhatIf>,
    /// Section 3: token share per key path; absent when no JSON was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_share: Option<FieldShare>,
    /// Section 4: cost of each tool definition; present for `tools/list` results only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolsCost>,
}

impl Report {
    /// The row of the whole input (`document`, `line` or `text`): always the first size row.
    pub fn whole(&self) -> Option<&SizeRow> {
        self.size.first()
    }
}

/// Section 1: the size of one part of the input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeRow {
    /// Which part: `document` (a whole JSON file), `text` (a whole non-JSON file), `line` (a
    /// whole JSON-RPC line, without its newline delimiter), `text_items` (the model-visible
    /// `text` content items of a `tools/call` result, summed), `structured_content` (the
    /// compact JSON of `structuredContent`).
    pub part: String,
    /// UTF-8 bytes.
    pub bytes: usize,
    /// Unicode scalar values.
    pub chars: usize,
    /// The common estimate `ceil(chars / 4)`, in "tokens".
    pub chars4: usize,
    /// Real tokens per encoding. For `text_items`, the sum of each item's count (the
    /// model-visible token count of DESIGN.md).
    pub tokens: PerEncoding<usize>,
    /// `(chars4 - tokens) / tokens * 100` per encoding: negative = chars/4 under-counts.
    pub estimate_error_pct: PerEncoding<f64>,
}

/// Section 2: what one compaction would save.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIf {
    /// `compact`, `floats`, `uuid_prefix`, `table`, `drop_structured_twin`.
    pub name: String,
    /// For `floats`: the significant digits kept; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<u32>,
    /// The part it was measured on (see [`SizeRow::part`]).
    pub part: String,
    /// Tokens before, per encoding: the input as it is for `compact` and
    /// `drop_structured_twin`; its compact form (exact numbers) for the others.
    pub tokens_before: PerEncoding<usize>,
    /// Tokens after the change, per encoding.
    pub tokens_after: PerEncoding<usize>,
    /// `(before - after) / before * 100` per encoding (negative = the change costs tokens).
    pub saved_pct: PerEncoding<f64>,
    /// How many things the change touched: floats rounded, UUIDs shortened, arrays turned into
    /// tables, JSON texts compacted, twins dropped.
    pub changed: usize,
    /// For `floats`: the largest absolute difference between an original number and its
    /// rounded value (computed in f64); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_abs_error: Option<f64>,
    /// The proxy setting that applies this saving (`mcp-budget proxy`'s config file, per tool
    /// under `[tools.<name>]` or under `[defaults]`): `uuid_prefix = true`,
    /// `precision = 6`, …; `always` when the proxy always does it (`compact`).
    pub config_key: String,
}

/// Section 3: which key paths cost most.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldShare {
    /// The part the JSON came from (`document`, `line`, `text_items`, `structured_content`).
    pub part: String,
    /// Number of distinct key paths (before keeping the top N).
    pub paths: usize,
    /// Sum of the leaf texts' chars: the denominator of `chars_pct`.
    pub total_chars: usize,
    /// Sum of the leaf texts' tokens per encoding: the denominator of `tokens_pct`.
    pub total_tokens: PerEncoding<usize>,
    /// The top N paths, by tokens of the first encoding (ties: by path).
    pub rows: Vec<FieldRow>,
}

/// One key path of [`FieldShare`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldRow {
    /// JSONPath-like, array indexes collapsed: `$.entities[*].guid`, `$["odd key"]`.
    pub path: String,
    /// How many leaf texts were attributed to this path.
    pub count: usize,
    /// Chars of those leaf texts.
    pub chars: usize,
    /// Share of [`FieldShare::total_chars`], in percent.
    pub chars_pct: f64,
    /// Tokens of those leaf texts, per encoding.
    pub tokens: PerEncoding<usize>,
    /// Share of [`FieldShare::total_tokens`] per encoding, in percent.
    pub tokens_pct: PerEncoding<f64>,
}

/// Section 4: what a `tools/list` result costs, tool by tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolsCost {
    /// Sum of the tools' tokens per encoding.
    pub total: PerEncoding<usize>,
    /// One row per tool, largest first (by the first encoding; ties keep list order).
    pub tools: Vec<ToolCost>,
    /// Model-visible definition tokens, as listed and with each `[tools_list]` option.
    pub definitions: DefinitionsCost,
}

/// The cost of one tool definition: its compact JSON object as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCost {
    /// The tool's `name` (empty when missing).
    pub name: String,
    /// Chars of the compact JSON of the definition.
    pub chars: usize,
    /// Tokens of the compact JSON of the definition, per encoding.
    pub tokens: PerEncoding<usize>,
}

/// Model-visible definition tokens of a tool list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DefinitionsCost {
    /// Tokens of the compact JSON of the whole `tools` array, per encoding (what a client
    /// receives; for comparison).
    pub whole_json: PerEncoding<usize>,
    /// One row per option (module docs), `as listed` first.
    pub options: Vec<OptionRow>,
}

/// Definition tokens with one option.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OptionRow {
    /// The option, as written in `[tools_list]`.
    pub option: String,
    /// Model-visible definition tokens, per encoding.
    pub tokens: PerEncoding<usize>,
    /// Saved against `as listed`, percent per encoding (0.01 steps).
    pub saved_pct: PerEncoding<f64>,
}

/// Rounds a percentage to 0.01 so reports are stable and readable.
pub(crate) fn round_pct(x: f64) -> f64 {
    if x.is_finite() {
        (x * 100.0).round() / 100.0
    } else {
        0.0
    }
}

/// A size row from raw figures; `estimate_error_pct` is `(chars4 - tokens) / tokens * 100`.
pub(crate) fn size_row_from(
    part: &str,
    bytes: usize,
    chars: usize,
    chars4: usize,
    tokens: PerEncoding<usize>,
) -> SizeRow {
    let estimate_error_pct = tokens.map(|&t| pct(chars4 as f64 - t as f64, t as f64));
    SizeRow {
        part: part.to_owned(),
        bytes,
        chars,
        chars4,
        tokens,
        estimate_error_pct,
    }
}

/// `(after - before) / before` style helpers in percent; 0 when `base` is 0.
pub(crate) fn pct(part: f64, base: f64) -> f64 {
    if base == 0.0 {
        0.0
    } else {
        round_pct(part / base * 100.0)
    }
}
