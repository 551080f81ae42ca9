//! Pages as a client sees them on the wire, and putting them back together.

use mcp_budget_core::paginate::{Document, reassemble_from_wire};
use serde_json::Value;

/// The `text` of every `text` content item of a `tools/call` result, in order.
pub(crate) fn text_items(result: &Value) -> Vec<&str> {
    result["content"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|i| i["type"] == "text")
                .filter_map(|i| i["text"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

/// One page of a shaped result: its body (the first text item) and its meta item, if any.
#[derive(Debug, Clone)]
pub(crate) struct WirePage {
    /// The first text item: a page of the document.
    pub(crate) body: String,
    /// The meta item's text (the last text item, a JSON object with `"truncated":true`).
    pub(crate) meta: Option<String>,
    meta_value: Option<Value>,
}

impl WirePage {
    /// Splits a `tools/call` result into body and meta item.
    pub(crate) fn from_result(result: &Value) -> WirePage {
        let texts = text_items(result);
        let meta_value = texts
            .last()
            .filter(|_| texts.len() > 1)
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .filter(|m| m["truncated"] == true || m["elided"] == true);
        let meta = meta_value
            .as_ref()
            .and_then(|_| texts.last().map(|t| (*t).to_owned()));
        WirePage {
            body: texts.first().map(|t| (*t).to_owned()).unwrap_or_default(),
            meta,
            meta_value,
        }
    }

    /// The cursor of the next page, when there is one.
    pub(crate) fn next_cursor(&self) -> Option<String> {
        self.meta_value.as_ref()?["next_cursor"]
            .as_str()
            .map(str::to_owned)
    }

    /// The `response_id` of the cached full response, when the result was shortened.
    pub(crate) fn response_id(&self) -> Option<String> {
        self.meta_value.as_ref()?["response_id"]
            .as_str()
            .map(str::to_owned)
    }

    fn shown(&self) -> Option<&str> {
        self.meta_value.as_ref()?["shown"].as_str()
    }
}

/// Puts the pages of one result back together: JSON pages by the merge rule of
/// `mcp_budget_core::paginate` (driven by each meta's `shown`), text pages by concatenation.
///
/// # Errors
/// A message when JSON pages do not fit together (or a page is not JSON).
pub(crate) fn reassemble(pages: &[WirePage]) -> Result<Document, String> {
    let Some(first) = pages.first() else {
        return Err("no pages".into());
    };
    let Document::Json(_) = Document::from_text(first.body.clone()) else {
        return Ok(Document::Text(
            pages.iter().map(|p| p.body.as_str()).collect(),
        ));
    };
    let mut values = Vec::with_capacity(pages.len());
    for (n, page) in pages.iter().enumerate() {
        let value: Value = serde_json::from_str(&page.body)
            .map_err(|e| format!("page {} is not valid JSON: {e}", n + 1))?;
        values.push((value, page.shown()));
    }
    reassemble_from_wire(&values)
        .map(Document::Json)
        .ok_or_else(|| "the pages do not fit together by the merge rule".into())
}

/// Compares `want` (the direct value) with `got` (reassembled), where `got` may hold the
/// proxy's file descriptions (`{"offloaded":…,"path":…}`) in place of base64 strings: each one
/// must name a file whose bytes are the string's decoded payload. Returns how many files were
/// read.
///
/// # Errors
/// A message naming the first place where the two differ.
pub(crate) fn equal_reading_files(want: &Value, got: &Value) -> Result<usize, String> {
    match (want, got) {
        (Value::String(s), Value::Object(o)) if o.contains_key("offloaded") => {
            let path = o
                .get("path")
                .and_then(Value::as_str)
                .ok_or("an offload without a path")?;
            let file = std::fs::read(path).map_err(|e| format!("reading {path}: {e}"))?;
            let decoded = mcp_budget_core::blob::decode(s).map_err(|e| e.to_string())?;
            if decoded.bytes == file {
                Ok(1)
            } else {
                Err(format!("{path} holds other bytes"))
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .map(|(x, y)| equal_reading_files(x, y))
            .sum(),
        (Value::Object(a), Value::Object(b)) if a.len() == b.len() => a
            .iter()
            .map(|(k, x)| {
                equal_reading_files(x, b.get(k).ok_or_else(|| format!("{k} is missing"))?)
            })
            .sum(),
        (a, b) if a == b => Ok(0),
        _ => Err("the values differ".into()),
    }
}

#[cfg(test)]
mod tests {
    use mcp_budget_core::paginate::meta::{HintTools, build_meta};
    use mcp_budget_core::paginate::{Pager, Position};
    use mcp_budget_core::tokens::Encoding;
    use serde_json::json;

    use super::*;

    /// Pages as the proxy would put them on the wire: `{content:[page, meta]}`.
    fn wire_pages(doc: &Document, budget: usize) -> Vec<WirePage> {
        let pager = Pager::new(Encoding::Cl100kBase, budget, 9);
        let mut at = Position::start();
        let mut out = Vec::new();
        loop {
            let index = out.len() as u64;
            let page = pager
                .page(doc, &at, &mut |info| {
                    let meta = build_meta(info, "0123456789ab", index + 1, 1, HintTools::default());
                    serde_json::to_string(&meta).unwrap_or_default()
                })
                .expect("page");
            let mut content = vec![json!({"type": "text", "text": page.body})];
            if let Some(m) = &page.meta {
                content.push(json!({"type": "text", "text": m}));
            }
            out.push(WirePage::from_result(&json!({ "content": content })));
            match page.next {
                Some(n) => at = n,
                None => return out,
            }
        }
    }

    #[test]
    fn json_pages_reassemble_from_the_wire() {
        let tree: Vec<Value> = (0..30)
            .map(|d| {
                json!({"name": format!("dir{d}"), "type": "directory",
                       "children": (0..40).map(|f| json!({"name": format!("f{f}.rs"), "type": "file",
                                                          "size": f as f64 * 1.234_567_890_123}))
                                          .collect::<Vec<_>>()})
            })
            .collect();
        let doc = Document::Json(Value::Array(tree));
        let pages = wire_pages(&doc, 400);
        assert!(pages.len() > 5, "{} pages", pages.len());
        assert!(
            pages[..pages.len() - 1]
                .iter()
                .all(|p| p.next_cursor().is_some())
        );
        let back = reassemble(&pages).expect("reassemble");
        assert_eq!(back.render(9), doc.render(9));
    }

    #[test]
    fn text_pages_concatenate_byte_exact() {
        let text: String = (0..2000)
            .map(|i| format!("line {i}\r\n"))
            .collect::<String>()
            + &"x".repeat(9000);
        let doc = Document::Text(text.clone());
        let pages = wire_pages(&doc, 300);
        assert!(pages.len() > 3);
        assert_eq!(
            reassemble(&pages).expect("reassemble"),
            Document::Text(text)
        );
    }
}
