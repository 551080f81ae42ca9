//! Compaction of a tool's `inputSchema` that never changes which arguments are valid.
//!
//! The walk is keyword-aware: it visits only schema positions (JSON Schema 2020-12 §10 and
//! draft-07 §6/§9: `properties`, `patternProperties`, `$defs`/`definitions`,
//! `dependentSchemas` values; `additionalProperties`, `items`, `additionalItems`, `contains`,
//! `propertyNames`, `not`, `if`/`then`/`else`, `unevaluated*`; `allOf`/`anyOf`/`oneOf`/
//! `prefixItems` elements). Values of `enum`, `const`, `default` and unknown keywords are
//! never touched, so a property called `title` or `examples` stays.
//!
//! What is removed (all annotations, which never take part in validation: 2020-12 Validation
//! §9, Core §8.3): `examples`, `$comment`, an empty `description`, a `title` that repeats the
//! property name (`"Repo Path"` for `repo_path`: equal after lower-casing and dropping every
//! char that is not a letter or digit) or, at the root, the tool's name
//! (`statusArguments` for `git_status`), an empty `required` array (requires nothing), and
//! a `default` of `null`, `false`, `""`, `[]` or `{}` (what an omitted optional argument
//! means by convention; `required` already says it may be omitted). Three rewrites keep the set of valid instances: an empty `properties`
//! goes, a `type` beside an `enum` whose values all have it goes, and an `anyOf` of bare
//! `{"type": …}` schemas becomes one `type` array (`anyOf: [{type: string}, {type: null}]`
//! → `type: ["string", "null"]`). `type` is moved after the other members of each schema
//! object (order means nothing in JSON; `],"type":"object"}` is fewer tokens).
//! `$schema` is removed from the root only when it names draft-07, 2019-09 or 2020-12 and
//! every keyword in the schema is one whose meaning is the same in draft-07 and 2020-12
//! ([`SAFE_KEYWORDS`]; no `format`, whose assertion differs between validators of the two
//! drafts): the schema then validates the same under the MCP default dialect (2020-12).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::compact;
use crate::tokens::Encoding;

/// Keywords whose meaning is the same in draft-07 and 2020-12 (`items` only in its
/// single-schema form, `exclusiveMinimum`/`exclusiveMaximum` only as numbers).
pub const SAFE_KEYWORDS: [&str; 40] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "enum",
    "const",
    "description",
    "title",
    "default",
    "examples",
    "$comment",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "anyOf",
    "allOf",
    "oneOf",
    "not",
    "multipleOf",
    "minProperties",
    "maxProperties",
    "propertyNames",
    "contains",
    "if",
    "then",
    "else",
    "readOnly",
    "writeOnly",
    "deprecated",
    "nullable",
    "$schema",
];

/// `$schema` values after which the schema may go without one ([`SAFE_KEYWORDS`] permitting).
const DROPPABLE_DIALECTS: [&str; 3] = [
    "json-schema.org/draft-07/schema",
    "json-schema.org/draft/2019-09/schema",
    "json-schema.org/draft/2020-12/schema",
];

/// Keywords that make `$ref` targets or base URIs matter: a schema holding any of them is
/// never deduplicated (a new `$ref` could resolve against another base).
const REF_KEYWORDS: [&str; 10] = [
    "$ref",
    "$id",
    "id",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$defs",
    "definitions",
];

const MAP_KEYWORDS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
const ONE_KEYWORDS: [&str; 12] = [
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
const LIST_KEYWORDS: [&str; 5] = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];

/// Where a sub-schema sits: under `properties` (with the property's name) or elsewhere.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Place<'a> {
    Root,
    Property(&'a str),
    Other,
}

/// Calls `f` on every schema object of `schema` (the root first, then depth-first), with its
/// [`Place`]. Boolean schemas and non-objects are skipped.
pub(crate) fn visit_mut(schema: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>, Place<'_>)) {
    visit_at(schema, Place::Root, f, 0);
}

/// Deeper schemas are left alone (a bound on recursion over outside input).
const MAX_DEPTH: usize = 64;

fn visit_at(
    schema: &mut Value,
    place: Place<'_>,
    f: &mut dyn FnMut(&mut Map<String, Value>, Place<'_>),
    depth: usize,
) {
    let Value::Object(map) = schema else { return };
    if depth > MAX_DEPTH {
        return;
    }
    f(map, place);
    for (key, value) in map.iter_mut() {
        let k = key.as_str();
        if MAP_KEYWORDS.contains(&k) {
            if let Value::Object(m) = value {
                for (name, sub) in m.iter_mut() {
                    let p = if k == "properties" {
                        Place::Property(name)
                    } else {
                        Place::Other
                    };
                    visit_at(sub, p, f, depth + 1);
                }
            }
        } else if k == "dependencies" {
            if let Value::Object(m) = value {
                for sub in m.values_mut() {
                    visit_at(sub, Place::Other, f, depth + 1);
                }
            }
        } else if LIST_KEYWORDS.contains(&k) && value.is_array() {
            if let Value::Array(a) = value {
                for sub in a {
                    visit_at(sub, Place::Other, f, depth + 1);
                }
            }
        } else if ONE_KEYWORDS.contains(&k) {
            visit_at(value, Place::Other, f, depth + 1);
        }
    }
}

/// Lower-cased letters and digits of `s` (`"Repo Path"` and `repo_path` both give
/// `repopath`).
pub(crate) fn norm(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether a root `title` names the tool: equal to its name after [`norm`], with an optional
/// `arguments`/`args`/`input`/`params`/`request` suffix, or a suffix of the name
/// (`statusArguments`, `diff_unstagedArguments` for `git_status`, `git_diff_unstaged`).
fn names_tool(title: &str, tool: &str) -> bool {
    let t = norm(title);
    let n = norm(tool);
    let stem = ["arguments", "args", "input", "params", "request", "schema"]
        .iter()
        .find_map(|s| t.strip_suffix(s))
        .unwrap_or(&t);
    !stem.is_empty() && n.ends_with(stem)
}

/// Removes the annotations listed in the module docs from `schema` (a tool's `inputSchema`)
/// in place; `tool` is the tool's name. Returns whether `$schema` was removed.
pub fn drop_annotations(schema: &mut Value, tool: &str) -> bool {
    let droppable = dialect_droppable(schema);
    visit_mut(schema, &mut |map, place| {
        map.shift_remove("examples");
        map.shift_remove("$comment");
        if map.get("description").and_then(Value::as_str) == Some("") {
            map.shift_remove("description");
        }
        if map
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            map.shift_remove("required");
        }
        let repeats = match (map.get("title").and_then(Value::as_str), place) {
            (Some(t), Place::Property(name)) => norm(t) == norm(name),
            (Some(t), Place::Root) => names_tool(t, tool),
            _ => false,
        };
        if repeats {
            map.shift_remove("title");
        }
        simplify(map);
        place_type_last(map);
    });
    if droppable && let Some(m) = schema.as_object_mut() {
        m.shift_remove("$schema");
        return true;
    }
    false
}

/// Rewrites of one schema object that keep the set of valid instances (2020-12 Validation
/// §6.1.1, §6.5.4; Core §10.2.1.2): `properties: {}` (constrains nothing) removed; `type`
/// removed beside an `enum` whose values all have that type; `anyOf` of schemas that are only
/// `{"type": …}` turned into one `type` array when the object has no `type` of its own;
/// a trivial `default` removed ([`trivial_default`]: an annotation that says no more than
/// `required` does).
fn simplify(map: &mut Map<String, Value>) {
    if map
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        map.shift_remove("properties");
    }
    if map.get("default").is_some_and(trivial_default) {
        map.shift_remove("default");
    }
    if let (Some(Value::String(t)), Some(Value::Array(values))) = (map.get("type"), map.get("enum"))
        && !values.is_empty()
        && values.iter().all(|v| has_type(v, t))
    {
        map.shift_remove("type");
    }
    if !map.contains_key("type")
        && let Some(Value::Array(alts)) = map.get("anyOf")
        && !alts.is_empty()
    {
        let mut types: Vec<Value> = Vec::new();
        let mut only_types = true;
        for a in alts {
            match a.as_object() {
                Some(o) if o.len() == 1 => match o.get("type") {
                    Some(Value::String(t)) => types.push(Value::String(t.clone())),
                    Some(Value::Array(ts)) if ts.iter().all(Value::is_string) => {
                        types.extend(ts.iter().cloned());
                    }
                    _ => only_types = false,
                },
                _ => only_types = false,
            }
        }
        let mut unique: Vec<Value> = Vec::new();
        for t in types {
            if !unique.contains(&t) {
                unique.push(t);
            }
        }
        // `integer` inside `number` would still be fine, but a type array must not repeat.
        if only_types && !unique.is_empty() {
            map.shift_remove("anyOf");
            let t = if unique.len() == 1 {
                unique.swap_remove(0)
            } else {
                Value::Array(unique)
            };
            map.insert("type".into(), t);
        }
    }
}

/// Moves `type` after the other members of a schema object (member order means nothing in
/// JSON; `…],"type":"object"}` is fewer tokens than `{"type":"object",…`). Returns whether it
/// moved.
fn place_type_last(map: &mut Map<String, Value>) -> bool {
    if map.len() < 2 || map.keys().next_back().is_some_and(|k| k == "type") {
        return false;
    }
    match map.shift_remove("type") {
        Some(t) => {
            map.insert("type".into(), t);
            true
        }
        None => false,
    }
}

/// Whether a `default` says no more than "optional": `null`, `false`, `""`, `[]` or `{}`
/// (what an omitted optional argument means by convention).
fn trivial_default(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

/// Whether `v` is an instance of the JSON Schema type `t` (an integer-valued number is an
/// `integer`).
fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

/// Whether the root `$schema` may go: see the module docs.
pub fn dialect_droppable(schema: &Value) -> bool {
    let Some(dialect) = schema.get("$schema").and_then(Value::as_str) else {
        return false;
    };
    let d = dialect
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_end_matches('#');
    if !DROPPABLE_DIALECTS.contains(&d) {
        return false;
    }
    let mut safe = true;
    let mut probe = schema.clone();
    visit_mut(&mut probe, &mut |map, _| {
        for (k, v) in map.iter() {
            let ok = SAFE_KEYWORDS.contains(&k.as_str())
                && !(k == "items" && v.is_array())
                && (!k.starts_with("exclusiveM") || v.is_number());
            safe &= ok;
        }
    });
    safe
}

/// Whether a schema holds any of [`REF_KEYWORDS`] at a schema position.
fn has_refs(schema: &Value) -> bool {
    let mut found = false;
    let mut probe = schema.clone();
    visit_mut(&mut probe, &mut |map, _| {
        found |= REF_KEYWORDS.iter().any(|k| map.contains_key(*k));
    });
    found
}

/// Replaces sub-schemas that occur more than once by a `$ref` to one copy under `$defs`
/// (`definitions` when the schema keeps a draft-07-or-older `$schema`), named `d0`, `d1`, …,
/// while that makes the compact JSON of the schema fewer tokens of `encoding`. A schema that
/// already uses references or identifiers ([`REF_KEYWORDS`]) is returned unchanged. A
/// reference to an identical copy validates exactly as the copy (2020-12 Core §8.2.3.1).
pub fn dedupe(schema: Value, encoding: &Encoding) -> Value {
    if !schema.is_object() || has_refs(&schema) {
        return schema;
    }
    let old_draft = schema
        .get("$schema")
        .and_then(Value::as_str)
        .is_some_and(|s| s.contains("draft-0"));
    let defs_key = if old_draft { "definitions" } else { "$defs" };
    let mut best = schema;
    let mut best_tokens = encoding.count(&compact::to_string(&best, 0));
    for n in 0..16 {
        let Some(candidate) = most_repeated(&best) else {
            break;
        };
        let name = format!("d{n}");
        let reference = serde_json::json!({"$ref": format!("#/{defs_key}/{name}")});
        let mut next = best.clone();
        replace_all(&mut next, &candidate, &reference, 0);
        if let Some(root) = next.as_object_mut() {
            let defs = root
                .entry(defs_key)
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(d) = defs {
                d.insert(name, candidate);
            }
        }
        let tokens = encoding.count(&compact::to_string(&next, 0));
        if tokens >= best_tokens {
            break;
        }
        best = next;
        best_tokens = tokens;
    }
    best
}

/// The non-root schema object occurring most often (at least twice), weighted by its
/// length; `None` when none repeats.
fn most_repeated(schema: &Value) -> Option<Value> {
    let mut counts: HashMap<String, (usize, Value)> = HashMap::new();
    let mut probe = schema.clone();
    let mut first = true;
    visit_mut(&mut probe, &mut |map, _| {
        if std::mem::take(&mut first) {
            return;
        }
        let v = Value::Object(map.clone());
        let text = compact::to_string(&v, 0);
        counts.entry(text).or_insert((0, v)).0 += 1;
    });
    counts
        .into_iter()
        .filter(|(_, (n, _))| *n >= 2)
        .max_by_key(|(text, (n, _))| ((n - 1) * text.len(), text.clone()))
        .map(|(_, (_, v))| v)
}

/// Replaces every non-root schema position of `schema` equal to `target` by `with`.
fn replace_all(schema: &mut Value, target: &Value, with: &Value, depth: usize) {
    let Value::Object(map) = schema else { return };
    if depth > MAX_DEPTH {
        return;
    }
    let swap = |v: &mut Value| {
        if v == target {
            *v = with.clone();
            true
        } else {
            false
        }
    };
    for (key, value) in map.iter_mut() {
        let k = key.as_str();
        if MAP_KEYWORDS.contains(&k) || k == "dependencies" {
            if let Value::Object(m) = value {
                for sub in m.values_mut() {
                    if !swap(sub) {
                        replace_all(sub, target, with, depth + 1);
                    }
                }
            }
        } else if LIST_KEYWORDS.contains(&k) && value.is_array() {
            if let Value::Array(a) = value {
                for sub in a {
                    if !swap(sub) {
                        replace_all(sub, target, with, depth + 1);
                    }
                }
            }
        } else if ONE_KEYWORDS.contains(&k) && !swap(value) {
            replace_all(value, target, with, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn titles_repeating_names_go_and_others_stay() {
        let mut s = json!({
            "title": "statusArguments", "type": "object",
            "properties": {
                "repo_path": {"title": "Repo Path", "type": "string", "examples": ["/r"]},
                "title": {"title": "Headline", "type": "string", "$comment": "x"},
                "examples": {"type": "array", "default": [{"title": "kept"}]}
            },
            "required": []
        });
        assert!(!drop_annotations(&mut s, "git_status"));
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "repo_path": {"type": "string"},
                    "title": {"title": "Headline", "type": "string"},
                    "examples": {"type": "array", "default": [{"title": "kept"}]}
                }
            })
        );
    }

    #[test]
    fn dialect_goes_only_with_safe_keywords() {
        let base = |extra: Value| {
            let mut s = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                "properties": {"p": extra}});
            drop_annotations(&mut s, "t")
        };
        assert!(base(json!({"type": "number", "minimum": 1})));
        assert!(!base(json!({"type": "string", "format": "uri"})));
        assert!(!base(
            json!({"type": "string", "contentEncoding": "base64"})
        ));
        assert!(!base(
            json!({"type": "array", "items": [{"type": "string"}]})
        ));
        assert!(!base(json!({"$ref": "#/definitions/x"})));
        let mut s = json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"});
        assert!(!drop_annotations(&mut s, "t"));
    }

    #[test]
    fn repeated_subschemas_become_refs_when_shorter() {
        let item = json!({"type": "object", "properties": {"from": {"type": "string", "description": "where the relation starts"}, "to": {"type": "string", "description": "where the relation ends"}}, "required": ["from", "to"]});
        let s = json!({"type": "object", "properties": {
            "a": {"type": "array", "items": item},
            "b": {"type": "array", "items": item}
        }});
        let enc = Encoding::Cl100kBase;
        let d = dedupe(s.clone(), &enc);
        // The largest repeat wins: the whole array schema.
        assert_eq!(d["$defs"]["d0"], json!({"type": "array", "items": item}));
        assert_eq!(d["properties"]["a"], json!({"$ref": "#/$defs/d0"}));
        assert_eq!(d["properties"]["b"], json!({"$ref": "#/$defs/d0"}));
        assert!(enc.count(&compact::to_string(&d, 0)) < enc.count(&compact::to_string(&s, 0)));
        // Small repeats stay.
        let small = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}});
        assert_eq!(dedupe(small.clone(), &enc), small);
    }
}
