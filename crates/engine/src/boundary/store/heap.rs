//! What a cached response costs in real memory: heap bytes of its texts and trees as glibc
//! malloc counts them, and whether a tree can be read back from its exact text. A leaf: the
//! entry ([`super::entry`]) and the store's bound use it.

use mcp_budget_core::paginate::Document;
use serde_json::Value;

/// The deepest nesting of arrays and objects `serde_json::from_str` accepts (its recursion
/// limit of 128 counts the container being opened).
pub(crate) const MAX_PARSE_DEPTH: usize = 127;

/// Bytes a heap allocation of `n` bytes takes in glibc malloc: an 8-byte header, rounded up
/// to 16, at least 32; none for `n == 0` (Rust does not allocate empty buffers).
pub(crate) fn alloc_bytes(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        (n.saturating_add(8 + 15) & !15).max(32)
    }
}

/// Heap bytes of the texts.
pub(crate) fn texts_heap_bytes(texts: &[String]) -> usize {
    alloc_bytes(std::mem::size_of_val(texts))
        + texts
            .iter()
            .map(|t| alloc_bytes(t.capacity()))
            .sum::<usize>()
}

/// What one walk of the documents finds.
pub(crate) struct Scan {
    pub(crate) heap: usize,
    pub(crate) reloadable: bool,
}

/// An estimate of the heap bytes of `docs` (what dropping them gives back to the allocator):
/// every string, number spelling, array buffer, and map (entries vector and hash index), each
/// with glibc's per-allocation overhead ([`alloc_bytes`]).
#[cfg(test)]
pub(crate) fn docs_heap_bytes(docs: &[Document]) -> usize {
    scan_docs(docs, 1).heap
}

/// An estimate of the heap bytes of one value held outside a document (its nodes only,
/// counted as `scan_docs` counts a document's).
pub(crate) fn value_heap_bytes(v: &Value) -> usize {
    let mut scan = Scan {
        heap: 0,
        reloadable: true,
    };
    scan_value(v, 1, &mut scan);
    scan.heap
}

pub(crate) fn scan_docs(docs: &[Document], precision: u32) -> Scan {
    let mut scan = Scan {
        heap: alloc_bytes(std::mem::size_of_val(docs)),
        reloadable: true,
    };
    for d in docs {
        match d {
            Document::Json(v) => scan_value(v, precision, &mut scan),
            Document::Text(t) => scan.heap += alloc_bytes(t.capacity()),
        }
    }
    scan
}

/// Bytes of one entry of a `serde_json` map (`indexmap::Bucket`: hash, key, value).
const BUCKET_BYTES: usize =
    std::mem::size_of::<usize>() + std::mem::size_of::<String>() + std::mem::size_of::<Value>();

/// The hash index's buckets and the entries' capacity of a map of `len` entries built one
/// insert at a time (as `serde_json` parses one): hashbrown grows to a power of two of
/// buckets (at least 4) holding 7/8 of them (3 of 4, 7 of 8), and `indexmap` keeps the
/// entries vector as large as the index can hold.
fn map_table(len: usize) -> (usize, usize) {
    match len {
        0 => (0, 0),
        1..=3 => (4, 3),
        4..=7 => (8, 7),
        _ => {
            let buckets = len.saturating_mul(8).div_ceil(7).next_power_of_two();
            (buckets, buckets / 8 * 7)
        }
    }
}

/// Heap bytes of a hash index of `buckets` buckets: one `usize` and one control byte each,
/// plus 16 control bytes.
fn index_bytes(buckets: usize) -> usize {
    if buckets == 0 {
        return 0;
    }
    alloc_bytes(buckets * (std::mem::size_of::<usize>() + 1) + 16)
}

/// Adds the heap bytes of `v` to `scan` and clears `reloadable` when `v` cannot be read back
/// from its exact text (see the module docs). Iterative: values of any depth.
fn scan_value(v: &Value, precision: u32, scan: &mut Scan) {
    let mut stack: Vec<(&Value, usize)> = vec![(v, 0)];
    while let Some((v, depth)) = stack.pop() {
        match v {
            Value::Null | Value::Bool(_) => {}
            Value::Number(n) => {
                let s = n.as_str();
                scan.heap += alloc_bytes(s.len());
                if precision == 0 && !canonical_number(s) {
                    scan.reloadable = false;
                }
            }
            Value::String(s) => scan.heap += alloc_bytes(s.capacity()),
            Value::Array(a) => {
                if depth + 1 > MAX_PARSE_DEPTH {
                    scan.reloadable = false;
                }
                scan.heap += alloc_bytes(a.capacity() * std::mem::size_of::<Value>());
                stack.extend(a.iter().map(|e| (e, depth + 1)));
            }
            Value::Object(m) => {
                if depth + 1 > MAX_PARSE_DEPTH {
                    scan.reloadable = false;
                }
                let (buckets, cap) = map_table(m.len());
                scan.heap += alloc_bytes(cap * BUCKET_BYTES) + index_bytes(buckets);
                for (k, e) in m {
                    scan.heap += alloc_bytes(k.capacity());
                    stack.push((e, depth + 1));
                }
            }
        }
    }
}

/// Whether `number` is spelled the way `serde_json`'s parser stores it: an exponent is a
/// lowercase `e` followed by a sign.
fn canonical_number(number: &str) -> bool {
    let b = number.as_bytes();
    !b.iter()
        .enumerate()
        .any(|(i, &c)| c == b'E' || (c == b'e' && !matches!(b.get(i + 1), Some(b'+') | Some(b'-'))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn max_parse_depth_is_serde_json_s() {
        assert!(serde_json::from_str::<Value>(&nested(MAX_PARSE_DEPTH)).is_ok());
        assert!(serde_json::from_str::<Value>(&nested(MAX_PARSE_DEPTH + 1)).is_err());
    }

    #[test]
    fn reloadable_unless_too_deep_or_respelled_at_precision_0() {
        let ok: Value = serde_json::from_str(&nested(MAX_PARSE_DEPTH)).unwrap();
        assert!(scan_docs(&[Document::Json(ok.clone())], 9).reloadable);
        let deep = Value::Array(vec![ok]);
        assert!(!scan_docs(&[Document::Json(deep)], 9).reloadable);
        // Numbers made in code are spelled as the parser stores them.
        assert_eq!(Value::from(1e300).to_string(), "1e+300");
        assert!(
            canonical_number("1e+300") && canonical_number("-2.5e-7") && canonical_number("12")
        );
        assert!(!canonical_number("1e300") && !canonical_number("1E+3"));
        let parsed: Value = serde_json::from_str("[2E3, 1e400, -0.0, 1.50, 1e-7]").unwrap();
        assert!(scan_docs(&[Document::Json(parsed)], 0).reloadable);
    }

    #[test]
    fn heap_estimate_counts_every_allocation() {
        assert_eq!(alloc_bytes(0), 0);
        assert_eq!(alloc_bytes(1), 32);
        assert_eq!(alloc_bytes(24), 32);
        assert_eq!(alloc_bytes(25), 48);
        let text = Document::Text("x".repeat(1000));
        assert_eq!(
            docs_heap_bytes(std::slice::from_ref(&text)),
            alloc_bytes(std::mem::size_of::<Document>()) + alloc_bytes(1000)
        );
        // An array of n small objects costs far more than its text.
        let rows: Vec<Value> = (0..1000)
            .map(|i| json!({"id": i, "name": format!("r{i}")}))
            .collect();
        let v = Value::Array(rows);
        let compact = serde_json::to_string(&v).unwrap().len();
        let heap = docs_heap_bytes(&[Document::Json(v)]);
        assert!(heap > 5 * compact, "{heap} vs {compact}");
    }
}
