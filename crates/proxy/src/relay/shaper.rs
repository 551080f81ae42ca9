//! The seam between the relay (I/O) and the boundary (what gets shaped).

use crate::boundary::Boundary;
pub use crate::boundary::args_rewrite::Rewrite;
pub use crate::boundary::tools_list::CallRoute;

/// A `tools/call` result that goes out as the server wrote it, as its shaper needs it to account
/// for the call once it has gone out ([`Shaper::passes_unchanged`]); opaque to the relay.
pub struct Unchanged(crate::boundary::Unchanged);

impl std::fmt::Debug for Unchanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unchanged").finish_non_exhaustive()
    }
}

/// What rewrites the results the relay intercepts (the boundary, `crate::boundary`).
///
/// Every method runs on tokio's blocking pool and may take its time; none may assume an
/// order between calls (several results are shaped at once).
pub trait Shaper: Send + Sync + 'static {
    /// Whether a `tools/call` of `tool` may be one the proxy answers itself; a cheap check
    /// that spares the other calls a trip to the blocking pool. `false` must imply that
    /// [`Shaper::answer_injected`] would return `None`.
    fn may_answer(&self, tool: &str) -> bool;

    /// The result of a client's `tools/call` (its `params`, as sent) that the proxy answers
    /// itself (an injected tool: `read_more`, `query_response`), or `None` to forward it.
    fn answer_injected(&self, params: &serde_json::Value) -> Option<serde_json::Value>;

    /// The shaped `result` of a `tools/call` response. `tool` is the request's `params.name`;
    /// `upstream_ms` the milliseconds from forwarding the request to reading the response.
    fn shape_call_result(
        &self,
        tool: &str,
        result: serde_json::Value,
        upstream_ms: u64,
    ) -> serde_json::Value;

    /// Whether the `result` of a `tools/call` response, as the server wrote it (`raw`, its
    /// JSON bytes), goes out byte for byte: shaping would give it back unchanged. When it
    /// does (`Some`), the relay sends the server's line, then hands what this returned to
    /// [`Shaper::account_unchanged`], which accounts for the call as
    /// [`Shaper::shape_call_result`] would have (so that work, a token count, is not on the
    /// call's path). The relay asks only for small results, before parsing them. `None` by
    /// default.
    fn passes_unchanged(&self, tool: &str, raw: &[u8], upstream_ms: u64) -> Option<Unchanged> {
        let _ = (tool, raw, upstream_ms);
        None
    }

    /// Accounts for a result that went out unchanged ([`Shaper::passes_unchanged`]). Nothing
    /// by default.
    fn account_unchanged(&self, unchanged: Unchanged) {
        let _ = unchanged;
    }

    /// The shaped `result` of a `tools/list` response; `first_page` when the request had no
    /// cursor (the injected tools go on the first page only).
    fn shape_list_result(&self, result: serde_json::Value, first_page: bool) -> serde_json::Value;

    /// Whether a `tools/call` of `tool` may be one [`Shaper::route_call`] changes (a cheap
    /// check; `false` must imply that `route_call` would return [`CallRoute::Forward`]).
    /// `false` by default.
    fn may_route(&self, tool: &str) -> bool {
        let _ = tool;
        false
    }

    /// What to do with a client's `tools/call` (`params` as sent) before it is forwarded:
    /// forward it, answer it, or forward a rewritten call (`[tools_list]`). Runs on the
    /// relay's task: it must be quick. Forwards by default.
    fn route_call(&self, params: &serde_json::Value) -> CallRoute {
        let _ = params;
        CallRoute::Forward
    }

    /// A `tools/call` of `tool` was answered without a result: a JSON-RPC `error` from the
    /// server, or an error the relay wrote in its place (the server exited or timed out).
    /// Nothing is shaped; the boundary only accounts for the call (telemetry). `upstream_ms`
    /// as in [`Shaper::shape_call_result`]. Does nothing by default.
    fn note_call_error(&self, tool: &str, upstream_ms: u64) {
        let _ = (tool, upstream_ms);
    }

    /// Whether a client's `tools/call` of upstream `tool` (not an injected one) may need
    /// [`Shaper::rewrite_call`]; a cheap check. `false` (the default) forwards the request
    /// byte for byte.
    fn may_rewrite(&self, tool: &str) -> bool {
        let _ = tool;
        false
    }

    /// What to do with a `tools/call` of upstream `tool` whose `params.arguments` are
    /// `arguments` (`Null` when absent): forward it as it came, forward it with new
    /// arguments (the rest of the line kept byte for byte), or answer it without forwarding.
    /// Runs on the blocking pool while the client's later lines wait (their order towards
    /// the server is kept). Forwards by default.
    fn rewrite_call(&self, tool: &str, arguments: serde_json::Value) -> Rewrite {
        let _ = (tool, arguments);
        Rewrite::Forward
    }
}

impl Shaper for Boundary {
    fn may_answer(&self, tool: &str) -> bool {
        self.answers(tool)
    }

    fn may_route(&self, tool: &str) -> bool {
        Boundary::may_route(self, tool)
    }

    fn route_call(&self, params: &serde_json::Value) -> CallRoute {
        Boundary::route_call(self, params)
    }

    fn answer_injected(&self, params: &serde_json::Value) -> Option<serde_json::Value> {
        Boundary::answer_injected(self, params)
    }

    fn shape_call_result(
        &self,
        tool: &str,
        result: serde_json::Value,
        upstream_ms: u64,
    ) -> serde_json::Value {
        Boundary::shape_call_result(self, tool, result, upstream_ms)
    }

    fn passes_unchanged(&self, tool: &str, raw: &[u8], upstream_ms: u64) -> Option<Unchanged> {
        Boundary::pass_unchanged(self, tool, raw, upstream_ms).map(Unchanged)
    }

    fn account_unchanged(&self, unchanged: Unchanged) {
        Boundary::account_unchanged(self, unchanged.0);
    }

    fn shape_list_result(&self, result: serde_json::Value, first_page: bool) -> serde_json::Value {
        Boundary::shape_list_result(self, result, first_page)
    }

    fn note_call_error(&self, tool: &str, upstream_ms: u64) {
        Boundary::note_call_error(self, tool, upstream_ms);
    }

    fn may_rewrite(&self, tool: &str) -> bool {
        Boundary::may_rewrite(self, tool)
    }

    fn rewrite_call(&self, tool: &str, arguments: serde_json::Value) -> Rewrite {
        Boundary::rewrite_call(self, tool, arguments)
    }
}
