//! Issue 8 §2 and §3 through the binary: every paged result carries its full position in
//! `result._meta["mcp-budget/page"]`, and a client that reads ONLY that member and the page's
//! content items puts the response back together, whatever its depth, key length or number
//! length; every page of a JSON document is a JSON value within the budget.

use std::path::PathBuf;

use mcp_budget_core::paginate::reassemble_from_wire;
use serde_json::{Map, Value, json};

mod proxy_support;
use proxy_support::{Proxy, visible_tokens};

/// An upstream that answers every request with `{"jsonrpc":"2.0","id":<id>,"result":<the
/// contents of the file argv[1]>}` (a file: results here are up to a few MB).
const FILE_RESULT_SERVER: &str = r#"
import json, sys
result = open(sys.argv[1], encoding="utf-8").read()
for line in sys.stdin:
    m = json.loads(line)
    if "id" in m:
        sys.stdout.write('{"jsonrpc":"2.0","id":' + json.dumps(m["id"]) + ',"result":' + result + '}\n')
        sys.stdout.flush()
"#;

fn call(id: u64, tool: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
    .to_string()
}

fn temp_file(name: &str, contents: &str) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("mcp-budget-paging-{}-{name}", std::process::id()));
    std::fs::write(&path, contents).expect("write the result file");
    path
}

/// A proxy at `budget` in front of [`FILE_RESULT_SERVER`] answering `result` (a JSON object).
fn proxy_for(result: &Value, budget: usize, name: &str) -> (Proxy, PathBuf) {
    let path = temp_file(name, &result.to_string());
    let proxy = Proxy::start(
        &["--max-tokens", &budget.to_string()],
        &[
            "python3",
            "-c",
            FILE_RESULT_SERVER,
            path.to_str().expect("UTF-8 path"),
        ],
    );
    (proxy, path)
}

/// A result with one text item.
fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// Calls tool `t`, then follows `_meta["mcp-budget/page"].next_cursor` with `read_more`
/// (`max_tokens` when given) to the end. Checks on the way: model-visible tokens within
/// `budget`, `_meta` page numbers 0, 1, 2 …, one response id, `next_cursor` absent exactly on
/// the last page; and, when `json_pages`, every page body is a JSON value. Returns the pages'
/// (body as sent, location) pairs, read only from the page items and `_meta`.
fn read_all(
    proxy: &mut Proxy,
    budget: usize,
    max_tokens: Option<usize>,
    json_pages: bool,
) -> Vec<(String, Option<String>)> {
    proxy.send(&call(1, "t", json!({})));
    let mut answer = proxy.recv_json();
    let mut out = Vec::new();
    let mut id: Option<String> = None;
    for k in 0u64.. {
        assert!(k < 20_000, "cursors do not end");
        let result = &answer["result"];
        let used = visible_tokens(result);
        let limit = if k == 0 {
            budget
        } else {
            max_tokens.unwrap_or(budget)
        };
        assert!(used <= limit, "page {k}: {used} tokens > {limit}");
        let items = result["content"].as_array().expect("content items");
        let Some(pm) = result["_meta"].get("mcp-budget/page") else {
            // Not paged: the whole result, one page.
            assert_eq!(k, 0, "a later page without _meta: {result}");
            out.push((items[0]["text"].as_str().unwrap_or("").to_owned(), None));
            return out;
        };
        assert_eq!(pm["page"], json!(k), "{pm}");
        let rid = pm["response_id"].as_str().expect("response_id").to_owned();
        assert_eq!(id.get_or_insert_with(|| rid.clone()), &rid);
        // Page 1 may carry an estimate of the total instead (a document over the budget: the
        // exact count runs after it is sent); every later page the exact count.
        let estimate = pm["total_tokens_estimate"].as_u64().filter(|_| k == 0);
        assert!(pm["total_tokens"].as_u64().or(estimate).is_some(), "{pm}");
        // The page: every content item but the last (the meta item).
        assert_eq!(items.len(), 2, "one text item and the meta item: {result}");
        let body = items[0]["text"].as_str().expect("a text item").to_owned();
        if json_pages {
            let v: Result<Value, _> = serde_json::from_str(&body);
            assert!(v.is_ok(), "page {k} is not JSON: {:.120}", body);
        }
        let location = pm["location"].as_str().expect("location").to_owned();
        out.push((body, Some(location)));
        let Some(cursor) = pm["next_cursor"].as_str() else {
            return out;
        };
        let mut args = json!({"cursor": cursor});
        if let Some(m) = max_tokens {
            args["max_tokens"] = json!(m);
        }
        proxy.send(&call(k + 2, "read_more", args));
        answer = proxy.recv_json();
        assert_eq!(answer["id"], json!(k + 2), "{answer}");
        assert!(answer["result"]["isError"].is_null(), "{answer}");
    }
    out
}

/// The JSON value the pages hold, merged from their bodies and `_meta` locations only.
fn reassemble(pages: &[(String, Option<String>)]) -> Value {
    let wire: Vec<(Value, Option<&str>)> = pages
        .iter()
        .map(|(b, l)| (serde_json::from_str(b).expect("JSON page"), l.as_deref()))
        .collect();
    reassemble_from_wire(&wire).expect("the pages merge by their _meta locations")
}

/// `[{"name":"d","type":"directory","children":[…]}]`: each directory holds two
/// subdirectories (first and last) around a hundred files, `depth` levels down.
fn directory_tree(depth: usize) -> Value {
    fn dir(name: String, depth: usize) -> Value {
        let mut children = Vec::new();
        if depth > 1 {
            children.push(dir(format!("{name}_a"), depth - 1));
        }
        for i in 0..100 {
            children.push(json!({"name": format!("{name}_file_{i:03}.txt"), "type": "file"}));
        }
        if depth > 1 {
            children.push(dir(format!("{name}_z"), depth - 1));
        }
        json!({"name": name, "type": "directory", "children": children})
    }
    json!([dir("d".into(), depth)])
}

/// Was: a 7-level directory tree (~1 MB pretty JSON) at 500 had 512 of 513 pages with an
/// abbreviated `shown` the merge rule refuses (314 of 405 at 600). Now every page carries its
/// full location in `_meta`, and the pages merge back into the tree.
#[test]
fn a_seven_level_tree_reassembles_from_meta_locations_at_500_and_600() {
    let tree = directory_tree(7);
    let pretty = serde_json::to_string_pretty(&tree).expect("serialize");
    assert!(pretty.len() > 800_000, "{} bytes", pretty.len());
    for budget in [500, 600] {
        let (mut proxy, path) = proxy_for(&text_result(&pretty), budget, "tree");
        let pages = read_all(&mut proxy, budget, None, true);
        let _ = std::fs::remove_file(path);
        assert!(pages.len() > 300, "{} pages at {budget}", pages.len());
        assert!(
            pages
                .iter()
                .all(|(_, l)| !l.as_deref().unwrap_or("").contains('…'))
        );
        assert_eq!(reassemble(&pages), tree, "at {budget}");
    }
}

/// Was: objects nested 100–127 levels deep failed to merge at budget 2,000.
#[test]
fn objects_nested_100_to_127_levels_reassemble_at_2000() {
    for depth in [100, 127] {
        // `depth` levels in all (serde_json, like the proxy, parses at most 128).
        let mut v = json!({"leaf": "word ".repeat(6000)});
        for i in 1..depth {
            v = json!({"name": format!("level {i}"), "kind": "dir", "child": v});
        }
        let (mut proxy, path) = proxy_for(&text_result(&v.to_string()), 2000, "deep");
        let pages = read_all(&mut proxy, 2000, None, true);
        let _ = std::fs::remove_file(path);
        assert!(pages.len() > 3, "{} pages", pages.len());
        assert_eq!(reassemble(&pages), v, "depth {depth}");
    }
}

/// Was: `{"<20,000-char key>":1,"other":[0,…,1999]}` and a 5,000-digit number at 500 were
/// paged as raw text (`line 1 of 1 (chars …)`), no page valid JSON. Now the key and the number
/// are cut like long strings: every page is JSON and the pages merge back exactly.
#[test]
fn a_long_key_and_a_long_number_are_cut_into_json_pages_at_500() {
    let mut m = Map::new();
    m.insert("key ".repeat(5000), json!(1));
    m.insert("other".into(), json!((0..2000).collect::<Vec<_>>()));
    let digits: String = (0..5000)
        .map(|i| char::from(b'1' + (i % 9) as u8))
        .collect();
    let number: Value = serde_json::from_str(&digits).expect("a number");
    let docs = [
        Value::Object(m),
        json!([number.clone()]),
        json!({"id": 7, "n": number, "after": [1, 2, 3]}),
    ];
    for (n, doc) in docs.iter().enumerate() {
        let (mut proxy, path) = proxy_for(&text_result(&doc.to_string()), 500, "oversized");
        let pages = read_all(&mut proxy, 500, None, true);
        let _ = std::fs::remove_file(path);
        assert!(pages.len() > 3, "doc {n}: {} pages", pages.len());
        assert_eq!(&reassemble(&pages), doc, "doc {n}");
    }
}

/// Was: with the proxy at 2,000, a 2,000-character key and `read_more {"max_tokens":300}` gave
/// pages of 1,088–1,121 tokens. Now every page after the first is within 300.
#[test]
fn read_more_max_tokens_below_a_long_key_is_honoured() {
    let mut m = Map::new();
    m.insert("key ".repeat(500), json!((0..1500).collect::<Vec<_>>()));
    m.insert("other".into(), json!("x".repeat(2000)));
    let doc = Value::Object(m);
    let (mut proxy, path) = proxy_for(&text_result(&doc.to_string()), 2000, "maxtokens");
    let pages = read_all(&mut proxy, 2000, Some(300), true);
    let _ = std::fs::remove_file(path);
    assert!(pages.len() > 8, "{} pages", pages.len());
    assert_eq!(reassemble(&pages), doc);
}

/// The proxy adds its member to an upstream `_meta` object and keeps the others.
#[test]
fn upstream_meta_members_are_kept_beside_the_page_position() {
    let rows: Vec<Value> = (0..400)
        .map(|i| json!({"id": i, "name": format!("row {i}")}))
        .collect();
    let result = json!({
        "content": [{"type": "text", "text": Value::Array(rows.clone()).to_string()}],
        "_meta": {"trace": "abc", "n": 1}
    });
    let (mut proxy, path) = proxy_for(&result, 500, "meta");
    proxy.send(&call(1, "t", json!({})));
    let answer = proxy.recv_json();
    let _ = std::fs::remove_file(path);
    let meta = &answer["result"]["_meta"];
    assert_eq!(meta["trace"], "abc", "{meta}");
    assert_eq!(meta["n"], 1);
    let pm = &meta["mcp-budget/page"];
    assert_eq!(pm["page"], 0);
    let n = serde_json::from_str::<Value>(answer["result"]["content"][0]["text"].as_str().unwrap())
        .unwrap()
        .as_array()
        .unwrap()
        .len();
    assert_eq!(pm["location"], json!(format!("$[0:{n}]")));
    assert_eq!(
        pm["next_cursor"],
        json!(format!("{}.1", pm["response_id"].as_str().unwrap()))
    );
}
