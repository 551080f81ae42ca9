//! [`PageBook`]: where the pages of one cached response start, as they are computed; and
//! [`Mark`], where a copy of it lives in the shared store.

use std::collections::HashMap;

use mcp_budget_core::paginate::Position;

use mcp_budget_core::shape::model::SeqPos;

/// Positions of the pages of one response.
#[derive(Debug, Default)]
pub(crate) struct PageBook {
    /// `positions[k]` is where page number `k` starts; `positions[0]` is the start.
    pub(crate) positions: Vec<SeqPos>,
    /// (page number, budget) → page number of the next page.
    pub(crate) next_of: HashMap<(usize, usize), usize>,
    /// `ordinals[k]`: how many pages come before page number `k` on the way that reached it
    /// (0 for the start). Page numbers name cursors and are not always consecutive (a page
    /// computed at two budgets has two next pages); the ordinal is what
    /// `_meta["mcp-budget/page"].page` says.
    pub(crate) ordinals: Vec<usize>,
}

impl PageBook {
    /// The book of a response no page of which is computed yet: page 1 at the start.
    pub(crate) fn start() -> PageBook {
        PageBook {
            positions: vec![(0, Position::start())],
            next_of: HashMap::new(),
            ordinals: vec![0],
        }
    }
}

/// Where a copy of an entry read from (or written to) Redis lives there, and its book as read.
#[derive(Debug, Clone)]
pub(crate) struct Mark {
    /// The hash's key.
    pub(crate) key: String,
    /// `ver` as read.
    pub(crate) ver: u64,
    /// The book as read (`remote::codec::encode_book`).
    pub(crate) book: String,
}
