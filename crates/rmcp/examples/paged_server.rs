//! An rmcp stdio server with one big tool, `orders` (4,000 JSON rows, about 100,000 tokens),
//! behind the budget layer: the client gets page 1 within 10,000 tokens and a `read_more`
//! cursor, and `query_response` selects from the cached rows.
//!
//!     cargo build -p mcp-budget-rmcp --example paged_server
//!     target/debug/examples/paged_server    # speaks MCP on stdin/stdout
use rmcp::{ServiceExt, tool, tool_router};

#[derive(Clone)]
struct Shop;

#[tool_router(server_handler)]
impl Shop {
    #[tool(description = "Every order of the shop, as a JSON array")]
    fn orders(&self) -> String {
        let row = |i: u64| serde_json::json!({"id": i, "sku": format!("sku-{:05}", i * 7919 % 100_000), "qty": i % 17, "city": (["Oslo", "Lima", "Pune"][i as usize % 3]), "cents": i * 37 % 10_000});
        serde_json::Value::from_iter((0..4_000).map(row)).to_string()
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // query_response's jq worker is this same executable: run it when asked, before anything else.
    mcp_budget_rmcp::run_jq_worker_if_asked();
    let server = mcp_budget_rmcp::Budget::new().wrap(Shop)?;
    let running = server.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
