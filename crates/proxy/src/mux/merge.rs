//! Pure pieces of the multi-server proxy: prefixed names, the merged `initialize` result, the
//! merged lists, and the per-server `[tools_list]`.

use mcp_budget_core::tokens::Encoding;
use mcp_budget_core::tooldefs;
use serde_json::{Map, Value, json};

use crate::config::ToolsList;

/// `<server><separator><name>`: how a server's tool or prompt is listed.
pub(crate) fn prefixed(server: &str, separator: &str, name: &str) -> String {
    format!("{server}{separator}{name}")
}

/// The server (its index in `names`) and the server's own name of a prefixed `full` name;
/// `None` when no server's `<name><separator>` starts it. Server names never contain the
/// separator (`config::servers::check`), so at most one server matches.
pub(crate) fn split<'a>(
    names: &[String],
    separator: &str,
    full: &'a str,
) -> Option<(usize, &'a str)> {
    let (server, rest) = full.split_once(separator)?;
    let index = names.iter().position(|n| n == server)?;
    Some((index, rest))
}

/// The protocol version the proxy answers: the oldest (versions are dates, `YYYY-MM-DD`, so
/// they order as strings) of those the servers answered; the client's requested one when no
/// server answered (or none said).
pub(crate) fn protocol_version<'a>(
    requested: Option<&'a str>,
    answered: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    answered.into_iter().min().or(requested)
}

/// The proxy's `initialize` result from the servers' results (`(name, result)`, in order):
/// see [`crate::mux`] for the rules.
pub(crate) fn initialize_result(requested: Option<&str>, servers: &[(String, Value)]) -> Value {
    let version = protocol_version(
        requested,
        servers
            .iter()
            .filter_map(|(_, r)| r.get("protocolVersion").and_then(Value::as_str)),
    );
    let caps = |key: &str| -> Vec<&Map<String, Value>> {
        servers
            .iter()
            .filter_map(|(_, r)| r.get("capabilities")?.get(key)?.as_object())
            .collect()
    };
    let any_flag = |of: &[&Map<String, Value>], flag: &str| {
        of.iter()
            .any(|m| m.get(flag).and_then(Value::as_bool) == Some(true))
    };
    let mut capabilities = Map::new();
    // The proxy always has tools (its own), and says when a server's tools come or go.
    capabilities.insert("tools".into(), json!({"listChanged": true}));
    let resources = caps("resources");
    if !resources.is_empty() {
        capabilities.insert(
            "resources".into(),
            json!({"subscribe": any_flag(&resources, "subscribe"), "listChanged": true}),
        );
    }
    if !caps("prompts").is_empty() {
        capabilities.insert("prompts".into(), json!({"listChanged": true}));
    }
    for key in ["logging", "completions"] {
        if !caps(key).is_empty() {
            capabilities.insert(key.into(), json!({}));
        }
    }
    let mut experimental = Map::new();
    for m in caps("experimental") {
        for (k, v) in m {
            experimental.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    if !experimental.is_empty() {
        capabilities.insert("experimental".into(), Value::Object(experimental));
    }
    let instructions: Vec<String> = servers
        .iter()
        .filter_map(|(name, r)| {
            let text = r.get("instructions")?.as_str()?.trim();
            (!text.is_empty()).then(|| format!("## {name}\n{text}"))
        })
        .collect();
    let names: Vec<&str> = servers.iter().map(|(n, _)| n.as_str()).collect();
    let mut result = Map::new();
    if let Some(v) = version {
        result.insert("protocolVersion".into(), json!(v));
    }
    result.insert("capabilities".into(), Value::Object(capabilities));
    result.insert(
        "serverInfo".into(),
        json!({
            "name": "mcp-budget",
            "title": format!("mcp-budget: {}", names.join(", ")),
            "version": env!("CARGO_PKG_VERSION"),
        }),
    );
    if !instructions.is_empty() {
        result.insert("instructions".into(), json!(instructions.join("\n\n")));
    }
    Value::Object(result)
}

/// Applies a server's `[tools_list]` (`config`; matched against the server's own names) to
/// its tools: refused ones dropped, the others compacted (`tooldefs::compact_tool`).
pub(crate) fn prepare_tools(tools: &mut Vec<Value>, config: &ToolsList, encoding: &Encoding) {
    if config.filters() {
        tools.retain(|t| {
            let name = t.get("name").and_then(Value::as_str).unwrap_or("");
            config.refusal(name).is_none()
        });
    }
    let options = config.options();
    if options != tooldefs::Options::default() {
        for t in tools.iter_mut() {
            *t = tooldefs::compact_tool(t, &options, encoding);
        }
    }
}

/// Replaces the `name` of every item of `items` (tools, prompts) by its prefixed form; items
/// without a string `name` are dropped (the client could not call them back).
pub(crate) fn prefix_names(items: &mut Vec<Value>, server: &str, separator: &str) {
    items.retain_mut(|item| {
        let Some(name) = item.get("name").and_then(Value::as_str) else {
            return false;
        };
        let full = prefixed(server, separator, name);
        if let Some(object) = item.as_object_mut() {
            object.insert("name".into(), json!(full));
            true
        } else {
            false
        }
    });
}

/// The `isError` CallToolResult of a tool refused by its server's `[tools_list]`.
pub(crate) fn refused(server: &str, tool: &str, rule: &str) -> Value {
    let body = json!({"error": "tool_refused", "server": server, "tool": tool, "rule": rule,
                      "hint": "This proxy's configuration does not allow this tool."});
    json!({"content": [{"type": "text", "text": body.to_string()}], "isError": true})
}

/// The `isError` CallToolResult of a call of a server that cannot take it now.
pub(crate) fn unavailable(server: &str, why: &str) -> Value {
    let text = format!(
        "mcp-budget: server {server:?} is unavailable ({why}); its tools cannot be called until it is back"
    );
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_back_to_their_server() {
        let names = vec!["fs".to_owned(), "git".to_owned(), "a-b".to_owned()];
        assert_eq!(split(&names, "__", "fs__read_file"), Some((0, "read_file")));
        assert_eq!(split(&names, "__", "git__git__x"), Some((1, "git__x")));
        assert_eq!(split(&names, "__", "a-b__t"), Some((2, "t")));
        assert_eq!(split(&names, "__", "nope__t"), None);
        assert_eq!(split(&names, "__", "read_more"), None);
        let p = prefixed("git", "__", "status");
        assert_eq!(split(&names, "__", &p), Some((1, "status")));
    }

    #[test]
    fn the_oldest_answered_version_wins() {
        let answered = ["2025-06-18", "2024-11-05", "2025-03-26"];
        assert_eq!(
            protocol_version(Some("2025-06-18"), answered),
            Some("2024-11-05")
        );
        assert_eq!(protocol_version(Some("2025-06-18"), []), Some("2025-06-18"));
    }

    #[test]
    fn capabilities_are_merged_and_instructions_named() {
        let servers = vec![
            (
                "a".to_owned(),
                json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}, "resources": {"subscribe": true}},
                       "instructions": "Use a."}),
            ),
            (
                "b".to_owned(),
                json!({"protocolVersion": "2025-06-18", "capabilities": {"prompts": {}, "logging": {}, "experimental": {"x": {}}}}),
            ),
        ];
        let r = initialize_result(Some("2025-06-18"), &servers);
        assert_eq!(r["protocolVersion"], "2025-06-18");
        assert_eq!(r["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(r["capabilities"]["resources"]["subscribe"], true);
        assert!(r["capabilities"]["prompts"].is_object());
        assert!(r["capabilities"]["logging"].is_object());
        assert!(r["capabilities"]["experimental"]["x"].is_object());
        assert!(r["capabilities"].get("completions").is_none());
        assert_eq!(r["instructions"], "## a\nUse a.");
        assert_eq!(r["serverInfo"]["name"], "mcp-budget");
    }

    #[test]
    fn prefixing_keeps_every_other_field() {
        let mut tools = vec![
            json!({"name": "t", "x": {"y": 1}, "inputSchema": {"type": "object"}}),
            json!({"noname": true}),
        ];
        prefix_names(&mut tools, "s", "__");
        assert_eq!(
            tools,
            vec![json!({"name": "s__t", "x": {"y": 1}, "inputSchema": {"type": "object"}})]
        );
    }

    #[test]
    fn a_server_tools_list_filters_its_own_names() {
        let config: ToolsList = toml::from_str("deny = [\"write_*\"]").unwrap();
        let mut tools = vec![json!({"name": "write_file"}), json!({"name": "read_file"})];
        prepare_tools(&mut tools, &config, &Encoding::Cl100kBase);
        assert_eq!(tools, vec![json!({"name": "read_file"})]);
    }
}
