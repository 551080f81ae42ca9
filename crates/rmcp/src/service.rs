//! [`Budgeted`]: the `Service<RoleServer>` that shapes what its inner service answers.
//!
//! The pattern of rmcp's own `Router<S>`: intercept `tools/call` and `tools/list` (and
//! `tasks/get`, whose completed payload is a CallToolResult), forward everything else. A
//! `ServerHandler` wrapper would have to forward each of its ~25 methods by hand, and a missed
//! one would silently fall back to rmcp's default.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use mcp_budget_engine::boundary::Boundary;
use mcp_budget_engine::boundary::tools_list::CallRoute;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientNotification, ClientRequest, CustomResult,
    GetTaskRequest, ListToolsRequest, ProtocolVersion, ResultType, ServerConfig, ServerResult,
    TaskPayload,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, Service};
use serde::Deserialize as _;
use serde_json::Value;

use crate::convert;
use crate::error::Error;
use crate::tasks::TaskTools;

/// An rmcp server (any `Service<RoleServer>`: a `ServerHandler`, a `Router`, another layer)
/// whose tool results stay inside a token budget. Made by [`crate::Budget::wrap`].
///
/// - `tools/call`: the inner result is shaped (compact JSON, rounded floats; over the budget,
///   page 1 plus a meta item with `next_cursor`, the full response kept in memory). A result
///   within the budget after compaction goes out with no meta item. Calls of `read_more` and
///   `query_response` are answered here and never reach the inner service. A task handle
///   (`CreateTaskResult`) passes as it is.
/// - `tools/list`: the inner tools plus `read_more` and `query_response` (on the first page;
///   prefixed `budget_` when an inner tool has the name).
/// - `tasks/get`: a completed task's `result` (the CallToolResult) is shaped as the call's
///   would have been.
/// - Everything else (initialize, ping, resources, prompts, notifications, custom requests)
///   reaches the inner service unchanged, and its answers come back unchanged.
///
/// What rmcp's model does not hold (unknown members of a result or of a content block) stays
/// in the answer: a shaped result that the typed model cannot hold whole goes out as the JSON
/// itself ([`rmcp::model::CustomResult`]). A result that cannot be shaped (which should not
/// happen) goes out as the inner service wrote it, never dropped; the reason is logged.
#[derive(Debug)]
pub struct Budgeted<S> {
    inner: S,
    boundary: Arc<Boundary>,
    tasks: TaskTools,
}

impl<S> Budgeted<S> {
    pub(crate) fn from_parts(inner: S, boundary: Boundary) -> Budgeted<S> {
        Budgeted {
            inner,
            boundary: Arc::new(boundary),
            tasks: TaskTools::default(),
        }
    }

    /// The wrapped service.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The names `read_more` and `query_response` are listed under (`budget_`-prefixed when an
    /// inner tool has the name; known once `tools/list` has been answered).
    pub fn injected_names(&self) -> (String, String) {
        self.boundary.injected_names()
    }

    /// Shapes a `tools/call` result of `tool` (rmcp's typed value, or an inner service's JSON
    /// [`CustomResult`] with a `content` array); `upstream_ms`: how long the tool took, in
    /// milliseconds (telemetry). Runs on tokio's blocking pool.
    ///
    /// # Errors
    /// [`Error::Encode`] when the result cannot become JSON; [`Error::Stopped`] when the
    /// engine panicked or the runtime refused the work. The caller then forwards `result`.
    async fn shape_call(
        &self,
        tool: String,
        result: &ServerResult,
        upstream_ms: u64,
    ) -> Result<ServerResult, Error> {
        let json = match result {
            ServerResult::CustomResult(CustomResult(json)) => json.clone(),
            other => convert::to_json(other)?,
        };
        let boundary = Arc::clone(&self.boundary);
        let shaped = blocking(move || boundary.shape_call_result(&tool, json, upstream_ms)).await?;
        Ok(match result {
            // An inner JSON result stays JSON: whatever it held beyond rmcp's model is kept.
            ServerResult::CustomResult(_) => ServerResult::CustomResult(CustomResult(shaped)),
            _ => convert::call_result(shaped),
        })
    }

    /// The answer to a call of `read_more` or `query_response` (or their prefixed names);
    /// `None` when the engine has none after all (the call then goes to the inner service).
    async fn answer_injected(
        &self,
        params: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<ServerResult>, Error> {
        let params = convert::to_json(params)?;
        let boundary = Arc::clone(&self.boundary);
        let Some(answer) = blocking(move || boundary.answer_injected(&params)).await? else {
            return Ok(None);
        };
        let mut result = convert::call_result(answer);
        mark_complete(&mut result, context);
        Ok(Some(result))
    }
}

impl<S: Service<RoleServer>> Budgeted<S> {
    async fn call_tool(
        &self,
        mut request: CallToolRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        if self.boundary.answers(&request.params.name) {
            match self.answer_injected(&request.params, &context).await {
                Ok(Some(answer)) => return Ok(answer),
                Ok(None) => {}
                // The engine stopped (a panic, the runtime shutting down): the client learns
                // why; nothing of an inner result is lost, there was none.
                Err(e) => return Err(ErrorData::internal_error(e.to_string(), None)),
            }
        }
        let mut tool = request.params.name.to_string();
        // Config rules (`[tools_list]`) may refuse a tool or turn `call_tool` into a call.
        let params = self.boundary.may_route(&tool);
        if let Some(params) = params
            .then(|| convert::to_json(&request.params).ok())
            .flatten()
        {
            match self.boundary.route_call(&params) {
                CallRoute::Forward => {}
                CallRoute::Answer(answer) => {
                    let mut result = convert::call_result(answer);
                    mark_complete(&mut result, &context);
                    return Ok(result);
                }
                CallRoute::Rewrite { params, tool: to } => {
                    match CallToolRequestParams::deserialize(&params) {
                        Ok(p) => {
                            request.params = p;
                            tool = to;
                        }
                        Err(e) => {
                            tracing::warn!(tool, error = %e, "call_tool's rewrite is not rmcp's CallToolRequestParams; forwarded as it was");
                        }
                    }
                }
            }
        }
        let started = Instant::now();
        let result = self
            .inner
            .handle_request(ClientRequest::CallToolRequest(request), context)
            .await?;
        let upstream_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match &result {
            ServerResult::CreateTaskResult(task) => {
                self.tasks.remember(&task.task.task_id, &tool);
                Ok(result)
            }
            ServerResult::CallToolResult(_) => {
                Ok(self.shape_or_forward(tool, result, upstream_ms).await)
            }
            ServerResult::CustomResult(CustomResult(json)) if convert::is_call_result(json) => {
                Ok(self.shape_or_forward(tool, result, upstream_ms).await)
            }
            _ => Ok(result),
        }
    }

    async fn shape_or_forward(
        &self,
        tool: String,
        result: ServerResult,
        upstream_ms: u64,
    ) -> ServerResult {
        match self.shape_call(tool.clone(), &result, upstream_ms).await {
            Ok(shaped) => shaped,
            Err(e) => {
                tracing::warn!(tool, error = %e, "tools/call result forwarded unshaped");
                result
            }
        }
    }

    async fn list_tools(
        &self,
        request: ListToolsRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let first_page = request
            .params
            .as_ref()
            .and_then(|p| p.cursor.as_ref())
            .is_none();
        let result = self
            .inner
            .handle_request(ClientRequest::ListToolsRequest(request), context)
            .await?;
        let json = match &result {
            ServerResult::ListToolsResult(_) => convert::to_json(&result),
            ServerResult::CustomResult(CustomResult(json)) if json.get("tools").is_some() => {
                Ok(json.clone())
            }
            _ => return Ok(result),
        };
        let json = match json {
            Ok(json) => json,
            Err(e) => {
                tracing::warn!(error = %e, "tools/list result forwarded unshaped");
                return Ok(result);
            }
        };
        // Cheap (no tokenizing): stays on this thread.
        let shaped = self.boundary.shape_list_result(json, first_page);
        Ok(match result {
            ServerResult::CustomResult(_) => ServerResult::CustomResult(CustomResult(shaped)),
            _ => convert::list_result(shaped),
        })
    }

    async fn get_task(
        &self,
        request: GetTaskRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let mut result = self
            .inner
            .handle_request(ClientRequest::GetTaskRequest(request), context)
            .await?;
        let ServerResult::GetTaskResult(got) = &mut result else {
            return Ok(result);
        };
        let tool = self.tasks.tool_of(&got.task.task.task_id);
        let TaskPayload::Completed { result: payload } = &mut got.task.payload else {
            return Ok(result);
        };
        let call = ServerResult::CustomResult(CustomResult(Value::Object(payload.clone())));
        match self.shape_call(tool.clone(), &call, 0).await {
            Ok(ServerResult::CustomResult(CustomResult(Value::Object(shaped)))) => {
                *payload = shaped
            }
            Ok(_) => tracing::warn!(
                tool,
                "a task's shaped payload is not an object; forwarded unshaped"
            ),
            Err(e) => tracing::warn!(tool, error = %e, "a task's payload forwarded unshaped"),
        }
        Ok(result)
    }
}

impl<S: Service<RoleServer>> Service<RoleServer> for Budgeted<S> {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        match request {
            ClientRequest::CallToolRequest(call) => self.call_tool(call, context).await,
            ClientRequest::ListToolsRequest(list) => self.list_tools(list, context).await,
            ClientRequest::GetTaskRequest(get) => self.get_task(get, context).await,
            rest => self.inner.handle_request(rest, context).await,
        }
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.handle_notification(notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        let mut info = self.inner.get_info();
        // read_more and query_response are tools, whatever the inner server offers.
        info.capabilities.tools.get_or_insert_with(Default::default);
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }
}

impl<S> Drop for Budgeted<S> {
    fn drop(&mut self) {
        self.boundary.flush_telemetry();
        // Cursors die with the server: its spilled responses go too.
        self.boundary.remove_spill_files();
    }
}

/// An answer the layer wrote itself carries `resultType: "complete"` for peers on protocol
/// 2026-07-28 or later (required there), and none for older peers (which do not know it), as
/// rmcp's `ServerHandler` does for the results it writes.
fn mark_complete(result: &mut ServerResult, context: &RequestContext<RoleServer>) {
    let new = context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    match result {
        ServerResult::CallToolResult(r) if new => {
            r.result_type.get_or_insert(ResultType::COMPLETE);
        }
        ServerResult::CallToolResult(r) => r.result_type = None,
        ServerResult::CustomResult(CustomResult(Value::Object(o))) if new => {
            o.entry("resultType")
                .or_insert_with(|| Value::from("complete"));
        }
        _ => {}
    }
}

/// Runs `f` (synchronous shaping; `query_response` waits on a jq worker) on tokio's blocking
/// pool, so the server's async threads never wait on it.
///
/// # Errors
/// [`Error::Stopped`] when `f` panicked or the runtime is shutting down.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Stopped(e.to_string()))
}
