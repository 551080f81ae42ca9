//! Shaping the `result` of a `tools/list` response.
//!
//! - Remembers, per tool name, whether the tool declares an `outputSchema` (the
//!   structuredContent rules of [`mcp_budget_core::shape::structured`] depend on it). A first page starts a
//!   fresh listing; later pages add to it.
//! - Appends [`COMPACT_NOTE`] (after one space) to a description that promises indented
//!   JSON ([`promises_indentation`]): the proxy compacts the JSON of every tool's result (no
//!   rule turns that off), so the promise no longer holds.
//! - Appends [`mcp_budget_core::table::EXPLANATION`] (after one space) to the description of a
//!   tool whose rule says `tables = "auto"`: the form is explained once per tool, not in
//!   every result.
//! - Appends the tool's `description_suffix` rule (after one space) to its description.
//! - On the first page only (the request had no cursor), appends the injected tools
//!   ([`mcp_budget_core::shape::model::definitions`]). An injected tool whose name an upstream tool on that
//!   page already has is renamed with the `budget_` prefix, and hints name the renamed tool.
//!   A clash with a tool on a later page cannot be seen in time and is not handled.
//!
//! - First of all, `[tools_list]` drops refused tools and compacts the others; last, in
//!   deferred mode, replaces them by `find_tools`/`call_tool` (`super::tools_list`).
//!
//! A result without a `tools` array is returned unchanged.

use serde_json::Value;
use std::sync::Arc;

use super::state::Boundary;
use mcp_budget_core::shape::model::ToolNames;
use mcp_budget_core::shape::model::{QUERY_RESPONSE, READ_MORE};

/// The note appended to a description that promises indented JSON.
pub(crate) const COMPACT_NOTE: &str =
    "(mcp-budget: JSON output is compacted, without indentation.)";

/// Phrases (matched in ASCII lower case) by which a description promises indented output:
/// `pretty-printed`/`pretty printing`/`pretty JSON`, `2-space indentation`/`two space
/// indent` (any `… space indent…`), `indented JSON`, `formatted with indentation`. The
/// filesystem server's `directory_tree` says "The output is formatted with 2-space
/// indentation for readability".
const INDENT_PHRASES: [&str; 6] = [
    "pretty-print",
    "pretty print",
    "pretty json",
    "space indent",
    "indented json",
    "with indentation",
];

/// Whether `description` promises pretty-printed (indented) JSON, by [`INDENT_PHRASES`].
pub(crate) fn promises_indentation(description: &str) -> bool {
    let lower = description.to_ascii_lowercase();
    INDENT_PHRASES.iter().any(|p| lower.contains(p))
}

/// `description` with [`COMPACT_NOTE`] appended when it promises indented JSON and does not
/// carry the note yet (a proxy behind a proxy adds it once); `None` when it stays as it is.
fn with_compact_note(description: &str) -> Option<String> {
    (promises_indentation(description) && !description.contains(COMPACT_NOTE))
        .then(|| format!("{description} {COMPACT_NOTE}"))
}

pub(crate) fn shape(b: &Boundary, mut result: Value, first_page: bool) -> Value {
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return result;
    };
    super::tools_list::prepare(b, tools);
    let mut seen: Vec<(String, Option<Arc<Value>>)> = Vec::with_capacity(tools.len());
    for tool in tools.iter_mut() {
        let Some(name) = tool.get("name").and_then(Value::as_str).map(str::to_owned) else {
            continue;
        };
        let schema = tool
            .get("outputSchema")
            .filter(|s| s.is_object())
            .map(|s| Arc::new(s.clone()));
        let noted = tool
            .get("description")
            .and_then(Value::as_str)
            .and_then(with_compact_note);
        if let (Some(desc), Some(o)) = (noted, tool.as_object_mut()) {
            o.insert("description".into(), Value::String(desc));
        }
        if b.settings.rule_for(&name).tables == crate::config::Tables::Auto {
            // The table form is explained once, here, rather than in every result.
            let desc = match tool.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d} {}", mcp_budget_core::table::EXPLANATION),
                _ => mcp_budget_core::table::EXPLANATION.to_owned(),
            };
            if let Some(o) = tool.as_object_mut() {
                o.insert("description".into(), Value::String(desc));
            }
        }
        if let Some(suffix) = b.settings.rule_for(&name).description_suffix {
            let desc = match tool.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d} {suffix}"),
                _ => suffix,
            };
            if let Some(o) = tool.as_object_mut() {
                o.insert("description".into(), Value::String(desc));
            }
        }
        if b.settings.rule_for(&name).uuid_prefix {
            super::args_rewrite::note_description(tool);
        }
        if let Some(listed) = tool
            .get_mut("outputSchema")
            .filter(|_| b.profile.structured_meta)
        {
            declare_structured_meta(listed);
        }
        seen.push((name, schema));
    }
    {
        let taken: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
        super::tools_list::defer(b, tools, first_page, &taken);
    }
    let names = if first_page {
        let taken: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
        Some(ToolNames {
            read_more: mcp_budget_core::shape::model::free_name(READ_MORE, &taken),
            query_response: mcp_budget_core::shape::model::free_name(QUERY_RESPONSE, &taken),
            refs: false,
        })
    } else {
        None
    };
    b.remember_tools(seen, names.clone(), first_page);
    if let Some(names) = names {
        tools.extend(mcp_budget_core::shape::model::definitions(&names));
    }
    result
}

/// Declares [`mcp_budget_core::wire::STRUCTURED_META_KEY`] in a listed `outputSchema` whose
/// top level is an object schema (`"type":"object"` or `properties`), so that a page's
/// structuredContent carrying its meta item stays valid for a client that validates against
/// the listed schema (the TypeScript SDK does; `additionalProperties: false` included). The
/// boundary keeps the server's own schema for its own checks. A schema that already names the
/// member, or is not an object schema, is left as it is.
pub(crate) fn declare_structured_meta(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    let objecty = obj.get("type").and_then(Value::as_str) == Some("object")
        || obj.get("properties").is_some_and(Value::is_object);
    if !objecty {
        return;
    }
    let props = obj
        .entry("properties")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Some(props) = props.as_object_mut() {
        props
            .entry(mcp_budget_core::wire::STRUCTURED_META_KEY)
            .or_insert_with(mcp_budget_core::wire::structured_meta_schema);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_promising_indentation_get_the_note_once() {
        for d in [
            "The output is formatted with 2-space indentation for readability.",
            "Returns pretty-printed JSON.",
            "Pretty printing of the tree",
            "A tree as pretty JSON (2-space indent).",
            "Two space indented output",
            "Indented JSON of the record",
            "JSON formatted with indentation",
        ] {
            let noted = with_compact_note(d).unwrap_or_else(|| panic!("no note for {d:?}"));
            assert_eq!(noted, format!("{d} {COMPACT_NOTE}"));
            assert_eq!(with_compact_note(&noted), None, "noted twice: {noted:?}");
        }
        for d in [
            "Read a file.",
            "Returns JSON.",
            "Indentation-aware code search",
            "",
        ] {
            assert_eq!(with_compact_note(d), None, "{d:?}");
        }
    }
}
