//! Shaping the `result` of a `tools/call` response (a CallToolResult).
//!
//! Steps, in order:
//! 1. Every `text` item whose text is a JSON object or array is parsed; the tool's `transform`
//!    (jq) runs on it; long base64 / `data:` strings inside it are offloaded (see
//!    [`super::blobs`]). A text item that is wholly a base64 blob is offloaded too. The text
//!    of an embedded `resource` item is a document the same way (no `transform`).
//! 2. `audio` data and resource blobs over the threshold are offloaded: the item becomes a
//!    `text` item holding the description (its `annotations`/`_meta` are kept). `image`
//!    items are decided once every document is known ([`super::images::fit`]): inline at
//!    their vision cost, a downscaled copy (plus the full-resolution file), or a file.
//! 3. `structuredContent`: a value twin of a text item, or one that no text item carries
//!    (then a document of its own, last), follows the pages ([`Slot::Structured`]); a string
//!    twin is shaped after emitting ([`mcp_budget_core::shape::structured`]).
//! 4. Each document is rendered compact (floats rounded) and counted exactly. When the sum
//!    fits the budget, the result goes out with the compacted texts and no meta item.
//! 5. Otherwise the shaped documents are cached under a new response id and page 1 goes out
//!    (see [`mcp_budget_core::shape::walk`] and [`super::parts`]) followed by the meta item, or, with
//!    `overflow = "summary"`, the elision envelope whose `next_cursor` (`<id>.0`) leads to
//!    page 1.
//!
//! Items that are not documents (inline `image`s, `resource_link`, unknown types) are all
//! kept on page 1, in their original order among the documents' items shown there; later
//! pages carry documents only. An inline image costs its vision cost ([`super::images`]),
//! taken out of the budget of the documents; the other items cost nothing.
//! Every other member of the result (`isError`, `_meta`, `resultType`, unknown ones) is kept
//! as it was; `isError` results are shaped with the same budget. A result that is not an
//! object with a `content` array is returned unchanged.

use std::sync::Arc;

use mcp_budget_core::paginate::Document;
use mcp_budget_core::summary;
use mcp_budget_core::wire::Outcome;
use serde_json::{Map, Value, json};

use super::args_rewrite;
use super::images;
use super::parts;
use super::state::{Boundary, banner_item, rule};
use super::store::Entry;
use crate::config::{Overflow, Tables};
use mcp_budget_core::shape::model::{
    Carrier, EmitMode, Shaped, Slot, ToolNames, resource_may_be_json,
};
use mcp_budget_core::shape::structured::{self, Orig, Plan, Twin};
use mcp_budget_core::shape::walk;

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
    /// When the layout has a [`Slot::Structured`]: the structuredContent to emit (`None`:
    /// none).
    pub(crate) structured: Option<Value>,
    /// For a paged result: its `_meta["mcp-budget/page"]` (see [`walk::page_meta`]).
    pub(crate) page_meta: Option<Value>,
}

#[cfg(test)]
pub(crate) fn shape(b: &Boundary, tool: &str, result: Value) -> Shaped {
    shape_at(b, tool, result, None)
}

/// [`shape`] with the budget of the tool's rule replaced by `budget` tokens when given (the
/// client fit asks for smaller pages this way: [`super::client_fit`]).
pub(crate) fn shape_at(
    b: &Boundary,
    tool: &str,
    mut result: Value,
    budget: Option<usize>,
) -> Shaped {
    match super::early::shape_at(b, tool, &mut result, super::early::MIN_SOURCE_BYTES, budget) {
        Some(shaped) => shaped,
        None => shape_full_at(b, tool, result, budget),
    }
}

/// [`shape`] without the early page 1 of a long JSON text ([`super::early`]): every document
/// parsed and rendered whole first.
#[cfg(test)]
pub(crate) fn shape_full(b: &Boundary, tool: &str, result: Value) -> Shaped {
    shape_full_at(b, tool, result, None)
}

/// [`shape_full`] at `budget` tokens when given (see [`shape_at`]).
pub(crate) fn shape_full_at(
    b: &Boundary,
    tool: &str,
    mut result: Value,
    budget: Option<usize>,
) -> Shaped {
    let unshaped = |result: Value| Shaped {
        result,
        outcome: Outcome::Error,
        response_id: None,
        bytes_pre: 0,
        bytes: 0,
        tokens: 0,
        pre_texts: Vec::new(),
        image_tokens: 0,
    };
    let Some(obj) = result.as_object_mut() else {
        return unshaped(result);
    };
    let content = match obj.get_mut("content") {
        Some(Value::Array(items)) => std::mem::take(items),
        _ => return unshaped(result),
    };
    let rule = rule(b, tool, budget);
    // The trees about to be parsed need room beside the cache (see `Store::make_room_for`),
    // held until they are rendered and kept.
    let held = b.store.make_room_for(
        content
            .iter()
            .filter_map(|i| i.get("text").and_then(Value::as_str))
            .map(str::len)
            .sum(),
    );
    let is_error = obj.get("isError").and_then(Value::as_bool) == Some(true);

    let mut pre_texts = Vec::new();
    // The original text of each document (for twins, telemetry and `changed`), and whether
    // the document is a `text` item (only those can twin the structuredContent).
    let mut orig_texts: Vec<String> = Vec::new();
    let mut is_text_item: Vec<bool> = Vec::new();
    let mut docs: Vec<Document> = Vec::new();
    let mut layout = Vec::with_capacity(content.len() + 1);
    let mut offloaded = 0usize;
    let mut pending_images = Vec::new();
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
                if let (Document::Json(v), Some(code)) = (&mut doc, &rule.transform) {
                    transform(tool, code, v);
                }
                offloaded += offload_in_doc(b, &mut doc);
                orig_texts.push(text);
                is_text_item.push(true);
                layout.push(Slot::Text {
                    doc: docs.len(),
                    extra,
                });
                docs.push(doc);
            }
            _ => {
                let item = match mcp_budget_core::shape::model::take_resource_text(item) {
                    Ok((text, rest)) => {
                        // An embedded resource's text is model-visible: a document like a
                        // text item's (compacted, offloaded, paged; no `transform`).
                        bytes_pre += text.len() as u64;
                        let mime = rest
                            .get("resource")
                            .and_then(|r| r.get("mimeType"))
                            .and_then(Value::as_str);
                        // A resource that declares a type other than JSON is text as it came.
                        let mut doc = if resource_may_be_json(mime) {
                            document_of(&text)
                        } else {
                            Document::Text(text.clone())
                        };
                        offloaded += offload_in_doc(b, &mut doc);
                        orig_texts.push(text);
                        is_text_item.push(false);
                        layout.push(Slot::Resource {
                            doc: docs.len(),
                            item: rest,
                        });
                        docs.push(doc);
                        continue;
                    }
                    Err(item) => item,
                };
                for payload in blob_payloads(&item) {
                    bytes_pre += payload.len() as u64;
                    if keep_pre {
                        pre_texts.push(payload.to_owned());
                    }
                }
                if item.get("type").and_then(Value::as_str) == Some("image") {
                    // Decided once every document is known (`images::fit`).
                    pending_images.push(layout.len());
                    layout.push(Slot::Other(item));
                    continue;
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
                        is_text_item.push(false);
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

    // Images: inline at their vision cost while they fit, else a downscaled copy and/or a file.
    let mut image_tokens = 0;
    if !pending_images.is_empty() {
        let sc_tokens = obj
            .get("structuredContent")
            .filter(|v| v.is_object() || v.is_array())
            .map_or(0, |sc| b.encoding.count(&sc.to_string()));
        let set = images::DocSet {
            docs: &mut docs,
            layout: &mut layout,
            orig_texts: &mut orig_texts,
            is_text_item: &mut is_text_item,
        };
        let fitted = images::fit(b, &rule, set, &pending_images, sc_tokens);
        offloaded += fitted.offloaded;
        image_tokens = fitted.tokens;
    }

    // structuredContent: a value twin, or one no text item carries, follows the pages
    // (`Slot::Structured`); a string twin or a scalar is shaped after emitting.
    let has_schema = b.has_output_schema(tool);
    let mut after = None;
    let mut planned = false;
    if let Some(sc) = obj.get_mut("structuredContent").map(Value::take) {
        let candidates: Vec<Option<&str>> = orig_texts
            .iter()
            .zip(&is_text_item)
            .map(|(t, &ok)| ok.then_some(t.as_str()))
            .collect();
        let twin = structured::find_twin(&sc, &candidates);
        drop(candidates);
        match twin {
            // A twin of a text item, and the tool declares no outputSchema: clients read the
            // text; the duplicate goes.
            Twin::Value { .. } if has_schema == Some(false) => planned = true,
            Twin::Value { item } => {
                planned = true;
                let orig = rounded(sc, rule.precision);
                // The text item's document holds the same value unless a transform, a blob
                // offload or rounding made them differ: then the plan keeps its own copy.
                let orig = match docs.get(item) {
                    Some(Document::Json(v)) if *v == orig => Orig::Doc(item),
                    _ => Orig::Kept(Arc::new(orig)),
                };
                layout.push(Slot::Structured(Plan {
                    doc: Some(item),
                    own: false,
                    orig,
                    valid: true,
                    declared: has_schema == Some(true),
                    schema: b.output_schema(tool),
                }));
            }
            Twin::None if matches!(sc, Value::Object(_) | Value::Array(_)) => {
                planned = true;
                let text = serde_json::to_string(&sc).unwrap_or_default();
                bytes_pre += text.len() as u64;
                let orig = rounded(sc, rule.precision);
                orig_texts.push(text);
                is_text_item.push(false);
                layout.push(Slot::Structured(Plan {
                    doc: Some(docs.len()),
                    own: true,
                    orig: Orig::Doc(docs.len()),
                    valid: has_schema != Some(false),
                    declared: has_schema == Some(true),
                    schema: b.output_schema(tool),
                }));
                docs.push(Document::Json(orig));
            }
            _ => after = Some((sc, twin)),
        }
    }

    // `uuid_prefix`: UUIDs shortened in the documents and in a structuredContent kept beside
    // them (the cache keeps the shortened documents; `query_response` expands them back).
    let uuid_map = {
        let mut kept: Vec<&mut Value> = Vec::new();
        for slot in &mut layout {
            if let Slot::Structured(Plan {
                orig: Orig::Kept(v),
                ..
            }) = slot
            {
                kept.push(Arc::make_mut(v));
            }
        }
        if let Some((sc, _)) = &mut after {
            kept.push(sc);
        }
        args_rewrite::shorten(b, rule.uuid_prefix, &mut docs, &mut kept)
    };
    // Inline images take their cost out of the budget of the documents (on page 1, where
    // they go; the pager's floor still holds).
    let mut emitted = emit(
        b,
        docs,
        &layout,
        rule.max_tokens
            .saturating_sub(image_tokens)
            .max(mcp_budget_core::MIN_BUDGET_TOKENS),
        rule.precision,
        rule.overflow,
        rule.tables == Tables::Auto,
    );
    // The documents are in the cache (counted there) or gone.
    drop(held);
    args_rewrite::register(b, emitted.response_id.as_deref(), uuid_map);
    emitted.tokens += image_tokens as u64;
    let changed = emitted.mode != EmitMode::Whole
        || emitted
            .shown
            .iter()
            .zip(&orig_texts)
            .any(|(shown, orig)| shown != orig);

    if planned {
        match emitted.structured.take() {
            Some(sc) => {
                obj.insert("structuredContent".into(), sc);
            }
            None => {
                obj.shift_remove("structuredContent");
            }
        }
    } else if let Some((sc, twin)) = after {
        let shown = &emitted.shown;
        match structured::shape(sc, &twin, has_schema, |i| {
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
    if let Some(pm) = emitted.page_meta {
        walk::put_page_meta(obj, pm);
    }

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
        image_tokens: image_tokens as u64,
    }
}

/// The text `text` as a document ([`parts::document_of`]): the caller keeps `text` to
/// compare with what goes out, so a JSON text is never copied.
fn document_of(text: &str) -> Document {
    parts::document_of(text)
}

/// Offloads the blobs in `doc` (see [`super::blobs`]): base64 / `data:` strings inside JSON,
/// or a text that is wholly one. Returns how many.
fn offload_in_doc(b: &Boundary, doc: &mut Document) -> usize {
    match doc {
        Document::Json(v) => b.blobs.offload_in_value(v),
        Document::Text(t) => match b.blobs.offload_str(t) {
            Some(desc) => {
                *doc = Document::Json(serde_json::to_value(desc).unwrap_or_default());
                1
            }
            None => 0,
        },
    }
}

/// `v` with its floats rounded to `precision` significant digits, as the compact text shows
/// them (`0`: unchanged).
fn rounded(v: Value, precision: u32) -> Value {
    if precision == 0 {
        return v;
    }
    let text = mcp_budget_core::compact::to_string(&v, precision);
    mcp_budget_core::dialect::parse(text.as_bytes()).map_or(v, |p| p.value)
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
    match crate::jq::run_local(code, v, crate::jq::DEFAULT_DEADLINE) {
        Ok(mut outs) => {
            *v = match outs.len() {
                0 => Value::Null,
                1 => outs.pop().unwrap_or_default(),
                _ => Value::Array(outs),
            }
        }
        Err(e) => crate::logging::warn(format_args!(
            "transform of {tool:?} failed, result left as is: {e}"
        )),
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
/// elision envelope. Caches the documents when they do not fit. `tables`: JSON documents go
/// out in the table form (`tables = "auto"`; the cache keeps them JSON).
pub(crate) fn emit(
    b: &Boundary,
    docs: Vec<Document>,
    layout: &[Slot],
    budget: usize,
    precision: u32,
    overflow: Overflow,
    tables: bool,
) -> Emitted {
    let enc = &b.encoding;
    let mut rendered = Vec::with_capacity(docs.len());
    let mut doc_tokens = Vec::with_capacity(docs.len());
    let mut samples = Vec::with_capacity(docs.len());
    for d in &docs {
        // Counted only up to the budget: a doc over it is `budget + 1` until the exact count,
        // which runs after page 1 is written (see `Entry::doc_tokens`).
        let (text, t, sample) =
            mcp_budget_core::shape::form::doc_form_till(d, precision, enc, tables, budget);
        rendered.push(text);
        doc_tokens.push(t);
        samples.push(sample);
    }
    let plan = layout.iter().find_map(|slot| match slot {
        Slot::Structured(p) => Some(p.clone()),
        _ => None,
    });
    if mcp_budget_core::shape::form::fits_whole(&doc_tokens, budget) {
        let items = layout
            .iter()
            .filter_map(|slot| match slot {
                Slot::Text { doc, extra } => Some(mcp_budget_core::shape::model::text_item(
                    rendered[*doc].clone(),
                    extra,
                )),
                Slot::Resource { doc, item } => {
                    Some(Carrier::Resource(item.clone()).item(rendered[*doc].clone()))
                }
                // Whole, the structuredContent goes out as it is: no text item added.
                Slot::Structured(_) => None,
                Slot::Other(v) => Some(v.clone()),
            })
            .collect();
        return Emitted {
            items,
            bytes: rendered.iter().map(|t| t.len() as u64).sum(),
            tokens: doc_tokens.iter().map(|&t| t as u64).sum(),
            shown: rendered,
            response_id: None,
            mode: EmitMode::Whole,
            structured: plan.and_then(|p| p.orig(&docs).cloned()),
            page_meta: None,
        };
    }

    let names = b.names();
    let n_layout_docs = docs.len();
    // What page 1's meta item will show: the exact total when every document is within the
    // budget (then counted exactly), else an estimate.
    let estimate =
        mcp_budget_core::shape::form::estimate_total(&rendered, &doc_tokens, &samples, budget, enc);
    let first_total = if doc_tokens.iter().all(|&t| t <= budget) {
        mcp_budget_core::shape::model::Total::Exact(doc_tokens.iter().map(|&t| t as u64).sum())
    } else {
        mcp_budget_core::shape::model::Total::Estimate(estimate)
    };
    let reserve = walk::meta_reserve(
        &"0".repeat(b.store.id_len()),
        docs.len(),
        first_total,
        enc,
        &names,
    );
    let merged = mcp_budget_core::shape::form::needs_one_document(docs.len(), budget, reserve);
    let mut carriers = vec![Carrier::Text(Map::new()); docs.len()];
    for (d, c) in layout.iter().filter_map(Slot::carrier) {
        if let Some(slot) = carriers.get_mut(d) {
            *slot = c;
        }
    }
    let mut plan = plan;
    let (docs, rendered, doc_tokens, samples) = if merged {
        // A budget near the floor and several documents: page them as one JSON array (texts
        // as JSON strings) in plain text items, which the core pager can always cut.
        carriers = vec![Carrier::Text(Map::new())];
        if let Some(p) = &mut plan {
            p.doc = None;
        }
        let d = Document::Json(Value::Array(docs.into_iter().map(doc_value).collect()));
        let (text, t, sample) =
            mcp_budget_core::shape::form::doc_form_till(&d, precision, enc, tables, budget);
        (vec![d], vec![text], vec![t], vec![sample])
    } else {
        (docs, rendered, doc_tokens, samples)
    };
    let bytes: usize = rendered.iter().map(String::len).sum();
    let budget_seed = (budget as u64).to_le_bytes();
    let precision_seed = precision.to_le_bytes();
    let mut seed: Vec<&[u8]> = rendered.iter().map(String::as_bytes).collect();
    seed.push(&budget_seed);
    seed.push(&precision_seed);
    let same = |e: &Entry| {
        e.budget == budget
            && e.precision == precision
            && e.tables == tables
            && e.holds(&docs, &rendered)
            && e.carriers == carriers
            && e.structured == plan
    };
    let n_docs = n_layout_docs;
    // A structuredContent beside the envelope is reduced (read before the documents go into
    // the cache).
    let summary_sc = if overflow == Overflow::Summary {
        plan.as_ref()
            .filter(|p| p.valid)
            .and_then(|p| Some(p.reduced(p.orig(&docs)?)))
    } else {
        None
    };
    // The memory store gives the same response shaped again (same content, budget and
    // precision) its cached entry, so cursors handed out for it earlier stay valid.
    let found = b.store.find_or_id(&b.principal, &seed, &same);
    drop(seed);
    let entry = match found {
        Ok(existing) => existing,
        Err(id) => {
            // The estimate page 1 shows (the documents changed when merged into one array).
            let estimate = if merged {
                mcp_budget_core::shape::form::estimate_total(
                    &rendered,
                    &doc_tokens,
                    &samples,
                    budget,
                    enc,
                )
            } else {
                estimate
            };
            let entry = Entry::new(id, docs, doc_tokens, budget, precision, bytes)
                .with_rendered(&rendered)
                .with_estimate(estimate)
                .with_parts(carriers, plan.clone())
                .with_array_of(merged.then_some(n_docs))
                .with_principal(&b.principal)
                .with_tables(tables);
            let entry = if b.store.id_len() == 12 {
                b.store.keep(entry)
            } else {
                // A shared store keeps the exact total with the entry, for other replicas.
                entry.count_total(&rendered, enc);
                b.store.keep(entry)
            };
            count_in_background(b, &entry, rendered);
            entry
        }
    };
    let id = entry.id.clone();

    if overflow == Overflow::Summary {
        // A structuredContent beside the envelope is reduced, and counts in full (no text
        // item carries it); without a declared outputSchema it goes when it does not fit.
        let declared = plan.as_ref().is_some_and(|p| p.declared);
        let mut sc = summary_sc.map(|v| {
            let t = enc.count(&serde_json::to_string(&v).unwrap_or_default());
            (v, t, declared)
        });
        let sc_tokens = sc.as_ref().map_or(0, |(_, t, _)| *t);
        let (mut text, mut tokens) = envelope(b, &entry, budget.saturating_sub(sc_tokens), &names);
        if tokens + sc_tokens > budget && sc.as_ref().is_some_and(|(_, _, declared)| !declared) {
            sc = None;
            (text, tokens) = envelope(b, &entry, budget, &names);
        }
        let tokens = tokens + sc.as_ref().map_or(0, |(_, t, _)| *t);
        let mut items: Vec<Value> = layout
            .iter()
            .filter_map(|slot| match slot {
                Slot::Other(v) => Some(v.clone()),
                _ => None,
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
            structured: sc.map(|(v, _, _)| v),
            page_meta: None,
        };
    }

    let Some(sheet) = parts::page_in_budget(&entry, 0, budget, enc, &names, true) else {
        // Unreachable in practice (page 0 always exists); fail safe with the envelope.
        return emit_envelope_only(b, &entry, budget, &names, n_docs);
    };
    // Shared store: the positions of the pages after page 1, for the other replicas.
    if let Err(miss) = b.store.save_pages(&entry) {
        crate::logging::warn(format_args!(
            "the pages of a response were not saved to the store: {miss:?}"
        ));
    }
    let page = sheet.page;
    let mut shown = vec![String::new(); n_docs];
    for p in &page.parts {
        if let Some(s) = shown.get_mut(p.item) {
            s.clone_from(&p.body);
        }
    }
    let mut items = Vec::with_capacity(layout.len() + 1);
    let mut placed = vec![false; entry.n_docs()];
    for slot in layout {
        let Some((doc, carrier)) = slot.carrier() else {
            if let Slot::Other(v) = slot {
                items.push(v.clone());
            }
            continue;
        };
        let (d, carrier) = if merged {
            (0, Carrier::Text(Map::new()))
        } else {
            (doc, carrier)
        };
        if placed.get(d).copied().unwrap_or(true) {
            continue;
        }
        if let Some(p) = page.parts.iter().find(|p| p.item == d) {
            items.push(carrier.item(p.body.clone()));
            placed[d] = true;
        }
    }
    let bytes = page.parts.iter().map(|p| p.body.len()).sum::<usize>() + page.meta.len();
    items.push(json!({"type":"text","text":page.meta}));
    let page_meta = walk::page_meta(&id, &page, &*entry);
    Emitted {
        items,
        shown,
        tokens: sheet.tokens as u64,
        bytes: bytes as u64,
        response_id: Some(id),
        mode: EmitMode::Paged,
        structured: sheet.sc.value,
        page_meta: Some(page_meta),
    }
}

/// Counts the exact total of `entry` from `rendered` on a thread of its own, so that page 1
/// goes out without waiting for it (the next page waits if it is not done by then); the
/// renderings count against the cache's bound while the thread holds them
/// ([`super::store::Store::charge`]). Counted on the next page when no thread can be started.
fn count_in_background(b: &Boundary, entry: &Arc<Entry>, rendered: Vec<String>) {
    if entry.total_if_known().is_some() {
        return;
    }
    let (entry, enc, store) = (Arc::clone(entry), b.encoding.clone(), Arc::clone(&b.store));
    let spawned = std::thread::Builder::new()
        .name("mcp-budget-count".into())
        .spawn(move || {
            let bytes = rendered.iter().map(String::capacity).sum();
            let held = store.charge(bytes);
            entry.count_total(&rendered, &enc);
            drop(rendered);
            drop(held);
        });
    if let Err(e) = spawned {
        eprintln!(
            "mcp-budget: cannot start a counting thread ({e}): the total is counted on the next page"
        );
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
        structured: entry
            .structured
            .as_ref()
            .filter(|p| p.valid)
            .zip(entry.docs())
            .and_then(|(p, docs)| p.orig(&docs).map(|v| p.reduced(v))),
        page_meta: None,
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
        entry.total_tokens(enc),
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
