//! Shaping the `result` of a `tools/list` response: each listed tool through the pure
//! tools/list stage ([`mcp_budget_core::shape::list`]) with its rule, the listing remembered
//! (per tool name, whether it declares an `outputSchema`: the structuredContent rules of
//! [`mcp_budget_core::shape::structured`] depend on it; a first page starts a fresh listing,
//! later pages add to it), and on the first page only (the request had no cursor) the injected
//! tools appended ([`mcp_budget_core::shape::model::definitions`]). An injected tool whose name
//! an upstream tool on that page already has is renamed with the `budget_` prefix, and hints
//! name the renamed tool. A clash with a tool on a later page cannot be seen in time and is
//! not handled.
//!
//! - First of all, `[tools_list]` drops refused tools and compacts the others; last, in
//!   deferred mode, replaces them by `find_tools`/`call_tool` (`super::tools_list`).
//!
//! A result without a `tools` array is returned unchanged.

use serde_json::Value;
use std::sync::Arc;

use super::state::Boundary;
use mcp_budget_core::shape::list::{ToolRule, edit_tool, injected_names};

pub(crate) fn shape(b: &Boundary, mut result: Value, first_page: bool) -> Value {
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return result;
    };
    super::tools_list::prepare(b, tools);
    let mut seen: Vec<(String, Option<Arc<Value>>)> = Vec::with_capacity(tools.len());
    for tool in tools.iter_mut() {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let rule = b.settings.rule_for(name);
        let rule = ToolRule {
            tables: rule.tables == crate::config::Tables::Auto,
            description_suffix: rule.description_suffix,
            uuid_prefix: rule.uuid_prefix,
        };
        seen.extend(edit_tool(tool, &rule, b.profile.structured_meta));
    }
    {
        let taken: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
        super::tools_list::defer(b, tools, first_page, &taken);
    }
    let names = if first_page {
        let taken: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
        Some(injected_names(&taken))
    } else {
        None
    };
    b.remember_tools(seen, names.clone(), first_page);
    if let Some(names) = names {
        tools.extend(mcp_budget_core::shape::model::definitions(&names));
    }
    result
}
