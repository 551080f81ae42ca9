//! A structuredContent nested hundreds of levels deep costs work near-linear in its size per
//! page (issue 8: a 200-level structuredContent took seconds, cubic in its depth).
//!
//! Work is measured as the bytes the whole shaping allocates (every page, `read_more` to the
//! end), counted by a global allocator: a count, not a timing, so it holds on a loaded machine.
//! Before the fix: 309–336 MB at 200 levels, 2.0–2.6 GB at 400 (cubic: about 40 GB at 1,000).

mod boundary_util;

use boundary_util::*;
use serde_json::{Map, Value, json};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes allocated and the peak of bytes live.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static TOTAL: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to `System` unchanged; the counters only add and subtract.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        TOTAL.fetch_add(l.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is `System.alloc`'s.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: `p` was allocated by `System` with layout `l` (see `alloc`).
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// The tests of this file measure one at a time (the counters are global).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// `{"k<d-1>":[d-1,{… {"k0":[0,"🚀 §🚀 §…"]} …}]}`: `depth` objects, each holding an array.
fn deep(depth: usize) -> Value {
    (0..depth).fold(Value::from("🚀 §".repeat(40)), |v, i| {
        let mut m = Map::new();
        m.insert(format!("k{i}"), Value::Array(vec![Value::from(i), v]));
        Value::Object(m)
    })
}

/// An outputSchema `deep(depth)` satisfies, every member required.
fn deep_schema(depth: usize) -> Value {
    (0..depth).fold(json!({"type": "string"}), |s, i| {
        json!({"type": "object", "required": [format!("k{i}")], "properties": {
            format!("k{i}"): {"type": "array", "items": {"anyOf": [{"type": "number"}, s]}}
        }})
    })
}

/// Shapes `deep(depth)` as the structuredContent of a result at `budget` and follows every
/// page: (pages, bytes allocated in all, peak bytes live above the start).
fn shape_all(depth: usize, budget: usize, declared: bool) -> (usize, usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let b = boundary(budget, &dir);
    if declared {
        let list = json!({"tools": [{"name": "t", "inputSchema": {"type": "object"},
            "outputSchema": deep_schema(depth)}]});
        b.shape_list_result(list, true);
    }
    let result = json!({"content": [], "structuredContent": deep(depth)});
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let before = TOTAL.load(Ordering::Relaxed);
    let mut page = b.shape_call_result("t", result, 0);
    let mut pages = 1;
    while let Some(c) = page["_meta"]["mcp-budget/page"]["next_cursor"].as_str() {
        let next = b.answer_injected(&read_more(c)).unwrap();
        assert!(next.get("isError").is_none(), "{next}");
        let seen = visible(&next);
        assert!(seen <= budget, "page {pages}: {seen} tokens > {budget}");
        page = next;
        pages += 1;
    }
    let total = TOTAL.load(Ordering::Relaxed) - before;
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    (pages, total, peak)
}

#[test]
fn a_200_and_a_1000_level_structured_content_cost_bounded_work() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let run = || {
        let mut out = Vec::new();
        for (depth, budget) in [(200, 300), (200, 1000), (1000, 1000)] {
            for declared in [false, true] {
                let (pages, total, peak) = shape_all(depth, budget, declared);
                eprintln!(
                    "depth {depth}, budget {budget}, declared {declared}: {pages} pages, \
                     {} KB allocated, peak {} KB",
                    total >> 10,
                    peak >> 10
                );
                out.push((depth, total, peak));
            }
        }
        out
    };
    // A big stack: serde_json's recursive drop and serialization of 1,000 levels.
    let measured = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
    for (depth, total, peak) in measured {
        // Measured after the fix: ~50–95 MB at 200 levels, ~1 GB at 1,000 (pages and their
        // full locations grow with the depth too); cubic work would be 300 MB and ~40 GB.
        let (max_total, max_peak) = match depth {
            200 => (200 << 20, 32 << 20),
            _ => (3 << 30, 128 << 20),
        };
        assert!(
            total <= max_total,
            "{depth} levels: {} MB allocated",
            total >> 20
        );
        assert!(peak <= max_peak, "{depth} levels: peak {} MB", peak >> 20);
    }
}
