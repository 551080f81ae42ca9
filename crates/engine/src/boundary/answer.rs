//! Results the boundary writes itself for the injected tools and refused arguments
//! (`query_failed`, `cursor_invalid`, an ambiguous UUID prefix …): [`Answer`], and the
//! error result whose message is cut to fit the budget.

use mcp_budget_core::wire::Outcome;
use serde_json::{Value, json};

use super::state::Boundary;

/// What answering an injected call produced (for telemetry).
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) result: Value,
    pub(crate) outcome: Outcome,
    pub(crate) response_id: Option<String>,
    pub(crate) bytes: u64,
    pub(crate) tokens: u64,
}

/// The longest prefix of `message`, in chars, that `build` fits into `budget` tokens (counted
/// with the boundary's encoding, exactly as the text goes out): `build(message)` when it fits,
/// else `build` of a prefix cut at a char boundary and followed by
/// `… [cut: the message is N chars long]`. jaq's messages embed whole values (`.a.b` on a
/// large object), so a message can be far larger than any budget.
pub(crate) fn fit_message(
    b: &Boundary,
    budget: usize,
    message: &str,
    build: impl Fn(&str) -> String,
) -> String {
    let whole = build(message);
    if b.encoding.count(&whole) <= budget {
        return whole;
    }
    let chars = message.chars().count();
    let cut = |n: usize| {
        let end = message
            .char_indices()
            .nth(n)
            .map_or(message.len(), |(i, _)| i);
        build(&format!(
            "{}… [cut: the message is {chars} chars long]",
            &message[..end]
        ))
    };
    let fits = |text: &str| b.encoding.count(text) <= budget;
    // Few tokens hold more than 8 chars, so a prefix of `8 × budget` chars is past what fits
    // for any message worth reading (and a cut shorter than the most that fits still fits).
    let (mut lo, mut hi) = (0usize, chars.min(budget.saturating_mul(8)));
    let mut best = cut(0);
    if !fits(&best) {
        return fit_text(b, budget, &best);
    }
    // Invariant: the prefix of `lo` chars fits.
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        let text = cut(mid);
        if fits(&text) {
            lo = mid;
            best = text;
        } else {
            hi = mid - 1;
        }
    }
    best
}

pub(crate) fn error_answer(b: &Boundary, text: String) -> Answer {
    let tokens = b.encoding.count(&text) as u64;
    let bytes = text.len() as u64;
    let mut content: Vec<Value> = crate::boundary::state::banner_item(b).into_iter().collect();
    content.push(json!({"type":"text","text":text}));
    Answer {
        result: json!({"content": content, "isError": true}),
        outcome: Outcome::Error,
        response_id: None,
        bytes,
        tokens,
    }
}

/// `text` cut to at most `budget` tokens at a char boundary (a last resort: the cut text may no
/// longer be JSON).
pub(crate) fn fit_text(b: &Boundary, budget: usize, text: &str) -> String {
    if b.encoding.count(text) <= budget {
        return text.to_owned();
    }
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let (mut lo, mut hi) = (0usize, bounds.len().min(budget.saturating_mul(8)));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if b.encoding.count(&text[..bounds[mid]]) <= budget {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    text[..bounds.get(lo).copied().unwrap_or(0)].to_owned()
}
