//! `mcp-budget-core`: the pure, synchronous engine of mcp-budget.
//!
//! Everything here is a function over values that a caller passes in: no I/O, no async
//! runtime (the one thread is a scoped one, [`shape::form`] counting a long text's two
//! halves at once). The proxy (`mcp-budget-proxy`) and the `mcp-budget` binary drive it.
//!
//! - [`tokens`]: exact token counts with a real BPE tokenizer ([`tokens::Encoding`]).
//! - [`compact`]: compact JSON with floats rounded to N significant digits at write time.
//! - [`dialect`]: JSON as Python servers write it (lone surrogate escapes, `NaN`/`Infinity`).
//! - [`head`]: the first part of a long JSON text, read alone (page 1 without the whole).
//! - [`paginate`]: budgeted, lossless pages of any JSON value or text.
//! - [`summary`]: a bounded structural summary of a JSON value (the elision preview).
//! - [`client`]: client profiles: what each MCP client hands its model, and its caps.
//! - [`blob`]: detection of base64 blobs and `data:` URIs inside JSON strings.
//! - [`measure`]: what a payload costs in tokens and what each compaction would save.
//! - [`uuid`]: UUIDs in text and their 12-hex prefixes (the `uuid_prefix` option).
//! - [`tooldefs`]: what tool definitions cost the model, and compacting them losslessly.
//! - [`table`]: the table form of JSON (arrays of objects as header and rows), its decoder
//!   and its budgeted pages.
//! - [`shape`]: the stages that shape a `CallToolResult`, one way, as plain data in and out
//!   (the proxy's boundary drives them).
//! - [`wire`]: every shape a model or client sees (meta item, elision envelope, errors).
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]

pub mod blob;
pub mod client;
pub mod compact;
pub mod dialect;
pub mod head;
pub mod measure;
pub mod paginate;
pub mod shape;
pub mod summary;
pub mod table;
pub mod tokens;
pub mod tooldefs;
pub mod uuid;
pub mod vision;
pub mod wire;

/// The smallest budget, in tokens, that shaping accepts; smaller requests are clamped up to it.
///
/// A page must hold its meta item (about 60–90 tokens with the hint) and at least one new unit.
pub const MIN_BUDGET_TOKENS: usize = 256;

/// The default budget, in tokens, for one `tools/call` result (DESIGN.md, CLI contract).
pub const DEFAULT_BUDGET_TOKENS: usize = 10_000;

/// The default number of significant digits floats are rounded to (DESIGN.md, principles).
pub const DEFAULT_PRECISION: u32 = 9;
