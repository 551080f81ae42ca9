//! Budgeted, lossless pages of any JSON value or text.
//!
//! PLACEHOLDER: the real algorithm is being written (issue 2 §3). The public API below is the
//! contract the proxy and the CLI build on; the placeholder only handles "fits on one page" and
//! naive line paging of text.

use serde_json::Value;

use crate::tokens::Encoding;

/// What gets paged: a JSON value, or a text that is not JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Document {
    /// A JSON value, rendered compact with floats rounded.
    Json(Value),
    /// Plain text, cut only at `\n` (or inside one over-long line at a UTF-8 character boundary).
    Text(String),
}

impl Document {
    /// A [`Document::Json`] when `text` parses as a JSON object or array, else a
    /// [`Document::Text`] holding `text` unchanged.
    pub fn from_text(text: String) -> Document {
        let trimmed = text.trim_start();
        if trimmed.starts_with('{') || trimmed.starts_with('[') {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                return Document::Json(v);
            }
        }
        Document::Text(text)
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
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Position {
    offset: usize,
}

impl Position {
    /// The start of the document (page 1).
    pub fn start() -> Position {
        Position::default()
    }

    /// Whether this is the start of the document.
    pub fn is_start(&self) -> bool {
        self.offset == 0
    }
}

/// What a meta renderer is told about the page it describes.
#[derive(Debug, Clone)]
pub struct PageInfo<'a> {
    /// Where the page is: `$[0].children[40:80]` for JSON, `lines 121-240 of 5000` for text.
    pub shown: &'a str,
    /// Whether another page follows.
    pub has_next: bool,
    /// For text: the 1-based line the next page starts at.
    pub next_start_line: Option<u64>,
}

/// One page.
#[derive(Debug, Clone)]
pub struct Page {
    /// The page as the first content item carries it: compact JSON, or a slice of the text.
    pub body: String,
    /// For JSON documents, the value of `body`.
    pub value: Option<Value>,
    /// The meta item's text, from the caller's renderer; `None` only when the whole document
    /// fit on page 1.
    pub meta: Option<String>,
    /// Tokens of `body` plus tokens of `meta`: never more than the budget.
    pub tokens: usize,
    /// Where this page is (the `shown` passed to the renderer).
    pub shown: String,
    /// Where this page started.
    pub start: Position,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Position>,
}

/// Errors of [`Pager::page`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PageError {
    /// The position does not belong to this document.
    #[error("position is outside the document")]
    OutOfRange,
}

/// Cuts documents into pages that fit a token budget.
#[derive(Debug, Clone)]
pub struct Pager {
    encoding: Encoding,
    budget: usize,
    precision: u32,
}

impl Pager {
    /// A pager for `budget` tokens (clamped up to [`crate::MIN_BUDGET_TOKENS`]) in `encoding`,
    /// rounding floats to `precision` significant digits (`0` = exact).
    pub fn new(encoding: Encoding, budget: usize, precision: u32) -> Pager {
        Pager {
            encoding,
            budget: budget.max(crate::MIN_BUDGET_TOKENS),
            precision,
        }
    }

    /// The budget in tokens, after clamping.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// The encoding tokens are counted in.
    pub fn encoding(&self) -> &Encoding {
        &self.encoding
    }

    /// The page of `doc` that starts at `at`. `meta` renders the meta item's text for a page;
    /// its tokens count against the budget.
    ///
    /// # Errors
    /// [`PageError::OutOfRange`] when `at` is not a position of `doc`.
    pub fn page(
        &self,
        doc: &Document,
        at: &Position,
        meta: &mut dyn FnMut(&PageInfo<'_>) -> String,
    ) -> Result<Page, PageError> {
        let whole = doc.render(self.precision);
        if at.offset > whole.len() {
            return Err(PageError::OutOfRange);
        }
        if at.is_start() {
            if let Some(tokens) = self.encoding.count_till_limit(&whole, self.budget) {
                let value = match doc {
                    Document::Json(v) => Some(v.clone()),
                    Document::Text(_) => None,
                };
                return Ok(Page {
                    body: whole,
                    value,
                    meta: None,
                    tokens,
                    shown: "$".into(),
                    start: at.clone(),
                    next: None,
                });
            }
        }
        // Placeholder: everything that is left, in one page.
        let body = whole[at.offset..].to_string();
        let shown = "$".to_string();
        let m = meta(&PageInfo {
            shown: &shown,
            has_next: false,
            next_start_line: None,
        });
        let tokens = self.encoding.count(&body) + self.encoding.count(&m);
        Ok(Page {
            value: serde_json::from_str(&body).ok(),
            body,
            meta: Some(m),
            tokens,
            shown,
            start: at.clone(),
            next: None,
        })
    }
}

/// Puts pages back together: the inverse of paging (byte-exact for text, value-equal for JSON).
pub fn reassemble(pages: &[Page]) -> Option<Document> {
    let first = pages.first()?;
    match &first.value {
        Some(v) if pages.len() == 1 => Some(Document::Json(v.clone())),
        _ => Some(Document::Text(
            pages.iter().map(|p| p.body.as_str()).collect(),
        )),
    }
}
