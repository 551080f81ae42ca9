//! The tiktoken pre-tokenizer split of `bpe-openai`, searched with a regex cache of the
//! caller's instead of the regex's shared pool.
//!
//! `bpe_openai::Tokenizer::split` runs one regex search per piece (a piece is ~4 bytes), and
//! each search takes a cache from the regex's pool and puts it back. Only the first thread that
//! ever used the regex gets the pool's fast path; on every other thread (tokio's workers and
//! blocking pool, the shaping threads) each take and each return goes through the pool's
//! shared stacks, which cost as much as the search itself (a profile of page 1 of a 12 MB
//! `directory_tree`: 48% of the split's time in `Pool::get_slow` and `Pool::put_value`). The
//! memo (`memo.rs`) keeps one [`Cache`] per thread and encoding beside its piece table and
//! splits with [`Pieces`].
//!
//! The patterns and the look-ahead emulation are `bpe-openai` 0.3's own (`src/lib.rs`:
//! `BPE_CL100K_BASE`, `BPE_O200K_BASE`, `Pretokenizer::new_lookahead`, `Splits`): the
//! tiktoken patterns with the negative look-ahead `\s+(?!\S)` rewritten as a pattern that
//! matches one more whitespace character, which is then dropped from the piece. The pieces are
//! the library's pieces, byte for byte: the tests below compare them with
//! `Tokenizer::split` on random and real texts, so an upgrade of `bpe-openai` that changes its
//! split fails there rather than miscounting.

use std::sync::LazyLock;

use regex_automata::meta::{Cache, Regex};
use regex_automata::{Anchored, Input};

/// One encoding's pre-tokenizer: the patterns in one regex, and whether each pattern ends in a
/// look-ahead character to drop.
pub(crate) struct Splitter {
    regex: Regex,
    lookahead: [bool; 3],
}

impl Splitter {
    /// The regex's patterns: the main one, then `\s+\s` (its last character a look-ahead),
    /// then `\s+`. `None` when the regex cannot be built (it always can: the patterns are
    /// constants; a failure falls back to the library's own split).
    fn new(main: &str) -> Option<Splitter> {
        let regex = Regex::new_many(&[main, "\\s+\\s", "\\s+"]).ok()?;
        Some(Splitter {
            regex,
            lookahead: [false, true, false],
        })
    }

    /// A cache for [`Splitter::pieces`] (one per thread).
    pub(crate) fn cache(&self) -> Cache {
        self.regex.create_cache()
    }

    /// The pieces of `text`, in order, searched with `cache` (made by [`Splitter::cache`]).
    pub(crate) fn pieces<'a>(&'a self, cache: &'a mut Cache, text: &'a str) -> Pieces<'a> {
        Pieces {
            splitter: self,
            cache,
            text,
            last: 0,
        }
    }
}

/// `cl100k_base`'s split (`bpe-openai` 0.3, `BPE_CL100K_BASE`).
pub(crate) static CL100K_BASE: LazyLock<Option<Splitter>> = LazyLock::new(|| {
    Splitter::new(
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$",
    )
});

/// `o200k_base`'s split (`bpe-openai` 0.3, `BPE_O200K_BASE`).
pub(crate) static O200K_BASE: LazyLock<Option<Splitter>> = LazyLock::new(|| {
    Splitter::new(
        &[
            "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
            "\\p{N}{1,3}",
            " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
            "\\s*[\\r\\n]+",
            "\\s+$",
        ]
        .join("|"),
    )
});

/// The pieces of a text (see [`Splitter::pieces`]).
pub(crate) struct Pieces<'a> {
    splitter: &'a Splitter,
    cache: &'a mut Cache,
    text: &'a str,
    last: usize,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        // As the library: an anchored search on the rest of the text (so `$` is its end).
        let rest = self.text.get(self.last..)?;
        let input = Input::new(rest).anchored(Anchored::Yes);
        let m = self.splitter.regex.search_with(self.cache, &input)?;
        let start = self.last;
        let mut end = start + m.end();
        if end == start {
            // No pattern matches empty text; were one to, the split would not advance.
            return None;
        }
        if self
            .splitter
            .lookahead
            .get(m.pattern().as_usize())
            .copied()
            .unwrap_or(false)
        {
            // Drop the look-ahead character (the pattern matched at least two characters).
            let piece = self.text.get(start..end)?;
            let last = piece.chars().next_back().map_or(0, char::len_utf8);
            if end - last > start {
                end -= last;
            }
        }
        self.last = end;
        self.text.get(start..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Our pieces of `text` and the library's, for both encodings.
    fn both(text: &str) -> Vec<(Vec<String>, Vec<String>)> {
        [
            (&CL100K_BASE, bpe_openai::cl100k_base()),
            (&O200K_BASE, bpe_openai::o200k_base()),
        ]
        .into_iter()
        .map(|(ours, lib)| {
            let Some(splitter) = ours.as_ref() else {
                panic!("the splitter builds");
            };
            let mut cache = splitter.cache();
            let ours = splitter.pieces(&mut cache, text).map(str::to_owned);
            let theirs = lib.split(text).map(str::to_owned);
            (ours.collect(), theirs.collect())
        })
        .collect()
    }

    #[test]
    fn real_texts_split_as_the_library_splits_them() {
        for text in [
            include_str!("../../tests/data/directory_tree.pretty.json"),
            include_str!("../../tests/data/fs_tools.rpc.json"),
            include_str!("../../tests/data/annotated_message.rpc.json"),
            "",
            " ",
            "  \n\n  x",
            "don't  STOP'S   \t\r\n 123456 ½ 中文 😀😀 a/b//c",
            "trailing spaces   ",
        ] {
            for (ours, theirs) in both(text) {
                assert_eq!(ours, theirs);
                assert_eq!(ours.concat(), text, "the pieces cover the text");
            }
        }
    }

    proptest! {
        #[test]
        fn pieces_are_the_librarys_pieces(
            text in "[ \t\r\n'sStTdDlLmMvVrReE0-9a-z.,:;{}\\[\\]\"/\\\\_é中😀\u{300}\u{a0}\u{2028}-]{0,120}",
        ) {
            for (ours, theirs) in both(&text) {
                prop_assert_eq!(ours, theirs);
            }
        }

        #[test]
        fn any_text_splits_as_the_library_splits_it(text in "\\PC{0,60}|\\p{Any}{0,40}") {
            for (ours, theirs) in both(&text) {
                prop_assert_eq!(ours, theirs);
            }
        }
    }
}
