//! Helpers shared by the `boundary_*` integration tests.
#![allow(dead_code)]

use mcp_budget_core::tokens::Encoding;
use mcp_budget_proxy::boundary::Boundary;
use mcp_budget_proxy::config::{Settings, WorkerCommand};
use serde_json::{Value, json};

/// The `result` of a recorded JSON-RPC response in `tests/data`.
pub fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["result"].take()
}

/// The jq worker built with these tests (a test binary cannot be one).
pub fn jq_worker() -> WorkerCommand {
    WorkerCommand::new(
        env!("CARGO_BIN_EXE_mcp-budget-jq-worker"),
        Vec::<String>::new(),
    )
}

/// A boundary with `max_tokens` and blobs going to a fresh temp dir (kept alive by the caller).
pub fn boundary(max_tokens: usize, blobs: &tempfile::TempDir) -> Boundary {
    Boundary::new(Settings {
        max_tokens: Some(max_tokens),
        blob_dir: Some(blobs.path().join("blobs")),
        jq_worker: jq_worker(),
        ..Settings::default()
    })
    .unwrap()
}

/// The `text` of every text content item.
pub fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "text")
        .map(|i| i["text"].as_str().unwrap().to_owned())
        .collect()
}

/// Model-visible tokens of a result, counted independently of the proxy: the sum of the
/// cl100k_base counts of its text items, minus the banner (first item) when `banner`.
pub fn visible_tokens(result: &Value, banner: bool) -> usize {
    let t = texts(result);
    let skip = usize::from(banner);
    t.iter()
        .skip(skip)
        .map(|s| Encoding::Cl100kBase.count(s))
        .sum()
}

/// Whether `sc`, or a value inside it, [`carries`] `page` (a page whose body is rooted below
/// `$` is carried inside its ancestors).
pub fn carries_within(sc: &Value, page: &Value) -> bool {
    carries(sc, page)
        || match sc {
            Value::Object(o) => o.values().any(|v| carries_within(v, page)),
            Value::Array(a) => a.iter().any(|v| carries_within(v, page)),
            _ => false,
        }
}

/// Whether `page` (a JSON page of a structuredContent) is carried by `sc`: every member the
/// page shows is in `sc` and carried the same way, arrays element by element (`sc` may hold fewer, not none),
/// scalars equal.
pub fn carries(sc: &Value, page: &Value) -> bool {
    match (sc, page) {
        (Value::Object(s), Value::Object(p)) => p
            .iter()
            .all(|(k, pv)| s.get(k).is_some_and(|sv| carries(sv, pv))),
        (Value::Array(s), Value::Array(p)) => {
            s.len() <= p.len()
                && (!s.is_empty() || p.is_empty())
                && s.iter().zip(p).all(|(sv, pv)| carries(sv, pv))
        }
        _ => sc == page,
    }
}

/// Model-visible tokens of a result by the definition in DESIGN.md, counted with `count`:
/// the `text` items (minus the banner, the first item, when `banner`), the `text` of embedded
/// `resource` items, and `structuredContent` when no text item carries it. A structuredContent
/// that a text item carries (a string member equal to its text, or the page the text item
/// shows completed with more members and fewer array elements: [`carries`]) counts once, as
/// that text item plus whatever more tokens it has.
pub fn model_visible(result: &Value, banner: bool, count: &dyn Fn(&str) -> usize) -> usize {
    let items = result["content"].as_array().cloned().unwrap_or_default();
    let mut texts = Vec::new();
    let mut total = 0;
    for (i, item) in items.iter().enumerate() {
        if banner && i == 0 {
            continue;
        }
        if item["type"] == "text"
            && let Some(t) = item["text"].as_str()
        {
            total += count(t);
            texts.push(t.to_owned());
        }
        if item["type"] == "resource"
            && let Some(t) = item["resource"]["text"].as_str()
        {
            total += count(t);
        }
    }
    let Some(sc) = result.get("structuredContent") else {
        return total;
    };
    if let Value::Object(o) = sc
        && o.values()
            .any(|v| v.as_str().is_some_and(|s| texts.iter().any(|t| t == s)))
    {
        return total;
    }
    let sc_tokens = count(&serde_json::to_string(sc).unwrap());
    let carried = texts
        .iter()
        .filter_map(|t| {
            // Read in the dialect of the page (`NaN`, `Infinity` kept as they came; any depth).
            let v = mcp_budget_core::dialect::parse_unbounded(t.as_bytes())
                .ok()?
                .value;
            carries_within(sc, &v).then(|| sc_tokens.saturating_sub(count(t)))
        })
        .min();
    total + carried.unwrap_or(sc_tokens)
}

/// [`model_visible`] with cl100k_base, no banner.
pub fn visible(result: &Value) -> usize {
    model_visible(result, false, &|t| Encoding::Cl100kBase.count(t))
}

/// The meta item (last content item) parsed, when it is one.
pub fn meta(result: &Value) -> Option<Value> {
    let last = texts(result).pop()?;
    let v: Value = serde_json::from_str(&last).ok()?;
    (v.get("truncated") == Some(&json!(true))).then_some(v)
}

/// A `tools/call` params of `read_more`.
pub fn read_more(cursor: &str) -> Value {
    json!({"name": "read_more", "arguments": {"cursor": cursor}})
}

/// Follows `next_cursor` from `first` to the last page; returns every page (first included).
/// Asserts the budget on each page.
pub fn follow(b: &Boundary, first: Value, budget: usize) -> Vec<Value> {
    let mut pages = vec![first];
    for _ in 0..10_000 {
        let last = pages.last().unwrap();
        let counts: Vec<usize> = texts(last)
            .iter()
            .map(|s| Encoding::Cl100kBase.count(s))
            .collect();
        assert!(
            counts.iter().sum::<usize>() <= budget,
            "page {} over budget {budget}: {counts:?} {:?}",
            pages.len(),
            meta(last)
        );
        let Some(m) = meta(last) else { break };
        // `_meta["mcp-budget/page"].page` counts pages in order (0 = page 1), whatever the
        // cursors' numbers.
        let position = &last["_meta"]["mcp-budget/page"];
        assert_eq!(
            position["page"].as_u64(),
            Some(pages.len() as u64 - 1),
            "page {}: _meta position {position}",
            pages.len()
        );
        let Some(c) = m.get("next_cursor").and_then(Value::as_str) else {
            break;
        };
        let next = b
            .answer_injected(&read_more(c))
            .expect("read_more is injected");
        assert!(next.get("isError").is_none(), "{next}");
        pages.push(next);
    }
    pages
}

/// The isError result's error JSON.
pub fn error_of(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "{result}");
    serde_json::from_str(&texts(result).pop().unwrap()).unwrap()
}
