//! What the transport needs to know of a message: of the client's (to choose the headers and
//! answer failures), and of the server's (is it the response that ends an exchange).

use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::super::protocol::STATELESS_SINCE;
use super::super::route::{self, Parsed};
use super::super::scan::Scanner;

/// One client message, as far as the transport cares.
#[derive(Debug, Default)]
pub(super) struct Outgoing {
    /// The raw id of a request (not of a response or a notification).
    pub(super) id: Option<Vec<u8>>,
    /// The method of a request or notification.
    pub(super) method: Option<String>,
    /// `_meta["io.modelcontextprotocol/protocolVersion"]` when it names a stateless version.
    pub(super) stateless_version: Option<String>,
    /// `params.name` (`tools/call`, `prompts/get`) or `params.uri` (`resources/read`).
    pub(super) name: Option<String>,
    /// For `notifications/cancelled`: the [`route::id_key`] of the request it cancels.
    pub(super) cancels: Option<Vec<u8>>,
    /// `params.arguments` of a `tools/call` (for its `Mcp-Param-*` headers).
    pub(super) arguments: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(default, rename = "_meta")]
    meta: Option<Value>,
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    uri: Option<Value>,
    #[serde(default)]
    arguments: Option<Box<RawValue>>,
}

impl Outgoing {
    /// Reads the envelope of a client line; what cannot be read stays `None` (the line is sent
    /// all the same: the server answers what it makes of it).
    pub(super) fn read(line: &[u8]) -> Outgoing {
        let mut masked = None;
        let (parsed, text) = route::parse_lenient(line, &mut masked);
        let Parsed::Message(envelope) = parsed else {
            return Outgoing::default();
        };
        let Some(method) = envelope.method else {
            return Outgoing::default();
        };
        let id = envelope.id.map(|id| route::raw_in(line, text, id).to_vec());
        let mut params = envelope
            .params
            .and_then(|p| serde_json::from_str::<Params>(p.get()).ok());
        let stateless_version = params
            .as_ref()
            .and_then(|p| p.meta.as_ref())
            .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
            .and_then(Value::as_str)
            .filter(|v| *v >= STATELESS_SINCE)
            .map(str::to_owned);
        let cancels = (method == "notifications/cancelled")
            .then(|| route::cancelled_request(envelope.params))
            .flatten()
            .map(|raw| route::id_key(&raw));
        let name = match method.as_ref() {
            "tools/call" | "prompts/get" => params.as_ref().and_then(|p| p.name.as_ref()),
            "resources/read" => params.as_ref().and_then(|p| p.uri.as_ref()),
            _ => None,
        }
        .and_then(Value::as_str)
        .map(str::to_owned);
        let arguments = if method == "tools/call" {
            params.as_mut().and_then(|p| p.arguments.take())
        } else {
            None
        };
        Outgoing {
            id,
            method: Some(method.into_owned()),
            stateless_version,
            name,
            cancels,
            arguments,
        }
    }

    /// Whether this is the `initialize` request.
    pub(super) fn is_initialize(&self) -> bool {
        self.id.is_some() && self.method.as_deref() == Some("initialize")
    }
}

/// A header value for `Mcp-Name` (MCP 2026-07-28, "Value Encoding"): the value itself when it
/// is plain visible ASCII (spaces and tabs allowed inside) and does not look like the sentinel;
/// `=?base64?<Base64 of its UTF-8>?=` otherwise.
pub(super) fn header_safe(value: &str) -> String {
    let plain = value
        .bytes()
        .all(|b| b == b'\t' || (0x20..=0x7e).contains(&b))
        && value.trim_matches([' ', '\t']) == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_owned()
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        format!("=?base64?{encoded}?=")
    }
}

/// Whether a server message is a response (a `result` or `error`, no `method`): the message
/// that ends an exchange. A message longer than [`HEAD_BYTES`] is decided by the top-level
/// keys of its first [`HEAD_BYTES`] when they hold `method` (not a response), or
/// `result`/`error` and no `"method"` follows anywhere (a response). Otherwise: a fast
/// substring search for the keys, and a scan key by key only when `"method"` is there (a
/// quote inside a JSON string is escaped, so only a key or a string value can match), so a
/// 12 MB message is not scanned byte by byte.
pub(super) fn is_response(message: &[u8]) -> bool {
    if let Some(rest) = message.get(HEAD_BYTES..).filter(|r| !r.is_empty()) {
        let head = Scanner::head(message, HEAD_BYTES);
        if head.has_method {
            return false;
        }
        if head.has_outcome && memchr::memmem::find(rest, b"\"method\"").is_none() {
            return true;
        }
    }
    let finder = |key: &[u8]| memchr::memmem::find(message, key).is_some();
    if !finder(b"\"method\"") {
        return finder(b"\"result\"") || finder(b"\"error\"");
    }
    let scan = Scanner::scan(message);
    scan.has_outcome && !scan.has_method
}

/// How many first bytes of a message [`is_response`] reads key by key: 64 KiB.
const HEAD_BYTES: usize = 64 * 1024;

/// What one message of the server is to the exchange that received it ([`classify`]).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Received {
    /// A JSON-RPC message for the client: a request or notification of the server, a batch, or
    /// a response with an id. `response`: it is a response; `answers`: it is the response to
    /// the exchange's request (its id has the same value).
    Message { response: bool, answers: bool },
    /// A response addressed to no request: an `error` or `result` whose `id` is `null` or
    /// absent (keryx#503's `{"error":"Session not found"}`, a JSON-RPC error with `id: null`).
    Stray(Stray),
    /// No JSON-RPC message: JSON of another shape (`json`), or no JSON at all.
    NotJsonRpc { json: bool },
}

/// A response addressed to no request, in the server's words.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Stray {
    /// The code of its error, when the error is an object with an integer `code`.
    pub(super) code: Option<i64>,
    /// Its error's `message` (or the error itself when it is a string), else the start of the
    /// message; at most [`WORDS_BYTES`] bytes.
    pub(super) words: String,
    /// The words say the server does not know the session ([`says_session_gone`]).
    pub(super) session_gone: bool,
}

/// How many bytes of the server's words a [`Stray`] keeps: 300.
const WORDS_BYTES: usize = 300;

/// What `message` (one line, line breaks already made spaces) is to the exchange of the request
/// whose id has the [`route::id_key`] `expected` (`None`: a notification's or response's
/// exchange, or the GET stream).
///
/// A message longer than [`HEAD_BYTES`] is decided, when it can be, by [`classify_head`]
/// (microseconds for a 12 MB response); otherwise the envelope is parsed, which reads every
/// byte (about 10–20 ms per 12 MB): call it off the runtime's threads for a long one.
pub(super) fn classify(message: &[u8], expected: Option<&[u8]>) -> Received {
    if let Some(decided) = classify_head(message, expected) {
        return decided;
    }
    let mut masked = None;
    let (parsed, text) = route::parse_lenient(message, &mut masked);
    let envelope = match parsed {
        Parsed::Message(envelope) => envelope,
        Parsed::Batch => {
            return Received::Message {
                response: false,
                answers: false,
            };
        }
        Parsed::Invalid(_) => return Received::NotJsonRpc { json: true },
        Parsed::NotJson(_) => return Received::NotJsonRpc { json: false },
    };
    if envelope.method.is_some() {
        return Received::Message {
            response: false,
            answers: false,
        };
    }
    if envelope.result.is_none() && envelope.error.is_none() {
        return Received::NotJsonRpc { json: true };
    }
    match envelope.id.filter(|id| id.get() != "null") {
        Some(id) => Received::Message {
            response: true,
            answers: expected == Some(&route::id_key(route::raw_in(message, text, id))[..]),
        },
        None => Received::Stray(stray(envelope.error, message)),
    }
}

/// [`classify`] of a message longer than [`HEAD_BYTES`] by the top-level keys of its first
/// [`HEAD_BYTES`] and its last bytes: a `method` there is a server request or notification; a
/// `result` or `error` with an id (at the start, or at the end as the TypeScript SDK writes
/// it: `scan::tail_id`) that is not `null`, and no `"method"` anywhere after the head,
/// is a response. `None` when that does not decide it.
pub(super) fn classify_head(message: &[u8], expected: Option<&[u8]>) -> Option<Received> {
    let rest = message.get(HEAD_BYTES..).filter(|r| !r.is_empty())?;
    let head = Scanner::head(message, HEAD_BYTES);
    if head.has_method {
        return Some(Received::Message {
            response: false,
            answers: false,
        });
    }
    if !head.has_outcome || memchr::memmem::find(rest, b"\"method\"").is_some() {
        return None;
    }
    let id = head
        .id
        .or_else(|| super::super::scan::tail_id(message))
        .filter(|id| id != b"null")?;
    Some(Received::Message {
        response: true,
        answers: expected == Some(&route::id_key(&id)[..]),
    })
}

/// The [`Stray`] of a response without an id, whose `error` member is `error`.
fn stray(error: Option<&RawValue>, message: &[u8]) -> Stray {
    let error: Option<Value> = error.and_then(|e| serde_json::from_str(e.get()).ok());
    let (code, words) = match &error {
        Some(Value::String(text)) => (None, Some(text.clone())),
        Some(Value::Object(object)) => (
            object.get("code").and_then(Value::as_i64),
            object
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
        ),
        _ => (None, None),
    };
    let words = words.unwrap_or_else(|| String::from_utf8_lossy(message).into_owned());
    let words = shortened(words.split_whitespace().collect::<Vec<_>>().join(" "));
    Stray {
        code,
        session_gone: says_session_gone(&words),
        words,
    }
}

/// `text` cut to at most [`WORDS_BYTES`] bytes, at a character boundary (`…` marks a cut).
fn shortened(mut text: String) -> String {
    if text.len() > WORDS_BYTES {
        let mut end = WORDS_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// Whether a server's words say it does not know the session: they name a session and say it
/// is not found, unknown, expired, invalid, missing or terminated (keryx#503: `Session not
/// found`; the TypeScript SDK: `Session not found`, `No valid session ID provided`; others:
/// `Unknown session`, `Session expired`, `Session terminated`).
pub(super) fn says_session_gone(words: &str) -> bool {
    let words = words.to_ascii_lowercase();
    words.contains("session")
        && [
            "not found",
            "unknown",
            "expired",
            "invalid",
            "no valid",
            "does not exist",
            "terminated",
        ]
        .iter()
        .any(|w| words.contains(w))
}

/// The `protocolVersion` of an `initialize` result, if `message` is one.
pub(super) fn negotiated_version(message: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Response {
        result: InitializeResult,
    }
    #[derive(Deserialize)]
    struct InitializeResult {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    serde_json::from_slice::<Response>(message)
        .ok()
        .map(|r| r.result.protocol_version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stateless_tools_call_gives_its_version_and_name() {
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let m = Outgoing::read(line);
        assert_eq!(m.id.as_deref(), Some(&b"7"[..]));
        assert_eq!(m.method.as_deref(), Some("tools/call"));
        assert_eq!(m.stateless_version.as_deref(), Some("2026-07-28"));
        assert_eq!(m.name.as_deref(), Some("get"));
    }

    #[test]
    fn responses_and_notifications_have_no_request_id() {
        let answer = Outgoing::read(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert!(answer.id.is_none() && answer.method.is_none());
        let note = Outgoing::read(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(note.id.is_none());
        assert_eq!(note.method.as_deref(), Some("notifications/initialized"));
        let old = Outgoing::read(
            br#"{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":"file:///x","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}"#,
        );
        assert_eq!(old.id.as_deref(), Some(&b"\"a\""[..]));
        assert_eq!(old.stateless_version, None);
        assert_eq!(old.name.as_deref(), Some("file:///x"));
    }

    #[test]
    fn a_cancellation_names_the_request_by_its_id_key() {
        let m = Outgoing::read(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1e0}}"#,
        );
        assert_eq!(m.cancels, Some(route::id_key(b"1")));
    }

    #[test]
    fn header_values_follow_the_spec_s_encoding_examples() {
        assert_eq!(header_safe("us-west1"), "us-west1");
        assert_eq!(
            header_safe("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(header_safe(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(header_safe("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            header_safe("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn responses_are_told_from_requests_and_notifications() {
        assert!(is_response(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(is_response(
            br#"{"result":{"content":[{"type":"text","text":"\"method\""}]},"jsonrpc":"2.0","id":1}"#
        ));
        assert!(is_response(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#
        ));
        assert!(!is_response(
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"result":1}}"#
        ));
        assert!(!is_response(
            br#"{"jsonrpc":"2.0","id":5,"method":"roots/list"}"#
        ));
    }

    #[test]
    fn long_messages_are_told_apart_by_their_first_keys_or_else_by_all_of_them() {
        let long = |before: &str, after: &str| {
            let pad = format!("{}\\\"method\\\": ", "x".repeat(HEAD_BYTES));
            format!("{before}{pad}{after}").into_bytes()
        };
        // Decided by the head: `result` first (the TypeScript SDK's order, id last) …
        assert!(is_response(&long(
            r#"{"result":{"content":[{"type":"text","text":""#,
            r#""}]},"jsonrpc":"2.0","id":1}"#
        )));
        // … or `method` first.
        assert!(!is_response(&long(
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":""#,
            r#""}}"#
        )));
        // `result` first and `method` after the head (not a valid message): the whole counts.
        assert!(!is_response(&long(
            r#"{"result":{"content":[{"type":"text","text":""#,
            r#""}]},"method":"notifications/message","jsonrpc":"2.0"}"#
        )));
        // `"method"` as a string value after the head: the whole is scanned, a response.
        assert!(is_response(&long(
            r#"{"result":{"content":[{"type":"text","text":""#,
            r#""}]},"_meta":{"k":"method"},"jsonrpc":"2.0","id":1}"#
        )));
        // The head holds neither: every key counts.
        assert!(!is_response(&long(
            r#"{"params":{"data":""#,
            r#""},"method":"notifications/message","jsonrpc":"2.0"}"#
        )));
        assert!(is_response(&long(
            r#"{"_meta":{"data":""#,
            r#""},"result":{},"jsonrpc":"2.0","id":1}"#
        )));
    }

    #[test]
    fn only_the_response_with_the_request_s_id_answers_it() {
        let one = route::id_key(b"1");
        let expected = Some(&one[..]);
        let message = |response, answers| Received::Message { response, answers };
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":1.0,"result":{}}"#, expected),
            message(true, true)
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":2,"result":{}}"#, expected),
            message(true, false)
        );
        assert_eq!(
            classify(
                br#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#,
                expected
            ),
            message(false, false)
        );
        assert_eq!(
            classify(br#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#, expected),
            message(false, false)
        );
        // keryx#503, and a JSON-RPC error addressed to no request.
        let Received::Stray(keryx) = classify(br#"{"error":"Session not found"}"#, expected) else {
            panic!("a stray answer");
        };
        assert_eq!(
            keryx,
            Stray {
                code: None,
                words: "Session not found".to_owned(),
                session_gone: true
            }
        );
        let Received::Stray(null) = classify(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: body too large"}}"#,
            expected,
        ) else {
            panic!("a stray answer");
        };
        assert_eq!(null.code, Some(-32600));
        assert_eq!(null.words, "Bad Request: body too large");
        assert!(!null.session_gone);
        // JSON that is no JSON-RPC message, and no JSON.
        for json in [
            &br#"{"rows":[1,2,3]}"#[..],
            br#"{"id":1}"#,
            b"[1",
            b"<html>",
        ] {
            assert!(
                matches!(classify(json, expected), Received::NotJsonRpc { .. }),
                "{}",
                String::from_utf8_lossy(json)
            );
        }
        assert_eq!(classify(b"42", None), Received::NotJsonRpc { json: true });
    }

    #[test]
    fn long_messages_are_classified_by_their_ends_when_they_can_be() {
        let pad = "x".repeat(HEAD_BYTES + 10);
        let one = route::id_key(b"7");
        let ts = format!(
            r#"{{"result":{{"content":[{{"type":"text","text":"{pad}"}}]}},"jsonrpc":"2.0","id":7}}"#
        );
        assert_eq!(
            classify_head(ts.as_bytes(), Some(&one)),
            Some(Received::Message {
                response: true,
                answers: true
            })
        );
        // Not decided by its ends: the whole is read.
        let big = format!(r#"{{"rows":"{pad}"}}"#);
        assert_eq!(classify_head(big.as_bytes(), Some(&one)), None);
        assert_eq!(
            classify(big.as_bytes(), Some(&one)),
            Received::NotJsonRpc { json: true }
        );
        let null = format!(r#"{{"error":{{"code":1,"message":"{pad}"}},"id":null}}"#);
        assert!(
            matches!(classify(null.as_bytes(), Some(&one)), Received::Stray(s) if s.words.len() <= WORDS_BYTES + 3)
        );
    }

    #[test]
    fn session_gone_words_are_recognized() {
        for gone in [
            "Session not found",
            "Bad Request: No valid session ID provided",
            "unknown session id",
            "Session expired",
        ] {
            assert!(says_session_gone(gone), "{gone}");
        }
        for other in ["Not found", "Internal error", "Tool not found"] {
            assert!(!says_session_gone(other), "{other}");
        }
    }

    #[test]
    fn the_negotiated_version_is_read_from_initialize_s_result() {
        let line = br#"{"result":{"protocolVersion":"2025-06-18","capabilities":{}},"jsonrpc":"2.0","id":0}"#;
        assert_eq!(negotiated_version(line).as_deref(), Some("2025-06-18"));
        assert_eq!(
            negotiated_version(br#"{"jsonrpc":"2.0","id":0,"error":{}}"#),
            None
        );
    }
}
