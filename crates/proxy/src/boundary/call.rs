//! Shaping the `result` of a `tools/call` response (a CallToolResult).
//!
//! Steps, in order:
//! 1. Every `text` item whose text is a JSON object or array is parsed; the tool's `transform`
//!    (jq) runs on it; long base64 / `data:` strings inside it are offloaded (see
//!    [`super::blobs`]). A text item that is wholly a base64 blob is offloaded too.
//! 2. `image`/`audio` data and resource blobs over the threshold are offloaded: the item
//!    becomes a `text` item holding the description (its `annotations`/`_meta` are kept).
//! 3. Each text item is rendered compact (floats rounded) and counted exactly. When the sum
//!    fits the budget, the result goes out with the compacted texts and no meta item.
//! 4. Otherwise the shaped items are cached under a new response id and page 1 goes out (see
//!    [`super::walk`]) followed by the meta item, or, with `overflow = "summary"`, the
//!    elision envelope whose `next_cursor` (`<id>.0`) leads to page 1.
//!
//! Items that are not text (`image` under the threshold, `resource_link`, `resource` with
//! `text`, unknown types) cost no model-visible tokens and are all kept on page 1, in their
//! original order among the text items shown there; later pages carry text only.
//! Every other member of the result (`isError`, `_meta`, `resultType`, unknown ones) is kept
//! as it was; `isError` results are shaped with the same budget. A result that is not an
//! object with a `content` array is returned unchanged.

use std::sync::Arc;

use mcp_budget_core::paginate::Document;
use mcp_budget_core::summary;
use mcp_budget_core::tokens::Encoding;
use mcp_budget_core::wire::Outcome;
use serde_json::{Map, Value, json};

use super::Boundary;
use super::store::Entry;
use super::structured::{self, TwinFate};
use super::walk::{self, ToolNames};
use crate::config::Overflow;

/// Where each content item of the upstream result went.
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    /// A text item: `doc` indexes the shaped documents; `extra` holds its other members
    /// (`annotations`, `_meta`).
    Text {
        /// Index into the documents.
        doc: usize,
        /// Members besides `type` and `text`.
        extra: Map<String, Value>,
    },
    /// Any other item, kept as it was.
    Other(Value),
}

/// A shaped result and what telemetry needs to know about it.
#[derive(Debug)]
pub(crate) struct Shaped {
    pub(crate) result: Value,
    pub(crate) outcome: Outcome,
    pub(crate) response_id: Option<String>,
    pub(crate) bytes_pre: u64,
    pub(crate) bytes: u64,
    pub(crate) tokens: u64,
    pub(crate) pre_texts: Vec<String>,
}

/// The content items of a shaped set of documents (banner not included).
#[derive(Debug)]
pub(crate) struct Emitted {
    pub(crate) items: Vec<Value>,
    /// What each document's text item carries in `items` (empty when not shown).
    pub(crate) shown: Vec<String>,
    pub(crate) tokens: u64,
    pub(crate) bytes: u64,
    pub(crate) response_id: Option<String>,
    pub(crate) mode: EmitMode,
}

/// How [`emit`] fit the documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EmitMode {
    Whole,
    Paged,
    Elided,
}

fn text_item(text: String, extra: &Map<String, Value>) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::String("text".into()));
    m.insert("text".into(), Value::String(text));
    for (k, v) in extra {
        m.insert(k.clone(), v.clone());
    }
    Value::Object(m)
}

/// The banner item, when set.
pub(crate) fn banner_item(b: &Boundary) -> Option<Value> {
    b.settings
        .banner
        .as_ref()
        .map(|t| json!({"type":"text","text":t}))
}

pub(crate) fn shape(b: &Boundary, tool: &str, mut result: Value) -> Shaped {
    let unshaped = |result: Value| Shaped {
        result,
        outcome: Outcome::Error,
        response_id: None,
        bytes_pre: 0,
        bytes: 0,
        tokens: 0,
        pre_texts: Vec::new(),
    };
    let Some(obj) = result.as_object_mut() else {
        return unshaped(result);
    };
    let content = match obj.get_mut("content") {
        Some(Value::Array(items)) => std::mem::take(items),
        _ => return unshaped(result),
    };
    let rule = b.settings.rule_for(tool);
    // The trees about to be parsed need room beside the cache (see `Store::make_room_for`).
    b.store.make_room_for(
        content
            .iter()
            .filter_map(|i| i.get("text").and_then(Value::as_str))
            .map(str::len)
            .sum(),
    );
    let is_error = obj.get("isError").and_then(Value::as_bool) == Some(true);

    let mut pre_texts = Vec::new();
    let mut orig_texts = Vec::new();
    let mut docs: Vec<Document> = Vec::new();
    let mut layout = Vec::with_capacity(content.len());
    let mut offloaded = 0usize;
    let keep_pre = b.telemetry.is_some();
    let mut bytes_pre = 0u64;
    for item in content {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
        match (kind, item.get("text").and_then(Value::as_str)) {
            ("text", Some(_)) => {
                // The item is ours: its text is moved out, never copied (a 12 MB text would
                // cost milliseconds per copy on the reply path).
                let mut extra = match item {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                extra.remove("type");
                let text = match extra.remove("text") {
                    Some(Value::String(t)) => t,
                    _ => String::new(),
                };
                bytes_pre += text.len() as u64;
                let mut doc = document_of(&text);
                match &mut doc {
                    Document::Json(v) => {
                        if let Some(code) = &rule.transform {
                            transform(tool, code, v);
                        }
                        offloaded += b.blobs.offload_in_value(v);
                    }
                    Document::Text(t) => {
                        if let Some(desc) = b.blobs.offload_str(t) {
                            offloaded += 1;
                            doc = Document::Json(serde_json::to_value(desc).unwrap_or_default());
                        }
                    }
                }
                orig_texts.push(text);
                layout.push(Slot::Text {
                    doc: docs.len(),
                    extra,
                });
                docs.push(doc);
            }
            _ => {
                for payload in blob_payloads(&item) {
                    bytes_pre += payload.len() as u64;
                    if keep_pre {
                        pre_texts.push(payload.to_owned());
                    }
                }
                match b.blobs.offload_item(&item) {
                    Some(desc) => {
                        offloaded += 1;
                        let mut extra = Map::new();
                        for k in ["annotations", "_meta"] {
                            if let Some(v) = item.get(k) {
                                extra.insert(k.into(), v.clone());
                            }
                        }
                        // Not a twin of anything: keeps twin indexes aligned with docs.
                        orig_texts.push(String::new());
                        layout.push(Slot::Text {
                            doc: docs.len(),
                            extra,
                        });
                        docs.push(Document::Json(
                            serde_json::to_value(desc).unwrap_or_default(),
                        ));
                    }
                    None => layout.push(Slot::Other(item)),
                }
            }
        }
    }

    let emitted = emit(
        b,
        docs,
        &layout,
        rule.max_tokens,
        rule.precision,
        rule.overflow,
    );
    let changed = emitted.mode != EmitMode::Whole
        || emitted
            .shown
            .iter()
            .zip(&orig_texts)
            .any(|(shown, orig)| shown != orig);

    // structuredContent, beside its twin.
    if let Some(sc) = obj.get_mut("structuredContent").map(Value::take) {
        let twin = structured::find_twin(&sc, &orig_texts);
        // A value twin gets the floats its text twin shows (rounded like the text).
        let sc = match twin {
            structured::Twin::Value { .. } if rule.precision > 0 => {
                let text = mcp_budget_core::compact::to_string(&sc, rule.precision);
                serde_json::from_str(&text).unwrap_or(sc)
            }
            _ => sc,
        };
        let has_schema = b.has_output_schema(tool);
        let shown = &emitted.shown;
        let fate = match emitted.mode {
            EmitMode::Whole => TwinFate::Whole,
            EmitMode::Paged => TwinFate::Paged,
            EmitMode::Elided => TwinFate::Elided,
        };
        match structured::shape(sc, &twin, has_schema, fate, |i| {
            shown.get(i).cloned().unwrap_or_default()
        }) {
            Some(sc) => {
                obj.insert("structuredContent".into(), sc);
            }
            None => {
                obj.shift_remove("structuredContent");
            }
        }
    }

    let mut items = Vec::with_capacity(emitted.items.len() + 1);
    items.extend(banner_item(b));
    items.extend(emitted.items);
    obj.insert("content".into(), Value::Array(items));

    if keep_pre {
        // For telemetry's `tokens_pre` (counted on its own thread, off the reply path): the
        // original texts, moved, not copied; the blob payloads are already there.
        pre_texts.extend(orig_texts.into_iter().filter(|t| !t.is_empty()));
    }

    let outcome = match emitted.mode {
        EmitMode::Paged => Outcome::Paged,
        EmitMode::Elided => Outcome::Elided,
        EmitMode::Whole if is_error => Outcome::Error,
        EmitMode::Whole if offloaded > 0 => Outcome::Offloaded,
        EmitMode::Whole if changed => Outcome::Compacted,
        EmitMode::Whole => Outcome::Fit,
    };
    Shaped {
        result,
        outcome,
        response_id: emitted.response_id,
        bytes_pre,
        bytes: emitted.bytes,
        tokens: emitted.tokens,
        pre_texts,
    }
}

/// The text item `text` as a document: [`Document::from_text`] without taking `text` (the
/// caller keeps it to compare with what goes out), so a JSON text is never copied.
fn document_of(text: &str) -> Document {
    let trimmed = text.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(v) = serde_json::from_str::<Value>(text)
    {
        return Document::Json(v);
    }
    Document::Text(text.to_owned())
}

/// The base64 payloads of a non-text item (for `bytes_pre`/`tokens_pre`).
fn blob_payloads(item: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    if let Some(d) = item.get("data").and_then(Value::as_str) {
        out.push(d);
    }
    if let Some(d) = item
        .get("resource")
        .and_then(|r| r.get("blob"))
        .and_then(Value::as_str)
    {
        out.push(d);
    }
    out
}

/// Runs a tool's `transform` on `v` in place: one output replaces it, several become an
/// array, none becomes `null`. A runtime error leaves `v` as it was (reported on stderr).
fn transform(tool: &str, code: &str, v: &mut Value) {
    match super::jq::run(code, v) {
        Ok(mut outs) => {
            *v = match outs.len() {
                0 => Value::Null,
                1 => outs.pop().unwrap_or_default(),
                _ => Value::Array(outs),
            }
        }
        Err(e) => eprintln!("mcp-budget: transform of {tool:?} failed, result left as is: {e}"),
    }
}

/// Whether `v` holds an object key or a number whose own tokens come near `room` (the page
/// budget less the meta item). Only units longer than `room / 2` bytes are counted.
fn has_oversized_unit(v: &Value, room: usize, enc: &Encoding) -> bool {
    let too_big = |s: &str| s.len() > room / 2 && enc.count(s) + 16 > room;
    match v {
        // The number's own spelling (arbitrary_precision keeps it): no allocation per number.
        Value::Number(n) => too_big(n.as_str()),
        Value::Array(a) => a.iter().any(|e| has_oversized_unit(e, room, enc)),
        Value::Object(o) => o
            .iter()
            .any(|(k, e)| too_big(k) || has_oversized_unit(e, room, enc)),
        _ => false,
    }
}

/// A document as a JSON value: its value, or a text as a JSON string.
fn doc_value(d: Document) -> Value {
    match d {
        Document::Json(v) => v,
        Document::Text(t) => Value::String(t),
    }
}

/// Fits `docs` (laid out as `layout`) into `budget` tokens: whole, or page 1 + meta, or the
/// elision envelope. Caches the documents when they do not fit.
pub(crate) fn emit(
    b: &Boundary,
    docs: Vec<Document>,
    layout: &[Slot],
    budget: usize,
    precision: u32,
    overflow: Overflow,
) -> Emitted {
    let enc = &b.encoding;
    let mut rendered = Vec::with_capacity(docs.len());
    let mut doc_tokens = Vec::with_capacity(docs.len());
    for d in &docs {
        let (text, t) = walk::doc_tokens(d, precision, enc);
        rendered.push(text);
        doc_tokens.push(t);
    }
    if walk::fits_whole(&doc_tokens, budget) {
        let items = layout
            .iter()
            .map(|slot| match slot {
                Slot::Text { doc, extra } => text_item(rendered[*doc].clone(), extra),
                Slot::Other(v) => v.clone(),
            })
            .collect();
        return Emitted {
            items,
            bytes: rendered.iter().map(|t| t.len() as u64).sum(),
            tokens: doc_tokens.iter().map(|&t| t as u64).sum(),
            shown: rendered,
            response_id: None,
            mode: EmitMode::Whole,
        };
    }

    let names = b.names();
    let n_layout_docs = docs.len();
    let total: u64 = doc_tokens.iter().map(|&t| t as u64).sum();
    let reserve = walk::meta_reserve("000000000000", docs.len(), total, enc, &names);
    let merged = walk::needs_one_document(docs.len(), budget, reserve);
    let (docs, rendered, doc_tokens) = if merged {
        // A budget near the floor and several text items: page them as one JSON array (text
        // items as JSON strings), which the core pager can always cut.
        let d = Document::Json(Value::Array(docs.into_iter().map(doc_value).collect()));
        let (text, t) = walk::doc_tokens(&d, precision, enc);
        (vec![d], vec![text], vec![t])
    } else {
        (docs, rendered, doc_tokens)
    };
    // A JSON document with a unit the pager cannot cut (an object key or a number) too big
    // for a page beside the meta item is paged as its compact text instead: cut at character
    // boundaries, lossless, within the budget (its pages are not JSON values on their own).
    let docs: Vec<Document> = docs
        .into_iter()
        .zip(&rendered)
        .map(|(d, text)| match &d {
            Document::Json(v) if has_oversized_unit(v, budget.saturating_sub(reserve), enc) => {
                Document::Text(text.clone())
            }
            _ => d,
        })
        .collect();
    let bytes: usize = rendered.iter().map(String::len).sum();
    let budget_seed = (budget as u64).to_le_bytes();
    let precision_seed = precision.to_le_bytes();
    let mut seed: Vec<&[u8]> = rendered.iter().map(String::as_bytes).collect();
    seed.push(&budget_seed);
    seed.push(&precision_seed);
    let id = b.store.id_for(&seed, |e| {
        e.budget == budget && e.precision == precision && e.holds(&docs, &rendered)
    });
    drop(seed);
    let n_docs = n_layout_docs;
    // The same response shaped again (same id: same content, budget and precision) keeps
    // its cached entry, so cursors handed out for it earlier stay valid.
    let entry = match b.store.get(&id) {
        Ok(existing) => existing,
        Err(_) => {
            let entry =
                Entry::new(id, docs, doc_tokens, budget, precision, bytes).with_rendered(rendered);
            let entry = Arc::new(entry);
            b.store.insert(Arc::clone(&entry));
            entry
        }
    };
    let id = entry.id.clone();

    if overflow == Overflow::Summary {
        let (text, tokens) = envelope(b, &entry, budget, &names);
        let mut items: Vec<Value> = layout
            .iter()
            .filter_map(|slot| match slot {
                Slot::Other(v) => Some(v.clone()),
                Slot::Text { .. } => None,
            })
            .collect();
        let shown = vec![text.clone(); n_docs.min(1)]
            .into_iter()
            .chain(std::iter::repeat_n(String::new(), n_docs.saturating_sub(1)))
            .collect();
        items.push(json!({"type":"text","text":text.clone()}));
        return Emitted {
            items,
            shown,
            tokens: tokens as u64,
            bytes: text.len() as u64,
            response_id: Some(id),
            mode: EmitMode::Elided,
        };
    }

    let Some(page) = walk::page(&entry, 0, budget, enc, &names) else {
        // Unreachable in practice (page 0 always exists); fail safe with the envelope.
        return emit_envelope_only(b, &entry, budget, &names, n_docs);
    };
    let mut shown = vec![String::new(); n_docs];
    for p in &page.parts {
        if let Some(s) = shown.get_mut(p.item) {
            s.clone_from(&p.body);
        }
    }
    let mut items = Vec::with_capacity(layout.len() + 1);
    let mut placed = vec![false; entry.n_docs()];
    for slot in layout {
        match slot {
            Slot::Text { doc, extra } => {
                let d = if merged { 0 } else { *doc };
                if placed.get(d).copied().unwrap_or(true) {
                    continue;
                }
                if let Some(p) = page.parts.iter().find(|p| p.item == d) {
                    items.push(text_item(p.body.clone(), extra));
                    placed[d] = true;
                }
            }
            Slot::Other(v) => items.push(v.clone()),
        }
    }
    let bytes = page.parts.iter().map(|p| p.body.len()).sum::<usize>() + page.meta.len();
    items.push(json!({"type":"text","text":page.meta}));
    Emitted {
        items,
        shown,
        tokens: page.tokens as u64,
        bytes: bytes as u64,
        response_id: Some(id),
        mode: EmitMode::Paged,
    }
}

fn emit_envelope_only(
    b: &Boundary,
    entry: &Entry,
    budget: usize,
    names: &ToolNames,
    n_docs: usize,
) -> Emitted {
    let (text, tokens) = envelope(b, entry, budget, names);
    Emitted {
        items: vec![json!({"type":"text","text":text.clone()})],
        shown: vec![String::new(); n_docs],
        tokens: tokens as u64,
        bytes: text.len() as u64,
        response_id: Some(entry.id.clone()),
        mode: EmitMode::Elided,
    }
}

/// The elision envelope's text and tokens: the bounded summary of the cached response
/// ([`summary::elision_envelope`], shrunk by [`summary::fit_envelope`] to `budget`), its id,
/// and the cursor of page 1 (`<id>.0`).
fn envelope(b: &Boundary, entry: &Entry, budget: usize, names: &ToolNames) -> (String, usize) {
    let enc = &b.encoding;
    let cursor = format!("{}.0", entry.id);
    let hint = format!(
        "Too big for the budget; this is a summary. Page 1: {} {{\"cursor\":\"{cursor}\"}}. Select: {} {{\"response_id\":\"{}\",\"query\":\"<jq>\"}}.",
        names.read_more, names.query_response, entry.id
    );
    let input = entry.query_input();
    let mut env = summary::elision_envelope(
        &input,
        entry.bytes as u64,
        entry.total_tokens,
        enc,
        &entry.id,
        Some(&cursor),
        &hint,
    );
    summary::fit_envelope(&mut env, &input, enc, budget);
    let text = serde_json::to_string(&env).unwrap_or_default();
    let tokens = enc.count(&text);
    (text, tokens)
}
