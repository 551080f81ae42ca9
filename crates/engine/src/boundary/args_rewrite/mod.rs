//! Rewriting a client's `tools/call` arguments before the call is forwarded (issue #12, §1
//! and §4), and the result-side half of `uuid_prefix`.
//!
//! The relay asks [`Boundary::may_rewrite`] about every `tools/call` of an upstream tool; when
//! it says yes, [`Boundary::rewrite_call`] gets the call's `params.arguments` and returns a
//! [`Rewrite`]: forward the line as it came (byte for byte: the common case), forward it with
//! new arguments, or answer it here with an `isError` result and forward nothing. In order:
//!
//! 1. `uuid_prefix` ([`mcp_budget_core::shape::uuids`]): once any result had its UUIDs shortened, a prefix of a
//!    remembered UUID in any call's arguments is expanded to the full UUID, whatever tool is
//!    called; a prefix of several is answered
//!    `{"error":"ambiguous_id","prefix":…,"candidates":[…],"hint":…}`.
//! 2. `response_refs` ([`refs`]), when on for the called tool: `{"$response":"<id>",
//!    "query":"<jq>"}` values are replaced by the cached response after the filter; a
//!    reference that cannot be resolved is answered
//!    `{"error":"response_ref_failed","argument":…,"reason":"malformed|unknown|expired|query_failed","message":…,"hint":…}`.
//!
//! Both answers fit the called tool's budget (a long message is cut, as `query_response`'s
//! are). The relay holds the client's later lines while a call is rewritten (a reference's
//! filter may take up to jq's deadline), so their order towards the server is kept.

pub(crate) mod refs;

use mcp_budget_core::paginate::Document;
use serde::Serialize;
use serde_json::Value;

use super::state::Boundary;

/// What to do with a client's `tools/call` of an upstream tool.
#[derive(Debug, Clone, PartialEq)]
pub enum Rewrite {
    /// Forward the request as it came, byte for byte.
    Forward,
    /// Forward it with these `params.arguments` (the rest of the line as it came).
    Arguments(Value),
    /// Forward nothing: answer with this `result` (a CallToolResult with `isError: true`).
    Answer(Value),
}

/// `{"error":"ambiguous_id",…}`.
#[derive(Serialize)]
struct AmbiguousId<'a> {
    error: &'static str,
    prefix: &'a str,
    candidates: &'a [String],
    hint: &'static str,
}

/// `{"error":"response_ref_failed",…}`.
#[derive(Serialize)]
struct RefFailed<'a> {
    error: &'static str,
    argument: &'a str,
    reason: &'a str,
    message: &'a str,
    hint: &'static str,
}

impl Boundary {
    /// Whether a `tools/call` of upstream `tool` may need [`Boundary::rewrite_call`]: some
    /// UUID was shortened in this session, or `response_refs` is on for `tool`. A cheap
    /// check; `false` means the request is forwarded byte for byte.
    pub fn may_rewrite(&self, tool: &str) -> bool {
        self.uuids.any() || self.settings.rule_for(tool).response_refs
    }

    /// What to do with a `tools/call` of upstream `tool` whose `params.arguments` are
    /// `arguments` (`Value::Null` when absent): see the module docs. Never panics; may take
    /// up to jq's deadline (a reference's filter).
    pub fn rewrite_call(&self, tool: &str, mut arguments: Value) -> Rewrite {
        let rule = self.settings.rule_for(tool);
        let mut changed = false;
        if self.uuids.any() {
            match self.uuids.expand_args(&mut arguments) {
                Ok(c) => changed |= c,
                Err(a) => {
                    let text = serde_json::to_string(&AmbiguousId {
                        error: "ambiguous_id",
                        prefix: &a.prefix,
                        candidates: &a.candidates,
                        hint: "This shortened id matches several UUIDs shown in this session: call again with the full UUID you mean.",
                    })
                    .unwrap_or_default();
                    let text = mcp_budget_core::shape::fit::fit_message(
                        &self.encoding,
                        rule.max_tokens,
                        &text,
                        str::to_owned,
                    );
                    return Rewrite::Answer(
                        crate::boundary::answer::error_answer(self, text).result,
                    );
                }
            }
        }
        if rule.response_refs {
            match refs::resolve_all(self, &mut arguments) {
                Ok(c) => changed |= c,
                Err(f) => {
                    let hint = if f.reason == "query_failed" {
                        "Fix the jq filter (it runs on the cached response, as query_response runs it) and call again."
                    } else {
                        "Use a response_id from a result of this server (proxy) that is still cached; if it expired, call the original tool again."
                    };
                    let text = mcp_budget_core::shape::fit::fit_message(
                        &self.encoding,
                        rule.max_tokens,
                        &f.message,
                        |m| {
                            serde_json::to_string(&RefFailed {
                                error: "response_ref_failed",
                                argument: &f.argument,
                                reason: f.reason,
                                message: m,
                                hint,
                            })
                            .unwrap_or_default()
                        },
                    );
                    return Rewrite::Answer(
                        crate::boundary::answer::error_answer(self, text).result,
                    );
                }
            }
        }
        if changed {
            Rewrite::Arguments(arguments)
        } else {
            Rewrite::Forward
        }
    }
}

/// Shortens the UUIDs of a result about to be emitted, when `on`: its documents and `values`
/// (structuredContent kept beside them). The prefixes used (empty when off or none), to
/// [`register`] under the response id once it is known.
pub(crate) fn shorten(
    b: &Boundary,
    on: bool,
    docs: &mut [Document],
    values: &mut [&mut Value],
) -> mcp_budget_core::shape::uuids::PrefixMap {
    if on {
        b.uuids.shorten(docs, values)
    } else {
        mcp_budget_core::shape::uuids::PrefixMap::new()
    }
}

/// Keeps the prefixes of a shortened result under its response id (a paged result: its
/// `query_response` and references see full UUIDs).
pub(crate) fn register(
    b: &Boundary,
    id: Option<&str>,
    map: mcp_budget_core::shape::uuids::PrefixMap,
) {
    if let Some(id) = id {
        b.uuids.register(id, map);
    }
}
