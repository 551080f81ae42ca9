//! A bounded structural summary of any JSON value (issue 2 §4), and the elision envelope of
//! summary-first mode.
//!
//! The summary is the `preview` of the elision envelope: what a model sees instead of a
//! response too big to show. It is deterministic (same value, same summary) and fits a token
//! budget exactly as counted by the chosen [`Encoding`] on its compact JSON.
//!
//! # Shape
//!
//! Every described value is an object. One value (the root, or an object's member):
//!
//! - object: `{"type":"object","keys":N,"fields":{"<key>":<description>,…}}`
//! - array: `{"type":"array","len":N,"items":<description of all elements together>}`
//! - string: `{"type":"string","chars":N,"value":"…"}` (`chars` in Unicode scalar values;
//!   `value` only for strings of at most 40 chars)
//! - number / bool: `{"type":"number","value":12}`, `{"type":"bool","value":true}`
//! - null: `{"type":"null"}`
//!
//! Many values together (the elements of an array, or one member across those elements):
//!
//! - `"type"` when all have one type, else `"types":{"object":3,"null":2}`;
//! - `"present":N` on an object member found in fewer than all the objects (key frequency);
//! - objects: `"fields"` as above, each described across all objects that have it;
//! - arrays: `"len":{"min":a,"max":b,"total":t}` and `"items"`;
//! - strings: `"chars":{"min":a,"max":b}`; `"counts":{"file":700,"directory":300}` for
//!   low-cardinality fields (values of at most 40 chars, some repeated, and at most half as
//!   many distinct values as strings or at most 3; the most frequent first), else
//!   `"distinct":N` (`"65+"` past 64);
//! - numbers: `"min"`, `"max"`, `"mean"` (floats rounded to 6 significant digits);
//! - bools: `"true":N,"false":M`.
//!
//! At the depth limit an object is described by its key names (`"keys":["a","b"]`, or key
//! frequencies `{"a":5,"b":3}` across many objects); `"more_fields":N` counts fields not shown.
//!
//! # Budget
//!
//! Detail is lowered step by step (depth 6 → 0, fewer fields and descriptions, fewer value
//! counts, no scalar values, no statistics) until the compact JSON fits `max_tokens`; the
//! last steps are `{"type":"array","len":N}`, `{"type":"array"}` and `{}`. Each step renders
//! at most a fixed number of descriptions (64 at the richest), siblings before children, so
//! the work is bounded whatever the input. Statistics are collected once, in one pass over at
//! most the first seven levels of the value.
//!
//! ```
//! use mcp_budget_core::{summary, tokens::Encoding};
//!
//! let v = serde_json::json!([{"type": "file"}, {"type": "file"}, {"type": "dir"}]);
//! let s = summary::summarize(&v, &Encoding::Cl100kBase, summary::DEFAULT_SUMMARY_TOKENS);
//! assert_eq!(
//!     s.to_string(),
//!     r#"{"type":"array","len":3,"items":{"type":"object","fields":{"type":{"type":"string","chars":{"min":3,"max":4},"counts":{"file":2,"dir":1}}}}}"#
//! );
//! ```

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Number, Value, json};

use crate::compact;
use crate::tokens::Encoding;
use crate::wire::ElisionEnvelope;

/// The default budget of a summary, in tokens of its compact JSON.
pub const DEFAULT_SUMMARY_TOKENS: usize = 300;

/// Levels below the root whose values are collected (the root is level 0).
const COLLECT_DEPTH: usize = 6;
/// Distinct string values tracked per place before it counts as high-cardinality.
const VALUE_CAP: usize = 64;
/// Longest string (chars) that is shown as a value or counted as a category.
const SHORT_CHARS: usize = 40;
/// Distinct keys tracked (with their own statistics) per place.
const FIELD_CAP: usize = 64;
/// Distinct untracked keys remembered per place, to count them.
const EXTRA_KEY_CAP: usize = 4096;
/// So few distinct values that they are counted even without much repetition.
const SMALL_CATEGORIES: usize = 3;
/// Significant digits of floats shown in a summary.
const SUMMARY_PRECISION: u32 = 6;

/// A deterministic structural summary of `value` whose compact JSON is at most `max_tokens`
/// tokens in `encoding` (see the [module docs](self) for its shape).
///
/// Always valid JSON; when even `{}` does not fit (`max_tokens` below its 1–2 tokens),
/// `{}` is returned anyway. Numbers in the summary have at most 6 significant digits (or are
/// integers of the input); the budget holds for its [`compact::to_string`] at precision 0
/// (= `serde_json::to_string`) and at every precision of 6 or more (both are checked).
pub fn summarize(value: &Value, encoding: &Encoding, max_tokens: usize) -> Value {
    let mut agg = Agg::default();
    agg.add(value, 0);
    for detail in LADDER {
        let summary = agg.render(0, None, detail, &mut detail.nodes.clone());
        if fits_any_precision(&summary, encoding, max_tokens) {
            return summary;
        }
    }
    let kind = kind_of(value);
    let mut minimal = Map::new();
    minimal.insert("type".into(), kind.into());
    match value {
        Value::Array(a) => {
            minimal.insert("len".into(), a.len().into());
        }
        Value::Object(o) => {
            minimal.insert("keys".into(), o.len().into());
        }
        Value::String(s) => {
            minimal.insert("chars".into(), s.chars().count().into());
        }
        _ => {}
    }
    let minimal = Value::Object(minimal);
    if fits_any_precision(&minimal, encoding, max_tokens) {
        return minimal;
    }
    let bare = json!({ "type": kind });
    if encoding.fits(&compact::to_string(&bare, 0), max_tokens) {
        return bare;
    }
    Value::Object(Map::new())
}

/// Whether `v`'s compact text fits `max_tokens` at precision 0 (serde_json's spelling) and at
/// precision 9. Summary numbers have at most 6 significant digits, so every precision of 6 or
/// more prints them as precision 9 does; the two spellings differ only in exponents (`e+76`
/// as serde_json's parser stores it, `e76` as the rounding formatter writes it).
fn fits_any_precision(v: &Value, encoding: &Encoding, max_tokens: usize) -> bool {
    let exact = compact::to_string(v, 0);
    if !encoding.fits(&exact, max_tokens) {
        return false;
    }
    let rounded = compact::to_string(v, crate::DEFAULT_PRECISION);
    rounded == exact || encoding.fits(&rounded, max_tokens)
}

/// The elision envelope for `value` (DESIGN.md, summary-first mode): `preview` is
/// [`summarize`]`(value, encoding, DEFAULT_SUMMARY_TOKENS)`.
///
/// `rendered_bytes` (UTF-8 bytes) and `tokens` (in `encoding`) describe the whole shaped
/// response, as the caller rendered it; `next_cursor` leads to page 1. To make the whole
/// envelope fit a page budget, follow with [`fit_envelope`].
pub fn elision_envelope(
    value: &Value,
    rendered_bytes: u64,
    tokens: u64,
    encoding: &Encoding,
    response_id: &str,
    next_cursor: Option<&str>,
    hint: &str,
) -> ElisionEnvelope {
    ElisionEnvelope {
        elided: true,
        bytes: rendered_bytes,
        tokens,
        preview: summarize(value, encoding, DEFAULT_SUMMARY_TOKENS),
        response_id: response_id.to_owned(),
        next_cursor: next_cursor.map(str::to_owned),
        hint: hint.to_owned(),
    }
}

/// Shrinks `envelope.preview` (re-summarizing `value`) until the envelope's compact JSON is
/// at most `max_tokens` tokens in `encoding`, both as `serde_json::to_string` writes it and as
/// [`compact::to_string`] writes it at any precision of 6 or more; returns whether it fits. When it cannot fit even with the preview `{}`, the preview is left as `{}` and
/// `false` is returned (the caller's other fields are too long for the budget).
pub fn fit_envelope(
    envelope: &mut ElisionEnvelope,
    value: &Value,
    encoding: &Encoding,
    max_tokens: usize,
) -> bool {
    // The larger of the two spellings' counts (see `fits_any_precision`).
    let cost = |e: &ElisionEnvelope| {
        let v = serde_json::to_value(e).unwrap_or_default();
        let exact = compact::to_string(&v, 0);
        let rounded = compact::to_string(&v, crate::DEFAULT_PRECISION);
        let n = encoding.count(&exact);
        if rounded == exact {
            n
        } else {
            n.max(encoding.count(&rounded))
        }
    };
    if cost(envelope) <= max_tokens {
        return true;
    }
    envelope.preview = Value::Object(Map::new());
    let overhead = cost(envelope);
    if overhead > max_tokens {
        return false;
    }
    // BPE counts are not additive: try the remaining room, then less, until the whole fits.
    let mut room = (max_tokens - overhead + 1).min(DEFAULT_SUMMARY_TOKENS);
    while room >= 2 {
        envelope.preview = summarize(value, encoding, room);
        let whole = cost(envelope);
        if whole <= max_tokens {
            return true;
        }
        room = room.saturating_sub((whole - max_tokens).max(1));
    }
    envelope.preview = Value::Object(Map::new());
    true
}

/// How much a rendering shows.
#[derive(Debug, Clone, Copy)]
struct Detail {
    /// Levels below the root described in full; deeper objects show key names only.
    depth: usize,
    /// Fields shown per object (0: only the key count).
    fields: usize,
    /// Value counts shown per low-cardinality string field (0: none).
    values: usize,
    /// Whether single scalars show their value.
    scalars: bool,
    /// Whether numbers show min/max/mean.
    numeric: bool,
    /// Whether strings show their length range.
    chars: bool,
    /// Descriptions (fields and items) rendered at most, siblings before children.
    nodes: usize,
}

const fn detail(
    depth: usize,
    fields: usize,
    values: usize,
    scalars: bool,
    numeric: bool,
    chars: bool,
    nodes: usize,
) -> Detail {
    Detail {
        depth,
        fields,
        values,
        scalars,
        numeric,
        chars,
        nodes,
    }
}

/// From the richest rendering to the poorest; the first that fits is returned.
const LADDER: &[Detail] = &[
    detail(6, 16, 8, true, true, true, 64),
    detail(5, 12, 6, true, true, true, 40),
    detail(4, 10, 5, true, true, true, 28),
    detail(3, 8, 4, false, true, true, 20),
    detail(2, 6, 3, false, true, false, 14),
    detail(1, 8, 3, false, false, false, 10),
    detail(1, 5, 2, false, false, false, 6),
    detail(0, 8, 0, false, false, false, 0),
    detail(0, 3, 0, false, false, false, 0),
    detail(0, 0, 0, false, false, false, 0),
];

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Statistics of every value seen at one place (the root, an object member, array elements).
#[derive(Debug, Default)]
struct Agg {
    nulls: usize,
    bools: [usize; 2],
    numbers: Option<NumStats>,
    strings: Option<StrStats>,
    arrays: Option<ArrStats>,
    objects: Option<ObjStats>,
}

#[derive(Debug)]
struct NumStats {
    count: usize,
    min: (f64, String),
    max: (f64, String),
    sum: f64,
}

#[derive(Debug)]
struct StrStats {
    count: usize,
    min_chars: usize,
    max_chars: usize,
    /// Distinct short values in order of first appearance, with counts (up to VALUE_CAP).
    values: Vec<(String, usize)>,
    index: HashMap<String, usize>,
    /// A value was long, or there were more than VALUE_CAP distinct ones.
    overflow: bool,
}

#[derive(Debug)]
struct ArrStats {
    count: usize,
    min_len: usize,
    max_len: usize,
    total: usize,
    items: Option<Box<Agg>>,
}

#[derive(Debug, Default)]
struct ObjStats {
    count: usize,
    /// Tracked keys in order of first appearance: (key, objects having it, its statistics).
    fields: Vec<(String, usize, Option<Agg>)>,
    index: HashMap<String, usize>,
    /// Distinct keys past FIELD_CAP (remembered up to EXTRA_KEY_CAP).
    extra: HashSet<String>,
    /// The key count of the last object (meaningful when `count == 1`).
    keys: usize,
}

impl Agg {
    fn count(&self) -> usize {
        self.nulls
            + self.bools[0]
            + self.bools[1]
            + self.numbers.as_ref().map_or(0, |n| n.count)
            + self.strings.as_ref().map_or(0, |s| s.count)
            + self.arrays.as_ref().map_or(0, |a| a.count)
            + self.objects.as_ref().map_or(0, |o| o.count)
    }

    /// Adds `v`, seen at `level` below the root; children are collected down to COLLECT_DEPTH.
    fn add(&mut self, v: &Value, level: usize) {
        match v {
            Value::Null => self.nulls += 1,
            Value::Bool(b) => self.bools[usize::from(*b)] += 1,
            Value::Number(n) => self.add_number(n),
            Value::String(s) => self.add_string(s),
            Value::Array(items) => {
                let a = self.arrays.get_or_insert_with(|| ArrStats {
                    count: 0,
                    min_len: usize::MAX,
                    max_len: 0,
                    total: 0,
                    items: None,
                });
                a.count += 1;
                a.min_len = a.min_len.min(items.len());
                a.max_len = a.max_len.max(items.len());
                a.total += items.len();
                if level < COLLECT_DEPTH && !items.is_empty() {
                    let agg = a.items.get_or_insert_with(Box::default);
                    for item in items {
                        agg.add(item, level + 1);
                    }
                }
            }
            Value::Object(map) => {
                let o = self.objects.get_or_insert_with(ObjStats::default);
                o.count += 1;
                o.keys = map.len();
                for (k, child) in map {
                    let slot = match o.index.get(k) {
                        Some(&i) => Some(i),
                        None if o.fields.len() < FIELD_CAP => {
                            o.index.insert(k.clone(), o.fields.len());
                            o.fields.push((k.clone(), 0, None));
                            Some(o.fields.len() - 1)
                        }
                        None => {
                            if o.extra.len() < EXTRA_KEY_CAP && !o.extra.contains(k) {
                                o.extra.insert(k.clone());
                            }
                            None
                        }
                    };
                    if let Some((_, seen, agg)) = slot.and_then(|i| o.fields.get_mut(i)) {
                        *seen += 1;
                        if level < COLLECT_DEPTH {
                            agg.get_or_insert_with(Agg::default).add(child, level + 1);
                        }
                    }
                }
            }
        }
    }

    fn add_number(&mut self, n: &Number) {
        let text = n.to_string();
        let x = n.as_f64().unwrap_or_else(|| text.parse().unwrap_or(0.0));
        let s = self.numbers.get_or_insert_with(|| NumStats {
            count: 0,
            min: (x, text.clone()),
            max: (x, text.clone()),
            sum: 0.0,
        });
        s.count += 1;
        s.sum += x;
        if x < s.min.0 {
            s.min = (x, text.clone());
        }
        if x > s.max.0 {
            s.max = (x, text);
        }
    }

    fn add_string(&mut self, text: &str) {
        let chars = text.chars().count();
        let s = self.strings.get_or_insert_with(|| StrStats {
            count: 0,
            min_chars: usize::MAX,
            max_chars: 0,
            values: Vec::new(),
            index: HashMap::new(),
            overflow: false,
        });
        s.count += 1;
        s.min_chars = s.min_chars.min(chars);
        s.max_chars = s.max_chars.max(chars);
        if s.overflow {
            return;
        }
        if chars > SHORT_CHARS {
            s.overflow = true;
        } else if let Some(&i) = s.index.get(text) {
            if let Some(slot) = s.values.get_mut(i) {
                slot.1 += 1;
            }
        } else if s.values.len() < VALUE_CAP {
            s.index.insert(text.to_owned(), s.values.len());
            s.values.push((text.to_owned(), 1));
        } else {
            s.overflow = true;
        }
    }

    /// The description of this place at `level`; `parent_objects` is the number of objects
    /// this is a member of (for `present`), `None` for the root and array elements.
    ///
    /// `nodes` is what is left of `d.nodes`: a place pays for its fields (or items) before
    /// rendering them, so siblings are described before anyone's children.
    fn render(
        &self,
        level: usize,
        parent_objects: Option<usize>,
        d: &Detail,
        nodes: &mut usize,
    ) -> Value {
        let mut out = Map::new();
        let kinds: Vec<(&str, usize)> = [
            ("object", self.objects.as_ref().map_or(0, |o| o.count)),
            ("array", self.arrays.as_ref().map_or(0, |a| a.count)),
            ("string", self.strings.as_ref().map_or(0, |s| s.count)),
            ("number", self.numbers.as_ref().map_or(0, |n| n.count)),
            ("bool", self.bools[0] + self.bools[1]),
            ("null", self.nulls),
        ]
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .collect();
        match kinds.as_slice() {
            [(kind, _)] => {
                out.insert("type".into(), (*kind).into());
            }
            _ => {
                let types: Map<String, Value> = kinds
                    .iter()
                    .map(|&(k, n)| (k.to_owned(), n.into()))
                    .collect();
                out.insert("types".into(), Value::Object(types));
            }
        }
        if let Some(parent) = parent_objects {
            let present = self.count();
            if present < parent {
                out.insert("present".into(), present.into());
            }
        }
        if let Some(o) = &self.objects {
            o.render(level, d, nodes, &mut out);
        }
        if let Some(a) = &self.arrays {
            a.render(level, d, nodes, &mut out);
        }
        if let Some(s) = &self.strings {
            s.render(d, &mut out);
        }
        if let Some(n) = &self.numbers {
            n.render(d, &mut out);
        }
        let [f, t] = self.bools;
        if t + f == 1 && d.scalars {
            out.insert("value".into(), (t == 1).into());
        } else if t + f > 1 {
            out.insert("true".into(), t.into());
            out.insert("false".into(), f.into());
        }
        Value::Object(out)
    }
}

impl ObjStats {
    fn render(&self, level: usize, d: &Detail, nodes: &mut usize, out: &mut Map<String, Value>) {
        let single = self.count == 1;
        if single {
            out.insert("keys".into(), self.keys.into());
        }
        if d.fields == 0 || self.fields.is_empty() {
            return;
        }
        let shown = self.fields.len().min(d.fields);
        // A single object knows its key count; across many, untracked names were remembered
        // only up to EXTRA_KEY_CAP.
        let more = if single {
            self.keys.saturating_sub(shown)
        } else {
            self.fields.len() - shown + self.extra.len()
        };
        if level < d.depth && *nodes >= shown {
            *nodes -= shown;
            let fields: Map<String, Value> = self.fields[..shown]
                .iter()
                .map(|(k, _, agg)| {
                    let desc = match agg {
                        Some(agg) => agg.render(level + 1, Some(self.count), d, nodes),
                        None => json!({}),
                    };
                    (k.clone(), desc)
                })
                .collect();
            out.insert("fields".into(), Value::Object(fields));
        } else if single {
            let names: Vec<Value> = self.fields[..shown]
                .iter()
                .map(|(k, _, _)| k.as_str().into())
                .collect();
            out.insert("keys".into(), Value::Array(names));
        } else {
            let freq: Map<String, Value> = self.fields[..shown]
                .iter()
                .map(|(k, n, _)| (k.clone(), (*n).into()))
                .collect();
            out.insert("keys".into(), Value::Object(freq));
        }
        if more > 0 {
            out.insert("more_fields".into(), more.into());
        }
    }
}

impl ArrStats {
    fn render(&self, level: usize, d: &Detail, nodes: &mut usize, out: &mut Map<String, Value>) {
        if self.count == 1 {
            out.insert("len".into(), self.total.into());
        } else {
            out.insert(
                "len".into(),
                json!({"min": self.min_len, "max": self.max_len, "total": self.total}),
            );
        }
        if let Some(items) = self
            .items
            .as_ref()
            .filter(|_| level < d.depth && *nodes > 0)
        {
            *nodes -= 1;
            out.insert("items".into(), items.render(level + 1, None, d, nodes));
        }
    }
}

impl StrStats {
    fn render(&self, d: &Detail, out: &mut Map<String, Value>) {
        if self.count == 1 {
            out.insert("chars".into(), self.max_chars.into());
            if let (true, Some((v, _))) = (d.scalars, self.values.first()) {
                out.insert("value".into(), v.as_str().into());
            }
            return;
        }
        if d.chars {
            out.insert(
                "chars".into(),
                json!({"min": self.min_chars, "max": self.max_chars}),
            );
        }
        let distinct = self.values.len();
        let categorical = !self.overflow
            && distinct < self.count
            && (distinct * 2 <= self.count || distinct <= SMALL_CATEGORIES);
        if categorical && d.values > 0 {
            let mut by_count: Vec<&(String, usize)> = self.values.iter().collect();
            // Stable sort: ties keep their order of first appearance.
            by_count.sort_by_key(|&(_, n)| std::cmp::Reverse(*n));
            let counts: Map<String, Value> = by_count
                .iter()
                .take(d.values)
                .map(|(v, n)| (v.clone(), (*n).into()))
                .collect();
            out.insert("counts".into(), Value::Object(counts));
            if distinct > d.values {
                out.insert("distinct".into(), distinct.into());
            }
        } else if self.overflow && self.values.len() >= VALUE_CAP {
            out.insert("distinct".into(), format!("{}+", VALUE_CAP + 1).into());
        } else if !self.overflow {
            out.insert("distinct".into(), distinct.into());
        }
    }
}

impl NumStats {
    fn render(&self, d: &Detail, out: &mut Map<String, Value>) {
        if self.count == 1 {
            if d.scalars {
                out.insert("value".into(), summary_number(&self.min.1));
            }
            return;
        }
        if !d.numeric {
            return;
        }
        out.insert("min".into(), summary_number(&self.min.1));
        out.insert("max".into(), summary_number(&self.max.1));
        let mean = self.sum / self.count as f64;
        if mean.is_finite() {
            out.insert("mean".into(), summary_number(&format!("{mean:e}")));
        }
    }
}

/// A number of the input for a summary: integers as they are, floats rounded to 6 digits.
fn summary_number(text: &str) -> Value {
    let rounded = compact::round_number(text, SUMMARY_PRECISION);
    serde_json::from_str::<Number>(&rounded).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(text: &str) -> String {
        let v: Value = serde_json::from_str(text).expect("JSON");
        compact::to_string(
            &summarize(&v, &Encoding::Cl100kBase, DEFAULT_SUMMARY_TOKENS),
            0,
        )
    }

    #[test]
    fn scalars() {
        assert_eq!(summary("null"), r#"{"type":"null"}"#);
        assert_eq!(summary("12"), r#"{"type":"number","value":12}"#);
        assert_eq!(
            summary("0.30000000000000004"),
            r#"{"type":"number","value":0.3}"#
        );
        assert_eq!(
            summary(r#""héllo""#),
            r#"{"type":"string","chars":5,"value":"héllo"}"#
        );
        assert_eq!(summary("true"), r#"{"type":"bool","value":true}"#);
    }

    #[test]
    fn mixed_array_counts_types() {
        assert_eq!(
            summary(r#"[1,2.5,null,"a"]"#),
            r#"{"type":"array","len":4,"items":{"types":{"string":1,"number":2,"null":1},"chars":1,"value":"a","min":1,"max":2.5,"mean":1.75}}"#
        );
    }
}
