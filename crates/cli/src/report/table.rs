//! The report as a terminal table (comfy-table): one row per upstream tool, the total of the
//! tools, then the injected `read_more` and `query_response` when they were used.

use comfy_table::{CellAlignment, Table, presets};

use super::aggregate::{OUTCOMES, Row, Summary};
use super::headline::{Source, headline, pct, thousands};

/// A row of the table and how to show it.
pub(crate) struct Line<'a> {
    pub(crate) row: &'a Row,
    /// `read_more`/`query_response`: nothing came from the server, so no "before" or saving.
    pub(crate) injected: bool,
    /// The injected `read_more` row: its pages are its calls, so the pages cell is `-`.
    pub(crate) is_read_more: bool,
    /// The total row.
    pub(crate) is_total: bool,
}

/// The rows in display order.
pub(crate) fn lines(s: &Summary) -> Vec<Line<'_>> {
    let mut out: Vec<Line> = s
        .tools
        .iter()
        .map(|row| Line {
            row,
            injected: false,
            is_read_more: false,
            is_total: false,
        })
        .collect();
    out.push(Line {
        row: &s.total,
        injected: false,
        is_read_more: false,
        is_total: true,
    });
    for (row, is_read_more) in [(&s.read_more, true), (&s.query, false)] {
        if row.calls > 0 {
            out.push(Line {
                row,
                injected: true,
                is_read_more,
                is_total: false,
            });
        }
    }
    out
}

/// Indexes (into [`OUTCOMES`]) of the outcomes that occur in any row: the others get no column.
pub(crate) fn outcome_columns(s: &Summary) -> Vec<usize> {
    (0..OUTCOMES.len())
        .filter(|&i| s.total.outcomes[i] + s.read_more.outcomes[i] + s.query.outcomes[i] > 0)
        .collect()
}

/// Column titles; the first is the tool, the rest are numbers.
pub(crate) fn header(outcomes: &[usize]) -> Vec<String> {
    let mut h: Vec<String> = ["tool", "calls", "tokens before", "tokens after", "saved"]
        .map(String::from)
        .to_vec();
    h.extend(outcomes.iter().map(|&i| OUTCOMES[i].1.to_owned()));
    h.extend(["pages read", "shape ms p50/p95", "upstream ms p50/p95"].map(String::from));
    h
}

/// The cells of one line, matching [`header`].
pub(crate) fn cells(l: &Line, outcomes: &[usize]) -> Vec<String> {
    let r = l.row;
    let dash = || "-".to_owned();
    let mut c = vec![
        r.name.clone(),
        thousands(r.calls),
        if l.injected {
            dash()
        } else {
            thousands(r.tokens_pre)
        },
        thousands(r.tokens),
        pct(r.saved_pct()),
    ];
    c.extend(outcomes.iter().map(|&i| thousands(r.outcomes[i])));
    c.push(if l.is_read_more {
        dash()
    } else {
        thousands(r.pages)
    });
    c.push(pair(r.shape_p(50), r.shape_p(95)));
    c.push(pair(r.upstream_p(50), r.upstream_p(95)));
    c
}

fn pair(a: Option<u64>, b: Option<u64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{a} / {b}"),
        _ => "-".to_owned(),
    }
}

/// The whole terminal report: the headline lines, a blank line, the table, a newline.
pub(crate) fn render(s: &Summary, sources: &[Source]) -> String {
    let mut out = headline(s, sources).join("\n");
    out.push_str("\n\n");
    if s.records == 0 {
        out.push_str("No telemetry records in the given logs.\n");
        return out;
    }
    let outcomes = outcome_columns(s);
    let mut t = Table::new();
    t.load_style(presets::ASCII_MARKDOWN);
    let header = header(&outcomes);
    let n = header.len();
    t.set_header(header);
    for i in 1..n {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    for l in lines(s) {
        t.add_row(cells(&l, &outcomes));
    }
    out.push_str(&t.to_string());
    out.push('\n');
    out
}
