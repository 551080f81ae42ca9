//! The encoder: JSON value → table form (grammar in the [module docs](super)).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::model::{Encoded, INDENT, MAX_DEPTH, TABLE_DEPTH, When};

/// The text written and how many arrays became tables.
pub(super) struct Writer<'a> {
    pub(super) when: When<'a>,
    pub(super) out: String,
    pub(super) tables: usize,
}

impl Writer<'_> {
    /// Writes `v` in JSON context at nesting `depth`.
    pub(super) fn json(&mut self, v: &Value, depth: usize) {
        match v {
            Value::Array(a) if depth < TABLE_DEPTH && has_array_of_objects(v) => {
                if let Some(keys) = header(a) {
                    let mut sub = Writer {
                        when: When::Always,
                        out: String::new(),
                        tables: 0,
                    };
                    sub.header(a.len(), &keys);
                    sub.out.push('\n');
                    sub.rows(a, &keys, 0, depth);
                    if self.worth_it(v, &sub.out) {
                        self.out.push_str(&sub.out);
                        self.tables += sub.tables + 1;
                        return;
                    }
                }
                self.out.push('[');
                for (i, e) in a.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.json(e, depth + 1);
                }
                self.out.push(']');
            }
            Value::Object(o) if depth < TABLE_DEPTH && has_array_of_objects(v) => {
                self.out.push('{');
                for (i, (k, e)) in o.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    push_quoted(k, &mut self.out);
                    self.out.push(':');
                    self.json(e, depth + 1);
                }
                self.out.push('}');
            }
            other => self.out.push_str(&plain(other)),
        }
    }

    /// Whether the table text `table` of `v` saves enough (see [`When`]).
    fn worth_it(&self, v: &Value, table: &str) -> bool {
        match self.when {
            When::Always => true,
            When::Saves { encoding, percent } => {
                let plain = encoding.count(&plain(v));
                let limit = plain.saturating_mul(100 - percent.min(100) as usize) / 100;
                encoding.count_till_limit(table, limit).is_some()
            }
        }
    }

    /// `[N]{k1,…,kM}:` (no newline).
    fn header(&mut self, n: usize, keys: &[&str]) {
        self.out.push('[');
        self.out.push_str(&n.to_string());
        self.out.push_str("]{");
        for (i, k) in keys.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            if bare_key(k) {
                self.out.push_str(k);
            } else {
                push_quoted(k, &mut self.out);
            }
        }
        self.out.push_str("}:");
    }

    /// The rows of a table at `level` (indented `level` × [`INDENT`]), each followed by the
    /// rows of its sub-tables in column order.
    fn rows(&mut self, a: &[Value], keys: &[&str], level: usize, depth: usize) {
        for e in a {
            let Value::Object(o) = e else { continue };
            for _ in 0..level * INDENT {
                self.out.push(' ');
            }
            let last = keys.iter().rposition(|k| o.contains_key(*k));
            let mut subs: Vec<(&[Value], Vec<&str>)> = Vec::new();
            for (i, k) in keys.iter().enumerate().take(last.map_or(0, |l| l + 1)) {
                if i > 0 {
                    self.out.push(',');
                }
                match o.get(*k) {
                    None => {}
                    Some(Value::String(s)) if bare_cell(s) => self.out.push_str(s),
                    Some(Value::Array(sub)) if depth + 2 < TABLE_DEPTH => match header(sub) {
                        Some(sub_keys) => {
                            self.header(sub.len(), &sub_keys);
                            self.tables += 1;
                            subs.push((sub, sub_keys));
                        }
                        None => self.out.push_str(&plain(&o[*k])),
                    },
                    Some(v) => self.out.push_str(&plain(v)),
                }
            }
            self.out.push('\n');
            for (sub, sub_keys) in subs {
                self.rows(sub, &sub_keys, level + 1, depth + 2);
            }
        }
    }
}

/// Whether some array of objects is inside `v` (else `v` is written as plain compact JSON).
fn has_array_of_objects(v: &Value) -> bool {
    match v {
        Value::Array(a) => {
            a.first().is_some_and(Value::is_object) || a.iter().any(has_array_of_objects)
        }
        Value::Object(o) => o.values().any(has_array_of_objects),
        _ => false,
    }
}

/// The header keys of `a` when it can be a table, else `None`.
///
/// A table: at least one element, every element an object, at least one key, the keys of
/// every row in header order (each row's keys are a subsequence of the header, which is built
/// by inserting a row's new keys just before the next header key the row has, or at the
/// end), and at least
/// half of the cells present.
pub(super) fn header(a: &[Value]) -> Option<Vec<&str>> {
    if a.is_empty() {
        return None;
    }
    let mut keys: Vec<&str> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    let mut present = 0usize;
    for e in a {
        let o: &Map<String, Value> = e.as_object()?;
        present += o.len();
        // New keys wait for the row's next known key and go just before it (or at the end).
        let mut cursor = 0usize;
        let mut new: Vec<&str> = Vec::new();
        for k in o.keys() {
            match at.get(k.as_str()) {
                Some(&p) if p >= cursor => {
                    cursor = p + 1 + new.len();
                    if !new.is_empty() {
                        keys.splice(p..p, new.drain(..));
                        at = keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
                    }
                }
                Some(_) => return None,
                None => new.push(k),
            }
        }
        if !new.is_empty() {
            keys.append(&mut new);
            at = keys.iter().enumerate().map(|(i, k)| (*k, i)).collect();
        }
    }
    let cells = keys.len().checked_mul(a.len())?;
    (!keys.is_empty() && present.saturating_mul(2) >= cells).then_some(keys)
}

/// Whether a header key can be written bare: non-empty, no leading or trailing whitespace,
/// none of `,{}[]:"\` and no control character.
pub(super) fn bare_key(k: &str) -> bool {
    !k.is_empty()
        && !k.starts_with(char::is_whitespace)
        && !k.ends_with(char::is_whitespace)
        && !k
            .chars()
            .any(|c| matches!(c, ',' | '{' | '}' | '[' | ']' | ':' | '"' | '\\') || c.is_control())
}

/// Whether a string cell can be written bare: non-empty, no leading or trailing whitespace,
/// not starting with a digit, `-`, `[`, `{` or `"`, not one of `true` `false` `null` `NaN`
/// `Infinity`, and none of `,"\` nor any control character.
pub(super) fn bare_cell(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    !(first.is_whitespace()
        || s.ends_with(char::is_whitespace)
        || first.is_ascii_digit()
        || matches!(first, '-' | '[' | '{' | '"')
        || matches!(s, "true" | "false" | "null" | "NaN" | "Infinity")
        || s.chars()
            .any(|c| matches!(c, ',' | '"' | '\\') || c.is_control()))
}

/// `s` as a JSON string (serde_json's escaping).
fn push_quoted(s: &str, out: &mut String) {
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// The nesting depth of `v` (a scalar is 0), stopping at `cap`.
pub(super) fn depth_upto(v: &Value, cap: usize) -> usize {
    if cap == 0 {
        return 0;
    }
    match v {
        Value::Array(a) => 1 + a.iter().map(|e| depth_upto(e, cap - 1)).max().unwrap_or(0),
        Value::Object(o) => {
            1 + o
                .values()
                .map(|e| depth_upto(e, cap - 1))
                .max()
                .unwrap_or(0)
        }
        _ => 0,
    }
}

/// Whether `v` is too deep to be written with tables (see [`MAX_DEPTH`]).
pub(super) fn too_deep(v: &Value) -> bool {
    depth_upto(v, MAX_DEPTH + 1) > MAX_DEPTH
}

/// The compact JSON of `v`, numbers exactly as spelled (`serde_json`; never fails on a
/// [`Value`]).
pub(super) fn plain(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// `value` in the table form (numbers written as they are held: round them first).
pub fn encode(value: &Value, when: When<'_>) -> Encoded {
    if too_deep(value) {
        return Encoded {
            text: plain(value),
            tables: 0,
        };
    }
    let mut w = Writer {
        when,
        out: String::new(),
        tables: 0,
    };
    w.json(value, 0);
    Encoded {
        text: w.out,
        tables: w.tables,
    }
}
