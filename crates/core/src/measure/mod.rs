//! What a payload costs in real tokens, which fields cost most, and what each compaction would
//! save: the engine of `mcp-budget measure` (pure; the binary reads files and prints tables).
//!
//! [`measure`] recognizes the input ([`Kind`]) and returns a [`Report`] with up to four
//! sections:
//! 1. **Size** ([`SizeRow`]): bytes, chars, the chars/4 estimate, real tokens per encoding and
//!    the estimate's error. For a `tools/call` result: the whole line, the model-visible `text`
//!    items (the sum of each item's count, as DESIGN.md defines model-visible tokens) and the
//!    compact `structuredContent`, separately.
//! 2. **What-ifs** ([`WhatIf`], rules in the `whatif` module docs): pretty → compact; floats
//!    at 4, 6, 9, 12 significant digits with the largest absolute error; UUIDs → 12-hex prefix;
//!    uniform arrays of objects → header-plus-rows tables (the `table` module docs define the
//!    encoding); the `structuredContent` twin dropped. Only those that change something.
//!    For a `tools/call` result they are measured on the `text` items (what the model reads),
//!    except the twin, measured on the whole line.
//! 3. **Field share** ([`FieldShare`]): top N key paths by tokens, chars share beside tokens
//!    share (attribution rule in the `fields` module docs: each leaf's `"key":value` text is
//!    counted once, in one pass).
//! 4. **Tools** ([`ToolsCost`]): for a `tools/list` result, each definition's tokens, and
//!    the model-visible definition tokens (name, description, inputSchema: see
//!    [`crate::tooldefs`]) as listed and with each `[tools_list]` option ([`DefinitionsCost`]).
//!
//! Every token figure is [`Encoding::count`] of an exact text (never an estimate, never a sum
//! of parts except where a row says it sums: model-visible items, field leaves, tool totals).

mod aggregate;
mod count;
mod definitions;
mod error;
mod fields;
mod input;
mod report;
mod table;
mod tools;
mod uuid;
mod whatif;

pub use aggregate::totals;
pub use error::MeasureError;
pub use report::{
    DefinitionsCost, FieldRow, FieldShare, Kind, OptionRow, PerEncoding, Report, SizeRow, ToolCost,
    ToolsCost, WhatIf,
};

use serde_json::Value;

use crate::compact;
use crate::tokens::Encoding;
use count::Counter;
use input::{Input, Segment};
use report::size_row_from;

/// The significant digits the float what-ifs try, in order: 4, 6, 9, 12.
pub const FLOAT_PRECISIONS: [u32; 4] = whatif::FLOAT_PRECISIONS;

/// The number of key paths shown by default in the field share.
pub const DEFAULT_TOP: usize = 15;

/// What to measure with.
#[derive(Debug, Clone)]
pub struct Options {
    /// Encodings to count with, in column order; the first one sorts the tables. Give each
    /// at most once: per-encoding figures are keyed by [`Encoding::name`], so a repeat makes
    /// duplicate keys in the serialized report. Default: `cl100k_base`, `o200k_base`.
    pub encodings: Vec<Encoding>,
    /// How many key paths the field share keeps. Default: [`DEFAULT_TOP`] (15).
    pub top: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            encodings: vec![Encoding::Cl100kBase, Encoding::O200kBase],
            top: DEFAULT_TOP,
        }
    }
}

/// Measures `bytes` (a file's content).
///
/// `expect_json`: the input claims to be JSON (a `.json` file), so text that does not parse is
/// an error instead of being measured as text.
///
/// # Errors
/// [`MeasureError::InvalidUtf8`], [`MeasureError::InvalidJson`] (only with `expect_json`),
/// [`MeasureError::NoEncoding`].
pub fn measure_bytes(
    bytes: &[u8],
    expect_json: bool,
    options: &Options,
) -> Result<Report, MeasureError> {
    let text = std::str::from_utf8(bytes).map_err(|e| MeasureError::InvalidUtf8 {
        valid_up_to: e.valid_up_to(),
    })?;
    measure(text, expect_json, options)
}

/// Measures `text`; see the module docs for what is in the [`Report`].
///
/// # Errors
/// [`MeasureError::InvalidJson`] when `expect_json` and `text` is not one JSON value;
/// [`MeasureError::NoEncoding`] when `options.encodings` is empty.
pub fn measure(text: &str, expect_json: bool, options: &Options) -> Result<Report, MeasureError> {
    if options.encodings.is_empty() {
        return Err(MeasureError::NoEncoding);
    }
    let counter = Counter::new(&options.encodings);
    let report = match input::classify(text, expect_json)? {
        Input::Text { raw } => {
            let size = vec![counter.size_row("text", &raw)];
            let raw_counts = [size[0].tokens.clone()];
            let segs = [Segment { raw, value: None }];
            Report {
                kind: Kind::Text,
                size,
                what_ifs: whatif::what_ifs(&counter, &segs, &raw_counts, "text"),
                field_share: None,
                tools: None,
            }
        }
        Input::Json { raw, value } => {
            let size = vec![counter.size_row("document", &raw)];
            let raw_counts = [size[0].tokens.clone()];
            let field_share = fields::field_share(&counter, &[&value], "document", options.top);
            let segs = [Segment {
                raw,
                value: Some(value),
            }];
            Report {
                kind: Kind::Json,
                size,
                what_ifs: whatif::what_ifs(&counter, &segs, &raw_counts, "document"),
                field_share,
                tools: None,
            }
        }
        Input::ToolsList { line, value } => {
            let size = vec![counter.size_row("line", &line)];
            let raw_counts = [size[0].tokens.clone()];
            let field_share = fields::field_share(&counter, &[&value], "line", options.top);
            let tools = match input::result_of(&value).get("tools") {
                Some(Value::Array(t)) => Some(tools::tools_cost(&counter, t)),
                _ => None,
            };
            let segs = [Segment {
                raw: line,
                value: Some(value),
            }];
            Report {
                kind: Kind::ToolsList,
                size,
                what_ifs: whatif::what_ifs(&counter, &segs, &raw_counts, "line"),
                field_share,
                tools,
            }
        }
        Input::ToolsCall { line, value, items } => {
            measure_call(&counter, line, value, items, options)
        }
    };
    Ok(report)
}

fn measure_call(
    counter: &Counter<'_>,
    line: String,
    value: Value,
    items: Vec<Segment>,
    options: &Options,
) -> Report {
    let structured = input::result_of(&value).get("structuredContent");
    let mut size = vec![counter.size_row("line", &line)];
    let (bytes, chars) = items.iter().fold((0, 0), |(b, c), s| {
        (b + s.raw.len(), c + s.raw.chars().count())
    });
    let item_counts: Vec<PerEncoding<usize>> =
        items.iter().map(|s| counter.count(&s.raw)).collect();
    let tokens = counter.sum(item_counts.iter());
    size.push(size_row_from(
        "text_items",
        bytes,
        chars,
        chars.div_ceil(4),
        tokens,
    ));
    if let Some(sc) = structured {
        size.push(counter.size_row("structured_content", &compact::to_string(sc, 0)));
    }

    let mut what_ifs = whatif::what_ifs(counter, &items, &item_counts, "text_items");
    let twin = structured.is_some_and(|sc| whatif::is_twin(sc, &items));
    let json_items: Vec<&Value> = items
        .iter()
        .filter_map(|s| s.value.as_ref())
        .filter(|v| v.is_object() || v.is_array())
        .collect();
    let field_share = if !json_items.is_empty() {
        fields::field_share(counter, &json_items, "text_items", options.top)
    } else {
        structured
            .and_then(|sc| fields::field_share(counter, &[sc], "structured_content", options.top))
    };
    if twin {
        // `value` is ours: drop the twin in place rather than clone a line that may be megabytes.
        let mut value = value;
        let compact_line = compact::to_string(&value, 0);
        // A JSON-RPC line is usually compact already: its count is in the size row.
        let before = if compact_line == line {
            size[0].tokens.clone()
        } else {
            counter.count(&compact_line)
        };
        let target = match value.get_mut("result") {
            Some(Value::Object(r)) => Some(r),
            _ => value.as_object_mut(),
        };
        if let Some(r) = target {
            r.shift_remove("structuredContent");
        }
        let after = counter.count(&compact::to_string(&value, 0));
        what_ifs.push(whatif::make(
            "drop_structured_twin",
            None,
            "line",
            before,
            after,
            1,
            None,
        ));
    }
    Report {
        kind: Kind::ToolsCall,
        size,
        what_ifs,
        field_share,
        tools: None,
    }
}
