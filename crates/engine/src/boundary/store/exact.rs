//! The exact text of a cached document: what a tree dropped from memory (or a copy sent to
//! another replica) is read back from, and the keyed hash that tells two responses' texts
//! apart. A leaf of the store.

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use mcp_budget_core::paginate::Document;

/// The exact text of a document: compact JSON with every number as spelled, or the text.
pub(crate) fn exact_text(doc: &Document) -> String {
    match doc {
        Document::Json(v) => mcp_budget_core::compact::to_string(v, 0),
        Document::Text(t) => t.clone(),
    }
}

pub(crate) fn exact_text_owned(doc: Document) -> String {
    match doc {
        Document::Json(v) => mcp_budget_core::compact::to_string(&v, 0),
        Document::Text(t) => t,
    }
}

/// A keyed hash of `texts` (the key is random, drawn once per process).
pub(crate) fn fingerprint(texts: &[String]) -> u64 {
    static KEY: OnceLock<std::collections::hash_map::RandomState> = OnceLock::new();
    let mut h = KEY
        .get_or_init(std::collections::hash_map::RandomState::new)
        .build_hasher();
    for t in texts {
        h.write_usize(t.len());
        h.write(t.as_bytes());
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The exact text parses back to an equal tree whose renderings (any precision) are the
    /// same bytes: what makes a reloaded tree page like the original.
    #[test]
    fn exact_text_round_trips() {
        let text = r#"{"b":[1,2.50,-0.0,3E5,1e400,1e-400,12345678901234567890,2.2250738585072014e-309],
            "a":{"z":"é\u0000\"\\","y":[],"x":{}},"c":"🎉 \ud83c\udf89","b2":0.30000000000000004}"#;
        let v: Value = serde_json::from_str(text).unwrap();
        let exact = exact_text(&Document::Json(v.clone()));
        let back: Value = serde_json::from_str(&exact).unwrap();
        assert_eq!(back, v);
        for p in [0, 1, 6, 9, 15, 17] {
            assert_eq!(
                mcp_budget_core::compact::to_string(&back, p),
                mcp_budget_core::compact::to_string(&v, p),
                "precision {p}"
            );
        }
        let keys: Vec<&String> = back.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["b", "a", "c", "b2"]);
    }
}
