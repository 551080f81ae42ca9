//! The stages that shape a `CallToolResult` (MCP 2025-06-18, "Tools"), pure and synchronous:
//! each a module with a plain input and a plain output that imports only the stages before it
//! and core's other modules. The proxy's boundary (`mcp-budget-proxy`) feeds them the
//! upstream's result and answers the injected tools; the caches and the jq engine stay there.
//!
//! One way, leaves first:
//!
//! ```text
//! need ──▶ structured ──▶ model        form
//! (what an     (structuredContent   (the paged  (a document's whole
//!  outputSchema  next to its text    result's    rendering and its
//!  requires)     twin, or paged)     plain data) tokens)
//! ```
//!
//! - [`need`]: what a tool's `outputSchema` requires of a structuredContent (JSON Schema
//!   2020-12 keywords; local `$ref`s by RFC 6901 pointer).
//! - [`structured`]: how a page's structuredContent is made and kept valid ([`structured::Plan`]).
//! - [`model`]: the plain data of a shaped response: its pages ([`model::SeqPage`]), where each
//!   page's text goes ([`model::Carrier`], [`model::Slot`]), the injected tools' names and
//!   definitions ([`model::ToolNames`], [`model::definitions`]).
//! - [`form`]: a document's outgoing text (compact JSON or the table form, [`crate::table`])
//!   and its tokens, counted only up to a limit.

pub mod form;
pub mod model;
pub mod need;
pub mod structured;
