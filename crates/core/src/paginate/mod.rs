//! Budgeted, lossless pages of any JSON value or text.
//!
//! [`Pager::page`] cuts page N+1 of a [`Document`] from the [`Position`] where page N ended. A
//! caller-supplied renderer writes the meta item of each page (see [`meta::build_meta`]); the
//! page's body tokens plus the meta's tokens never exceed the budget, counted exactly on the
//! texts emitted (BPE counts are not additive, so nothing is summed from parts).
//!
//! # Pages of a JSON value
//!
//! A page is a valid JSON value: a window of the document in document order, wrapped in the
//! skeleton of its ancestors.
//! - **Units** are scalars, empty containers, and pieces of long strings, long object keys and
//!   long numbers (compact text over 64 bytes). String and key pieces are cut at character
//!   boundaries of the decoded text, then re-serialized, so never inside an escape. Arrays are
//!   cut between elements; any array, object, long string, long key or long number can be the
//!   cut point.
//! - **A cut key** shows on each page as a member whose key is the piece: `{"<piece>":null}`
//!   while the key goes on past the page (`null` stands for the value not shown yet), then
//!   `{"<last piece>":<value or its start>}`. A page that starts inside a key shows no skeleton
//!   members at that key's object: its first member there is the key's continuation. A cut is
//!   never placed where a piece would equal another key of the same object or the piece of
//!   one shown beside it, nor where the key's pieces so far joined (what a client merging the
//!   pages holds) would equal another key of the same object.
//! - **A cut number** shows each piece of its compact spelling as a JSON string (`"12345…"`);
//!   the merge rule turns it back into the number.
//! - **Skeleton**: each ancestor object of the page's start keeps the *short scalar* members
//!   (null, booleans, numbers, strings of compact text at most 64 bytes) that come before the
//!   cut, in the original key order (`name`, `type`, `id` …), so the reader knows where it is.
//!   They repeat what an earlier page showed.
//! - **Root**: normally the page body is rooted at the document root (`$`). When the skeleton
//!   alone would take more than a quarter of the page (very deep paths), the body is the
//!   sub-tree at a deeper path R instead, and `shown` says so (` (body is R)`).
//! - **Progress**: every page holds at least one unit not shown before (a page that cannot fit
//!   even one character of a unit beside its meta — only with a meta item bigger than the
//!   budget — is flagged [`Page::oversized`]; it is the only case where a page exceeds the
//!   budget).
//! - **Dense**: pages are filled greedily close to the budget; only about a page of the
//!   document is serialized and tokenized per page (never the whole payload).
//!
//! ## `shown` (where a JSON page is)
//!
//! Locations are JSONPath-like: `$`, then `.key` for identifier keys (`[A-Za-z_][A-Za-z0-9_]*`),
//! `['key']` otherwise (RFC 9535 escapes: `\'`, `\\`, `\n`, `\uXXXX` …), `[i]` for array
//! indices, `[chars c]` for a character offset inside a string, `[key chars c]` for a
//! character offset inside the key of the member named by the step before it
//! (`$.a['k…'][key chars 3000]`), and `[digits c]` for a character offset inside the compact
//! spelling of a number. `shown` is one of:
//! - `$`: the whole document (only a page 1 that fits whole; it has no meta).
//! - `P[a:b]`: elements `a` to `b` (exclusive) of the array at `P`; on page 1 `a` is `0` and
//!   the page also holds the skeleton above `P` (`$[0].children[0:40]`).
//! - `P[chars a:b]`: characters `a` to `b` (exclusive) of the string at `P`; likewise
//!   `P[key chars a:b]` (of the key of the member at `P`) and `P[digits a:b]` (of the number
//!   at `P`).
//! - `FROM to TO`: from the unit at `FROM` to just before `TO`; `TO` is `end` on the last page.
//!   `FROM` is `$` on page 1.
//! - any of these followed by ` (body is R)` when the page body is the sub-tree at `R`.
//!
//! A location longer than `max(48, budget / 8)` characters (1,250 at the default budget of
//! 10,000 tokens) is abbreviated with `…` (long keys cut, middle steps dropped), and when a
//! page would not fit otherwise (tiny budgets, very deep paths) locations shrink to about 12
//! characters. An abbreviated `shown` is for humans only: a client cannot merge by it. Every
//! page also has its full location, [`Page::location`] (same grammar, never abbreviated),
//! which the proxy sends in `result._meta["mcp-budget/page"]`; clients merge by that.
//!
//! ## Merge rule (reassembling JSON pages)
//!
//! Parse each page's full location ([`Page::location`]; `shown` when not abbreviated) left to
//! right:
//! - **S**, the start path: `$` then steps — `.name`, `['k']` (unescape `\'`, `\\`, `\n`,
//!   `\r`, `\t`, `\b`, `\f`, `\uXXXX`), `[i]`, `[a:b]` (step `[a]`), `[chars c]` or
//!   `[chars a:b]` (a string offset), `[key chars c]` or `[key chars a:b]` (a key offset),
//!   `[digits c]` or `[digits a:b]` (a number offset) — up to the first character that starts
//!   no step;
//! - then, optionally, ` to ` and a second location or `end` (not needed to merge);
//! - then, optionally, ` (body is R)`: **R**, the page root (empty, i.e. `$`, without it).
//!
//! A `shown` that does not parse this way (an abbreviated one, with `…`) cannot be merged.
//!
//! A page's body V is the JSON value of its text; when the body is in the table form
//! ([`crate::table`]: pages of [`crate::table::TablePager`], and the proxy's pages whose
//! `_meta["mcp-budget/page"]` says `"tables": true`), V is [`crate::table::decode`] of the
//! text (the locations are those of the JSON windows, unchanged).
//!
//! Page 1 (whatever its S; a page 1 that fits whole has no meta and R = `$`) starts the
//! accumulated value A: its body V wrapped in R, innermost step first — `[V]` for an index step (always
//! `[0]`), `{"k":V}` for a key step (page 1 is rooted below `$` only when even one unit with
//! its skeleton does not fit, e.g. under a 10 KB key). For each following page, with V its body
//! and D = len(S) − len(R):
//! 1. If D = 0 (the body is one new node): walk A, the value accumulated so far, down along
//!    every step of R but the last, each time into the **last** element (or last member) of
//!    the current node; there append V to the array, or insert V under the key of R's last
//!    step. Done.
//! 2. Otherwise walk A down along every step of R the same way (into last elements/members) to
//!    a node N, and merge V into N with depth D:
//!    - arrays: if D > 1, merge V's first element into N's last element with depth D − 1;
//!      then append V's other elements (all of V's elements when D = 1);
//!    - objects, when D = 2 and S ends with `[key chars c]` (the page continues a key): V's
//!      first member `(k, v)` continues N's last member: that member's key becomes its key
//!      followed by `k`, and its value becomes `v` (it was the `null` placeholder); then each
//!      other member of V is inserted;
//!    - other objects: for each member k of V in order: if D > 1 and k is N's last key, merge
//!      `V[k]` into `N[k]` with depth D − 1; else if N has no key k, insert it (a key N already
//!      has is a skeleton repeat whose value equals N's: skip it);
//!    - strings (D = 1): append V to N (S ends with `[chars c]`, or `[digits c]` for a number
//!      whose pieces are strings).
//! 3. When every page is merged: for each page whose S ends with `[digits c]`, the value at S
//!    without that step (keys and indices from the root) is a string spelling a number:
//!    replace it by that number.
//!
//! Following the pages to the end gives back the document value-equal to its compact render
//! (floats rounded). [`reassemble`] applies this rule from each page's [`Page::location`];
//! [`reassemble_from_wire`] applies it from location strings, as a client would.
//!
//! # Pages of a text
//!
//! Contiguous slices of the text, cut just after a `\n` (a CRLF stays with its line; U+2028,
//! U+2029 and form feed are not line breaks), or, inside a single line that does not fit a
//! page by itself, at a UTF-8 character boundary. `shown` is `lines A-B of N` (or
//! `line A of N`), followed by ` (chars x-y)`, ` (from char x of line A)`, or
//! ` (to char y of line B)` when a page starts or ends inside a line (0-based character offsets,
//! end exclusive); [`PageInfo::next_start_line`] is the 1-based line the next page starts in.
//! Reassembly is concatenation, byte-exact.

use serde_json::Value;

use crate::tokens::Encoding;

mod json;
pub mod meta;
mod page;
mod path;
mod prefix;
mod reassemble;
mod search;
mod text;
mod window;

pub use page::{Document, Page, PageError, PageInfo, Position, PositionParseError};
pub(crate) use page::{Pos, TextPos};
pub use path::{PathStep, ShownStep, parse_shown};
pub use prefix::count_till_limit_noted;
pub use reassemble::{
    LocationPart, reassemble, reassemble_documents_from_wire, reassemble_from_wire, split_location,
};

/// Cuts documents into pages that fit a token budget.
///
/// ```
/// use mcp_budget_core::paginate::meta::{build_meta, HintTools};
/// use mcp_budget_core::paginate::{reassemble, Document, Pager, Position};
/// use mcp_budget_core::tokens::Encoding;
///
/// let rows: Vec<_> = (0..500).map(|i| serde_json::json!({"id": i, "x": 0.1 * i as f64})).collect();
/// let doc = Document::Json(serde_json::json!({"name": "t", "rows": rows}));
/// let pager = Pager::new(Encoding::Cl100kBase, 1000, 9);
/// let mut pages = Vec::new();
/// let mut at = Position::start();
/// loop {
///     let n = pages.len() as u64;
///     let page = pager.page(&doc, &at, &mut |info| {
///         let meta = build_meta(info, "3fa9c2e1b07d", n + 1, 9_999, HintTools::default());
///         serde_json::to_string(&meta).unwrap_or_default()
///     })?;
///     assert!(page.tokens <= 1000);
///     let next = page.next.clone();
///     pages.push(page);
///     match next {
///         Some(next) => at = next,
///         None => break,
///     }
/// }
/// assert_eq!(pages[0].shown, format!("$.rows[0:{}]", pages[0].value.as_ref().unwrap()["rows"].as_array().unwrap().len()));
/// let whole: serde_json::Value = serde_json::from_str(&doc.render(9)).unwrap();
/// assert_eq!(reassemble(&pages), Some(Document::Json(whole)));
/// # Ok::<(), mcp_budget_core::paginate::PageError>(())
/// ```
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
    /// its tokens count against the budget. It is called several times per page (the pager
    /// tries a few candidate pages); only the last text is kept.
    ///
    /// Page 1 ([`Position::start`]) of a document whose compact render fits the budget is the
    /// whole document with `meta: None`. Every other page has a meta.
    ///
    /// # Errors
    /// [`PageError::OutOfRange`] when `at` is not a position of `doc` (a position from another
    /// document, or the end).
    pub fn page(
        &self,
        doc: &Document,
        at: &Position,
        meta: &mut dyn FnMut(&PageInfo<'_>) -> String,
    ) -> Result<Page, PageError> {
        match (doc, &at.0) {
            (Document::Json(v), Pos::Start) => Ok(self.json(v).page(&[], meta)),
            (Document::Json(v), Pos::Json(steps)) => {
                if !path::is_valid(v, steps, self.precision) {
                    return Err(PageError::OutOfRange);
                }
                Ok(self.json(v).page(steps, meta))
            }
            (Document::Text(t), Pos::Start) => Ok(self.text(t).page(
                TextPos {
                    byte: 0,
                    line: 1,
                    col: 0,
                },
                meta,
            )),
            (Document::Text(t), Pos::Text(p)) => {
                // The line and column must be those of the byte offset: a forged cursor with
                // another line number would otherwise overflow the page's line arithmetic.
                let ok = (p.byte < t.len() || p.byte == 0)
                    && text::position_at(t, p.byte).as_ref() == Some(p);
                if !ok {
                    return Err(PageError::OutOfRange);
                }
                Ok(self.text(t).page(*p, meta))
            }
            _ => Err(PageError::OutOfRange),
        }
    }

    /// Every page of `doc`, from page 1 to the last, with `meta` as in [`Pager::page`].
    ///
    /// # Errors
    /// None in practice: positions come from the pager itself; kept for symmetry with `page`.
    pub fn pages(
        &self,
        doc: &Document,
        meta: &mut dyn FnMut(usize, &PageInfo<'_>) -> String,
    ) -> Result<Vec<Page>, PageError> {
        let mut out = Vec::new();
        let mut at = Position::start();
        loop {
            let index = out.len();
            let page = self.page(doc, &at, &mut |info| meta(index, info))?;
            let next = page.next.clone();
            out.push(page);
            match next {
                Some(n) => at = n,
                None => return Ok(out),
            }
        }
    }

    fn json<'a>(&'a self, v: &'a Value) -> json::JsonPaging<'a> {
        json::JsonPaging {
            doc: v,
            enc: &self.encoding,
            budget: self.budget,
            precision: self.precision,
            loc_max: (self.budget / 8).max(path::LOC_MIN_CHARS),
        }
    }

    fn text<'a>(&'a self, t: &'a str) -> text::TextPaging<'a> {
        text::TextPaging {
            text: t,
            enc: &self.encoding,
            budget: self.budget,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_through_text() {
        for p in [
            Position::start(),
            Position::json(vec![0, 26, 40]),
            Position::text(TextPos {
                byte: 300,
                line: 12,
                col: 4,
            }),
        ] {
            let s = p.to_string();
            assert!(s.bytes().all(|b| b == b'.' || b.is_ascii_hexdigit()), "{s}");
            assert_eq!(s.parse::<Position>().unwrap(), p);
        }
        assert_eq!(Position::json(vec![0, 26, 40]).to_string(), "1.0.1a.28");
        for bad in ["", "3", "1.x", "2.1.0.0", "2.1", "0.1", "1.G"] {
            assert!(bad.parse::<Position>().is_err(), "{bad}");
        }
    }

    #[test]
    fn foreign_positions_are_out_of_range() {
        let pager = Pager::new(Encoding::Cl100kBase, 300, 9);
        let doc = Document::Json(serde_json::json!([1, 2, 3]));
        let mut meta = |_: &PageInfo<'_>| String::new();
        assert!(
            pager
                .page(&doc, &Position::json(vec![7]), &mut meta)
                .is_err()
        );
        assert!(
            pager
                .page(
                    &doc,
                    &Position::text(TextPos {
                        byte: 1,
                        line: 1,
                        col: 1
                    }),
                    &mut meta
                )
                .is_err()
        );
        let text = Document::Text("héllo".into());
        assert!(
            pager
                .page(
                    &text,
                    &Position::text(TextPos {
                        byte: 2,
                        line: 1,
                        col: 2
                    }),
                    &mut meta
                )
                .is_err()
        );
        assert!(
            pager
                .page(
                    &text,
                    &Position::text(TextPos {
                        byte: 9,
                        line: 1,
                        col: 2
                    }),
                    &mut meta
                )
                .is_err()
        );
    }
}
