//! The whole rendering of a document as it goes out (compact JSON, or the table form), and
//! its tokens: exact, counted only up to the budget, or estimated from a sample. Pure
//! functions over core's documents and encodings; a leaf of the boundary.

use crate::paginate::Document;
use crate::table::TablePager;
use crate::tokens::Encoding;

/// Whether several text items must be paged as one JSON array instead of as a sequence:
/// when the budget is so small that a whole item beside the meta item might not fit while
/// the core pager, whose floor is [`crate::MIN_BUDGET_TOKENS`], would not cut it.
pub fn needs_one_document(n_docs: usize, budget: usize, reserve: usize) -> bool {
    n_docs > 1 && budget < crate::MIN_BUDGET_TOKENS + reserve
}

/// The whole rendering of `doc` as it goes out, and its exact tokens: the table form when
/// `tables` and some array of it becomes a table, else [`doc_tokens`]'s.
pub fn doc_form(
    doc: &Document,
    precision: u32,
    encoding: &Encoding,
    tables: bool,
) -> (String, usize) {
    if tables && let Some((_, text)) = TablePager::new(encoding.clone(), 0, precision).render(doc) {
        let t = count(&text, encoding);
        return (text, t);
    }
    doc_tokens(doc, precision, encoding)
}

/// [`doc_form`], counted only up to `budget`: the exact tokens when at most `budget`, else
/// `budget + 1` ("over the budget"; [`Encoding::count_till_limit_sampled`] stops there, so a
/// 12 MB document costs the tokenizing of about the budget's worth of text, not of all of it),
/// with, for a doc over the budget, how far that count got ([`Sample`], for the estimate).
/// A text document is counted as page 1 of it counts
/// ([`crate::paginate::count_till_limit_noted`]): page 1, on the same thread,
/// starts from that count instead of tokenizing the same bytes again.
pub fn doc_form_till(
    doc: &Document,
    precision: u32,
    encoding: &Encoding,
    tables: bool,
    budget: usize,
) -> (String, usize, Sample) {
    let (text, paged_as_text) = if tables
        && let Some((_, text)) = TablePager::new(encoding.clone(), 0, precision).render(doc)
    {
        (text, false)
    } else {
        (doc.render(precision), matches!(doc, Document::Text(_)))
    };
    let counted = if paged_as_text {
        crate::paginate::count_till_limit_noted(encoding, &text, budget)
    } else {
        encoding.count_till_limit_sampled(&text, budget)
    };
    match counted {
        Ok(t) => (text, t, None),
        Err(sample) => (text, budget + 1, Some(sample)),
    }
}

/// For a rendering over the budget: the tokens and bytes of its start that
/// [`doc_form_till`] counted before it passed the budget (`None`: within the budget).
pub type Sample = Option<(usize, usize)>;

/// Bytes of a doc's rendering counted to estimate its tokens (its first bytes).
pub const ESTIMATE_SAMPLE_BYTES: usize = 16 * 1024;

/// The estimate of a response's total tokens page 1 shows while the exact count runs: the
/// docs within `budget` as counted (`doc_tokens`, exact), each doc over it as its bytes times
/// the tokens per byte of the start [`doc_form_till`] counted (`samples`; when that is too
/// short, of its first [`ESTIMATE_SAMPLE_BYTES`], counted here), rounded to two significant
/// digits. A function of the renderings alone, so it is the same whenever computed.
pub fn estimate_total(
    rendered: &[String],
    doc_tokens: &[usize],
    samples: &[Sample],
    budget: usize,
    encoding: &Encoding,
) -> u64 {
    let sum: u64 = rendered
        .iter()
        .zip(doc_tokens)
        .enumerate()
        .map(|(i, (text, &t))| {
            if t <= budget {
                return t as u64;
            }
            let (sample, end) = match samples.get(i).copied().flatten() {
                Some((tokens, bytes)) if bytes >= ESTIMATE_SAMPLE_BYTES.min(text.len()) => {
                    (tokens, bytes)
                }
                _ => {
                    let mut end = text.len().min(ESTIMATE_SAMPLE_BYTES);
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    (encoding.count(&text[..end]), end)
                }
            };
            over_budget(text.len(), (sample, end), budget)
        })
        .sum();
    two_significant_digits(sum)
}

/// The estimate of a doc over `budget` whose rendering has `bytes` bytes, by the tokens per
/// byte of a sample of it (`(tokens, bytes)` of its start), unrounded.
fn over_budget(bytes: usize, (tokens, sample_bytes): (usize, usize), budget: usize) -> u64 {
    let est = tokens.max(1) as u128 * bytes as u128 / sample_bytes.max(1) as u128;
    u64::try_from(est)
        .unwrap_or(u64::MAX)
        .max(budget as u64 + 1)
}

/// [`estimate_total`] of a response of one doc over `budget` whose rendering is not at hand:
/// `bytes`, an estimate of its size, and `sample`, the tokens and bytes of its start.
pub fn estimate_one(bytes: usize, sample: (usize, usize), budget: usize) -> u64 {
    two_significant_digits(over_budget(bytes, sample, budget))
}

/// `n` rounded to two significant digits (12,345 → 12,000; 99 → 99).
fn two_significant_digits(n: u64) -> u64 {
    let mut unit = 1u64;
    while n / unit >= 100 {
        unit *= 10;
    }
    (n + unit / 2) / unit * unit
}

/// Whether the whole response fits `budget` without a meta item (the sum of its items'
/// tokens).
pub fn fits_whole(doc_tokens: &[usize], budget: usize) -> bool {
    doc_tokens.iter().sum::<usize>() <= budget
}

/// The whole-rendering tokens of `doc`, exactly.
pub fn doc_tokens(doc: &Document, precision: u32, encoding: &Encoding) -> (String, usize) {
    let text = doc.render(precision);
    let t = count(&text, encoding);
    (text, t)
}

/// The tokens of `text`, exactly ([`Encoding::count`]); a long text in an OpenAI encoding is
/// counted as two halves at once, on this thread and a scoped one.
///
/// Exact because the halves meet where a pre-tokenization piece must end: between an ASCII
/// letter and a `"`. No alternative of the cl100k_base or o200k_base split pattern matches a
/// letter followed by `"` (letters runs, contractions and digits take no `"`; punctuation and
/// whitespace runs take no letter), and the two look-around parts (`\s+$`, `\s+\s`) only
/// concern whitespace; BPE then runs on each piece alone, so the count is the sum of the
/// halves' counts (checked against the whole count in the tests below).
pub fn count(text: &str, encoding: &Encoding) -> usize {
    let splittable = matches!(encoding, Encoding::Cl100kBase | Encoding::O200kBase);
    if !splittable || text.len() < PARALLEL_COUNT_BYTES {
        return encoding.count(text);
    }
    let Some(mid) = split_point(text) else {
        return encoding.count(text);
    };
    let (a, b) = text.split_at(mid);
    std::thread::scope(|s| {
        let other = s.spawn(|| encoding.count(b));
        let first = encoding.count(a);
        // A panic in the other thread (none expected) falls back to counting here.
        first + other.join().unwrap_or_else(|_| encoding.count(b))
    })
}

/// A byte index near the middle of `text` where a `"` follows an ASCII letter: a boundary of
/// the OpenAI pre-tokenizers (see [`count`]). `None` when there is none.
fn split_point(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mid = bytes.len() / 2;
    let at = |i: usize| bytes[i] == b'"' && bytes[i - 1].is_ascii_alphabetic();
    let forward = memchr::memchr_iter(b'"', &bytes[mid..])
        .map(|i| mid + i)
        .find(|&i| i > 0 && at(i));
    forward.or_else(|| memchr::memrchr_iter(b'"', &bytes[..mid]).find(|&i| i > 0 && at(i)))
}

/// Texts at least this long (bytes) are counted in two halves on two threads.
const PARALLEL_COUNT_BYTES: usize = 512 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn big_json(seed: u64, n: usize) -> String {
        let items: Vec<serde_json::Value> = (0..n)
            .map(|i| {
                let k = seed.wrapping_mul(31).wrapping_add(i as u64);
                serde_json::json!({
                    "name": format!("pkg_{k}_émoji 🎉 'sé\"q\" x"),
                    "type": if k.is_multiple_of(3) { "directory" } else { "file" },
                    "size": k % 1000, "ratio": (k as f64) / 7.0,
                    "tags": ["a", "B c", "  spaced  ", "tab\there", "line\nbreak", "don't"],
                })
            })
            .collect();
        serde_json::to_string(&items).unwrap_or_default()
    }

    #[test]
    fn split_point_is_between_a_letter_and_a_quote() {
        let text = big_json(1, 10);
        let i = split_point(&text).unwrap_or(0);
        assert!(i > 0);
        assert_eq!(text.as_bytes()[i], b'"');
        assert!(text.as_bytes()[i - 1].is_ascii_alphabetic());
        assert_eq!(split_point("[1,2,3]"), None);
    }

    #[test]
    fn parallel_count_equals_whole_count_on_a_long_text() {
        let text = big_json(7, 8000);
        assert!(text.len() >= PARALLEL_COUNT_BYTES);
        for enc in [Encoding::Cl100kBase, Encoding::O200kBase] {
            assert_eq!(count(&text, &enc), enc.count(&text));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any `letter"` boundary splits the count exactly, whatever surrounds it.
        #[test]
        fn halves_at_a_letter_quote_boundary_add_up(
            left in "[ -~\\n\\t é🎉']{0,40}[a-zA-Z]",
            right in "\"[ -~\\n\\t é🎉']{0,40}",
        ) {
            let text = format!("{left}{right}");
            for enc in [Encoding::Cl100kBase, Encoding::O200kBase] {
                prop_assert_eq!(enc.count(&left) + enc.count(&right), enc.count(&text));
            }
        }
    }
}
