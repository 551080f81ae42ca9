//! Page 1 from the head of a long JSON text ([`super::early`]) is the page the full path
//! writes, and every page after it too; texts the head cannot speak for take the full path.

use mcp_budget_core::head::halves::Halves;
use mcp_budget_core::paginate::Document;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::call;
use super::early;
use super::parts;
use super::state::Boundary;
use super::store::Entry;
use super::structured_cache_tests::pages;
use crate::config::Settings;

fn boundary(dir: &tempfile::TempDir, budget: usize) -> Boundary {
    Boundary::new(Settings {
        max_tokens: Some(budget),
        cache_dir: Some(dir.path().join("cache")),
        blob_dir: Some(dir.path().join("blobs")),
        ..Settings::default()
    })
    .unwrap()
}

fn result_of(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// As server-filesystem's `directory_tree` answers: the text again in structuredContent.
fn with_twin(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "structuredContent": {"content": text}})
}

/// The document a client reassembles from page 1 and the pages after it.
fn reassembled(first: &Value, later: &[Value]) -> Value {
    let wire: Vec<(Value, Option<&str>)> = std::iter::once(first)
        .chain(later)
        .map(|p| {
            let body = p["content"][0]["text"].as_str().unwrap();
            (
                serde_json::from_str(body).unwrap(),
                p["_meta"]["mcp-budget/page"]["location"].as_str(),
            )
        })
        .collect();
    mcp_budget_core::paginate::reassemble_from_wire(&wire).expect("pages merge")
}

/// Shapes `text` by the head and by the full path. When the head was taken: its page 1 is
/// the page the whole document gives with the same response id and estimate (computed again
/// on the parsed entry), it ends where that one does, and the pages reassemble to what the
/// full path's pages do. Returns whether the head was taken.
fn same_pages(text: &str, budget: usize) -> bool {
    same_pages_read(text, budget, true)
}

/// [`same_pages`]; with `read_all` false, the pages after page 1 are not read: the entry's
/// parsed document is compared with the full path's instead (the same code pages both from
/// the same start).
fn same_pages_read(text: &str, budget: usize, read_all: bool) -> bool {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (b1, b2) = (boundary(&d1, budget), boundary(&d2, budget));
    let mut r = result_of(text);
    let Some(shaped) = early::shape(&b1, "t", &mut r, 0) else {
        assert_eq!(r, result_of(text), "a refused result is left as it was");
        return false;
    };
    let first = shaped.result;
    let meta = &first["_meta"]["mcp-budget/page"];
    let id = meta["response_id"].as_str().unwrap();
    let entry = b1.store.memory().unwrap().get(id).unwrap();
    let docs = entry.docs().unwrap();
    let whole = Entry::new(
        id.to_owned(),
        (*docs).clone(),
        vec![budget + 1],
        budget,
        entry.precision,
        entry.bytes,
    )
    .with_estimate(entry.estimate())
    .with_parts(entry.carriers.clone(), None);
    let sheet = parts::page_in_budget(&whole, 0, budget, &b1.encoding, &b1.names(), true).unwrap();
    let items = first["content"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["text"], sheet.page.parts[0].body.as_str());
    assert_eq!(items[1]["text"], sheet.page.meta.as_str());
    assert_eq!(
        whole.book.lock().unwrap().positions.get(1),
        entry.book.lock().unwrap().positions.get(1)
    );
    if !read_all {
        let want = mcp_budget_core::dialect::json_document(text).unwrap();
        assert!(matches!(&docs[..], [Document::Json(v)] if *v == want));
        return true;
    }
    let later = pages(&b1, &first);
    let full = call::shape_full(&b2, "t", result_of(text)).result;
    let full_later = pages(&b2, &full);
    // Offloaded blobs name files in each boundary's own directory.
    let dirless = |v: Value, d: &tempfile::TempDir| {
        v.to_string().replace(d.path().to_str().unwrap(), "<dir>")
    };
    assert_eq!(
        dirless(reassembled(&first, &later), &d1),
        dirless(reassembled(&full, &full_later), &d2)
    );
    true
}

/// A directory tree as server-filesystem's `directory_tree` writes it (pretty, 2 spaces).
fn tree(files: usize, depth: usize) -> Value {
    fn node(n: &mut usize, files: usize, depth: usize) -> Value {
        *n += 1;
        if depth == 0 || *n >= files {
            return json!({"name": format!("file_{n}.rs"), "type": "file"});
        }
        let children: Vec<Value> = (0..4).map(|_| node(n, files, depth - 1)).collect();
        json!({"name": format!("dir_{n}"), "type": "directory", "children": children})
    }
    let mut n = 0;
    let mut roots = Vec::new();
    while n < files {
        roots.push(node(&mut n, files, depth));
    }
    Value::Array(roots)
}

#[test]
fn a_long_directory_tree_takes_the_head_and_pages_the_same() {
    let text = serde_json::to_string_pretty(&tree(6_000, 5)).unwrap();
    assert!(text.len() > early::MIN_SOURCE_BYTES, "{}", text.len());
    assert!(same_pages(&text, 2_000));
    let compact = serde_json::to_string(&tree(6_000, 5)).unwrap();
    assert!(same_pages(&compact, 2_000));
    // With the string twin in structuredContent: it carries page 1's text, as on the full
    // path.
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(&dir, 2_000);
    let mut r = with_twin(&text);
    let first = early::shape(&b, "t", &mut r, 0).expect("taken").result;
    assert_eq!(
        first["structuredContent"]["content"],
        first["content"][0]["text"]
    );
    let full = call::shape_full(&b, "t", with_twin(&text)).result;
    assert_eq!(
        full["structuredContent"]["content"],
        full["content"][0]["text"]
    );
    assert_eq!(
        first.as_object().unwrap().keys().collect::<Vec<_>>(),
        full.as_object().unwrap().keys().collect::<Vec<_>>()
    );
    // A structuredContent that is not a string twin: the full path.
    let mut r = json!({"content": [{"type": "text", "text": text}], "structuredContent": {"n": 1}});
    assert!(early::shape(&b, "t", &mut r, 0).is_none());
    // Through the public door, with the real threshold.
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(&dir, 2_000);
    let first = b.shape_call_result("t", result_of(&text), 0);
    assert!(first["_meta"]["mcp-budget/page"]["next_cursor"].is_string());
    let id = first["_meta"]["mcp-budget/page"]["response_id"]
        .as_str()
        .unwrap();
    let entry = b.store.memory().unwrap().get(id).unwrap();
    assert_eq!(entry.json_flags(), [true]);
}

#[test]
fn page_1_is_kept_as_it_went_out() {
    let text = serde_json::to_string_pretty(&tree(6_000, 5)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(&dir, 2_000);
    let first = b.shape_call_result("t", result_of(&text), 0);
    let id = first["_meta"]["mcp-budget/page"]["response_id"]
        .as_str()
        .unwrap();
    let entry = b.store.memory().unwrap().get(id).unwrap();
    let later = pages(&b, &first);
    // After the parse and every page, page 1 at its budget is the one that went out (its
    // cursor leads to where it ended), whatever a page cut from the whole would be.
    assert!(entry.has_tree());
    let again = parts::page_in_budget(&entry, 0, 2_000, &b.encoding, &b.names(), true).unwrap();
    assert_eq!(
        again.page.meta,
        first["content"][1]["text"].as_str().unwrap()
    );
    assert_eq!(
        again.page.parts[0].body,
        first["content"][0]["text"].as_str().unwrap()
    );
    // The same text shaped twice: two responses, the same pages.
    let second = b.shape_call_result("t", result_of(&text), 0);
    assert_ne!(
        second["_meta"]["mcp-budget/page"]["response_id"].as_str(),
        Some(id)
    );
    assert_eq!(
        reassembled(&second, &pages(&b, &second)),
        reassembled(&first, &later)
    );
}

#[test]
fn texts_the_head_cannot_speak_for_take_the_full_path() {
    let good = serde_json::to_string_pretty(&tree(3_000, 4)).unwrap();
    let cut = &good[..good.len() - 10];
    // Cut short, text after the root, a key repeated at the root, `NaN` after the head.
    let repeated = format!(
        "{{\"a\": {}, \"b\": 1, \"a\": 2}}",
        serde_json::to_string(&tree(3_000, 4)).unwrap()
    );
    let trailing = format!("{good}\n{{}}");
    let nan = format!("{}, NaN]", &good[..good.rfind(']').unwrap()]);
    for text in [cut, &repeated, &trailing, &nan] {
        assert!(!same_pages(text, 1_000), "{}", &text[text.len() - 40..]);
    }
    // A string in the head long enough to be a blob.
    let blob = json!([{"data": "Qm9i".repeat(5_000)}, tree(3_000, 4)]).to_string();
    assert!(!same_pages(&blob, 1_000));
    // The full path still pages each of them.
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(&dir, 1_000);
    for text in [cut, &nan] {
        let first = b.shape_call_result("t", result_of(text), 0);
        assert!(
            first["_meta"]["mcp-budget/page"]["next_cursor"].is_string(),
            "{}",
            &first.to_string()[..200]
        );
    }
}

#[test]
fn texts_checked_in_two_parts_agree_as_checked_whole() {
    // Over `HALVES_MIN_BYTES`: the part after the cut is checked on another thread from the
    // start.
    let good = serde_json::to_string_pretty(&tree(30_000, 6)).unwrap();
    assert!(good.len() > early::HALVES_MIN_BYTES, "{}", good.len());
    assert!(Halves::new(&good, good.len() / early::HALVES_FIRST_SHARE).is_some());
    assert!(same_pages_read(&good, 1_000, false));
    // Faults after the cut, and before it (past the head, at a sixteenth of the text).
    let repeated = format!(
        "{{\"a\": {},\n\"b\": 1,\n\"a\": 2}}",
        serde_json::to_string_pretty(&tree(30_000, 6)).unwrap()
    );
    let early_nan = {
        let at = good.len() / 16;
        let line = at + good[at..].find(",\n").unwrap();
        format!("{}, NaN{}", &good[..line], &good[line..])
    };
    let late_nan = format!("{}, NaN]", &good[..good.rfind(']').unwrap()]);
    let trailing = format!("{good}\n{{}}");
    let short = &good[..good.len() - 10];
    for text in [&repeated, &early_nan, &late_nan, &trailing, short] {
        assert!(
            Halves::new(text, text.len() / early::HALVES_FIRST_SHARE).is_some(),
            "{}",
            &text[text.len() - 40..]
        );
        assert!(!same_pages(text, 1_000), "{}", &text[text.len() - 40..]);
    }
    // The same key repeated in an object off the chain is the document's own business.
    let fine = format!(
        "{{\"a\": {},\n\"b\": {{\"x\": 1,\n\"x\": 2}}}}",
        serde_json::to_string_pretty(&tree(30_000, 6)).unwrap()
    );
    assert!(same_pages_read(&fine, 1_000, false));
}

#[test]
fn a_page_1_ending_inside_a_key_takes_the_full_path() {
    // A key longer than a page, before the member the head cuts through, and after the cut
    // keys equal to its tails: the head cannot know where the key may be cut (a tail equal to
    // another key of the object would make page 2 hold that key twice).
    let long: String = (0..600).map(|i| format!("w{} ", i % 7)).collect();
    let mut doc = serde_json::Map::new();
    doc.insert(long.clone(), json!(1));
    doc.insert(
        "arr".into(),
        Value::Array((0..4_000).map(|i| json!(format!("item {i}"))).collect()),
    );
    for cut in (1..long.len()).step_by(3) {
        doc.insert(long[cut..].to_owned(), json!(cut));
    }
    let text = Value::Object(doc).to_string();
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(&dir, mcp_budget_core::MIN_BUDGET_TOKENS);
    let mut r = result_of(&text);
    assert!(early::shape(&b, "t", &mut r, 0).is_none());
    let first = b.shape_call_result("t", result_of(&text), 0);
    let later = pages(&b, &first);
    let whole: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(reassembled(&first, &later), whole);
}

#[test]
fn a_blob_after_the_head_is_offloaded_when_the_text_is_parsed() {
    let blob = "Qm9i".repeat(5_000);
    let text = json!([tree(3_000, 4), {"data": blob}]).to_string();
    assert!(same_pages(&text, 1_000));
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(&dir, 1_000);
    let first = b.shape_call_result("t", result_of(&text), 0);
    let all = pages(&b, &first)
        .iter()
        .map(Value::to_string)
        .collect::<String>();
    assert!(!all.contains(&blob[..100]), "the blob went out inline");
}

#[test]
fn pages_survive_the_store_letting_the_source_text_go() {
    let text = serde_json::to_string_pretty(&tree(6_000, 5)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(&dir, 2_000);
    let first = b.shape_call_result("t", result_of(&text), 0);
    let want = reassembled(&first, &pages(&b, &first));
    assert_eq!(want, serde_json::from_str::<Value>(&text).unwrap());
    // Spilled (its source text, or its tree once parsed): the same document comes back. (The
    // compact text of the same tree: another response, not the one kept above.)
    let compact = serde_json::to_string(&tree(6_000, 5)).unwrap();
    let first = b.shape_call_result("t", result_of(&compact), 0);
    b.store.memory().unwrap().push_out_all();
    assert_eq!(reassembled(&first, &pages(&b, &first)), want);
}

/// A JSON value of nested arrays and objects with short and long strings, escapes and
/// numbers, big enough that its head is a small part.
fn doc() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        "[a-z\"\\\\\n é]{0,12}".prop_map(Value::String),
        "[a-z ]{60,200}".prop_map(Value::String),
    ];
    let inner = leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{1,8}", inner), 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    (
        prop::collection::vec(inner, 150..400),
        any::<bool>(),
        0usize..3,
    )
        .prop_map(|(items, object_root, wrap)| {
            let mut v = if object_root {
                Value::Object(
                    items
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| (format!("k{i}"), v))
                        .collect(),
                )
            } else {
                Value::Array(items)
            };
            for _ in 0..wrap {
                v = json!({"wrapped": v, "after": 1});
            }
            v
        })
}

/// Cases of the property below: `PROPTEST_CASES` (64 without it), at most 1,000; each case
/// parses and pages a document of tens of KB at the smallest budget (10,000 cases took ~8 of
/// the Rust tests' 12 minutes in CI).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
        .min(1000)
}

/// Wherever the head is taken, it writes the full path's pages (at the smallest budget, so the
/// head is a few KB and most documents are many heads long).
///
/// A runner built here, not `proptest!`: its macro lets `PROPTEST_CASES` override any count
/// the test configures (proptest 1.x, `contextualize_config`), so [`cases`] would not cap it.
#[test]
fn the_head_pages_as_the_full_path_does() {
    let config = ProptestConfig {
        cases: cases(),
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let outcome = runner.run(&(doc(), any::<bool>()), |(v, pretty)| {
        let text = if pretty {
            serde_json::to_string_pretty(&v).unwrap()
        } else {
            serde_json::to_string(&v).unwrap()
        };
        same_pages_read(&text, mcp_budget_core::MIN_BUDGET_TOKENS, false);
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

/// The parses that follow page 1 hold their memory against the cache's bound: while other
/// work leaves no room they wait (their texts counted in the cache meanwhile), and once it
/// ends every response pages in full (each tree larger than the bound, parsed alone), the
/// work held goes back to nothing and the cache within its bound (issue 33).
#[test]
fn parses_after_page_1_wait_for_room_and_lose_nothing() {
    let values: Vec<Value> = (0..3).map(|i| tree(3_000 + 500 * i, 4)).collect();
    let texts: Vec<String> = values
        .iter()
        .map(|v| serde_json::to_string_pretty(v).unwrap())
        .collect();
    // Less than one tree (about ten times its compact text).
    let bound = texts[0].len() * 2;
    let dir = tempfile::tempdir().unwrap();
    let b = Boundary::new(Settings {
        max_tokens: Some(2_000),
        cache_bytes: Some(bound),
        cache_dir: Some(dir.path().join("cache")),
        blob_dir: Some(dir.path().join("blobs")),
        ..Settings::default()
    })
    .unwrap();
    let s = b.store.memory().unwrap();
    // Other work holding more than the bound (the parse of a larger result).
    let other = s.reserve(None, 2 * bound);
    let firsts: Vec<Value> = texts
        .iter()
        .map(|t| {
            let mut r = result_of(t);
            early::shape(&b, "t", &mut r, 0).expect("taken").result
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(
        s.work_held(),
        other.bytes(),
        "a parse was admitted beside work that leaves no room"
    );
    drop(other);
    for (first, v) in firsts.iter().zip(&values) {
        assert_eq!(&reassembled(first, &pages(&b, first)), v);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while s.work_held() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(s.work_held(), 0, "the parses let their work go");
    s.sweep();
    assert!(s.resident() <= bound, "{} > {bound}", s.resident());
}
