//! Aggregation of telemetry records into per-tool rows (docs/guide/telemetry.md, "Report").
//!
//! Records are sorted into three kinds by [`kind`]: calls of upstream tools, pages read with
//! the injected `read_more`, and calls of the injected `query_response`. A `read_more` record
//! carries the `response_id` of the response it pages, which is the `response_id` of the call
//! (or `query_response` answer) that made that response: that is how pages are attributed.

use std::collections::BTreeMap;
use std::collections::HashMap;

use mcp_budget_core::wire::Outcome;

use super::parse::Record;

/// Every outcome, in the order the columns show them, with its telemetry spelling.
pub(crate) const OUTCOMES: [(Outcome, &str); 6] = [
    (Outcome::Fit, "fit"),
    (Outcome::Compacted, "compacted"),
    (Outcome::Paged, "paged"),
    (Outcome::Elided, "elided"),
    (Outcome::Offloaded, "offloaded"),
    (Outcome::Error, "error"),
];

fn outcome_index(o: Outcome) -> usize {
    OUTCOMES.iter().position(|(x, _)| *x == o).unwrap_or(0)
}

/// Row name of the injected `read_more` (all spellings); `(proxy)` tells it from an upstream
/// tool of the same name.
pub(crate) const READ_MORE_ROW: &str = "read_more (proxy)";
/// Row name of the injected `query_response` (all spellings).
pub(crate) const QUERY_ROW: &str = "query_response (proxy)";

/// What a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A call of an upstream tool.
    Call,
    /// A call of the injected `read_more`.
    ReadMore,
    /// A call of the injected `query_response`.
    Query,
}

/// `name` with any number of leading `budget_` prefixes removed (the proxy prefixes its
/// injected tools when an upstream tool has the name).
fn unprefixed(name: &str) -> &str {
    let mut n = name;
    while let Some(rest) = n.strip_prefix("budget_") {
        n = rest;
    }
    n
}

/// The kind of `r`: an injected tool is named `read_more` or `query_response` (possibly
/// `budget_`-prefixed) AND has `bytes_pre`, `tokens_pre` and `upstream_ms` all 0, as the proxy
/// writes for calls it answers itself; an upstream tool that happens to share the name has
/// server time or an original size.
pub(crate) fn kind(r: &Record) -> Kind {
    let local = r.bytes_pre == 0 && r.tokens_pre == 0 && r.upstream_ms == 0;
    match unprefixed(&r.tool) {
        "read_more" if local => Kind::ReadMore,
        "query_response" if local => Kind::Query,
        _ => Kind::Call,
    }
}

/// Nearest-rank percentile of `sorted` (ascending): the value at 1-based rank
/// `ceil(p / 100 * n)`, at least rank 1. `None` when empty. `p` in percent (0..=100).
pub(crate) fn percentile(sorted: &[u64], p: u32) -> Option<u64> {
    let n = sorted.len() as u64;
    if n == 0 {
        return None;
    }
    let rank = (u64::from(p.min(100)) * n).div_ceil(100).max(1);
    sorted.get((rank - 1) as usize).copied()
}

/// One row of the report: a tool, the injected tools, or the total.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) calls: u64,
    /// Tokens of the model-visible text before shaping (sum over calls).
    pub(crate) tokens_pre: u64,
    /// Tokens after shaping (sum over calls; the first response only, pages are separate).
    pub(crate) tokens: u64,
    /// Calls per outcome, indexed like [`OUTCOMES`].
    pub(crate) outcomes: [u64; 6],
    /// `read_more` pages read of responses this row's calls made.
    pub(crate) pages: u64,
    /// Tokens of those pages.
    pub(crate) page_tokens: u64,
    /// `shape_ms` of each call, ascending once [`Row::finish`] ran.
    pub(crate) shape_ms: Vec<u64>,
    /// `upstream_ms` of each call, ascending once finished; empty for the injected tools.
    pub(crate) upstream_ms: Vec<u64>,
}

impl Row {
    fn named(name: &str) -> Row {
        Row {
            name: name.to_owned(),
            ..Row::default()
        }
    }

    fn add_call(&mut self, r: &Record, upstream: bool) {
        self.calls += 1;
        self.tokens_pre = self.tokens_pre.saturating_add(r.tokens_pre);
        self.tokens = self.tokens.saturating_add(r.tokens);
        self.outcomes[outcome_index(r.outcome)] += 1;
        self.shape_ms.push(r.shape_ms);
        if upstream {
            self.upstream_ms.push(r.upstream_ms);
        }
    }

    fn add_row(&mut self, other: &Row) {
        self.calls += other.calls;
        self.tokens_pre = self.tokens_pre.saturating_add(other.tokens_pre);
        self.tokens = self.tokens.saturating_add(other.tokens);
        for (a, b) in self.outcomes.iter_mut().zip(other.outcomes) {
            *a += b;
        }
        self.pages += other.pages;
        self.page_tokens = self.page_tokens.saturating_add(other.page_tokens);
        self.shape_ms.extend_from_slice(&other.shape_ms);
        self.upstream_ms.extend_from_slice(&other.upstream_ms);
    }

    fn finish(&mut self) {
        self.shape_ms.sort_unstable();
        self.upstream_ms.sort_unstable();
    }

    /// Percent of `tokens_pre` that shaping removed, `(pre - after) / pre * 100` (negative when
    /// the shaped result is larger); `None` when `tokens_pre` is 0.
    pub(crate) fn saved_pct(&self) -> Option<f64> {
        (self.tokens_pre > 0)
            .then(|| (self.tokens_pre as f64 - self.tokens as f64) / self.tokens_pre as f64 * 100.0)
    }

    /// `read_more` pages per call; `None` without calls.
    pub(crate) fn pages_per_call(&self) -> Option<f64> {
        (self.calls > 0).then(|| self.pages as f64 / self.calls as f64)
    }

    /// Nearest-rank percentile `p` of `shape_ms` (milliseconds).
    pub(crate) fn shape_p(&self, p: u32) -> Option<u64> {
        percentile(&self.shape_ms, p)
    }

    /// Nearest-rank percentile `p` of `upstream_ms` (milliseconds).
    pub(crate) fn upstream_p(&self, p: u32) -> Option<u64> {
        percentile(&self.upstream_ms, p)
    }
}

/// Everything the report shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Summary {
    /// Upstream tools, most tokens before shaping first (then by name).
    pub(crate) tools: Vec<Row>,
    /// The sum of [`Summary::tools`] (`shape_ms`/`upstream_ms` pooled over their calls).
    pub(crate) total: Row,
    /// The injected `read_more`, all spellings: `calls`, `tokens` and outcomes of all its
    /// answers (cursor errors included); `pages`/`page_tokens` of the pages alone.
    pub(crate) read_more: Row,
    /// The injected `query_response`, all spellings; `pages` = pages read of its answers.
    pub(crate) query: Row,
    /// `read_more` pages whose `response_id` no record in the logs made (e.g. a rotated log).
    pub(crate) pages_unattributed: u64,
    /// Records read.
    pub(crate) records: u64,
    /// Earliest and latest `ts`.
    pub(crate) first_ts: Option<String>,
    pub(crate) last_ts: Option<String>,
}

/// Which row made a response.
#[derive(Clone, Copy)]
enum Owner {
    Tool(usize),
    Query,
}

/// Aggregates `records` (from any number of logs, in any order).
///
/// A `read_more` record counts as a page when it has a `response_id` and its outcome is not
/// `error`; it is attributed to the row whose call or `query_response` answer carries the same
/// `response_id`, else to [`Summary::pages_unattributed`].
pub(crate) fn summarize<'a>(records: impl IntoIterator<Item = &'a Record>) -> Summary {
    let mut s = Summary {
        total: Row::named("all tools"),
        read_more: Row::named(READ_MORE_ROW),
        query: Row::named(QUERY_ROW),
        ..Summary::default()
    };
    let mut by_name: BTreeMap<&str, Row> = BTreeMap::new();
    let mut pages: Vec<&Record> = Vec::new();
    let mut owners: HashMap<&str, Owner> = HashMap::new();
    let mut owner_names: HashMap<&str, &str> = HashMap::new();
    for r in records {
        s.records += 1;
        if s.first_ts.as_ref().is_none_or(|t| r.ts < *t) {
            s.first_ts = Some(r.ts.clone());
        }
        if s.last_ts.as_ref().is_none_or(|t| r.ts > *t) {
            s.last_ts = Some(r.ts.clone());
        }
        match kind(r) {
            Kind::Call => {
                by_name
                    .entry(&r.tool)
                    .or_insert_with(|| Row::named(&r.tool))
                    .add_call(r, true);
                if let Some(id) = &r.response_id {
                    owner_names.insert(id, &r.tool);
                }
            }
            Kind::Query => {
                s.query.add_call(r, false);
                if let Some(id) = &r.response_id {
                    owners.insert(id, Owner::Query);
                }
            }
            Kind::ReadMore => {
                s.read_more.add_call(r, false);
                if r.response_id.is_some() && r.outcome != Outcome::Error {
                    pages.push(r);
                }
            }
        }
    }
    let mut tools: Vec<Row> = by_name.into_values().collect();
    tools.sort_by(|a, b| b.tokens_pre.cmp(&a.tokens_pre).then(a.name.cmp(&b.name)));
    let index: HashMap<&str, usize> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    for (id, name) in owner_names {
        if let Some(&i) = index.get(name) {
            owners.entry(id).or_insert(Owner::Tool(i));
        }
    }
    s.read_more.pages = pages.len() as u64;
    s.read_more.page_tokens = pages.iter().map(|p| p.tokens).fold(0, u64::saturating_add);
    for p in pages {
        let owner = p.response_id.as_deref().and_then(|id| owners.get(id));
        let row = match owner {
            Some(Owner::Tool(i)) => tools.get_mut(*i),
            Some(Owner::Query) => Some(&mut s.query),
            None => None,
        };
        match row {
            Some(row) => {
                row.pages += 1;
                row.page_tokens = row.page_tokens.saturating_add(p.tokens);
            }
            None => s.pages_unattributed += 1,
        }
    }
    for t in &mut tools {
        t.finish();
        s.total.add_row(t);
    }
    s.total.finish();
    s.read_more.finish();
    s.query.finish();
    s.tools = tools;
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(
        tool: &str,
        pre: u64,
        after: u64,
        up: u64,
        shape: u64,
        o: Outcome,
        id: Option<&str>,
    ) -> Record {
        Record {
            ts: "2026-11-30T07:54:08.123Z".into(),
            tool: tool.into(),
            bytes_pre: pre * 4,
            bytes: after * 4,
            tokens_pre: pre,
            tokens: after,
            upstream_ms: up,
            shape_ms: shape,
            outcome: o,
            response_id: id.map(str::to_owned),
        }
    }

    #[test]
    fn nearest_rank_percentiles_of_known_lists() {
        assert_eq!(percentile(&[], 50), None);
        assert_eq!(percentile(&[7], 50), Some(7));
        assert_eq!(percentile(&[7], 95), Some(7));
        // n = 4: p50 -> rank ceil(2) = 2; p95 -> rank ceil(3.8) = 4.
        assert_eq!(percentile(&[1, 2, 3, 4], 50), Some(2));
        assert_eq!(percentile(&[1, 2, 3, 4], 95), Some(4));
        // n = 5: p50 -> rank ceil(2.5) = 3.
        assert_eq!(percentile(&[10, 20, 30, 40, 50], 50), Some(30));
        // n = 20 (1..=20): p50 -> rank 10, p95 -> rank 19, p100 -> 20, p0 -> rank 1.
        let v: Vec<u64> = (1..=20).collect();
        assert_eq!(percentile(&v, 50), Some(10));
        assert_eq!(percentile(&v, 95), Some(19));
        assert_eq!(percentile(&v, 100), Some(20));
        assert_eq!(percentile(&v, 0), Some(1));
        // n = 21: p95 -> rank ceil(19.95) = 20.
        let v: Vec<u64> = (1..=21).collect();
        assert_eq!(percentile(&v, 95), Some(20));
    }

    #[test]
    fn injected_tools_are_told_from_upstream_tools_of_the_same_name() {
        let page = rec("read_more", 0, 50, 0, 1, Outcome::Paged, Some("ab"));
        assert_eq!(kind(&page), Kind::ReadMore);
        let prefixed = rec(
            "budget_budget_read_more",
            0,
            50,
            0,
            1,
            Outcome::Paged,
            Some("ab"),
        );
        assert_eq!(kind(&prefixed), Kind::ReadMore);
        let q = rec("budget_query_response", 0, 50, 0, 1, Outcome::Fit, None);
        assert_eq!(kind(&q), Kind::Query);
        let upstream = rec("read_more", 30, 30, 4, 0, Outcome::Fit, None);
        assert_eq!(kind(&upstream), Kind::Call);
        assert_eq!(
            kind(&rec("x_read_more", 0, 1, 0, 0, Outcome::Fit, None)),
            Kind::Call
        );
    }

    #[test]
    fn rows_totals_and_page_attribution() {
        let recs = vec![
            rec("tree", 1000, 100, 40, 5, Outcome::Paged, Some("a1")),
            rec("tree", 3000, 100, 60, 9, Outcome::Paged, Some("a2")),
            rec("small", 10, 8, 2, 0, Outcome::Compacted, None),
            // Pages: two of a1, one of a2, one of the query answer q1, one of nothing known,
            // one cursor error (not a page).
            rec("read_more", 0, 90, 0, 1, Outcome::Paged, Some("a1")),
            rec("read_more", 0, 80, 0, 2, Outcome::Paged, Some("a1")),
            rec("budget_read_more", 0, 70, 0, 3, Outcome::Paged, Some("a2")),
            rec("read_more", 0, 60, 0, 4, Outcome::Paged, Some("q1")),
            rec("read_more", 0, 50, 0, 5, Outcome::Paged, Some("gone")),
            rec("read_more", 0, 40, 0, 6, Outcome::Error, None),
            rec("query_response", 0, 100, 0, 7, Outcome::Paged, Some("q1")),
            rec("query_response", 0, 20, 0, 8, Outcome::Fit, None),
        ];
        let s = summarize(&recs);
        assert_eq!(s.records, 11);
        let names: Vec<&str> = s.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["tree", "small"]);
        let tree = &s.tools[0];
        assert_eq!((tree.calls, tree.tokens_pre, tree.tokens), (2, 4000, 200));
        assert_eq!((tree.pages, tree.page_tokens), (3, 240));
        assert_eq!(tree.saved_pct(), Some(95.0));
        assert_eq!(tree.pages_per_call(), Some(1.5));
        assert_eq!(tree.outcomes, [0, 0, 2, 0, 0, 0]);
        assert_eq!((tree.shape_p(50), tree.upstream_p(95)), (Some(5), Some(60)));
        assert_eq!(s.tools[1].pages, 0);
        assert_eq!(
            (s.total.calls, s.total.tokens_pre, s.total.tokens),
            (3, 4010, 208)
        );
        assert_eq!(s.total.outcomes, [0, 1, 2, 0, 0, 0]);
        assert_eq!(s.total.pages, 3);
        assert_eq!(s.total.upstream_ms, vec![2, 40, 60]);
        assert_eq!((s.read_more.calls, s.read_more.pages), (6, 5));
        assert_eq!(s.read_more.tokens, 390);
        assert_eq!(s.read_more.page_tokens, 350);
        assert_eq!(s.read_more.outcomes, [0, 0, 5, 0, 0, 1]);
        assert!(s.read_more.upstream_ms.is_empty());
        assert_eq!((s.query.calls, s.query.pages, s.query.tokens), (2, 1, 120));
        assert_eq!(s.pages_unattributed, 1);
        assert_eq!(s.query.saved_pct(), None);
    }
}
