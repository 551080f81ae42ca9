//! Exact token counts of every prefix of a text from one start ([`Prefix`], text pages), and
//! of texts that repeat most of the text counted before ([`Trials`], JSON pages), each
//! segment counted once.
//!
//! Paging a text tries several page ends and counts each trial page exactly. Counted afresh,
//! every trial costs a whole page of tokenizing (a budget of 10,000 tokens is ~40 KB), and a
//! page takes three to six trials. Where the encoding's count is additive
//! ([`Encoding::additive_at`]: for [`Prefix`], the line starts of logs, diffs and code), the count of
//! `text[start..end]` is the sum of the counts of the segments between such points, so
//! [`Prefix`] counts the text segment by segment (segments of about [`SEGMENT_BYTES`]), keeps
//! the running totals, and counts a trial as the total at the last point before its end plus
//! the few bytes after it. The numbers are the same as one count of the whole prefix.
//!
//! A text over the budget is counted twice on its way out: once to learn that it is over
//! ([`count_till_limit_noted`], up to the budget), then by page 1's [`Prefix`] from its start.
//! The first count is made by segments too and, for a text over its limit, notes its segment
//! totals for the thread; a [`Prefix`] from the start of the same text on the same thread
//! starts from them instead of counting the same bytes again (the same numbers: the segments'
//! bytes are compared, and each point is checked to be additive in the new text).

use std::cell::{Cell, RefCell};

use crate::tokens::Encoding;

/// Segments end at the first additive point at least this many bytes after the previous one.
pub(crate) const SEGMENT_BYTES: usize = 2048;

/// The most bytes a note of [`count_till_limit_noted`] keeps (the start of the text its
/// segments cover): 4 MiB. A text whose segments within the limit cover more is not noted.
const NOTE_MAX_BYTES: usize = 4 << 20;

/// How far [`count_till_limit_noted`] looks for segment ends, in bytes per token of the limit:
/// past `limit × 16` bytes the rest is counted without segments (as `paginate::text` takes
/// a text of more bytes per token than that to be over any limit it could meet).
const NOTE_BYTES_PER_TOKEN: usize = 16;

/// The segment totals of the last text over its limit that [`count_till_limit_noted`]
/// counted on this thread.
struct Note {
    /// [`Encoding::name`] of the encoding that counted (only the built-in OpenAI encodings,
    /// whose names are fixed, note).
    encoding: &'static str,
    /// The text's bytes up to its last point (all the counts depend on).
    start: String,
    /// The points, increasing, each with the tokens of the text before it.
    cuts: Vec<(usize, usize)>,
}

thread_local! {
    static NOTE: RefCell<Option<Note>> = const { RefCell::new(None) };
}

/// The name of `enc` when it is one whose counts may be noted.
fn noted_name(enc: &Encoding) -> Option<&'static str> {
    match enc {
        Encoding::Cl100kBase => Some("cl100k_base"),
        Encoding::O200kBase => Some("o200k_base"),
        _ => None,
    }
}

/// [`Encoding::count_till_limit_sampled`] of `text` (the same `Ok` count, or the same
/// `Err((tokens, bytes))` sample when it is over `limit`), counted by segments between
/// additive points, as [`Prefix`] counts. For a text over `limit` counted by the built-in
/// OpenAI encodings, the segment totals within the limit are noted for this thread (one note
/// per thread, the last, dropped by the first [`Prefix`] from the start of another text: of
/// several documents counted in turn, only the last one's page 1 starts from a note): a
/// [`Prefix`] from the start of the same text (page 1 of it) then starts from them. Used where
/// the count decides whether a text document needs paging.
///
/// # Errors
/// `Err` exactly when the count of `text` is over `limit` (tokens), as
/// [`Encoding::count_till_limit_sampled`].
pub fn count_till_limit_noted(
    enc: &Encoding,
    text: &str,
    limit: usize,
) -> Result<usize, (usize, usize)> {
    let Some(encoding) = noted_name(enc).filter(|_| limit > 0) else {
        return enc.count_till_limit_sampled(text, limit);
    };
    let prefix = Prefix::new(text, enc, 0);
    let reach = text.len().min(
        limit
            .saturating_mul(NOTE_BYTES_PER_TOKEN)
            .max(SEGMENT_BYTES),
    );
    prefix.cut_before(reach, limit);
    let cuts = prefix.cuts.into_inner();
    // The rest from the last point within the limit (a segment that passed it is counted
    // again, up to the piece that passes it: the sample is the one a count of the whole
    // text gives).
    let keep = cuts.partition_point(|&(_, t)| t <= limit);
    let (at, before) = keep.checked_sub(1).map_or((0, 0), |k| cuts[k]);
    let counted = enc
        .count_till_limit_sampled(&text[at..], limit - before)
        .map(|n| before + n)
        .map_err(|(tokens, bytes)| (before + tokens, at + bytes));
    if counted.is_err() && at > 0 && at <= NOTE_MAX_BYTES {
        let mut cuts = cuts;
        cuts.truncate(keep);
        NOTE.set(Some(Note {
            encoding,
            start: text[..at].to_owned(),
            cuts,
        }));
    }
    counted
}

/// The noted segment totals of `text` (see [`count_till_limit_noted`]), when this thread's
/// note is of the start of `text` in `enc`; else none, and the note is dropped (it serves the
/// pages of the text it was taken of, which page 1 may count more than once, and no longer:
/// no tool result's text stays on the thread once another text is paged).
fn noted_cuts(text: &str, enc: &Encoding) -> Vec<(usize, usize)> {
    NOTE.with_borrow_mut(|slot| {
        let cuts = slot
            .as_ref()
            .filter(|note| {
                noted_name(enc) == Some(note.encoding)
                    && text.as_bytes().starts_with(note.start.as_bytes())
                    && note.cuts.iter().all(|&(p, _)| enc.additive_at(text, p))
            })
            .map(|note| note.cuts.clone());
        if cuts.is_none() {
            *slot = None;
        }
        cuts.unwrap_or_default()
    })
}

/// Counts of `text[start..end]` for any `end` (tokens).
pub(crate) struct Prefix<'a> {
    text: &'a str,
    enc: &'a Encoding,
    start: usize,
    /// Additive points after `start`, increasing, each with the tokens of `text[start..point]`.
    cuts: RefCell<Vec<(usize, usize)>>,
    /// No additive point lies in `(last cut + SEGMENT_BYTES, scanned)`: where the search for the
    /// next one resumes.
    scanned: Cell<usize>,
}

impl<'a> Prefix<'a> {
    /// Counts from `start` (a char boundary of `text`); from the start, with this thread's
    /// note of the same text's segments when there is one ([`count_till_limit_noted`]).
    pub(crate) fn new(text: &'a str, enc: &'a Encoding, start: usize) -> Self {
        let cuts = if start == 0 {
            noted_cuts(text, enc)
        } else {
            Vec::new()
        };
        let scanned = cuts.last().map_or(start, |&(p, _)| p);
        Prefix {
            text,
            enc,
            start,
            cuts: RefCell::new(cuts),
            scanned: Cell::new(scanned),
        }
    }

    /// Counts the segment after the last cut, up to the first additive point at least
    /// [`SEGMENT_BYTES`] on and at most `end`, and records it. `false` when there is none.
    fn extend(&self, cuts: &mut Vec<(usize, usize)>, end: usize) -> bool {
        let (last, total) = cuts.last().copied().unwrap_or((self.start, 0));
        let from = self.scanned.get().max(last + SEGMENT_BYTES);
        if from > end {
            return false;
        }
        // The next line start at or after `from` (a point follows a `\n`).
        let bytes = self.text.as_bytes();
        let mut i = from.max(1) - 1;
        let found = loop {
            match bytes[i..end].iter().position(|&b| b == b'\n') {
                Some(k) if self.enc.additive_at(self.text, i + k + 1) => break Some(i + k + 1),
                Some(k) => i += k + 1,
                None => break None,
            }
        };
        let Some(next) = found else {
            self.scanned.set(end);
            return false;
        };
        cuts.push((next, total + self.enc.count(&self.text[last..next])));
        self.scanned.set(next);
        true
    }

    /// The last additive point at or before `end` (or `start`) and the tokens before it,
    /// counting new segments up to `end`; with `limit`, stops once the running total passes it
    /// (then the total is returned as it is, over `limit`).
    fn cut_before(&self, end: usize, limit: usize) -> (usize, usize) {
        let mut cuts = self.cuts.borrow_mut();
        let last = cuts.last().copied().unwrap_or((self.start, 0));
        if end <= last.0 {
            let i = cuts.partition_point(|&(p, _)| p <= end);
            return match i {
                0 => (self.start, 0),
                i => cuts[i - 1],
            };
        }
        let mut last = last;
        while last.1 <= limit && self.extend(&mut cuts, end) {
            last = cuts.last().copied().unwrap_or(last);
        }
        last
    }

    /// The first additive point after `at` and the tokens of `text[start..point]`, counting
    /// one more segment when needed; `None` past the last one. Exact segment counts only when
    /// `at` is `start` or an earlier answer of this method.
    pub(crate) fn segment_after(&self, at: usize) -> Option<(usize, usize)> {
        let mut cuts = self.cuts.borrow_mut();
        let i = cuts.partition_point(|&(p, _)| p <= at);
        if let Some(&c) = cuts.get(i) {
            return Some(c);
        }
        (self.extend(&mut cuts, self.text.len()))
            .then(|| cuts.last().copied())
            .flatten()
            .filter(|&(p, _)| p > at)
    }

    /// Tokens of `text[start..end]` (`end` a char boundary, at least `start`).
    pub(crate) fn tokens(&self, end: usize) -> usize {
        let (cut, before) = self.cut_before(end, usize::MAX);
        before + self.enc.count(&self.text[cut..end])
    }

    /// Tokens of `text[start..end]` when at most `limit`, else `None`; stops counting once
    /// past it.
    pub(crate) fn tokens_upto(&self, end: usize, limit: usize) -> Option<usize> {
        let (cut, before) = self.cut_before(end, limit);
        let rest = self
            .enc
            .count_till_limit(&self.text[cut..end], limit.checked_sub(before)?)?;
        Some(before + rest)
    }
}

/// Exact counts of texts that mostly repeat the text counted before: the trial pages of one
/// JSON page (the same document from the same start, cut at different ends, each closed with
/// its brackets), and the whole document's text before them on page 1.
///
/// Each text is counted in segments of about [`SEGMENT_BYTES`] ending at points where the count
/// is additive ([`Encoding::additive_at`]; in compact JSON, a `"` after an ASCII letter or
/// digit), and the running totals are kept; the next text is counted from the last such point
/// before the first byte where it differs from the previous one. The numbers are the same as
/// one count of the whole text (tokens).
pub(crate) struct Trials<'a> {
    enc: &'a Encoding,
    /// The text counted last, and its points with the tokens of the text before each: all
    /// of them when it was counted whole, those up to where counting stopped otherwise.
    last: RefCell<(String, Vec<(usize, usize)>)>,
}

impl<'a> Trials<'a> {
    /// No text counted yet.
    pub(crate) fn new(enc: &'a Encoding) -> Self {
        Trials {
            enc,
            last: RefCell::new((String::new(), Vec::new())),
        }
    }

    /// Tokens of `text`.
    pub(crate) fn count(&self, text: &str) -> usize {
        match self.count_upto(text, usize::MAX) {
            Some(n) => n,
            None => self.enc.count(text),
        }
    }

    /// Tokens of `text` when at most `limit`, else `None`. Counting stops at the first
    /// additive point after the running total passes `limit` (or at `limit` itself in the last
    /// segment): soon in compact JSON, whose points are a few bytes apart; a long stretch
    /// without one (a long string) is counted to its end.
    pub(crate) fn count_upto(&self, text: &str, limit: usize) -> Option<usize> {
        let mut last = self.last.borrow_mut();
        let (prev, cuts) = &mut *last;
        // A point before the first difference is a point of `text` too: the bytes on both
        // sides of it are the same.
        let same = prev
            .as_bytes()
            .iter()
            .zip(text.as_bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(prev.len().min(text.len()));
        let keep = cuts.partition_point(|&(p, _)| p < same);
        cuts.truncate(keep);
        prev.clear();
        prev.push_str(text);
        let (mut at, mut total) = cuts.last().copied().unwrap_or((0, 0));
        let bytes = text.as_bytes();
        loop {
            if total > limit {
                return None;
            }
            let from = at + SEGMENT_BYTES;
            let next = bytes.get(from..).and_then(|tail| {
                memchr::memchr_iter(b'"', tail)
                    .map(|k| from + k)
                    .find(|&q| self.enc.additive_at(text, q))
            });
            let Some(next) = next else {
                let rest = self.enc.count_till_limit(&text[at..], limit - total)?;
                return Some(total + rest);
            };
            total += self.enc.count(&text[at..next]);
            cuts.push((next, total));
            at = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(n: usize) -> String {
        (0..n)
            .map(|i| format!("commit {i:040x}\nAuthor: Dev {i} <dev{i}@example.com>\n\n    fix: thing {i}\n\n"))
            .collect()
    }

    #[test]
    fn every_prefix_counts_as_the_whole_prefix() {
        let enc = Encoding::Cl100kBase;
        let text = log(120);
        for start in [0, 1, 57, 4000] {
            let p = Prefix::new(&text, &enc, start);
            // Out of order on purpose: the table fills in jumps and is read backwards.
            for end in [
                text.len(),
                start,
                start + 3,
                9000,
                2048,
                7000,
                text.len() - 1,
            ] {
                if end < start || !text.is_char_boundary(end) {
                    continue;
                }
                assert_eq!(
                    p.tokens(end),
                    enc.count(&text[start..end]),
                    "{start}..{end}"
                );
            }
            assert!(!p.cuts.borrow().is_empty() || start > 0);
        }
    }

    #[test]
    fn segments_follow_each_other_with_exact_totals() {
        let enc = Encoding::Cl100kBase;
        let text = log(60);
        let p = Prefix::new(&text, &enc, 0);
        let mut at = 0;
        let mut n = 0;
        while let Some((end, total)) = p.segment_after(at) {
            assert!(end > at && end >= SEGMENT_BYTES * (n + 1));
            assert_eq!(total, enc.count(&text[..end]));
            at = end;
            n += 1;
        }
        assert!(n >= 2, "{n} segments");
        // Asking again reads the table.
        assert_eq!(
            p.segment_after(0).map(|c| c.0),
            p.cuts.borrow().first().map(|c| c.0)
        );
    }

    #[test]
    fn counts_up_to_a_limit_agree() {
        let enc = Encoding::Cl100kBase;
        let text = log(80);
        let whole = enc.count(&text);
        for limit in [0, 10, 500, whole - 1, whole, whole + 1] {
            let p = Prefix::new(&text, &enc, 0);
            let want = (whole <= limit).then_some(whole);
            assert_eq!(p.tokens_upto(text.len(), limit), want, "limit {limit}");
            // The table filled on the way serves exact counts after.
            assert_eq!(p.tokens(text.len()), whole);
        }
    }

    fn tree(n: usize, tag: &str) -> String {
        let items: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"name":"{tag}file_{i}.txt","type":"file","size":{i}}}"#))
            .collect();
        format!("[{}]", items.join(","))
    }

    #[test]
    fn trials_count_each_text_as_a_whole_count() {
        let enc = Encoding::Cl100kBase;
        let long = tree(1200, "");
        let t = Trials::new(&enc);
        // Prefixes, the same text again, a text that differs early, one that differs late,
        // shorter and longer ones, closed with brackets as trial pages are.
        let texts = [
            long.clone(),
            format!("{}]", &long[..20_000]),
            format!("{}]", &long[..20_001]),
            long.clone(),
            format!("{}]", &long[..9_000]),
            tree(1200, "x"),
            format!("{}}}]", &long[..30_000]),
            long[..5].to_owned(),
            String::new(),
            long.clone(),
        ];
        for text in &texts {
            assert_eq!(t.count(text), enc.count(text), "{} bytes", text.len());
        }
        let whole = enc.count(&long);
        for limit in [0, 100, whole - 1, whole, whole + 1] {
            let want = (whole <= limit).then_some(whole);
            assert_eq!(t.count_upto(&long, limit), want, "limit {limit}");
            // Counting stopped early leaves points that later counts reuse.
            assert_eq!(
                t.count(&long[..long.len() - 1]),
                enc.count(&long[..long.len() - 1])
            );
        }
        assert!(t.last.borrow().1.len() > 10, "segments were recorded");
    }

    #[test]
    fn trials_of_an_encoding_without_points_count_whole() {
        let enc = Encoding::Chars4;
        let t = Trials::new(&enc);
        let text = tree(100, "");
        assert_eq!(t.count(&text), enc.count(&text));
        assert_eq!(t.count_upto(&text, 3), None);
        assert!(t.last.borrow().1.is_empty());
    }

    #[test]
    fn a_noted_count_is_the_sampled_count_and_page_one_starts_from_it() {
        for enc in [Encoding::Cl100kBase, Encoding::O200kBase] {
            let text = log(400);
            let whole = enc.count(&text);
            for limit in [0, 1, 700, 3000, whole - 1, whole, whole + 5] {
                NOTE.set(None);
                let noted = count_till_limit_noted(&enc, &text, limit);
                assert_eq!(noted, enc.count_till_limit_sampled(&text, limit), "{limit}");
                let p = Prefix::new(&text, &enc, 0);
                // Noted only over the limit, and only with a point within it.
                let seeded = p.cuts.borrow().len();
                assert!(noted.is_err() || seeded == 0, "{limit}");
                assert!(seeded > 0 || noted.is_ok() || limit < 3000, "{limit}");
                for end in [text.len(), 1, 2047, 2048, 9000, 13_333, text.len() - 1] {
                    assert_eq!(p.tokens(end), enc.count(&text[..end]), "{limit} {end}");
                }
                assert!(
                    p.cuts
                        .borrow()
                        .iter()
                        .all(|&(c, t)| t == enc.count(&text[..c]))
                );
            }
        }
    }

    #[test]
    fn a_note_serves_only_the_text_it_was_taken_of() {
        let enc = Encoding::Cl100kBase;
        let text = log(400);
        let note = || assert!(count_till_limit_noted(&enc, &text, 3000).is_err());
        note();
        let start = NOTE.with_borrow(|n| n.as_ref().map(|n| n.start.len()));
        let last = NOTE.with_borrow(|n| n.as_ref().and_then(|n| n.cuts.last().copied()));
        let start = start.unwrap();
        assert_eq!(last.map(|(p, _)| p), Some(start));
        // The same start and more: served from the start only, as often as asked.
        let longer = format!("{text}more\n");
        assert!(Prefix::new(&longer, &enc, 5).cuts.borrow().is_empty());
        assert!(!Prefix::new(&longer, &enc, 0).cuts.borrow().is_empty());
        assert!(!Prefix::new(&text, &enc, 0).cuts.borrow().is_empty());
        // A byte changed before the last point, another encoding, a text that ends at the
        // last point, and one whose last point is no longer additive (a blank line there).
        let mut changed = text.clone().into_bytes();
        changed[start / 2] = b'#';
        let changed = String::from_utf8(changed).unwrap();
        let blank = format!("{}\n{}", &text[..start], &text[start..]);
        for (other, enc) in [
            (&changed, Encoding::Cl100kBase),
            (&text, Encoding::O200kBase),
            (&text[..start].to_owned(), Encoding::Cl100kBase),
            (&blank, Encoding::Cl100kBase),
        ] {
            note();
            let p = Prefix::new(other, &enc, 0);
            assert!(p.cuts.borrow().is_empty(), "{}", other.len());
            assert_eq!(p.tokens(other.len()), enc.count(other));
            // Dropped: the next text is another one.
            assert!(NOTE.with_borrow(Option::is_none));
        }
        // Encodings without points, texts within the limit and a limit of 0 note nothing.
        for (enc, limit) in [
            (Encoding::Chars4, 10),
            (Encoding::Cl100kBase, usize::MAX),
            (Encoding::Cl100kBase, 0),
        ] {
            NOTE.set(None);
            assert_eq!(
                count_till_limit_noted(&enc, &text, limit),
                enc.count_till_limit_sampled(&text, limit)
            );
            assert!(NOTE.with_borrow(Option::is_none));
        }
    }

    #[test]
    fn a_text_without_additive_points_is_counted_whole() {
        let enc = Encoding::Cl100kBase;
        // One long line: no line start to cut at.
        let text = "word, ".repeat(2000);
        let p = Prefix::new(&text, &enc, 0);
        assert_eq!(p.tokens(text.len()), enc.count(&text));
        assert!(p.cuts.borrow().is_empty());
        // An encoding that is never additive.
        let text = "a\nb\n".repeat(2000);
        let enc = Encoding::Chars4;
        let p = Prefix::new(&text, &enc, 0);
        assert_eq!(p.tokens(text.len()), enc.count(&text));
        assert!(p.cuts.borrow().is_empty());
    }
}
