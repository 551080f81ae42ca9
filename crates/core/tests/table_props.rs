//! Invariants of the table form (issue 12 §2): `decode(encode(v)) == v` for any JSON value
//! (strings with separators, newlines, quotes, unicode; numbers as spelled; keys missing from
//! rows; nested arrays of objects), and pages of tabled values within the budget, in the
//! table form, reassembling to the document. Cases come from `PROPTEST_CASES`.

use mcp_budget_core::paginate::{
    Document, Page, PageInfo, Position, meta, reassemble, reassemble_from_wire,
};
use mcp_budget_core::table::{self, TablePager, When};
use mcp_budget_core::tokens::Encoding;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const PRECISION: u32 = 9;

// ---------------------------------------------------------------- generators

/// Pieces of strings: the separators of the form, escapes, unicode, number and keyword look-alikes.
const PIECES: &[&str] = &[
    "alpha", "b", " ", ",", ":", "\"", "\\", "\n", "\r\n", "\t", "\u{1}", "[", "]", "{", "}",
    "[2]{a}:", "true", "null", "NaN", "Infinity", "-", "7", "0.5", "1e5", "东京", "🚀", "é",
    "\u{2028}", "a,b", "x y",
];

fn string_value() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..5).prop_map(|v| v.concat())
}

const KEYS: &[&str] = &[
    "name", "type", "children", "id", "a", "a b", "", "k,1", "{x}", "[0]", "a:b", "\"q\"", " lead",
    "東京", "true", "7",
];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS).prop_map(str::to_owned)
}

/// Number spellings kept as they are held (`arbitrary_precision`).
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(|i| json!(i)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        prop::sample::select(
            &[
                "1.50",
                "-0",
                "1e5",
                "2E-3",
                "12345678901234567890",
                "0.30000000000000004",
                "-1.0e+10",
            ][..]
        )
        .prop_map(|s| serde_json::from_str(s).expect("a JSON number")),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        string_value().prop_map(Value::String),
    ]
}

/// Objects over a few keys (so arrays of them are often tables, with keys missing).
fn object(inner: impl Strategy<Value = Value> + Clone) -> impl Strategy<Value = Value> {
    prop::collection::vec((key(), inner), 0..5)
        .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>()))
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(5, 120, 12, |inner| {
        prop_oneof![
            1 => prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            1 => object(inner.clone()),
            // Arrays of objects: tables, with sub-tables inside.
            3 => prop::collection::vec(object(inner), 1..8).prop_map(Value::Array),
        ]
    })
}

/// A directory-tree-like value: names with separators, `children` only on directories.
fn tree(depth: u32) -> BoxedStrategy<Value> {
    let file = (string_value(), prop::sample::select(&["file", "link"][..]))
        .prop_map(|(n, t)| json!({"name": n, "type": t}));
    if depth == 0 {
        return file.boxed();
    }
    let dir = (string_value(), prop::collection::vec(tree(depth - 1), 0..6))
        .prop_map(|(n, c)| json!({"name": n, "type": "directory", "children": c}));
    prop_oneof![2 => file, 1 => dir].boxed()
}

fn tree_doc() -> impl Strategy<Value = Value> {
    prop::collection::vec(tree(3), 1..40).prop_map(Value::Array)
}

// ---------------------------------------------------------------- helpers

fn same(a: &Value, b: &Value) -> bool {
    // Key order and number spellings included.
    serde_json::to_string(a).ok() == serde_json::to_string(b).ok()
}

fn render_meta(index: usize, info: &PageInfo<'_>) -> String {
    let m = meta::build_meta(
        info,
        "3fa9c2e1b07d",
        index as u64 + 1,
        104_213,
        meta::HintTools::default(),
    );
    serde_json::to_string(&m).unwrap_or_default()
}

fn all_pages(doc: &Document, budget: usize) -> Vec<Page> {
    let pager = TablePager::new(Encoding::Cl100kBase, budget, PRECISION);
    let mut pages: Vec<Page> = Vec::new();
    let mut at = Position::start();
    loop {
        let index = pages.len();
        let page = pager
            .page(doc, &at, &mut |info| render_meta(index, info))
            .expect("positions from the pager are in range");
        let next = page.next.clone();
        pages.push(page);
        assert!(pages.len() < 10_000, "paging does not end");
        match next {
            Some(n) => {
                assert_ne!(n, at, "a page made no progress");
                at = n;
            }
            None => return pages,
        }
    }
}

/// Checks every page: within budget (counted here on what goes out), body decodes to the
/// page's value; then the wire merge of decoded bodies gives the document back.
fn check_pages(doc: &Document, budget: usize) -> Result<usize, TestCaseError> {
    let enc = Encoding::Cl100kBase;
    let pages = all_pages(doc, budget);
    let mut tables = 0;
    for p in &pages {
        let counted = enc.count(&p.body) + p.meta.as_deref().map_or(0, |m| enc.count(m));
        prop_assert_eq!(counted, p.tokens);
        prop_assert!(
            p.oversized || p.tokens <= budget,
            "page over budget: {}",
            p.tokens
        );
        let decoded = table::decode(&p.body).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(same(&decoded, p.value.as_ref().expect("a JSON page")));
        if serde_json::from_str::<Value>(&p.body).is_err() {
            tables += 1;
        }
    }
    let whole: Value = serde_json::from_str(&doc.render(PRECISION)).expect("JSON");
    let wire: Vec<(Value, Option<&str>)> = pages
        .iter()
        .map(|p| {
            let v = table::decode(&p.body).expect("decodes");
            (v, p.meta.as_ref().map(|_| p.location.as_str()))
        })
        .collect();
    prop_assert_eq!(reassemble_from_wire(&wire), Some(whole.clone()));
    prop_assert_eq!(reassemble(&pages), Some(Document::Json(whole)));
    Ok(tables)
}

// ---------------------------------------------------------------- properties

proptest! {
    #[test]
    fn decode_inverts_encode_always(v in json_value()) {
        let e = table::encode(&v, When::Always);
        let back = table::decode(&e.text).map_err(|err| TestCaseError::fail(format!("{err}: {:?}", e.text)))?;
        prop_assert!(same(&back, &v), "{:?}", e.text);
    }

    #[test]
    fn decode_inverts_encode_auto(v in json_value()) {
        let enc = Encoding::Cl100kBase;
        let e = table::encode(&v, When::Saves { encoding: &enc, percent: 10 });
        prop_assert!(same(&table::decode(&e.text).expect("decodes"), &v), "{:?}", e.text);
        if e.tables == 0 {
            prop_assert_eq!(e.text, serde_json::to_string(&v).unwrap_or_default());
        }
    }

    #[test]
    fn trees_round_trip_and_are_tables(v in tree_doc()) {
        let e = table::encode(&v, When::Always);
        prop_assert!(e.tables >= 1);
        prop_assert!(same(&table::decode(&e.text).expect("decodes"), &v), "{:?}", e.text);
    }

    #[test]
    fn pages_of_tabled_trees_fit_and_reassemble(v in tree_doc(), budget in 256usize..700) {
        check_pages(&Document::Json(v), budget)?;
    }

    #[test]
    fn pages_of_any_value_fit_and_reassemble(v in json_value(), budget in 256usize..600) {
        let v = match v { v @ (Value::Array(_) | Value::Object(_)) => v, other => json!([other]) };
        check_pages(&Document::Json(v), budget)?;
    }
}

/// A long tree is cut into several pages, each holding a table of its own rows.
#[test]
fn pages_of_a_long_tree_are_tables() {
    let rows: Vec<Value> = (0..600)
        .map(|i| {
            if i % 10 == 0 {
                json!({"name": format!("dir{i}"), "type": "directory",
                       "children": [{"name": "a,b", "type": "file"}, {"name": "README", "type": "file"}]})
            } else {
                json!({"name": format!("file{i}.txt"), "type": "file"})
            }
        })
        .collect();
    let doc = Document::Json(Value::Array(rows));
    let pages = all_pages(&doc, 1_000);
    assert!(pages.len() > 2);
    for p in &pages {
        assert!(p.tokens <= 1_000);
        assert!(
            p.body.starts_with('['),
            "{}",
            &p.body[..40.min(p.body.len())]
        );
        assert!(
            p.body.contains("]{name,type"),
            "{}",
            &p.body[..80.min(p.body.len())]
        );
    }
    assert!(check_pages(&doc, 1_000).is_ok());
}
