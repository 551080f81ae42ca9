//! One tokenizer measurement in a fresh process, printed as one line of JSON on stdout.
//!
//! ```text
//! tokenizer_probe load <backend>                 first-use time and memory of a backend
//! tokenizer_probe count <backend> <input> <bytes> one count of a generated input, timed
//! ```
//! `<backend>` is `bpe-openai|tiktoken-rs|tiktoken` `/` `cl100k_base|o200k_base`; `<input>` a
//! name of [`mcp_budget_bench::input`]. The `tokenizers` bench runs this binary with a timeout
//! (a process can be killed; a thread stuck in a quadratic loop cannot), and a panic inside the
//! tokenizer is caught and reported as `{"panic":"…"}`.

use std::process::ExitCode;
use std::time::Instant;

use mcp_budget_bench::backends::{Backend, memory_kib};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["load", backend] => match backend.parse::<Backend>() {
            Ok(b) => {
                load(b);
                ExitCode::SUCCESS
            }
            Err(e) => usage(&e),
        },
        ["count", backend, input, bytes] => {
            let (Ok(b), Ok(n)) = (backend.parse::<Backend>(), bytes.parse::<usize>()) else {
                return usage("bad backend or byte count");
            };
            let Some(text) = mcp_budget_bench::input(input, n) else {
                return usage("unknown input");
            };
            count(b, input, &text);
            ExitCode::SUCCESS
        }
        _ => usage("bad arguments"),
    }
}

fn usage(why: &str) -> ExitCode {
    eprintln!(
        "tokenizer_probe: {why}\nusage: tokenizer_probe load <backend> | count <backend> <input> <bytes>"
    );
    ExitCode::from(2)
}

/// Times the first count (which loads the vocabulary and builds the regex) and reads memory
/// before and after.
fn load(backend: Backend) {
    let (_, rss_before) = memory_kib().unwrap_or((0, 0));
    let t = Instant::now();
    let n = backend.count("Hello, world!");
    let first = t.elapsed();
    let (hwm_after, rss_after) = memory_kib().unwrap_or((0, 0));
    let t = Instant::now();
    let m = backend.count("Hello, world!");
    let second = t.elapsed();
    assert_eq!(n, m);
    println!(
        "{{\"backend\":\"{backend}\",\"first_count_ms\":{:.3},\"second_count_us\":{:.3},\"rss_before_kib\":{rss_before},\"hwm_after_kib\":{hwm_after},\"rss_after_kib\":{rss_after}}}",
        first.as_secs_f64() * 1e3,
        second.as_secs_f64() * 1e6,
    );
}

/// Loads the backend on a tiny text first, then times one count of `text`.
fn count(backend: Backend, input: &str, text: &str) {
    backend.count("warm up");
    let t = Instant::now();
    let result = std::panic::catch_unwind(|| backend.count(text));
    let secs = t.elapsed().as_secs_f64();
    match result {
        Ok(tokens) => println!(
            "{{\"backend\":\"{backend}\",\"input\":\"{input}\",\"bytes\":{},\"tokens\":{tokens},\"secs\":{secs:.6}}}",
            text.len()
        ),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("(non-string panic)");
            println!(
                "{{\"backend\":\"{backend}\",\"input\":\"{input}\",\"bytes\":{},\"panic\":{},\"secs\":{secs:.6}}}",
                text.len(),
                serde_json::Value::String(msg.to_owned())
            );
        }
    }
}
