//! Deep structuredContent costs memory and work linear in its size (exploratory).

mod boundary_util;

use boundary_util::*;
use serde_json::{Map, Value, json};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static TOTAL: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        TOTAL.fetch_add(l.size(), Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}
#[global_allocator]
static A: Counting = Counting;

fn deep(depth: usize) -> Value {
    (0..depth).fold(Value::from("🚀 §".repeat(40)), |v, i| {
        let mut m = Map::new();
        m.insert(format!("k{i}"), Value::Array(vec![Value::from(i), v]));
        Value::Object(m)
    })
}

fn schema(depth: usize) -> Value {
    (0..depth).fold(json!({"type":"string"}), |s, i| {
        json!({"type":"object","properties":{format!("k{i}"): {"type":"array","items":{"anyOf":[{"type":"number"}, s]}}},"required":[format!("k{i}")]})
    })
}

#[test]
fn explore() {
    for depth in std::env::var("DEPTHS")
        .unwrap_or("50,100,200,400".into())
        .split(",")
        .map(|d| d.parse::<usize>().unwrap())
    {
        for declared in [false, true]
            .into_iter()
            .filter(|d| std::env::var("DECL").map_or(true, |v| v == d.to_string()))
        {
            for budget in [300usize, 1000] {
                let dir = tempfile::tempdir().unwrap();
                let b = boundary(budget, &dir);
                if declared {
                    let list = json!({"tools":[{"name":"t","inputSchema":{"type":"object"},"outputSchema": schema(depth)}]});
                    b.shape_list_result(list, true);
                }
                let result = json!({"content": [], "structuredContent": deep(depth)});
                let base = LIVE.load(Ordering::Relaxed);
                PEAK.store(base, Ordering::Relaxed);
                let t0 = TOTAL.load(Ordering::Relaxed);
                let start = std::time::Instant::now();
                let first = b.shape_call_result("t", result, 0);
                let pages = follow_quiet(&b, first);
                let peak = PEAK.load(Ordering::Relaxed) - base;
                let total = TOTAL.load(Ordering::Relaxed) - t0;
                eprintln!(
                    "depth {depth} declared {declared} budget {budget}: {pages} pages, peak {} KB, total {} MB, {:?}",
                    peak / 1024,
                    total >> 20,
                    start.elapsed()
                );
            }
        }
    }
}

fn follow_quiet(b: &mcp_budget_proxy::boundary::Boundary, first: Value) -> usize {
    let mut last = first;
    let mut n = 1;
    loop {
        let Some(c) = last["_meta"]["mcp-budget/page"]["next_cursor"]
            .as_str()
            .map(str::to_owned)
        else {
            return n;
        };
        last = b.answer_injected(&read_more(&c)).unwrap();
        n += 1;
    }
}
