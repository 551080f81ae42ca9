//! How a cached response is written into the shared store, and read back.
//!
//! # The body (written once, never changed)
//!
//! A zstd frame ([`ruzstd`], pure Rust, level "fastest": about zstd's level 1) of:
//!
//! ```text
//! u32 LE  length of the header
//! header  compact JSON: {"v":1,"doc_tokens":[…],"budget":N,"precision":N,"bytes":N,
//!         "json":[bool…],"carriers":[…],"plan":{…}|null,"array_of":N|null,"tables":bool}
//! then, per document: u64 LE length, its exact text (compact JSON with every number as
//!         spelled, or the text itself; see [`super::super::entry`])
//! ```
//!
//! Reading it back parses each JSON document from its exact text, which gives the same tree
//! (key order and number spellings kept), so the pages of a response read back on another
//! replica are the pages the first one would have written. Entries whose tree cannot make that
//! round trip ([`Entry::can_reload`] is false) are not written to the shared store.
//!
//! # The page book (rewritten as pages are computed)
//!
//! Compact JSON `{"p":[[item,"<position>"],…],"o":[ordinal,…],"n":[[page,budget,next],…]}`:
//! where each page computed so far starts (its item and [`Position`] in its display form),
//! each page's ordinal, and the next page of each (page, budget) computed.

use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;

use mcp_budget_core::paginate::{Document, Position};
use serde_json::{Value, json};

use super::super::entry::Entry;
use super::super::exact::exact_text;
use mcp_budget_core::shape::book::PageBook;
use mcp_budget_core::shape::model::Carrier;
use mcp_budget_core::shape::model::SeqPos;
use mcp_budget_core::shape::structured::{Orig, Plan};

/// Version of the body's header; a body of another version is not read.
const VERSION: u64 = 1;

/// Why a stored body or book could not be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CodecError {
    /// Not a zstd frame, or it decodes to more than the limit.
    #[error("the stored response does not decompress (or is larger than allowed)")]
    Frame,
    /// The decompressed bytes are not laid out as written.
    #[error("the stored response is damaged")]
    Damaged,
}

/// The body of `entry` whose documents are `docs`, uncompressed (see the module docs).
pub(crate) fn encode_body(entry: &Entry, docs: &[Document]) -> Vec<u8> {
    let header = json!({
        "v": VERSION,
        "doc_tokens": entry.doc_tokens,
        "total_tokens": entry.total_if_known(),
        "total_tokens_estimate": entry.estimate(),
        "budget": entry.budget,
        "precision": entry.precision,
        "bytes": entry.bytes,
        "json": entry.json_flags(),
        "carriers": entry.carriers.iter().map(carrier_value).collect::<Vec<_>>(),
        "plan": entry.structured.as_ref().map(plan_value),
        "array_of": entry.array_of,
        "tables": entry.tables,
    });
    let header = serde_json::to_vec(&header).unwrap_or_default();
    let texts: Vec<String> = docs.iter().map(exact_text).collect();
    let total = 4 + header.len() + texts.iter().map(|t| 8 + t.len()).sum::<usize>();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(&header);
    for t in &texts {
        out.extend_from_slice(&(t.len() as u64).to_le_bytes());
        out.extend_from_slice(t.as_bytes());
    }
    out
}

/// `raw` in one zstd frame.
pub(crate) fn compress(raw: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(raw, ruzstd::encoding::CompressionLevel::Fastest)
}

/// The bytes of the zstd frame `frame`, at most `limit` of them.
///
/// # Errors
/// [`CodecError::Frame`] when it is not a zstd frame or holds more than `limit` bytes.
pub(crate) fn decompress(frame: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    let mut source = frame;
    let decoder =
        ruzstd::decoding::StreamingDecoder::new(&mut source).map_err(|_| CodecError::Frame)?;
    let mut out = Vec::new();
    decoder
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|_| CodecError::Frame)?;
    if out.len() > limit {
        return Err(CodecError::Frame);
    }
    Ok(out)
}

/// The entry `id` of `principal` read back from its uncompressed body, with `book`.
///
/// # Errors
/// [`CodecError::Damaged`] when the body is not laid out as [`encode_body`] writes it.
pub(crate) fn decode_body(
    raw: &[u8],
    id: &str,
    principal: &str,
    book: PageBook,
) -> Result<Entry, CodecError> {
    let bad = || CodecError::Damaged;
    let (len, rest) = raw.split_first_chunk::<4>().ok_or_else(bad)?;
    let len = u32::from_le_bytes(*len) as usize;
    if rest.len() < len {
        return Err(bad());
    }
    let (header, mut rest) = rest.split_at(len);
    let h: Value = serde_json::from_slice(header).map_err(|_| bad())?;
    if h.get("v").and_then(Value::as_u64) != Some(VERSION) {
        return Err(bad());
    }
    let usize_of = |v: &Value| v.as_u64().and_then(|n| usize::try_from(n).ok());
    let doc_tokens: Vec<usize> = h
        .get("doc_tokens")
        .and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(|v| usize_of(v).ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    let json_flags: Vec<bool> = h
        .get("json")
        .and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(|v| v.as_bool().ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    let budget = h.get("budget").and_then(usize_of).ok_or_else(bad)?;
    let precision = h
        .get("precision")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(bad)?;
    let bytes = h.get("bytes").and_then(usize_of).ok_or_else(bad)?;
    let carriers: Vec<Carrier> = h
        .get("carriers")
        .and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(|v| carrier_of(v).ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    let plan = match h.get("plan") {
        None | Some(Value::Null) => None,
        Some(v) => Some(plan_of(v).ok_or_else(bad)?),
    };
    let array_of = match h.get("array_of") {
        None | Some(Value::Null) => None,
        Some(v) => Some(usize_of(v).ok_or_else(bad)?),
    };
    let mut docs = Vec::with_capacity(json_flags.len());
    for &is_json in &json_flags {
        let (n, tail) = rest.split_first_chunk::<8>().ok_or_else(bad)?;
        let n = usize::try_from(u64::from_le_bytes(*n)).map_err(|_| bad())?;
        if tail.len() < n {
            return Err(bad());
        }
        let (text, tail) = tail.split_at(n);
        rest = tail;
        let text = std::str::from_utf8(text).map_err(|_| bad())?;
        docs.push(if is_json {
            Document::Json(serde_json::from_str(text).map_err(|_| bad())?)
        } else {
            Document::Text(text.to_owned())
        });
    }
    if !rest.is_empty() || doc_tokens.len() != docs.len() {
        return Err(bad());
    }
    let estimate = h.get("total_tokens_estimate").and_then(Value::as_u64);
    let sum = doc_tokens.iter().map(|&t| t as u64).sum();
    let mut entry = Entry::new(id.to_owned(), docs, doc_tokens, budget, precision, bytes)
        .with_estimate(estimate.unwrap_or(sum))
        .with_total(h.get("total_tokens").and_then(Value::as_u64))
        .with_parts(carriers, plan)
        .with_array_of(array_of)
        .with_tables(h.get("tables").and_then(Value::as_bool).unwrap_or(false))
        .with_principal(principal);
    entry.book = std::sync::Mutex::new(book);
    Ok(entry)
}

fn carrier_value(c: &Carrier) -> Value {
    match c {
        Carrier::Text(m) => json!({"t": "text", "m": m}),
        Carrier::Resource(m) => json!({"t": "resource", "m": m}),
        Carrier::Structured => json!({"t": "structured"}),
    }
}

fn carrier_of(v: &Value) -> Option<Carrier> {
    let members = || v.get("m").and_then(Value::as_object).cloned();
    match v.get("t")?.as_str()? {
        "text" => Some(Carrier::Text(members()?)),
        "resource" => Some(Carrier::Resource(members()?)),
        "structured" => Some(Carrier::Structured),
        _ => None,
    }
}

fn plan_value(p: &Plan) -> Value {
    let orig = match &p.orig {
        Orig::Doc(n) => json!({"doc": n}),
        Orig::Kept(v) => json!({"kept": &**v}),
    };
    json!({"doc": p.doc, "own": p.own, "orig": orig, "valid": p.valid, "declared": p.declared, "schema": p.schema.as_deref()})
}

fn plan_of(v: &Value) -> Option<Plan> {
    let o = v.get("orig")?;
    let orig = match (o.get("doc"), o.get("kept")) {
        (Some(n), None) => Orig::Doc(usize::try_from(n.as_u64()?).ok()?),
        (None, Some(kept)) => Orig::Kept(Arc::new(kept.clone())),
        _ => return None,
    };
    let doc = match v.get("doc")? {
        Value::Null => None,
        n => Some(usize::try_from(n.as_u64()?).ok()?),
    };
    Some(Plan {
        doc,
        own: v.get("own")?.as_bool()?,
        orig,
        valid: v.get("valid")?.as_bool()?,
        declared: v.get("declared")?.as_bool()?,
        schema: v
            .get("schema")
            .filter(|s| !s.is_null())
            .map(|s| Arc::new(s.clone())),
    })
}

/// The page book as compact JSON (see the module docs); `next` pairs sorted, so equal books
/// have equal texts.
pub(crate) fn encode_book(book: &PageBook) -> String {
    let p: Vec<Value> = book
        .positions
        .iter()
        .map(|(item, pos)| json!([item, pos.to_string()]))
        .collect();
    let mut n: Vec<[usize; 3]> = book
        .next_of
        .iter()
        .map(|(&(k, b), &next)| [k, b, next])
        .collect();
    n.sort_unstable();
    json!({"p": p, "o": book.ordinals, "n": n}).to_string()
}

/// The page book read back from [`encode_book`]'s text.
///
/// # Errors
/// [`CodecError::Damaged`] when `text` is not such a book.
pub(crate) fn decode_book(text: &str) -> Result<PageBook, CodecError> {
    let bad = || CodecError::Damaged;
    let v: Value = serde_json::from_str(text).map_err(|_| bad())?;
    let num = |v: &Value| {
        v.as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(bad)
    };
    let positions: Vec<SeqPos> = v
        .get("p")
        .and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(|pair| {
            let item = num(pair.get(0).ok_or_else(bad)?)?;
            let pos: Position = pair
                .get(1)
                .and_then(Value::as_str)
                .ok_or_else(bad)?
                .parse()
                .map_err(|_| bad())?;
            Ok((item, pos))
        })
        .collect::<Result<_, CodecError>>()?;
    let ordinals: Vec<usize> = v
        .get("o")
        .and_then(Value::as_array)
        .ok_or_else(bad)?
        .iter()
        .map(num)
        .collect::<Result<_, _>>()?;
    let mut next_of = HashMap::new();
    for t in v.get("n").and_then(Value::as_array).ok_or_else(bad)? {
        let t = t.as_array().ok_or_else(bad)?;
        let [k, b, next] = t.as_slice() else {
            return Err(bad());
        };
        next_of.insert((num(k)?, num(b)?), num(next)?);
    }
    if positions.is_empty() || ordinals.len() != positions.len() {
        return Err(bad());
    }
    Ok(PageBook {
        positions,
        next_of,
        ordinals,
    })
}

/// The members of an object, for tests building carriers.
#[cfg(test)]
pub(crate) fn members(v: Value) -> serde_json::Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Entry {
        let docs = vec![
            Document::Json(
                serde_json::from_str(r#"{"a":[1,2.50,-0.0,1e400],"é":"x\u0000"}"#).unwrap(),
            ),
            Document::Text("plain\ntext 🎉".into()),
        ];
        Entry::new("ab".repeat(12), docs, vec![20, 5], 300, 0, 123)
            .with_parts(
                vec![
                    Carrier::Text(members(json!({"annotations": {"x": 1}}))),
                    Carrier::Resource(members(
                        json!({"type": "resource", "resource": {"uri": "u"}}),
                    )),
                ],
                Some(Plan {
                    doc: Some(0),
                    own: false,
                    orig: Orig::Kept(Arc::new(json!({"k": 1.5}))),
                    valid: true,
                    declared: false,
                    schema: Some(Arc::new(json!({"type": "object", "required": ["k"]}))),
                }),
            )
            .with_array_of(Some(2))
    }

    #[test]
    fn body_round_trips_through_zstd() {
        let e = sample();
        let docs = e.docs().unwrap();
        let raw = encode_body(&e, &docs);
        let frame = compress(&raw);
        assert_eq!(decompress(&frame, raw.len()).unwrap(), raw);
        assert_eq!(decompress(&frame, raw.len() - 1), Err(CodecError::Frame));
        assert_eq!(decompress(b"not zstd", 100), Err(CodecError::Frame));
        let back = decode_body(&raw, &e.id, "p", PageBook::default()).unwrap();
        assert_eq!(*back.docs().unwrap(), *docs);
        assert_eq!(back.doc_tokens, e.doc_tokens);
        assert_eq!(
            (back.budget, back.precision, back.bytes),
            (e.budget, e.precision, e.bytes)
        );
        assert_eq!(back.carriers, e.carriers);
        assert_eq!(back.structured, e.structured);
        assert_eq!(back.array_of, Some(2));
        assert_eq!(&*back.principal, "p");
        assert_eq!(back.json_flags(), e.json_flags());
        // Cut anywhere: damaged, never a panic.
        for cut in 0..raw.len() {
            assert!(decode_body(&raw[..cut], "x", "p", PageBook::default()).is_err());
        }
    }

    #[test]
    fn book_round_trips() {
        let mut book = PageBook {
            positions: vec![(0, Position::start())],
            next_of: HashMap::new(),
            ordinals: vec![0],
        };
        book.positions.push((1, "1.3.a.0".parse().unwrap()));
        book.positions.push((1, "2.ff.3.7".parse().unwrap()));
        book.ordinals.extend([1, 2]);
        book.next_of.insert((0, 300), 1);
        book.next_of.insert((1, 500), 2);
        let text = encode_book(&book);
        let back = decode_book(&text).unwrap();
        assert_eq!(back.positions, book.positions);
        assert_eq!(back.ordinals, book.ordinals);
        assert_eq!(back.next_of, book.next_of);
        assert_eq!(encode_book(&back), text);
        for bad in [
            "",
            "{}",
            r#"{"p":[],"o":[],"n":[]}"#,
            r#"{"p":[[0,"x"]],"o":[0],"n":[]}"#,
        ] {
            assert!(
                matches!(decode_book(bad), Err(CodecError::Damaged)),
                "{bad}"
            );
        }
    }
}
