//! [`PageBook`]: where the pages of one cached response start, as they are computed (by
//! [`super::walk::page`]). Plain data: the caller keeps it with the response (the proxy
//! behind a lock in its store entry, and a copy in the shared store).

use std::collections::HashMap;

use crate::paginate::Position;

use super::model::SeqPos;

/// Positions of the pages of one response.
#[derive(Debug, Default)]
pub struct PageBook {
    /// `positions[k]` is where page number `k` starts; `positions[0]` is the start.
    pub positions: Vec<SeqPos>,
    /// (page number, budget) → page number of the next page.
    pub next_of: HashMap<(usize, usize), usize>,
    /// `ordinals[k]`: how many pages come before page number `k` on the way that reached it
    /// (0 for the start). Page numbers name cursors and are not always consecutive (a page
    /// computed at two budgets has two next pages); the ordinal is what
    /// `_meta["mcp-budget/page"].page` says.
    pub ordinals: Vec<usize>,
}

impl PageBook {
    /// The book of a response no page of which is computed yet: page 1 at the start.
    pub fn start() -> PageBook {
        PageBook {
            positions: vec![(0, Position::start())],
            next_of: HashMap::new(),
            ordinals: vec![0],
        }
    }
}
