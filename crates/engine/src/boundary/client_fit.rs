//! Fitting every result to what the client hands its model ([`mcp_budget_core::client`]).
//!
//! The shaping engine counts the wire's model-visible parts (DESIGN.md's generic definition).
//! A client hands its model something else: `JSON.stringify(structuredContent)` alone (Claude
//! Code, VS Code, Codex), the text escaped inside a JSON string (Gemini CLI), behind a prefix
//! and cut past a byte limit (Codex). This module measures each result the boundary emits under
//! the session's [`Profile`] and, when a rendering is over the budget or a cap, shapes it again
//! with a smaller page budget until it fits (each try asks for the page shrunk by the factor
//! the worst measure is over, a little more, at most [`TRIES`] times; the floor is
//! [`mcp_budget_core::MIN_BUDGET_TOKENS`]). The same loop serves:
//!
//! - a `tools/call` result ([`shape_call`]): shaped again from the server's result (a result
//!   that fit whole but renders over the budget is paged);
//! - an injected tool's answer ([`answer_injected`]): asked again with a smaller `max_tokens`
//!   (`read_more` branches its page book per budget, so the cursor it returns leads on from
//!   the smaller page).
//!
//! Two changes make a paged result readable where only structuredContent is shown:
//! - page 1's `structuredContent` object carries the meta item as its
//!   [`STRUCTURED_META_KEY`] member (declared in every listed `outputSchema`, see
//!   `list::declare_structured_meta`), with [`STRUCTURED_META_NOTE`] beside it;
//! - later pages (`read_more`, which declares no `outputSchema`) carry no structuredContent,
//!   so every client shows their content items (page and meta item). A page's structuredContent
//!   is thus always the server's object shape (never an array, which protocol versions up to
//!   2025-11-25 forbid).

use mcp_budget_core::MIN_BUDGET_TOKENS;
use mcp_budget_core::client::{Profile, Wrap};
use mcp_budget_core::wire::{Outcome, STRUCTURED_META_KEY, STRUCTURED_META_NOTE};
use serde_json::{Map, Value};

use super::answer::Answer;
use super::call;
use super::injected;
use super::state::Boundary;
use mcp_budget_core::shape::model::Shaped;

/// Most shaping tries for one result (the first included).
pub(crate) const TRIES: usize = 6;

/// A `tools/call` result shaped ([`call::shape_at`]) so that what the client hands its model
/// fits the tool's budget and the profile's caps. `Shaped::tokens` is the profile's cost
/// (tokens of the costliest rendering).
pub(crate) fn shape_call(b: &Boundary, tool: &str, result: Value) -> Shaped {
    let budget = b.settings.rule_for(tool).max_tokens;
    let profile = &b.profile;
    let limit = profile.token_limit(budget);
    // The server's result, for a second try (rare: most results fit at the first).
    let keep = result.clone();
    let mut asked = limit;
    let mut shaped = call::shape_at(b, tool, result, (asked != budget).then_some(asked));
    for attempt in 1..=TRIES {
        if profile.structured_meta {
            carry_meta_in_structured(&mut shaped.result, shaped.outcome);
            give_pages_an_object(&mut shaped.result);
        }
        if profile.rejects_resource_link {
            shaped.tokens += links_as_text(&mut shaped.result, &b.encoding) as u64;
        }
        let is_error = is_error(&shaped.result);
        let cost = profile.cost(
            &shaped.result,
            shaped.tokens.saturating_sub(shaped.image_tokens) as usize,
            shaped.image_tokens as usize,
            &b.encoding,
        );
        if profile.admits(&cost, budget, is_error) || asked <= MIN_BUDGET_TOKENS || attempt == TRIES
        {
            shaped.tokens = shaped.tokens.max(cost.tokens as u64);
            return shaped;
        }
        asked = smaller(asked, profile.shrink_factor(&cost, budget, is_error));
        shaped = call::shape_at(b, tool, keep.clone(), Some(asked));
    }
    shaped
}

/// An injected tool's answer ([`injected::answer`]) that fits under the profile: asked again
/// with a smaller `max_tokens` while a rendering is over.
pub(crate) fn answer_injected(b: &Boundary, params: &Value) -> Option<Answer> {
    let profile = &b.profile;
    let budget = b.settings.global_rule().max_tokens;
    let mut answer = injected::answer(b, params)?;
    if profile.structured_meta {
        give_pages_an_object(&mut answer.result);
    }
    let mut asked = asked_budget(params).map_or(budget, |a| a.clamp(MIN_BUDGET_TOKENS, budget));
    let budget = asked;
    for attempt in 1..=TRIES {
        let is_error = is_error(&answer.result);
        let cost = profile.cost(&answer.result, answer.tokens as usize, 0, &b.encoding);
        if profile.admits(&cost, budget, is_error) || asked <= MIN_BUDGET_TOKENS || attempt == TRIES
        {
            answer.tokens = answer.tokens.max(cost.tokens as u64);
            return Some(answer);
        }
        asked = smaller(asked, profile.shrink_factor(&cost, budget, is_error));
        let mut again = params.clone();
        if let Some(args) = again.get_mut("arguments").and_then(Value::as_object_mut) {
            args.insert("max_tokens".into(), Value::from(asked as u64));
        } else {
            return Some(answer);
        }
        answer = injected::answer(b, &again)?;
        if profile.structured_meta {
            give_pages_an_object(&mut answer.result);
        }
    }
    Some(answer)
}

/// `max_tokens` of an injected call's arguments, when a positive integer.
fn asked_budget(params: &Value) -> Option<usize> {
    let v = params.get("arguments")?.get("max_tokens")?;
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 1.0).map(|f| f as u64))
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// The next page budget to ask for: `asked` shrunk by `factor` and 3% more, and by at least
/// 2% (+1), never below the floor.
fn smaller(asked: usize, factor: f64) -> usize {
    let by_factor = (asked as f64 * factor * 0.97) as usize;
    by_factor
        .min(asked.saturating_sub(asked / 50 + 1))
        .max(MIN_BUDGET_TOKENS)
}

fn is_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

/// On a paged (or elided) result, puts its meta item (the last content item's JSON) into its
/// `structuredContent` object as [`STRUCTURED_META_KEY`], with [`STRUCTURED_META_NOTE`], so a
/// client that shows only structuredContent shows the way to the rest too. A structuredContent
/// that is not an object (an array, from a 2026-07-28 server) is left as it is.
pub(crate) fn carry_meta_in_structured(result: &mut Value, outcome: Outcome) {
    if !matches!(outcome, Outcome::Paged | Outcome::Elided) {
        return;
    }
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    let meta = obj
        .get("content")
        .and_then(Value::as_array)
        .and_then(|items| items.last())
        .and_then(|item| item.get("text"))
        .and_then(Value::as_str)
        .and_then(|t| serde_json::from_str::<Map<String, Value>>(t).ok())
        .filter(|m| m.contains_key("truncated") || m.contains_key("elided"));
    let (Some(mut meta), Some(Value::Object(sc))) = (meta, obj.get_mut("structuredContent")) else {
        return;
    };
    if meta.contains_key("truncated") {
        meta.insert("note".into(), Value::from(STRUCTURED_META_NOTE));
    } else {
        // The elision envelope's preview is already in the content item: the cursors suffice.
        meta.remove("preview");
    }
    sc.insert(STRUCTURED_META_KEY.into(), Value::Object(meta));
}

/// The member of [`give_pages_an_object`]'s structuredContent that holds the page.
pub(crate) const STRUCTURED_PAGE_KEY: &str = "page";

/// A paged result without structuredContent whose first content item is a JSON array or scalar
/// gets `structuredContent` `{"page": <that JSON>, "mcp-budget": <its meta item>}`.
///
/// Gemini CLI (0.61.0, its `McpComplianceTransport`) sets `structuredContent =
/// JSON.parse(content[0].text)` on a result that has none, and the MCP SDK then rejects the
/// result when that is not an object ("structuredContent: Invalid input: expected record,
/// received array"), as on every `read_more` page of a directory tree. An object of our own
/// stops that, and a client that shows structuredContent alone (Claude Code) reads the same
/// page and meta item in it, not escaped. `read_more` and `query_response` declare no
/// outputSchema; an upstream tool's page 1 has its own structuredContent when it declares one.
pub(crate) fn give_pages_an_object(result: &mut Value) {
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    if obj.contains_key("structuredContent") {
        return;
    }
    let items = obj.get("content").and_then(Value::as_array);
    let texts: Vec<&str> = items
        .into_iter()
        .flatten()
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|i| i.get("text").and_then(Value::as_str))
        .collect();
    let [first, .., last] = texts.as_slice() else {
        return;
    };
    let Ok(meta) = serde_json::from_str::<Map<String, Value>>(last) else {
        return;
    };
    if !meta.contains_key("truncated") {
        return;
    }
    let Ok(page) = serde_json::from_str::<Value>(first) else {
        return;
    };
    if page.is_object() {
        return;
    }
    let mut sc = Map::new();
    sc.insert(STRUCTURED_PAGE_KEY.into(), page);
    sc.insert(STRUCTURED_META_KEY.into(), Value::Object(meta));
    obj.insert("structuredContent".into(), Value::Object(sc));
}

/// Turns each `resource_link` content item into a text item holding the link as compact JSON
/// (`{"resource_link":{"uri":…,"name":…}}`), for a client that rejects the item type (Kiro,
/// Cline); returns the tokens the new text items cost.
pub(crate) fn links_as_text(
    result: &mut Value,
    encoding: &mcp_budget_core::tokens::Encoding,
) -> usize {
    let Some(items) = result.get_mut("content").and_then(Value::as_array_mut) else {
        return 0;
    };
    let mut tokens = 0;
    for item in items.iter_mut() {
        if item.get("type").and_then(Value::as_str) != Some("resource_link") {
            continue;
        }
        let mut link = item.take();
        if let Some(o) = link.as_object_mut() {
            o.remove("type");
        }
        let text = serde_json::json!({ "resource_link": link }).to_string();
        tokens += encoding.count(&text);
        *item = serde_json::json!({"type": "text", "text": text});
    }
    tokens
}

/// Whether plain text items (`texts`, within `budget` tokens by the engine's count) are
/// within the profile's renderings and caps without rendering them: their bytes bound every
/// measure (with an encoding of at most one token per byte), a wrapping's escapes included.
/// `false` sends the result down the full path, which renders and measures it.
pub(crate) fn plain_admitted<'a>(
    b: &Boundary,
    texts: impl Iterator<Item = &'a str>,
    budget: usize,
) -> bool {
    let profile: &Profile = &b.profile;
    let mut bytes = 0usize;
    let mut escaped = 0usize;
    let mut lines = 0usize;
    for t in texts {
        bytes += t.len() + 1;
        lines += t.bytes().filter(|&c| c == b'\n').count() + 1;
        escaped += t.len()
            + 1
            + t.bytes()
                .filter(|&c| c == b'"' || c == b'\\' || c < 0x20)
                .count()
                * 5;
    }
    // Room for a wrapper (Gemini's tags and `{"output":…}`, Codex's prefix).
    let wrapper = 64;
    let worst_bytes = if profile.renderings.iter().any(|r| r.wrap != Wrap::None) {
        escaped + wrapper
    } else {
        bytes
    };
    let caps = &profile.caps;
    let within = |v: usize, cap: Option<usize>| cap.is_none_or(|c| v <= c);
    let wrapped_tokens_ok = profile.renderings.iter().all(|r| r.wrap == Wrap::None)
        || (b.encoding.bytes_bound_tokens() && worst_bytes <= profile.token_limit(budget));
    wrapped_tokens_ok
        && within(worst_bytes, caps.bytes)
        && within(worst_bytes, caps.chars)
        && within(worst_bytes, caps.error_chars)
        && within(lines, caps.lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn smaller_always_shrinks_and_stops_at_the_floor() {
        assert!(smaller(10_000, 1.0) < 10_000);
        assert_eq!(smaller(10_000, 0.5), 4_850);
        assert_eq!(smaller(300, 0.1), MIN_BUDGET_TOKENS);
    }

    #[test]
    fn resource_links_become_text_for_clients_that_reject_them() {
        let mut r = json!({"content": [{"type":"text","text":"a"},
            {"type":"resource_link","uri":"file:///x","name":"x"}]});
        let t = links_as_text(&mut r, &mcp_budget_core::tokens::Encoding::Cl100kBase);
        assert!(t > 0);
        assert_eq!(r["content"][1]["type"], "text");
        let inner: Value = serde_json::from_str(r["content"][1]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            inner,
            json!({"resource_link": {"uri":"file:///x","name":"x"}})
        );
    }

    #[test]
    fn an_array_page_without_structured_content_gets_an_object() {
        let meta = r#"{"truncated":true,"next_cursor":"ab.2","hint":"More"}"#;
        let mut r =
            json!({"content": [{"type":"text","text":"[1,2]"},{"type":"text","text":meta}]});
        give_pages_an_object(&mut r);
        assert_eq!(r["structuredContent"]["page"], json!([1, 2]));
        assert_eq!(
            r["structuredContent"][STRUCTURED_META_KEY]["next_cursor"],
            "ab.2"
        );
        // An object page, a plain text page, an unpaged result: none added.
        for first in [r#"{"a":1}"#, "line 1\nline 2"] {
            let mut r =
                json!({"content": [{"type":"text","text":first},{"type":"text","text":meta}]});
            give_pages_an_object(&mut r);
            assert!(r.get("structuredContent").is_none(), "{first}");
        }
        let mut r = json!({"content": [{"type":"text","text":"[1]"}]});
        give_pages_an_object(&mut r);
        assert!(r.get("structuredContent").is_none());
    }

    #[test]
    fn the_meta_item_goes_into_an_object_structured_content() {
        let meta = r#"{"truncated":true,"next_cursor":"ab.1","hint":"More"}"#;
        let mut r = json!({"content": [{"type":"text","text":"[1]"},{"type":"text","text":meta}],
                           "structuredContent": {"content": "[1]"}});
        carry_meta_in_structured(&mut r, Outcome::Paged);
        assert_eq!(
            r["structuredContent"][STRUCTURED_META_KEY]["next_cursor"],
            "ab.1"
        );
        assert_eq!(
            r["structuredContent"][STRUCTURED_META_KEY]["note"],
            STRUCTURED_META_NOTE
        );
        // Not paged, or not an object: unchanged.
        let mut fit =
            json!({"content": [{"type":"text","text":meta}], "structuredContent": {"a": 1}});
        carry_meta_in_structured(&mut fit, Outcome::Fit);
        assert_eq!(fit["structuredContent"], json!({"a": 1}));
        let mut arr = json!({"content": [{"type":"text","text":meta}], "structuredContent": [1]});
        carry_meta_in_structured(&mut arr, Outcome::Paged);
        assert_eq!(arr["structuredContent"], json!([1]));
    }
}
