//! Tables: a lossless, token-lean text form of JSON in which arrays of objects are written as
//! a header and rows (TOON-like; the `tables` option of the proxy).
//!
//! [`encode`] writes a value in this form, [`decode`] gives the value back exactly (equal as
//! a [`Value`], key order and number spellings included), and [`TablePager`] cuts budgeted
//! pages whose bodies are in this form (each page a table of its own rows, merged back with
//! the rule of [`crate::paginate`] after decoding each body).
//!
//! # The form
//!
//! It is compact JSON (no whitespace, numbers as spelled, strings escaped as `serde_json`
//! does) in which an array of objects may be written as a **table** instead:
//!
//! ```text
//! [N]{k1,k2,…,kM}:⏎
//! row 1⏎
//! …
//! row N⏎
//! ```
//!
//! (⏎ = `\n`; the JSON around goes on right after the last row's newline.) Row `i` is the
//! `i`-th object of the array: its cells in header order, separated by `,`. The header keys
//! are each row's keys merged in order (a row's keys are always in header order, so every
//! object comes back with its own key order). A **cell** is:
//! - empty: the row has no such key; trailing empty cells are left out (the row ends early);
//! - `true`, `false`, `null`, a number as spelled (`1.50`, `-0`, `1e5`), or `NaN`,
//!   `Infinity`, `-Infinity` (Python's non-finite literals, kept as they came);
//! - a bare string: any text but an empty one, one with leading or trailing whitespace, one
//!   starting with a digit, `-`, `[`, `{` or `"`, `true` `false` `null` `NaN` `Infinity`,
//!   and one holding `,` `"` `\` or a control character (newline, tab …); those are written
//!   as JSON strings (`"7up"`, `"a,b"`, `""`);
//! - a JSON string, or a compact JSON array or object (on one line, no tables inside);
//! - a **sub-table** header `[n]{…}:` (an array of objects inside a row, such as a directory
//!   tree's `children`): its `n` rows follow the row's line, indented one space more than the
//!   row, each followed in turn by its own sub-tables' rows. Several sub-tables of one row
//!   follow one another in column order.
//!
//! Rows of a table in JSON context are not indented. A header key is bare unless it is empty,
//! has leading or trailing whitespace, or holds one of `,{}[]:"\` or a control character; then
//! it is a JSON string.
//!
//! Example: `{"dir":[{"name":"a","type":"file"},{"name":"b","type":"directory","children":
//! [{"name":"7up","type":"file"}]}]}` is
//!
//! ```text
//! {"dir":[2]{name,type,children}:
//! a,file
//! b,directory,[1]{name,type}:
//!  "7up",file
//! }
//! ```
//!
//! An array can be a table when it has at least one element, every element is an object, the
//! header has at least one key, every row's keys are in header order, and at least half of
//! its cells are present. With [`When::Saves`] an array in JSON context becomes a table only
//! when its table text costs at least that share fewer tokens than its compact JSON; arrays of
//! objects inside rows become sub-tables whenever they can. A value nested deeper than
//! [`MAX_DEPTH`] is written as plain compact JSON, and tables start only in the first
//! [`TABLE_DEPTH`] levels.
//!
//! Plain JSON is in the form too: [`decode`] reads any JSON text (Python's `NaN` included).

mod page;
mod read;
mod write;

#[cfg(test)]
mod tests;

pub use page::TablePager;

use serde_json::Value;

use crate::tokens::Encoding;

/// Spaces of indentation per sub-table level.
pub const INDENT: usize = 1;

/// Values nesting deeper than this many levels are written without tables (and [`decode`]
/// reads tables only this deep).
pub const MAX_DEPTH: usize = 512;

/// Tables start only in the first this many levels of nesting.
pub const TABLE_DEPTH: usize = 64;

/// The share of tokens a table must save, in percent, under the proxy's `tables = "auto"`.
pub const AUTO_MIN_SAVING_PERCENT: u32 = 10;

/// When an array of objects in JSON context becomes a table.
#[derive(Debug, Clone, Copy)]
pub enum When<'a> {
    /// Whenever it can (see the [module docs](self)).
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

/// `value` in the table form (numbers written as they are held: round them first).
pub fn encode(value: &Value, when: When<'_>) -> Encoded {
    if write::too_deep(value) {
        return Encoded {
            text: write::plain(value),
            tables: 0,
        };
    }
    let mut w = write::Writer {
        when,
        out: String::new(),
        tables: 0,
    };
    w.json(value, 0);
    Encoded {
        text: w.out,
        tables: w.tables,
    }
}

/// The value a text in the table form stands for: `decode(&encode(v, _).text) == v`.
///
/// # Errors
/// [`DecodeError`] when `text` is neither JSON nor in the table form.
pub fn decode(text: &str) -> Result<Value, DecodeError> {
    if let Ok(p) = crate::dialect::parse_unbounded(text.as_bytes()) {
        return Ok(p.value);
    }
    let mut r = read::Reader { s: text, i: 0 };
    let v = r.json(0)?;
    r.ws();
    if !r.at_end() {
        return Err(DecodeError::Syntax {
            at: r.i,
            what: "the end of the text",
        });
    }
    Ok(v)
}

/// The explanation of the form given to the model once per tool (in the tool's description
/// when the proxy's `tables` option is on): about 70 tokens (cl100k_base).
pub const EXPLANATION: &str = "Results may hold tables: `[N]{k1,k2}:` then N rows, \
one per object, cells in key order split by `,`; an empty or left-out trailing cell = key \
absent; strings JSON-quoted when needed; a cell `[n]{..}:` opens a sub-table whose n rows \
follow, indented 1 more space.";
