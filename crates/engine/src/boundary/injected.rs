//! The tools the proxy adds to `tools/list` and answers itself: `read_more` and
//! `query_response`. Both read the cache only; the upstream server is never called again.
//!
//! - `read_more {cursor, max_tokens?}`: page `<n>` of response `<id>` for cursor `<id>.<n>`.
//! - `query_response {response_id, query, max_tokens?}`: the jq filter's outputs on the cached
//!   full response (one output: that value; several: an array of them; a single string output
//!   is shown as plain text). The input is the response's one text item as JSON (a text that
//!   is not JSON as a JSON string), or an array of its text items when it has several. The
//!   output is shaped and paged by the same rules, under its own response id.
//!
//! `max_tokens` (a positive integer) is clamped between [`mcp_budget_core::MIN_BUDGET_TOKENS`]
//! and the budget the response was shaped with. Arguments that do not match the tool's
//! `inputSchema` (a wrong type, `max_tokens` not a positive integer, a required argument
//! missing; see [`super::args`]) give an `isError` result
//! `{"error":"invalid_arguments","argument":…,"reason":…,"hint":…}`. Bad, unknown or expired
//! cursors and ids give an `isError` result `{"error":"cursor_invalid","reason":…,"hint":…}`
//! (for `unknown`, the hint says that cursors belong to the server whose result gave them);
//! a failing jq filter (syntax, runtime error, deadline, a worker that died or none free)
//! gives an `isError` result `{"error":"query_failed","message":…,"hint":…}`. All fit the
//! budget in force (the request's `max_tokens`, clamped, when valid): a longer message is cut
//! at a char boundary and ends with `… [cut: the message is N chars long]`.

use mcp_budget_core::paginate::Document;
use mcp_budget_core::wire::{CursorFault, CursorInvalid, InvalidArguments, Outcome, QueryFailed};
use serde_json::{Value, json};

use super::answer::{Answer, error_answer};
use super::args::{self, ArgFault};
use super::args_rewrite;
use super::call;
use super::parts;
use super::state::Boundary;
use super::store::remote::{CAS_TRIES, Miss};
use super::store::{check_id, parse_cursor};
use crate::config::Overflow;
use mcp_budget_core::shape::fit::{fit_message, fit_text};
use mcp_budget_core::shape::model::ToolNames;
use mcp_budget_core::shape::model::{EmitMode, Slot};
pub use mcp_budget_core::shape::model::{PREFIX, QUERY_RESPONSE, READ_MORE};
use mcp_budget_core::shape::model::{query_response_schema, read_more_schema};
use mcp_budget_core::shape::walk;

/// The hint of a `cursor_invalid` result with reason `unknown`: besides a mistyped cursor,
/// the usual cause is a cursor passed to the `read_more` of another server's proxy (each MCP
/// server has its own proxy and cache; clients prefix tool names per server).
fn unknown_hint(read_more: &str) -> String {
    format!(
        "No such response or page in this proxy's cache. Cursors and response ids belong to the \
         server (proxy) whose result gave them, and clients prefix tool names per server \
         (Claude Code: mcp__<server>__{read_more}): call the {read_more} of the server whose \
         result carried the cursor, with the next_cursor or response_id exactly as given."
    )
}

fn cursor_invalid(b: &Boundary, budget: usize, reason: CursorFault) -> Answer {
    let hint = match reason {
        CursorFault::Malformed => {
            "A cursor looks like \"3fa9c2e1b07d.1\" and a response_id like \"3fa9c2e1b07d\": copy them from the last item of a shortened result.".to_owned()
        }
        CursorFault::Unknown => unknown_hint(&b.names().read_more),
        CursorFault::Expired => {
            "The cached response was dropped (unused for too long, or memory ran short): call the original tool again.".to_owned()
        }
    };
    let text = serde_json::to_string(&CursorInvalid {
        error: "cursor_invalid".into(),
        reason,
        hint,
    })
    .unwrap_or_default();
    // Fixed texts, far below the smallest budget; cut all the same should one ever grow.
    error_answer(b, fit_text(&b.encoding, budget, &text))
}

/// The result of a lookup that found no entry: `cursor_invalid` with the fault, or, when the
/// shared store did not answer (or kept being rewritten by other replicas), `cursor_invalid`
/// `expired` whose hint says so.
fn store_miss(b: &Boundary, budget: usize, miss: Miss) -> Answer {
    let why = match miss {
        Miss::Fault(f) => return cursor_invalid(b, budget, f),
        Miss::Unavailable(why) => why,
        Miss::Conflict => "other replicas kept writing this response's pages".to_owned(),
    };
    let text = serde_json::to_string(&CursorInvalid {
        error: "cursor_invalid".into(),
        reason: CursorFault::Expired,
        hint: format!(
            "The response store did not answer ({why}): try again shortly, or call the original tool again."
        ),
    })
    .unwrap_or_default();
    error_answer(b, fit_text(&b.encoding, budget, &text))
}

/// The `invalid_arguments` result of an injected call whose arguments do not match the tool's
/// `inputSchema`.
fn invalid_arguments(
    b: &Boundary,
    budget: usize,
    tool: &str,
    schema: &Value,
    fault: ArgFault,
) -> Answer {
    let hint = format!(
        "Call {tool} again with arguments {{{}}} as a JSON object.",
        args::synopsis(schema)
    );
    let text = fit_message(&b.encoding, budget, &fault.reason, |reason| {
        serde_json::to_string(&InvalidArguments {
            error: "invalid_arguments".into(),
            argument: fault.argument.clone(),
            reason: reason.to_owned(),
            hint: hint.clone(),
        })
        .unwrap_or_default()
    });
    error_answer(b, text)
}

fn query_failed(b: &Boundary, budget: usize, message: &str) -> Answer {
    let text = fit_message(&b.encoding, budget, message, |message| {
        serde_json::to_string(&QueryFailed {
            error: "query_failed".into(),
            message: message.to_owned(),
            hint: "Fix the jq filter (jq syntax, run on the cached response) and call again."
                .into(),
        })
        .unwrap_or_default()
    });
    error_answer(b, text)
}

/// `max_tokens` from the arguments, clamped to `[MIN_BUDGET_TOKENS, ceiling]`; `ceiling`
/// when it is absent or not an integer (the arguments were checked before: see [`answer`]).
fn budget_arg(args: &Value, ceiling: usize) -> usize {
    let asked = args.get("max_tokens").and_then(|v| {
        v.as_u64().or_else(|| {
            // Integral floats (`700.0`, `1e3`) are integers to JSON Schema; huge ones saturate.
            v.as_f64()
                .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                .map(|f| f as u64)
        })
    });
    let floor = mcp_budget_core::MIN_BUDGET_TOKENS;
    match asked {
        Some(n) => usize::try_from(n)
            .unwrap_or(usize::MAX)
            .clamp(floor, ceiling.max(floor)),
        None => ceiling.max(floor),
    }
}

/// Answers `params` (of a `tools/call`) when it names an injected tool. Arguments that do not
/// match the tool's `inputSchema` ([`args::check`]) get an `invalid_arguments` result within
/// the proxy's budget (or the request's `max_tokens`, when that one is valid).
pub(crate) fn answer(b: &Boundary, params: &Value) -> Option<Answer> {
    let name = params.get("name")?.as_str()?;
    let names = b.names();
    let schema = if name == names.read_more {
        read_more_schema()
    } else if name == names.query_response {
        query_response_schema()
    } else {
        return None;
    };
    let given = params.get("arguments");
    if let Err(fault) = args::check(&schema, given) {
        let budget = match given {
            Some(a) if fault.argument != "max_tokens" && a.is_object() => proxy_budget(b, a),
            _ => budget_arg(&Value::Null, b.settings.global_rule().max_tokens),
        };
        return Some(invalid_arguments(b, budget, name, &schema, fault));
    }
    let empty = json!({});
    let args = given.filter(|a| a.is_object()).unwrap_or(&empty);
    if name == names.read_more {
        Some(read_more(b, args, &names))
    } else {
        Some(query_response(b, args))
    }
}

/// The budget of a result written before the cached response is known: the request's
/// `max_tokens` clamped to the proxy's budget.
fn proxy_budget(b: &Boundary, args: &Value) -> usize {
    budget_arg(args, b.settings.global_rule().max_tokens)
}

fn read_more(b: &Boundary, args: &Value, names: &ToolNames) -> Answer {
    let early = proxy_budget(b, args);
    let Some(cursor) = args.get("cursor").and_then(Value::as_str) else {
        return cursor_invalid(b, early, CursorFault::Malformed);
    };
    let (id, k) = match parse_cursor(cursor.trim()) {
        Ok(x) => x,
        Err(f) => return cursor_invalid(b, early, f),
    };
    // With the shared store, another replica may extend the same page book meanwhile: then
    // read it again and compute again (see `store::remote`).
    let mut tries = 0;
    let (entry, sheet) = loop {
        let entry = match b.store.get(&b.principal, id) {
            Ok(e) => e,
            Err(m) => return store_miss(b, early, m),
        };
        let budget = budget_arg(args, entry.budget);
        let Some(sheet) = parts::page_in_budget(&entry, k, budget, &b.encoding, names, false)
        else {
            return cursor_invalid(b, budget, CursorFault::Unknown);
        };
        match b.store.save_pages(&entry) {
            Ok(()) => break (entry, sheet),
            Err(Miss::Conflict) if tries + 1 < CAS_TRIES => tries += 1,
            Err(m) => return store_miss(b, budget, m),
        }
    };
    let page = sheet.page;
    let mut content: Vec<Value> = crate::boundary::state::banner_item(b).into_iter().collect();
    let bytes = page.meta.len() + page.parts.iter().map(|p| p.body.len()).sum::<usize>();
    let page_meta = walk::page_meta(&entry.id, &page, &*entry);
    content.extend(parts::page_items(&entry, page.parts));
    content.push(json!({"type":"text","text":page.meta}));
    let mut result = serde_json::Map::new();
    result.insert("content".into(), Value::Array(content));
    // No structuredContent after page 1 (but with the `wire` profile): `read_more` declares
    // no outputSchema, and a client that shows structuredContent alone when present (Claude
    // Code, VS Code, Codex) then shows the page and its meta item (see `client_fit`).
    if let Some(sc) = sheet.sc.value.filter(|_| !b.profile.structured_meta) {
        result.insert("structuredContent".into(), sc);
    }
    walk::put_page_meta(&mut result, page_meta);
    Answer {
        result: Value::Object(result),
        outcome: Outcome::Paged,
        response_id: Some(entry.id.clone()),
        bytes: bytes as u64,
        tokens: sheet.tokens as u64,
    }
}

fn query_response(b: &Boundary, args: &Value) -> Answer {
    let early = proxy_budget(b, args);
    let Some(id) = args.get("response_id").and_then(Value::as_str) else {
        return cursor_invalid(b, early, CursorFault::Malformed);
    };
    let id = id.trim();
    // Accept a cursor too: its id part names the response.
    let id = id.split_once('.').map_or(id, |(i, _)| i);
    if let Err(f) = check_id(id) {
        return cursor_invalid(b, early, f);
    }
    let entry = match b.store.get(&b.principal, id) {
        Ok(e) => e,
        Err(m) => return store_miss(b, early, m),
    };
    let budget = budget_arg(args, entry.budget);
    let Some(query) = args.get("query").and_then(Value::as_str) else {
        return query_failed(b, budget, "missing argument \"query\" (a jq filter)");
    };
    // With `uuid_prefix`, the filter and its input see full UUIDs; the output is shortened.
    let (input, query) = args_rewrite::refs::query_view(b, &entry.id, entry.query_input(), query);
    let shortened = b.uuids.response_map(&entry.id).is_some();
    let input = match serde_json::to_string(&input) {
        Ok(text) => text,
        Err(e) => return query_failed(b, budget, &format!("internal error: {e}")),
    };
    let mut outs = match b.jq.run(&query, &input) {
        Ok(outs) => outs,
        Err(e) => return query_failed(b, budget, &e.to_string()),
    };
    drop(input);
    let value = match outs.len() {
        1 => outs.pop().unwrap_or_default(),
        _ => Value::Array(outs),
    };
    let mut docs = vec![match value {
        Value::String(s) => Document::Text(s),
        v => Document::Json(v),
    }];
    let uuid_map = args_rewrite::shorten(b, shortened, &mut docs, &mut []);
    let layout = [Slot::Text {
        doc: 0,
        extra: serde_json::Map::new(),
    }];
    let emitted = call::emit(
        b,
        docs,
        &layout,
        budget,
        entry.precision,
        Overflow::Page,
        false,
    );
    args_rewrite::register(b, emitted.response_id.as_deref(), uuid_map);
    let mut content: Vec<Value> = crate::boundary::state::banner_item(b).into_iter().collect();
    content.extend(emitted.items);
    let mut result = serde_json::Map::new();
    result.insert("content".into(), Value::Array(content));
    if let Some(pm) = emitted.page_meta {
        walk::put_page_meta(&mut result, pm);
    }
    Answer {
        result: Value::Object(result),
        outcome: if emitted.mode == EmitMode::Whole {
            Outcome::Fit
        } else {
            Outcome::Paged
        },
        response_id: emitted.response_id,
        bytes: emitted.bytes,
        tokens: emitted.tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_budget_core::shape::model::{definitions, free_name};

    #[test]
    fn names_get_prefixed_until_free() {
        assert_eq!(free_name("read_more", &["x"]), "read_more");
        assert_eq!(free_name("read_more", &["read_more"]), "budget_read_more");
        assert_eq!(
            free_name("read_more", &["read_more", "budget_read_more"]),
            "budget_budget_read_more"
        );
    }

    #[test]
    fn definitions_cost_at_most_150_tokens_together() {
        let enc = mcp_budget_core::tokens::Encoding::Cl100kBase;
        let defs = definitions(&ToolNames {
            read_more: READ_MORE.into(),
            query_response: QUERY_RESPONSE.into(),
            refs: false,
        });
        let tokens: usize = defs
            .iter()
            .map(|d| mcp_budget_core::tooldefs::definition_tokens(d, &enc))
            .sum();
        assert!(tokens <= 150, "{tokens} tokens");
        let text = serde_json::to_string(&defs).unwrap_or_default();
        for word in ["cursor", "response_id", "query", "max_tokens", "jq", "page"] {
            assert!(text.contains(word), "{word} is not advertised");
        }
    }

    #[test]
    fn max_tokens_is_clamped() {
        assert_eq!(budget_arg(&json!({}), 5000), 5000);
        assert_eq!(budget_arg(&json!({"max_tokens": 10}), 5000), 256);
        assert_eq!(budget_arg(&json!({"max_tokens": 99999}), 5000), 5000);
        assert_eq!(budget_arg(&json!({"max_tokens": 700}), 5000), 700);
        assert_eq!(budget_arg(&json!({"max_tokens": 700.0}), 5000), 700);
        assert_eq!(budget_arg(&json!({"max_tokens": 1e30}), 5000), 5000);
        assert_eq!(budget_arg(&json!({"max_tokens": 1}), 5000), 256);
    }
}
