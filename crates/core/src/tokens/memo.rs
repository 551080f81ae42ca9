//! Per-thread memo of BPE piece counts: the same counts as `bpe_openai::Tokenizer::count`,
//! cheaper on the texts shaping counts again and again.
//!
//! `bpe-openai` counts a text as the sum of the BPE counts of its pre-tokenizer pieces (the
//! tiktoken regex split: a piece is a word with its leading space, up to three digits, a run
//! of punctuation, a run of whitespace). JSON and logs repeat the same few thousand pieces
//! (`":"`, `","`, ` "`, keys, common words) millions of times, and the BPE of one piece costs
//! an allocation and a backtracking search. This module keeps, per thread and per encoding, a
//! table piece → count for pieces of at most [`MEMO_PIECE_BYTES`] bytes and runs BPE only on
//! pieces it has not seen. The split and the per-piece counts are the library's own
//! (`Tokenizer::split`, `bpe.count`), summed as `Tokenizer::count` sums them: the result is
//! the same number (`tests/tokens_memo.rs` checks it on random and real texts).
//!
//! Memory: at most [`MEMO_ENTRIES`] pieces per encoding per thread (about 1.5 MiB); a full
//! table is cleared and refilled, so adversarial input costs time, never memory.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use bpe_openai::Tokenizer;
use rustc_hash::FxHasher;

/// Pieces of at most this many bytes (UTF-8) are memoized; longer ones (long words, runs of
/// whitespace) are counted by BPE each time.
pub(crate) const MEMO_PIECE_BYTES: usize = 31;

/// Entries per encoding and thread before the table is cleared.
pub(crate) const MEMO_ENTRIES: usize = 1 << 15;

/// A piece of at most [`MEMO_PIECE_BYTES`] bytes, zero-padded, its length in the last byte
/// (no allocation per entry).
type Key = [u8; MEMO_PIECE_BYTES + 1];

type Table = HashMap<Key, u32, BuildHasherDefault<FxHasher>>;

/// Which memo table: one per BPE encoding with a pre-tokenizer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Which {
    Cl100k = 0,
    O200k = 1,
}

thread_local! {
    static TABLES: RefCell<[Table; 2]> = RefCell::new([Table::default(), Table::default()]);
}

fn key_of(piece: &[u8]) -> Option<Key> {
    let n = piece.len();
    if n > MEMO_PIECE_BYTES {
        return None;
    }
    let mut key = [0u8; MEMO_PIECE_BYTES + 1];
    key[..n].copy_from_slice(piece);
    key[MEMO_PIECE_BYTES] = n as u8;
    Some(key)
}

/// The BPE count of one memoizable `piece`.
fn piece_count(table: &mut Table, tokenizer: &Tokenizer, key: Key, piece: &[u8]) -> usize {
    if let Some(&n) = table.get(&key) {
        return n as usize;
    }
    let n = tokenizer.bpe.count(piece);
    if table.len() >= MEMO_ENTRIES {
        table.clear();
    }
    table.insert(key, u32::try_from(n).unwrap_or(u32::MAX));
    n
}

/// `tokenizer.count(text)` (tokens), with the memo of `which`.
pub(crate) fn count(tokenizer: &Tokenizer, which: Which, text: &str) -> usize {
    let normalized = tokenizer.normalize(text);
    TABLES.with_borrow_mut(|tables| {
        let table = &mut tables[which as usize];
        tokenizer
            .split(normalized.as_str())
            .map(|piece| {
                let bytes = piece.as_bytes();
                match key_of(bytes) {
                    Some(key) => piece_count(table, tokenizer, key, bytes),
                    None => tokenizer.bpe.count(bytes),
                }
            })
            .sum()
    })
}

/// `tokenizer.count_till_limit(text, limit)`: the count (tokens) when it is at most `limit`,
/// else `None`, stopping at the first piece past the limit.
pub(crate) fn count_till_limit(
    tokenizer: &Tokenizer,
    which: Which,
    text: &str,
    limit: usize,
) -> Option<usize> {
    let normalized = tokenizer.normalize(text);
    TABLES.with_borrow_mut(|tables| {
        let table = &mut tables[which as usize];
        let mut consumed = 0usize;
        for piece in tokenizer.split(normalized.as_str()) {
            let bytes = piece.as_bytes();
            let remaining = limit - consumed;
            let n = match key_of(bytes) {
                Some(key) => piece_count(table, tokenizer, key, bytes),
                None => tokenizer.bpe.count_till_limit(bytes, remaining)?,
            };
            if n > remaining {
                return None;
            }
            consumed += n;
        }
        Some(consumed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_tell_pieces_apart_by_length() {
        // A piece and the same piece with trailing NULs must not share a key.
        assert_ne!(key_of(b"a"), key_of(b"a\0"));
        assert!(key_of(&[b'x'; MEMO_PIECE_BYTES]).is_some());
        assert!(key_of(&[b'x'; MEMO_PIECE_BYTES + 1]).is_none());
    }

    #[test]
    fn a_full_table_is_cleared_and_counts_stay_exact() {
        let tok = bpe_openai::cl100k_base();
        // More distinct short pieces than the table holds.
        let text: String = (0..MEMO_ENTRIES + 100)
            .map(|i| format!(" w{i:x}q"))
            .collect();
        assert_eq!(count(tok, Which::Cl100k, &text), tok.count(text.as_str()));
        TABLES.with_borrow(|t| assert!(t[0].len() <= MEMO_ENTRIES));
        assert_eq!(count(tok, Which::Cl100k, &text), tok.count(text.as_str()));
    }
}
