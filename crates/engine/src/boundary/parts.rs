//! The model-visible parts of a result and how each goes back on the wire.
//!
//! **Model-visible tokens** of a result (DESIGN.md, "Wire contract of the proxy") are the
//! token counts of its `text` content items, plus the `text` of its embedded `resource` items
//! (`{"type":"resource","resource":{"uri":…,"mimeType":…,"text":…}}`), plus its
//! `structuredContent` when no text item carries it. Each of those is one document of the
//! response, paged in order as one sequence ([`super::walk`]); a [`Carrier`] tells how a piece
//! of each document goes out:
//! - a `text` item: a text item with the piece, its other members (`annotations`, `_meta`)
//!   kept on every page;
//! - an embedded resource's text: a `resource` item whose `resource.text` is the piece, every
//!   other member (`uri`, `mimeType`, `annotations`, `_meta` …) kept on every page;
//! - a structuredContent no text item carries: a text item with the piece (the MCP spec: a
//!   tool returning structured content SHOULD also return it serialized in a text item), and
//!   the result's `structuredContent` is that page made valid ([`mcp_budget_core::shape::structured::Plan`]).
//!   When the whole result fits, the structuredContent goes out whole and no text item is
//!   added.
//!
//! The structuredContent of a page counts once, as the text item that carries it, plus the
//! tokens of whatever it holds beyond that text (members filled in to keep it valid against
//! the outputSchema). [`page_in_budget`] keeps that sum within the budget by asking the pager
//! for a smaller page when the filling does not fit.

use mcp_budget_core::paginate::{Document, PathStep, Position};
use mcp_budget_core::tokens::Encoding;
use serde_json::{Map, Value};

use super::store::Entry;
use super::walk;
use mcp_budget_core::shape::model::{Part, SeqPage, ToolNames, text_item};
use mcp_budget_core::shape::structured::{Plan, ScPage};

/// A page of a cached response with its structuredContent, within the budget.
#[derive(Debug)]
pub(crate) struct Sheet {
    /// The pieces of documents and the meta item.
    pub(crate) page: SeqPage,
    /// The page's structuredContent (`value: None`: none).
    pub(crate) sc: ScPage,
    /// Model-visible tokens: the page's (pieces and meta) plus `sc.extra`.
    pub(crate) tokens: usize,
}

/// How many smaller pages are tried before the structuredContent gives up its filling.
const TRIES: usize = 8;

/// Page number `k` of `entry` such that its pieces, its meta item and its structuredContent
/// (see the module docs) stay within `budget` tokens. `first`: page 1 of the tool's own
/// result (it must carry a structuredContent when the entry has one and a schema may ask for
/// it).
///
/// The structuredContent is filled with the members the outputSchema requires (every member
/// when the schema is not known). When that does not fit, smaller pages are tried; when none
/// fits (or the filling alone passes the budget, which smaller pages do not help), the value's
/// arrays are cut further (it then shows fewer elements than the text item; cut below the page
/// it counts in full, and the page beside it is resized to what is left). Failing that: when
/// the tool declares an outputSchema, page 1 keeps the valid value over the budget (validity
/// over budget, the one exception: only when the required members alone, bare, cannot fit
/// beside the page) and later pages carry none; otherwise the page carries the page value
/// itself (no filling, a twin of its text item), or none.
///
/// Work: at most `TRIES + 2` pages are laid out, each `O(page + depth · log depth)` in the
/// core pager, and the structuredContent is completed and cut in `O(value · log cuts)`
/// ([`mcp_budget_core::shape::structured::shrink_to`]) for each.
///
/// `None` when the response has no page `k`.
pub(crate) fn page_in_budget(
    entry: &Entry,
    k: usize,
    budget: usize,
    encoding: &Encoding,
    names: &ToolNames,
    first: bool,
) -> Option<Sheet> {
    // The structuredContent's value, from the cached documents (a reload when the store let
    // them go: `walk::page` reads them the same way).
    let docs = entry.structured.as_ref().and_then(|_| entry.docs());
    let planned = entry
        .structured
        .as_ref()
        .zip(docs.as_deref())
        .and_then(|(plan, docs)| Some((plan, plan.orig(docs)?)));
    let Some((plan, orig)) = planned else {
        let page = walk::page(entry, k, budget, encoding, names)?;
        let tokens = page.tokens;
        return Some(Sheet {
            page,
            sc: ScPage::NONE,
            tokens,
        });
    };
    let floor = mcp_budget_core::MIN_BUDGET_TOKENS;
    let mut asked = budget;
    // The page at the whole budget (the first tried).
    let mut whole: Option<SeqPage> = None;
    for attempt in 0..TRIES {
        let page = walk::page(entry, k, asked, encoding, names)?;
        let part = plan.doc.and_then(|d| part_of(&page.parts, d));
        let sc = plan.for_page(orig, part, first, true, None, encoding);
        let tokens = page.tokens + sc.extra;
        if tokens <= budget {
            return Some(Sheet { page, sc, tokens });
        }
        // Smaller pages fill in no less (fewer members shown, as many required): a filling
        // past the budget alone fits beside none of them.
        let hopeless = sc.extra >= budget;
        if asked <= floor || attempt + 1 == TRIES || hopeless {
            let whole = whole.unwrap_or_else(|| page.clone());
            return Some(last_resort(
                entry, k, budget, encoding, names, first, plan, orig, page, whole,
            ));
        }
        let excess = tokens - budget;
        asked = if attempt == 0 {
            // The filling is at most about the reduced value: leave room for it at once.
            let fill =
                encoding.count(&serde_json::to_string(&plan.reduced(orig)).unwrap_or_default());
            asked
                .saturating_sub(excess + 4)
                .min(budget.saturating_sub(fill + 16))
        } else {
            // A smaller page may need more filling: step down faster.
            asked.saturating_sub(2 * excess + 8)
        }
        .max(floor);
        if attempt == 0 {
            whole = Some(page);
        }
    }
    None
}

/// [`page_in_budget`] when no page with its filled structuredContent fits: `page` is the
/// smallest page tried, `whole` the page at the whole budget.
#[allow(clippy::too_many_arguments)]
fn last_resort(
    entry: &Entry,
    k: usize,
    budget: usize,
    encoding: &Encoding,
    names: &ToolNames,
    first: bool,
    plan: &Plan,
    orig: &Value,
    page: SeqPage,
    whole: SeqPage,
) -> Sheet {
    let floor = mcp_budget_core::MIN_BUDGET_TOKENS;
    // The value cut to the room beside `page`.
    let cut = |page: &SeqPage| {
        let room = budget.saturating_sub(page.tokens);
        let part = plan.doc.and_then(|d| part_of(&page.parts, d));
        plan.for_page(orig, part, first, true, Some(room), encoding)
    };
    let sc = cut(&page);
    if !sc.carried && sc.value.is_some() {
        // Cut below the page, it counts in full whatever the page: the page takes what is
        // left beside it (larger, or smaller when it did not fit).
        let asked = budget.saturating_sub(sc.extra).max(floor);
        if let Some(resized) = walk::page(entry, k, asked, encoding, names) {
            let sc2 = cut(&resized);
            let tokens = resized.tokens + sc2.extra;
            let fits_before = page.tokens + sc.extra <= budget;
            if tokens <= budget && (!fits_before || resized.tokens > page.tokens) {
                return Sheet {
                    page: resized,
                    sc: sc2,
                    tokens,
                };
            }
        }
    }
    let tokens = page.tokens + sc.extra;
    if tokens <= budget || (first && plan.declared && plan.valid) {
        // Within the budget; or page 1 of a tool that declares an outputSchema, which keeps a
        // valid value over it (the documented exception).
        return Sheet { page, sc, tokens };
    }
    // Nothing valid fits: the page at the whole budget, with the page value itself when no
    // schema is known to ask for validity (a twin of its text item: no extra tokens), else
    // none (later pages: `read_more` declares no outputSchema).
    let sc = if !plan.valid || (first && !plan.declared) {
        let part = plan.doc.and_then(|d| part_of(&whole.parts, d));
        plan.for_page(orig, part, first, false, None, encoding)
    } else {
        ScPage::NONE
    };
    let sc = if whole.tokens + sc.extra > budget {
        ScPage::NONE
    } else {
        sc
    };
    let tokens = whole.tokens + sc.extra;
    Sheet {
        page: whole,
        sc,
        tokens,
    }
}

/// The body, start and root of the part of document `doc` on a page.
fn part_of(parts: &[Part], doc: usize) -> Option<(&str, &Position, &[PathStep])> {
    parts
        .iter()
        .find(|p| p.item == doc)
        .map(|p| (p.body.as_str(), &p.start, p.root.as_slice()))
}

/// The content items of a later page (`read_more`): each piece in its carrier, in order.
pub(crate) fn page_items(entry: &Entry, parts: Vec<Part>) -> Vec<Value> {
    parts
        .into_iter()
        .map(|p| match entry.carriers.get(p.item) {
            Some(c) => c.item(p.body),
            None => text_item(p.body, &Map::new()),
        })
        .collect()
}

/// The document of a text (an embedded resource's, or a text item's): JSON when it is a
/// JSON object or array, else the text; the text itself is not copied when it is JSON. JSON
/// as Python servers write it counts ([`mcp_budget_core::dialect`]): lone surrogate escapes
/// become U+FFFD, `NaN`/`Infinity`/`-Infinity` are kept and written back as they came.
pub(crate) fn document_of(text: &str) -> Document {
    match mcp_budget_core::dialect::json_document(text) {
        Some(v) => Document::Json(v),
        None => Document::Text(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_budget_core::shape::model::{Carrier, take_resource_text};
    use serde_json::json;

    #[test]
    fn resource_text_is_taken_and_put_back_in_its_wrapper() {
        let item = json!({"type": "resource", "resource": {"uri": "file:///x.go",
            "mimeType": "text/plain", "text": "package main"}, "annotations": {"priority": 1}});
        let (text, rest) = take_resource_text(item.clone()).unwrap();
        assert_eq!(text, "package main");
        let c = Carrier::Resource(rest);
        assert_eq!(c.item("package main".into()), item);
        let piece = c.item("pack".into());
        assert_eq!(piece["resource"]["text"], "pack");
        assert_eq!(piece["resource"]["uri"], "file:///x.go");
        assert_eq!(piece["annotations"]["priority"], 1);
        let blob = json!({"type": "resource", "resource": {"uri": "u", "blob": "AAAA"}});
        assert_eq!(take_resource_text(blob.clone()), Err(blob));
        let link = json!({"type": "resource_link", "uri": "u", "name": "n"});
        assert_eq!(take_resource_text(link.clone()), Err(link));
    }

    #[test]
    fn text_carriers_keep_their_members() {
        let mut extra = Map::new();
        extra.insert("annotations".into(), json!({"audience": ["user"]}));
        assert_eq!(
            Carrier::Text(extra).item("hi".into()),
            json!({"type": "text", "text": "hi", "annotations": {"audience": ["user"]}})
        );
        assert_eq!(
            Carrier::Structured.item("{}".into()),
            json!({"type": "text", "text": "{}"})
        );
    }
}
