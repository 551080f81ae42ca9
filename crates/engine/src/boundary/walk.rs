//! The pages of a cached response, read from the store: [`page`] loads the entry's documents
//! (a reload when the store spilled them), locks its page book and lets core's pure walk
//! ([`mcp_budget_core::shape::walk`], which holds the rules) cut the page. The store entry is
//! what the walk reads of a response ([`Cached`]).

use mcp_budget_core::shape::model::{SeqPage, ToolNames, Total};
use mcp_budget_core::shape::walk::{self, Cached};
use mcp_budget_core::tokens::Encoding;

use super::store::Entry;

impl Cached for Entry {
    fn id(&self) -> &str {
        &self.id
    }

    fn doc_tokens(&self) -> &[usize] {
        &self.doc_tokens
    }

    fn precision(&self) -> u32 {
        self.precision
    }

    fn tables(&self) -> bool {
        self.tables
    }

    fn array_of(&self) -> Option<usize> {
        self.array_of
    }

    fn total_for_page(&self, ordinal: usize, encoding: &Encoding) -> Total {
        Entry::total_for_page(self, ordinal, encoding)
    }
}

/// Page number `k` of `entry` with `budget` tokens: page 1 as it went out when the entry was
/// made from its source text at this budget, else cut by [`walk::page`].
///
/// Returns `None` when the response has no page `k` (never computed), its documents cannot
/// be loaded back, or its book's lock is poisoned.
pub(crate) fn page(
    entry: &Entry,
    k: usize,
    budget: usize,
    encoding: &Encoding,
    names: &ToolNames,
) -> Option<SeqPage> {
    if k == 0
        && let Some((at, first)) = &entry.first_page
        && *at == budget
    {
        return Some(first.clone());
    }
    let docs = entry.docs()?;
    let mut book = entry.book.lock().ok()?;
    walk::page(entry, &docs, &mut book, k, budget, encoding, names)
}
