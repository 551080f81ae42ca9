//! Pages of a plain text: contiguous slices cut after a `\n` (so a CRLF stays with its line),
//! or, inside one line too long for a page, at a UTF-8 character boundary.
//!
//! U+2028, U+2029 and form feed are not line breaks: line numbers agree with what an editor
//! shows. Like JSON pages, candidate ends are estimated line by line (counting only the lines
//! shown) and the chosen page is verified by an exact count of its text plus its meta.

use super::json::{floor_boundary, next_boundary};
use super::page::{Page, PageInfo, Position, TextPos};
use super::prefix::Prefix;
use crate::tokens::Encoding;

/// See `json::BYTES_PER_TOKEN_CAP`.
const BYTES_PER_TOKEN_CAP: usize = 16;
/// Lines are estimated in chunks of about this many bytes.
const CHUNK_BYTES: usize = 2048;

/// Pages one text.
pub(crate) struct TextPaging<'a> {
    pub(crate) text: &'a str,
    pub(crate) enc: &'a Encoding,
    pub(crate) budget: usize,
}

/// Lines of `text` as an editor counts them: one per `\n`, plus a last line without one.
pub(crate) fn line_count(text: &str) -> u64 {
    let n = text.bytes().filter(|&b| b == b'\n').count() as u64;
    n + u64::from(!text.is_empty() && !text.ends_with('\n'))
}

struct Built {
    end: usize,
    meta: String,
    tokens: usize,
    meta_tokens: usize,
    shown: String,
}

/// Whether a text of `bytes` bytes may be at most `limit` tokens (else it is taken as over
/// without tokenizing it; see [`BYTES_PER_TOKEN_CAP`]).
fn may_fit(bytes: usize, limit: usize) -> bool {
    bytes <= limit.saturating_mul(BYTES_PER_TOKEN_CAP).max(64)
}

impl TextPaging<'_> {
    fn count_upto(&self, text: &str, limit: usize) -> Option<usize> {
        if !may_fit(text.len(), limit) {
            return None;
        }
        self.enc.count_till_limit(text, limit)
    }

    /// The page at `at` (a valid position: `at.byte < text.len()`, or 0).
    pub(crate) fn page(&self, at: TextPos, meta: &mut dyn FnMut(&PageInfo<'_>) -> String) -> Page {
        let text = self.text;
        let o = at.byte;
        // Every trial page below starts at `o`: their counts share one table.
        let prefix = Prefix::new(text, self.enc, o);
        if o == 0
            && may_fit(text.len(), self.budget)
            && let Some(tokens) = prefix.tokens_upto(text.len(), self.budget)
        {
            let shown = match line_count(text) {
                0 => "empty".to_owned(),
                1 => "line 1 of 1".to_owned(),
                n => format!("lines 1-{n} of {n}"),
            };
            return Page {
                body: text.to_owned(),
                value: None,
                meta: None,
                tokens,
                location: shown.clone(),
                shown,
                start: Position::text(at),
                next: None,
                root: Vec::new(),
                oversized: false,
            };
        }
        let total = line_count(text);
        let guess = self.shown(at, next_boundary(text, o), total);
        let meta_est = self.enc.count(&meta(&PageInfo {
            shown: &guess,
            has_next: true,
            next_start_line: Some(at.line + 1000),
        })) + 4;
        let body_budget = self.budget.saturating_sub(meta_est).max(1);
        let mut limit = body_budget + body_budget / 4 + 16;
        let (best, oversized) = loop {
            let cands = self.walk(&prefix, o, limit);
            if let Some(b) = self.search(&prefix, at, &cands, body_budget, total, meta) {
                break (b, false);
            }
            if limit <= 1 {
                // Even one character and the meta are over the budget (a huge meta text).
                break (self.build(&prefix, at, cands[0].0, total, meta), true);
            }
            // Estimates can be off: walk again with a smaller limit (lines get split).
            limit /= 2;
        };
        let body = &text[o..best.end];
        let next = (best.end < text.len()).then(|| Position::text(advance(at, body)));
        Page {
            body: body.to_owned(),
            value: None,
            meta: Some(best.meta),
            tokens: best.tokens,
            location: best.shown.clone(),
            shown: best.shown,
            start: Position::text(at),
            next,
            root: Vec::new(),
            oversized,
        }
    }

    /// The largest candidate whose page fits the budget, by binary search from the estimate.
    fn search(
        &self,
        prefix: &Prefix<'_>,
        at: TextPos,
        cands: &[(usize, usize)],
        body_budget: usize,
        total: u64,
        meta: &mut dyn FnMut(&PageInfo<'_>) -> String,
    ) -> Option<Built> {
        super::search::calibrated(
            cands.len(),
            |i| cands[i].1,
            self.budget,
            body_budget,
            |i| {
                let b = self.build(prefix, at, cands[i].0, total, meta);
                let (tokens, meta_tokens) = (b.tokens, b.meta_tokens);
                (b, tokens, meta_tokens)
            },
        )
    }

    /// Candidate ends (byte offsets) after `o` with estimated tokens: after each line, or
    /// inside the first line when it alone does not fit. Never empty.
    ///
    /// While the lines run from one segment of `prefix` to the next, the segments' exact
    /// counts (which the trial pages reuse) stand in for the chunk counts.
    fn walk(&self, prefix: &Prefix<'_>, o: usize, limit: usize) -> Vec<(usize, usize)> {
        let text = self.text;
        let mut cands = Vec::new();
        let mut at = o;
        let mut est = 0;
        // `at` is `o` or a segment end of `prefix` (so `est` is its exact count).
        let mut aligned = true;
        // Chunks shrink by half each time one does not fit: near the end of the page, every
        // line would otherwise cost a count of a whole chunk that cannot fit.
        let mut chunk_bytes = CHUNK_BYTES;
        while at < text.len() && est <= limit {
            let remaining = limit - est;
            if aligned
                && let Some((end, total)) = prefix.segment_after(at)
                && total - est <= remaining
            {
                let (c, span) = (total - est, end - at);
                let mut e = at;
                while e < end {
                    e = text[e..end].find('\n').map_or(end, |i| e + i + 1);
                    cands.push((e, est + c * (e - at) / span));
                }
                est = total;
                at = end;
                continue;
            }
            aligned = false;
            // Whole lines in chunks of about `chunk_bytes`, counted at once (one tokenizer call
            // per chunk, not per line); a chunk's tokens are spread over its lines by bytes.
            let mut ends = Vec::new();
            let mut end = at;
            while end < text.len() && end - at < chunk_bytes {
                end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
                ends.push(end);
            }
            if ends.len() > 1
                && let Some(c) = self.count_upto(&text[at..end], remaining.max(1))
            {
                let span = end - at;
                cands.extend(ends.iter().map(|&e| (e, est + c * (e - at) / span)));
                est += c;
                at = end;
                continue;
            }
            if ends.len() > 1 {
                chunk_bytes = (chunk_bytes / 2).max(1);
                continue;
            }
            // The page ends in this chunk: line by line.
            let le = ends.first().copied().unwrap_or(text.len());
            if let Some(c) = self.count_upto(&text[at..le], remaining.max(1)) {
                est += c;
                cands.push((le, est));
                at = le;
                continue;
            }
            if cands.is_empty() {
                self.line_pieces(at, le, remaining.max(1), &mut cands);
            }
            break;
        }
        if cands.is_empty() {
            cands.push((text.len(), 0));
        }
        cands
    }

    /// Candidate ends inside the line `[a, le)` that does not fit `remaining` tokens.
    fn line_pieces(&self, a: usize, le: usize, remaining: usize, cands: &mut Vec<(usize, usize)>) {
        let line = &self.text[a..le];
        let sample_end = floor_boundary(line, (remaining * 4 + 16).min(line.len()));
        let sample = &line[..sample_end.max(next_boundary(line, 0))];
        let sample_tokens = self.enc.count(sample).max(1);
        let target = (remaining * sample.len() / sample_tokens).max(1);
        let mut last = 0;
        for k in 1..=40usize {
            let mut b = floor_boundary(line, (target * k / 32).min(line.len()));
            if b <= last {
                b = next_boundary(line, last);
            }
            // Never leave a lone `\n` (or split a CRLF's `\r` from its `\n`) for the next page.
            if line[b..].starts_with('\n') || line[b..].starts_with("\r\n") {
                b = line.len();
            }
            if b >= line.len() {
                cands.push((le, remaining * k / 32));
                break;
            }
            last = b;
            cands.push((a + b, remaining * k / 32));
        }
    }

    fn build(
        &self,
        prefix: &Prefix<'_>,
        at: TextPos,
        end: usize,
        total: u64,
        meta: &mut dyn FnMut(&PageInfo<'_>) -> String,
    ) -> Built {
        let body = &self.text[at.byte..end];
        let shown = self.shown(at, end, total);
        let next_start_line = (end < self.text.len()).then(|| advance(at, body).line);
        let m = meta(&PageInfo {
            shown: &shown,
            has_next: next_start_line.is_some(),
            next_start_line,
        });
        let meta_tokens = self.enc.count(&m);
        // One exact count (see `json::JsonPaging::build`: stopping at the room left would
        // only count a page over it twice), from the segments `prefix` already counted.
        let tokens = prefix.tokens(end) + meta_tokens;
        Built {
            end,
            meta: m,
            tokens,
            meta_tokens,
            shown,
        }
    }

    /// `lines A-B of N`, with character offsets when the page starts or ends inside a line.
    fn shown(&self, at: TextPos, end: usize, total: u64) -> String {
        let body = &self.text[at.byte..end];
        let last = body.strip_suffix('\n').unwrap_or(body);
        let b_line = at.line + last.bytes().filter(|&c| c == b'\n').count() as u64;
        let lines = if b_line == at.line {
            format!("line {} of {total}", at.line)
        } else {
            format!("lines {}-{b_line} of {total}", at.line)
        };
        let cut_end = end < self.text.len() && !body.ends_with('\n');
        let end_col = advance(at, body).col;
        match (at.col > 0, cut_end) {
            (false, false) => lines,
            (true, false) => format!("{lines} (from char {} of line {})", at.col, at.line),
            (false, true) if b_line == at.line => format!("{lines} (chars 0-{end_col})"),
            (false, true) => format!("{lines} (to char {end_col} of line {b_line})"),
            (true, true) if b_line == at.line => format!("{lines} (chars {}-{end_col})", at.col),
            (true, true) => format!(
                "{lines} (from char {} of line {}, to char {end_col} of line {b_line})",
                at.col, at.line
            ),
        }
    }
}

/// The position of byte `byte` of `text` (line and column as a page ending there would carry
/// them), or `None` when `byte` is past the end or not at a character boundary.
pub(crate) fn position_at(text: &str, byte: usize) -> Option<TextPos> {
    let start = TextPos {
        byte: 0,
        line: 1,
        col: 0,
    };
    text.get(..byte).map(|head| advance(start, head))
}

/// The position after `body`, which starts at `at`.
fn advance(at: TextPos, body: &str) -> TextPos {
    let newlines = body.bytes().filter(|&c| c == b'\n').count() as u64;
    let col = match body.rfind('\n') {
        Some(i) => body[i + 1..].chars().count(),
        None => at.col + body.chars().count(),
    };
    TextPos {
        byte: at.byte + body.len(),
        line: at.line + newlines,
        col,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_like_an_editor() {
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count("a\r\nb"), 2);
        assert_eq!(line_count("a\u{2028}b\u{c}c"), 1);
    }

    #[test]
    fn advance_tracks_line_and_column() {
        let at = TextPos {
            byte: 0,
            line: 1,
            col: 0,
        };
        let p = advance(at, "ab\ncdé");
        assert_eq!((p.byte, p.line, p.col), (7, 2, 3));
        let q = advance(p, "xy");
        assert_eq!((q.line, q.col), (2, 5));
    }
}
