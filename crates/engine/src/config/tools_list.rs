//! `[tools_list]` of the TOML file: which upstream tools are listed and callable, and how
//! their definitions are compacted (see `mcp_budget_core::tooldefs`).
//!
//! ```toml
//! [tools_list]
//! allow = ["git_*", "read_*"]         # globs (`*`, `?`); empty or absent: every tool
//! deny = ["git_reset", "*delete*"]     # globs; a denied tool is neither listed nor callable
//! description_max_tokens = 40          # tool descriptions cut at a sentence boundary, "…"
//! property_description_max_tokens = 12 # the same for every description in inputSchema
//! compact = true                       # validity-preserving schema compaction
//! fold_property_descriptions = false   # move property descriptions into the description
//! mode = "eager"                       # or "defer": find_tools + call_tool instead
//! pinned = ["read_text_file"]          # defer mode: these are listed in full as well
//! ```

use mcp_budget_core::tooldefs::{Options, glob};
use serde::Deserialize;

/// How `tools/list` presents the upstream tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ListMode {
    /// Every allowed tool, compacted (the default).
    #[default]
    Eager,
    /// Only `find_tools` and `call_tool` (and the `pinned` tools).
    Defer,
}

/// `[tools_list]`: see the module docs. The default changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsList {
    /// Globs of the tools to keep; empty: all.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Globs of the tools to hide and refuse.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Most tokens of a tool's description.
    pub description_max_tokens: Option<usize>,
    /// Most tokens of each description inside `inputSchema`.
    pub property_description_max_tokens: Option<usize>,
    /// Validity-preserving schema compaction (`tooldefs::schema`).
    #[serde(default)]
    pub compact: bool,
    /// Move top-level property descriptions into the tool's description where shorter.
    #[serde(default)]
    pub fold_property_descriptions: bool,
    /// Eager or deferred.
    #[serde(default)]
    pub mode: ListMode,
    /// Defer mode: globs of tools listed in full beside `find_tools` and `call_tool`.
    #[serde(default)]
    pub pinned: Vec<String>,
}

impl ToolsList {
    /// Why `tool` may not be listed or called: `deny rule "<glob>"` for the first deny glob it
    /// matches, `not in allow` when `allow` is given and no glob of it matches; `None` when
    /// the tool is allowed.
    pub fn refusal(&self, tool: &str) -> Option<String> {
        if let Some(rule) = glob::first_match(&self.deny, tool) {
            return Some(format!("[tools_list] deny rule {rule:?}"));
        }
        if !self.allow.is_empty() && glob::first_match(&self.allow, tool).is_none() {
            return Some(format!(
                "[tools_list] allow list ({}) has no match",
                self.allow.join(", ")
            ));
        }
        None
    }

    /// Whether a `pinned` glob matches `tool`.
    pub fn is_pinned(&self, tool: &str) -> bool {
        glob::first_match(&self.pinned, tool).is_some()
    }

    /// The compaction options of `mcp_budget_core::tooldefs::compact_tool`.
    pub fn options(&self) -> Options {
        Options {
            description_max_tokens: self.description_max_tokens,
            property_description_max_tokens: self.property_description_max_tokens,
            compact_schemas: self.compact,
            fold_property_descriptions: self.fold_property_descriptions,
        }
    }

    /// Whether any tool may be refused (an allow or deny list is given).
    pub fn filters(&self) -> bool {
        !self.allow.is_empty() || !self.deny.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses_by_rule() {
        let t: ToolsList = toml::from_str(
            "allow = [\"git_*\", \"read_*\"]\ndeny = [\"git_reset\"]\nmode = \"defer\"\npinned = [\"git_status\"]\ndescription_max_tokens = 40\ncompact = true",
        )
        .unwrap();
        assert_eq!(t.mode, ListMode::Defer);
        assert_eq!(t.refusal("git_status"), None);
        assert_eq!(
            t.refusal("git_reset").as_deref(),
            Some("[tools_list] deny rule \"git_reset\"")
        );
        assert!(t.refusal("write_file").unwrap().contains("allow list"));
        assert!(t.is_pinned("git_status"));
        assert_eq!(t.options().description_max_tokens, Some(40));
        assert!(toml::from_str::<ToolsList>("alow = []").is_err());
    }
}
