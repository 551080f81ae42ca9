//! The store's accounting, spilling and reloading.

use std::os::unix::fs::PermissionsExt;

use mcp_budget_core::paginate::Document;
use mcp_budget_core::tokens::Encoding;
use serde_json::{Value, json};

use super::heap::docs_heap_bytes;
use super::*;
use crate::boundary::walk;
use mcp_budget_core::shape::model::ToolNames;

const ENC: Encoding = Encoding::Chars4;

fn store(bound: usize, dir: &tempfile::TempDir) -> Store {
    Store::new_unswept(bound, Duration::from_secs(60), dir.path().to_path_buf())
}

/// Rows whose floats have 17 significant digits (rounded at precision 9).
fn rows(seed: u64, n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| {
                let x: Value = serde_json::from_str(&format!(
                    "{}.{:014}",
                    100 + (seed * 7 + i as u64) % 900,
                    (seed * 1_000_003 + i as u64 * 7_919) % 100_000_000_000_000
                ))
                .unwrap();
                json!({"id": i, "seed": seed, "name": format!("row {i} é🎉 \"q\""), "x": x, "tags": ["a", "b"]})
            })
            .collect(),
    )
}

fn entry_of(store: &Store, docs: Vec<Document>, precision: u32) -> Arc<Entry> {
    let mut tokens = Vec::new();
    let mut rendered = Vec::new();
    for d in &docs {
        let (text, t) = mcp_budget_core::shape::form::doc_tokens(d, precision, &ENC);
        tokens.push(t);
        rendered.push(text);
    }
    let bytes = rendered.iter().map(String::len).sum();
    Arc::new(
        Entry::new(store.new_id(), docs, tokens, 300, precision, bytes).with_rendered(&rendered),
    )
}

fn json_entry(store: &Store, seed: u64, n: usize) -> Arc<Entry> {
    entry_of(store, vec![Document::Json(rows(seed, n))], 9)
}

/// Every page of `entry` (bodies and meta), following the meta items' cursors.
fn all_pages(entry: &Entry, budget: usize) -> Vec<(Vec<String>, String)> {
    let names = ToolNames::default();
    let mut out = Vec::new();
    let mut k = 0;
    loop {
        let page = walk::page(entry, k, budget, &ENC, &names).expect("page");
        let meta: Value = serde_json::from_str(&page.meta).unwrap();
        // Another entry of the same content has another id: compare without it.
        let meta_text = page.meta.replace(&entry.id, "ID");
        out.push((page.parts.into_iter().map(|p| p.body).collect(), meta_text));
        match meta["next_cursor"].as_str() {
            Some(c) => k = parse_cursor(c).unwrap().1,
            None => return out,
        }
        assert!(out.len() < 10_000);
    }
}

#[test]
fn ids_are_12_lowercase_hex_and_distinct() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(100, &dir);
    let ids: HashSet<String> = (0..1000).map(|_| s.new_id()).collect();
    assert_eq!(ids.len(), 1000);
    assert!(ids.iter().all(|i| check_id(i).is_ok()));
}

#[test]
fn resident_bytes_are_the_tree_estimate_then_the_text_then_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let probe = store(usize::MAX, &dir);
    let a = json_entry(&probe, 1, 400);
    let tree = a.resident();
    assert_eq!(tree, docs_heap_bytes(&a.docs().unwrap()));
    let text = serde_json::to_string(&rows(1, 400)).unwrap().len();
    assert!(tree > 5 * text, "{tree} vs {text}");

    // Room for one tree and a text, not for two trees.
    let bound = tree + text + text / 2;
    let s = store(bound, &dir);
    let a = json_entry(&s, 1, 400);
    s.insert(Arc::clone(&a));
    assert_eq!(s.resident(), tree);
    let b = json_entry(&s, 2, 400);
    s.insert(Arc::clone(&b));
    assert!(
        !a.has_tree() && a.has_text_only(),
        "a's tree went, its text stayed: {} {} {} {} {}",
        a.resident(),
        b.resident(),
        a.on_disk(),
        tree,
        text
    );
    assert!(b.has_tree());
    assert!(
        a.resident() >= text && a.resident() < text + 200,
        "{}",
        a.resident()
    );
    assert_eq!(s.resident(), a.resident() + b.resident());
    assert_eq!(s.on_disk(), 0);

    // A third: a (least recently used) goes to a file, b keeps its text.
    let c = json_entry(&s, 3, 400);
    s.insert(Arc::clone(&c));
    assert_eq!((a.resident(), a.on_disk()), (0, text));
    assert!(b.has_text_only());
    assert_eq!(s.resident(), b.resident() + c.resident());
    assert!(s.resident() <= bound);

    // Reading a brings its tree back from the file; the file stays (no rewrite later).
    let got = s.get(&a.id).unwrap();
    assert!(Arc::ptr_eq(&got, &a) && a.has_tree());
    assert_eq!(a.on_disk(), text);
    // (A parsed tree's arrays grew by doubling: a little larger than the one built in code.)
    assert!(s.resident() <= bound.max(a.resident()), "{}", s.resident());
    assert!(!c.has_tree(), "c was the least recently used tree");
}

#[test]
fn least_recently_used_content_goes_first() {
    let dir = tempfile::tempdir().unwrap();
    let probe = store(usize::MAX, &dir);
    let tree = json_entry(&probe, 1, 200).resident();
    let s = store(2 * tree + tree / 2, &dir);
    let a = json_entry(&s, 1, 200);
    let b = json_entry(&s, 2, 200);
    s.insert(Arc::clone(&a));
    s.insert(Arc::clone(&b));
    assert!(s.get(&a.id).is_ok()); // a is now the most recent
    let c = json_entry(&s, 3, 200);
    s.insert(Arc::clone(&c));
    assert!(a.has_tree() && c.has_tree());
    assert!(!b.has_tree());
    assert_eq!(s.get("0123456789ab").unwrap_err(), CursorFault::Unknown);
}

#[test]
fn pages_after_spill_and_reload_are_the_pages_of_the_original() {
    let dir = tempfile::tempdir().unwrap();
    for precision in [9, 0] {
        let s = store(1, &dir);
        let docs = vec![
            Document::Json(rows(5, 150)),
            Document::Text("line one\nline two é\n".repeat(300)),
            Document::Json(
                json!({"deep": {"list": rows(6, 40), "n": 1e-400, "big": 12345678901234567890u64}}),
            ),
        ];
        let fresh = entry_of(&s, docs.clone(), precision);
        let want = all_pages(&fresh, 300);
        assert!(want.len() > 5);
        let query = fresh.query_input();

        let e = entry_of(&s, docs, precision);
        s.insert(Arc::clone(&e));
        let other = json_entry(&s, 9, 10);
        s.insert(other); // bound 1: e goes to a file
        assert!(e.on_disk() > 0 && e.resident() == 0);
        // Without the store's help (a reader racing an eviction): parsed from the file.
        assert!(all_pages(&e, 300) == want, "precision {precision}");
        assert_eq!(e.resident(), 0, "that copy is not kept");
        let got = s.get(&e.id).unwrap();
        assert!(got.has_tree());
        assert!(all_pages(&got, 300) == want, "precision {precision}");
        assert_eq!(got.query_input(), query);
    }
}

#[test]
fn an_entry_too_deep_to_reparse_is_dropped_not_spilled() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(1, &dir);
    let mut deep = json!([1]);
    for _ in 0..super::heap::MAX_PARSE_DEPTH {
        deep = json!([deep]);
    }
    let d = entry_of(&s, vec![Document::Json(deep)], 9);
    assert!(!d.reloadable());
    s.insert(Arc::clone(&d));
    s.insert(json_entry(&s, 1, 10));
    assert_eq!(s.get(&d.id).unwrap_err(), CursorFault::Expired);
}

#[test]
fn spill_files_are_bounded_oldest_dropped_first() {
    let dir = tempfile::tempdir().unwrap();
    let text = serde_json::to_string(&rows(1, 100)).unwrap().len();
    let s = store(text / 3, &dir);
    s.set_disk_bound(text * 5 / 2); // room for two files
    let all: Vec<Arc<Entry>> = (1..=5).map(|i| json_entry(&s, i, 100)).collect();
    for e in &all {
        s.insert(Arc::clone(e));
    }
    assert_eq!(s.get(&all[0].id).unwrap_err(), CursorFault::Expired);
    assert_eq!(s.get(&all[1].id).unwrap_err(), CursorFault::Expired);
    assert!(s.on_disk() <= text * 5 / 2);
    for e in &all[3..] {
        assert!(s.get(&e.id).is_ok());
    }
}

#[test]
fn an_entry_that_cannot_be_spilled_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("file");
    std::fs::write(&base, b"not a directory").unwrap();
    let s = Store::new_unswept(1, Duration::from_secs(60), base);
    let a = json_entry(&s, 1, 50);
    s.insert(Arc::clone(&a));
    s.insert(json_entry(&s, 2, 50));
    assert_eq!(s.get(&a.id).unwrap_err(), CursorFault::Expired);
}

#[test]
fn a_damaged_spill_file_reads_as_expired() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(1, &dir);
    let a = json_entry(&s, 1, 50);
    s.insert(Arc::clone(&a));
    s.insert(json_entry(&s, 2, 50));
    let spill = s.spill_dir().unwrap();
    for f in std::fs::read_dir(&spill).unwrap().flatten() {
        if f.file_name().to_string_lossy().starts_with(&a.id) {
            std::fs::write(f.path(), b"[1,2").unwrap();
        }
    }
    assert_eq!(s.get(&a.id).unwrap_err(), CursorFault::Expired);
}

#[test]
fn spill_directory_is_private_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(1, &dir);
    for i in 0..3 {
        s.insert(json_entry(&s, i, 50));
    }
    let spill = s.spill_dir().unwrap();
    assert!(spill.starts_with(dir.path()));
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&spill), 0o700);
    let files: Vec<_> = std::fs::read_dir(&spill).unwrap().flatten().collect();
    assert_eq!(files.len(), 2);
    assert!(files.iter().all(|f| mode(&f.path()) == 0o600));
    s.remove_spill_dir();
    assert!(!spill.exists());

    let s = store(1, &dir);
    for i in 0..3 {
        s.insert(json_entry(&s, i, 50));
    }
    let spill = s.spill_dir().unwrap();
    drop(s);
    assert!(!spill.exists(), "removed when the store is dropped");
}

#[test]
fn the_entry_in_use_keeps_its_tree_until_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(1000, &dir);
    let a = json_entry(&s, 1, 200);
    assert!(a.resident() > 1000);
    s.insert(Arc::clone(&a));
    assert!(a.has_tree(), "kept alone for its cursors");
    s.sweep();
    assert!(!a.has_tree());
    assert_eq!(s.resident(), 0);
    assert!(s.get(&a.id).is_ok());
    assert!(a.has_tree());
}

#[test]
fn make_room_for_pushes_trees_out_before_a_big_result() {
    let dir = tempfile::tempdir().unwrap();
    let probe = store(usize::MAX, &dir);
    let tree = json_entry(&probe, 1, 3000).resident();
    let s = store(4 * tree, &dir);
    let a = json_entry(&s, 1, 3000);
    let b = json_entry(&s, 2, 3000);
    s.insert(Arc::clone(&a));
    s.insert(Arc::clone(&b));
    let small = s.make_room_for(MAKE_ROOM_MIN_BYTES - 1);
    assert!(a.has_tree() && b.has_tree(), "small results do not bother");
    assert_eq!((small.bytes(), s.work_held()), (0, 0));
    // Room for 2.5 trees' worth of parsing: the older tree must go.
    let text = 5 * tree / 2 / TREE_FACTOR;
    assert!(text >= MAKE_ROOM_MIN_BYTES);
    let held = s.make_room_for(text);
    assert!(!a.has_tree() && b.has_tree());
    assert!(s.resident() + text * TREE_FACTOR <= 4 * tree);
    // Held until the shaping ends: counted when the cache makes room meanwhile.
    assert_eq!(s.work_held(), text * TREE_FACTOR);
    drop(held);
    assert_eq!(s.work_held(), 0);
}

#[test]
fn making_room_passes_over_an_entry_another_thread_is_loading() {
    let dir = tempfile::tempdir().unwrap();
    let (s, tree) = four_trees(&dir);
    let a = json_entry(&s, 1, 3000);
    let b = json_entry(&s, 2, 3000);
    s.insert(Arc::clone(&a));
    s.insert(Arc::clone(&b));
    let text = 5 * tree / 2 / TREE_FACTOR;
    // `a`, the older, is held by a load: `b` goes instead, and the call returns while `a` is
    // still held.
    let held = a.hold(true);
    assert!(
        returns_while_held(&s, text),
        "make_room_for waited for the load"
    );
    drop(held);
    assert!(a.has_tree() && !b.has_tree());
    // Loading, an entry is neither demoted nor spilled (nor waited for); let go, it is.
    let held = a.hold(true);
    assert!(matches!(a.drop_tree(), Demoted::Busy));
    let text_of_b = b.resident();
    assert!(text_of_b > 0);
    assert_eq!(b.spill(&s.shared.spill).unwrap(), Some(text_of_b));
    drop(held);
    assert!(matches!(a.drop_tree(), Demoted::Freed(_)));
    let held = a.hold(true);
    assert_eq!(a.spill(&s.shared.spill).unwrap(), None);
    drop(held);
    assert!(a.spill(&s.shared.spill).unwrap().is_some_and(|n| n > 0));
    // A short hold (a page being read) is waited for, not passed over.
    let c = json_entry(&s, 3, 3000);
    s.insert(Arc::clone(&c));
    assert!(c.has_tree());
    let held = c.hold(false);
    let (started, waiting) = std::sync::mpsc::channel();
    let other = Arc::clone(&c);
    let demoter = std::thread::spawn(move || {
        let _ = started.send(());
        matches!(other.drop_tree(), Demoted::Freed(_))
    });
    waiting.recv().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(!demoter.is_finished(), "a short hold was passed over");
    drop(held);
    assert!(demoter.join().unwrap());
}

/// A store bounded at four trees of `json_entry(_, _, 3000)`, and the bytes of one.
fn four_trees(dir: &tempfile::TempDir) -> (Arc<Store>, usize) {
    let tree = json_entry(&store(usize::MAX, dir), 1, 3000).resident();
    (Arc::new(store(4 * tree, dir)), tree)
}

/// Whether `make_room_for(text)` on another thread returns within 30 s (while the caller
/// holds something it must not wait for).
fn returns_while_held(s: &Arc<Store>, text: usize) -> bool {
    let (done, finished) = std::sync::mpsc::channel();
    let other = Arc::clone(s);
    let maker = std::thread::spawn(move || {
        let held = other.make_room_for(text);
        let _ = done.send(());
        drop(held);
    });
    let returned = finished.recv_timeout(Duration::from_secs(30)).is_ok();
    if returned {
        let _ = maker.join();
    }
    returned
}

#[test]
fn making_room_passes_over_a_source_text_being_parsed() {
    // An entry made from its source text, parsed by another thread (as after an early page
    // 1), its `prep` held until the test lets it go: the parse holds the entry meanwhile.
    let dir = tempfile::tempdir().unwrap();
    let (s, tree) = four_trees(&dir);
    let (entered, inside) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let prep = entry::Prep(Box::new(move |_: &mut Vec<Document>| {
        let _ = entered.send(());
        let _ = released.recv();
    }));
    let source = rows(7, 3000).to_string();
    let bytes = source.len();
    let a = Arc::new(Entry::from_source(
        s.new_id(),
        source,
        300,
        9,
        bytes,
        3 * tree,
        prep,
    ));
    s.insert(Arc::clone(&a));
    let b = json_entry(&s, 2, 3000);
    s.insert(Arc::clone(&b));
    let parser = {
        let a = Arc::clone(&a);
        std::thread::spawn(move || a.docs().is_some())
    };
    inside.recv().unwrap();
    // Room for four trees: more than there is with `b` pushed out, so `a` is asked too.
    let returned = returns_while_held(&s, 4 * tree / TREE_FACTOR);
    release.send(()).unwrap();
    assert!(parser.join().unwrap());
    assert!(returned, "make_room_for waited for the parse");
    assert!(!b.has_tree(), "the next least recently used went instead");
    assert!(a.has_tree());
}

#[test]
fn ttl_expires_entries() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::new_unswept(usize::MAX, Duration::from_millis(5), dir.path().into());
    let a = json_entry(&s, 1, 5);
    s.insert(Arc::clone(&a));
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(s.get(&a.id).unwrap_err(), CursorFault::Expired);
}

#[test]
fn the_sweeper_expires_idle_entries() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::new(usize::MAX, Duration::from_millis(5), dir.path().into());
    s.insert(json_entry(&s, 1, 50));
    assert!(s.resident() > 0);
    let start = Instant::now();
    while s.resident() > 0 && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(s.resident(), 0, "dropped without any request");
}

#[test]
fn holds_compares_kinds_and_rendered_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(usize::MAX, &dir);
    let docs = vec![Document::Json(json!([1, 2]))];
    let e = entry_of(&s, docs.clone(), 9);
    assert!(e.holds(&docs, &["[1,2]".to_owned()]));
    assert!(!e.holds(&docs, &["[1,3]".to_owned()]));
    assert!(!e.holds(&[Document::Text("[1,2]".into())], &["[1,2]".to_owned()]));
    assert!(!e.holds(&[], &[]));
}

#[test]
fn cursors_parse_strictly() {
    assert_eq!(parse_cursor("0123456789ab.3"), Ok(("0123456789ab", 3)));
    for bad in [
        "",
        "x",
        "0123456789ab",
        "0123456789ab.",
        "0123456789AB.1",
        "0123456789a.1",
        "0123456789ab.-1",
        "0123456789ab.1.2",
        "0123456789ab.99999999999",
    ] {
        assert_eq!(parse_cursor(bad), Err(CursorFault::Malformed), "{bad}");
    }
}

/// Work held (a parse, a count) counts when the store makes room, and more work that would
/// pass the bound beside it waits until it ends (issue 33).
#[test]
fn work_counts_against_the_bound_and_waits_for_room() {
    let dir = tempfile::tempdir().unwrap();
    let (s, tree) = four_trees(&dir);
    let a = json_entry(&s, 1, 3000);
    let b = json_entry(&s, 2, 3000);
    s.insert(Arc::clone(&a));
    s.insert(Arc::clone(&b));
    // Three trees' worth of work: the older tree goes to make room beside it.
    let first = s.reserve(None, 3 * tree);
    assert_eq!(s.work_held(), 3 * tree);
    assert!(!a.has_tree());
    assert!(s.resident() + s.work_held() <= 4 * tree);
    // The sweeper counts it too: the tree of `b`, the entry in use, goes.
    s.sweep();
    assert!(!b.has_tree());
    assert!(s.resident() + s.work_held() <= 4 * tree);
    // Two more trees' worth cannot fit beside the first: admitted only once it ends.
    let (done, admitted) = std::sync::mpsc::channel();
    let other = Arc::clone(&s);
    let waiter = std::thread::spawn(move || {
        let held = other.reserve(None, 2 * tree);
        let _ = done.send(other.resident() + other.work_held());
        drop(held);
    });
    assert!(
        admitted.recv_timeout(Duration::from_millis(200)).is_err(),
        "admitted beside work that leaves no room"
    );
    drop(first);
    let seen = admitted
        .recv_timeout(Duration::from_secs(30))
        .expect("admitted once the first work ended");
    assert!(seen <= 4 * tree, "{seen} > {}", 4 * tree);
    waiter.join().unwrap();
    assert_eq!(s.work_held(), 0);
}

/// Work larger than the whole bound is admitted when no other work is held (a single large
/// result still works), and work nested in it (a reload the same thread does) is counted,
/// not waited for: it would wait for itself.
#[test]
fn work_larger_than_the_bound_goes_alone_and_nested_work_does_not_wait() {
    let dir = tempfile::tempdir().unwrap();
    let (s, tree) = four_trees(&dir);
    let a = json_entry(&s, 1, 3000);
    s.insert(Arc::clone(&a));
    s.push_out_all();
    assert!(s.on_disk() > 0 && !a.has_tree());
    let big = s.reserve(None, 10 * tree);
    assert_eq!(s.work_held(), 10 * tree);
    let got = s.get(&a.id).expect("read back from its spill file");
    assert!(got.has_tree());
    assert_eq!(
        s.work_held(),
        10 * tree,
        "the reload's work is let go after it"
    );
    drop(big);
    assert_eq!(s.work_held(), 0);
    // Charged work (memory already taken) is counted at once, beside anything.
    let c = s.charge(5 * tree);
    let d = s.charge(5 * tree);
    assert_eq!(s.work_held(), 10 * tree);
    drop((c, d));
    assert_eq!(s.work_held(), 0);
}

/// However many threads ask at once, the work admitted beside the cache stays within the
/// bound (each piece fitting alone).
#[test]
fn concurrent_work_stays_within_the_bound() {
    use std::sync::atomic::AtomicUsize;
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(store(100_000, &dir));
    let peak = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (s, peak) = (Arc::clone(&s), Arc::clone(&peak));
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let held = s.reserve(None, 30_000);
                    peak.fetch_max(s.work_held(), Ordering::SeqCst);
                    std::thread::yield_now();
                    drop(held);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let peak = peak.load(Ordering::SeqCst);
    assert!((30_000..=90_000).contains(&peak), "{peak}");
    assert_eq!(s.work_held(), 0);
}
