//! Tool definitions within a budget: what a `tools/list` entry costs the model, and how to
//! make it cost less without changing which arguments are valid.
//!
//! **Model-visible definition tokens** of a tool are the tokens of the compact JSON object
//! `{"name":…,"description":…,"inputSchema":…}` (what clients put before the model);
//! `title`, `outputSchema`, `annotations`, `icons` and `_meta` are for the client and are
//! neither counted nor ever changed here.
//!
//! [`compact_tool`] applies, in order ([`Options`]):
//! 1. descriptions (the tool's and every one in `inputSchema`) with whitespace runs made
//!    one space ([`text::collapse_whitespace`]), when `compact_schemas`;
//! 2. `description_max_tokens`: the tool's description cut at a sentence boundary, ending
//!    `…` ([`text::cut`]); `property_description_max_tokens`: the same for every
//!    `description` inside `inputSchema`;
//! 3. `compact_schemas`: the annotations of [`schema::drop_annotations`] removed (`$schema`
//!    when safe, `examples`, `$comment`, titles repeating the property or tool name, empty
//!    `required`), then repeated sub-schemas moved to `$defs` where that is fewer tokens
//!    ([`schema::dedupe`]);
//! 4. `fold_property_descriptions`: the descriptions of the top-level properties moved out of
//!    the schema into one line appended to the tool's description (`Args: path: …; tail: …`)
//!    when that makes the definition fewer tokens (descriptions never affect validity).
//!
//! Only annotations change (2020-12 Validation §9): every argument object valid before is
//! valid after, and every invalid one stays invalid (checked against the recorded lists of
//! four real servers with the `jsonschema` crate in the proxy's tests).

pub mod glob;
pub mod schema;
pub mod search;
pub mod text;

use serde_json::{Map, Value, json};

use crate::compact;
use crate::tokens::Encoding;

/// What [`compact_tool`] does. The default does nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Most tokens of a tool's description (ellipsis included); `None`: no cap.
    pub description_max_tokens: Option<usize>,
    /// Most tokens of each `description` inside `inputSchema`; `None`: no cap.
    pub property_description_max_tokens: Option<usize>,
    /// Collapse whitespace, drop annotations that repeat names, dedupe sub-schemas.
    pub compact_schemas: bool,
    /// Move top-level property descriptions into the tool's description where shorter.
    pub fold_property_descriptions: bool,
}

/// The two tools of deferred mode (`[tools_list] mode = "defer"` in the proxy), listed under
/// `find_tools` and `call_tool` (their names after any renaming for a clash):
/// `find_tools {query}` searches the deferred tools ([`search`]) and returns the matching
/// definitions; `call_tool {name, arguments}` calls one of them.
pub fn deferred_definitions(find_tools: &str, call_tool: &str) -> [Value; 2] {
    [
        json!({
            "name": find_tools,
            "description": format!("Search the available tools by name and description; returns the matching definitions, to call with {call_tool}."),
            "inputSchema": {"type": "object", "properties": {"query": {"type": "string", "description": "words to match"}}, "required": ["query"]},
            "annotations": {"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
        }),
        json!({
            "name": call_tool,
            "description": format!("Call a tool that {find_tools} returned."),
            "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}}, "required": ["name"]}
        }),
    ]
}

/// The compact JSON of what the model reads of `tool`: `{"name","description","inputSchema"}`
/// (members absent from the tool are absent here).
pub fn model_view(tool: &Value) -> String {
    let mut m = Map::new();
    for k in ["name", "description", "inputSchema"] {
        if let Some(v) = tool.get(k) {
            m.insert(k.to_owned(), v.clone());
        }
    }
    compact::to_string(&Value::Object(m), 0)
}

/// Model-visible definition tokens of `tool` (see the module docs) in `encoding`.
pub fn definition_tokens(tool: &Value, encoding: &Encoding) -> usize {
    encoding.count(&model_view(tool))
}

/// `tool` (one element of a `tools/list` result's `tools`) compacted by `options`; members
/// other than `description` and `inputSchema` are copied unchanged. A tool that is not an
/// object comes back as it is.
pub fn compact_tool(tool: &Value, options: &Options, encoding: &Encoding) -> Value {
    let Some(obj) = tool.as_object() else {
        return tool.clone();
    };
    let mut out = obj.clone();
    let name = obj.get("name").and_then(Value::as_str).unwrap_or("");
    if let Some(Value::String(d)) = out.get_mut("description") {
        let mut s = if options.compact_schemas {
            text::collapse_whitespace(d).into_owned()
        } else {
            d.clone()
        };
        if let Some(max) = options.description_max_tokens {
            s = text::cut(&s, max, encoding).into_owned();
        }
        *d = s;
    }
    if let Some(schema) = out.get_mut("inputSchema")
        && schema.is_object()
    {
        schema::visit_mut(schema, &mut |map, _| {
            if let Some(Value::String(d)) = map.get_mut("description") {
                let mut s = if options.compact_schemas {
                    text::collapse_whitespace(d).into_owned()
                } else {
                    d.clone()
                };
                if let Some(max) = options.property_description_max_tokens {
                    s = text::cut(&s, max, encoding).into_owned();
                }
                *d = s;
            }
        });
        if options.compact_schemas {
            schema::drop_annotations(schema, name);
            *schema = schema::dedupe(std::mem::take(schema), encoding);
        }
    }
    let out = Value::Object(out);
    if options.fold_property_descriptions {
        let folded = fold(&out);
        if let Some(f) = folded
            && definition_tokens(&f, encoding) < definition_tokens(&out, encoding)
        {
            return f;
        }
    }
    out
}

/// `tool` with the string descriptions of its top-level `inputSchema.properties` moved into
/// one line of its description; `None` when no property has one.
fn fold(tool: &Value) -> Option<Value> {
    let mut t = tool.clone();
    let props = t
        .get_mut("inputSchema")
        .and_then(|s| s.get_mut("properties"))
        .and_then(Value::as_object_mut)?;
    let mut parts = Vec::new();
    for (name, p) in props.iter_mut() {
        if let Some(Value::String(d)) = p
            .as_object_mut()
            .and_then(|m| m.shift_remove("description"))
        {
            parts.push(format!("{name}: {d}"));
        }
    }
    if parts.is_empty() {
        return None;
    }
    let line = format!("Args: {}", parts.join("; "));
    let desc = match t.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d}\n{line}"),
        _ => line,
    };
    t.as_object_mut()?.insert("description".into(), json!(desc));
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_members_stay_and_caps_apply() {
        let tool = json!({
            "name": "read_text_file",
            "title": "Read Text File",
            "description": "Read the complete contents of a file. Handles various encodings and gives detailed errors. Only works within allowed directories.",
            "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                "properties": {"path": {"type": "string"}, "tail": {"description": "If provided, returns only the last N lines of the file", "type": "number"}},
                "required": ["path"]},
            "outputSchema": {"type": "object", "properties": {"content": {"type": "string", "title": "Content"}}},
            "annotations": {"readOnlyHint": true}
        });
        let enc = Encoding::Cl100kBase;
        let options = Options {
            description_max_tokens: Some(10),
            property_description_max_tokens: Some(6),
            compact_schemas: true,
            fold_property_descriptions: false,
        };
        let c = compact_tool(&tool, &options, &enc);
        assert_eq!(c["title"], tool["title"]);
        assert_eq!(c["outputSchema"], tool["outputSchema"]);
        assert_eq!(c["annotations"], tool["annotations"]);
        assert_eq!(c["description"], "Read the complete contents of a file…");
        assert!(c["inputSchema"].get("$schema").is_none());
        let tail = c["inputSchema"]["properties"]["tail"]["description"]
            .as_str()
            .unwrap();
        assert!(enc.count(tail) <= 6 && tail.ends_with('…'), "{tail}");
        assert!(definition_tokens(&c, &enc) < definition_tokens(&tool, &enc));
        assert_eq!(compact_tool(&tool, &Options::default(), &enc), tool);
    }

    #[test]
    fn folding_moves_descriptions_into_one_line() {
        let tool = json!({"name": "add", "description": "Adds two numbers.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number", "description": "First number"}, "b": {"type": "number", "description": "Second number"}}}});
        let f = fold(&tool).unwrap();
        assert_eq!(
            f["description"],
            "Adds two numbers.\nArgs: a: First number; b: Second number"
        );
        assert_eq!(
            f["inputSchema"]["properties"]["a"],
            json!({"type": "number"})
        );
    }
}
