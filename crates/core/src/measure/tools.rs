//! Section 4: what each tool definition of a `tools/list` result costs.

use serde_json::Value;

use super::count::Counter;
use super::report::{ToolCost, ToolsCost};
use crate::compact;

/// One row per tool of `tools` (its compact JSON object, exact numbers), largest first by the
/// first encoding (ties keep list order), and their sum.
pub(crate) fn tools_cost(counter: &Counter<'_>, tools: &[Value]) -> ToolsCost {
    let mut rows: Vec<ToolCost> = tools
        .iter()
        .map(|t| {
            let text = compact::to_string(t, 0);
            ToolCost {
                name: t
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                chars: text.chars().count(),
                tokens: counter.count(&text),
            }
        })
        .collect();
    // Stable sort: equal costs keep list order.
    rows.sort_by(|a, b| b.tokens.first().cmp(&a.tokens.first()));
    let total = counter.sum(rows.iter().map(|r| &r.tokens));
    ToolsCost {
        total,
        tools: rows,
        definitions: super::definitions::definitions_cost(counter, tools),
    }
}
