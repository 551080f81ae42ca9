//! The tools/list stage: what is done to each tool a `tools/list` result lists, and the
//! names of the injected tools. Pure: the caller says what each tool's rule asks
//! ([`ToolRule`]) and keeps what the listing taught (each tool's `outputSchema`, the injected
//! tools' names).
//!
//! - [`COMPACT_NOTE`] (after one space) goes after a description that promises indented JSON
//!   ([`promises_indentation`]): results are compacted, so the promise no longer holds.
//! - [`crate::table::EXPLANATION`] goes after the description of a tool whose rule says
//!   `tables = "auto"`: the form is explained once per tool, not in every result.
//! - The rule's `description_suffix` goes after that; with `uuid_prefix`, [`UUID_NOTE`].
//! - For a client that reads a page's meta item from its structuredContent, a listed object
//!   `outputSchema` declares that member ([`declare_structured_meta`]).
//! - The injected tools get names no listed tool has ([`injected_names`]).

use std::sync::Arc;

use serde_json::Value;

use super::model::{QUERY_RESPONSE, READ_MORE, ToolNames, free_name};

/// The note appended to a description that promises indented JSON.
pub const COMPACT_NOTE: &str = "(mcp-budget: JSON output is compacted, without indentation.)";

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
pub fn promises_indentation(description: &str) -> bool {
    let lower = description.to_ascii_lowercase();
    INDENT_PHRASES.iter().any(|p| lower.contains(p))
}

/// `description` with [`COMPACT_NOTE`] appended when it promises indented JSON and does not
/// carry the note yet (a proxy behind a proxy adds it once); `None` when it stays as it is.
pub fn with_compact_note(description: &str) -> Option<String> {
    (promises_indentation(description) && !description.contains(COMPACT_NOTE))
        .then(|| format!("{description} {COMPACT_NOTE}"))
}

/// Appended (after one space) to the description of a tool whose results get `uuid_prefix`.
pub const UUID_NOTE: &str = "(mcp-budget: UUIDs in results are shortened to their first 12 hex digits; pass them back as shown, they are expanded to the full UUID.)";

/// What a tool's rule asks of its `tools/list` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolRule {
    /// `tables = "auto"`: its description explains the table form. Default false.
    pub tables: bool,
    /// Text appended (after one space) to its description. Default none.
    pub description_suffix: Option<String>,
    /// `uuid_prefix = true`: its description says UUIDs are shortened. Default false.
    pub uuid_prefix: bool,
}

/// Edits one `tools/list` entry in place as `rule` asks (see the module docs);
/// `structured_meta`: the client reads a page's meta item from its structuredContent. Returns
/// the tool's name and its `outputSchema` as the server listed it (before the edit), or
/// `None` for an entry without a name (left as it is).
pub fn edit_tool(
    tool: &mut Value,
    rule: &ToolRule,
    structured_meta: bool,
) -> Option<(String, Option<Arc<Value>>)> {
    let name = tool.get("name").and_then(Value::as_str)?.to_owned();
    let schema = tool
        .get("outputSchema")
        .filter(|s| s.is_object())
        .map(|s| Arc::new(s.clone()));
    if let Some(desc) = tool
        .get("description")
        .and_then(Value::as_str)
        .and_then(with_compact_note)
    {
        set_description(tool, desc);
    }
    if rule.tables {
        append_description(tool, crate::table::EXPLANATION);
    }
    if let Some(suffix) = &rule.description_suffix {
        append_description(tool, suffix);
    }
    if rule.uuid_prefix {
        note_description(tool);
    }
    if structured_meta && let Some(listed) = tool.get_mut("outputSchema") {
        declare_structured_meta(listed);
    }
    Some((name, schema))
}

/// The injected tools' names on a listing whose tools are `taken`: `read_more` and
/// `query_response`, each with [`super::model::PREFIX`] when a listed tool has the name.
pub fn injected_names(taken: &[&str]) -> ToolNames {
    ToolNames {
        read_more: free_name(READ_MORE, taken),
        query_response: free_name(QUERY_RESPONSE, taken),
        refs: false,
    }
}

/// `tool`'s description followed by one space and `text` (`text` alone when it has none).
fn append_description(tool: &mut Value, text: &str) {
    let desc = match tool.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d} {text}"),
        _ => text.to_owned(),
    };
    set_description(tool, desc);
}

fn set_description(tool: &mut Value, desc: String) {
    if let Some(o) = tool.as_object_mut() {
        o.insert("description".into(), Value::String(desc));
    }
}

/// Appends [`UUID_NOTE`] (after one space) to the description of `tool` (a `tools/list`
/// entry), once: a proxy behind a proxy adds it once.
pub fn note_description(tool: &mut Value) {
    let Some(o) = tool.as_object_mut() else {
        return;
    };
    let desc = match o.get("description").and_then(Value::as_str) {
        Some(d) if d.contains(UUID_NOTE) => return,
        Some(d) if !d.is_empty() => format!("{d} {UUID_NOTE}"),
        _ => UUID_NOTE.to_owned(),
    };
    o.insert("description".into(), Value::String(desc));
}

/// Declares [`crate::wire::STRUCTURED_META_KEY`] in a listed `outputSchema` whose
/// top level is an object schema (`"type":"object"` or `properties`), so that a page's
/// structuredContent carrying its meta item stays valid for a client that validates against
/// the listed schema (the TypeScript SDK does; `additionalProperties: false` included). The
/// boundary keeps the server's own schema for its own checks. A schema that already names the
/// member, or is not an object schema, is left as it is.
pub fn declare_structured_meta(schema: &mut Value) {
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
            .entry(crate::wire::STRUCTURED_META_KEY)
            .or_insert_with(crate::wire::structured_meta_schema);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_tool_notes_in_order_and_returns_the_schema_as_listed() {
        let schema = serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let mut tool = serde_json::json!({"name": "t", "description": "Pretty-printed rows.",
            "inputSchema": {"type": "object"}, "outputSchema": schema});
        let rule = ToolRule {
            tables: true,
            description_suffix: Some("Cheap.".into()),
            uuid_prefix: true,
        };
        let (name, listed) = edit_tool(&mut tool, &rule, true).expect("named");
        assert_eq!(name, "t");
        assert_eq!(
            listed.as_deref(),
            Some(&schema),
            "the server's own schema, unedited"
        );
        assert_eq!(
            tool["description"],
            format!(
                "Pretty-printed rows. {COMPACT_NOTE} {} Cheap. {UUID_NOTE}",
                crate::table::EXPLANATION
            )
        );
        assert!(tool["outputSchema"]["properties"][crate::wire::STRUCTURED_META_KEY].is_object());
        // Again (a proxy behind a proxy): the compact note is not added twice.
        let once = tool["description"].clone();
        edit_tool(&mut tool, &ToolRule::default(), false);
        assert_eq!(tool["description"], once);
        // No name: left as it is.
        let mut nameless = serde_json::json!({"description": "pretty json"});
        assert_eq!(edit_tool(&mut nameless, &rule, true), None);
        assert_eq!(nameless, serde_json::json!({"description": "pretty json"}));
        // Names taken by listed tools get the prefix.
        let names = injected_names(&["read_more", "x"]);
        assert_eq!(names.read_more, "budget_read_more");
        assert_eq!(names.query_response, "query_response");
    }

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
