//! What the proxy pays to shape a big tools/call result, against one `serde_json` parse of the
//! response (issue 14: ≤ 1.5× for a 12 MB over-budget response), with a breakdown by step.
//!
//! ```text
//! cargo bench -p mcp-budget-bench --bench shape
//! ```
//!
//! Inputs (deterministic, from `mcp_budget_bench`), each the JSON-RPC response line a server
//! writes (`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":…}]}}`):
//! `dirtree-12MB` (pretty JSON text, as server-filesystem's `directory_tree`), `gitdiff-840KB`,
//! `gitlog-2MB`, `rows-1MB` (compact JSON rows with 17-digit floats, a SQL result) and
//! `gitlog-45KB` (text; the last just over the budget). Budget 10,000 tokens (cl100k_base), the proxy's defaults.
//!
//! Per input, timed in back-to-back pairs (`SHAPE_PAIRS`, default 11), alternating which goes
//! first: `baseline` = `serde_json::from_slice::<Value>` of the line; `shape` = reading the
//! result as the relay reads a long line (`relay::split` on two threads where one long string
//! runs through the middle, then the envelope around it; else the result and the envelope in
//! one pass each, on two threads) plus `Boundary::shape_call_result` plus writing the shaped
//! result back as JSON: what the proxy does between reading the line and writing page 1, but
//! for finding the request in its table. Each pair shapes a different
//! response (a counter in the text: the first element of a JSON array, else a last line), so
//! no pair reuses the cache entry of another; each pair is followed by a pause for the work
//! shaping leaves on other threads (the exact total; the parse of a JSON text whose page 1
//! came from its head, see `boundary::early`).
//!
//! Then one breakdown of `shape` on the first input by step (parse the text as JSON, compact
//! rendering, token count of the whole, page 1). `SHAPE_ONLY=<input>` runs one input alone;
//! `SHAPE_STEPS=0` skips the breakdown.

use std::hint::black_box;
use std::time::Instant;

use mcp_budget_core::paginate::{Document, Pager, Position};
use mcp_budget_core::tokens::Encoding;
use mcp_budget_proxy::boundary::Boundary;
use mcp_budget_proxy::config::Settings;
use mcp_budget_proxy::relay::split;
use serde_json::value::RawValue;
use serde_json::{Value, json};

const MB: usize = 1_000_000;

fn line_of(text: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"content": [{"type": "text", "text": text}]}
    }))
    .unwrap_or_default()
}

/// The result of a response line, read as the relay reads a long one
/// (`from_server::decide_big`): on two threads by `relay::split` where it applies, then the
/// envelope around it (the result written `0`; the relay reads it twice, once to check the
/// result is where `split` read it and once to route it); else the result and the envelope
/// each in one pass, on two threads.
fn read_result(line: &mut [u8]) -> Option<Value> {
    let key = b"\"result\":";
    let start = line.windows(key.len()).position(|w| w == key)? + key.len();
    if let Some((value, span)) = split::value_at(line, start) {
        let mut masked = line[..span.start].to_vec();
        masked.push(b'0');
        masked.extend_from_slice(&line[span.end..]);
        for _ in 0..2 {
            serde_json::from_slice::<&RawValue>(&masked).ok()?;
        }
        return Some(value);
    }
    let line = &*line;
    std::thread::scope(|s| {
        let envelope = s.spawn(|| serde_json::from_slice::<&RawValue>(line).is_ok());
        let mut values = serde_json::Deserializer::from_slice(&line[start..]).into_iter::<Value>();
        let value = values.next()?.ok()?;
        envelope.join().ok()?.then_some(value)
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn secs(f: impl FnOnce() -> usize) -> (f64, usize) {
    let t = Instant::now();
    let n = black_box(f());
    (t.elapsed().as_secs_f64(), n)
}

fn main() {
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with("--") && !"shape".contains(a.as_str()))
    {
        return;
    }
    // The proxy shapes on tokio's blocking pool, never on the thread that first used the
    // tokenizer (the owner of `regex-automata`'s cache pool, the one thread with its fast
    // path): neither does this bench.
    let _ = std::thread::spawn(|| {
        Encoding::Cl100kBase.count("warm up") + bpe_openai::cl100k_base().count("warm up")
    })
    .join();
    let pairs: usize = std::env::var("SHAPE_PAIRS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(11);
    let dir = std::env::temp_dir().join(format!("mcp-budget-shape-bench-{}", std::process::id()));
    let boundary = match Boundary::new(Settings {
        blob_dir: Some(dir.clone()),
        cache_bytes: Some(2 << 30),
        ..Settings::default()
    }) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("cannot make the boundary: {e}");
            return;
        }
    };
    let inputs: Vec<(&str, &str, String)> = vec![
        (
            "dirtree-12MB",
            "directory_tree",
            mcp_budget_bench::directory_tree(12 * MB),
        ),
        (
            "gitdiff-840KB",
            "git_diff",
            mcp_budget_bench::git_log(840_000),
        ),
        ("gitlog-2MB", "git_log", mcp_budget_bench::git_log(2 * MB)),
        // Compact JSON rows with 17-digit floats (a SQL result; serve_latency's `big`).
        ("rows-1MB", "query", mcp_budget_bench::float_rows(MB)),
        // Just over the budget (~12,000 tokens): issue 14's `git_log` case.
        ("gitlog-45KB", "git_log", mcp_budget_bench::git_log(45_000)),
    ];
    // `SHAPE_ONLY=<input name>`: that input alone (for a profiler).
    let only = std::env::var("SHAPE_ONLY").ok();
    let inputs: Vec<_> = inputs
        .into_iter()
        .filter(|(name, _, _)| only.as_deref().is_none_or(|o| o == *name))
        .collect();
    println!("\n## Shaping vs one parse of the response line ({pairs} back-to-back pairs)\n");
    println!(
        "| input | line bytes | page 1 bytes | baseline median ms | shape median ms | shape ÷ baseline (median of pairs) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let mut serial = 0u64;
    for (name, tool, text) in &inputs {
        let (mut bs, mut ss, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        let mut out_bytes = 0;
        for i in 0..pairs {
            // A different response each time (the cache would give back an identical one).
            serial += 1;
            // A JSON text stays JSON: the counter goes in as the first element.
            let line = match text.strip_prefix('[') {
                Some(rest) => line_of(&format!("[{serial},{rest}")),
                None => line_of(&format!("{text}\n{serial}")),
            };
            let base = || {
                serde_json::from_slice::<Value>(&line)
                    .map_or(0, |v| v.as_object().map_or(0, |o| o.len()))
            };
            // The relay reads the line in place (`split` changes two bytes while it reads).
            let mut work = line.clone();
            let shape = || {
                let Some(result) = read_result(&mut work) else {
                    return 0;
                };
                let shaped = boundary.shape_call_result(tool, result, 0);
                serde_json::to_vec(&shaped).map_or(0, |b| b.len())
            };
            let (b, s) = if i % 2 == 0 {
                let b = secs(base).0;
                let (s, n) = secs(shape);
                out_bytes = n;
                (b, s)
            } else {
                let (s, n) = secs(shape);
                out_bytes = n;
                (secs(base).0, s)
            };
            // Let the work shaping leaves on other threads (the exact total, the parse of a
            // text paged from its head) finish outside the timings.
            std::thread::sleep(std::time::Duration::from_millis(300));
            if i > 0 {
                bs.push(b);
                ss.push(s);
                ratios.push(s / b);
            }
        }
        println!(
            "| {name} | {} | {out_bytes} | {:.1} | {:.1} | {:.2}× |",
            text.len(),
            median(bs) * 1e3,
            median(ss) * 1e3,
            median(ratios)
        );
    }

    // Breakdown of the steps on each input (one run each, after the warm-up above).
    let enc = Encoding::Cl100kBase;
    // `SHAPE_STEPS=0`: no breakdown (a profile of the pairs alone).
    let steps = std::env::var("SHAPE_STEPS").map_or(true, |s| s != "0");
    for (name, _, text) in inputs.iter().filter(|_| steps) {
        breakdown(name, text, &enc);
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// One run of each step the proxy takes on `text`, timed alone.
fn breakdown(name: &str, text: &str, enc: &Encoding) {
    let line = line_of(text);
    println!("\n## Steps on {name} (one run each)\n");
    println!("| step | ms |");
    println!("|---|---:|");
    let (t, _) = secs(|| serde_json::from_slice::<Value>(&line).map_or(0, |_| 1));
    println!("| parse the response line | {:.1} |", t * 1e3);
    let mut doc = None;
    let (t, _) = secs(|| {
        doc = serde_json::from_str::<Value>(text).ok();
        1
    });
    println!("| parse the text as JSON | {:.1} |", t * 1e3);
    let doc = match doc {
        Some(v) => Document::Json(v),
        None => Document::Text(text.to_owned()),
    };
    let mut compact = String::new();
    let (t, _) = secs(|| {
        compact = doc.render(9);
        compact.len()
    });
    println!("| rendering ({} bytes) | {:.1} |", compact.len(), t * 1e3);
    let (t, n) = secs(|| bpe_openai::cl100k_base().count(compact.as_str()));
    println!(
        "| count tokens of the whole ({n}), bpe-openai's count | {:.1} |",
        t * 1e3
    );
    let (t, n) = std::thread::scope(|s| {
        s.spawn(|| secs(|| enc.count(&compact)))
            .join()
            .unwrap_or_default()
    });
    println!(
        "| count tokens of the whole ({n}), memoized, on a new thread | {:.1} |",
        t * 1e3
    );
    let (t, n) = secs(|| enc.count(&compact));
    println!(
        "| count tokens of the whole ({n}), memoized, again | {:.1} |",
        t * 1e3
    );
    let (t, _) = secs(|| enc.count_till_limit(&compact, 10_001).unwrap_or(0));
    println!("| count tokens till the budget | {:.3} |", t * 1e3);
    let pager = Pager::new(enc.clone(), 10_000, 9);
    let (t, _) = secs(|| {
        pager
            .page(&doc, &Position::start(), &mut |_| {
                "{\"truncated\":true}".to_owned()
            })
            .map_or(0, |p| p.body.len())
    });
    println!("| page 1 (core pager) | {:.1} |", t * 1e3);
    let (t, _) = secs(|| {
        drop(doc);
        0
    });
    println!("| drop the parsed tree | {:.1} |", t * 1e3);
}
