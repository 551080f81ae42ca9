//! Routing: what one line is (request, notification, response), and the table of the client's
//! requests that are waiting for the server's answer.
//!
//! Only the envelope is parsed: `id`, `method`, and where `params`, `result` and `error` sit in
//! the line (as borrowed [`RawValue`]s, so nothing is copied or re-serialized). Every other
//! member is left alone; the relay forwards the line's own bytes.
//!
//! Two id spaces share the pipe: the client's requests (answered by the server) and the
//! server's own requests (`roots/list`, `sampling/createMessage`, `elicitation/create`,
//! answered by the client). Only the first kind enters the [`Pending`] table, so a server's
//! request and a client's request with the same id never meet. Answers are matched to requests
//! by the value of the id ([`id_key`]), not by its spelling.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use mcp_budget_core::dialect;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::scan::{Scan, Scanner};

/// The envelope of one JSON-RPC message; members borrow from the line.
#[derive(Debug, Deserialize)]
pub(crate) struct Envelope<'a> {
    /// The id, `Some` even when it is JSON `null`; `None` when absent.
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) id: Option<&'a RawValue>,
    /// The method of a request or notification.
    #[serde(default, borrow)]
    pub(crate) method: Option<Cow<'a, str>>,
    /// The params of a request or notification.
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) params: Option<&'a RawValue>,
    /// The result of a successful response.
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) result: Option<&'a RawValue>,
    /// The error of a failed response.
    #[serde(default, borrow, deserialize_with = "present")]
    pub(crate) error: Option<&'a RawValue>,
}

/// Keeps JSON `null` as `Some(null)`: a member that is present is `Some`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// What one line turned out to be.
#[derive(Debug)]
pub(crate) enum Parsed<'a> {
    /// A JSON object with a well-formed envelope.
    Message(Envelope<'a>),
    /// A JSON array (a JSON-RPC batch, from protocol 2025-03-26): passed through untouched.
    Batch,
    /// Not JSON (-32700); the scan holds the id when one could be recovered.
    NotJson(Scan),
    /// JSON, but not a JSON-RPC message (-32600); the scan holds the id when there was one.
    Invalid(Scan),
}

/// Parses the envelope of one line.
pub(crate) fn parse(line: &[u8]) -> Parsed<'_> {
    match line.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => match serde_json::from_slice::<Envelope<'_>>(line) {
            Ok(envelope) => Parsed::Message(envelope),
            Err(e) if e.is_data() => Parsed::Invalid(Scanner::scan(line)),
            Err(_) => Parsed::NotJson(Scanner::scan(line)),
        },
        Some(b'[') => match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
            Ok(_) => Parsed::Batch,
            Err(_) => Parsed::NotJson(Scan::default()),
        },
        _ => match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
            Ok(_) => Parsed::Invalid(Scan::default()),
            Err(_) => Parsed::NotJson(Scan::default()),
        },
    }
}

/// [`parse`] for the JSON Python servers write: a line that is not JSON to `serde_json` but
/// holds `NaN`, `Infinity` or `-Infinity` literals is read from a copy in which each is masked
/// by a number of the same length ([`dialect::mask_literals`]), kept in `masked`.
///
/// Returns what the line is and the bytes its envelope borrows from (the line or the copy):
/// [`span_in`] takes those bytes, and a span in them is the same span in `line`. The line
/// itself is never changed: the relay forwards its own bytes.
pub(crate) fn parse_lenient<'a>(
    line: &'a [u8],
    masked: &'a mut Option<Vec<u8>>,
) -> (Parsed<'a>, &'a [u8]) {
    match parse(line) {
        Parsed::NotJson(scan) => {
            let mut copy = line.to_vec();
            if dialect::mask_literals(&mut copy) == 0 {
                return (Parsed::NotJson(scan), line);
            }
            let copy: &'a [u8] = masked.insert(copy);
            (parse(copy), copy)
        }
        parsed => (parsed, line),
    }
}

/// The bytes of `part` (borrowed from `text`, as [`parse_lenient`] returns it) in `line`.
pub(crate) fn raw_in<'l>(line: &'l [u8], text: &[u8], part: &'l RawValue) -> &'l [u8] {
    span_in(text, part)
        .and_then(|r| line.get(r))
        .unwrap_or(part.get().as_bytes())
}

/// The key of an id in the [`Pending`] table: ids are matched by value, not by spelling.
///
/// Strings are keyed by their decoded value, so a server that re-encodes `"\u00e9"` as `"é"`
/// still matches; numbers by their exact decimal value ([`number_key`]), so `-0` matches `0`
/// and `1e3` matches `1000.0` (JSON-RPC 2.0: the response's id "MUST be the same as the value
/// of the id member in the Request Object"); `null` and anything else by its spelling. A
/// string never matches a number (`"1"` is not `1`).
pub(crate) fn id_key(raw: &[u8]) -> Vec<u8> {
    if raw.first() == Some(&b'"')
        && let Ok(s) = serde_json::from_slice::<String>(raw)
    {
        let mut key = Vec::with_capacity(s.len() + 1);
        key.push(b's');
        key.extend_from_slice(s.as_bytes());
        return key;
    }
    if let Some(key) = number_key(raw) {
        return key;
    }
    let mut key = Vec::with_capacity(raw.len() + 1);
    key.push(b'v');
    key.extend_from_slice(raw);
    key
}

/// The exact value of a JSON number spelling, in one canonical form: `n`, then `-` when it is
/// negative and not zero, its significant digits without leading or trailing zeros, `e` and
/// the decimal exponent of the last of them (`n0` for zero). `1e3`, `1000`, `1000.0` and
/// `10.00e2` are all `n1e3`; `-0` and `0.0e5` are `n0`. No floating point, so ids of any
/// length keep their exact value. `None` when `raw` is not a JSON number, or its exponent does
/// not fit an `i64`.
fn number_key(raw: &[u8]) -> Option<Vec<u8>> {
    // The usual id, a positive integer with fewer than ten trailing zeros, without the
    // allocations and the formatting of the general case (which gives the same key).
    if let [b'1'..=b'9', ..] = raw
        && raw.iter().all(u8::is_ascii_digit)
    {
        let trailing = raw.iter().rev().take_while(|&&d| d == b'0').count();
        if trailing < 10 {
            let mut key = Vec::with_capacity(raw.len() + 3);
            key.push(b'n');
            key.extend_from_slice(&raw[..raw.len() - trailing]);
            key.push(b'e');
            key.push(b'0' + trailing as u8);
            return Some(key);
        }
    }
    general_number_key(raw)
}

/// [`number_key`] for any spelling.
fn general_number_key(raw: &[u8]) -> Option<Vec<u8>> {
    let digits = |b: &[u8]| b.iter().take_while(|d| d.is_ascii_digit()).count();
    let (negative, rest) = match raw.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, raw),
    };
    let (int, mut rest) = rest.split_at(digits(rest));
    if int.is_empty() || (int.len() > 1 && int[0] == b'0') {
        return None;
    }
    let mut frac: &[u8] = &[];
    if let Some((b'.', after)) = rest.split_first() {
        let (f, after) = after.split_at(digits(after));
        if f.is_empty() {
            return None;
        }
        (frac, rest) = (f, after);
    }
    let mut exp: i64 = 0;
    if let Some((b'e' | b'E', after)) = rest.split_first() {
        let (negative_exp, after) = match after.split_first() {
            Some((b'-', after)) => (true, after),
            Some((b'+', after)) => (false, after),
            _ => (false, after),
        };
        if after.is_empty() || digits(after) != after.len() {
            return None;
        }
        let e: i64 = std::str::from_utf8(after).ok()?.parse().ok()?;
        exp = if negative_exp { -e } else { e };
        rest = &[];
    }
    if !rest.is_empty() {
        return None;
    }
    let all: Vec<u8> = int.iter().chain(frac).copied().collect();
    let leading = all.iter().take_while(|&&d| d == b'0').count();
    let significant = &all[leading..];
    if significant.is_empty() {
        return Some(b"n0".to_vec());
    }
    let trailing = significant.iter().rev().take_while(|&&d| d == b'0').count();
    let significant = &significant[..significant.len() - trailing];
    let exp = exp
        .checked_sub(i64::try_from(frac.len()).ok()?)?
        .checked_add(i64::try_from(trailing).ok()?)?;
    let mut key = Vec::with_capacity(significant.len() + 24);
    key.push(b'n');
    if negative {
        key.push(b'-');
    }
    key.extend_from_slice(significant);
    key.push(b'e');
    key.extend_from_slice(exp.to_string().as_bytes());
    Some(key)
}

/// The position of a borrowed member inside the line it was parsed from, as a byte range.
pub(crate) fn span_in(line: &[u8], part: &RawValue) -> Option<std::ops::Range<usize>> {
    let start = (part.get().as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
    let end = start.checked_add(part.get().len())?;
    (end <= line.len() && line.get(start..end) == Some(part.get().as_bytes())).then_some(start..end)
}

/// What the relay does with the answer to a tracked request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Track {
    /// `tools/call` of the named tool: its result is shaped.
    Call {
        /// `params.name` of the request (empty when it had none).
        tool: String,
    },
    /// `tools/list`: its result gets the injected tools when `first_page`.
    List {
        /// The request had no `params.cursor`.
        first_page: bool,
    },
    /// Any other request: its answer is forwarded as is.
    Other,
}

/// One client request waiting for the server's answer.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The id as the client spelled it (used when the relay answers in the server's place).
    pub(crate) raw_id: Box<[u8]>,
    /// The request's method (for messages).
    pub(crate) method: String,
    /// What to do with the answer.
    pub(crate) track: Track,
    /// When the request was forwarded to the server.
    pub(crate) sent_at: Instant,
    /// When the server last showed it is working on the request (forwarding, or a progress
    /// notification with the request's token): the request timeout counts from here.
    pub(crate) last_heard: Instant,
    /// The [`id_key`] of the request's `params._meta.progressToken`, if it had one.
    pub(crate) progress_token: Option<Vec<u8>>,
    /// The client sent `notifications/cancelled` for it: no error is owed when the server dies.
    pub(crate) cancelled: bool,
}

/// How many ids the relay remembers having answered in the server's place.
const ABANDONED_MEMORY: usize = 1024;

/// The table of in-flight client requests, keyed by [`id_key`].
#[derive(Debug, Default)]
pub(crate) struct Pending {
    map: HashMap<Vec<u8>, Entry>,
    /// Ids answered by the relay in the server's place (a bad or over-long response): a late
    /// real answer to one of them is dropped rather than handed to the client twice.
    abandoned: VecDeque<Vec<u8>>,
    closed: bool,
}

/// The table was closed: the server is gone.
#[derive(Debug)]
pub(crate) struct Closed;

impl Pending {
    /// Records a forwarded request; returns an entry it displaced (a client reusing an id).
    ///
    /// # Errors
    ///
    /// [`Closed`] once the server is gone; the caller answers the request itself.
    pub(crate) fn insert(&mut self, key: Vec<u8>, entry: Entry) -> Result<Option<Entry>, Closed> {
        if self.closed {
            return Err(Closed);
        }
        Ok(self.map.insert(key, entry))
    }

    /// Whether the request an answer with this key belongs to is waiting and has its answer
    /// shaped (`tools/call`, `tools/list`).
    pub(crate) fn is_shaped(&self, key: &[u8]) -> bool {
        self.map.get(key).is_some_and(|e| e.track != Track::Other)
    }

    /// Whether any waiting request has its answer shaped: for an answer whose id the relay
    /// has not read yet (the TypeScript SDK writes `id` after `result`).
    pub(crate) fn any_shaped(&self) -> bool {
        self.map.values().any(|e| e.track != Track::Other)
    }

    /// Removes and returns the request an answer with this key belongs to.
    pub(crate) fn take(&mut self, key: &[u8]) -> Option<Entry> {
        self.map.remove(key)
    }

    /// Marks a request as cancelled by the client.
    pub(crate) fn cancel(&mut self, key: &[u8]) {
        if let Some(entry) = self.map.get_mut(key) {
            entry.cancelled = true;
        }
    }

    /// Remembers that the relay answered this request in the server's place.
    pub(crate) fn abandon(&mut self, key: Vec<u8>) {
        if self.abandoned.len() >= ABANDONED_MEMORY {
            self.abandoned.pop_front();
        }
        self.abandoned.push_back(key);
    }

    /// Whether the relay already answered this id; forgets it (an id is answered once).
    pub(crate) fn was_abandoned(&mut self, key: &[u8]) -> bool {
        match self.abandoned.iter().position(|k| k == key) {
            Some(i) => {
                self.abandoned.remove(i);
                true
            }
            None => false,
        }
    }

    /// The server sent progress for the request(s) with this [`id_key`]ed progress token.
    pub(crate) fn heard_progress(&mut self, token: &[u8], now: Instant) {
        for entry in self.map.values_mut() {
            if entry.progress_token.as_deref() == Some(token) {
                entry.last_heard = now;
            }
        }
    }

    /// Removes and returns the requests (not cancelled) not heard of for `timeout`, oldest
    /// first, and remembers their ids as answered by the relay.
    pub(crate) fn expire(&mut self, now: Instant, timeout: std::time::Duration) -> Vec<Entry> {
        let keys: Vec<Vec<u8>> = self
            .map
            .iter()
            .filter(|(_, e)| !e.cancelled && now.saturating_duration_since(e.last_heard) >= timeout)
            .map(|(k, _)| k.clone())
            .collect();
        let mut expired = Vec::with_capacity(keys.len());
        for key in keys {
            if let Some(entry) = self.map.remove(&key) {
                expired.push(entry);
                self.abandon(key);
            }
        }
        expired.sort_by_key(|e| e.sent_at);
        expired
    }

    /// Whether [`Pending::close`] was called: every request still waiting then was answered
    /// by the relay, so a response that finds no entry is a late one.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// Closes the table and returns the requests still waiting that were not cancelled,
    /// oldest first.
    pub(crate) fn close(&mut self) -> Vec<Entry> {
        self.closed = true;
        let mut left: Vec<Entry> = self
            .map
            .drain()
            .map(|(_, e)| e)
            .filter(|e| !e.cancelled)
            .collect();
        left.sort_by_key(|e| e.sent_at);
        left
    }

    /// The number of requests waiting.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

/// What a request's `params` say: the tool name of a `tools/call`, whether a `tools/list` asks
/// for its first page, and the [`id_key`] of `_meta.progressToken` (any request may have one).
pub(crate) fn request_info(method: &str, params: Option<&RawValue>) -> (Track, Option<Vec<u8>>) {
    #[derive(Deserialize, Default)]
    struct Meta<'a> {
        #[serde(default, borrow, rename = "progressToken")]
        progress_token: Option<&'a RawValue>,
    }
    #[derive(Deserialize, Default)]
    struct Params<'a> {
        #[serde(default, borrow)]
        name: Option<Cow<'a, str>>,
        #[serde(default, borrow)]
        cursor: Option<&'a RawValue>,
        #[serde(default, borrow, rename = "_meta")]
        meta: Option<Meta<'a>>,
    }
    let params = params
        .and_then(|p| serde_json::from_str::<Params<'_>>(p.get()).ok())
        .unwrap_or_default();
    let token = params
        .meta
        .and_then(|m| m.progress_token)
        .map(|t| id_key(t.get().as_bytes()));
    let track = match method {
        "tools/call" => Track::Call {
            tool: params.name.map(Cow::into_owned).unwrap_or_default(),
        },
        "tools/list" => Track::List {
            first_page: params.cursor.is_none_or(|c| c.get() == "null"),
        },
        _ => Track::Other,
    };
    (track, token)
}

/// The [`id_key`] of the `progressToken` of a `notifications/progress`.
pub(crate) fn progress_token(params: Option<&RawValue>) -> Option<Vec<u8>> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "progressToken", borrow)]
        progress_token: &'a RawValue,
    }
    let p = serde_json::from_str::<Params<'_>>(params?.get()).ok()?;
    Some(id_key(p.progress_token.get().as_bytes()))
}

/// The `requestId` of a `notifications/cancelled`, as raw bytes.
pub(crate) fn cancelled_request(params: Option<&RawValue>) -> Option<Vec<u8>> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "requestId", borrow)]
        request_id: &'a RawValue,
    }
    let p = serde_json::from_str::<Params<'_>>(params?.get()).ok()?;
    Some(p.request_id.get().as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(line: &str) -> Envelope<'_> {
        match parse(line.as_bytes()) {
            Parsed::Message(e) => e,
            other => panic!("not a message: {other:?}"),
        }
    }

    #[test]
    fn ids_of_every_type_keep_their_spelling() {
        for (line, id) in [
            (r#"{"id":1,"method":"a"}"#, "1"),
            (r#"{"id":1.50,"method":"a"}"#, "1.50"),
            (r#"{"id":"x y","method":"a"}"#, r#""x y""#),
            (r#"{"id":null,"method":"a"}"#, "null"),
            (
                r#"{"id":123456789012345678901234567890,"result":{}}"#,
                "123456789012345678901234567890",
            ),
        ] {
            let e = envelope(line);
            assert_eq!(e.id.map(RawValue::get), Some(id), "{line}");
        }
        assert!(envelope(r#"{"method":"n"}"#).id.is_none());
    }

    #[test]
    fn unknown_members_are_ignored_and_kinds_are_told_apart() {
        let e = envelope(r#"{"jsonrpc":"2.0","x":[1,{"id":2}],"id":3,"method":"m","_meta":{}}"#);
        assert_eq!(e.id.map(RawValue::get), Some("3"));
        assert_eq!(e.method.as_deref(), Some("m"));
        let e = envelope(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"m"}}"#);
        assert!(e.error.is_some() && e.result.is_none() && e.method.is_none());
    }

    #[test]
    fn lines_that_are_not_messages_are_classified() {
        assert!(matches!(parse(b"[1,2]"), Parsed::Batch));
        assert!(matches!(parse(b"[1,2"), Parsed::NotJson(_)));
        assert!(matches!(parse(b"42"), Parsed::Invalid(_)));
        assert!(matches!(parse(b"hello"), Parsed::NotJson(_)));
        match parse(br#"{"id":5,"method":7}"#) {
            Parsed::Invalid(scan) => assert_eq!(scan.id.as_deref(), Some(&b"5"[..])),
            other => panic!("{other:?}"),
        }
        match parse(br#"{"id":"q","method":"x", nope}"#) {
            Parsed::NotJson(scan) => assert_eq!(scan.id.as_deref(), Some(&b"\"q\""[..])),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn spans_point_into_the_line() {
        let line = br#"{"id":1,"result":{"content":[]},"x":2}"#;
        let Parsed::Message(e) = parse(line) else {
            panic!("not a message")
        };
        let span = e.result.and_then(|r| span_in(line, r)).map(|r| &line[r]);
        assert_eq!(span, Some(&br#"{"content":[]}"#[..]));
    }

    #[test]
    fn string_ids_match_across_escapes() {
        assert_eq!(id_key(br#""\u00e9""#), id_key("\"é\"".as_bytes()));
        assert_ne!(id_key(br#""1""#), id_key(b"1"));
    }

    #[test]
    fn numeric_ids_match_by_value() {
        for (a, b) in [
            ("-0", "0"),
            ("0.0e5", "0"),
            ("1e3", "1000.0"),
            ("1E+3", "1000"),
            ("10.00e2", "1000"),
            ("-1.5", "-15e-1"),
            (
                "123456789012345678901234567890",
                "1.2345678901234567890123456789e29",
            ),
        ] {
            assert_eq!(id_key(a.as_bytes()), id_key(b.as_bytes()), "{a} {b}");
        }
        for (a, b) in [
            ("1", "-1"),
            ("1", "1.0000000000000000000001"),
            (
                "123456789012345678901234567890",
                "123456789012345678901234567891",
            ),
            ("1", "\"1\""),
            ("0", "null"),
            ("1e3", "1e4"),
        ] {
            assert_ne!(id_key(a.as_bytes()), id_key(b.as_bytes()), "{a} {b}");
        }
        assert_eq!(number_key(b"1000.0").as_deref(), Some(&b"n1e3"[..]));
        assert_eq!(number_key(b"1000").as_deref(), Some(&b"n1e3"[..]));
        assert_eq!(number_key(b"10").as_deref(), Some(&b"n1e1"[..]));
        assert_eq!(number_key(b"-0.25").as_deref(), Some(&b"n-25e-2"[..]));
        for not_a_number in [
            "",
            "-",
            "01",
            "1.",
            ".5",
            "1e",
            "1e+",
            "1x",
            "NaN",
            "1e99999999999999999999",
        ] {
            assert_eq!(number_key(not_a_number.as_bytes()), None, "{not_a_number}");
        }
    }

    #[test]
    fn an_integer_id_keys_as_the_general_spelling_does() {
        let mut ids: Vec<String> = (0..20_000u64).map(|n| n.to_string()).collect();
        for zeros in 0..14 {
            ids.push(format!("7{}", "0".repeat(zeros)));
            ids.push(format!("12345678901234567890{}", "0".repeat(zeros)));
        }
        for id in ids {
            assert_eq!(
                number_key(id.as_bytes()),
                general_number_key(id.as_bytes()),
                "{id}"
            );
        }
    }

    #[test]
    fn lines_with_non_finite_literals_are_messages_with_their_spans() {
        let line =
            br#"{"jsonrpc":"2.0","id":3,"result":{"structuredContent":{"v":NaN}},"x":-Infinity}"#;
        assert!(matches!(parse(line), Parsed::NotJson(_)));
        let mut masked = None;
        let (parsed, text) = parse_lenient(line, &mut masked);
        let Parsed::Message(e) = parsed else {
            panic!("not a message: {parsed:?}")
        };
        assert_eq!(e.id.map(|id| raw_in(line, text, id)), Some(&b"3"[..]));
        let span = e.result.and_then(|r| span_in(text, r)).unwrap_or_default();
        assert_eq!(&line[span], br#"{"structuredContent":{"v":NaN}}"#);
        let mut masked = None;
        assert!(matches!(
            parse_lenient(b"{\"id\":1,oops NaN}", &mut masked).0,
            Parsed::NotJson(_)
        ));
    }

    fn track_of(method: &str, params: Option<&RawValue>) -> Track {
        request_info(method, params).0
    }

    #[test]
    fn tracking_reads_tool_names_and_cursors() {
        let p = RawValue::from_string(r#"{"name":"grep","arguments":{}}"#.into()).ok();
        assert_eq!(
            track_of("tools/call", p.as_deref()),
            Track::Call {
                tool: "grep".into()
            }
        );
        let p = RawValue::from_string(r#"{"cursor":"abc"}"#.into()).ok();
        assert_eq!(
            track_of("tools/list", p.as_deref()),
            Track::List { first_page: false }
        );
        let p = RawValue::from_string(r#"{"_meta":{"cursor":1}}"#.into()).ok();
        assert_eq!(
            track_of("tools/list", p.as_deref()),
            Track::List { first_page: true }
        );
        assert_eq!(
            track_of("tools/list", None),
            Track::List { first_page: true }
        );
        assert_eq!(track_of("ping", None), Track::Other);
    }

    #[test]
    fn progress_tokens_of_requests_match_those_of_notifications() {
        let p =
            RawValue::from_string(r#"{"uri":"u","_meta":{"progressToken":"t\u0031"}}"#.into()).ok();
        let (track, token) = request_info("resources/read", p.as_deref());
        assert_eq!(track, Track::Other);
        assert!(token.is_some());
        let note = RawValue::from_string(r#"{"progressToken":"t1","progress":3}"#.into()).ok();
        assert_eq!(token, progress_token(note.as_deref()));
        let p = RawValue::from_string(r#"{"_meta":{"progressToken":7}}"#.into()).ok();
        assert_eq!(
            request_info("tools/call", p.as_deref()).1,
            Some(id_key(b"7"))
        );
    }

    #[test]
    fn closing_returns_live_requests_oldest_first_and_refuses_new_ones() {
        let mut pending = Pending::default();
        let entry = |id: &str| Entry {
            raw_id: id.as_bytes().into(),
            method: "m".into(),
            track: Track::Other,
            sent_at: Instant::now(),
            last_heard: Instant::now(),
            progress_token: None,
            cancelled: false,
        };
        for id in ["1", "2", "3"] {
            assert!(pending.insert(id_key(id.as_bytes()), entry(id)).is_ok());
        }
        pending.cancel(&id_key(b"2"));
        assert!(pending.take(&id_key(b"3")).is_some());
        let left = pending.close();
        assert_eq!(
            left.iter().map(|e| &*e.raw_id).collect::<Vec<_>>(),
            [&b"1"[..]]
        );
        assert!(pending.insert(id_key(b"4"), entry("4")).is_err());
        assert_eq!(pending.len(), 0);
    }
}

#[cfg(test)]
mod timeout_tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn silent_requests_expire_and_progress_keeps_them_alive() {
        let start = Instant::now();
        let mut pending = Pending::default();
        for (id, token) in [("1", None), ("2", Some(id_key(b"\"t\""))), ("3", None)] {
            let entry = Entry {
                raw_id: id.as_bytes().into(),
                method: "m".into(),
                track: Track::Other,
                sent_at: start,
                last_heard: start,
                progress_token: token,
                cancelled: false,
            };
            assert!(pending.insert(id_key(id.as_bytes()), entry).is_ok());
        }
        pending.cancel(&id_key(b"3"));
        let later = start + Duration::from_secs(5);
        pending.heard_progress(&id_key(b"\"t\""), later);
        let expired = pending.expire(later, Duration::from_secs(5));
        assert_eq!(
            expired.iter().map(|e| &*e.raw_id).collect::<Vec<_>>(),
            [&b"1"[..]]
        );
        assert!(pending.was_abandoned(&id_key(b"1")));
        let expired = pending.expire(later + Duration::from_secs(5), Duration::from_secs(5));
        assert_eq!(
            expired.iter().map(|e| &*e.raw_id).collect::<Vec<_>>(),
            [&b"2"[..]]
        );
        assert_eq!(pending.len(), 1, "the cancelled one is left to the server");
    }
}

#[cfg(test)]
mod depth_tests {
    use super::*;

    #[test]
    fn deeply_nested_results_are_still_routed() {
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":{deep}}}}}"#);
        match parse(line.as_bytes()) {
            Parsed::Message(e) => assert!(e.result.is_some()),
            other => panic!("{other:?}"),
        }
    }
}
