//! Texts the shaper writes itself (a `query_failed` or `cursor_invalid` message, an ambiguous
//! UUID prefix …), fitted to the budget: every result counts, its own error results included
//! (DESIGN.md, "Wire contract of the proxy"). Pure: the caller gives the encoding.

use crate::tokens::Encoding;

/// The longest prefix of `message`, in chars, that `build` fits into `budget` tokens (counted
/// in `encoding`, exactly as the text goes out): `build(message)` when it fits,
/// else `build` of a prefix cut at a char boundary and followed by
/// `… [cut: the message is N chars long]`. jaq's messages embed whole values (`.a.b` on a
/// large object), so a message can be far larger than any budget.
pub fn fit_message(
    encoding: &Encoding,
    budget: usize,
    message: &str,
    build: impl Fn(&str) -> String,
) -> String {
    let whole = build(message);
    if encoding.count(&whole) <= budget {
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
    let fits = |text: &str| encoding.count(text) <= budget;
    // Few tokens hold more than 8 chars, so a prefix of `8 × budget` chars is past what fits
    // for any message worth reading (and a cut shorter than the most that fits still fits).
    let (mut lo, mut hi) = (0usize, chars.min(budget.saturating_mul(8)));
    let mut best = cut(0);
    if !fits(&best) {
        return fit_text(encoding, budget, &best);
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

/// `text` cut to at most `budget` tokens at a char boundary (a last resort: the cut text may no
/// longer be JSON).
pub fn fit_text(encoding: &Encoding, budget: usize, text: &str) -> String {
    if encoding.count(text) <= budget {
        return text.to_owned();
    }
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let (mut lo, mut hi) = (0usize, bounds.len().min(budget.saturating_mul(8)));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if encoding.count(&text[..bounds[mid]]) <= budget {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    text[..bounds.get(lo).copied().unwrap_or(0)].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(m: &str) -> String {
        serde_json::json!({"error": "query_failed", "message": m}).to_string()
    }

    #[test]
    fn a_message_fits_whole_or_cut_with_its_length_said() {
        let enc = Encoding::Cl100kBase;
        assert_eq!(fit_message(&enc, 256, "short", quoted), quoted("short"));
        let long = "value é東 ".repeat(5_000);
        let text = fit_message(&enc, 256, &long, quoted);
        assert!(enc.count(&text) <= 256, "{}", enc.count(&text));
        let v: serde_json::Value = serde_json::from_str(&text).expect("still JSON");
        let shown = v["message"].as_str().expect("message");
        let chars = long.chars().count();
        assert!(shown.ends_with(&format!("… [cut: the message is {chars} chars long]")));
        // As much of the message as fits: one more char would not.
        assert!(shown.len() > 200, "{shown}");
    }

    #[test]
    fn a_text_is_cut_at_a_char_boundary_within_the_budget() {
        let enc = Encoding::Cl100kBase;
        let text = "東🚀é".repeat(2_000);
        let cut = fit_text(&enc, 300, &text);
        assert!(enc.count(&cut) <= 300);
        assert!(text.starts_with(&cut) && !cut.is_empty());
        assert_eq!(fit_text(&enc, 300, "fits"), "fits");
    }
}
