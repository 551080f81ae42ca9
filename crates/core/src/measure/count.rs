//! Counting many related texts with every encoding of a measurement.
//!
//! The texts of one measurement (the input, its compact form, each what-if, every leaf of the
//! field share) share almost all their pre-tokenizer pieces; [`Encoding::count`] memoizes
//! piece counts per thread (`tokens/memo.rs`), so they cost little after the first
//! (`tests/measure_equiv.rs` checks the counts against tiktoken-rs).

use super::report::{PerEncoding, SizeRow, size_row_from};
use crate::tokens::Encoding;

/// Counts texts with every encoding of a measurement.
#[derive(Debug)]
pub(crate) struct Counter<'a> {
    encodings: &'a [Encoding],
}

impl<'a> Counter<'a> {
    pub(crate) fn new(encodings: &'a [Encoding]) -> Self {
        Counter { encodings }
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
        self.encodings.iter().map(|e| e.count(text)).collect()
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
    pub(crate) fn size_row(&self, part: &str, text: &str) -> SizeRow {
        let chars = text.chars().count();
        size_row_from(part, text.len(), chars, chars.div_ceil(4), self.count(text))
    }
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
