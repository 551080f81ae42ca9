//! JSON as MCP servers write it: the two departures from strict JSON that Python's `json`
//! module (`json.dumps` with its defaults) writes, which `serde_json` refuses on its own.
//!
//! - **Lone surrogate escapes** (`"\udcff"`): `json.dumps` writes one for each byte of a file
//!   name that is not UTF-8 (Python decodes such bytes to lone surrogates). RFC 8259 §8.2 lets
//!   the grammar through but leaves the meaning open, and a Rust string cannot hold one. Each
//!   `\uD800`–`\uDFFF` escape that is not half of a high–low pair becomes `\ufffd` (U+FFFD
//!   REPLACEMENT CHARACTER), the rule of the Unicode standard (§3.9) for ill-formed text. This
//!   loses the lone unit's value, by necessity; everything else is kept.
//! - **Non-finite literals** `NaN`, `Infinity` and `-Infinity` where a value may stand
//!   (`json.dumps`' default `allow_nan=True`; Python, jq and JSON5 read them back). They are
//!   kept as they came: the value holds a [`Number`] spelled exactly `NaN`, `Infinity` or
//!   `-Infinity`, which `serde_json` (with the workspace's `arbitrary_precision`) and
//!   [`crate::compact`] write back as the same literal. A page of such a document is valid in
//!   the dialect of its source. Such a number is neither an integer nor an `f64` to
//!   `serde_json` ([`Number::as_f64`] is `None`); [`Number::as_str`] gives the literal. It
//!   must not go through `serde_json::to_value` (nor `json!` with it interpolated), which
//!   re-reads every number strictly and fails: move or clone such values, never re-serialize
//!   them into a `Value`.
//!
//! [`parse`] tries the strict parse first, so strict JSON costs nothing more; the repairs run
//! only when it fails, and only when the text holds what they repair.
//!
//! ```
//! use mcp_budget_core::dialect;
//!
//! let parsed = dialect::parse(br#"{"name":"report_\udcff.txt","score":NaN,"max":-Infinity}"#)?;
//! assert_eq!(parsed.value["name"], "report_\u{fffd}.txt");
//! assert_eq!((parsed.surrogates, parsed.literals), (1, 2));
//! assert_eq!(
//!     serde_json::to_string(&parsed.value)?,
//!     r#"{"name":"report_�.txt","score":NaN,"max":-Infinity}"#
//! );
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde_json::{Number, Value};

/// A value read by [`parse`], and what had to be repaired to read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The value; non-finite literals are [`Number`]s spelled as they came.
    pub value: Value,
    /// How many lone surrogate escapes became U+FFFD.
    pub surrogates: usize,
    /// How many `NaN`, `Infinity`, `-Infinity` literals were read.
    pub literals: usize,
}

/// The three non-finite literals, by the spelling Python's `json.dumps` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Literal {
    /// `NaN`.
    NaN,
    /// `Infinity`.
    Infinity,
    /// `-Infinity`.
    NegInfinity,
}

impl Literal {
    const ALL: [Literal; 3] = [Literal::NaN, Literal::Infinity, Literal::NegInfinity];

    /// The literal's spelling.
    pub fn spelling(self) -> &'static str {
        match self {
            Literal::NaN => "NaN",
            Literal::Infinity => "Infinity",
            Literal::NegInfinity => "-Infinity",
        }
    }

    /// The [`Number`] holding the literal: written back by `serde_json` as the literal itself.
    pub fn number(self) -> Number {
        // `arbitrary_precision` keeps a number as its text; `from_string_unchecked` is the one
        // way to make a text that is not a JSON number. Hidden in serde_json's docs, it is
        // pinned by Cargo.lock, and `literals_are_written_back_as_they_came` guards its use.
        Number::from_string_unchecked(self.spelling().to_owned())
    }

    /// The literal that starts at `at` in `text`, when one does where a value may stand: not
    /// inside a word or a number (`xNaN`, `1-Infinity` are not literals).
    fn at(text: &[u8], at: usize) -> Option<Literal> {
        let rest = text.get(at..)?;
        let literal = Literal::ALL
            .into_iter()
            .find(|l| rest.starts_with(l.spelling().as_bytes()))?;
        let glued = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-' | b'_');
        let before = at.checked_sub(1).and_then(|i| text.get(i));
        let after = text.get(at + literal.spelling().len());
        (!before.is_some_and(glued) && !after.is_some_and(glued)).then_some(literal)
    }
}

/// Whether `n` is one of the non-finite literals (`NaN`, `Infinity`, `-Infinity`).
pub fn is_literal(n: &Number) -> bool {
    Literal::ALL.iter().any(|l| l.spelling() == n.as_str())
}

/// Reads one JSON text (`text`, UTF-8; surrounding whitespace allowed) as `serde_json` does,
/// and when that fails, reads it again with lone surrogate escapes replaced by U+FFFD and
/// `NaN`, `Infinity`, `-Infinity` literals kept (see the [module docs](self)).
///
/// # Errors
///
/// `serde_json`'s error when the text is not JSON even so (the error of the repaired text
/// when something was repaired, else the strict one): nesting deeper than 128 levels, a
/// trailing comma, a comment, a single-quoted string, anything cut short.
pub fn parse(text: &[u8]) -> Result<Parsed, serde_json::Error> {
    parse_with(text, true)
}

/// [`parse`] without `serde_json`'s recursion limit of 128: for pages of a document that
/// was a value already (a structuredContent may nest deeper than any text the proxy reads
/// as JSON), which a client reads back as JSON whatever their depth.
///
/// # Errors
///
/// As [`parse`], but never for nesting.
pub fn parse_unbounded(text: &[u8]) -> Result<Parsed, serde_json::Error> {
    parse_with(text, false)
}

/// `serde_json::from_slice`, with or without its recursion limit.
fn from_slice(text: &[u8], limit: bool) -> Result<Value, serde_json::Error> {
    if limit {
        return serde_json::from_slice(text);
    }
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_slice(text);
    de.disable_recursion_limit();
    let v = Value::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

fn parse_with(text: &[u8], limit: bool) -> Result<Parsed, serde_json::Error> {
    let strict = match from_slice(text, limit) {
        Ok(value) => {
            return Ok(Parsed {
                value,
                surrogates: 0,
                literals: 0,
            });
        }
        Err(e) => e,
    };
    if !repairable_at(text, &strict) {
        // The first fault is not one a repair removes: do not scan the whole text for nothing
        // (a 12 MB log that starts with `[INFO]` fails at its second byte).
        return Err(strict);
    }
    let literals = find_literals(text);
    let mut repaired = text.to_vec();
    let surrogates = replace_lone_surrogates(&mut repaired);
    if literals.is_empty() && surrogates == 0 {
        return Err(strict);
    }
    if literals.is_empty() {
        return from_slice(&repaired, limit).map(|value| Parsed {
            value,
            surrogates,
            literals: 0,
        });
    }
    // Each literal becomes a long integer spelling found nowhere in the text (so no number of
    // the text can be taken for it), then the numbers so spelled become the literals again.
    // Replacing bytes cannot touch a surrogate escape: those sit inside strings, literals not.
    let stand_ins = stand_ins(text);
    let mut with_stand_ins = Vec::with_capacity(repaired.len() + literals.len() * 48);
    let mut from = 0;
    for &(at, literal) in &literals {
        with_stand_ins.extend_from_slice(&repaired[from..at]);
        with_stand_ins.extend_from_slice(stand_ins[literal as usize].as_bytes());
        from = at + literal.spelling().len();
    }
    with_stand_ins.extend_from_slice(&repaired[from..]);
    let mut value: Value = from_slice(&with_stand_ins, limit)?;
    restore(&mut value, &stand_ins);
    Ok(Parsed {
        value,
        surrogates,
        literals: literals.len(),
    })
}

/// Whether the strict parse's error `e` (at a line and byte column of `text`) lies near a
/// non-finite literal or a `\u` escape: the only faults [`parse`] repairs. Were the
/// first fault another, the repaired text would fail there too.
fn repairable_at(text: &[u8], e: &serde_json::Error) -> bool {
    /// How far from the reported position the fault may sit, in bytes (serde_json reports a
    /// lone surrogate after reading the escape and the one after it).
    const SLACK: usize = 16;
    let line_start = match e.line() {
        0 | 1 => 0,
        line => match text
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .nth(line - 2)
        {
            Some((i, _)) => i + 1,
            None => return true,
        },
    };
    let at = line_start.saturating_add(e.column());
    let window = at.saturating_sub(SLACK)..at.saturating_add(SLACK).min(text.len());
    window.clone().any(|i| Literal::at(text, i).is_some())
        || text
            .get(window)
            .is_some_and(|w| w.windows(2).any(|pair| pair == b"\\u"))
}

/// The value of a text that looks like a JSON document (its first non-blank character is `{`
/// or `[`) and reads as one by [`parse`]; `None` otherwise. The rule by which a text item is
/// paged as JSON rather than as text ([`crate::paginate::Document::from_text`]).
pub fn json_document(text: &str) -> Option<Value> {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    parse(text.as_bytes()).ok().map(|p| p.value)
}

/// Replaces, in place, every non-finite literal of `text` by a JSON number of the same length
/// (`NaN` → `0.0`, `Infinity` → `0.000000`, `-Infinity` → `-0.000000`); returns how many.
///
/// For a reader that only needs the text's structure (where members sit, as byte offsets) and
/// must keep offsets valid in the original: the relay's envelope of a line.
pub fn mask_literals(text: &mut [u8]) -> usize {
    let literals = find_literals(text);
    for &(at, literal) in &literals {
        let len = literal.spelling().len();
        let slot = &mut text[at..at + len];
        slot.fill(b'0');
        let dot = if literal == Literal::NegInfinity {
            slot[0] = b'-';
            2
        } else {
            1
        };
        slot[dot] = b'.';
    }
    literals.len()
}

/// Where the non-finite literals of `text` start (outside strings), in order.
fn find_literals(text: &[u8]) -> Vec<(usize, Literal)> {
    let mut found = Vec::new();
    let mut in_string = false;
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'N' | b'I' | b'-' => {
                    if let Some(literal) = Literal::at(text, i) {
                        found.push((i, literal));
                        i += literal.spelling().len();
                        continue;
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    found
}

/// Three integer spellings, one per [`Literal`], none of which occurs in `text`.
fn stand_ins(text: &[u8]) -> [String; 3] {
    const DIGITS: &str = "31415926535897932384626433832795028841971";
    let occurs = |needle: &[u8]| text.windows(needle.len()).any(|w| w == needle);
    let mut nonce = 0u64;
    loop {
        let base = format!("-8{nonce}{DIGITS}");
        if !occurs(base.as_bytes()) {
            return Literal::ALL.map(|l| format!("{base}{}", l as usize));
        }
        nonce += 1;
    }
}

/// Turns the numbers spelled as one of `stand_ins` back into their literals.
fn restore(value: &mut Value, stand_ins: &[String; 3]) {
    match value {
        Value::Number(n) => {
            if let Some(k) = stand_ins.iter().position(|s| s == n.as_str()) {
                *n = Literal::ALL[k].number();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| restore(v, stand_ins)),
        Value::Object(members) => members.values_mut().for_each(|v| restore(v, stand_ins)),
        Value::Null | Value::Bool(_) | Value::String(_) => {}
    }
}

/// Replaces, in JSON text, every `\uXXXX` escape of a surrogate (U+D800–U+DFFF) that is not
/// half of a high–low pair by `\ufffd`, in place; returns how many. The text keeps its
/// length. A backslash stands only inside a string, where `\\` is an escaped backslash (so
/// `"\\udcff"` is text, not an escape), so no tracking of strings is needed.
pub fn replace_lone_surrogates(text: &mut [u8]) -> usize {
    let hex4 = |b: &[u8], at: usize| -> Option<u32> {
        let digits = std::str::from_utf8(b.get(at..at + 4)?).ok()?;
        u32::from_str_radix(digits, 16).ok()
    };
    let mut replaced = 0;
    let mut i = 0;
    while let Some(found) = text
        .get(i..)
        .and_then(|rest| rest.iter().position(|&b| b == b'\\'))
    {
        i += found;
        if text.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        let Some(unit) = hex4(text, i + 2) else {
            i += 2;
            continue;
        };
        let is_pair = (0xD800..=0xDBFF).contains(&unit)
            && text.get(i + 6..i + 8) == Some(b"\\u")
            && hex4(text, i + 8).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low));
        if is_pair {
            i += 12;
        } else {
            if (0xD800..=0xDFFF).contains(&unit) {
                text[i + 2..i + 6].copy_from_slice(b"fffd");
                replaced += 1;
            }
            i += 6;
        }
    }
    replaced
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn fixed(s: &str) -> (String, usize) {
        let mut b = s.as_bytes().to_vec();
        let n = replace_lone_surrogates(&mut b);
        (String::from_utf8(b).unwrap_or_default(), n)
    }

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        assert_eq!(fixed(r#""\udcff.txt""#), (r#""\ufffd.txt""#.to_owned(), 1));
        assert_eq!(
            fixed(r#""\ud83d\ude00""#),
            (r#""\ud83d\ude00""#.to_owned(), 0)
        );
        assert_eq!(
            fixed(r#""\ud83d x \ude00""#),
            (r#""\ufffd x \ufffd""#.to_owned(), 2)
        );
        assert_eq!(
            fixed(r#""\ud83d\u0041""#),
            (r#""\ufffd\u0041""#.to_owned(), 1)
        );
        // An escaped backslash followed by `udcff` is text, not an escape.
        assert_eq!(fixed(r#""\\udcff""#), (r#""\\udcff""#.to_owned(), 0));
        assert_eq!(fixed(r#""\\\udcff""#), (r#""\\\ufffd""#.to_owned(), 1));
        assert_eq!(fixed(r#""\\\\udcff""#), (r#""\\\\udcff""#.to_owned(), 0));
        // Cut short: nothing to read, nothing replaced, no panic.
        assert_eq!(fixed(r#""\ud8"#), (r#""\ud8"#.to_owned(), 0));
        assert_eq!(fixed("\\"), ("\\".to_owned(), 0));
    }

    #[test]
    fn python_file_listings_read_as_json() {
        // As `json.dumps` writes `os.listdir()` of a directory with non-UTF-8 names.
        let text = r#"[{"name":"report_\udcff_1.txt","size":1},{"name":"a\\udcff","size":2}]"#;
        let parsed = parse(text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            parsed.value,
            json!([{"name":"report_\u{fffd}_1.txt","size":1},{"name":"a\\udcff","size":2}])
        );
        assert_eq!((parsed.surrogates, parsed.literals), (1, 0));
    }

    #[test]
    fn literals_are_written_back_as_they_came() {
        let text = r#"{"v":NaN,"w":[Infinity,-Infinity, NaN ],"s":"NaN Infinity","n":-1.25}"#;
        let parsed = parse(text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parsed.literals, 4);
        let v = &parsed.value;
        let spelled = |v: &Value| v.as_number().map(|n| n.as_str().to_owned());
        assert_eq!(spelled(&v["v"]).as_deref(), Some("NaN"));
        assert_eq!(spelled(&v["w"][0]).as_deref(), Some("Infinity"));
        assert_eq!(spelled(&v["w"][1]).as_deref(), Some("-Infinity"));
        assert_eq!(v["v"].as_f64(), None);
        assert_eq!(v["s"], "NaN Infinity");
        assert!(
            v["w"]
                .as_array()
                .is_some_and(|w| w.iter().all(|n| n.as_number().is_some_and(is_literal)))
        );
        let written = r#"{"v":NaN,"w":[Infinity,-Infinity,NaN],"s":"NaN Infinity","n":-1.25}"#;
        assert_eq!(serde_json::to_string(v).unwrap_or_default(), written);
        assert_eq!(crate::compact::to_string(v, 9), written);
        assert_eq!(
            crate::compact::to_string(v, 1),
            written.replace("-1.25", "-1.0")
        );
        // Read again, the same value.
        assert_eq!(
            parse(written.as_bytes()).map(|p| p.value).ok().as_ref(),
            Some(v)
        );
    }

    #[test]
    fn literals_inside_words_numbers_or_strings_are_not_literals() {
        for text in [
            r#"{"v":xNaN}"#,
            r#"{"v":NaNa}"#,
            r#"{"v":1-Infinity}"#,
            r#"{"v":Infinity2}"#,
            r#"{"v":nan}"#,
            r#"{"v":inf}"#,
            r#"{"v":+Infinity}"#,
        ] {
            assert!(parse(text.as_bytes()).is_err(), "{text}");
        }
        assert!(find_literals(br#"["\"NaN", "a\\", NaN]"#).len() == 1);
    }

    #[test]
    fn a_number_spelled_like_a_stand_in_stays_a_number() {
        let base = stand_ins(b"")[0].clone();
        let text = format!("[{base},NaN]");
        let parsed = parse(text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            parsed.value[0].as_number().map(Number::as_str),
            Some(&*base)
        );
        assert_eq!(parsed.value[1].as_number().map(Number::as_str), Some("NaN"));
    }

    #[test]
    fn what_is_not_json_even_so_is_an_error() {
        for text in ["{\"a\":1,}", "[NaN", "{'a':1}", "// c\n{}", ""] {
            assert!(parse(text.as_bytes()).is_err(), "{text:?}");
        }
        let deep = format!("{}NaN{}", "[".repeat(200), "]".repeat(200));
        assert!(parse(deep.as_bytes()).is_err());
    }

    #[test]
    fn faults_no_repair_removes_are_told_at_once() {
        let fault = |t: &str| serde_json::from_str::<Value>(t).err();
        let log = format!("[INFO] server started on :8080\n{}", "[NaN] x\n".repeat(10));
        assert!(fault(&log).is_some_and(|e| !repairable_at(log.as_bytes(), &e)));
        assert!(parse(log.as_bytes()).is_err());
        // A literal or an escape on a later line of a pretty text is found where it is.
        let pretty = format!("[\n{}  NaN\n]", "  1,\n".repeat(50));
        assert!(fault(&pretty).is_some_and(|e| repairable_at(pretty.as_bytes(), &e)));
        assert_eq!(parse(pretty.as_bytes()).map(|p| p.literals).ok(), Some(1));
        let escaped = format!(
            "[\n{}  \"x\\udcff\"\n]",
            "  \"aaaaaaaaaaaaaaaaaaaaaaaa\",\n".repeat(50)
        );
        assert_eq!(
            parse(escaped.as_bytes()).map(|p| p.surrogates).ok(),
            Some(1)
        );
    }

    #[test]
    fn masking_keeps_lengths_and_makes_strict_json() {
        let text = br#"{"id":3,"result":{"a":NaN,"b":[Infinity,-Infinity],"s":"NaN"}}"#;
        let mut masked = text.to_vec();
        assert_eq!(mask_literals(&mut masked), 3);
        assert_eq!(masked.len(), text.len());
        assert_eq!(
            String::from_utf8_lossy(&masked),
            r#"{"id":3,"result":{"a":0.0,"b":[0.000000,-0.000000],"s":"NaN"}}"#
        );
    }

    #[test]
    fn json_documents_are_objects_and_arrays() {
        assert_eq!(
            json_document(" [NaN]"),
            Some(Value::Array(vec![Value::Number(Literal::NaN.number())]))
        );
        assert_eq!(json_document("NaN"), None);
        assert_eq!(json_document("\"x\""), None);
        assert_eq!(json_document("[1,"), None);
    }

    #[test]
    fn text_items_of_python_json_are_json_documents() {
        use crate::paginate::Document;
        let doc = Document::from_text(r#"[{"name":"a_\udcff","v":NaN}]"#.to_owned());
        let Document::Json(v) = &doc else {
            panic!("paged as text: {doc:?}")
        };
        assert_eq!(v[0]["name"], "a_\u{fffd}");
        assert_eq!(doc.render(9), "[{\"name\":\"a_\u{fffd}\",\"v\":NaN}]");
        // Nesting deeper than 128 levels stays text, byte for byte.
        let deep = format!("{}NaN{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(Document::from_text(deep.clone()), Document::Text(deep));
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "-?[0-9]{1,3}\\.[0-9]{1,4}(e-?[0-9]{1,2})?"
                .prop_map(|s| { serde_json::from_str::<Value>(&s).unwrap_or(Value::Null) }),
            prop::sample::select(Literal::ALL.to_vec()).prop_map(|l| Value::Number(l.number())),
            "[a-zA-Z \"\\\\§-]{0,8}(NaN|Infinity)?".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
                prop::collection::vec(("[a-zN\\\\\"§]{0,5}", inner), 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// `v` with every `§` of its strings and keys replaced by U+FFFD.
    fn replaced(v: &Value) -> Value {
        let fix = |s: &str| s.replace('§', "\u{fffd}");
        match v {
            Value::String(s) => Value::String(fix(s)),
            Value::Array(items) => Value::Array(items.iter().map(replaced).collect()),
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (fix(k), replaced(v))).collect())
            }
            other => other.clone(),
        }
    }

    proptest! {
        /// Any value with literals, written by serde_json (as Python would write it, each `§`
        /// as a lone surrogate escape), reads back as the same value (each `§` U+FFFD);
        /// repaired and masked in place, it is strict JSON of the same length.
        #[test]
        fn written_values_read_back(v in arb_value(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&v)
            } else {
                serde_json::to_string(&v)
            }.unwrap_or_default();
            let lone = text.matches('§').count();
            let text = text.replace('§', "\\udcff");
            let parsed = parse(text.as_bytes());
            let expected = replaced(&v);
            prop_assert_eq!(parsed.as_ref().map(|p| &p.value).ok(), Some(&expected), "{}", text);
            prop_assert_eq!(parsed.as_ref().map(|p| p.surrogates).ok(), Some(lone));
            let mut masked = text.clone().into_bytes();
            replace_lone_surrogates(&mut masked);
            mask_literals(&mut masked);
            prop_assert_eq!(masked.len(), text.len());
            prop_assert!(serde_json::from_slice::<Value>(&masked).is_ok());
        }

        /// Escape-like noise never panics and keeps its length; strings of escapes (lone
        /// surrogates included) read once repaired.
        #[test]
        fn repair_keeps_length_and_makes_escapes_readable(
            units in proptest::collection::vec(0xD700u32..0xE100, 0..12),
            noise in "[\\\\ud0-9a-f\"NIa-]{0,24}",
        ) {
            let mut b = noise.clone().into_bytes();
            replace_lone_surrogates(&mut b);
            prop_assert_eq!(b.len(), noise.len());
            let _ = parse(noise.as_bytes());
            let escapes: String = units.iter().map(|u| format!("\\u{u:04x}")).collect();
            let json = format!("[\"{escapes}\",NaN]");
            prop_assert!(parse(json.as_bytes()).is_ok());
        }
    }
}
