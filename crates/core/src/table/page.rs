//! Budgeted pages whose bodies are in the table form.

use serde_json::Value;

use super::model::{AUTO_MIN_SAVING_PERCENT, Encoded, When};
use super::write::encode;
use crate::paginate::{Document, Page, PageError, PageInfo, Pager, Position};
use crate::tokens::Encoding;

/// How many JSON pages are tried for one table page.
const TRIES: usize = 6;

/// Cuts documents into pages that fit a token budget, each JSON page's body in the table form
/// (tables where they save [`AUTO_MIN_SAVING_PERCENT`] % of a value's tokens, as
/// `tables = "auto"`).
///
/// A page is the page the JSON [`Pager`] cuts from the same position under a larger budget,
/// chosen so that its table text plus its meta item fit this budget: so pages are JSON
/// windows of the document exactly as in [`crate::paginate`] (same positions, `shown`,
/// locations, [`Page::value`]), only written in fewer tokens. A client merges them by that
/// module's rule after [`super::decode`]-ing each body; [`crate::paginate::reassemble`]
/// works on them as is. Text documents are paged as by [`Pager`].
///
/// [`Page::tokens`] counts the body as it goes out (table text) plus the meta item, at most
/// the budget (unless [`Page::oversized`]).
#[derive(Debug, Clone)]
pub struct TablePager {
    encoding: Encoding,
    budget: usize,
    precision: u32,
}

impl TablePager {
    /// A pager for `budget` tokens (clamped up to [`crate::MIN_BUDGET_TOKENS`]) in `encoding`,
    /// rounding floats to `precision` significant digits (`0` = exact).
    pub fn new(encoding: Encoding, budget: usize, precision: u32) -> TablePager {
        TablePager {
            encoding,
            budget: budget.max(crate::MIN_BUDGET_TOKENS),
            precision,
        }
    }

    /// The table form of a whole JSON document (floats rounded) and its value; `None` for a
    /// text, and when no array of it becomes a table (its compact render is then the form).
    pub fn render(&self, doc: &Document) -> Option<(Value, String)> {
        let Document::Json(_) = doc else { return None };
        let v = crate::dialect::parse_unbounded(doc.render(self.precision).as_bytes())
            .ok()?
            .value;
        let e = self.encode(&v);
        (e.tables > 0).then_some((v, e.text))
    }

    fn encode(&self, v: &Value) -> Encoded {
        encode(
            v,
            When::Saves {
                encoding: &self.encoding,
                percent: AUTO_MIN_SAVING_PERCENT,
            },
        )
    }

    /// The page of `doc` that starts at `at`, as [`Pager::page`] (page 1 of a document whose
    /// table form fits the budget is the whole document with `meta: None`).
    ///
    /// # Errors
    /// [`PageError::OutOfRange`] when `at` is not a position of `doc`.
    pub fn page(
        &self,
        doc: &Document,
        at: &Position,
        meta: &mut dyn FnMut(&PageInfo<'_>) -> String,
    ) -> Result<Page, PageError> {
        let plain = Pager::new(self.encoding.clone(), self.budget, self.precision);
        if !matches!(doc, Document::Json(_)) {
            return plain.page(doc, at, meta);
        }
        // Page 1 whole when its table form fits. Skipped for documents far too big to
        // (compact bytes over 12 × the budget: only a cost bound, pages stay lossless).
        let bytes = match doc {
            Document::Json(v) => crate::compact::byte_len(v, self.precision),
            Document::Text(_) => 0,
        };
        let whole = (at.is_start() && bytes <= (self.budget as u64).saturating_mul(12))
            .then(|| self.render(doc));
        if let Some(None) = whole {
            // No table in the whole document: it is paged as plain JSON.
            return plain.page(doc, at, meta);
        }
        if let Some(Some((v, text))) = whole
            && let Some(tokens) = self.encoding.count_till_limit(&text, self.budget)
        {
            return Ok(Page {
                body: text,
                value: Some(v),
                meta: None,
                tokens,
                shown: "$".into(),
                location: "$".into(),
                start: Position::start(),
                next: None,
                root: Vec::new(),
                oversized: false,
            });
        }
        // `lo`: the largest JSON budget known to fit (with its page); `hi`: the smallest known
        // not to.
        let mut best: Option<Page> = None;
        let mut lo = 0usize;
        let mut hi = usize::MAX;
        let mut b = self.budget;
        for _ in 0..TRIES {
            let pager = Pager::new(self.encoding.clone(), b, self.precision);
            let mut p = pager.page(doc, at, meta)?;
            if p.oversized {
                return Ok(p);
            }
            let meta_t = p.meta.as_deref().map_or(0, |m| self.encoding.count(m));
            let json_t = p.tokens.saturating_sub(meta_t).max(1);
            let Some(v) = p.value.as_ref().filter(|_| p.meta.is_some()) else {
                // The whole document fit the JSON budget `b` but not this budget as tables.
                hi = b;
                b = (lo + b) / 2;
                if b <= lo || b < crate::MIN_BUDGET_TOKENS {
                    break;
                }
                continue;
            };
            let text = self.encode(v).text;
            let room = self.budget.saturating_sub(meta_t);
            let (fits, body_t) = match self.encoding.count_till_limit(&text, room) {
                Some(t) => (true, t),
                None => (false, self.encoding.count(&text)),
            };
            // The JSON budget at which the table body would just fill the room.
            let target = meta_t + room.saturating_mul(json_t) / body_t.max(1);
            if fits {
                let last = p.next.is_none();
                if body_t <= json_t {
                    p.body = text;
                    p.tokens = body_t + meta_t;
                }
                if p.tokens <= self.budget {
                    lo = b;
                    best = Some(p);
                } else {
                    hi = b;
                }
                if last {
                    break;
                }
                let next = target.saturating_mul(99) / 100;
                if next <= b.saturating_mul(102) / 100 || next >= hi {
                    break;
                }
                b = next;
            } else {
                hi = b;
                let next = target.saturating_mul(97) / 100;
                b = if next > lo && next < b {
                    next
                } else {
                    (lo + b) / 2
                };
                if b <= lo || b < crate::MIN_BUDGET_TOKENS {
                    break;
                }
            }
        }
        match best {
            Some(p) => Ok(p),
            // No table page fit (BPE surprises): the plain JSON page, which does.
            None => plain.page(doc, at, meta),
        }
    }
}
