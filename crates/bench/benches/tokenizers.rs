//! Tokenizer backends compared: bpe-openai (what mcp-budget ships) vs tiktoken-rs vs the
//! `tiktoken` crate, on cl100k_base and o200k_base.
//!
//! ```text
//! cargo bench -p mcp-budget-bench --bench tokenizers -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Before criterion runs, three reports are printed (skip them with `TOKENIZER_PROBES=0`):
//! 1. **agreement**: every backend's count of every input (must be equal);
//! 2. **first use**: the first count in a fresh process (vocabulary load + regex build) and
//!    the memory it costs (`VmHWM` after minus `VmRSS` before), median of 5 processes;
//! 3. **pathological inputs**: 1.6 MB of `a` and 1.6 MB of spaces, one count per fresh process
//!    with a timeout (`TOKENIZER_PROBE_TIMEOUT_SECS`, default 20), growing sizes until one
//!    times out or panics. Criterion then times only the (backend, input) pairs that finished
//!    quickly.
//!
//! At the end a throughput table (MB/s and ratio to bpe-openai) is printed from criterion's
//! samples (the fastest sample of each benchmark: the machine is shared and loaded).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use mcp_budget_bench::backends::{Backend, Implementation, Vocab};
use mcp_budget_bench::best_secs;
use mcp_budget_core::tokens::Encoding;
use serde_json::Value;

const PROBE: &str = env!("CARGO_BIN_EXE_tokenizer_probe");
const FIXTURE: &str = include_str!("../../core/tests/data/directory_tree.pretty.json");
const MB: usize = 1_000_000;
const PATHOLOGICAL: usize = 1_600_000;
/// Benchmark name of the `tiktoken` crate counting in a fresh thread (cold piece cache).
const TIKTOKEN_COLD: &str = "tiktoken-cold";

/// The inputs timed by criterion: (name, text).
fn inputs() -> Vec<(&'static str, String)> {
    vec![
        ("fixture-dirtree-22KB", FIXTURE.to_owned()),
        ("dirtree-1MB", mcp_budget_bench::directory_tree(MB)),
        ("rows-1MB", mcp_budget_bench::float_rows(MB)),
        ("prose-cjk-emoji-256KB", mcp_budget_bench::prose(256 * 1024)),
        ("base64-256KB", mcp_budget_bench::base64(256 * 1024)),
    ]
}

fn main() {
    let probes = std::env::var("TOKENIZER_PROBES").map_or(true, |v| v != "0");
    let inputs = inputs();
    let mut pathological_ok: Vec<(Backend, &'static str)> = Vec::new();
    if probes {
        agreement(&inputs);
        first_use();
        pathological_ok = pathological();
    } else {
        // Without probes, time only the backends known to be linear on one-character runs.
        for b in Backend::all().filter(|b| b.implementation != Implementation::TiktokenRs) {
            pathological_ok.push((b, "letter-a"));
            pathological_ok.push((b, "spaces"));
        }
    }

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut ran: Vec<(String, String, String, usize)> = Vec::new();
    for vocab in Vocab::ALL {
        let mut group = c.benchmark_group(format!("tokenizers-{}", vocab.name()));
        for (name, text) in &inputs {
            group.throughput(Throughput::Bytes(text.len() as u64));
            for implementation in Implementation::ALL {
                let b = Backend {
                    implementation,
                    vocab,
                };
                group.bench_with_input(
                    BenchmarkId::new(implementation.name(), name),
                    text,
                    |bench, t| bench.iter(|| b.count(black_box(t))),
                );
                ran.push((
                    format!("tokenizers-{}", vocab.name()),
                    implementation.name().to_owned(),
                    (*name).to_owned(),
                    text.len(),
                ));
            }
            // The `tiktoken` crate memoises pieces in a thread-local cache that survives from
            // one iteration to the next; a fresh thread per count starts it cold, as a proxy
            // counting a new tool result would (thread spawn adds ~20-50 µs).
            let b = Backend {
                implementation: Implementation::Tiktoken,
                vocab,
            };
            group.bench_with_input(BenchmarkId::new(TIKTOKEN_COLD, name), text, |bench, t| {
                bench.iter(|| std::thread::scope(|s| s.spawn(|| b.count(black_box(t))).join()))
            });
            ran.push((
                format!("tokenizers-{}", vocab.name()),
                TIKTOKEN_COLD.to_owned(),
                (*name).to_owned(),
                text.len(),
            ));
        }
        for (input, label) in [("letter-a", "a-x-1.6MB"), ("spaces", "spaces-1.6MB")] {
            let text = mcp_budget_bench::input(input, PATHOLOGICAL).unwrap_or_default();
            group.throughput(Throughput::Bytes(text.len() as u64));
            for implementation in Implementation::ALL {
                let b = Backend {
                    implementation,
                    vocab,
                };
                if !pathological_ok.contains(&(b, input)) {
                    continue;
                }
                group.bench_with_input(
                    BenchmarkId::new(implementation.name(), label),
                    &text,
                    |bench, t| bench.iter(|| b.count(black_box(t))),
                );
                ran.push((
                    format!("tokenizers-{}", vocab.name()),
                    implementation.name().to_owned(),
                    label.to_owned(),
                    text.len(),
                ));
            }
        }
        group.finish();
    }
    // Early exit: what `Encoding::fits(text, 10_000)` costs on inputs far over that budget
    // (bpe-openai's count_till_limit stops once the limit is passed; the others must count
    // everything).
    let mut group = c.benchmark_group("early-exit-cl100k_base");
    for (name, text) in &inputs[1..] {
        group.bench_with_input(BenchmarkId::new("fits-10k", name), text, |bench, t| {
            bench.iter(|| Encoding::Cl100kBase.fits(black_box(t), 10_000))
        });
    }
    group.finish();
    c.final_summary();
    throughput_table(&ran);
    early_exit_table(&inputs[1..]);
}

/// Time of `fits(text, 10_000)` against a full count by bpe-openai.
fn early_exit_table(inputs: &[(&'static str, String)]) {
    println!(
        "\n## Early exit: bpe-openai `fits(text, 10000)` vs full `count` (cl100k_base, best samples)\n"
    );
    println!("| input | bytes | count (ms) | fits 10k (ms) | speed-up |");
    println!("|---|---:|---:|---:|---:|");
    for (name, text) in inputs {
        let full = best_secs("tokenizers-cl100k_base", "bpe-openai", name);
        let fits = best_secs("early-exit-cl100k_base", "fits-10k", name);
        if let (Some(full), Some(fits)) = (full, fits) {
            println!(
                "| {name} | {} | {:.2} | {:.3} | {:.0}× |",
                text.len(),
                full * 1e3,
                fits * 1e3,
                full / fits
            );
        }
    }
}

/// Every backend counts every input (and the fixture's compact form); prints the counts and
/// flags any disagreement. tiktoken-rs is skipped on nothing here: these inputs have no long
/// single-class runs.
fn agreement(inputs: &[(&'static str, String)]) {
    println!("\n## Agreement of counts (tokens)\n");
    println!("| input | bytes | encoding | bpe-openai | tiktoken-rs | tiktoken | agree |");
    println!("|---|---:|---|---:|---:|---:|---|");
    for (name, text) in inputs {
        for vocab in Vocab::ALL {
            let counts: Vec<usize> = Implementation::ALL
                .iter()
                .map(|&implementation| {
                    Backend {
                        implementation,
                        vocab,
                    }
                    .count(text)
                })
                .collect();
            let agree = counts.windows(2).all(|w| w[0] == w[1]);
            println!(
                "| {name} | {} | {} | {} | {} | {} | {} |",
                text.len(),
                vocab.name(),
                counts[0],
                counts[1],
                counts[2],
                if agree { "yes" } else { "**NO**" }
            );
        }
    }
}

/// Runs the probe binary; `None` on timeout (the process is killed) or when it cannot start.
fn run_probe(args: &[&str], timeout: Duration) -> Option<Value> {
    let mut child = Command::new(PROBE)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < timeout => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    serde_json::from_str(out.trim()).ok()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

/// First-use time and memory per backend, median of 5 fresh processes.
fn first_use() {
    println!("\n## First use (fresh process, first count of \"Hello, world!\"), median of 5\n");
    println!("| backend | first count (ms) | peak RSS added (MiB) | RSS kept (MiB) |");
    println!("|---|---:|---:|---:|");
    for b in Backend::all() {
        let (mut ms, mut peak, mut kept) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..5 {
            let Some(v) = run_probe(&["load", &b.to_string()], Duration::from_secs(60)) else {
                continue;
            };
            let num = |k: &str| v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
            ms.push(num("first_count_ms"));
            peak.push((num("hwm_after_kib") - num("rss_before_kib")) / 1024.0);
            kept.push((num("rss_after_kib") - num("rss_before_kib")) / 1024.0);
        }
        println!(
            "| {b} | {:.1} | {:.1} | {:.1} |",
            median(ms),
            median(peak),
            median(kept)
        );
    }
}

/// One-character runs in growing sizes up to 1.6 MB, one fresh process each, with a timeout.
/// Returns the (backend, input) pairs that finished 1.6 MB within 2 s (criterion times those).
fn pathological() -> Vec<(Backend, &'static str)> {
    let timeout = Duration::from_secs(
        std::env::var("TOKENIZER_PROBE_TIMEOUT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20),
    );
    println!(
        "\n## One-character runs (one count per fresh process, timeout {} s)\n",
        timeout.as_secs()
    );
    println!("| backend | input | bytes | result | seconds | MB/s |");
    println!("|---|---|---:|---|---:|---:|");
    let mut ok = Vec::new();
    for input in ["letter-a", "spaces"] {
        for b in Backend::all() {
            for size in [16_000, 64_000, 256_000, 512_000, 1_000_000, PATHOLOGICAL] {
                let size_arg = size.to_string();
                let started = Instant::now();
                let outcome = run_probe(&["count", &b.to_string(), input, &size_arg], timeout);
                let (result, secs) = match &outcome {
                    None => (
                        "timeout (killed)".to_owned(),
                        started.elapsed().as_secs_f64(),
                    ),
                    Some(v) => {
                        let secs = v.get("secs").and_then(Value::as_f64).unwrap_or(f64::NAN);
                        match (v.get("tokens"), v.get("panic")) {
                            (Some(t), _) => (format!("{t} tokens"), secs),
                            (_, Some(p)) => {
                                let p = p.as_str().unwrap_or_default();
                                let p: String = p.chars().take(80).collect();
                                (format!("panic: {}", p.replace('|', "/")), secs)
                            }
                            _ => ("no result".to_owned(), secs),
                        }
                    }
                };
                println!(
                    "| {b} | {input} | {size} | {result} | {secs:.3} | {:.1} |",
                    size as f64 / secs / 1e6
                );
                let finished = outcome.as_ref().is_some_and(|v| v.get("tokens").is_some());
                if !finished {
                    break;
                }
                if size == PATHOLOGICAL && secs < 2.0 {
                    ok.push((b, input));
                }
            }
        }
    }
    ok
}

/// Prints MB/s per backend and the ratio to bpe-openai (higher is faster).
fn throughput_table(ran: &[(String, String, String, usize)]) {
    // (group, input) -> implementation -> MB/s
    let mut rows: BTreeMap<(String, String), BTreeMap<String, f64>> = BTreeMap::new();
    let mut sizes: BTreeMap<String, usize> = BTreeMap::new();
    for (group, function, parameter, bytes) in ran {
        if let Some(secs) = best_secs(group, function, parameter) {
            rows.entry((group.clone(), parameter.clone()))
                .or_default()
                .insert(function.clone(), *bytes as f64 / secs / 1e6);
            sizes.insert(parameter.clone(), *bytes);
        }
    }
    println!(
        "\n## Throughput (MB/s of the best criterion sample; ratio = bpe-openai / other, higher = bpe-openai faster)\n"
    );
    println!(
        "| encoding | input | bytes | bpe-openai | tiktoken-rs | tiktoken | tiktoken cold | bpe-openai ÷ tiktoken-rs | bpe-openai ÷ tiktoken | bpe-openai ÷ tiktoken cold |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for ((group, input), by_impl) in &rows {
        let get = |i: Implementation| by_impl.get(i.name()).copied();
        let cold = by_impl.get(TIKTOKEN_COLD).copied();
        let fmt = |x: Option<f64>| x.map_or("—".to_owned(), |v| format!("{v:.1}"));
        let ratio = |other: Option<f64>| match (get(Implementation::BpeOpenai), other) {
            (Some(a), Some(b)) => format!("{:.2}×", a / b),
            _ => "—".to_owned(),
        };
        println!(
            "| {} | {input} | {} | {} | {} | {} | {} | {} | {} | {} |",
            group.trim_start_matches("tokenizers-"),
            sizes.get(input).copied().unwrap_or(0),
            fmt(get(Implementation::BpeOpenai)),
            fmt(get(Implementation::TiktokenRs)),
            fmt(get(Implementation::Tiktoken)),
            fmt(cold),
            ratio(get(Implementation::TiktokenRs)),
            ratio(get(Implementation::Tiktoken)),
            ratio(cold),
        );
    }
}
