//! Per-thread memo of BPE piece counts: the same counts as `bpe_openai::Tokenizer::count`,
//! cheaper on the texts shaping counts again and again.
//!
//! `bpe-openai` counts a text as the sum of the BPE counts of its pre-tokenizer pieces (the
//! tiktoken regex split: a piece is a word with its leading space, up to three digits, a run
//! of punctuation, a run of whitespace). JSON and logs repeat the same few thousand pieces
//! (`":"`, `","`, ` "`, keys, common words) millions of times, and the BPE of one piece costs
//! an allocation and a backtracking search. This module keeps, per thread and per encoding, a
//! table piece → count for pieces of at most [`LONG_PIECE_BYTES`] bytes and runs BPE only on
//! pieces it has not seen. The per-piece counts are the library's own (`bpe.count`), summed
//! as `Tokenizer::count` sums them; the split is the library's split searched with a regex
//! cache of this thread's (`split.rs`): the result is the same number (`tests/tokens_memo.rs`
//! checks it on random and real texts, `split.rs` the pieces).
//!
//! Memory: at most [`MEMO_ENTRIES`] tiny pieces (≤ 7 bytes, about 1 MiB of table), as many
//! short ones (about 2.3 MiB) and [`LONG_TABLE_BYTES`] of longer ones per encoding per thread,
//! plus the split's regex cache (a lazy DFA's, kept for the thread's life); a full table is
//! cleared and refilled, so adversarial input costs time, never memory.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use bpe_openai::Tokenizer;
use regex_automata::meta::Cache;
use rustc_hash::FxHasher;

use super::split;

/// Pieces of at most this many bytes (UTF-8) are memoized with an inline key.
pub(crate) const MEMO_PIECE_BYTES: usize = 31;

/// Entries of tiny pieces, and of short ones, per encoding and thread before that table is
/// cleared.
pub(crate) const MEMO_ENTRIES: usize = 1 << 15;

/// Longer pieces (long words, identifiers, whitespace runs) up to this many bytes are
/// memoized too, with an allocated key; longer ones are counted by BPE each time.
pub(crate) const LONG_PIECE_BYTES: usize = 1024;

/// Bytes of long keys per encoding and thread before that table is cleared.
pub(crate) const LONG_TABLE_BYTES: usize = 1 << 20;

/// A piece of at most [`MEMO_PIECE_BYTES`] bytes, zero-padded, its length in the last byte
/// (no allocation per entry).
type Key = [u8; MEMO_PIECE_BYTES + 1];

type Hasher = BuildHasherDefault<FxHasher>;

/// Pieces of at most this many bytes (most of them: `":"`, `","`, short words) are memoized
/// under a `u64` key, cheaper to hash and compare than a [`Key`].
const TINY_PIECE_BYTES: usize = 7;

/// The memo of one encoding on one thread.
#[derive(Default)]
struct Memo {
    tiny: HashMap<u64, u32, Hasher>,
    short: HashMap<Key, u32, Hasher>,
    long: HashMap<Box<[u8]>, u32, Hasher>,
    long_bytes: usize,
}

impl Memo {
    /// The BPE count of `piece`, from the memo when it was seen; `None` for a piece too long
    /// to memoize.
    fn piece(&mut self, tokenizer: &Tokenizer, piece: &[u8]) -> Option<usize> {
        let n = piece.len();
        if n <= TINY_PIECE_BYTES {
            // The bytes, zero-padded, the length in the last byte.
            let mut key = [0u8; 8];
            key[..n].copy_from_slice(piece);
            key[7] = n as u8;
            return Some(counted(
                &mut self.tiny,
                u64::from_le_bytes(key),
                tokenizer,
                piece,
            ));
        }
        if n <= MEMO_PIECE_BYTES {
            let mut key = [0u8; MEMO_PIECE_BYTES + 1];
            key[..n].copy_from_slice(piece);
            key[MEMO_PIECE_BYTES] = n as u8;
            return Some(counted(&mut self.short, key, tokenizer, piece));
        }
        if n > LONG_PIECE_BYTES {
            return None;
        }
        if let Some(&c) = self.long.get(piece) {
            return Some(c as usize);
        }
        let c = tokenizer.bpe.count(piece);
        if self.long_bytes + n > LONG_TABLE_BYTES {
            self.long.clear();
            self.long_bytes = 0;
        }
        self.long
            .insert(piece.into(), u32::try_from(c).unwrap_or(u32::MAX));
        self.long_bytes += n;
        Some(c)
    }
}

/// The count of `piece` from `table` under `key`, or counted by BPE and kept there (a table of
/// [`MEMO_ENTRIES`] is cleared first).
fn counted<K: std::hash::Hash + Eq>(
    table: &mut HashMap<K, u32, Hasher>,
    key: K,
    tokenizer: &Tokenizer,
    piece: &[u8],
) -> usize {
    if let Some(&c) = table.get(&key) {
        return c as usize;
    }
    let c = tokenizer.bpe.count(piece);
    if table.len() >= MEMO_ENTRIES {
        table.clear();
    }
    table.insert(key, u32::try_from(c).unwrap_or(u32::MAX));
    c
}

/// Which memo table: one per BPE encoding with a pre-tokenizer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Which {
    Cl100k = 0,
    O200k = 1,
}

thread_local! {
    static TABLES: RefCell<[Memo; 2]> = RefCell::new([Memo::default(), Memo::default()]);
}

thread_local! {
    /// The regex cache of each encoding's split on this thread (see `split.rs`).
    static CACHES: RefCell<[Option<Cache>; 2]> = const { RefCell::new([None, None]) };
}

/// Runs `f` on the pre-tokenizer pieces of `text` (already normalized) and the memo of
/// `which`: the pieces of `split.rs`, searched with this thread's regex cache, or the library's
/// own `Tokenizer::split` if that splitter could not be built.
fn with_pieces<R>(
    tokenizer: &Tokenizer,
    which: Which,
    text: &str,
    f: impl FnOnce(&mut dyn Iterator<Item = &str>, &mut Memo) -> R,
) -> R {
    let splitter = match which {
        Which::Cl100k => split::CL100K_BASE.as_ref(),
        Which::O200k => split::O200K_BASE.as_ref(),
    };
    TABLES.with_borrow_mut(|tables| {
        let memo = &mut tables[which as usize];
        let Some(splitter) = splitter else {
            return f(&mut tokenizer.split(text), memo);
        };
        CACHES.with_borrow_mut(|caches| {
            let cache = caches[which as usize].get_or_insert_with(|| splitter.cache());
            f(&mut splitter.pieces(cache, text), memo)
        })
    })
}

/// `tokenizer.count(text)` (tokens), with the memo of `which`.
pub(crate) fn count(tokenizer: &Tokenizer, which: Which, text: &str) -> usize {
    let normalized = tokenizer.normalize(text);
    with_pieces(tokenizer, which, normalized.as_str(), |pieces, memo| {
        pieces
            .map(|piece| {
                let bytes = piece.as_bytes();
                memo.piece(tokenizer, bytes)
                    .unwrap_or_else(|| tokenizer.bpe.count(bytes))
            })
            .sum()
    })
}

/// `tokenizer.count_till_limit(text, limit)`: `Ok` with the count (tokens) when it is at most
/// `limit`, else `Err((tokens, bytes))`: the tokens of the first `bytes` bytes of `text` (whole
/// pieces), counted before the first piece that went past the limit.
pub(crate) fn count_till_limit(
    tokenizer: &Tokenizer,
    which: Which,
    text: &str,
    limit: usize,
) -> Result<usize, (usize, usize)> {
    let normalized = tokenizer.normalize(text);
    with_pieces(tokenizer, which, normalized.as_str(), |pieces, memo| {
        let (mut consumed, mut bytes) = (0usize, 0usize);
        for piece in pieces {
            let piece = piece.as_bytes();
            let remaining = limit - consumed;
            let n = match memo.piece(tokenizer, piece) {
                Some(n) => n,
                None => tokenizer
                    .bpe
                    .count_till_limit(piece, remaining)
                    .ok_or((consumed, bytes))?,
            };
            if n > remaining {
                return Err((consumed, bytes));
            }
            consumed += n;
            bytes += piece.len();
        }
        Ok(consumed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_told_apart_by_length_and_long_ones_are_memoized() {
        let tok = bpe_openai::cl100k_base();
        let mut m = Memo::default();
        // A piece and the same piece with trailing NULs must not share a key.
        assert_eq!(m.piece(tok, b"a"), Some(tok.bpe.count(b"a")));
        assert_eq!(m.piece(tok, b"a\0"), Some(tok.bpe.count(b"a\0")));
        // Either side of the tiny keys' length (7 bytes), and a tiny piece ending in NUL.
        for p in [&b"abcdefg"[..], b"abcdefgh", b"abcdef\0", b"abcdef", b"\0"] {
            assert_eq!(m.piece(tok, p), Some(tok.bpe.count(p)), "{p:?}");
            assert_eq!(m.piece(tok, p), Some(tok.bpe.count(p)), "{p:?} again");
        }
        assert_eq!(m.tiny.len(), 6);
        assert_eq!(m.short.len(), 1);
        let long = [b'x'; 200];
        assert_eq!(m.piece(tok, &long), Some(tok.bpe.count(&long)));
        assert_eq!(m.long.len(), 1);
        assert_eq!(m.piece(tok, &long), Some(tok.bpe.count(&long)));
        assert_eq!(m.piece(tok, &[b'x'; LONG_PIECE_BYTES + 1]), None);
    }

    #[test]
    fn full_tables_are_cleared_and_counts_stay_exact() {
        let tok = bpe_openai::cl100k_base();
        // More distinct tiny and short pieces (a word of letters: one piece) than the tables
        // hold, and long ones past their bytes.
        let word = |mut i: usize| {
            let mut w = String::from(" z");
            while i > 0 {
                w.push(char::from(b'a' + (i % 26) as u8));
                i /= 26;
            }
            w
        };
        let mut text: String = (0..MEMO_ENTRIES + 100)
            .map(|i| format!("{}{}", word(i), word(i).repeat(3).replace(' ', "")))
            .collect();
        text.extend((0..MEMO_ENTRIES + 100).map(word));
        // Distinct long pieces (500 letters each) past the long table's bytes.
        for i in 0..(LONG_TABLE_BYTES / 500 + 10) {
            text.push_str(&format!(" {}{}", "y".repeat(500), &word(i)[1..]));
        }
        assert_eq!(count(tok, Which::Cl100k, &text), tok.count(text.as_str()));
        TABLES.with_borrow(|t| {
            // Each table was cleared once and refilled with what came after.
            assert!(!t[0].tiny.is_empty() && t[0].tiny.len() < MEMO_ENTRIES / 2);
            assert!(!t[0].short.is_empty() && t[0].short.len() < MEMO_ENTRIES / 2);
            assert!(t[0].long_bytes > 0 && t[0].long_bytes < LONG_TABLE_BYTES / 2);
        });
        assert_eq!(count(tok, Which::Cl100k, &text), tok.count(text.as_str()));
    }
}
