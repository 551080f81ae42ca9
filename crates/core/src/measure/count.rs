//! Counting many related texts fast, with exactly the tokenizer's counts.
//!
//! `bpe-openai` counts a text as the sum of the BPE counts of its pre-tokenizer pieces (the
//! regex split of tiktoken). The texts of one measurement (the input, its compact form, each
//! what-if, every leaf of the field share) share almost all their pieces, so [`Counter`] keeps
//! a cache of piece → count per encoding and runs BPE only on pieces it has not seen. The split
//! and the per-piece counts are the library's own (`Tokenizer::split`, `bpe.count`), summed as
//! `Tokenizer::count` sums them: the result is the same number, only cheaper
//! (`tests/measure_equiv.rs` checks it against tiktoken-rs). Encodings without a pre-tokenizer
//! cache go through [`Encoding::count`].

use std::cell::RefCell;
use std::collections::HashMap;

use super::report::PerEncoding;
use crate::tokens::Encoding;

/// Past this many distinct pieces per encoding the cache stops growing (bounds memory on
/// adversarial input; counts stay exact, only slower).
const MAX_CACHED_PIECES: usize = 1 << 20;

/// Counts texts with every encoding of a measurement.
#[derive(Debug)]
pub(crate) struct Counter<'a> {
    encodings: &'a [Encoding],
    /// One piece cache per encoding (unused for encodings without a pre-tokenizer).
    caches: RefCell<Vec<HashMap<String, usize>>>,
}

impl<'a> Counter<'a> {
    pub(crate) fn new(encodings: &'a [Encoding]) -> Self {
        Counter {
            encodings,
            caches: RefCell::new(vec![HashMap::new(); encodings.len()]),
        }
    }

    /// The encodings, in column order.
    pub(crate) fn encodings(&self) -> &[Encoding] {
        self.encodings
    }

    /// Number of encodings.
    pub(crate) fn len(&self) -> usize {
        self.encodings.len()
    }

    /// Tokens of `text` per encoding, in order.
    pub(crate) fn counts(&self, text: &str) -> Vec<usize> {
        let mut caches = self.caches.borrow_mut();
        self.encodings
            .iter()
            .zip(caches.iter_mut())
            .map(|(e, cache)| match e {
                Encoding::Cl100kBase => piece_count(bpe_openai::cl100k_base(), cache, text),
                Encoding::O200kBase => piece_count(bpe_openai::o200k_base(), cache, text),
                other => other.count(text),
            })
            .collect()
    }

    /// Names the values of `counts`-shaped vectors.
    pub(crate) fn wrap<T>(&self, values: Vec<T>) -> PerEncoding<T> {
        PerEncoding::new(
            self.encodings
                .iter()
                .map(|e| e.name().to_owned())
                .zip(values)
                .collect(),
        )
    }

    /// Tokens of `text` per encoding.
    pub(crate) fn count(&self, text: &str) -> PerEncoding<usize> {
        self.wrap(self.counts(text))
    }

    /// The per-encoding sum of `items`.
    pub(crate) fn sum<'b>(
        &self,
        items: impl Iterator<Item = &'b PerEncoding<usize>>,
    ) -> PerEncoding<usize> {
        items.fold(self.wrap(vec![0; self.len()]), |acc, x| {
            acc.zip(x, |a, b| a + b)
        })
    }

    /// The size row of one exact text.
    pub(crate) fn size_row(&self, part: &str, text: &str) -> super::SizeRow {
        let chars = text.chars().count();
        super::size_row_from(part, text.len(), chars, chars.div_ceil(4), self.count(text))
    }
}

/// `tokenizer.count(text)`, with the BPE count of each piece looked up in `cache` first.
fn piece_count(
    tokenizer: &bpe_openai::Tokenizer,
    cache: &mut HashMap<String, usize>,
    text: &str,
) -> usize {
    let normalized = tokenizer.normalize(text);
    let mut total = 0;
    for piece in tokenizer.split(normalized.as_str()) {
        total += match cache.get(piece) {
            Some(&n) => n,
            None => {
                let n = tokenizer.bpe.count(piece.as_bytes());
                if cache.len() < MAX_CACHED_PIECES {
                    cache.insert(piece.to_owned(), n);
                }
                n
            }
        };
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_counts_equal_uncached_counts() {
        let encs = [Encoding::Cl100kBase, Encoding::O200kBase, Encoding::Chars4];
        let c = Counter::new(&encs);
        for text in [
            "",
            "Hello, world!",
            r#"{"x":247.13061935179246,"y":679.0625}"#,
            "Résumé — naïve café 東京 🚀",
            "  \n\n  x  ",
            "Hello, world!",
        ] {
            let expected: Vec<usize> = encs.iter().map(|e| e.count(text)).collect();
            assert_eq!(c.counts(text), expected, "{text:?}");
        }
    }
}
