//! `mcp-budget report LOG.jsonl… [--html FILE]`: what the proxy saved, per tool and in total,
//! from its telemetry logs (docs/guide/telemetry.md, "Report").
//!
//! [`parse`] reads the logs (bad lines are skipped and counted, never fatal), [`aggregate`]
//! builds the rows, [`headline`] the summary lines above them, [`table`] prints them with
//! comfy-table and [`html`] writes the self-contained page with inline SVG charts.
//!
//! A log that cannot be read is reported on stderr as `mcp-budget: cannot read <path>: <reason>`;
//! the other logs are still reported and the exit status is 1.

use std::fs::File;
use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

mod aggregate;
mod headline;
mod html;
mod parse;
mod table;

use headline::Source;

/// Flags of `mcp-budget report`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Telemetry logs written by `proxy --log` (one JSON object per line); several are merged.
    #[arg(required = true, value_name = "LOG.jsonl")]
    logs: Vec<PathBuf>,
    /// Also write the report as one self-contained HTML page with charts.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

/// Runs `mcp-budget report`: the table on stdout, notes on stderr, the page to `--html`.
///
/// # Errors
/// When stdout or the HTML file cannot be written. Unreadable logs are not errors here: they
/// are reported and make the exit status 1.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut records = Vec::new();
    let mut sources = Vec::new();
    for path in &args.logs {
        let shown = path.display().to_string();
        let read = File::open(path).and_then(|f| parse::read_log(BufReader::new(f)));
        let source = match read {
            Ok(log) => {
                let s = Source {
                    path: shown,
                    records: log.records.len() as u64,
                    skipped: log.skipped,
                    error: None,
                };
                records.extend(log.records);
                s
            }
            Err(e) => {
                eprintln!("mcp-budget: cannot read {shown}: {e}");
                Source {
                    path: shown,
                    records: 0,
                    skipped: Vec::new(),
                    error: Some(e.to_string()),
                }
            }
        };
        if let Some(note) = source.skipped_note() {
            eprintln!("mcp-budget: {note}");
        }
        sources.push(source);
    }
    let summary = aggregate::summarize(&records);
    let mut out = std::io::stdout().lock();
    out.write_all(table::render(&summary, &sources).as_bytes())?;
    out.flush()?;
    if let Some(path) = &args.html {
        std::fs::write(path, html::render(&summary, &sources))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(if sources.iter().any(|s| s.error.is_some()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
