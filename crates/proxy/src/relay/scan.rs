//! A lenient, streaming scan of the top level of one line, for lines the relay cannot parse.
//!
//! A line that is not JSON, or that is longer than the relay keeps in memory, still deserves an
//! answer when it was a request: JSON-RPC answers a parse error with the request's id when the
//! id can be recovered. [`Scanner`] walks the top-level object byte by byte (chunk by chunk for
//! an over-long line, so nothing has to be held) and remembers the raw bytes of the `id` member
//! and whether `method`, `result` or `error` members were seen before the line broke.
//!
//! It is not a validator: it tracks strings, escapes and bracket depth only, and stops at the
//! first byte that cannot continue a top-level object. Everything before that byte counts.
//!
//! [`tail_id`] reads the id off the end of a line instead, for a long response whose id comes
//! after its result (the TypeScript SDK's order).

use serde_json::value::RawValue;

/// What a lenient scan found at the top level of one line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Scan {
    /// The raw bytes of the top-level `id` member, when its value was complete, at most
    /// [`MAX_ID_BYTES`] bytes long, and a JSON string, number or null.
    pub(crate) id: Option<Vec<u8>>,
    /// A top-level `method` member was seen (a request or a notification).
    pub(crate) has_method: bool,
    /// A top-level `result` or `error` member was seen (a response).
    pub(crate) has_outcome: bool,
    /// Where the value of the first top-level `result` member starts (a byte offset in the
    /// bytes fed), when its first byte was scanned.
    pub(crate) result_at: Option<usize>,
}

/// Ids longer than this many bytes are not recovered (no sane peer sends them).
pub(crate) const MAX_ID_BYTES: usize = 1024;

/// Keys longer than this are never one of the few the scan looks for.
const MAX_KEY_BYTES: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the opening `{`.
    Start,
    /// Expecting a key (or `}`); commas are skipped.
    Key,
    /// Inside a key string.
    InKey,
    /// After a key, expecting `:`.
    Colon,
    /// After `:`, expecting the first byte of a value.
    ValueStart,
    /// Inside a member's value.
    InValue,
    /// After a complete value, expecting `,` or `}`.
    AfterValue,
    /// The object closed, or a byte broke it: nothing more is read.
    Stopped,
}

/// The member whose value is being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Id,
    Method,
    Outcome,
    Other,
}

/// Streaming scanner; feed it the line's bytes in any number of chunks, then call
/// [`Scanner::finish`].
#[derive(Debug)]
pub(crate) struct Scanner {
    state: State,
    key: Vec<u8>,
    key_too_long: bool,
    escape: bool,
    in_string: bool,
    depth: u64,
    member: Member,
    captured: Vec<u8>,
    capture_too_long: bool,
    scan: Scan,
    /// Bytes fed before the current one.
    fed: usize,
}

impl Default for Scanner {
    fn default() -> Self {
        Self::new()
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

impl Scanner {
    /// A scanner at the start of a line.
    pub(crate) fn new() -> Self {
        Scanner {
            state: State::Start,
            key: Vec::with_capacity(MAX_KEY_BYTES),
            key_too_long: false,
            escape: false,
            in_string: false,
            depth: 0,
            member: Member::Other,
            captured: Vec::new(),
            capture_too_long: false,
            scan: Scan::default(),
            fed: 0,
        }
    }

    /// Scans one line in one go.
    pub(crate) fn scan(line: &[u8]) -> Scan {
        let mut s = Scanner::new();
        s.feed(line);
        s.finish()
    }

    /// What a scan of the first `max` bytes of `line` finds: as [`Scanner::partial`] when the
    /// line goes on past them, else as [`Scanner::finish`].
    pub(crate) fn head(line: &[u8], max: usize) -> Scan {
        let mut s = Scanner::new();
        s.feed(&line[..line.len().min(max)]);
        if line.len() > max {
            s.partial()
        } else {
            s.finish()
        }
    }

    /// Feeds the next chunk of the line.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        for &b in chunk {
            if self.state == State::Stopped {
                return;
            }
            self.step(b);
            self.fed += 1;
        }
    }

    /// What was found so far, when the line goes on: a scalar `id` still being read does not
    /// count (its next bytes may belong to it).
    pub(crate) fn partial(self) -> Scan {
        self.scan
    }

    /// What was found; a scalar `id` that ran to the end of the line counts as complete.
    pub(crate) fn finish(mut self) -> Scan {
        if self.state == State::InValue && self.depth == 0 && !self.in_string {
            self.end_value();
        }
        self.scan
    }

    fn step(&mut self, b: u8) {
        match self.state {
            State::Start => match b {
                b'{' => self.state = State::Key,
                // A byte-order mark (EF BB BF) before the object is skipped like whitespace.
                0xEF | 0xBB | 0xBF => {}
                _ if is_ws(b) => {}
                _ => self.state = State::Stopped,
            },
            State::Key => match b {
                b'"' => {
                    self.key.clear();
                    self.key_too_long = false;
                    self.escape = false;
                    self.state = State::InKey;
                }
                b'}' => self.state = State::Stopped,
                b',' => {}
                _ if is_ws(b) => {}
                _ => self.state = State::Stopped,
            },
            State::InKey => {
                if self.escape {
                    self.escape = false;
                    // An escaped key is never one we look for; make sure it cannot match.
                    self.key_too_long = true;
                } else if b == b'\\' {
                    self.escape = true;
                } else if b == b'"' {
                    self.state = State::Colon;
                } else if self.key.len() < MAX_KEY_BYTES {
                    self.key.push(b);
                } else {
                    self.key_too_long = true;
                }
            }
            State::Colon => match b {
                b':' => {
                    self.member = if self.key_too_long {
                        Member::Other
                    } else {
                        match self.key.as_slice() {
                            b"id" => Member::Id,
                            b"method" => Member::Method,
                            b"result" | b"error" => Member::Outcome,
                            _ => Member::Other,
                        }
                    };
                    // A member counts from its key on: its value may be what broke the line.
                    match self.member {
                        Member::Method => self.scan.has_method = true,
                        Member::Outcome => self.scan.has_outcome = true,
                        Member::Id | Member::Other => {}
                    }
                    self.state = State::ValueStart;
                }
                _ if is_ws(b) => {}
                _ => self.state = State::Stopped,
            },
            State::ValueStart => {
                if !is_ws(b) {
                    if self.member == Member::Outcome
                        && !self.key_too_long
                        && self.key == b"result"
                        && self.scan.result_at.is_none()
                    {
                        self.scan.result_at = Some(self.fed);
                    }
                    self.captured.clear();
                    self.capture_too_long = false;
                    self.depth = 0;
                    self.in_string = false;
                    self.escape = false;
                    self.state = State::InValue;
                    self.value_byte(b);
                }
            }
            State::InValue => self.value_byte(b),
            State::AfterValue => match b {
                b',' => self.state = State::Key,
                b'}' => self.state = State::Stopped,
                _ if is_ws(b) => {}
                _ => self.state = State::Stopped,
            },
            State::Stopped => {}
        }
    }

    fn capture(&mut self, b: u8) {
        if self.member != Member::Id || self.capture_too_long {
            return;
        }
        if self.captured.len() < MAX_ID_BYTES {
            self.captured.push(b);
        } else {
            self.capture_too_long = true;
        }
    }

    fn value_byte(&mut self, b: u8) {
        if self.in_string {
            self.capture(b);
            if self.escape {
                self.escape = false;
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.depth == 0 {
                    self.end_value();
                    self.state = State::AfterValue;
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.capture(b);
                self.in_string = true;
            }
            b'{' | b'[' => {
                self.capture(b);
                self.depth += 1;
            }
            b'}' | b']' if self.depth > 0 => {
                self.capture(b);
                self.depth -= 1;
                if self.depth == 0 {
                    self.end_value();
                    self.state = State::AfterValue;
                }
            }
            // A scalar ended by the object's closing brace.
            b'}' => {
                self.end_value();
                self.state = State::Stopped;
            }
            b',' if self.depth == 0 => {
                self.end_value();
                self.state = State::Key;
            }
            _ if is_ws(b) && self.depth == 0 => {
                self.end_value();
                self.state = State::AfterValue;
            }
            _ if self.depth == 0 && !is_scalar_byte(b) => {
                self.state = State::Stopped;
            }
            _ => self.capture(b),
        }
    }

    fn end_value(&mut self) {
        if self.member == Member::Id
            && self.scan.id.is_none()
            && !self.capture_too_long
            && is_id_value(&self.captured)
        {
            self.scan.id = Some(std::mem::take(&mut self.captured));
        }
        self.member = Member::Other;
    }
}

/// Bytes that can make up a bare JSON scalar (number, true, false, null).
fn is_scalar_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')
}

/// Whether `raw` is a complete JSON string, number or null: the id types JSON-RPC allows.
fn is_id_value(raw: &[u8]) -> bool {
    matches!(
        serde_json::from_slice::<serde_json::Value>(raw),
        Ok(serde_json::Value::String(_) | serde_json::Value::Number(_) | serde_json::Value::Null)
    )
}

/// How many last bytes of a line [`tail_id`] looks at.
const TAIL_BYTES: usize = 256;

/// The raw id of a line that ends with its top-level `id` member (`…,"id":7}`, the
/// TypeScript SDK's order): a guess from the last [`TAIL_BYTES`] (`"id"` inside a nested
/// object is followed by more than one `}`, so it is never taken), to be checked by the
/// envelope's parse; `None` when the line does not end that way.
pub(crate) fn tail_id(line: &[u8]) -> Option<Vec<u8>> {
    let from = line.len().saturating_sub(TAIL_BYTES);
    let tail = &line[from..];
    let key = memchr::memmem::rfind(tail, b"\"id\"")?;
    let after_key = tail[key + 4..].trim_ascii_start();
    let value = after_key.strip_prefix(b":")?.trim_ascii_start();
    let mut values = serde_json::Deserializer::from_slice(value).into_iter::<&RawValue>();
    let id = values.next()?.ok()?;
    let rest = value.get(values.byte_offset()..)?.trim_ascii();
    let scalar = !matches!(id.get().as_bytes().first(), Some(b'{' | b'['));
    (scalar && rest == b"}").then(|| id.get().as_bytes().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn id_of(line: &str) -> Option<String> {
        Scanner::scan(line.as_bytes())
            .id
            .map(|v| String::from_utf8_lossy(&v).into_owned())
    }

    #[test]
    fn recovers_ids_of_every_json_type_before_the_break() {
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":7,"method":"x",oops}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            id_of(r#"{"id":"a\"b}","method":"#).as_deref(),
            Some(r#""a\"b}""#)
        );
        assert_eq!(id_of(r#"{"id":null,"params":{"#).as_deref(), Some("null"));
        assert_eq!(id_of(r#" { "id" : -1.5e3 } "#).as_deref(), Some("-1.5e3"));
        assert_eq!(
            id_of(r#"{"params":{"id":9},"id":10}"#).as_deref(),
            Some("10")
        );
        assert_eq!(
            id_of(r#"{"params":["}","{"],"id":11"#).as_deref(),
            Some("11")
        );
    }

    #[test]
    fn refuses_what_is_not_an_id() {
        assert_eq!(id_of(r#"{"id":{"a":1},"method":"x"}"#), None);
        assert_eq!(id_of(r#"{"id":[1],"method":"x"}"#), None);
        assert_eq!(id_of(r#"{"id":tru,"method":"x"}"#), None);
        assert_eq!(id_of(r#"{"id":"unterminated"#), None);
        assert_eq!(id_of(r#"garbage {"id":1}"#), None);
        assert_eq!(id_of(r#"{"i\u0064":1}"#), None);
        assert_eq!(id_of(""), None);
    }

    #[test]
    fn tells_requests_from_responses() {
        let s = Scanner::scan(br#"{"id":1,"method":"tools/call","params":{"result":1}}"#);
        assert!(s.has_method && !s.has_outcome);
        let s = Scanner::scan(br#"{"id":1,"result":{"method":"x"}"#);
        assert!(!s.has_method && s.has_outcome);
        let s = Scanner::scan(br#"{"id":1,"error":{"code":1}}"#);
        assert!(s.has_outcome);
        let s = Scanner::scan(br#"{"id":1,"result":{"broken""#);
        assert!(s.has_outcome && s.id.is_some());
    }

    #[test]
    fn finds_where_the_top_level_result_starts() {
        let at = |line: &str| Scanner::scan(line.as_bytes()).result_at;
        let line = r#"{"jsonrpc":"2.0","id":1,"result" : {"content":[]}}"#;
        assert_eq!(at(line), line.find(": {").map(|i| i + 2));
        // Not inside another member, not an error, not an escaped key; the first of two.
        assert_eq!(
            at(r#"{"id":1,"_meta":{"result":1},"error":{"data":{"result":2}}}"#),
            None
        );
        assert_eq!(at(r#"{"id":1,"r\u0065sult":3}"#), None);
        assert_eq!(at("\u{feff}{\"result\":[1],\"result\":2}"), Some(13));
        assert_eq!(at(r#"{"result":"#), None);
    }

    fn arb_id() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            any::<i64>().prop_map(serde_json::Value::from),
            ".{0,12}".prop_map(serde_json::Value::from),
            Just(serde_json::Value::Null),
        ]
    }

    fn arb_json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i32>().prop_map(serde_json::Value::from),
            "[\"{}\\[\\],:\\\\ a-z]{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::btree_map("[a-z\"{]{0,4}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// On any valid message, chunked any way, the scan finds the same id serde finds.
        #[test]
        fn scan_agrees_with_serde_on_valid_messages(
            id in arb_id(),
            before in arb_json(),
            after in arb_json(),
            cut in 0usize..200,
        ) {
            let msg = serde_json::json!({"params": before, "id": id.clone(), "result": after});
            let line = serde_json::to_vec(&msg).unwrap_or_default();
            let mut scanner = Scanner::new();
            let cut = cut.min(line.len());
            scanner.feed(&line[..cut]);
            scanner.feed(&line[cut..]);
            let scan = scanner.finish();
            let found: Option<serde_json::Value> =
                scan.id.as_deref().and_then(|raw| serde_json::from_slice(raw).ok());
            prop_assert_eq!(found, Some(id));
            prop_assert!(scan.has_outcome);
            prop_assert!(!scan.has_method);
        }

        /// Arbitrary bytes never panic the scanner, and any id it reports is a JSON id.
        #[test]
        fn scan_never_panics_and_reports_only_ids(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            if let Some(id) = Scanner::scan(&bytes).id {
                prop_assert!(is_id_value(&id));
            }
        }
    }

    #[test]
    fn an_id_at_the_end_of_a_line_is_read_only_when_it_is_the_top_level_one() {
        let id =
            |line: &str| tail_id(line.as_bytes()).map(|v| String::from_utf8_lossy(&v).into_owned());
        assert_eq!(
            id(r#"{"result":{},"jsonrpc":"2.0","id":7}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            id(r#"{"result":{},"id" : "a\"}" } "#).as_deref(),
            Some(r#""a\"}""#)
        );
        assert_eq!(id(r#"{"result":{},"id":null}"#).as_deref(), Some("null"));
        // Nested, an object, or not the last member: no guess.
        assert_eq!(id(r#"{"result":{"x":{"id":5}}}"#), None);
        assert_eq!(id(r#"{"result":{},"_meta":{"id":5}}"#), None);
        assert_eq!(id(r#"{"result":{},"id":{"a":1}}"#), None);
        assert_eq!(id(r#"{"id":7,"result":{}}"#), None);
        assert_eq!(id(r#"{"result":{},"id":7"#), None);
    }
}
