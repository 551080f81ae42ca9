//! Descriptions within a token cap: whitespace collapsed, cut at a sentence boundary.

use std::borrow::Cow;

use crate::tokens::Encoding;

/// The mark that ends a cut description.
pub const ELLIPSIS: &str = "…";

/// `text` with every run of whitespace (newlines included) made one space, trimmed;
/// borrowed when nothing changes.
pub fn collapse_whitespace(text: &str) -> Cow<'_, str> {
    let needs = text.starts_with(char::is_whitespace)
        || text.ends_with(char::is_whitespace)
        || text
            .as_bytes()
            .windows(2)
            .any(|w| w[0].is_ascii_whitespace() && w[1].is_ascii_whitespace())
        || text.chars().any(|c| c.is_whitespace() && c != ' ');
    if !needs {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Byte offsets just past each sentence of `text`: after `.`, `!`, `?` or `;` (with any
/// closing `)`, `"` or `'`) followed by whitespace, and before each line break.
fn sentence_ends(text: &str) -> Vec<usize> {
    let mut ends = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(at, c)) in chars.iter().enumerate() {
        if c == '\n' {
            ends.push(at);
            continue;
        }
        if !matches!(c, '.' | '!' | '?' | ';') {
            continue;
        }
        let mut j = i + 1;
        while j < chars.len() && matches!(chars[j].1, ')' | '"' | '\'') {
            j += 1;
        }
        if j < chars.len() && chars[j].1.is_whitespace() {
            ends.push(chars[j].0);
        }
    }
    ends
}

/// `text` cut to at most `max_tokens` tokens of `encoding`, ellipsis included.
///
/// A text that fits comes back whole. Otherwise the longest run of whole sentences that fits
/// with `…` in place of its last full stop (` …` after any other end: `!`, `?`, `;`, a
/// line break); when not even the first sentence fits, the longest run of whole words
/// followed by `…`; when not even one word does, as many chars as fit followed by `…`. Never
/// more than `max_tokens` tokens unless `max_tokens` cannot hold the ellipsis itself (then
/// the result is the ellipsis alone; with `max_tokens = 0` the empty string).
pub fn cut<'a>(text: &'a str, max_tokens: usize, encoding: &Encoding) -> Cow<'a, str> {
    if encoding.fits(text, max_tokens) {
        return Cow::Borrowed(text);
    }
    if max_tokens == 0 {
        return Cow::Owned(String::new());
    }
    let fits = |s: &str| encoding.fits(s, max_tokens);
    // A cut after a full stop ends `…` in its place ("…as text…"), else ` …` after it.
    let sentence = |end: usize| {
        let kept = text[..end].trim_end();
        match kept.strip_suffix('.') {
            Some(k) if !k.ends_with('.') => format!("{k}{ELLIPSIS}"),
            _ => format!("{kept} {ELLIPSIS}"),
        }
    };
    // Token counts grow with the prefix (a longer prefix never has fewer tokens in practice):
    // the longest fitting candidate by binary search.
    let ends = sentence_ends(text);
    if let Some(s) = longest(&ends, |&e| fits(&sentence(e))) {
        return Cow::Owned(sentence(s));
    }
    let word = |end: usize| {
        format!(
            "{}{ELLIPSIS}",
            text[..end].trim_end_matches(|c: char| c.is_whitespace() || c == ',' || c == ';')
        )
    };
    let words: Vec<usize> = text
        .char_indices()
        .filter(|&(i, c)| c.is_whitespace() && i > 0)
        .map(|(i, _)| i)
        .collect();
    if let Some(w) = longest(&words, |&e| fits(&word(e))) {
        return Cow::Owned(word(w));
    }
    let chars: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
    match longest(&chars, |&e| fits(&word(e))) {
        Some(c) => Cow::Owned(word(c)),
        None => Cow::Owned(ELLIPSIS.to_owned()),
    }
}

/// The last element of `sorted` for which `ok` holds, assuming `ok` holds on a prefix of it.
fn longest(sorted: &[usize], ok: impl Fn(&usize) -> bool) -> Option<usize> {
    let n = sorted.partition_point(|e| ok(e));
    n.checked_sub(1).map(|i| sorted[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENC: Encoding = Encoding::Cl100kBase;

    #[test]
    fn cuts_at_sentences_then_words() {
        let t = "Read the complete contents of a file as text. Handles various text encodings and provides detailed error messages if the file cannot be read. Use this tool when you need to examine the contents of a single file.";
        let c = cut(t, 20, &ENC);
        assert_eq!(c, "Read the complete contents of a file as text…");
        assert!(ENC.count(&c) <= 20);
        let c = cut(t, 5, &ENC);
        assert!(c.ends_with('…') && ENC.count(&c) <= 5, "{c}");
        assert!(c.starts_with("Read the"), "{c}");
        assert_eq!(cut("short.", 5, &ENC), "short.");
        assert_eq!(cut(t, 0, &ENC), "");
    }

    #[test]
    fn whitespace_collapses() {
        assert_eq!(collapse_whitespace("a\n  b\tc "), "a b c");
        assert!(matches!(collapse_whitespace("a b"), Cow::Borrowed(_)));
    }
}
