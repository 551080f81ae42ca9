//! Tables: a lossless, token-lean text form of JSON in which arrays of objects are written as
//! a header and rows (TOON-like; the `tables` option of the proxy).
//!
//! [`encode`] writes a value in this form, [`decode`] gives the value back exactly (equal as
//! a [`Value`](serde_json::Value), key order and number spellings included), and [`TablePager`] cuts budgeted
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

mod model;
mod page;
mod read;
mod write;

#[cfg(test)]
mod tests;

pub use model::{
    AUTO_MIN_SAVING_PERCENT, DecodeError, Encoded, INDENT, MAX_DEPTH, TABLE_DEPTH, When,
};
pub use page::TablePager;
pub use read::decode;
pub use write::encode;

/// The explanation of the form given to the model once per tool (in the tool's description
/// when the proxy's `tables` option is on): about 70 tokens (cl100k_base).
pub const EXPLANATION: &str = "Results may hold tables: `[N]{k1,k2}:` then N rows, \
one per object, cells in key order split by `,`; an empty or left-out trailing cell = key \
absent; strings JSON-quoted when needed; a cell `[n]{..}:` opens a sub-table whose n rows \
follow, indented 1 more space.";
