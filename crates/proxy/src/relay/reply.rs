//! The few lines the relay writes itself: answers in the server's place, and shaped responses
//! spliced into the server's own line.

use std::ops::Range;

/// JSON-RPC 2.0: invalid JSON was received.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0: the JSON sent is not a valid request object.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC 2.0: internal error (here: the server's answer could not be relayed).
pub(crate) const INTERNAL_ERROR: i64 = -32603;
/// Implementation-defined server error; the MCP SDKs use -32001 for "request timed out".
pub(crate) const REQUEST_TIMEOUT: i64 = -32001;
/// Implementation-defined server error; the MCP SDKs use -32000 for "connection closed".
pub(crate) const CONNECTION_CLOSED: i64 = -32000;

/// `{"jsonrpc":"2.0","id":<raw_id>,"error":{"code":<code>,"message":<message>}}`.
///
/// `raw_id` is the id's JSON text exactly as the client sent it.
pub(crate) fn error_line(raw_id: &[u8], code: i64, message: &str) -> Vec<u8> {
    let message = serde_json::Value::from(message).to_string();
    let mut line = Vec::with_capacity(raw_id.len() + message.len() + 64);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    line.extend_from_slice(raw_id);
    line.extend_from_slice(br#","error":{"code":"#);
    line.extend_from_slice(code.to_string().as_bytes());
    line.extend_from_slice(br#","message":"#);
    line.extend_from_slice(message.as_bytes());
    line.extend_from_slice(b"}}");
    line
}

/// `{"jsonrpc":"2.0","id":<raw_id>,"result":<result>}`, the result written compactly.
///
/// # Errors
///
/// serde_json's error if the value cannot be written (not for values built by serde_json).
pub(crate) fn result_line(
    raw_id: &[u8],
    result: &serde_json::Value,
) -> serde_json::Result<Vec<u8>> {
    let mut line = Vec::with_capacity(raw_id.len() + 64);
    line.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    line.extend_from_slice(raw_id);
    line.extend_from_slice(br#","result":"#);
    serde_json::to_writer(&mut line, result)?;
    line.push(b'}');
    Ok(line)
}

/// The line with the bytes in `span` replaced by `value` written compactly; every other byte
/// of the server's line (the id's spelling, unknown members, their order) is kept.
///
/// # Errors
///
/// serde_json's error if the value cannot be written.
pub(crate) fn splice(
    line: &[u8],
    span: Range<usize>,
    value: &serde_json::Value,
) -> serde_json::Result<Vec<u8>> {
    let (head, tail) = (&line[..span.start], &line[span.end..]);
    let mut out = Vec::with_capacity(head.len() + tail.len() + 256);
    out.extend_from_slice(head);
    serde_json::to_writer(&mut out, value)?;
    out.extend_from_slice(tail);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines_are_json_rpc_with_the_raw_id() {
        let line = error_line(b"\"a\\u0062\"", PARSE_ERROR, "bad \"line\"");
        assert_eq!(
            String::from_utf8_lossy(&line),
            r#"{"jsonrpc":"2.0","id":"a\u0062","error":{"code":-32700,"message":"bad \"line\""}}"#
        );
        let v: serde_json::Value = serde_json::from_slice(&line).unwrap_or_default();
        assert_eq!(v["error"]["code"], -32700);
    }

    #[test]
    fn splicing_keeps_every_other_byte() {
        let line = br#"{"id": 1.0 ,"result":{"big":[1,2,3]},"z":true}"#;
        let start = 21;
        let end = start + br#"{"big":[1,2,3]}"#.len();
        let out = splice(line, start..end, &serde_json::json!({"small":1}));
        assert_eq!(
            out.ok().as_deref(),
            Some(&br#"{"id": 1.0 ,"result":{"small":1},"z":true}"#[..])
        );
        let ok = result_line(b"7", &serde_json::json!([]));
        assert_eq!(
            ok.ok().as_deref(),
            Some(&br#"{"jsonrpc":"2.0","id":7,"result":[]}"#[..])
        );
    }
}
