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

use mcp_budget_core::paginate::Document;
use mcp_budget_core::tokens::Encoding;
use serde_json::{Map, Value};

use super::store::Entry;
use super::walk;
use mcp_budget_core::shape::model::{Part, ToolNames, text_item};
pub(crate) use mcp_budget_core::shape::sheet::{self, Sheet};

/// Page number `k` of `entry` such that its pieces, its meta item and its structuredContent
/// stay within `budget` tokens ([`sheet::page_in_budget`], over [`walk::page`]). `first`:
/// page 1 of the tool's own result (it must carry a structuredContent when the entry has one
/// and a schema may ask for it). `None` when the response has no page `k`.
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
    let mut cut = |asked: usize| walk::page(entry, k, asked, encoding, names);
    sheet::page_in_budget(&mut cut, planned, budget, encoding, first)
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
