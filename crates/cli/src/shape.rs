//! `mcp-budget shape`: page 1 (or every page) of a payload, exactly as the proxy would show it.
//!
//! Without `--all`: page 1 as the first content item carries it (compact JSON, or the text),
//! then, when there is more, the meta item's JSON on its own last line. With `--all`: one JSON
//! object per page and line,
//! `{"page":<JSON value or text as a JSON string>,"meta":{…},"location":"<full location>"}`
//! (`meta` and `location` absent when the input fits; `location` is the page's position never
//! abbreviated, as the proxy sends it in `_meta["mcp-budget/page"]`).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use mcp_budget_core::paginate::meta::{HintTools, build_meta, response_id};
use mcp_budget_core::paginate::{Document, Page, PageInfo, Pager, Position};
use mcp_budget_core::tokens::Encoding;
use serde_json::{Map, Value};

/// Flags of `mcp-budget shape`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Budget in tokens for one page, its meta item included.
    #[arg(long, env = "MCP_BUDGET_MAX_TOKENS", default_value_t = mcp_budget_core::DEFAULT_BUDGET_TOKENS)]
    max_tokens: usize,
    /// cl100k_base | o200k_base | chars4 | bytes | <path to tokenizer.json>.
    #[arg(long, env = "MCP_BUDGET_ENCODING", default_value = "cl100k_base")]
    encoding: String,
    /// Significant digits for floats, 0 = exact.
    #[arg(long, env = "MCP_BUDGET_PRECISION", default_value_t = mcp_budget_core::DEFAULT_PRECISION)]
    precision: u32,
    /// Print every page, one JSON object per line.
    #[arg(long)]
    all: bool,
    /// The payload: a JSON document or a text; `-` reads standard input.
    file: PathBuf,
}

/// Runs `mcp-budget shape`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let encoding: Encoding = args.encoding.parse()?;
    let mut raw = Vec::new();
    if args.file.as_os_str() == "-" {
        std::io::stdin()
            .read_to_end(&mut raw)
            .context("reading standard input")?;
    } else {
        raw = std::fs::read(&args.file)
            .with_context(|| format!("reading {}", args.file.display()))?;
    }
    let id = response_id(&raw);
    let text = String::from_utf8(raw).context("the input is not UTF-8")?;
    let doc = Document::from_text(text);
    let total = encoding.count(&doc.render(args.precision)) as u64;
    let pager = Pager::new(encoding, args.max_tokens, args.precision);
    let render = |index: usize, info: &PageInfo<'_>| {
        let meta = build_meta(info, &id, index as u64 + 1, total, HintTools::default());
        serde_json::to_string(&meta).unwrap_or_default()
    };

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut at = Position::start();
    let mut index = 0;
    loop {
        let page = pager.page(&doc, &at, &mut |info| render(index, info))?;
        if page.oversized {
            eprintln!(
                "mcp-budget: page {} holds one indivisible value of {} tokens, over the budget",
                index + 1,
                page.tokens
            );
        }
        if args.all {
            writeln!(out, "{}", all_line(&page))?;
        } else {
            out.write_all(page.body.as_bytes())?;
            if !page.body.ends_with('\n') {
                out.write_all(b"\n")?;
            }
            if let Some(meta) = &page.meta {
                writeln!(out, "{meta}")?;
            }
            break;
        }
        match page.next {
            Some(next) if args.all => {
                at = next;
                index += 1;
            }
            _ => break,
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `{"page":…,"meta":{…}}` for `--all`.
fn all_line(page: &Page) -> String {
    let mut line = Map::new();
    let body = match &page.value {
        Some(v) => v.clone(),
        None => Value::String(page.body.clone()),
    };
    line.insert("page".into(), body);
    if let Some(meta) = &page.meta {
        let meta = serde_json::from_str(meta).unwrap_or_else(|_| Value::String(meta.clone()));
        line.insert("meta".into(), meta);
        // The full location (the meta's `shown` may be abbreviated): what the proxy sends in
        // `_meta["mcp-budget/page"].location`, and what pages are merged by.
        line.insert("location".into(), Value::String(page.location.clone()));
    }
    serde_json::to_string(&Value::Object(line)).unwrap_or_default()
}
