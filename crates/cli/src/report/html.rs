//! The report as one self-contained HTML page: title, the summary, the table and two inline
//! SVG bar charts (tokens before vs after shaping per tool; `read_more` pages per call). No
//! scripts, no external fonts or styles.
//!
//! Every bar is `<rect class="bar" data-chart=… data-tool=… data-series=… data-value=…>` with
//! `width = value / axis_max * PLOT_W` (CSS pixels: the SVG is drawn at its natural size), so a
//! test can check the bars of a known log from the DOM.

use std::fmt::Write as _;

use super::aggregate::{Row, Summary};
use super::headline::{Source, headline, pct, plural, thousands};
use super::table::{cells, header, lines, outcome_columns};

/// Width of the tool-name column of a chart (px).
const LABEL_W: f64 = 210.0;
/// Width of the plot area: a bar of the axis maximum is this wide (px).
pub(crate) const PLOT_W: f64 = 560.0;
/// Room right of the plot for value labels (px).
const VALUE_W: f64 = 190.0;
/// Height of one bar (px).
const BAR_H: f64 = 16.0;
/// Space between groups of bars (px).
const GAP: f64 = 12.0;
const TOP: f64 = 34.0;
const AXIS_H: f64 = 48.0;
/// Tool names longer than this are shortened in chart labels (the full name is the tooltip).
const NAME_CHARS: usize = 30;

const BEFORE_COLOR: &str = "#a0aec0";
const AFTER_COLOR: &str = "#2b6cb0";
const PAGES_COLOR: &str = "#c05621";

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;\
color:#1a202c;margin:2rem auto;max-width:1500px;padding:0 1rem;line-height:1.4}\
h1{margin-bottom:.2rem}h2{margin-top:2rem;font-size:1.2rem}\
.sources{color:#4a5568;margin-top:0}.note{color:#9c4221}\
.cards{display:flex;flex-wrap:wrap;gap:1rem;margin:1rem 0}\
.card{border:1px solid #e2e8f0;border-radius:8px;padding:.7rem 1rem;min-width:9rem}\
.card .v{font-size:1.6rem;font-weight:600}.card .k{color:#4a5568;font-size:.85rem}\
.scroll{overflow-x:auto}table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:14px}\
th,td{padding:.3rem .5rem;border-bottom:1px solid #e2e8f0;text-align:right;white-space:nowrap}\
th:first-child,td:first-child{text-align:left}th{background:#f7fafc;white-space:normal;vertical-align:bottom}\
tr.total td{font-weight:600;border-top:2px solid #4a5568}tr.injected td{color:#4a5568}\
svg text{font-family:inherit;font-size:12px;fill:#1a202c}svg .axis{stroke:#4a5568}\
svg .grid{stroke:#e2e8f0}footer{color:#4a5568;font-size:.85rem;margin-top:2rem}";

/// HTML-escapes `s` for text and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A round axis maximum ≥ `max` (1, 2 or 5 times a power of ten, times an integer), so about
/// five ticks of `step` fit: `(axis_max, step)`. `max <= 0` gives `(1, 0.2)`.
pub(crate) fn nice_axis(max: f64) -> (f64, f64) {
    if max.is_nan() || max <= 0.0 {
        return (1.0, 0.2);
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

/// One bar: which series, its value and how the value is written.
struct Bar {
    series: &'static str,
    color: &'static str,
    value: f64,
    label: String,
}

/// A horizontal bar chart: one group of bars per category, a labelled x axis with ticks.
fn chart(id: &str, title: &str, x_title: &str, groups: &[(String, Vec<Bar>)]) -> String {
    let per_group = groups.first().map_or(1, |g| g.1.len().max(1)) as f64;
    let group_h = per_group * BAR_H + GAP;
    let plot_h = groups.len() as f64 * group_h;
    let width = LABEL_W + PLOT_W + VALUE_W;
    let height = TOP + plot_h + AXIS_H;
    let max = groups
        .iter()
        .flat_map(|g| g.1.iter().map(|b| b.value))
        .fold(0.0, f64::max);
    let (axis_max, step) = nice_axis(max);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="{id}" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{t}" data-axis-max="{axis_max}" data-plot-width="{PLOT_W}"><title>{t}</title>"#,
        t = esc(title)
    );
    // Grid lines and tick labels.
    let ticks = (axis_max / step).round() as u64;
    for i in 0..=ticks {
        let v = step * i as f64;
        let x = LABEL_W + v / axis_max * PLOT_W;
        let _ = write!(
            s,
            r#"<line class="grid" x1="{x:.2}" y1="{TOP}" x2="{x:.2}" y2="{y2}"/><text x="{x:.2}" y="{ty}" text-anchor="middle">{label}</text>"#,
            y2 = TOP + plot_h,
            ty = TOP + plot_h + 16.0,
            label = tick_label(v, step)
        );
    }
    // Axes and their titles.
    let _ = write!(
        s,
        r#"<line class="axis" x1="{LABEL_W}" y1="{TOP}" x2="{LABEL_W}" y2="{b}"/><line class="axis" x1="{LABEL_W}" y1="{b}" x2="{r}" y2="{b}"/><text x="{cx}" y="{ay}" text-anchor="middle" font-weight="600">{xt}</text><text x="{lx}" y="{ly}" text-anchor="end" font-weight="600">tool</text>"#,
        b = TOP + plot_h,
        r = LABEL_W + PLOT_W,
        cx = LABEL_W + PLOT_W / 2.0,
        ay = TOP + plot_h + 38.0,
        xt = esc(x_title),
        lx = LABEL_W - 8.0,
        ly = TOP - 10.0,
    );
    for (gi, (name, bars)) in groups.iter().enumerate() {
        let y0 = TOP + gi as f64 * group_h + GAP / 2.0;
        let shown = if name.chars().count() > NAME_CHARS {
            let mut n: String = name.chars().take(NAME_CHARS - 1).collect();
            n.push('…');
            n
        } else {
            name.clone()
        };
        let _ = write!(
            s,
            r#"<text x="{x}" y="{y:.2}" text-anchor="end" dominant-baseline="middle"><title>{full}</title>{shown}</text>"#,
            x = LABEL_W - 8.0,
            y = y0 + per_group * BAR_H / 2.0,
            full = esc(name),
            shown = esc(&shown)
        );
        for (bi, bar) in bars.iter().enumerate() {
            let y = y0 + bi as f64 * BAR_H;
            let w = bar.value / axis_max * PLOT_W;
            let _ = write!(
                s,
                r#"<rect class="bar" id="{id}-{gi}-{series}" data-chart="{id}" data-tool="{tool}" data-series="{series}" data-value="{value}" x="{LABEL_W}" y="{y:.2}" width="{w:.2}" height="{h}" fill="{color}"><title>{tool}: {series} {label}</title></rect><text class="value" x="{vx:.2}" y="{vy:.2}" dominant-baseline="middle">{label}</text>"#,
                tool = esc(name),
                series = bar.series,
                value = bar.value,
                h = BAR_H - 2.0,
                color = bar.color,
                label = esc(&bar.label),
                vx = LABEL_W + w + 4.0,
                vy = y + (BAR_H - 2.0) / 2.0,
            );
        }
    }
    // Legend (above the plot) when there is more than one series.
    if per_group > 1.0
        && let Some((_, bars)) = groups.first()
    {
        let mut x = LABEL_W;
        for bar in bars {
            let _ = write!(
                s,
                r#"<rect x="{x}" y="8" width="12" height="12" fill="{c}"/><text x="{tx}" y="14" dominant-baseline="middle">{n}</text>"#,
                c = bar.color,
                tx = x + 16.0,
                n = bar.series
            );
            x += 90.0;
        }
    }
    s.push_str("</svg>");
    s
}

fn tick_label(v: f64, step: f64) -> String {
    if step >= 1.0 {
        thousands(v.round() as u64)
    } else {
        let decimals = (-step.log10().floor()) as usize;
        format!("{v:.decimals$}")
    }
}

fn tokens_chart(s: &Summary) -> String {
    let groups: Vec<(String, Vec<Bar>)> = s
        .tools
        .iter()
        .map(|r| {
            (
                r.name.clone(),
                vec![
                    Bar {
                        series: "before",
                        color: BEFORE_COLOR,
                        value: r.tokens_pre as f64,
                        label: thousands(r.tokens_pre),
                    },
                    Bar {
                        series: "after",
                        color: AFTER_COLOR,
                        value: r.tokens as f64,
                        label: format!("{} ({} saved)", thousands(r.tokens), pct(r.saved_pct())),
                    },
                ],
            )
        })
        .collect();
    chart(
        "chart-tokens",
        "Tokens per tool, before and after shaping",
        "tokens (sum over calls)",
        &groups,
    )
}

fn pages_chart(s: &Summary) -> String {
    let rows: Vec<&Row> = s
        .tools
        .iter()
        .chain((s.query.calls > 0).then_some(&s.query))
        .collect();
    let groups: Vec<(String, Vec<Bar>)> = rows
        .iter()
        .map(|r| {
            let v = r.pages_per_call().unwrap_or(0.0);
            (
                r.name.clone(),
                vec![Bar {
                    series: "pages_per_call",
                    color: PAGES_COLOR,
                    value: v,
                    label: format!(
                        "{v:.2} ({} page{} / {} call{})",
                        thousands(r.pages),
                        plural(r.pages),
                        thousands(r.calls),
                        plural(r.calls)
                    ),
                }],
            )
        })
        .collect();
    chart(
        "chart-pages",
        "read_more pages read per call",
        "pages read per call",
        &groups,
    )
}

fn card(s: &mut String, value: &str, key: &str) {
    let _ = write!(
        s,
        r#"<div class="card"><div class="v">{}</div><div class="k">{}</div></div>"#,
        esc(value),
        esc(key)
    );
}

/// The whole page.
pub(crate) fn render(s: &Summary, sources: &[Source]) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>mcp-budget report</title><style>{STYLE}</style></head><body><h1>mcp-budget report</h1>"#
    );
    let names: Vec<String> = sources
        .iter()
        .map(|x| {
            format!(
                "{} ({} record{})",
                esc(&x.path),
                thousands(x.records),
                plural(x.records)
            )
        })
        .collect();
    let _ = write!(h, r#"<p class="sources">Logs: {}</p>"#, names.join(", "));
    for src in sources {
        if let Some(e) = &src.error {
            let _ = write!(
                h,
                r#"<p class="note">Cannot read {}: {}</p>"#,
                esc(&src.path),
                esc(e)
            );
        }
        if let Some(note) = src.skipped_note() {
            let _ = write!(h, r#"<p class="note">{}</p>"#, esc(&note));
        }
    }
    let t = &s.total;
    h.push_str(r#"<div class="cards">"#);
    card(&mut h, &thousands(t.calls), "tool calls");
    card(&mut h, &thousands(t.tokens_pre), "tokens before shaping");
    card(&mut h, &thousands(t.tokens), "tokens after shaping");
    card(&mut h, &pct(t.saved_pct()), "saved");
    card(
        &mut h,
        &thousands(s.read_more.pages),
        "read_more pages read",
    );
    card(&mut h, &thousands(s.query.calls), "query_response calls");
    h.push_str("</div><ul>");
    for line in headline(s, sources) {
        let _ = write!(h, "<li>{}</li>", esc(&line));
    }
    h.push_str("</ul>");
    if s.records == 0 {
        h.push_str("<p>No telemetry records in the given logs.</p>");
    } else {
        let outcomes = outcome_columns(s);
        h.push_str(r#"<h2>Per tool</h2><div class="scroll"><table id="report-table"><thead><tr>"#);
        for c in header(&outcomes) {
            let _ = write!(h, "<th>{}</th>", esc(&c));
        }
        h.push_str("</tr></thead><tbody>");
        for l in lines(s) {
            let class = if l.is_total {
                " class=\"total\""
            } else if l.injected {
                " class=\"injected\""
            } else {
                ""
            };
            let _ = write!(h, "<tr{class}>");
            for c in cells(&l, &outcomes) {
                let _ = write!(h, "<td>{}</td>", esc(&c));
            }
            h.push_str("</tr>");
        }
        h.push_str("</tbody></table></div>");
        if !s.tools.is_empty() {
            let _ = write!(
                h,
                r#"<h2>Tokens saved per tool</h2><div class="scroll">{}</div><h2>Pages read per call</h2><div class="scroll">{}</div>"#,
                tokens_chart(s),
                pages_chart(s)
            );
        }
    }
    h.push_str(
        "<footer>Tokens are of the model-visible text, as the proxy counted them. \"tokens after\" is the first \
         response only; pages read with read_more are counted separately. Percentiles are nearest-rank \
         (the value at rank ⌈p/100·n⌉ of the sorted times). Pages are attributed to the call whose \
         response_id they page.</footer></body></html>\n",
    );
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_maxima_are_round() {
        assert_eq!(nice_axis(0.0), (1.0, 0.2));
        assert_eq!(nice_axis(40_000.0), (40_000.0, 10_000.0));
        assert_eq!(nice_axis(41_000.0), (50_000.0, 10_000.0));
        assert_eq!(nice_axis(3.0), (3.0, 1.0));
        assert_eq!(nice_axis(1.5), (1.5, 0.5));
        assert_eq!(nice_axis(7.0), (8.0, 2.0));
        assert_eq!(nice_axis(0.25), (0.25, 0.05));
    }

    #[test]
    fn escaping() {
        assert_eq!(
            esc("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
    }
}
