//! `[tools_list]` at the boundary: allow/deny, compacted definitions, deferred tools.
//!
//! - **Listing** ([`prepare`]): tools refused by `allow`/`deny` are dropped from every
//!   `tools/list` page; the others are compacted by `mcp_budget_core::tooldefs::compact_tool`
//!   (description caps, schema compaction; `outputSchema` and `annotations` untouched).
//! - **Refusal** ([`route`]): a `tools/call` of a refused tool, directly or through
//!   `call_tool`, is answered by the proxy with an `isError` result
//!   `{"error":"tool_refused","tool":…,"rule":…}` naming the rule; nothing is forwarded.
//! - **Deferred mode** (`mode = "defer"`, [`defer`]): the listed tools are kept in a catalog
//!   (every page; a first page starts it afresh) and replaced by `find_tools {query}` and
//!   `call_tool {name, arguments}` (on the first page) plus the `pinned` tools in full.
//!   `find_tools` answers the catalog's matching definitions
//!   (`{"tools":[{"name","description","inputSchema"},…]}`, at most [`FIND_LIMIT`], best
//!   first by `tooldefs::search`; none matching: `{"tools":[],"names":[every name]}`), within
//!   the proxy's budget. `call_tool` is forwarded as a `tools/call` of the named tool (its
//!   `params` rewritten: `name` and `arguments` replaced, `_meta` kept), so its result is
//!   shaped and logged exactly as a direct call of that tool. An unknown name (once a list
//!   was seen) or arguments that are not an object get an `isError` result
//!   (`unknown_tool`, `invalid_arguments`) without a trip upstream.

use mcp_budget_core::tooldefs::{self, search};
use mcp_budget_core::wire::Outcome;
use serde_json::{Map, Value, json};

use super::answer::Answer;
use super::state::Boundary;
use crate::config::{ListMode, ToolsList};
use mcp_budget_core::shape::model::DeferNames;

/// Name of the search tool of deferred mode when no upstream tool has it.
pub const FIND_TOOLS: &str = "find_tools";
/// Name of the forwarding tool of deferred mode when no upstream tool has it.
pub const CALL_TOOL: &str = "call_tool";
/// Most definitions one `find_tools` answer holds.
pub const FIND_LIMIT: usize = 5;

/// What to do with a client's `tools/call` before it is forwarded.
#[derive(Debug, Clone, PartialEq)]
pub enum CallRoute {
    /// Forward it as it is.
    Forward,
    /// Answer it with this `result` (a CallToolResult); forward nothing.
    Answer(Value),
    /// Forward a `tools/call` of `tool` with these `params` instead.
    Rewrite {
        /// The new `params` (`name`, `arguments`, and the original `_meta`).
        params: Value,
        /// The tool now called (for shaping rules and telemetry).
        tool: String,
    },
}

fn config(b: &Boundary) -> Option<&ToolsList> {
    b.settings.file.as_ref().map(|f| &f.tools_list)
}

/// Drops refused tools from `tools` and compacts the others.
pub(crate) fn prepare(b: &Boundary, tools: &mut Vec<Value>) {
    let Some(cfg) = config(b) else { return };
    if cfg.filters() {
        tools.retain(|t| {
            let name = t.get("name").and_then(Value::as_str).unwrap_or("");
            cfg.refusal(name).is_none()
        });
    }
    let options = cfg.options();
    if options != tooldefs::Options::default() {
        for t in tools.iter_mut() {
            *t = tooldefs::compact_tool(t, &options, &b.encoding);
        }
    }
}

/// In deferred mode: records `tools` (a page, after [`prepare`] and the notes) in the catalog
/// and replaces them by the pinned ones, plus `find_tools` and `call_tool` on a first page
/// (named apart from `taken`, the upstream names). Returns the names of the two tools when it
/// added them. Does nothing in eager mode.
pub(crate) fn defer(
    b: &Boundary,
    tools: &mut Vec<Value>,
    first_page: bool,
    taken: &[&str],
) -> Option<DeferNames> {
    let cfg = config(b)?;
    if cfg.mode != ListMode::Defer {
        return None;
    }
    let all = std::mem::take(tools);
    tools.extend(
        all.iter()
            .filter(|t| cfg.is_pinned(t.get("name").and_then(Value::as_str).unwrap_or("")))
            .cloned(),
    );
    let names = first_page.then(|| DeferNames {
        find_tools: mcp_budget_core::shape::model::free_name(FIND_TOOLS, taken),
        call_tool: mcp_budget_core::shape::model::free_name(CALL_TOOL, taken),
    });
    if let Ok(mut s) = b.tools.write() {
        if first_page {
            s.catalog.tools.clear();
            s.catalog.names = names.clone();
        }
        s.catalog.tools.extend(all);
    }
    if let Some(n) = &names {
        tools.extend(definitions(n));
    }
    names
}

/// The definitions of `find_tools` and `call_tool`
/// ([`tooldefs::deferred_definitions`]).
pub(crate) fn definitions(names: &DeferNames) -> [Value; 2] {
    tooldefs::deferred_definitions(&names.find_tools, &names.call_tool)
}

fn defer_names(b: &Boundary) -> Option<DeferNames> {
    b.tools.read().ok().and_then(|s| s.catalog.names.clone())
}

/// Whether a `tools/call` of `tool` may need [`route`]: it is `call_tool`, or allow/deny
/// lists are set (a cheap check for the relay).
pub(crate) fn may_route(b: &Boundary, tool: &str) -> bool {
    config(b).is_some_and(|c| c.filters()) || defer_names_match(b, |n| n.call_tool == tool)
}

/// Whether deferred mode's names (borrowed under the lock, not cloned: the relay asks this of
/// every call) satisfy `check`; `false` outside deferred mode or with a poisoned lock.
fn defer_names_match(b: &Boundary, check: impl FnOnce(&DeferNames) -> bool) -> bool {
    b.tools
        .read()
        .is_ok_and(|s| s.catalog.names.as_ref().is_some_and(check))
}

/// Whether `tool` is deferred mode's `find_tools`.
pub(crate) fn is_find_tools(b: &Boundary, tool: &str) -> bool {
    defer_names_match(b, |n| n.find_tools == tool)
}

/// What to do with a client's `tools/call` (`params` as sent): see the module docs.
pub(crate) fn route(b: &Boundary, params: &Value) -> CallRoute {
    let Some(cfg) = config(b) else {
        return CallRoute::Forward;
    };
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return CallRoute::Forward;
    };
    let names = defer_names(b);
    if let Some(n) = names.as_ref().filter(|n| n.call_tool == name) {
        let args = params.get("arguments").cloned().unwrap_or(Value::Null);
        let Some(target) = args.get("name").and_then(Value::as_str) else {
            return CallRoute::Answer(error(
                b,
                json!({"error": "invalid_arguments", "argument": "name", "reason": "missing: the name of a tool (a string)", "hint": format!("Find tools with {}.", n.find_tools)}),
            ));
        };
        let inner = match args.get("arguments") {
            None | Some(Value::Null) => json!({}),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => {
                return CallRoute::Answer(error(
                    b,
                    json!({"error": "invalid_arguments", "argument": "arguments", "reason": "must be a JSON object"}),
                ));
            }
        };
        if let Some(rule) = cfg.refusal(target) {
            return CallRoute::Answer(refused(b, target, &rule));
        }
        if target == n.call_tool || target == n.find_tools {
            return CallRoute::Answer(error(
                b,
                json!({"error": "invalid_arguments", "argument": "name", "reason": format!("{target} is called directly, not through {}", n.call_tool)}),
            ));
        }
        let (read_more, query_response) = b.injected_names();
        let known = target == read_more
            || target == query_response
            || b.tools.read().is_ok_and(|s| {
                s.catalog.tools.is_empty()
                    || s.catalog
                        .tools
                        .iter()
                        .any(|t| t.get("name").and_then(Value::as_str) == Some(target))
            });
        if !known {
            return CallRoute::Answer(error(
                b,
                json!({"error": "unknown_tool", "tool": target, "hint": format!("Find the tool's exact name with {}.", n.find_tools)}),
            ));
        }
        let mut rewritten = params.as_object().cloned().unwrap_or_default();
        rewritten.insert("name".into(), json!(target));
        rewritten.insert("arguments".into(), inner);
        return CallRoute::Rewrite {
            params: Value::Object(rewritten),
            tool: target.to_owned(),
        };
    }
    match cfg.refusal(name) {
        Some(rule) => CallRoute::Answer(refused(b, name, &rule)),
        None => CallRoute::Forward,
    }
}

fn refused(b: &Boundary, tool: &str, rule: &str) -> Value {
    error(
        b,
        json!({"error": "tool_refused", "tool": tool, "rule": rule, "hint": "This proxy's configuration does not allow this tool."}),
    )
}

fn error(b: &Boundary, body: Value) -> Value {
    let mut content: Vec<Value> = crate::boundary::state::banner_item(b).into_iter().collect();
    content.push(json!({"type": "text", "text": body.to_string()}));
    json!({"content": content, "isError": true})
}

/// Answers a call of `find_tools` (`params` as sent); `None` for any other tool.
pub(crate) fn answer_find(b: &Boundary, params: &Value) -> Option<Answer> {
    let name = params.get("name")?.as_str()?;
    if !is_find_tools(b, name) {
        return None;
    }
    let query = params
        .get("arguments")
        .and_then(|a| a.get("query"))
        .and_then(Value::as_str);
    let Some(query) = query else {
        let result = error(
            b,
            json!({"error": "invalid_arguments", "argument": "query", "reason": "missing: words to match (a string)"}),
        );
        return Some(answer(result, Outcome::Error, 0, 0));
    };
    let catalog = b.tools.read().ok()?.catalog.tools.clone();
    let hits = search::rank(&catalog, query, FIND_LIMIT);
    let budget = b.settings.global_rule().max_tokens;
    let text = if hits.is_empty() {
        let names: Vec<&str> = catalog
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
            .collect();
        json!({"tools": [], "names": names}).to_string()
    } else {
        let mut defs: Vec<Value> = hits.iter().map(|&i| model_view(&catalog[i])).collect();
        let mut text = json!({ "tools": defs }).to_string();
        while defs.len() > 1 && !b.encoding.fits(&text, budget) {
            defs.pop();
            text = json!({ "tools": defs }).to_string();
        }
        text
    };
    let tokens = b.encoding.count(&text) as u64;
    let bytes = text.len() as u64;
    let mut content: Vec<Value> = crate::boundary::state::banner_item(b).into_iter().collect();
    content.push(json!({"type": "text", "text": text}));
    Some(answer(
        json!({ "content": content }),
        Outcome::Fit,
        bytes,
        tokens,
    ))
}

fn answer(result: Value, outcome: Outcome, bytes: u64, tokens: u64) -> Answer {
    Answer {
        result,
        outcome,
        response_id: None,
        bytes,
        tokens,
    }
}

/// `{"name","description","inputSchema"}` of a tool: what the model reads of it.
fn model_view(tool: &Value) -> Value {
    let mut m = Map::new();
    for k in ["name", "description", "inputSchema"] {
        if let Some(v) = tool.get(k) {
            m.insert(k.to_owned(), v.clone());
        }
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_budget_core::tokens::Encoding;

    #[test]
    fn deferred_tools_cost_little() {
        let enc = Encoding::Cl100kBase;
        let defs = definitions(&DeferNames {
            find_tools: FIND_TOOLS.into(),
            call_tool: CALL_TOOL.into(),
        });
        let tokens: usize = defs
            .iter()
            .map(|d| tooldefs::definition_tokens(d, &enc))
            .sum();
        assert!(tokens <= 120, "{tokens}");
    }
}
