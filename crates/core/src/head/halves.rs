//! [`rest_agrees`](super::rest_agrees) on two threads: the text cut in two right after a comma,
//! each half read by a pass of its own, and the two passes' findings put together.
//!
//! Why it is the same answer. A JSON text holds a raw line break only between tokens
//! (RFC 8259 §7: control characters inside strings are escaped), so from a line break a scan
//! that skips strings finds the next comma outside strings, a separator; [`Halves::new`] cuts
//! right after it. The whole text is then one JSON value exactly when
//! - the first half is its beginning: `serde_json` reads it to its end with no error but running
//!   out of text right after the cut's comma, where a value is due ([`Halves::first`]; not
//!   out of text elsewhere, as in a `\u` escape the cut left short), which leaves a stack of
//!   open containers. Had the line break been inside a string (the text is not JSON then),
//!   that read stops at it with an error, so such a cut never passes;
//! - the second half goes on from that stack: members (each read by `serde_json` alone), then a
//!   closing bracket per open container, innermost first, and nothing but whitespace after the
//!   root's ([`Halves::second`]); [`agree`] compares the two stacks.
//!
//! The rest of what the whole read checks is put together in [`agree`] too: nesting (at most
//! [`MAX_OPEN`] containers open at once) from each member's nesting and the containers around
//! it (a member that may sit exactly at the limit, by a number `serde_json` hands over as an
//! object, leaves the answer to one pass over the whole text); keys: an object on the head's
//! chain that is open at the cut has keys in both halves, and none may be in both, or twice in
//! the second (the second half notes where its keys are and reads again only those of objects
//! on the chain). First keys (the `serde_json` tokens `rest_agrees` refuses there) are all in
//! the first half: every container open at the cut has a member before it.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, Visitor};
use serde_json::error::Category;

use super::{Chain, Open, Skip, is_ws, string_end};

/// The most containers `serde_json` (its default recursion limit of 128) lets be open at once:
/// entering the 128th fails.
pub const MAX_OPEN: usize = 127;

/// How far past the point asked for [`Halves::new`] looks for a line break and the comma
/// after it, in bytes.
const SEARCH_BYTES: usize = 64 * 1024;

/// A JSON text cut in two right after a comma that follows a line break (see the module
/// docs); only [`Halves::new`] makes one.
#[derive(Debug, Clone, Copy)]
pub struct Halves<'t> {
    text: &'t str,
    first: &'t str,
    second: &'t str,
}

impl<'t> Halves<'t> {
    /// Cuts `text` right after the first comma outside strings that follows the first line
    /// break at or after byte `near` (strings are skipped from the line break on), when both
    /// are within [`SEARCH_BYTES`] bytes of `near`. `None` when there is no such comma: a
    /// text without line breaks (compact JSON) is checked whole.
    pub fn new(text: &'t str, near: usize) -> Option<Halves<'t>> {
        let end = near.saturating_add(SEARCH_BYTES).min(text.len());
        let bytes = text.as_bytes().get(..end)?;
        let window = bytes.get(near..)?;
        let mut i = near + memchr::memchr(b'\n', window)? + 1;
        while i < end {
            match bytes[i] {
                b'"' => i = string_end(bytes, i)?,
                b',' => {
                    // A comma is one byte: both sides are whole UTF-8.
                    let (first, second) = text.split_at_checked(i + 1)?;
                    return Some(Halves {
                        text,
                        first,
                        second,
                    });
                }
                _ => i += 1,
            }
        }
        None
    }

    /// The byte offset of the cut (the first half's length).
    pub fn at(&self) -> usize {
        self.first.len()
    }

    /// Reads the first half as the beginning of a JSON text whose head has its last whole unit
    /// at `last` ([`super::Head::last`]). `None` when it is not one (an error other than the
    /// text running out, a key repeated on the chain, a `serde_json` token as a first key on
    /// it, nesting past [`MAX_OPEN`]), or when the deepest container of the chain opens after
    /// the cut (cut past the head's [`super::Head::read`] for an answer).
    pub fn first(&self, last: &[usize]) -> Option<FirstHalf> {
        let open = RefCell::new(Open::default());
        let mut de = serde_json::Deserializer::from_str(self.first);
        let read = Chain {
            path: last,
            depth: 0,
            open: &open,
        }
        .deserialize(&mut de);
        match read {
            Err(e) if ends_after_separator(&e) => {}
            // The whole value ended before the cut's comma (not one JSON value), or the text
            // ran out inside a token (the cut's comma was not a separator).
            _ => return None,
        }
        let Open {
            kinds,
            chain_keys,
            chain_reached,
        } = open.into_inner();
        // The whole chain opens before the cut (else keys of an object on it would go
        // unchecked in the second half, which reads members it does not keep): a cut past the
        // head's `read` has it so.
        if chain_reached + 1 < last.len() {
            return None;
        }
        Some(FirstHalf { kinds, chain_keys })
    }

    /// Reads the second half as the members and closing brackets that end a JSON text whose
    /// containers were left open right after a separating comma. `None` when it is not that,
    /// or when `stop` is set (checked before each member: a caller that no longer needs the
    /// answer ends the read early).
    pub fn second(&self, stop: &AtomicBool) -> Option<SecondHalf<'t>> {
        second_half(self.second, stop)
    }

    /// Both halves read one after the other and put together, the whole text read in one pass
    /// where they cannot tell ([`agree`]): what [`rest_agrees`](super::rest_agrees) answers
    /// for the whole text (property-tested).
    pub fn agree_in_turn(&self, last: &[usize]) -> bool {
        let (Some(first), Some(second)) = (self.first(last), self.second(&AtomicBool::new(false)))
        else {
            return false;
        };
        agree(&first, &second).unwrap_or_else(|| super::rest_agrees(self.text, last))
    }
}

/// Whether `e` is the error `serde_json` gives a text that ends right after a separating
/// comma, where a value is due (`[0,` or `{"a": 0,`) — and not one for a text that runs out
/// elsewhere. A `\u` escape reads its four hex digits only when four bytes are left, and
/// reports running out of text when they are not: a cut right after `"\u",` or
/// `"\u<line break>,` (neither is JSON) ends with an error of [`Category::Eof`] too, in a
/// string, not after a separator. The message to match is `serde_json`'s own, taken from a
/// text known to end so (its wording is not relied on), position left out. It is the error of
/// containers read through `deserialize_any` (a `SeqAccess`/`MapAccess`), as the passes read
/// them (`Chain`, `Skip`); were they ever to skip a container with `IgnoredAny` instead,
/// `serde_json`'s skipping reader words it otherwise ("EOF while parsing an object"), and good
/// texts would be checked whole (never a bad one taken).
fn ends_after_separator(e: &serde_json::Error) -> bool {
    static AFTER_SEPARATOR: OnceLock<Option<String>> = OnceLock::new();
    fn what(e: &serde_json::Error) -> String {
        let text = e.to_string();
        match text.rfind(" at line ") {
            Some(at) => text[..at].to_string(),
            None => text,
        }
    }
    let expected = AFTER_SEPARATOR.get_or_init(|| {
        // Read as the passes read containers (`deserialize_any`), not skipped.
        serde_json::from_str::<serde_json::Value>("[0,")
            .err()
            .map(|e| what(&e))
    });
    e.classify() == Category::Eof && expected.as_deref() == Some(what(e).as_str())
}

/// What the first half's read found: the containers open at its end.
#[derive(Debug)]
pub struct FirstHalf {
    /// `b'['` or `b'{'` per container open at the cut, the root first.
    kinds: Vec<u8>,
    /// The keys before the cut of each object on the chain open at the cut, with its depth.
    chain_keys: Vec<(usize, HashSet<String>)>,
}

/// What the second half's read found: one level per container it closes, innermost first.
#[derive(Debug)]
pub struct SecondHalf<'t> {
    /// The second half (the keys' spans are offsets into it).
    text: &'t str,
    levels: Vec<Level>,
}

/// The part of one open container after the cut.
#[derive(Debug, Default)]
struct Level {
    /// `b'['` or `b'{'`; 0 until known.
    kind: u8,
    /// The deepest nesting of a member read at this level, as [`Skip`] tells it: a number
    /// `serde_json` hands over as a one-member object (`arbitrary_precision`) counts 1, as a
    /// container does (its spelling can be one), so the true nesting may be one less.
    deepest: usize,
    /// Where the keys of the members read at this level are (objects only), quotes
    /// included: read again only for an object on the chain.
    keys: Vec<Range<usize>>,
}

impl Level {
    /// Records that this level is a container of `kind`; `None` when it was found to be the
    /// other kind.
    fn is(&mut self, kind: u8) -> Option<()> {
        if self.kind == 0 {
            self.kind = kind;
        }
        (self.kind == kind).then_some(())
    }
}

/// Whether the two halves' findings make the whole text one JSON value that agrees with its
/// head: the same containers open at the cut, nesting within [`MAX_OPEN`], and no key of an
/// object on the chain both before and after the cut or twice after it. `None` when the
/// findings cannot tell: a member whose nesting may be [`MAX_OPEN`] + 1 or one less (see
/// [`Level::deepest`]); the whole text is to be read in one pass then.
pub fn agree(first: &FirstHalf, second: &SecondHalf<'_>) -> Option<bool> {
    let open = first.kinds.len();
    if second.levels.len() != open {
        return Some(false);
    }
    let mut unsure = false;
    for (l, level) in second.levels.iter().enumerate() {
        // The members of level `l` (0 the innermost) sit inside `open - l` containers.
        let around = open - l;
        if first.kinds[around - 1] != level.kind || around + level.deepest > MAX_OPEN + 1 {
            return Some(false);
        }
        unsure |= around + level.deepest == MAX_OPEN + 1;
    }
    let keys_agree = first.chain_keys.iter().all(|(depth, seen)| {
        let Some(level) = open
            .checked_sub(depth + 1)
            .and_then(|l| second.levels.get(l))
        else {
            return false;
        };
        let mut after = HashSet::with_capacity(level.keys.len());
        level.keys.iter().all(|span| {
            second
                .text
                .get(span.clone())
                .and_then(|k| serde_json::from_str::<String>(k).ok())
                .is_some_and(|k| !seen.contains(&k) && after.insert(k))
        })
    });
    if !keys_agree {
        return Some(false);
    }
    (!unsure).then_some(true)
}

/// A value's nesting, read by [`Skip`] (for [`serde_json::StreamDeserializer`], which takes a
/// type rather than a seed).
struct Depth(usize);

impl<'de> Deserialize<'de> for Depth {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Depth, D::Error> {
        Skip { open: None }.deserialize(d).map(Depth)
    }
}

/// A string, read (escapes and all, as `serde_json` reads keys) and not kept.
struct Str;

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Str, D::Error> {
        d.deserialize_str(StrVisitor)
    }
}

struct StrVisitor;

impl Visitor<'_> for StrVisitor {
    type Value = Str;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Str, E> {
        Ok(Str)
    }
}

/// One value of type `T` read by `serde_json` from byte `at` of `text` (whitespace before it
/// skipped), and the offset right after it.
fn read<'de, T: Deserialize<'de>>(text: &'de str, at: usize) -> Option<(T, usize)> {
    let mut values = serde_json::Deserializer::from_str(text.get(at..)?).into_iter::<T>();
    let value = values.next()?.ok()?;
    Some((value, at + values.byte_offset()))
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(|b| is_ws(*b)) {
        i += 1;
    }
    i
}

/// See [`Halves::second`].
fn second_half<'t>(text: &'t str, stop: &AtomicBool) -> Option<SecondHalf<'t>> {
    let bytes = text.as_bytes();
    let mut levels = Vec::new();
    let mut level = Level::default();
    let mut i = 0;
    loop {
        // A member is due (right after a separating comma).
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        i = skip_ws(bytes, i);
        if *bytes.get(i)? == b'"' {
            let (Str, end) = read::<Str>(text, i)?;
            let colon = skip_ws(bytes, end);
            if bytes.get(colon) == Some(&b':') {
                level.is(b'{')?;
                level.keys.push(i..end);
                let (Depth(d), end) = read::<Depth>(text, colon + 1)?;
                level.deepest = level.deepest.max(d);
                i = end;
            } else {
                level.is(b'[')?;
                i = end;
            }
        } else {
            level.is(b'[')?;
            let (Depth(d), end) = read::<Depth>(text, i)?;
            level.deepest = level.deepest.max(d);
            i = end;
        }
        // After a member: a comma and the next member, or closing brackets.
        loop {
            i = skip_ws(bytes, i);
            match *bytes.get(i)? {
                b',' => {
                    i += 1;
                    break;
                }
                c @ (b']' | b'}') => {
                    level.is(if c == b']' { b'[' } else { b'{' })?;
                    levels.push(std::mem::take(&mut level));
                    i += 1;
                    if skip_ws(bytes, i) == bytes.len() {
                        return Some(SecondHalf { text, levels });
                    }
                    // The closed container was the parent's member.
                }
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::head::{head, rest_agrees};

    /// Both answers for `text` cut at each line break in turn; the halves' answer must be the
    /// whole read's wherever a cut is found.
    fn same_everywhere(text: &str, last: &[usize]) -> usize {
        let whole = rest_agrees(text, last);
        let mut cuts = 0;
        for near in 0..text.len() {
            if let Some(h) = Halves::new(text, near) {
                assert_eq!(h.agree_in_turn(last), whole, "{text:?} cut at {}", h.at());
                cuts += 1;
            }
        }
        cuts
    }

    #[test]
    fn cuts_come_right_after_a_comma_past_a_line_break() {
        let text = "[\n  \"a,b\",\n  {\"c\": \"d\\\",\"},\n  3\n]";
        let h = Halves::new(text, 0).unwrap();
        assert!(h.first.ends_with("\"a,b\","));
        // Past the first line break, the comma and the brackets in the string do not cut.
        let h = Halves::new(text, 5).unwrap();
        assert!(h.first.ends_with("\"},"), "{:?}", h.first);
        assert!(Halves::new(text, 12).is_none());
        assert!(Halves::new("[1,2,3]", 0).is_none());
        assert!(Halves::new(text, text.len() + 5).is_none());
    }

    #[test]
    fn the_halves_answer_as_the_whole_read_does() {
        let ok = "{\n\"a\": [1,\n2, {\"x\": [3,\n4]}],\n\"b\": {\"y\": 1,\n\"z\": 2},\n\"c\": 3\n}";
        let h = head(ok, 4).unwrap();
        assert!(same_everywhere(ok, &h.last) > 0);
        assert!(rest_agrees(ok, &h.last));
        // A key of the open root repeated after the cut; one repeated inside a closed object.
        for (text, whole) in [
            ("{\n\"a\": [1,\n2],\n\"b\": 2,\n\"a\": 3\n}", false),
            ("{\n\"a\": [1,\n2],\n\"b\": {\"x\": 1,\n\"x\": 2}\n}", true),
            ("{\n\"a\": [1,\n2],\n\"b\": 2,\n\"b\": 3\n}", false),
            ("[\n[1,\n2],\n3,\n4]", true),
            ("[\n[1,\n2],\n3,\n4,]", false),
            ("[\n[1,\n2],\n3,\n4]]", false),
            ("[\n[1,\n2],\n3,\n4} ", false),
            ("[\n[1,\n2],\n3,\n4] x", false),
            ("[\n[1,\n2],\n\"3\":\n4]", false),
            ("{\n\"a\": [1,\n2],\n\"b\"\n}", false),
            ("[\n[1,\n2],\n\"x\n\",\n4]", false),
            (
                "[\n[1,\n2],\n{\"$serde_json::private::Number\": \"1\"},\n4]",
                true,
            ),
            (
                "[\n[1,\n2],\n{\"$serde_json::private::Number\": \"1\",\n\"b\": 1},\n4]",
                false,
            ),
            (
                "[\n[1,\n2],\n{\"b\": 1,\n\"$serde_json::private::Number\": \"1\"},\n4]",
                true,
            ),
        ] {
            let h = head(text, 1).unwrap();
            assert_eq!(rest_agrees(text, &h.last), whole, "{text}");
            assert!(same_everywhere(text, &h.last) > 0, "{text}");
        }
    }

    #[test]
    fn a_unicode_escape_the_cut_leaves_short_is_not_the_first_halfs_end() {
        // The property test's input (session 12's CI dry run): a quote inserted into
        // pretty-printed JSON after `\\`, so a string holds `\u",` — not JSON. `serde_json`
        // reading the first half (cut right after that comma) ran out of text in the `\u`
        // escape's four hex digits, which passed as the end a separator leaves.
        let text = "{\n  \"a\": \"\",\n  \"b\": {\n    \"]\\\",\": null\n  },\n  \"]\": null,\n  \
                    \"a],]\": {\n    \",\\\"\": 1000000000000000000,\n    \",]a,\": \
                    -1000000000000000000,\n    \"]\": \"\\\" : a\\\"\\u\",\n    \"\\\",,\": \
                    \"a\\\" \"\n  }\n}";
        let h = head(text, 0).unwrap();
        assert!(!rest_agrees(text, &h.last));
        let cut = (0..text.len())
            .filter_map(|near| Halves::new(text, near))
            .find(|h| h.at() == 157)
            .unwrap();
        assert!(cut.first(&h.last).is_none());
        assert!(same_everywhere(text, &h.last) > 0);
        // The kind: `\u` with fewer than four bytes before the cut's end, the string closed
        // (or not) before the comma, with a line break in it, or the escape a surrogate's
        // second half; and the same strings where they are JSON.
        for (s, json) in [
            ("\\u", false),
            ("\\u1", false),
            ("\\u12", false),
            ("\\u123", false),
            ("\\u1234", true),
            ("\\ud83d\\u", false),
            ("\\ud83d\\ude80", true),
            ("\\\\u", true),
            ("\\\\\\u", false),
        ] {
            for text in [
                format!("[\n[1,\n2],\n\"{s}\",\n4]"),
                format!("{{\n\"a\": [1,\n2],\n\"b\": \"{s}\",\n\"c\": 4\n}}"),
                format!("[\n[1,\n2],\n\"{s}\n\",\n4]"),
                format!("[\n[1,\n2],\n\"x{s}\n,\n4]"),
            ] {
                let h = head(&text, 1).unwrap();
                let whole = rest_agrees(&text, &h.last);
                assert!(whole == json || !whole, "{text}");
                assert!(same_everywhere(&text, &h.last) > 0, "{text}");
            }
        }
    }

    #[test]
    fn only_a_text_that_ends_after_a_separator_ends_so() {
        let end = |text: &str| {
            let e = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
            ends_after_separator(&e)
        };
        assert!(end("[0,"));
        assert!(end("{\"a\": 0,"));
        assert!(end("[[0],\n  "));
        // (`{"a":` ends where a value is due too; a first half ends with a comma.)
        for text in [
            "[0",
            "{\"a\": 0",
            "[\"\\u\",",
            "[\"\\u12\",",
            "[\"abc",
            "[0,x",
        ] {
            assert!(!end(text), "{text}");
        }
    }

    #[test]
    fn nesting_counts_the_containers_on_both_sides_of_the_cut() {
        for depth in [120, 126, 127, 128, 130] {
            // `depth` arrays open at once, the cut inside the innermost few.
            let inner = depth - 3;
            let text = format!(
                "[[1,\n2],\n{}1,\n2{}]",
                "[".repeat(depth - 1),
                "]".repeat(depth - 1)
            );
            let h = head(&text, 1).unwrap();
            let whole = rest_agrees(&text, &h.last);
            assert_eq!(whole, depth <= MAX_OPEN, "{depth}");
            assert!(same_everywhere(&text, &h.last) > 0);
            // A deep member wholly after the cut.
            let text = format!("[[1,\n2],\n3,\n{}{}]", "[".repeat(inner), "]".repeat(inner));
            let h = head(&text, 1).unwrap();
            assert_eq!(rest_agrees(&text, &h.last), inner < MAX_OPEN, "{inner}");
            assert!(same_everywhere(&text, &h.last) > 0);
        }
        // Numbers `serde_json` hands over as one-member objects, at the deepest level
        // (the review's case: `2.5` at 127 open containers is fine).
        for number in ["2.5", "-0", "1e3", "18446744073709551616", "2"] {
            for depth in [126, 127, 128] {
                let text = format!("{}0,\n1,\n{number}{}", "[".repeat(depth), "]".repeat(depth));
                // Too deep for the head's own read at 128.
                let Some(h) = head(&text, 1) else {
                    assert!(depth > MAX_OPEN);
                    continue;
                };
                assert_eq!(
                    rest_agrees(&text, &h.last),
                    depth <= MAX_OPEN,
                    "{number} {depth}"
                );
                assert!(same_everywhere(&text, &h.last) > 0);
            }
        }
    }

    #[test]
    fn a_stopped_second_half_reads_no_further() {
        let text = "[\n[1,\n2],\n3,\n4]";
        let h = Halves::new(text, 0).unwrap();
        assert!(h.second(&AtomicBool::new(false)).is_some());
        assert!(h.second(&AtomicBool::new(true)).is_none());
    }
}
