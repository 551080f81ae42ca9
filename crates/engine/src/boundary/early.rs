//! Page 1 of a long JSON text from its head, before the whole is parsed (issue 14).
//!
//! A `tools/call` result whose only content item is a long JSON text (a 12 MB
//! `directory_tree`) needs about 40 KB of it for page 1, yet [`super::call::shape`] parses all
//! of it (about 2.5× one parse of the response line), renders it and hashes it first. Here
//! page 1 is cut from the text's head ([`mcp_budget_core::head`]: the first
//! [`HEAD_BYTES_PER_TOKEN`] × budget bytes of non-whitespace, its open containers closed),
//! while a second thread reads the whole text once without building it
//! ([`mcp_budget_core::head::rest_agrees`]: strict JSON, no key repeated on the head's open
//! chain). The page goes out when both agree and the page ends no later than the head's last
//! whole unit ([`mcp_budget_core::paginate::Position::at_or_before`]); the cached entry holds
//! the text itself ([`Entry::from_source`]), parsed on a thread of its own right after (the
//! next page waits for it), with the blob offload the full path applies.
//!
//! Page 1 is the page [`super::call::shape_full`] writes for the same result, save two things:
//! the response id (fresh, not derived from the rendering: the same text shaped twice gets two
//! ids; the entry keeps page 1 as it went out, [`Entry::with_first_page`]) and the
//! `total_tokens_estimate` (from the head's
//! tokens per byte and the text's length scaled by the head's compact-to-source ratio; an
//! estimate either way). Its units, cut and cursor are the full path's (`early_tests`
//! compares them); should the head's page ever end elsewhere, it is still a page of the
//! document, in budget, and page 2 starts where it ended.
//!
//! Taken only where the full path has nothing to do beyond the document: the memory store
//! (the shared one keeps exact totals), one `text` item of at least [`MIN_SOURCE_BYTES`], no
//! `structuredContent` or one with the text as a member (a string twin, shaped after page 1
//! as [`super::call::shape_full`] does), and no `transform`, `uuid_prefix`, `tables = "auto"` or
//! `overflow = "summary"` for the tool. Anything else, a head that does not parse strictly, a
//! string in the head long enough to be a blob, or a check that fails: the full path.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mcp_budget_core::head;
use mcp_budget_core::head::halves::Halves;
use mcp_budget_core::paginate::Document;
use mcp_budget_core::wire::Outcome;
use serde_json::{Map, Value, json};

use super::parts;
use super::state::{Boundary, banner_item};
use super::store::Entry;
use super::store::TREE_FACTOR;
use super::store::entry::Prep;
use crate::config::{Overflow, Tables};
use mcp_budget_core::shape::model::{Carrier, Shaped};
use mcp_budget_core::shape::structured::{self, Twin};
use mcp_budget_core::shape::walk;

/// Texts shorter than this many bytes take the full path (it costs them little).
pub(crate) const MIN_SOURCE_BYTES: usize = 256 * 1024;

/// The head holds this many bytes of non-whitespace per token of budget: 16 (160 KB at the
/// default 10,000), four times the bytes of a full page of compact JSON (about 4 per token),
/// as many as the core pager serializes at most to size one unit (its `BYTES_PER_TOKEN_CAP`).
/// A page that would reach past the head's last whole unit is refused (the full path then);
/// what the margin buys is page 1 being the full path's own page: the pager's look-ahead never
/// sizes a unit the head cut short (tests: `early_tests`).
pub(crate) const HEAD_BYTES_PER_TOKEN: usize = 16;

/// Texts of at least this many bytes are checked in two parts on two threads
/// ([`head::halves`]): 4 MiB, which one `serde_json` pass over pretty JSON takes about as long
/// to check (~4 ms here; 12 MB: ~11 ms) as reading the head and writing page 1 (both about 7
/// ms for a 12 MB `directory_tree`); shorter texts are checked in one pass beside page 1,
/// which that pass does not delay.
pub(crate) const HALVES_MIN_BYTES: usize = 4 * 1024 * 1024;

/// The part before the cut is about this fraction (1/8) of the text (and at most a quarter:
/// else one pass): checking it costs about twice as much per byte as the rest (`serde_json`
/// counts the line breaks before the end of a text it runs out of), and the thread that
/// checks it reads the head and writes page 1 first, while the other checks the rest.
pub(crate) const HALVES_FIRST_SHARE: usize = 8;

/// Page 1 of `text` cut from its head, when the whole text agrees with the head (see the
/// module docs); `None` sends the result the full path.
///
/// The check runs beside page 1: on another thread for the whole text, or, for texts of at
/// least [`HALVES_MIN_BYTES`], in two parts ([`head::halves`]): the part after a cut near
/// the first [`HALVES_FIRST_SHARE`]th, on another thread from the start (told to stop when
/// the head takes the full path), and the part before it on this thread once page 1 is
/// written.
fn checked_page_one(
    b: &Boundary,
    text: &str,
    extra: &Map<String, Value>,
    budget: usize,
    precision: u32,
) -> Option<(NewPage, parts::Sheet)> {
    let min_bytes = budget.saturating_mul(HEAD_BYTES_PER_TOKEN);
    // The cut must come after the head's (see `Halves::first`; a pretty-printed head has
    // about four bytes of text per byte of non-whitespace), and early enough for the part
    // checked after page 1 to be small.
    let near = (text.len() / HALVES_FIRST_SHARE).max(min_bytes.saturating_mul(8));
    let halves =
        (head::opens_container(text) && text.len() >= HALVES_MIN_BYTES && near <= text.len() / 4)
            .then(|| Halves::new(text, near))
            .flatten();
    // Set when the second part's answer is no longer wanted: its thread stops reading.
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let stop = &stop;
        let second = halves.map(|h| spawn_check(s, move || h.second(stop)));
        let headed = (|| {
            let head = head::head(text, min_bytes)?;
            if head.read.saturating_mul(2) > text.len()
                || super::blobs::has_string_over(&head.value, b.blobs.threshold())
            {
                // Most of the text anyway, or a string the full path may offload as a blob.
                return None;
            }
            let last = head.last.clone();
            // Halves cut before the head's end cannot answer (rare: a head of more than eight
            // bytes of text per byte of non-whitespace): the whole text is checked then.
            let halves = halves.filter(|h| h.at() > head.read);
            let whole = halves.is_none().then(|| {
                let last = last.clone();
                spawn_check(s, move || head::rest_agrees(text, &last))
            });
            let page1 = page_of_head(b, head, extra, text, budget, precision)?;
            Some((page1, last, halves, whole))
        })();
        let Some((page1, last, halves, whole)) = headed else {
            stop.store(true, Ordering::Relaxed);
            return None;
        };
        let agrees = match (halves, whole) {
            (Some(h), _) => {
                let first = h.first(&last);
                if first.is_none() {
                    stop.store(true, Ordering::Relaxed);
                }
                let second = match second.flatten() {
                    Some(t) => t.join().ok().flatten(),
                    // No thread to be had: read it here.
                    None => first.as_ref().and_then(|_| h.second(stop)),
                };
                match (first, second) {
                    (Some(f), Some(s)) => head::halves::agree(&f, &s)
                        .unwrap_or_else(|| head::rest_agrees(text, &last)),
                    _ => false,
                }
            }
            (None, whole) => {
                stop.store(true, Ordering::Relaxed);
                match whole.flatten() {
                    Some(t) => t.join().unwrap_or(false),
                    // No thread to be had: check here.
                    None => head::rest_agrees(text, &last),
                }
            }
        };
        agrees.then_some(page1)
    })
}

/// Runs a check on a thread of its own; `None` when there is none to be had.
fn spawn_check<'s, T: Send + 's>(
    s: &'s std::thread::Scope<'s, '_>,
    f: impl FnOnce() -> T + Send + 's,
) -> Option<std::thread::ScopedJoinHandle<'s, T>> {
    std::thread::Builder::new()
        .name("mcp-budget-check".into())
        .spawn_scoped(s, f)
        .ok()
}

/// Heap bytes of a parsed tree per byte of its compact rendering, for the store's accounting
/// until the tree is built (see [`super::store::TREE_FACTOR`]).
const TREE_BYTES_PER_BYTE: usize = 10;

/// Shapes `result` by its head when it qualifies (see the module docs; texts of fewer than
/// `min_bytes` bytes do not: [`MIN_SOURCE_BYTES`] but in tests); `None` leaves it untouched
/// for [`super::call::shape_full`].
#[cfg(test)]
pub(crate) fn shape(
    b: &Boundary,
    tool: &str,
    result: &mut Value,
    min_bytes: usize,
) -> Option<Shaped> {
    shape_at(b, tool, result, min_bytes, None)
}

/// [`shape`] at `budget` tokens when given (see [`super::call::shape_at`]).
pub(crate) fn shape_at(
    b: &Boundary,
    tool: &str,
    result: &mut Value,
    min_bytes: usize,
    budget: Option<usize>,
) -> Option<Shaped> {
    if b.store.id_len() != 12 {
        return None;
    }
    let rule = crate::boundary::state::rule(b, tool, budget);
    if rule.transform.is_some()
        || rule.uuid_prefix
        || rule.tables == Tables::Auto
        || rule.overflow == Overflow::Summary
    {
        return None;
    }
    let obj = result.as_object()?;
    let [item] = obj.get("content")?.as_array()?.as_slice() else {
        return None;
    };
    if item.get("type")?.as_str()? != "text" {
        return None;
    }
    let text = item.get("text")?.as_str()?;
    if text.len() < min_bytes {
        return None;
    }
    // A structuredContent holding the text as a member (server-filesystem's
    // `{"content": <text>}`) is shaped after page 1 as the full path does; any other goes the
    // full path (telling a value twin needs the whole parse).
    let twin = match obj.get("structuredContent") {
        None => None,
        Some(sc) => {
            let key = sc
                .as_object()?
                .iter()
                .find_map(|(k, v)| (v.as_str() == Some(text)).then(|| k.clone()))?;
            Some(Twin::Str { key, item: 0 })
        }
    };
    let budget = rule.max_tokens.max(mcp_budget_core::MIN_BUDGET_TOKENS);
    // The item's other members (`annotations`, `_meta`), without copying its text.
    let extra: Map<String, Value> = item
        .as_object()?
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "type" | "text"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let (new, sheet) = checked_page_one(b, text, &extra, budget, rule.precision)?;
    let book = new.tmp.book.into_inner().ok()?;
    let obj = result.as_object_mut()?;

    // Committed: nothing below fails. The text moves into the entry (room for its tree is
    // made by the thread that parses it: pushing older content out takes milliseconds page 1
    // need not wait for).
    let source = match obj
        .get_mut("content")
        .and_then(|c| c.get_mut(0))
        .and_then(|i| i.get_mut("text"))
        .map(Value::take)
    {
        Some(Value::String(t)) => t,
        _ => String::new(),
    };
    let bytes_pre = source.len() as u64;
    let pre_texts = if b.telemetry.is_some() {
        vec![source.clone()]
    } else {
        Vec::new()
    };
    let blobs = b.blobs.clone();
    let prep = Prep(Box::new(move |docs: &mut Vec<Document>| {
        for d in docs {
            if let Document::Json(v) = d {
                blobs.offload_in_value(v);
            }
        }
    }));
    let entry = Entry::from_source(
        new.tmp.id.clone(),
        source,
        budget,
        rule.precision,
        new.bytes,
        new.bytes.saturating_mul(TREE_BYTES_PER_BYTE),
        prep,
    )
    .with_estimate(new.estimate)
    .with_parts(vec![Carrier::Text(extra.clone())], None)
    .with_principal(&b.principal)
    .with_first_page(budget, sheet.page.clone(), book);
    let entry = b.store.keep(entry);
    parse_in_background(&entry, b);

    let page = sheet.page;
    let id = entry.id.clone();
    let mut items = Vec::with_capacity(3);
    items.extend(banner_item(b));
    let mut page_bytes = page.meta.len();
    for p in &page.parts {
        page_bytes += p.body.len();
        items.push(Carrier::Text(extra.clone()).item(p.body.clone()));
    }
    items.push(json!({"type":"text","text":page.meta}));
    let page_meta = walk::page_meta(&id, &page, &*entry);
    obj.insert("content".into(), Value::Array(items));
    if let Some(twin) = twin
        && let Some(sc) = obj.get_mut("structuredContent").map(Value::take)
    {
        let shown = page
            .parts
            .first()
            .map(|p| p.body.clone())
            .unwrap_or_default();
        match structured::shape(sc, &twin, b.has_output_schema(tool), |_| shown.clone()) {
            Some(sc) => {
                obj.insert("structuredContent".into(), sc);
            }
            None => {
                obj.shift_remove("structuredContent");
            }
        }
    }
    walk::put_page_meta(obj, page_meta);
    Some(Shaped {
        result: std::mem::take(result),
        outcome: Outcome::Paged,
        response_id: Some(id),
        bytes_pre,
        bytes: page_bytes as u64,
        tokens: sheet.tokens as u64,
        pre_texts,
        image_tokens: 0,
    })
}

/// A new response's page 1, on an entry of the head alone (`tmp`: its page book holds where
/// page 2 starts).
struct NewPage {
    tmp: Entry,
    /// The total page 1 shows.
    estimate: u64,
    /// Estimated bytes of the whole compact rendering.
    bytes: usize,
}

/// Page 1 of `text`, cut from its head `head`, with the estimate it shows. `None` when the page
/// is not one the whole document has: it fits whole, ends past the head's last whole unit, or
/// ends inside a key (a key is cut only where no other key of its object equals the rest of
/// it, and the head does not hold all the keys of the objects it cuts through).
fn page_of_head(
    b: &Boundary,
    head: head::Head,
    extra: &Map<String, Value>,
    text: &str,
    budget: usize,
    precision: u32,
) -> Option<(NewPage, parts::Sheet)> {
    let enc = &b.encoding;
    let doc = Document::Json(head.value);
    let (rendered, _, sample) =
        mcp_budget_core::shape::form::doc_form_till(&doc, precision, enc, false, budget);
    // Within the budget: the head is the whole of a very compressible text's page 1 or more.
    let sample = sample?;
    let bytes = (rendered.len() as u128 * text.len() as u128 / head.read.max(1) as u128)
        .try_into()
        .unwrap_or(usize::MAX);
    drop(rendered);
    let estimate = mcp_budget_core::shape::form::estimate_one(bytes, sample, budget);
    // A fresh id: ids derived from the content would hash the whole text on the reply path,
    // and telling two texts apart by an unkeyed hash is not safe (the full path's keyed
    // fingerprint would cost more still).
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let serial = SERIAL.fetch_add(1, Ordering::Relaxed).to_le_bytes();
    let id = b
        .store
        .find_or_id(&b.principal, &[b"source", &serial], &|_| false)
        .err()?;
    let tmp = Entry::new(id, vec![doc], vec![budget + 1], budget, precision, bytes)
        .with_estimate(estimate)
        .with_parts(vec![Carrier::Text(extra.clone())], None)
        .with_principal(&b.principal);
    let sheet = parts::page_in_budget(&tmp, 0, budget, enc, &b.names(), true)?;
    let ends_in_head = {
        let book = tmp.book.lock().ok()?;
        matches!(book.positions.get(1),
            Some((0, end)) if end.at_or_before(&head.last) && !end.in_key())
    };
    let new = NewPage {
        tmp,
        estimate,
        bytes,
    };
    (ends_in_head && sheet.page.next_cursor.is_some()).then_some((new, sheet))
}

/// Parses `entry`'s source text and counts its exact total on a thread of its own, right
/// after page 1 (a later page or query that comes first does it itself, or waits for it).
///
/// What that takes beside the text (the tree, by its estimate, and the rendering the count
/// reads: [`Entry::reload_bytes`] + [`Entry::bytes`]; at least [`TREE_FACTOR`] × the text's
/// bytes, the store's measured cost of shaping a text: with the estimate alone, 40 results of
/// 10.5 MB called back to back peaked at 528 MB of RSS where idle + 1.25 × 256 MiB is 381 MB,
/// `scripts/bench_memory_fast.py`) is held against the store's bound for
/// the thread's duration ([`super::store::Store::reserve`]): when calls come faster than
/// their texts are parsed, the next parse waits for room (its text counted in the cache
/// meanwhile, and spilled to disk like any other) instead of adding a tree beside the others.
fn parse_in_background(entry: &Arc<Entry>, b: &Boundary) {
    let (entry, enc, store) = (Arc::clone(entry), b.encoding.clone(), Arc::clone(&b.store));
    let spawned = std::thread::Builder::new()
        .name("mcp-budget-parse".into())
        .spawn(move || {
            let bytes = entry
                .reload_bytes()
                .saturating_add(entry.bytes)
                .max(entry.resident().saturating_mul(TREE_FACTOR));
            let held = store.reserve(Some(&entry.id), bytes);
            let _ = entry.total_tokens(&enc);
            drop(held);
            // The new tree is in the cache now: the bound applies to it at once.
            store.fit();
        });
    if let Err(e) = spawned {
        crate::logging::warn(format_args!(
            "cannot start a parsing thread ({e}): the next page parses the response"
        ));
    }
}
