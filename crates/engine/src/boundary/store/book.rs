//! [`Mark`]: where a copy of a cached response lives in the shared store, and its page book
//! ([`mcp_budget_core::shape::book::PageBook`]) as read there.

/// Where a copy of an entry read from (or written to) Redis lives there, and its book as read.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) struct Mark {
    /// The hash's key.
    pub(crate) key: String,
    /// `ver` as read.
    pub(crate) ver: u64,
    /// The book as read (`remote::codec::encode_book`).
    pub(crate) book: String,
}
