//! `mcp-budget measure`: what payloads cost in real tokens, which fields cost most, and what
//! each compaction would save.
//!
//! Glue only: this module finds and reads the files (walking directories, with a progress bar
//! on stderr), hands each one to [`mcp_budget_core::measure`] and prints the reports as tables
//! (comfy-table) or as JSON (`--json`, field names in docs/guide/shape-and-measure.md).
//!
//! A file that cannot be read or measured (I/O error, invalid UTF-8, invalid JSON in a `.json`
//! file) is reported on stderr as `mcp-budget: <path>: <reason>`; the run goes on and exits
//! with status 1 at the end.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use comfy_table::{Cell, CellAlignment, Table, presets};
use indicatif::{ProgressBar, ProgressStyle};
use mcp_budget_core::measure::{
    self, DefinitionsCost, FieldShare, Options, PerEncoding, Report, SizeRow, ToolsCost, WhatIf,
};
use mcp_budget_core::tokens::Encoding;
use serde::Serialize;

/// Flags of `mcp-budget measure`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Encoding to count with; repeat for several columns. cl100k_base | o200k_base | chars4 |
    /// bytes | <path to tokenizer.json>. [default: cl100k_base and o200k_base]
    #[arg(long = "encoding", value_name = "E")]
    encodings: Vec<String>,
    /// Print the numbers as one JSON object instead of tables.
    #[arg(long)]
    json: bool,
    /// How many key paths the field share shows.
    #[arg(long, value_name = "N", default_value_t = measure::DEFAULT_TOP)]
    top: usize,
    /// Files, directories (every file in them, recursively) or `-` for stdin.
    #[arg(required = true, value_name = "FILE|DIR|-")]
    inputs: Vec<PathBuf>,
}

/// One file to measure.
struct Job {
    /// As shown in output (`-` for stdin).
    path: PathBuf,
    /// Named on the command line (full report) rather than found in a directory (one row).
    explicit: bool,
}

/// One measured file, as `--json` prints it: `{"path":…, "kind":…, "size":[…], …}`.
#[derive(Serialize)]
struct FileReport {
    path: String,
    #[serde(flatten)]
    report: Report,
    #[serde(skip)]
    explicit: bool,
}

/// A file that could not be measured.
#[derive(Serialize)]
struct FileError {
    path: String,
    error: String,
}

/// The totals over several files.
#[derive(Serialize)]
struct Totals {
    files: usize,
    size: SizeRow,
    what_ifs: Vec<WhatIf>,
}

/// What `--json` prints.
#[derive(Serialize)]
struct JsonOutput<'a> {
    encodings: Vec<&'a str>,
    files: &'a [FileReport],
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<Totals>,
    errors: &'a [FileError],
}

/// Runs `mcp-budget measure`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let encodings = if args.encodings.is_empty() {
        Options::default().encodings
    } else {
        let mut encodings: Vec<Encoding> = Vec::new();
        for e in &args.encodings {
            let e = e.parse::<Encoding>()?;
            // Per-encoding figures are JSON objects keyed by name: a repeat would be a
            // duplicate key (and a duplicate column).
            if !encodings.iter().any(|seen| seen.name() == e.name()) {
                encodings.push(e);
            }
        }
        encodings
    };
    let options = Options {
        encodings,
        top: args.top,
    };

    let mut errors = Vec::new();
    let mut jobs = Vec::new();
    let mut walked_dir = false;
    for input in &args.inputs {
        if input.as_os_str() == "-" {
            jobs.push(Job {
                path: input.clone(),
                explicit: true,
            });
        } else if input.is_dir() {
            walked_dir = true;
            walk(input, &mut jobs, &mut errors);
        } else {
            jobs.push(Job {
                path: input.clone(),
                explicit: true,
            });
        }
    }

    // Hidden when stderr is not a terminal (indicatif checks), and when there is no directory.
    let bar = if walked_dir {
        let bar = ProgressBar::new(jobs.len() as u64);
        if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} {wide_msg}") {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut files = Vec::new();
    // Standard input is read once: a repeated `-` measures the same bytes again.
    let mut stdin = None;
    for job in jobs {
        let shown = job.path.display().to_string();
        bar.set_message(shown.clone());
        match measure_one(&job.path, &options, &mut stdin) {
            Ok(report) => files.push(FileReport {
                path: shown,
                report,
                explicit: job.explicit,
            }),
            Err(e) => {
                bar.suspend(|| eprintln!("mcp-budget: {shown}: {e:#}"));
                errors.push(FileError {
                    path: shown,
                    error: format!("{e:#}"),
                });
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();

    let total = (files.len() > 1)
        .then(|| {
            let reports: Vec<&Report> = files.iter().map(|f| &f.report).collect();
            measure::totals(&reports)
        })
        .flatten()
        .map(|(size, what_ifs)| Totals {
            files: files.len(),
            size,
            what_ifs,
        });

    let mut out = std::io::stdout().lock();
    if args.json {
        let json = JsonOutput {
            encodings: options.encodings.iter().map(Encoding::name).collect(),
            files: &files,
            total,
            errors: &errors,
        };
        // Serialized first so a closed stdout surfaces as an io::Error (main exits quietly).
        let text = serde_json::to_string(&json)?;
        writeln!(out, "{text}")?;
    } else {
        write!(out, "{}", render(&files, total.as_ref()))?;
    }
    out.flush()?;
    Ok(if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Every file under `dir`, recursively, sorted by path; symlinked directories are not followed.
fn walk(dir: &Path, jobs: &mut Vec<Job>, errors: &mut Vec<FileError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            eprintln!("mcp-budget: {}: {e}", dir.display());
            errors.push(FileError {
                path: dir.display().to_string(),
                error: e.to_string(),
            });
            return;
        }
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        let is_real_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if is_real_dir {
            walk(&path, jobs, errors);
        } else if !path.is_dir() {
            jobs.push(Job {
                path,
                explicit: false,
            });
        }
    }
}

/// Reads and measures one file (`-` = stdin). A `.json` extension makes invalid JSON an error.
/// Measures one file, or standard input for `-` (read into `stdin` the first time).
fn measure_one(
    path: &Path,
    options: &Options,
    stdin: &mut Option<Vec<u8>>,
) -> anyhow::Result<Report> {
    let read;
    let bytes: &[u8] = if path.as_os_str() == "-" {
        if stdin.is_none() {
            let mut b = Vec::new();
            std::io::stdin()
                .read_to_end(&mut b)
                .context("cannot read stdin")?;
            *stdin = Some(b);
        }
        stdin.as_deref().unwrap_or_default()
    } else {
        read = std::fs::read(path).context("cannot read")?;
        &read
    };
    let expect_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    Ok(measure::measure_bytes(bytes, expect_json, options)?)
}

/// The tables of every report: full sections for files named on the command line, then one
/// row per file and the totals when there are several files.
fn render(files: &[FileReport], total: Option<&Totals>) -> String {
    let mut s = String::new();
    for f in files.iter().filter(|f| f.explicit) {
        s.push_str(&render_report(&f.path, &f.report));
    }
    if let Some(t) = total {
        s.push_str(&format!("== {} files ==\n\nSize\n", t.files));
        let mut rows: Vec<(String, &SizeRow)> = files
            .iter()
            .filter_map(|f| {
                f.report
                    .whole()
                    .map(|w| (format!("{} ({})", f.path, f.report.kind.name()), w))
            })
            .collect();
        rows.push(("total".to_owned(), &t.size));
        s.push_str(&size_table("file", &rows).to_string());
        s.push_str("\n\n");
        if !t.what_ifs.is_empty() {
            s.push_str("What-ifs (summed over the files each applies to)\n");
            s.push_str(&what_if_table(&t.what_ifs).to_string());
            s.push_str("\n\n");
        }
    }
    s
}

/// Sections 1–4 of one report.
fn render_report(path: &str, r: &Report) -> String {
    let mut s = format!("== {path} ({}) ==\n\n1. Size\n", r.kind.name());
    let rows: Vec<(String, &SizeRow)> = r.size.iter().map(|x| (x.part.clone(), x)).collect();
    s.push_str(&size_table("part", &rows).to_string());
    s.push_str("\n\n2. What-ifs");
    if r.what_ifs.is_empty() {
        s.push_str(": none applies\n\n");
    } else {
        s.push('\n');
        s.push_str(&what_if_table(&r.what_ifs).to_string());
        s.push_str("\n\n");
    }
    if let Some(f) = &r.field_share {
        s.push_str(&field_title(f));
        s.push_str(&field_table(f).to_string());
        s.push_str("\n\n");
    }
    if let Some(t) = &r.tools {
        s.push_str("4. Tools (tokens per tool definition, largest first)\n");
        s.push_str(&tools_table(t).to_string());
        s.push_str("\n\n");
        s.push_str(&definitions_title(&t.definitions));
        s.push_str(&definitions_table(&t.definitions).to_string());
        s.push_str("\n\n");
    }
    s
}

fn new_table(header: Vec<String>, right_from: usize) -> Table {
    let mut t = Table::new();
    t.load_style(presets::ASCII_MARKDOWN);
    let n = header.len();
    t.set_header(header);
    for i in right_from..n {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

fn enc_names<T>(p: &PerEncoding<T>) -> Vec<String> {
    p.iter().map(|(n, _)| n.to_owned()).collect()
}

fn size_table(label: &str, rows: &[(String, &SizeRow)]) -> Table {
    let encs = rows
        .first()
        .map(|r| enc_names(&r.1.tokens))
        .unwrap_or_default();
    let mut header: Vec<String> = vec![
        label.into(),
        "bytes".into(),
        "chars".into(),
        "chars/4".into(),
    ];
    for e in &encs {
        header.push(e.clone());
        header.push("chars/4 err %".into());
    }
    let mut t = new_table(header, 1);
    for (name, r) in rows {
        let mut cells = vec![
            Cell::new(name),
            Cell::new(r.bytes),
            Cell::new(r.chars),
            Cell::new(r.chars4),
        ];
        for ((_, tok), (_, err)) in r.tokens.iter().zip(r.estimate_error_pct.iter()) {
            cells.push(Cell::new(tok));
            cells.push(Cell::new(format!("{err:+.1}")));
        }
        t.add_row(cells);
    }
    t
}

fn what_if_label(w: &WhatIf) -> String {
    match (w.name.as_str(), w.precision) {
        ("compact", _) => "pretty -> compact".into(),
        ("floats", Some(p)) => format!("floats -> {p} significant digits"),
        ("uuid_prefix", _) => "UUIDs -> 12-hex prefix".into(),
        ("table", _) => "uniform arrays -> tables".into(),
        ("drop_structured_twin", _) => "drop structuredContent twin".into(),
        (other, _) => other.into(),
    }
}

fn changed_label(w: &WhatIf) -> String {
    let (one, many) = match w.name.as_str() {
        "compact" => ("text", "texts"),
        "floats" => ("float", "floats"),
        "uuid_prefix" => ("UUID", "UUIDs"),
        "table" => ("array", "arrays"),
        "drop_structured_twin" => ("twin", "twins"),
        _ => ("", ""),
    };
    format!("{} {}", w.changed, if w.changed == 1 { one } else { many })
}

fn what_if_table(what_ifs: &[WhatIf]) -> Table {
    let encs = what_ifs
        .first()
        .map(|w| enc_names(&w.tokens_before))
        .unwrap_or_default();
    let mut header: Vec<String> = vec!["what-if".into(), "on".into()];
    for e in &encs {
        header.push(format!("{e} before"));
        header.push("after".into());
        header.push("saved %".into());
    }
    header.push("max abs error".into());
    header.push("changed".into());
    header.push("proxy setting".into());
    let mut t = new_table(header, 2);
    for w in what_ifs {
        let mut cells = vec![Cell::new(what_if_label(w)), Cell::new(&w.part)];
        for (((_, b), (_, a)), (_, p)) in w
            .tokens_before
            .iter()
            .zip(w.tokens_after.iter())
            .zip(w.saved_pct.iter())
        {
            cells.push(Cell::new(b));
            cells.push(Cell::new(a));
            cells.push(Cell::new(format!("{p:.1}")));
        }
        cells.push(Cell::new(match w.max_abs_error {
            Some(e) => format!("{e:.3e}"),
            None => String::new(),
        }));
        cells.push(Cell::new(changed_label(w)));
        cells.push(Cell::new(&w.config_key));
        t.add_row(cells);
    }
    t
}

fn field_title(f: &FieldShare) -> String {
    let by = f
        .total_tokens
        .iter()
        .next()
        .map(|(n, _)| n.to_owned())
        .unwrap_or_default();
    format!(
        "3. Field share of {} (top {} of {} key paths by {by} tokens; shares of the leaf texts' {} chars / {} tokens)\n",
        f.part,
        f.rows.len(),
        f.paths,
        f.total_chars,
        f.total_tokens
            .values()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(" / "),
    )
}

fn field_table(f: &FieldShare) -> Table {
    let encs = enc_names(&f.total_tokens);
    let mut header: Vec<String> = vec![
        "path".into(),
        "count".into(),
        "chars".into(),
        "chars %".into(),
    ];
    for e in &encs {
        header.push(e.clone());
        header.push("tokens %".into());
    }
    let mut t = new_table(header, 1);
    for r in &f.rows {
        let mut cells = vec![
            Cell::new(&r.path),
            Cell::new(r.count),
            Cell::new(r.chars),
            Cell::new(format!("{:.1}", r.chars_pct)),
        ];
        for ((_, tok), (_, p)) in r.tokens.iter().zip(r.tokens_pct.iter()) {
            cells.push(Cell::new(tok));
            cells.push(Cell::new(format!("{p:.1}")));
        }
        t.add_row(cells);
    }
    t
}

fn definitions_title(d: &DefinitionsCost) -> String {
    let whole: Vec<String> = d
        .whole_json
        .iter()
        .map(|(e, n)| format!("{n} {e}"))
        .collect();
    format!(
        "Model-visible definition tokens (name + description + inputSchema; the whole tools JSON: {}), per [tools_list] option\n",
        whole.join(", ")
    )
}

fn definitions_table(d: &DefinitionsCost) -> Table {
    let encs = d
        .options
        .first()
        .map(|r| enc_names(&r.tokens))
        .unwrap_or_default();
    let mut header: Vec<String> = vec!["option".into()];
    for e in &encs {
        header.push(e.clone());
        header.push("saved %".into());
    }
    let mut t = new_table(header, 1);
    for r in &d.options {
        let mut cells = vec![Cell::new(&r.option)];
        for ((_, n), (_, p)) in r.tokens.iter().zip(r.saved_pct.iter()) {
            cells.push(Cell::new(n));
            cells.push(Cell::new(format!("{p:.1}")));
        }
        t.add_row(cells);
    }
    t
}

fn tools_table(tc: &ToolsCost) -> Table {
    let encs = enc_names(&tc.total);
    let mut header: Vec<String> = vec!["tool".into(), "chars".into()];
    header.extend(encs.iter().cloned());
    let mut t = new_table(header, 1);
    for r in &tc.tools {
        let mut cells = vec![Cell::new(&r.name), Cell::new(r.chars)];
        cells.extend(r.tokens.values().map(Cell::new));
        t.add_row(cells);
    }
    let mut cells = vec![
        Cell::new(format!("total ({} tools)", tc.tools.len())),
        Cell::new(tc.tools.iter().map(|r| r.chars).sum::<usize>()),
    ];
    cells.extend(tc.total.values().map(Cell::new));
    t.add_row(cells);
    t
}
