//! Results the boundary writes itself for the injected tools and refused arguments
//! (`query_failed`, `cursor_invalid`, an ambiguous UUID prefix …): [`Answer`], and the
//! error result (its text fitted to the budget by [`mcp_budget_core::shape::fit`]).

use mcp_budget_core::wire::Outcome;
use serde_json::{Value, json};

use super::state::Boundary;

/// What answering an injected call produced (for telemetry).
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) result: Value,
    pub(crate) outcome: Outcome,
    pub(crate) response_id: Option<String>,
    pub(crate) bytes: u64,
    pub(crate) tokens: u64,
}

/// The error result (`isError: true`) whose one text item is `text` (already fitted to the
/// budget), after the banner item when one is set; its tokens counted in the boundary's
/// encoding.
pub(crate) fn error_answer(b: &Boundary, text: String) -> Answer {
    let tokens = b.encoding.count(&text) as u64;
    let bytes = text.len() as u64;
    let mut content: Vec<Value> = crate::boundary::state::banner_item(b).into_iter().collect();
    content.push(json!({"type":"text","text":text}));
    Answer {
        result: json!({"content": content, "isError": true}),
        outcome: Outcome::Error,
        response_id: None,
        bytes,
        tokens,
    }
}
