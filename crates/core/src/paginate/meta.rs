//! The meta item of a page ([`crate::wire::Meta`]) from what the pager says about the page, and
//! the ids it carries. Shared by the proxy and `mcp-budget shape` so both say the same thing.

use super::page::PageInfo;
use crate::wire::{Meta, TRUNCATION_TOKEN_BUDGET};

/// Names of the tools a hint tells the model to call (the proxy prefixes them when an upstream
/// tool already has the name). Defaults: `read_more`, `query_response`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HintTools<'a> {
    /// The tool that returns the next page: `{cursor}`.
    pub read_more: &'a str,
    /// The tool that runs a jq query on the cached response: `{response_id, query}`.
    pub query_response: &'a str,
}

impl Default for HintTools<'_> {
    fn default() -> Self {
        HintTools {
            read_more: "read_more",
            query_response: "query_response",
        }
    }
}

/// A 12-hex-digit response id derived from `bytes` (FNV-1a 64, top 48 bits): stable across
/// runs and platforms, about 6 tokens.
pub fn response_id(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{:012x}", h >> 16)
}

/// The cursor of page `page_index` (0-based: page 1 is 0, the page after it is 1) of
/// response `response_id`: `<response_id>.<page_index>`.
pub fn cursor(response_id: &str, page_index: u64) -> String {
    format!("{response_id}.{page_index}")
}

/// The meta item of a page: `truncated`, `truncation_reason`, `response_id`, `next_cursor`
/// (`<response_id>.<next_page_index>`, only when `info.has_next`), `shown`, `next_start_line`
/// (text), `total_tokens` (tokens of the whole shaped response) and a one-sentence hint that
/// names the tools to call. Serialize it with `serde_json::to_string` for the meta item's text.
pub fn build_meta(
    info: &PageInfo<'_>,
    response_id: &str,
    next_page_index: u64,
    total_tokens: u64,
    tools: HintTools<'_>,
) -> Meta {
    let next_cursor = info.has_next.then(|| cursor(response_id, next_page_index));
    let select = format!(
        "Select: {} {{\"response_id\":\"{response_id}\",\"query\":\"<jq>\"}}.",
        tools.query_response
    );
    let hint = match &next_cursor {
        Some(c) => format!("More: {} {{\"cursor\":\"{c}\"}}. {select}", tools.read_more),
        None => format!("Last page. {select}"),
    };
    Meta {
        truncated: true,
        truncation_reason: TRUNCATION_TOKEN_BUDGET.to_owned(),
        response_id: response_id.to_owned(),
        next_cursor,
        shown: info.shown.to_owned(),
        next_start_line: info.next_start_line.filter(|_| info.has_next),
        total_tokens: Some(total_tokens),
        total_tokens_estimate: None,
        hint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_ids_are_12_hex() {
        let id = response_id(b"hello");
        assert_eq!(id.len(), 12);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert_eq!(id, response_id(b"hello"));
        assert_ne!(id, response_id(b"hellp"));
    }

    #[test]
    fn meta_names_the_tools_and_the_cursor() {
        let info = PageInfo {
            shown: "$[0].children[0:40]",
            has_next: true,
            next_start_line: None,
        };
        let m = build_meta(&info, "3fa9c2e1b07d", 1, 104213, HintTools::default());
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(
            text,
            r#"{"truncated":true,"truncation_reason":"token_budget","response_id":"3fa9c2e1b07d","next_cursor":"3fa9c2e1b07d.1","shown":"$[0].children[0:40]","total_tokens":104213,"hint":"More: read_more {\"cursor\":\"3fa9c2e1b07d.1\"}. Select: query_response {\"response_id\":\"3fa9c2e1b07d\",\"query\":\"<jq>\"}."}"#
        );
        let last = PageInfo {
            has_next: false,
            ..info
        };
        let m = build_meta(&last, "3fa9c2e1b07d", 2, 9, HintTools::default());
        assert!(m.next_cursor.is_none());
        assert!(m.hint.starts_with("Last page."));
    }
}
