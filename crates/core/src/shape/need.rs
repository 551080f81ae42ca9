//! What a tool's `outputSchema` requires of a structuredContent, so that a page's value is
//! filled with only what it must hold to stay valid ([`super::structured`]).
//!
//! A [`Need`] follows the value down from the schema's root. At an object it says which
//! members the schema requires: the `required` of every subschema that may apply there. At a
//! member or an element it gives the subschemas that apply to it: `properties[k]` (else
//! `additionalProperties`), `prefixItems[i]` or an array `items[i]` (else `items` or
//! `additionalItems`). The subschemas that may apply at a place are the schema there, the
//! branches of its `allOf`, `anyOf` and `oneOf` (all of them: which branch a value matches is
//! not worked out, so a member one branch requires is kept), and the targets of its local
//! `$ref`s (`#`, `#/$defs/name`, any JSON pointer from the schema's root, RFC 6901, percent-
//! decoded).
//!
//! Where it cannot tell, it needs everything below ([`Need::All`], as when the tool's schema
//! is unknown): a `$ref` that is not a local JSON pointer (remote, an anchor), `$dynamicRef`,
//! `$recursiveRef`, and the keywords under which dropping a member can break validity
//! ([`UNSURE`]: `minProperties`, `dependentRequired`, `dependencies`, `dependentSchemas`,
//! `if`/`then`/`else`, `not`, `const`, `enum`) or under which the subschema of a member is
//! not worked out (`patternProperties`); also past [`MAX_SCHEMAS`] subschemas at one place or
//! [`MAX_HOPS`] nested references (cyclic or hostile schemas cost bounded work).
//!
//! Work per step down is `O(MAX_SCHEMAS)`, whatever the schema.

use serde_json::Value;

/// Keywords under which a subschema is not trusted to say what may be left out.
pub const UNSURE: [&str; 11] = [
    "minProperties",
    "dependentRequired",
    "dependencies",
    "dependentSchemas",
    "if",
    "then",
    "else",
    "not",
    "const",
    "enum",
    "$dynamicRef",
];

/// Most subschemas followed at one place of the value.
pub const MAX_SCHEMAS: usize = 64;

/// Most `$ref`s and combinators followed one inside the other at one place.
pub const MAX_HOPS: usize = 32;

/// What the schema requires at one place of a value.
#[derive(Debug, Clone)]
pub enum Need<'s> {
    /// Every member is needed, below too (no schema, or one not worked out here).
    All,
    /// The subschemas that may apply here (combinators and references followed), and the
    /// schema's root (what `#` pointers resolve against).
    Schemas {
        /// The outputSchema.
        root: &'s Value,
        /// Object subschemas (boolean ones constrain nothing that filling can break).
        set: Vec<&'s Value>,
    },
}

impl<'s> Need<'s> {
    /// The need at the root of a value of `schema`; [`Need::All`] without one.
    pub fn of(schema: Option<&'s Value>) -> Need<'s> {
        match schema {
            None => Need::All,
            Some(root) => Need::from_seeds(root, [root]),
        }
    }

    /// The need of the subschemas `seeds` (combinators and references followed).
    fn from_seeds(root: &'s Value, seeds: impl IntoIterator<Item = &'s Value>) -> Need<'s> {
        let mut set = Vec::new();
        for s in seeds {
            if !flatten(root, s, &mut set, 0) {
                return Need::All;
            }
        }
        Need::Schemas { root, set }
    }

    /// Whether the member `key` of an object here must be kept.
    pub fn requires(&self, key: &str) -> bool {
        match self {
            Need::All => true,
            Need::Schemas { set, .. } => set.iter().any(|s| {
                s.get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key)))
            }),
        }
    }

    /// The need of the member `key` of an object here.
    pub fn member(&self, key: &str) -> Need<'s> {
        let Need::Schemas { root, set } = self else {
            return Need::All;
        };
        let mut seeds = Vec::new();
        for s in set {
            if s.get("patternProperties").is_some() {
                return Need::All;
            }
            match s.get("properties").and_then(|p| p.get(key)) {
                Some(p) => seeds.push(p),
                None => seeds.extend(s.get("additionalProperties")),
            }
        }
        Need::from_seeds(root, seeds)
    }

    /// The need of element `i` of an array here.
    pub fn element(&self, i: usize) -> Need<'s> {
        let Need::Schemas { root, set } = self else {
            return Need::All;
        };
        let mut seeds = Vec::new();
        for s in set {
            // 2020-12: `prefixItems` then `items`; earlier drafts: an `items` array then
            // `additionalItems`, or one `items` schema for every element.
            let tuple = s
                .get("prefixItems")
                .and_then(Value::as_array)
                .map(|p| (p, s.get("items")))
                .or_else(|| {
                    s.get("items")
                        .and_then(Value::as_array)
                        .map(|p| (p, s.get("additionalItems")))
                });
            match tuple {
                Some((prefix, rest)) => match prefix.get(i) {
                    Some(p) => seeds.push(p),
                    None => seeds.extend(rest),
                },
                None => seeds.extend(s.get("items")),
            }
        }
        Need::from_seeds(root, seeds)
    }
}

/// Adds `s` and the subschemas it brings in at the same place (`allOf`/`anyOf`/`oneOf`
/// branches, local `$ref` targets) to `out`; `false` when the place is not worked out
/// (see the module docs).
fn flatten<'s>(root: &'s Value, s: &'s Value, out: &mut Vec<&'s Value>, hops: usize) -> bool {
    let Value::Object(o) = s else {
        // `true`, `false` (nothing is valid: nothing to keep), or not a schema.
        return true;
    };
    if out.len() >= MAX_SCHEMAS || hops > MAX_HOPS {
        return false;
    }
    if UNSURE.iter().any(|k| o.contains_key(*k)) || o.contains_key("$recursiveRef") {
        return false;
    }
    out.push(s);
    if let Some(r) = o.get("$ref") {
        match r.as_str().and_then(|r| resolve(root, r)) {
            Some(target) => {
                if !flatten(root, target, out, hops + 1) {
                    return false;
                }
            }
            None => return false,
        }
    }
    for kw in ["allOf", "anyOf", "oneOf"] {
        if let Some(branches) = o.get(kw).and_then(Value::as_array) {
            for b in branches {
                if !flatten(root, b, out, hops + 1) {
                    return false;
                }
            }
        }
    }
    true
}

/// The subschema a local `$ref` names: `#` or `#<JSON pointer>` (RFC 6901), percent-decoded
/// (RFC 3986: a fragment is percent-encoded). `None` for anything else.
fn resolve<'s>(root: &'s Value, r: &str) -> Option<&'s Value> {
    let fragment = r.strip_prefix('#')?;
    let pointer = percent_decode(fragment)?;
    if !pointer.is_empty() && !pointer.starts_with('/') {
        // A plain-name fragment (an `$anchor`).
        return None;
    }
    root.pointer(&pointer)
}

/// `s` with its `%XX` escapes decoded; `None` when one is malformed or the bytes are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn required_members_come_from_every_subschema_that_may_apply() {
        let schema = json!({
            "type": "object",
            "required": ["id"],
            "properties": {
                "id": {"type": "integer"},
                "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
                "meta": {"type": "object", "properties": {"a": {"type": "string"}}}
            },
            "allOf": [{"required": ["items"]}],
            "$defs": {"item": {"anyOf": [{"required": ["name"]}, {"required": ["size"]}]}}
        });
        let need = Need::of(Some(&schema));
        assert!(need.requires("id") && need.requires("items"));
        assert!(!need.requires("meta"));
        let item = need.member("items").element(3);
        assert!(item.requires("name") && item.requires("size"));
        assert!(!item.requires("other"));
        assert!(!need.member("meta").requires("a"));
        // No schema: everything.
        assert!(Need::of(None).requires("anything"));
        assert!(Need::of(None).member("x").element(0).requires("y"));
    }

    #[test]
    fn unsure_places_need_everything() {
        for schema in [
            json!({"properties": {"a": {"minProperties": 1}}}),
            json!({"properties": {"a": {"$ref": "https://example.com/s.json"}}}),
            json!({"properties": {"a": {"$ref": "#anchor"}}}),
            json!({"properties": {"a": {"if": {}, "then": {"required": ["x"]}}}}),
            json!({"properties": {"a": {"enum": [{"x": 1}]}}}),
            json!({"patternProperties": {"^a": {"required": ["x"]}}}),
        ] {
            let need = Need::of(Some(&schema));
            assert!(need.member("a").requires("x"), "{schema}");
        }
    }

    #[test]
    fn cyclic_and_nested_references_cost_bounded_work() {
        // A node that is its own subschema, and a tree defined by reference to the root.
        let cycle = json!({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}});
        assert!(Need::of(Some(&cycle)).requires("x"));
        let tree = json!({
            "type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}}
        });
        let mut need = Need::of(Some(&tree));
        for _ in 0..1000 {
            assert!(need.requires("name") && !need.requires("children"));
            need = need.member("children").element(0);
        }
        // Tuples: 2020-12 `prefixItems`, and a draft-7 `items` array.
        let tuple = json!({"prefixItems": [{"required": ["a"]}], "items": {"required": ["b"]}});
        let need = Need::of(Some(&tuple));
        assert!(need.element(0).requires("a") && !need.element(0).requires("b"));
        assert!(need.element(5).requires("b"));
        let old = json!({"items": [{"required": ["a"]}], "additionalItems": {"required": ["b"]}});
        assert!(Need::of(Some(&old)).element(1).requires("b"));
        // A JSON pointer with escapes.
        let escaped = json!({"$ref": "#/$defs/a~1b%20c", "$defs": {"a/b c": {"required": ["z"]}}});
        assert!(Need::of(Some(&escaped)).requires("z"));
    }
}
