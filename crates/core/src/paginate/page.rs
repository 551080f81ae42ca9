//! The paging model every pager shares: the [`Document`] paged, the [`Position`] a page
//! starts at (and its wire form), the [`Page`] cut and what a meta renderer is told about it
//! ([`PageInfo`]), and [`PageError`]. A leaf of `paginate`: it imports only `path` (which
//! steps end inside a key) and core's `dialect` and `compact`.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::path::{self, PathStep};

/// What gets paged: a JSON value, or a text that is not JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Document {
    /// A JSON value, rendered compact with floats rounded.
    Json(Value),
    /// Plain text, cut only at `\n` (or inside one over-long line at a UTF-8 character boundary).
    Text(String),
}

impl Document {
    /// A [`Document::Json`] when `text` is a JSON object or array by
    /// [`crate::dialect::json_document`], else a [`Document::Text`] holding `text` unchanged.
    ///
    /// The JSON read is that of Python servers too: a lone surrogate escape such as `"\ud800"`
    /// becomes U+FFFD, and `NaN`, `Infinity`, `-Infinity` are kept as those literals (pages
    /// write them back as they came). Not lossless for every JSON text: an object with a
    /// duplicate key keeps only the last value, at the first key's place (`{"a":1,"a":2}`
    /// becomes `{"a":2}`, as `serde_json` parses it); text nested deeper than 128 levels is
    /// paged as text, byte for byte.
    pub fn from_text(text: String) -> Document {
        match crate::dialect::json_document(&text) {
            Some(v) => Document::Json(v),
            None => Document::Text(text),
        }
    }

    /// The whole document as it would be shown if it fit: compact JSON with floats rounded to
    /// `precision` significant digits, or the text unchanged.
    pub fn render(&self, precision: u32) -> String {
        match self {
            Document::Json(v) => crate::compact::to_string(v, precision),
            Document::Text(t) => t.clone(),
        }
    }
}

/// Where a page starts. Opaque; [`Position::start`] is page 1.
///
/// Its [`Display`](fmt::Display) form (parsed back by [`FromStr`]) uses only lowercase hex
/// digits and dots: `0` (start), `1.<step>.<step>…` (a JSON path of element indices, member
/// indices and, last, a byte offset inside a string), `2.<byte>.<line>.<column>` (text).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Position(pub(crate) Pos);

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) enum Pos {
    #[default]
    Start,
    Json(Vec<usize>),
    Text(TextPos),
}

/// A position in a text: byte offset (at a character boundary), its 1-based line, and its
/// 0-based character column in that line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TextPos {
    pub(crate) byte: usize,
    pub(crate) line: u64,
    pub(crate) col: usize,
}

impl Position {
    /// The start of the document (page 1).
    pub fn start() -> Position {
        Position::default()
    }

    /// Whether this is the start of the document.
    pub fn is_start(&self) -> bool {
        match &self.0 {
            Pos::Start => true,
            Pos::Json(steps) => steps.is_empty(),
            Pos::Text(t) => t.byte == 0,
        }
    }

    /// Whether this position comes, in document order, no later than the start of the unit
    /// at `path` (element and member indices from the root): the start, a position on the way
    /// down to it (the start of an ancestor), a position in an earlier unit, or its own start.
    /// A position inside that unit (a deeper step, a string or key offset) counts as after
    /// it; a text position is never before. Used with [`crate::head::Head::last`]: a page of
    /// a head that ends here holds only units the head and the document share.
    pub fn at_or_before(&self, path: &[usize]) -> bool {
        match &self.0 {
            Pos::Start => true,
            // Slices order lexicographically, a prefix first. Offsets (and `KEY_BIT`) only
            // ever come last, after the step of their string or member.
            Pos::Json(steps) => steps.as_slice() <= path,
            Pos::Text(_) => false,
        }
    }

    /// Whether this position is inside an object key (a page ended in a long key).
    pub fn in_key(&self) -> bool {
        matches!(&self.0, Pos::Json(steps) if path::ends_in_key(steps))
    }

    pub(crate) fn json(steps: Vec<usize>) -> Position {
        Position(Pos::Json(steps))
    }

    pub(crate) fn text(at: TextPos) -> Position {
        Position(Pos::Text(at))
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Pos::Start => f.write_str("0"),
            Pos::Json(steps) => {
                f.write_str("1")?;
                steps.iter().try_for_each(|s| write!(f, ".{s:x}"))
            }
            Pos::Text(t) => write!(f, "2.{:x}.{:x}.{:x}", t.byte, t.line, t.col),
        }
    }
}

/// A string that is not the [`Display`](fmt::Display) form of a [`Position`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed position")]
pub struct PositionParseError;

impl FromStr for Position {
    type Err = PositionParseError;

    /// # Errors
    /// [`PositionParseError`] when `s` is not of the form written by `Display`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split('.');
        let hex = |p: &str| -> Result<usize, PositionParseError> {
            if p.is_empty()
                || p.len() > 16
                || !p
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                return Err(PositionParseError);
            }
            usize::from_str_radix(p, 16).map_err(|_| PositionParseError)
        };
        match parts.next() {
            Some("0") if parts.next().is_none() => Ok(Position::start()),
            Some("1") => parts.map(hex).collect::<Result<_, _>>().map(Position::json),
            Some("2") => {
                let v: Vec<usize> = parts.map(hex).collect::<Result<_, _>>()?;
                match v[..] {
                    [byte, line, col] if line >= 1 => Ok(Position::text(TextPos {
                        byte,
                        line: line as u64,
                        col,
                    })),
                    _ => Err(PositionParseError),
                }
            }
            _ => Err(PositionParseError),
        }
    }
}

/// What a meta renderer is told about the page it describes.
#[derive(Debug, Clone)]
pub struct PageInfo<'a> {
    /// Where the page is: `$[0].children[40:80]` for JSON, `lines 121-240 of 5000` for text
    /// (grammar in the module docs).
    pub shown: &'a str,
    /// Whether another page follows.
    pub has_next: bool,
    /// For text: the 1-based line the next page starts at (`None` on the last page and for
    /// JSON).
    pub next_start_line: Option<u64>,
}

/// One page.
#[derive(Debug, Clone)]
pub struct Page {
    /// The page as the first content item carries it: compact JSON, or a slice of the text.
    pub body: String,
    /// For JSON documents, the value of `body` (floats already rounded), parsed back from
    /// `body` (so `None` only if a page nests deeper than serde_json's recursion limit of 128,
    /// which documents parsed by serde_json never do).
    pub value: Option<Value>,
    /// The meta item's text, from the caller's renderer; `None` only when the whole document
    /// fit on page 1.
    pub meta: Option<String>,
    /// Tokens of `body` plus tokens of `meta`: never more than the budget, unless
    /// [`Page::oversized`].
    pub tokens: usize,
    /// Where this page is (the `shown` passed to the renderer; may be abbreviated).
    pub shown: String,
    /// Where this page is, in full: the same grammar as `shown`, never abbreviated (every key
    /// and step written out). For text pages, equal to `shown`. This is what a client merges
    /// by (the proxy sends it in `result._meta["mcp-budget/page"].location`).
    pub location: String,
    /// Where this page started.
    pub start: Position,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Position>,
    /// For JSON: the path of the page body in the document (empty: the body is rooted at `$`).
    pub root: Vec<PathStep>,
    /// The page holds a single unit that cannot be split (a number or object key) and does not
    /// fit the budget with its meta: `tokens` is over the budget. Never set otherwise.
    pub oversized: bool,
}

/// Errors of [`super::Pager::page`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PageError {
    /// The position does not belong to this document (another document, past the end, or not
    /// a position a page of this document ends at).
    #[error("position is outside the document")]
    OutOfRange,
}
