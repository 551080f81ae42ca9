//! What a POSTed message is (request, notification, response), the few fields routing needs,
//! and the JSON-RPC error bodies `serve` answers with.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

/// Versions negotiated by `initialize` (2024-11-05 … 2025-11-25).
pub(crate) const HANDSHAKE_VERSIONS: &[&str] =
    &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Stateless versions (per-request `_meta`, no session): 2026-07-28.
pub(crate) const MODERN_VERSIONS: &[&str] = &["2026-07-28"];

/// JSON-RPC: the body is not JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: not a valid request object.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// What the relay answers when the upstream server is gone (relay `reply::CONNECTION_CLOSED`).
pub(crate) const CONNECTION_CLOSED: i64 = -32000;
/// 2026-07-28 "Server Validation": headers and body disagree, or a required header is missing.
pub(crate) const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: `UnsupportedProtocolVersionError`.
pub(crate) const UNSUPPORTED_VERSION: i64 = -32022;

/// A POSTed JSON-RPC message, as far as routing needs it.
#[derive(Debug)]
pub(crate) struct Incoming {
    /// The raw `id` (its spelling, for answers) when present and not `null`.
    pub(crate) id: Option<Box<RawValue>>,
    /// `method`, for requests and notifications.
    pub(crate) method: Option<String>,
    /// What it is.
    pub(crate) kind: Kind,
    /// `params._meta.progressToken`, raw.
    pub(crate) progress_token: Option<Box<RawValue>>,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]` (2026-07-28).
    pub(crate) meta_version: Option<String>,
    /// `params.name` (tools/call, prompts/get) or `params.uri` (resources/read), when a string.
    pub(crate) name: Option<String>,
}

/// The three kinds of JSON-RPC message a client may POST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Request,
    Notification,
    Response,
}

#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(default)]
    result: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Deserialize, Default)]
struct Params {
    #[serde(rename = "_meta", default)]
    meta: Option<Meta>,
    #[serde(default)]
    name: Option<serde_json::Value>,
    #[serde(default)]
    uri: Option<serde_json::Value>,
}

#[derive(Deserialize, Default)]
struct Meta {
    #[serde(rename = "progressToken", default)]
    progress_token: Option<Box<RawValue>>,
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
    protocol_version: Option<serde_json::Value>,
}

/// Why a body is refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not JSON (message for the client).
    NotJson(String),
    /// A JSON array: batches are not accepted.
    Batch,
    /// JSON, but not a request, notification or response.
    NotMessage,
}

impl Incoming {
    /// Reads a POST body.
    ///
    /// # Errors
    /// [`Refused`] when it is not one JSON-RPC message.
    pub(crate) fn parse(body: &[u8]) -> Result<Incoming, Refused> {
        let start = body.iter().position(|b| !b.is_ascii_whitespace());
        if start.is_some_and(|i| body[i] == b'[') {
            return Err(Refused::Batch);
        }
        let wire: Wire<'_> =
            serde_json::from_slice(body).map_err(|e| Refused::NotJson(e.to_string()))?;
        let id = wire
            .id
            .filter(|raw| raw.get() != "null")
            .map(ToOwned::to_owned);
        let kind = match (&wire.method, &id) {
            (Some(_), Some(_)) => Kind::Request,
            (Some(_), None) => Kind::Notification,
            (None, Some(_)) if wire.result.is_some() || wire.error.is_some() => Kind::Response,
            _ => return Err(Refused::NotMessage),
        };
        // Params that are not an object (or not readable) carry nothing routing needs.
        let params: Params = wire
            .params
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_default();
        let meta = params.meta.unwrap_or_default();
        let text = |v: Option<serde_json::Value>| match v {
            Some(serde_json::Value::String(s)) => Some(s),
            _ => None,
        };
        Ok(Incoming {
            id,
            method: wire.method,
            kind,
            progress_token: meta.progress_token,
            meta_version: text(meta.protocol_version),
            name: text(params.name).or_else(|| text(params.uri)),
        })
    }

    /// An `initialize` request.
    pub(crate) fn is_initialize(&self) -> bool {
        self.kind == Kind::Request && self.method.as_deref() == Some("initialize")
    }
}

/// The body as one line for the relay: newlines (and carriage returns) become spaces. In
/// valid JSON they can only be whitespace between tokens, so the message is unchanged.
pub(crate) fn one_line(body: &[u8]) -> Vec<u8> {
    let mut line: Vec<u8> = body
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect();
    line.push(b'\n');
    line
}

/// `{"jsonrpc":"2.0","id":<id or null>,"error":{"code":…,"message":…[,"data":…]}}`.
pub(crate) fn error_body(
    id: Option<&RawValue>,
    code: i64,
    message: &str,
    data: Option<serde_json::Value>,
) -> String {
    let mut error = serde_json::json!({ "code": code, "message": message });
    if let (Some(data), Some(obj)) = (data, error.as_object_mut()) {
        obj.insert("data".into(), data);
    }
    let id = id.map_or("null", RawValue::get);
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#)
}

/// `notifications/cancelled` for request `id` (2026-07-28 stdio: how a stateless request is
/// cancelled upstream), as one line.
pub(crate) fn cancelled_line(id: &RawValue, reason: &str) -> Vec<u8> {
    let reason = serde_json::Value::String(reason.to_owned());
    let id = id.get();
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":{reason}}}}}"#
    )
    .into_bytes()
    .into_iter()
    .chain(std::iter::once(b'\n'))
    .collect()
}

/// Decodes the 2026-07-28 header sentinel `=?base64?…?=` ("Value Encoding"); other values as
/// they are. `None` for a sentinel that is not base64 of UTF-8.
pub(crate) fn header_value(raw: &str) -> Option<String> {
    use base64::Engine as _;
    match raw
        .strip_prefix("=?base64?")
        .and_then(|s| s.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|b| String::from_utf8(b).ok()),
        None => Some(raw.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_messages() {
        let req = Incoming::parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p1"}}}"#).unwrap();
        assert_eq!(req.kind, Kind::Request);
        assert_eq!(req.id.as_deref().map(RawValue::get), Some("7"));
        assert_eq!(
            req.progress_token.as_deref().map(RawValue::get),
            Some(r#""p1""#)
        );
        assert_eq!(req.name.as_deref(), Some("x"));
        let note =
            Incoming::parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert_eq!(note.kind, Kind::Notification);
        let resp = Incoming::parse(b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\n\"result\":{}}").unwrap();
        assert_eq!(resp.kind, Kind::Response);
        assert_eq!(Incoming::parse(b" [1]").unwrap_err(), Refused::Batch);
        assert_eq!(
            Incoming::parse(br#"{"id":1}"#).unwrap_err(),
            Refused::NotMessage
        );
        assert!(matches!(Incoming::parse(b"{"), Err(Refused::NotJson(_))));
        // A null id is no id: a notification.
        let null = Incoming::parse(br#"{"jsonrpc":"2.0","id":null,"method":"m"}"#).unwrap();
        assert_eq!(null.kind, Kind::Notification);
    }

    #[test]
    fn one_line_keeps_the_message() {
        let body = b"{\r\n  \"id\": 1,\n  \"method\": \"a\\nb\"\n}";
        let line = one_line(body);
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let a: serde_json::Value = serde_json::from_slice(body).unwrap();
        let b: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn error_bodies_keep_the_id_spelling() {
        let id = RawValue::from_string("1.50".into()).unwrap();
        assert_eq!(
            error_body(Some(&id), -32000, "gone", None),
            r#"{"jsonrpc":"2.0","id":1.50,"error":{"code":-32000,"message":"gone"}}"#
        );
        assert_eq!(
            error_body(
                None,
                -32022,
                "v",
                Some(serde_json::json!({"supported":["2026-07-28"]}))
            ),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32022,"message":"v","data":{"supported":["2026-07-28"]}}}"#
        );
    }

    #[test]
    fn header_sentinels_decode() {
        // The spec's table ("Value Encoding").
        assert_eq!(
            header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(header_value("us-west1").as_deref(), Some("us-west1"));
        assert_eq!(header_value("=?base64?!!?="), None);
    }
}
