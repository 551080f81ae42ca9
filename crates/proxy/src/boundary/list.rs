//! Shaping the `result` of a `tools/list` response.
//!
//! - Remembers, per tool name, whether the tool declares an `outputSchema` (the
//!   structuredContent rules of [`super::structured`] depend on it). A first page starts a
//!   fresh listing; later pages add to it.
//! - Appends the tool's `description_suffix` rule (after one space) to its description.
//! - On the first page only (the request had no cursor), appends the injected tools
//!   ([`super::injected::definitions`]). An injected tool whose name an upstream tool on that
//!   page already has is renamed with the `budget_` prefix, and hints name the renamed tool.
//!   A clash with a tool on a later page cannot be seen in time and is not handled.
//!
//! A result without a `tools` array is returned unchanged.

use serde_json::Value;

use super::Boundary;
use super::injected::{self, QUERY_RESPONSE, READ_MORE};
use super::walk::ToolNames;

pub(crate) fn shape(b: &Boundary, mut result: Value, first_page: bool) -> Value {
    let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) else {
        return result;
    };
    let mut seen: Vec<(String, bool)> = Vec::with_capacity(tools.len());
    for tool in tools.iter_mut() {
        let Some(name) = tool.get("name").and_then(Value::as_str).map(str::to_owned) else {
            continue;
        };
        let has_schema = tool.get("outputSchema").is_some_and(Value::is_object);
        if let Some(suffix) = b.settings.rule_for(&name).description_suffix {
            let desc = match tool.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d} {suffix}"),
                _ => suffix,
            };
            if let Some(o) = tool.as_object_mut() {
                o.insert("description".into(), Value::String(desc));
            }
        }
        seen.push((name, has_schema));
    }
    let names = if first_page {
        let taken: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
        Some(ToolNames {
            read_more: injected::free_name(READ_MORE, &taken),
            query_response: injected::free_name(QUERY_RESPONSE, &taken),
        })
    } else {
        None
    };
    b.remember_tools(seen, names.clone(), first_page);
    if let Some(names) = names {
        tools.extend(injected::definitions(&names));
    }
    result
}
