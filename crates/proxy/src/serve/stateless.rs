//! Stateless (2026-07-28) requests: a POST without a session whose `MCP-Protocol-Version` is
//! a stateless version. Its headers are checked against its body (2026-07-28 "Streamable
//! HTTP", "Server Validation"), then an idle worker of the principal (or a new one) carries it.

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::envelope::{self, HEADER_MISMATCH, INVALID_REQUEST, Incoming, Kind, MODERN_VERSIONS};
use super::principal::Principal;
use super::registry::Registry;
use super::respond::{Accepts, deliver, rpc_error, start_failed, unsupported_version};

const VERSION_HEADER: &str = "mcp-protocol-version";

/// A 2026-07-28 request without a session: headers checked against the body, then carried by
/// an idle worker of `principal` (or a new one) from `registry`, which it goes back to once
/// answered.
pub(super) async fn post(
    registry: &Arc<Registry>,
    principal: &Principal,
    headers: &HeaderMap,
    msg: Incoming,
    body: &[u8],
    accepts: Accepts,
) -> Response {
    let id = msg.id.as_deref();
    let mismatch = |what: String| {
        rpc_error(
            StatusCode::BAD_REQUEST,
            id,
            HEADER_MISMATCH,
            &format!("Header mismatch: {what}"),
        )
    };
    let version = headers
        .get(VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !MODERN_VERSIONS.contains(&version) {
        return unsupported_version(id, version);
    }
    match msg.kind {
        // 2026-07-28 defines no client notifications over HTTP: accepted, not forwarded.
        Kind::Notification => return StatusCode::ACCEPTED.into_response(),
        Kind::Response => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                None,
                INVALID_REQUEST,
                "a stateless (2026-07-28) client sends no JSON-RPC responses",
            );
        }
        Kind::Request => {}
    }
    if msg.meta_version.as_deref() != Some(version) {
        return mismatch(format!(
            "MCP-Protocol-Version {version:?} does not match _meta io.modelcontextprotocol/protocolVersion {:?}",
            msg.meta_version.as_deref().unwrap_or("(missing)")
        ));
    }
    let method = headers.get("mcp-method").and_then(|v| v.to_str().ok());
    if method != msg.method.as_deref() {
        return mismatch(format!(
            "Mcp-Method {:?} does not match the body's method {:?}",
            method.unwrap_or("(missing)"),
            msg.method.as_deref().unwrap_or_default()
        ));
    }
    let named = matches!(
        msg.method.as_deref(),
        Some("tools/call" | "resources/read" | "prompts/get")
    );
    if named {
        let name = headers
            .get("mcp-name")
            .and_then(|v| v.to_str().ok())
            .and_then(envelope::header_value);
        if name.is_none() || name != msg.name {
            return mismatch(format!(
                "Mcp-Name {:?} does not match the body's {:?}",
                name.as_deref().unwrap_or("(missing)"),
                msg.name.as_deref().unwrap_or_default()
            ));
        }
    }
    let worker = match registry.checkout(principal) {
        Ok(w) => w,
        Err(e) => return start_failed(id, e),
    };
    deliver(
        worker,
        msg,
        body,
        accepts,
        None,
        Some(Arc::clone(registry)),
        false,
    )
    .await
}
