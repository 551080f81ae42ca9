//! What every form of the report starts with: the logs read ([`Source`], with a note on the
//! lines skipped), the summary lines above the table ([`headline`]), and the number formats
//! the table and the page share ([`thousands`], [`pct`], [`plural`]).

use super::aggregate::Summary;
use super::parse::Skipped;

/// One log named on the command line.
#[derive(Debug)]
pub(crate) struct Source {
    /// As given.
    pub(crate) path: String,
    /// Usable records read.
    pub(crate) records: u64,
    /// Lines skipped, in order.
    pub(crate) skipped: Vec<Skipped>,
    /// Why the file could not be read.
    pub(crate) error: Option<String>,
}

/// How many skipped lines a note names before it says how many more there are.
const NAMED_FAULTS: usize = 5;

impl Source {
    /// `3 lines skipped in x.jsonl: line 4 not JSON, line 7 missing "tokens", …`, or `None`
    /// when no line was skipped.
    pub(crate) fn skipped_note(&self) -> Option<String> {
        let n = self.skipped.len();
        if n == 0 {
            return None;
        }
        let mut note = format!(
            "{n} line{} skipped in {}: ",
            if n == 1 { "" } else { "s" },
            self.path
        );
        let named: Vec<String> = self
            .skipped
            .iter()
            .take(NAMED_FAULTS)
            .map(|s| format!("line {} {}", s.line, s.fault))
            .collect();
        note.push_str(&named.join(", "));
        if n > NAMED_FAULTS {
            note.push_str(&format!(", … ({} more)", n - NAMED_FAULTS));
        }
        Some(note)
    }
}

/// The summary lines above the table (plain text; the page shows the same lines).
pub(crate) fn headline(s: &Summary, sources: &[Source]) -> Vec<String> {
    let read = sources.iter().filter(|x| x.error.is_none()).count();
    let skipped: usize = sources.iter().map(|x| x.skipped.len()).sum();
    let mut lines = Vec::new();
    let mut first = format!(
        "{} record{} from {read} log{}",
        thousands(s.records),
        plural(s.records),
        if read == 1 { "" } else { "s" }
    );
    if skipped > 0 {
        first.push_str(&format!(
            " ({} bad line{} skipped)",
            thousands(skipped as u64),
            plural(skipped as u64)
        ));
    }
    if let (Some(a), Some(b)) = (&s.first_ts, &s.last_ts) {
        first.push_str(&format!(", {a} to {b}"));
    }
    lines.push(first);
    let t = &s.total;
    lines.push(format!(
        "Tool calls: {}; tokens {} before shaping, {} after ({} saved)",
        thousands(t.calls),
        thousands(t.tokens_pre),
        thousands(t.tokens),
        pct(t.saved_pct())
    ));
    let pages_of_tools: u64 = s.tools.iter().map(|r| r.pages).sum();
    lines.push(format!(
        "read_more: {} page{} read ({} token{}): {} of tool results, {} of query_response results, {} of responses not in these logs",
        thousands(s.read_more.pages),
        plural(s.read_more.pages),
        thousands(s.read_more.page_tokens),
        plural(s.read_more.page_tokens),
        thousands(pages_of_tools),
        thousands(s.query.pages),
        thousands(s.pages_unattributed)
    ));
    lines.push(format!(
        "query_response: {} call{} ({} token{})",
        thousands(s.query.calls),
        plural(s.query.calls),
        thousands(s.query.tokens),
        plural(s.query.tokens)
    ));
    lines
}

/// The plural ending for a count of `n`: `""` for 1, `"s"` otherwise.
pub(crate) fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `1234567` → `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A percentage with one decimal (`90.4%`), `-` for none.
pub(crate) fn pct(p: Option<f64>) -> String {
    p.map_or_else(|| "-".to_owned(), |p| format!("{p:.1}%"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::parse::Fault;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn skipped_note_names_the_first_five() {
        let mut s = Source {
            path: "x.jsonl".into(),
            records: 0,
            skipped: vec![Skipped {
                line: 4,
                fault: Fault::NotJson,
            }],
            error: None,
        };
        assert_eq!(
            s.skipped_note().as_deref(),
            Some("1 line skipped in x.jsonl: line 4 not JSON")
        );
        s.skipped = (1..=7)
            .map(|line| Skipped {
                line,
                fault: Fault::Missing("tool"),
            })
            .collect();
        let note = s.skipped_note().unwrap();
        assert!(note.starts_with("7 lines skipped in x.jsonl: line 1 missing \"tool\", "));
        assert!(
            note.ends_with("line 5 missing \"tool\", … (2 more)"),
            "{note}"
        );
        s.skipped.clear();
        assert_eq!(s.skipped_note(), None);
    }
}
