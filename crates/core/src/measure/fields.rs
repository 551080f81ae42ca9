//! Section 3: which key paths cost most, from a single pass over the value.
//!
//! **Attribution rule.** The compact JSON text of a value is cut into *leaf texts*, each
//! counted once, on its own, and attributed to one key path:
//! - an object member whose value is a scalar or an empty container: `"key":value`
//!   (e.g. `"guid":"3f2b…"`), to the member's path `$.entities[*].guid`;
//! - an object member whose value is a non-empty container: its `"key":` alone, to the
//!   member's path (what the key name itself costs); the value's contents are attributed below;
//! - an array element that is a scalar or an empty container: its text, to `…[*]`;
//! - a scalar root: its text, to `$`.
//!
//! Punctuation between members (`{`, `}`, `[`, `]`, `,`) belongs to no path. Shares are of the
//! sum over all leaf texts (so they add up to 100% across all paths), for chars and tokens
//! alike. BPE counts are not additive, so the sum of leaf tokens differs from the tokens of the
//! whole text (usually by a few percent); it ranks fields, it is not a document count.
//!
//! Leaf texts repeat a lot (`"type":"file"`), so counts are cached per distinct leaf text: the
//! document is never tokenized once per path.

use std::collections::HashMap;

use serde_json::Value;

use super::count::Counter;
use super::report::{FieldRow, FieldShare, pct};

#[derive(Default)]
struct Acc {
    count: usize,
    chars: usize,
    tokens: Vec<usize>,
}

struct Walker<'c, 'e> {
    counter: &'c Counter<'e>,
    paths: HashMap<String, Acc>,
    cache: HashMap<String, Vec<usize>>,
    path: String,
}

/// The field share of `values` (each walked from `$`, their paths merged), keeping the top
/// `top` paths by tokens of the first encoding. `None` when `values` is empty.
pub(crate) fn field_share(
    counter: &Counter<'_>,
    values: &[&Value],
    part: &str,
    top: usize,
) -> Option<FieldShare> {
    if values.is_empty() {
        return None;
    }
    let mut w = Walker {
        counter,
        paths: HashMap::new(),
        cache: HashMap::new(),
        path: String::from("$"),
    };
    for v in values {
        if is_leaf(v) {
            w.leaf(scalar_text(v));
        } else {
            w.visit(v);
        }
    }
    let n_enc = counter.len();
    let total_chars: usize = w.paths.values().map(|a| a.chars).sum();
    let mut total_tokens = vec![0usize; n_enc];
    for a in w.paths.values() {
        for (t, x) in total_tokens.iter_mut().zip(&a.tokens) {
            *t += x;
        }
    }
    let paths = w.paths.len();
    let mut rows: Vec<(String, Acc)> = w.paths.into_iter().collect();
    rows.sort_by(|(pa, a), (pb, b)| {
        let ta = a.tokens.first().copied().unwrap_or(0);
        let tb = b.tokens.first().copied().unwrap_or(0);
        tb.cmp(&ta).then_with(|| pa.cmp(pb))
    });
    rows.truncate(top);
    let total = counter.wrap(total_tokens);
    let rows = rows
        .into_iter()
        .map(|(path, a)| {
            let tokens = counter.wrap(a.tokens);
            let tokens_pct = tokens.zip(&total, |&t, &all| pct(t as f64, all as f64));
            FieldRow {
                path,
                count: a.count,
                chars: a.chars,
                chars_pct: pct(a.chars as f64, total_chars as f64),
                tokens,
                tokens_pct,
            }
        })
        .collect();
    Some(FieldShare {
        part: part.to_owned(),
        paths,
        total_chars,
        total_tokens: total,
        rows,
    })
}

fn is_leaf(v: &Value) -> bool {
    match v {
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => true,
    }
}

/// Compact text of a scalar or empty container; numbers keep their spelling.
fn scalar_text(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

impl Walker<'_, '_> {
    /// Attributes `text` to the current path.
    fn leaf(&mut self, text: String) {
        let n_enc = self.counter.len();
        let chars = text.chars().count();
        let counts = match self.cache.get(&text) {
            Some(c) => c.clone(),
            None => {
                let c = self.counter.counts(&text);
                self.cache.insert(text, c.clone());
                c
            }
        };
        let acc = match self.paths.get_mut(&self.path) {
            Some(a) => a,
            None => self.paths.entry(self.path.clone()).or_insert_with(|| Acc {
                tokens: vec![0; n_enc],
                ..Acc::default()
            }),
        };
        acc.count += 1;
        acc.chars += chars;
        for (t, c) in acc.tokens.iter_mut().zip(counts) {
            *t += c;
        }
    }

    /// Walks a non-empty container whose path is the current path.
    fn visit(&mut self, v: &Value) {
        let len = self.path.len();
        match v {
            Value::Object(o) => {
                for (k, e) in o {
                    push_key(&mut self.path, k);
                    let mut text = serde_json::to_string(k).unwrap_or_default();
                    text.push(':');
                    if is_leaf(e) {
                        text.push_str(&scalar_text(e));
                        self.leaf(text);
                    } else {
                        self.leaf(text);
                        self.visit(e);
                    }
                    self.path.truncate(len);
                }
            }
            Value::Array(a) => {
                self.path.push_str("[*]");
                for e in a {
                    if is_leaf(e) {
                        self.leaf(scalar_text(e));
                    } else {
                        self.visit(e);
                    }
                }
                self.path.truncate(len);
            }
            _ => {}
        }
    }
}

/// `.key` for identifier-like keys, `["key"]` (JSON-escaped) otherwise.
fn push_key(path: &mut String, key: &str) {
    let ident = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        path.push('.');
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&serde_json::to_string(key).unwrap_or_default());
        path.push(']');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;

    fn share(json: &str) -> FieldShare {
        let v: Value = serde_json::from_str(json).unwrap();
        let encs = [Encoding::Bytes];
        let c = Counter::new(&encs);
        field_share(&c, &[&v], "document", 100).unwrap()
    }

    fn row<'a>(s: &'a FieldShare, path: &str) -> &'a FieldRow {
        s.rows.iter().find(|r| r.path == path).unwrap()
    }

    #[test]
    fn attributes_key_value_leaf_texts_with_indexes_collapsed() {
        let s = share(
            r#"{"entities":[{"guid":"ab","n":1},{"guid":"cd","n":22}],"odd key":[],"t":[1,"x"]}"#,
        );
        // "guid":"ab" is 11 bytes, twice.
        let g = row(&s, "$.entities[*].guid");
        assert_eq!((g.count, g.chars, *g.tokens.first().unwrap()), (2, 22, 22));
        let n = row(&s, "$.entities[*].n");
        assert_eq!((n.count, n.chars), (2, 5 + 6));
        // A container member: its key alone.
        assert_eq!(row(&s, "$.entities").chars, "\"entities\":".len());
        assert_eq!(row(&s, "$[\"odd key\"]").chars, "\"odd key\":[]".len());
        assert_eq!(row(&s, "$.t[*]").chars, 1 + 3);
        assert_eq!(row(&s, "$.t").chars, 4);
        // Shares add up over all paths; rows are sorted by tokens.
        assert_eq!(s.total_chars, 22 + 11 + 11 + 12 + 4 + 4);
        assert_eq!(s.paths, 6);
        assert_eq!(s.rows[0].path, "$.entities[*].guid");
        let sum: f64 = s.rows.iter().map(|r| r.chars_pct).sum();
        assert!((sum - 100.0).abs() < 0.05, "{sum}");
    }

    #[test]
    fn scalar_root_is_one_leaf() {
        let s = share("\"hello\"");
        assert_eq!(s.rows.len(), 1);
        assert_eq!(s.rows[0].path, "$");
        assert_eq!(s.rows[0].chars, 7);
    }
}
