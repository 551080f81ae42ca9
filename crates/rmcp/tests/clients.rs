//! What clients that read a result their own way get through the layer, and a call that never
//! answers: a client that hands its model only `JSON.stringify(structuredContent)` (Claude
//! Code, VS Code, Codex) reads a page within the budget that names the cursor, and following
//! that cursor gives back the whole text; a tool call that never answers holds up no other
//! request.

#[path = "common.rs"]
mod common;

use std::time::Duration;

use common::{BUDGET, Raw, budgeted, meta_item, texts};
use mcp_budget_core::tokens::Encoding;
use mcp_budget_core::wire::STRUCTURED_META_KEY;
use rmcp::model::{
    ClientNotification, ClientRequest, CustomResult, ListToolsResult, ServerCapabilities,
    ServerConfig, ServerResult,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, Service};
use serde_json::json;

/// A git log as plain text: ~30,000 tokens (cl100k_base), lines ending in `\n`.
fn log_text() -> String {
    (0..1_500)
        .map(|i| {
            format!(
                "commit {i:040x}\nAuthor: Dev {i} <dev{i}@example.com>\n\n    Change number {i}\n\n"
            )
        })
        .collect()
}

/// A server whose `log` tool declares an `outputSchema` and answers with the text and its
/// structuredContent twin `{"content": <the text>}` (server-filesystem's `directory_tree`
/// shape); its `hang` tool never answers.
struct Twins;

impl Service<RoleServer> for Twins {
    async fn handle_request(
        &self,
        request: ClientRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        Ok(match request {
            ClientRequest::InitializeRequest(_) => ServerResult::InitializeResult(self.get_info()),
            ClientRequest::ListToolsRequest(_) => {
                let list: ListToolsResult = serde_json::from_value(json!({"tools": [
                    {"name": "log", "inputSchema": {"type": "object"},
                     "outputSchema": {"type": "object", "required": ["content"],
                                      "properties": {"content": {"type": "string"}}}},
                    {"name": "hang", "inputSchema": {"type": "object"}}
                ]}))
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                ServerResult::ListToolsResult(list)
            }
            ClientRequest::CallToolRequest(call) if call.params.name == "hang" => {
                std::future::pending::<()>().await;
                unreachable!("pending never resolves")
            }
            ClientRequest::CallToolRequest(_) => {
                let text = log_text();
                ServerResult::CustomResult(CustomResult(json!({
                    "content": [{"type": "text", "text": text}],
                    "structuredContent": {"content": text}
                })))
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

/// The model of a structuredContent-only client reads `JSON.stringify(structuredContent)` of
/// page 1: within the budget, and the meta member in it names the cursor. Later pages carry
/// no structuredContent, so the same client shows their text; page 1's `content` member and
/// the later pages' bodies, in order, are the whole text byte for byte.
#[tokio::test]
async fn a_structured_content_only_client_reads_within_budget_and_follows_the_cursor() {
    let mut raw = Raw::connect(budgeted(Twins)).await;
    let listed = raw.request("tools/list", json!({})).await;
    let log = &listed["result"]["tools"][0];
    assert!(
        log["outputSchema"]["properties"][STRUCTURED_META_KEY].is_object(),
        "the listed outputSchema declares the meta member: {log}"
    );

    let page1 = raw.call("log", json!({})).await;
    let sc = &page1["structuredContent"];
    let seen = sc.to_string();
    let tokens = Encoding::Cl100kBase.count(&seen);
    assert!(tokens <= BUDGET, "structuredContent alone: {tokens} tokens");
    let meta = &sc[STRUCTURED_META_KEY];
    let mut cursor = meta["next_cursor"]
        .as_str()
        .unwrap_or_else(|| panic!("no cursor in structuredContent: {meta}"))
        .to_owned();
    let mut whole = sc["content"]
        .as_str()
        .expect("the twin stays a string")
        .to_owned();

    for _ in 0..200 {
        let next = raw.call("read_more", json!({"cursor": cursor})).await;
        assert!(next.get("isError").is_none(), "{next}");
        assert!(next.get("structuredContent").is_none(), "{next}");
        let shown: usize = texts(&next)
            .iter()
            .map(|t| Encoding::Cl100kBase.count(t))
            .sum();
        assert!(shown <= BUDGET, "read_more page: {shown} tokens");
        whole.push_str(&texts(&next)[0]);
        match meta_item(&next).and_then(|m| m["next_cursor"].as_str().map(str::to_owned)) {
            Some(c) => cursor = c,
            None => {
                assert_eq!(whole, log_text(), "the pages reassemble the text");
                return;
            }
        }
    }
    panic!("no last page after 200 reads");
}

/// A call whose tool never answers leaves the layer free: a later call and its `read_more`
/// are answered while the first is still pending.
#[tokio::test]
async fn a_call_that_never_answers_holds_up_no_other_request() {
    let mut raw = Raw::connect(budgeted(Twins)).await;
    raw.send(
        json!({"jsonrpc": "2.0", "id": "stuck", "method": "tools/call",
                    "params": {"name": "hang", "arguments": {}}}),
    )
    .await;
    let answered = tokio::time::timeout(Duration::from_secs(30), async {
        let page1 = raw.call("log", json!({})).await;
        let cursor = meta_item(&page1)
            .and_then(|m| m["next_cursor"].as_str().map(str::to_owned))
            .expect("page 1 is paged");
        raw.call("read_more", json!({"cursor": cursor})).await
    })
    .await
    .expect("answered while the other call hangs");
    assert!(answered.get("isError").is_none(), "{answered}");
    assert!(!texts(&answered).is_empty());
}
