//! `mcp-budget demo` and the hidden `fixture-server`.
//!
//! The demo starts this same binary twice: once as the fixture server alone ("direct") and once
//! as `mcp-budget proxy -- mcp-budget fixture-server`. A scripted client calls each big tool on
//! both, follows `read_more` to the end through the proxy, puts the pages back together by the
//! merge rule of `mcp_budget_core::paginate`, and checks the result equals the direct result
//! after compaction. Nothing but the binary is needed.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, anyhow};
use comfy_table::{Cell, CellAlignment, Table, presets::UTF8_FULL_CONDENSED};
use mcp_budget_core::paginate::Document;
use mcp_budget_core::tokens::Encoding;
use serde_json::{Value, json};

mod client;
mod pages;

use client::RpcClient;

/// Flags of `mcp-budget demo` (none).
#[derive(Debug, clap::Args)]
pub(crate) struct Args {}

/// Flags of the hidden `mcp-budget fixture-server`.
#[derive(Debug, clap::Args)]
pub(crate) struct FixtureArgs {
    /// Protocol era: `2026-07-28` speaks the stateless draft (server/discover, `_meta`,
    /// `resultType`); `handshake`, or none, speaks initialize (2024-11-05 … 2025-11-25).
    #[arg(long)]
    protocol: Option<String>,
    /// Also list an upstream tool named `read_more`.
    #[arg(long)]
    collide_read_more: bool,
    /// Also offer prompts and resources (empty lists).
    #[arg(long)]
    lists: bool,
    /// Serve what the MCP conformance suite's server scenarios ask for (tests/conformance).
    #[arg(long)]
    conformance: bool,
}

/// The proxy's defaults that the demo relies on (DESIGN.md, CLI contract).
const BUDGET: usize = mcp_budget_core::DEFAULT_BUDGET_TOKENS;
const PRECISION: u32 = mcp_budget_core::DEFAULT_PRECISION;

/// The fixture tools the demo shows, with what each one is.
const TOOLS: [(&str, &str); 6] = [
    ("directory_tree", "20,000-entry directory tree, pretty JSON"),
    ("table_rows", "5,000 rows with 17-digit floats"),
    ("long_text", "20,000 CRLF log lines, one line of 120 KB"),
    ("structured", "2,000 items as structuredContent + text"),
    ("error_big", "isError with a 200 KB stack trace"),
    ("base64_in_json", "48 KB of base64 inside a JSON string"),
];

/// What the demo found for one tool.
struct Outcome {
    tool: &'static str,
    direct_tokens: usize,
    first_page_tokens: usize,
    max_page_tokens: usize,
    read_more_calls: usize,
    check: Check,
}

/// The result of comparing the reassembled pages with the compacted direct result.
enum Check {
    Equal,
    /// Equal, once each base64 string the proxy wrote to a file is read back: how many.
    EqualWithFiles(usize),
    Different(String),
}

/// Runs `mcp-budget demo`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let _ = args;
    let exe = std::env::current_exe().context("finding this binary")?;
    let exe_str = exe
        .to_str()
        .ok_or_else(|| anyhow!("the binary's path is not UTF-8"))?;
    let encoding = Encoding::Cl100kBase;
    let started = Instant::now();
    println!(
        "mcp-budget demo: the built-in fixture server, called directly and through\n  mcp-budget proxy -- mcp-budget fixture-server\nbudget {BUDGET} tokens per result ({encoding}), floats rounded to {PRECISION} significant digits.\n"
    );

    let mut direct = RpcClient::spawn("fixture server", &exe, &["fixture-server"])?;
    direct.initialize()?;
    let (budget, precision) = (BUDGET.to_string(), PRECISION.to_string());
    let proxy_args = [
        "proxy",
        "--max-tokens",
        &budget,
        "--precision",
        &precision,
        "--encoding",
        "cl100k_base",
        "--",
        exe_str,
        "fixture-server",
    ];
    let mut proxied = RpcClient::spawn("proxy", &exe, &proxy_args)?;
    proxied.initialize()?;
    let listed = proxied.request("tools/list", json!({}))?;
    let names = injected_names(&listed).ok_or_else(|| {
        anyhow!("the proxy's tools/list lacks the injected read_more and query_response")
    })?;
    println!(
        "tools/list through the proxy: {} tools, including the injected {} and {}.\n",
        listed["tools"].as_array().map_or(0, Vec::len),
        names.0,
        names.1
    );

    let mut outcomes = Vec::new();
    for (tool, what) in TOOLS {
        let outcome = demo_tool(&mut direct, &mut proxied, &names.0, &encoding, tool, what)?;
        outcomes.push(outcome);
    }
    let query_ok = demo_query(&mut direct, &mut proxied, &names.1)?;
    direct.close()?;
    proxied.close()?;

    print_summary(&outcomes);
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| matches!(o.check, Check::Different(_)))
        .map(|o| o.tool)
        .collect();
    let over: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.max_page_tokens > BUDGET)
        .map(|o| o.tool)
        .collect();
    println!("\n(finished in {:.1} s)", started.elapsed().as_secs_f64());
    if failed.is_empty() && over.is_empty() && query_ok {
        println!(
            "All reassembled results equal the direct ones after compaction; every page fits the budget; query_response agrees."
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "FAILED: reassembly differs for {failed:?}; over budget: {over:?}; query_response right: {query_ok}"
        );
        Ok(ExitCode::from(1))
    }
}

/// The names of the injected `read_more` and `query_response` tools (prefixed on collision);
/// `None` when tools/list lacks them.
fn injected_names(listed: &Value) -> Option<(String, String)> {
    let tools = listed["tools"].as_array()?;
    let find = |base: &str| {
        tools
            .iter()
            .filter_map(|t| t["name"].as_str())
            .find(|n| *n == base || n.ends_with(&format!("_{base}")))
            .map(str::to_owned)
    };
    Some((find("read_more")?, find("query_response")?))
}

/// Sum of the token counts of the result's `text` content items (DESIGN.md: model-visible tokens).
fn visible_tokens(result: &Value, encoding: &Encoding) -> usize {
    pages::text_items(result)
        .iter()
        .map(|t| encoding.count(t))
        .sum()
}

fn demo_tool(
    direct: &mut RpcClient,
    proxied: &mut RpcClient,
    read_more: &str,
    encoding: &Encoding,
    tool: &'static str,
    what: &str,
) -> anyhow::Result<Outcome> {
    let direct_result = direct.call_tool(tool, json!({}))?;
    let direct_tokens = visible_tokens(&direct_result, encoding);
    let first = proxied.call_tool(tool, json!({}))?;
    let first_page_tokens = visible_tokens(&first, encoding);
    let mut max_page_tokens = first_page_tokens;
    let mut wire_pages = vec![pages::WirePage::from_result(&first)];

    println!("{tool}: {what}");
    println!("  direct:      {direct_tokens:>9} tokens in one result");
    println!("  via proxy:   {first_page_tokens:>9} tokens on page 1");
    match &wire_pages[0].meta {
        Some(meta) => println!("  page 1 meta: {meta}"),
        None => println!("  page 1 meta: none (the whole result fit)"),
    }
    let mut cursor = wire_pages[0].next_cursor();
    let mut calls = 0usize;
    while let Some(c) = cursor {
        calls += 1;
        let page = proxied.call_tool(read_more, json!({"cursor": c}))?;
        max_page_tokens = max_page_tokens.max(visible_tokens(&page, encoding));
        let wire = pages::WirePage::from_result(&page);
        cursor = wire.next_cursor();
        wire_pages.push(wire);
        if calls > 100_000 {
            anyhow::bail!("{tool}: more than 100,000 pages: the cursors do not terminate");
        }
    }
    let check = compare(&direct_result, &wire_pages);
    let verdict = match &check {
        Check::Equal => "equal".to_owned(),
        Check::EqualWithFiles(n) => format!("equal, reading {n} base64 string(s) back from files"),
        Check::Different(why) => format!("DIFFERENT: {why}"),
    };
    println!(
        "  read_more:   {calls} calls to read everything (largest page {max_page_tokens} tokens); reassembled vs direct: {verdict}\n"
    );
    Ok(Outcome {
        tool,
        direct_tokens,
        first_page_tokens,
        max_page_tokens,
        read_more_calls: calls,
        check,
    })
}

/// Shows `query_response`: a jq filter on the cached full result, without calling the tool
/// again; checks its answer against the same count made on the direct result.
fn demo_query(
    direct: &mut RpcClient,
    proxied: &mut RpcClient,
    query_response: &str,
) -> anyhow::Result<bool> {
    let first = proxied.call_tool("table_rows", json!({}))?;
    let meta = pages::WirePage::from_result(&first);
    let id = meta
        .response_id()
        .ok_or_else(|| anyhow!("table_rows was not paged: no response_id"))?;
    let query = "map(select(.ok == false)) | length";
    let answer = proxied.call_tool(query_response, json!({"response_id": id, "query": query}))?;
    let text = pages::text_items(&answer).join(" ");
    let rows: Value = pages::text_items(&direct.call_tool("table_rows", json!({}))?)
        .first()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(Value::Null);
    let expected = rows
        .as_array()
        .map_or(0, |r| r.iter().filter(|row| row["ok"] == false).count());
    let ok = text.trim() == expected.to_string();
    println!(
        "{query_response} {{\"response_id\":\"{id}\",\"query\":\"{query}\"}}\n  -> {text}   (counted on the direct result: {expected}{})\n",
        if ok { ", same" } else { ", DIFFERENT" }
    );
    Ok(ok)
}

/// Compares the pages' reassembly with the direct result's first text item, compacted.
fn compare(direct: &Value, wire: &[pages::WirePage]) -> Check {
    let Some(direct_text) = pages::text_items(direct).into_iter().next() else {
        return Check::Different("the direct result has no text".into());
    };
    let expected = Document::from_text(direct_text.to_owned());
    let got = match pages::reassemble(wire) {
        Ok(doc) => doc,
        Err(why) => return Check::Different(why),
    };
    match (&expected, &got) {
        (Document::Json(e), Document::Json(g)) => {
            // Value-equal after rounding: compare the compact renderings.
            let (e, g) = (
                Document::Json(e.clone()).render(PRECISION),
                Document::Json(g.clone()).render(PRECISION),
            );
            if e == g {
                return Check::Equal;
            }
            let rounded = |s: &str| serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
            match pages::equal_reading_files(&rounded(&e), &rounded(&g)) {
                Ok(0) | Err(_) => Check::Different(first_difference(&e, &g)),
                Ok(files) => Check::EqualWithFiles(files),
            }
        }
        (Document::Text(e), Document::Text(g)) if e == g => Check::Equal,
        (Document::Text(e), Document::Text(g)) => Check::Different(first_difference(e, g)),
        _ => Check::Different("one side is JSON, the other text".into()),
    }
}

fn first_difference(a: &str, b: &str) -> String {
    let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let snippet = |s: &str| {
        s.get(at.saturating_sub(20)..(at + 40).min(s.len()))
            .unwrap_or("")
            .to_owned()
    };
    format!(
        "lengths {} vs {}, first difference at byte {at}: {:?} vs {:?}",
        a.len(),
        b.len(),
        snippet(a),
        snippet(b)
    )
}

fn print_summary(outcomes: &[Outcome]) {
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_header(vec![
        "tool",
        "tokens direct",
        "tokens via proxy (page 1)",
        "read_more calls",
        "reassembled = direct",
    ]);
    for o in outcomes {
        let check = match &o.check {
            Check::Equal => "yes".to_owned(),
            Check::EqualWithFiles(n) => format!("yes ({n} blob(s) in files)"),
            Check::Different(_) => "NO".to_owned(),
        };
        table.add_row(vec![
            Cell::new(o.tool),
            Cell::new(o.direct_tokens).set_alignment(CellAlignment::Right),
            Cell::new(o.first_page_tokens).set_alignment(CellAlignment::Right),
            Cell::new(o.read_more_calls).set_alignment(CellAlignment::Right),
            Cell::new(check),
        ]);
    }
    println!("{table}");
}

/// Runs the fixture MCP server on stdin/stdout.
pub(crate) fn run_fixture(args: FixtureArgs) -> anyhow::Result<ExitCode> {
    use mcp_budget_fixture::{CRASH_EXIT_CODE, Ended, Options, Protocol, STATELESS_VERSION};
    let protocol = match args.protocol.as_deref() {
        Some(STATELESS_VERSION) => Protocol::Stateless,
        None | Some("handshake") => Protocol::Handshake,
        Some(other) => {
            anyhow::bail!("unknown --protocol {other:?}: expected {STATELESS_VERSION} or handshake")
        }
    };
    let options = Options {
        protocol,
        collide_read_more: args.collide_read_more,
        offer_lists: args.lists,
        conformance: args.conformance,
    };
    let stdin = std::io::BufReader::new(std::io::stdin());
    let stdout = std::io::stdout().lock();
    match mcp_budget_fixture::serve(stdin, stdout, options)? {
        Ended::Eof => Ok(ExitCode::SUCCESS),
        Ended::Crashed => Ok(ExitCode::from(CRASH_EXIT_CODE)),
    }
}
