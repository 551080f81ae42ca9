//! A typed rmcp server (`#[tool]` macros) behind the layer, driven by rmcp's own client over a
//! duplex pipe: tools/list, page 1 within the budget, read_more to the end, small results
//! unchanged, `_meta`/annotations/structuredContent kept, other requests forwarded,
//! query_response on the jq runner given (in process, or the server's own).

#[path = "common.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{BUDGET, budgeted, connect, meta_item, texts, visible_tokens};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ListResourcesResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};

/// 3,000 rows, ~60,000 tokens as compact JSON.
fn rows() -> Value {
    (0..3_000u64)
        .map(|i| json!({"id": i, "name": format!("item {i}"), "tags": ["a", "b"], "qty": i % 13}))
        .collect()
}

/// A result carrying what rmcp's model keeps beyond text: `_meta` on the result and on an
/// item, annotations, structuredContent. (The text is not the structuredContent's JSON: a
/// twin of a tool that declares no outputSchema is dropped by the engine, as the proxy does.)
fn rich() -> CallToolResult {
    serde_json::from_value(json!({
        "content": [{"type": "text", "text": "all good",
                     "_meta": {"app/item": 1}, "annotations": {"audience": ["user"], "priority": 0.5}}],
        "structuredContent": {"ok": true},
        "isError": false,
        "_meta": {"app/trace": "t-1"}
    }))
    .expect("a CallToolResult")
}

#[derive(Clone)]
#[allow(dead_code, reason = "the tool_handler macro reads tool_router")]
struct Shop {
    tool_router: ToolRouter<Self>,
    resources_listed: Arc<AtomicUsize>,
}

#[tool_router]
impl Shop {
    #[tool(description = "Every row")]
    fn orders(&self) -> String {
        serde_json::to_string_pretty(&rows()).unwrap_or_default()
    }

    #[tool(description = "A small text")]
    fn hello(&self) -> String {
        "hello, world".to_owned()
    }

    #[tool(description = "A small result with _meta, annotations and structuredContent")]
    fn rich(&self) -> CallToolResult {
        rich()
    }

    #[tool(description = "The rows, with _meta and annotations")]
    fn rich_big(&self) -> CallToolResult {
        let mut r = rich();
        r.content = serde_json::from_value(json!([{"type": "text", "text": rows().to_string(),
            "annotations": {"priority": 0.25}}]))
        .expect("content");
        r.structured_content = None;
        r
    }
}

#[tool_handler]
impl ServerHandler for Shop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.resources_listed.fetch_add(1, Ordering::SeqCst);
        Ok(serde_json::from_value(
            json!({"resources": [{"uri": "shop://orders", "name": "orders"}]}),
        )
        .expect("a ListResourcesResult"))
    }
}

fn shop() -> (Shop, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    (
        Shop {
            tool_router: Shop::tool_router(),
            resources_listed: Arc::clone(&count),
        },
        count,
    )
}

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    name: &str,
    args: Value,
) -> Value {
    let mut params = CallToolRequestParams::new(name.to_owned());
    params.arguments = args.as_object().cloned();
    let result = client.call_tool(params).await.expect("tools/call");
    serde_json::to_value(result).expect("JSON")
}

#[tokio::test]
async fn tools_list_shows_the_tools_and_read_more_and_query_response() {
    let client = connect(budgeted(shop().0)).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for want in ["orders", "hello", "rich", "read_more", "query_response"] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let read_more = tools
        .iter()
        .find(|t| t.name == "read_more")
        .expect("read_more");
    assert!(
        read_more
            .input_schema
            .get("properties")
            .is_some_and(|p| p.get("cursor").is_some())
    );
}

#[tokio::test]
async fn big_result_pages_within_the_budget_and_read_more_reassembles_it() {
    let client = connect(budgeted(shop().0)).await;
    client.list_all_tools().await.expect("tools/list");
    let mut page = call(&client, "orders", json!({})).await;
    let mut pages = 0;
    let mut rows_seen: Vec<Value> = Vec::new();
    let mut page1_tokens = 0;
    loop {
        pages += 1;
        let used = visible_tokens(&page);
        assert!(used <= BUDGET, "page {pages}: {used} tokens > {BUDGET}");
        if pages == 1 {
            page1_tokens = used;
        }
        let body: Value = serde_json::from_str(&texts(&page)[0]).expect("each page is JSON");
        rows_seen.extend(
            body.as_array()
                .expect("a page of the array")
                .iter()
                .cloned(),
        );
        let meta = meta_item(&page).expect("a meta item on every page of a paged result");
        let position = &page["_meta"]["mcp-budget/page"];
        assert_eq!(position["page"], json!(pages - 1));
        assert_eq!(
            position["next_cursor"],
            meta.get("next_cursor").cloned().unwrap_or(Value::Null)
        );
        let Some(cursor) = meta["next_cursor"].as_str() else {
            break;
        };
        assert!(
            meta["hint"]
                .as_str()
                .is_some_and(|h| h.contains("read_more"))
        );
        page = call(&client, "read_more", json!({"cursor": cursor})).await;
        assert!(pages < 500, "cursors do not terminate");
    }
    assert!(pages > 10, "only {pages} pages");
    assert_eq!(
        Value::from(rows_seen),
        rows(),
        "the pages put together are the rows"
    );
    println!("orders: page 1 {page1_tokens} tokens of {BUDGET}; {pages} pages");
}

#[tokio::test]
async fn a_small_result_passes_unchanged() {
    let client = connect(budgeted(shop().0)).await;
    let got = call(&client, "hello", json!({})).await;
    assert_eq!(
        got["content"],
        json!([{"type": "text", "text": "hello, world"}])
    );
    assert!(got.get("_meta").is_none());
}

#[tokio::test]
async fn meta_annotations_and_structured_content_are_kept() {
    let client = connect(budgeted(shop().0)).await;
    client.list_all_tools().await.expect("tools/list");
    let got = call(&client, "rich", json!({})).await;
    let mut want = serde_json::to_value(rich()).expect("JSON");
    // rmcp's client fills `resultType` on its side; compare what the server wrote.
    if let (Some(t), Some(w)) = (got.get("resultType"), want.as_object_mut()) {
        w.insert("resultType".into(), t.clone());
    }
    assert_eq!(got, want);

    let big = call(&client, "rich_big", json!({})).await;
    assert_eq!(
        big["_meta"]["app/trace"], "t-1",
        "the result's own _meta beside the page's"
    );
    assert!(big["_meta"]["mcp-budget/page"].is_object());
    assert_eq!(big["content"][0]["annotations"], json!({"priority": 0.25}));
    assert!(visible_tokens(&big) <= BUDGET);
}

#[tokio::test]
async fn other_requests_reach_the_inner_service() {
    let (server, listed) = shop();
    let client = connect(budgeted(server)).await;
    let resources = client.list_resources(None).await.expect("resources/list");
    assert_eq!(resources.resources.len(), 1);
    assert_eq!(resources.resources[0].uri, "shop://orders");
    assert_eq!(listed.load(Ordering::SeqCst), 1);
    client
        .peer()
        .send_request(rmcp::model::ClientRequest::PingRequest(Default::default()))
        .await
        .expect("ping");
    assert!(
        client
            .peer_info()
            .is_some_and(|i| i.capabilities.tools.is_some())
    );
}

#[tokio::test]
async fn a_bad_cursor_is_an_error_result_not_a_crash() {
    let client = connect(budgeted(shop().0)).await;
    let got = call(&client, "read_more", json!({"cursor": "nope"})).await;
    assert_eq!(got["isError"], true);
    let text: Value = serde_json::from_str(&texts(&got)[0]).expect("JSON");
    assert_eq!(text["error"], "cursor_invalid");
    // The server still answers.
    assert_eq!(
        call(&client, "hello", json!({})).await["content"][0]["text"],
        "hello, world"
    );
}

/// A `JqRunner` of the test's own: counts its runs and answers `length` itself.
#[derive(Debug, Default)]
struct Counting {
    runs: AtomicUsize,
}

impl mcp_budget_rmcp::JqRunner for Counting {
    fn run(&self, filter: &str, input: &str) -> Result<Vec<Value>, mcp_budget_rmcp::JqFailure> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        match (filter, serde_json::from_str::<Value>(input)) {
            ("length", Ok(Value::Array(a))) => Ok(vec![json!(a.len())]),
            _ => Err(mcp_budget_rmcp::JqFailure::new(format!(
                "this runner knows `length` only, not {filter:?}"
            ))),
        }
    }
}

/// The response id of a paged result.
fn response_id(page: &Value) -> String {
    meta_item(page).expect("paged")["response_id"]
        .as_str()
        .expect("response_id")
        .to_owned()
}

#[tokio::test]
async fn query_response_runs_on_the_jq_runner_given_in_process_or_the_servers_own() {
    // In process: no worker executable at all.
    let server = mcp_budget_rmcp::Budget::new()
        .max_tokens(BUDGET)
        .jq(Arc::new(mcp_budget_rmcp::InProcessJq::default()))
        .wrap(shop().0)
        .expect("settings");
    let client = connect(server).await;
    let first = call(&client, "orders", json!({})).await;
    let id = response_id(&first);
    let out = call(
        &client,
        "query_response",
        json!({"response_id": id, "query": "map(select(.qty == 12)) | length"}),
    )
    .await;
    assert_eq!(texts(&out), vec![(3_000 / 13).to_string()], "{out}");
    let bad = call(
        &client,
        "query_response",
        json!({"response_id": id, "query": "map("}),
    )
    .await;
    assert_eq!(bad["isError"], json!(true), "{bad}");
    assert!(texts(&bad)[0].contains("query_failed"), "{bad}");

    // The server's own runner: it gets the filter and the cached rows, its failure is the
    // model's message.
    let runner = Arc::new(Counting::default());
    let server = mcp_budget_rmcp::Budget::new()
        .max_tokens(BUDGET)
        .jq(Arc::clone(&runner) as Arc<dyn mcp_budget_rmcp::JqRunner>)
        .wrap(shop().0)
        .expect("settings");
    let client = connect(server).await;
    let id = response_id(&call(&client, "orders", json!({})).await);
    let out = call(
        &client,
        "query_response",
        json!({"response_id": id, "query": "length"}),
    )
    .await;
    assert_eq!(texts(&out), vec!["3000".to_owned()], "{out}");
    let refused = call(
        &client,
        "query_response",
        json!({"response_id": id, "query": ".[0]"}),
    )
    .await;
    assert!(
        texts(&refused)[0].contains("knows `length` only"),
        "{refused}"
    );
    assert_eq!(runner.runs.load(Ordering::SeqCst), 2);
}
