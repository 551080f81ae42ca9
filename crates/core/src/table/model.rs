//! The table form's limits and shared types: what [`super::write`] and [`super::read`] both
//! follow ([`INDENT`], [`MAX_DEPTH`], [`TABLE_DEPTH`]), when a table is written ([`When`]),
//! what encoding gives ([`Encoded`]) and why decoding fails ([`DecodeError`]). A leaf.

use crate::tokens::Encoding;

/// Spaces of indentation per sub-table level.
pub const INDENT: usize = 1;

/// Values nesting deeper than this many levels are written without tables (and [`super::decode`]
/// reads tables only this deep).
pub const MAX_DEPTH: usize = 512;

/// Tables start only in the first this many levels of nesting.
pub const TABLE_DEPTH: usize = 64;

/// The share of tokens a table must save, in percent, under the proxy's `tables = "auto"`.
pub const AUTO_MIN_SAVING_PERCENT: u32 = 10;

/// When an array of objects in JSON context becomes a table.
#[derive(Debug, Clone, Copy)]
pub enum When<'a> {
    /// Whenever it can (see the [module docs](super)).
    Always,
    /// Only when its table text has at most `100 − percent` % of the tokens of its compact
    /// JSON, counted in `encoding`.
    Saves {
        /// The encoding tokens are counted in.
        encoding: &'a Encoding,
        /// The least saving, in percent (10 for `tables = "auto"`).
        percent: u32,
    },
}

/// A value in the table form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The text (compact JSON when `tables` is 0).
    pub text: String,
    /// How many arrays are written as tables (sub-tables included).
    pub tables: usize,
}

/// Why a text could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The text does not follow the grammar at byte `at`, where `what` was expected.
    #[error("not in the table form at byte {at}: expected {what}")]
    Syntax {
        /// Byte offset in the text.
        at: usize,
        /// What was expected there.
        what: &'static str,
    },
    /// Tables nest deeper than [`MAX_DEPTH`].
    #[error("nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
}
