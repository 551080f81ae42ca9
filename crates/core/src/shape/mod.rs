//! The stages that shape a `CallToolResult` (MCP 2025-06-18, "Tools"), pure and synchronous:
//! each a module with a plain input and a plain output that imports only the stages before it
//! and core's other modules. The engine's boundary (`mcp-budget-engine`) feeds them the
//! upstream's result and answers the injected tools; the caches stay there, and the jq
//! runner comes through [`ports`].
//!
//! One way, leaves first (an arrow is "is imported by"):
//!
//! ```text
//! need ──▶ structured ──▶ model ──▶ book ──▶ walk ◀── form
//! what an   structuredContent  plain   where    pages of   a document's
//! output-   next to its text   data    pages    a cached   rendering and
//! Schema    twin, or paged      │      start    response   its tokens
//! requires        │             ├──▶ list    each listed tool's edit
//!                 │             ├──▶ uuids   UUIDs shortened, expanded back
//!                 └─────────────┴──▶ sheet   a page and its structuredContent
//!                                            within the budget
//! ports: what the caller supplies (a leaf; the jq runner)
//! ```
//!
//! - [`need`]: what a tool's `outputSchema` requires of a structuredContent (JSON Schema
//!   2020-12 keywords; local `$ref`s by RFC 6901 pointer).
//! - [`structured`]: how a page's structuredContent is made and kept valid ([`structured::Plan`]).
//! - [`model`]: the plain data of a shaped response: its pages ([`model::SeqPage`]), where each
//!   page's text goes ([`model::Carrier`], [`model::Slot`]), the injected tools' names and
//!   definitions ([`model::ToolNames`], [`model::definitions`]).
//! - [`book`] and [`walk`]: the pages of a cached response as one sequence of its documents,
//!   within a budget, and where each page starts ([`walk::Cached`] is what the walk reads of
//!   the cache entry; the proxy's store implements it).
//! - [`sheet`]: one page within the budget with its structuredContent, the page resized until
//!   both fit ([`sheet::page_in_budget`]); imports `model` and `structured`.
//! - [`form`]: a document's outgoing text (compact JSON or the table form, [`crate::table`])
//!   and its tokens, counted only up to a limit.
//! - [`list`]: what is done to each tool a `tools/list` result lists, and the injected tools'
//!   names; imports only `model`.
//! - [`uuids`]: UUIDs shortened to their 12-hex prefix in a result, and expanded back in later
//!   calls' arguments ([`uuids::UuidMemory`], one per session); imports only `model`.
//! - [`fit`]: texts the shaper writes itself (error messages) cut to fit the budget; a leaf.
//! - [`ports`]: what the caller supplies that is not pure ([`ports::JqRunner`], which runs a
//!   `query_response` filter); a leaf that imports no stage.

pub mod book;
pub mod fit;
pub mod form;
pub mod list;
pub mod model;
pub mod need;
pub mod ports;
pub mod sheet;
pub mod structured;
pub mod uuids;
pub mod walk;
