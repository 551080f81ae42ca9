//! An inner service written by hand (`Service<RoleServer>`, answering JSON it made itself),
//! seen through a raw JSON-RPC client: members rmcp's model does not know survive the layer,
//! and the completed payload of a task-augmented call (`tasks/get`) is shaped.

#[path = "common.rs"]
mod common;

use common::{BUDGET, Raw, budgeted, meta_item, visible_tokens};
use rmcp::model::{
    ClientNotification, ClientRequest, CreateTaskResult, CustomResult, DetailedTask, GetTaskResult,
    ServerCapabilities, ServerConfig, ServerResult, Task, TaskPayload, TaskStatus,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, Service};
use serde_json::{Value, json};

/// A CallToolResult with members no MCP version defines, on the result and on a content item.
fn unknown(text: String) -> Value {
    json!({
        "content": [{"type": "text", "text": text, "x-item": {"kept": true}}],
        "x-result": [1, 2, 3],
        "_meta": {"app/k": "v"}
    })
}

fn big_text() -> String {
    let rows: Vec<Value> = (0..2_000)
        .map(|i| json!({"id": i, "v": format!("value {i}")}))
        .collect();
    Value::from(rows).to_string()
}

struct Handmade;

impl Service<RoleServer> for Handmade {
    async fn handle_request(
        &self,
        request: ClientRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        Ok(match request {
            ClientRequest::InitializeRequest(_) => ServerResult::InitializeResult(
                ServerConfig::new(ServerCapabilities::builder().enable_tools().build()),
            ),
            ClientRequest::CallToolRequest(call) => match call.params.name.as_ref() {
                "small" => ServerResult::CustomResult(CustomResult(unknown("small".into()))),
                "big" => ServerResult::CustomResult(CustomResult(unknown(big_text()))),
                _ => ServerResult::CreateTaskResult(CreateTaskResult::new(Task::new(
                    "task-1",
                    TaskStatus::Working,
                    "2026-01-01T00:00:00Z",
                    "2026-01-01T00:00:00Z",
                ))),
            },
            ClientRequest::GetTaskRequest(_) => {
                let Value::Object(payload) = unknown(big_text()) else {
                    unreachable!()
                };
                let task = Task::new(
                    "task-1",
                    TaskStatus::Completed,
                    "2026-01-01T00:00:00Z",
                    "2026-01-01T00:00:01Z",
                );
                ServerResult::GetTaskResult(GetTaskResult::new(DetailedTask::new(
                    task,
                    TaskPayload::Completed { result: payload },
                )))
            }
            ClientRequest::PingRequest(_) => ServerResult::empty(()),
            _ => return Err(ErrorData::method_not_found::<rmcp::model::PingRequestMethod>()),
        })
    }

    async fn handle_notification(
        &self,
        _notification: ClientNotification,
        _context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::test]
async fn unknown_members_of_a_small_result_are_kept() {
    let mut raw = Raw::connect(budgeted(Handmade)).await;
    let got = raw.call("small", json!({})).await;
    assert_eq!(got, unknown("small".into()));
}

#[tokio::test]
async fn unknown_members_of_a_paged_result_are_kept() {
    let mut raw = Raw::connect(budgeted(Handmade)).await;
    let got = raw.call("big", json!({})).await;
    assert!(visible_tokens(&got) <= BUDGET);
    assert!(meta_item(&got).is_some_and(|m| m["next_cursor"].is_string()));
    assert_eq!(got["x-result"], json!([1, 2, 3]));
    assert_eq!(got["content"][0]["x-item"], json!({"kept": true}));
    assert_eq!(got["_meta"]["app/k"], "v");
}

#[tokio::test]
async fn a_task_handle_passes_and_its_completed_payload_is_shaped() {
    let mut raw = Raw::connect(budgeted(Handmade)).await;
    let handle = raw.call("slow", json!({})).await;
    assert_eq!(handle["taskId"], "task-1");
    assert_eq!(handle["resultType"], "task");
    let got = raw.request("tasks/get", json!({"taskId": "task-1"})).await;
    let payload = &got["result"]["result"];
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert!(
        visible_tokens(payload) <= BUDGET,
        "{} tokens",
        visible_tokens(payload)
    );
    let meta = meta_item(payload).expect("the payload is paged");
    let cursor = meta["next_cursor"].as_str().expect("a cursor");
    let next = raw.call("read_more", json!({"cursor": cursor})).await;
    assert!(next.get("isError").is_none(), "{next}");
    assert!(visible_tokens(&next) <= BUDGET);
}

#[tokio::test]
async fn ping_reaches_the_inner_service() {
    let mut raw = Raw::connect(budgeted(Handmade)).await;
    let pong = raw.request("ping", json!({})).await;
    assert_eq!(pong["result"], json!({}), "{pong}");
}
