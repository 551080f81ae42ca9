//! The head of a long JSON text: its first part, read alone as a JSON value, and a check that
//! the whole text is one JSON value agreeing with that head.
//!
//! Page 1 of a 12 MB document needs about 40 KB of it. [`head`] reads the text up to the first
//! comma (outside strings) after at least `min_bytes` bytes of non-whitespace and closes the
//! containers still open there: `[{"a":1},{"b":[2,3` + `,…` becomes `[{"a":1},{"b":[2,3]}]`.
//! That value is the document with the open containers cut short: every unit before
//! [`Head::last`] (inclusive, in document order) is whole and equal in both, provided
//! [`rest_agrees`] holds for the whole text:
//! - the whole text is one strict JSON value (`serde_json`, its default nesting limit of 128),
//!   so it is paged as JSON (see [`crate::dialect::json_document`], which tries the strict
//!   parse first);
//! - no object on the open chain has a key twice: `serde_json` keeps the last value of a
//!   repeated key at the place of the first, so a key repeated after the cut would change a
//!   member the head holds (objects wholly inside the head resolve their repeats the same
//!   way in both).
//!
//! A pager working on the head from the start, and ending its page at or before
//! [`Head::last`], writes the page it would write on the whole document; the caller checks the
//! end ([`crate::paginate::Position::at_or_before`]).

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

pub mod halves;

/// The head of a JSON text (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    /// The first part of the document, its open containers closed.
    pub value: Value,
    /// The path (element and member indices from the root) of the last whole unit on the
    /// open chain: the last child of each open container, from the root down; its last step
    /// is the last whole child of the deepest open container.
    pub last: Vec<usize>,
    /// Bytes of the text the head was read from (up to the cut).
    pub read: usize,
}

/// The head of `text` holding at least `min_bytes` bytes of its non-whitespace characters
/// (outside strings; inside strings every byte counts), cut at the first comma after that.
///
/// `None` when `text` is not an array or object (first non-whitespace byte), when the
/// document ends before such a comma (it is short: read it whole), or when the head does not
/// parse as strict JSON (the caller reads the text whole, with its dialect rules).
pub fn head(text: &str, min_bytes: usize) -> Option<Head> {
    let bytes = text.as_bytes();
    let start = container_start(bytes)?;
    let mut open: Vec<u8> = Vec::new();
    let mut dense = 0usize;
    let mut cut = None;
    let mut i = start;
    while let Some(&c) = bytes.get(i) {
        match c {
            b'"' => {
                let j = string_end(bytes, i)?;
                dense += j - i;
                i = j;
                continue;
            }
            b'{' | b'[' => open.push(c),
            b'}' | b']' => {
                open.pop();
                if open.is_empty() {
                    // The root closed before the head was long enough.
                    return None;
                }
            }
            b',' if dense >= min_bytes => {
                cut = Some(i);
                break;
            }
            c if is_ws(c) => {
                i += 1;
                continue;
            }
            _ => {}
        }
        dense += 1;
        i += 1;
    }
    let cut = cut?;
    let mut closed = String::with_capacity(cut + open.len());
    closed.push_str(text.get(..cut)?);
    closed.extend(
        open.iter()
            .rev()
            .map(|&o| if o == b'{' { '}' } else { ']' }),
    );
    let value: Value = serde_json::from_str(&closed).ok()?;
    let mut last = Vec::with_capacity(open.len());
    let mut node = &value;
    for level in 0..open.len() {
        let n = match node {
            Value::Array(a) => a.len(),
            Value::Object(m) => m.len(),
            _ => return None,
        };
        let i = n.checked_sub(1)?;
        last.push(i);
        if level + 1 < open.len() {
            node = match node {
                Value::Array(a) => a.get(i)?,
                Value::Object(m) => m.values().nth(i)?,
                _ => return None,
            };
        }
    }
    Some(Head {
        value,
        last,
        read: cut,
    })
}

/// Whether the whole of `text` is one strict JSON value (nesting at most 128 deep) in which
/// no object on the open chain of its head (the containers along `last`, the head's
/// [`Head::last`]) has a key twice: then the head's units up to `last` are those of the
/// document. Reads the text once without building it (only the chain's keys are kept), as
/// `Value` reads it: an object whose first key is one of `serde_json`'s private tokens is what
/// `Value` makes of it (see `Skip`). [`halves`] gives the same answer on two threads.
pub fn rest_agrees(text: &str, last: &[usize]) -> bool {
    let open = RefCell::new(Open::default());
    let mut de = serde_json::Deserializer::from_str(text);
    Chain {
        path: last,
        depth: 0,
        open: &open,
    }
    .deserialize(&mut de)
    .is_ok()
        && de.end().is_ok()
}

/// Whether `text` starts (after JSON whitespace) with `[` or `{`: the texts [`head`] and
/// [`halves`] may speak for.
pub fn opens_container(text: &str) -> bool {
    container_start(text.as_bytes()).is_some()
}

/// The index of the first byte of `bytes` that is not JSON whitespace, when it is `[` or `{`.
fn container_start(bytes: &[u8]) -> Option<usize> {
    let start = bytes.iter().position(|b| !is_ws(*b))?;
    matches!(bytes[start], b'{' | b'[').then_some(start)
}

/// The index right after the string whose opening quote is at `open` in `bytes`, escapes
/// skipped (`memchr2`: strings are most of the bytes of most documents); `None` when `bytes`
/// ends first.
fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut j = open + 1;
    loop {
        let at = j + memchr::memchr2(b'"', b'\\', bytes.get(j..)?)?;
        if bytes[at] == b'"' {
            return Some(at + 1);
        }
        j = at + 2;
    }
}

/// JSON whitespace (RFC 8259 §2).
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The containers a pass has entered and not yet left: when the text it reads ends early
/// (the first of [`halves`]), those open at its end.
#[derive(Debug, Default)]
struct Open {
    /// `b'['` or `b'{'` per open container, the root first.
    kinds: Vec<u8>,
    /// The keys read so far of each open object on the chain, with its depth (the root's is 0).
    chain_keys: Vec<(usize, HashSet<String>)>,
    /// The depth of the deepest container of the chain entered so far.
    chain_reached: usize,
}

impl Open {
    fn enter(cell: Option<&RefCell<Open>>, kind: u8) {
        if let Some(cell) = cell {
            cell.borrow_mut().kinds.push(kind);
        }
    }

    fn leave(cell: Option<&RefCell<Open>>) {
        if let Some(cell) = cell {
            cell.borrow_mut().kinds.pop();
        }
    }
}

/// Reads a container on the open chain: `path[0]` is the index of the chain's next container
/// in it (when `path` has more steps); every other child is skipped unbuilt. `depth` is the
/// container's own (the root's is 0).
struct Chain<'p> {
    path: &'p [usize],
    depth: usize,
    open: &'p RefCell<Open>,
}

impl Chain<'_> {
    /// The seed for child `i`, when it is on the chain.
    fn down(&self, i: usize) -> Option<Chain<'_>> {
        (self.path.len() > 1 && self.path.first() == Some(&i)).then(|| Chain {
            path: &self.path[1..],
            depth: self.depth + 1,
            open: self.open,
        })
    }

    fn enter(&self, kind: u8) {
        let mut open = self.open.borrow_mut();
        open.kinds.push(kind);
        open.chain_reached = open.chain_reached.max(self.depth);
    }

    fn skip(&self) -> Skip<'_> {
        Skip {
            open: Some(self.open),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Chain<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Chain<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON array or object")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.enter(b'[');
        let mut i = 0;
        loop {
            let more = match self.down(i) {
                Some(chain) => seq.next_element_seed(chain)?.is_some(),
                None => seq.next_element_seed(self.skip())?.is_some(),
            };
            if !more {
                break;
            }
            i += 1;
        }
        Open::leave(Some(self.open));
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.enter(b'{');
        self.open
            .borrow_mut()
            .chain_keys
            .push((self.depth, HashSet::new()));
        let mut i = 0;
        while let Some(key) = map.next_key::<String>()? {
            if i == 0 && (key == NUMBER_TOKEN || key == RAW_TOKEN) {
                // `serde_json` reads such an object as something else (see `Skip`).
                return Err(de::Error::custom("a serde_json token as the first key"));
            }
            let fresh = match self.open.borrow_mut().chain_keys.last_mut() {
                Some((_, seen)) => seen.insert(key),
                None => true,
            };
            if !fresh {
                return Err(de::Error::custom("a key repeated in an object of the head"));
            }
            match self.down(i) {
                Some(chain) => map.next_value_seed(chain)?,
                None => {
                    map.next_value_seed(self.skip())?;
                }
            }
            i += 1;
        }
        self.open.borrow_mut().chain_keys.pop();
        Open::leave(Some(self.open));
        Ok(())
    }
}

/// The first keys by which `serde_json` (with the workspace's `arbitrary_precision`, and
/// `raw_value` that the proxy turns on) reads an object as a number or a raw value instead:
/// `{"$serde_json::private::Number":"12"}` is the number 12 to `Value`, and an object with
/// more members after it does not parse at all.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";
const RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// Reads any value as [`Value`]'s deserializer would, without building it: objects whose first
/// key is [`NUMBER_TOKEN`] must hold a number's spelling (then `serde_json` requires that one
/// member only, as for `Value`); [`RAW_TOKEN`] is refused (never in a text `Value` reads as an
/// object: the caller takes the full path). Other keys, strings and scalars are read, not kept.
/// Its value is the value's nesting: the containers on its deepest path (a scalar's is 0,
/// `[[1]]`'s 2), where a number `serde_json` hands over as a one-member object (floats, `-0`,
/// integers past 64 bits, with `arbitrary_precision`) counts 1 as that object's spelling in
/// the text would: the visitor cannot tell the two apart. With `open`, the containers
/// entered and not left are kept there.
#[derive(Clone, Copy)]
struct Skip<'o> {
    open: Option<&'o RefCell<Open>>,
}

impl<'de> DeserializeSeed<'de> for Skip<'_> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_unit<E: de::Error>(self) -> Result<usize, E> {
        Ok(0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        Open::enter(self.open, b'[');
        let mut inner = 0;
        while let Some(d) = seq.next_element_seed(self)? {
            inner = inner.max(d);
        }
        Open::leave(self.open);
        Ok(inner + 1)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<usize, A::Error> {
        Open::enter(self.open, b'{');
        let mut inner = match map.next_key_seed(FirstKey)? {
            None => 0,
            Some(FirstKind::Number) => {
                // A number (`serde_json` hands `arbitrary_precision` numbers over this way),
                // or an object spelled like one: the same to `Value`.
                map.next_value_seed(NumberSpelling)?;
                Open::leave(self.open);
                return Ok(1);
            }
            Some(FirstKind::Raw) => {
                return Err(de::Error::custom("a serde_json raw value token as a key"));
            }
            Some(FirstKind::Other) => map.next_value_seed(self)?,
        };
        while map.next_key::<IgnoredAny>()?.is_some() {
            inner = inner.max(map.next_value_seed(self)?);
        }
        Open::leave(self.open);
        Ok(inner + 1)
    }
}

/// What a first key is to `Value`.
enum FirstKind {
    Number,
    Raw,
    Other,
}

/// Classifies a first key without keeping it.
struct FirstKey;

impl<'de> DeserializeSeed<'de> for FirstKey {
    type Value = FirstKind;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<FirstKind, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for FirstKey {
    type Value = FirstKind;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<FirstKind, E> {
        Ok(match v {
            NUMBER_TOKEN => FirstKind::Number,
            RAW_TOKEN => FirstKind::Raw,
            _ => FirstKind::Other,
        })
    }
}

/// The value under [`NUMBER_TOKEN`]: a string `serde_json` reads as a number.
struct NumberSpelling;

impl<'de> DeserializeSeed<'de> for NumberSpelling {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for NumberSpelling {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number's spelling")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        v.parse::<serde_json::Number>()
            .map(drop)
            .map_err(|_| E::custom("not a number's spelling"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn head_closes_the_open_containers_and_names_the_last_whole_unit() {
        let text = r#"[{"a":1},{"b":[2,3,4],"c":5}]"#;
        let h = head(text, 17).unwrap();
        assert_eq!(h.value, json!([{"a":1},{"b":[2,3]}]));
        assert_eq!(h.last, vec![1, 0, 1]);
        assert_eq!(&text[..h.read], r#"[{"a":1},{"b":[2,3"#);
        assert!(rest_agrees(text, &h.last));
    }

    #[test]
    fn whitespace_does_not_count_and_commas_in_strings_do_not_cut() {
        let text = "[\n  \"x,y,z\",\n  \"w\",\n  1\n]";
        let h = head(text, 9).unwrap();
        assert_eq!(h.value, json!(["x,y,z", "w"]));
        assert_eq!(h.last, vec![1]);
        let h = head(text, 0).unwrap();
        assert_eq!(h.value, json!(["x,y,z"]));
        let escaped = r#"["a\",b", "c", "d"]"#;
        assert_eq!(head(escaped, 0).unwrap().value, json!(["a\",b"]));
    }

    #[test]
    fn short_documents_scalars_and_bad_heads_have_no_head() {
        assert_eq!(head("[1,2,3]", 100), None);
        assert_eq!(head("{\"a\":1}", 0), None);
        assert_eq!(head("  \"a,b\"", 0), None);
        assert_eq!(head("12", 0), None);
        assert_eq!(head("[NaN,1,2]", 0), None);
        assert_eq!(head("[}1,2]", 0), None);
    }

    #[test]
    fn the_rest_must_be_json_without_keys_repeated_on_the_chain() {
        let ok = r#"{"a":{"x":1,"y":2},"b":3,"c":{"x":1,"x":2}}"#;
        let h = head(ok, 11).unwrap();
        assert_eq!(h.value, json!({"a":{"x":1}}));
        // A repeat in an object wholly after the cut is the document's own business.
        assert!(rest_agrees(ok, &h.last));
        // `a` repeated at the root (open at the cut) would change what the head holds.
        let repeated = r#"{"a":{"x":1,"y":2},"b":3,"a":4}"#;
        let h = head(repeated, 11).unwrap();
        assert!(!rest_agrees(repeated, &h.last));
        let truncated = r#"[{"a":1},{"b":2},{"c""#;
        let h = head(truncated, 8).unwrap();
        assert!(!rest_agrees(truncated, &h.last));
        let trailing = r#"[{"a":1},{"b":2}] x"#;
        let h = head(trailing, 8).unwrap();
        assert!(!rest_agrees(trailing, &h.last));
        // Objects `serde_json` reads as a number or a raw value (`Value` does not parse the
        // first; the head cannot speak for the second).
        for odd in [
            r#"[{"a":1},{"$serde_json::private::Number":"1","b":2}]"#,
            r#"[{"a":1},{"$serde_json::private::Number":"x"}]"#,
            r#"[{"a":1},{"$serde_json::private::RawValue":"[1]"}]"#,
        ] {
            let h = head(odd, 8).unwrap();
            assert!(!rest_agrees(odd, &h.last), "{odd}");
            assert!(serde_json::from_str::<Value>(odd).is_err() || odd.contains("RawValue"));
        }
        let number = r#"[{"a":1},{"$serde_json::private::Number":"12"},3.5e7,-0]"#;
        let h = head(number, 8).unwrap();
        assert!(rest_agrees(number, &h.last));
        assert_eq!(serde_json::from_str::<Value>(number).unwrap()[1], json!(12));
        let nan = r#"[{"a":1},{"b":NaN}]"#;
        let h = head(nan, 8).unwrap();
        assert!(!rest_agrees(nan, &h.last));
    }
}
