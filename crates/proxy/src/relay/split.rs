//! A JSON value read on two threads when one long string runs through its middle (issue 14).
//!
//! `serde_json` reads a 12 MB response whose result is one pretty-printed JSON text at about
//! 500 MB/s: nearly all of that time goes into unescaping the text (`\"` and `\n` every few
//! bytes). [`value_at`] cuts such a value inside that string, at an escape near its middle,
//! and two threads unescape the two parts at once, each with `serde_json`'s own string reader;
//! then the value is read by `serde_json` with its long strings (at least
//! [`Limits::long_string`] bytes) stood in for by short placeholders, and the strings are put
//! back. About half of one parse's wall time for such a value, on two cores.
//!
//! Why it is the same value `serde_json::from_slice` gives. In a JSON text a backslash occurs
//! only inside strings, where it begins an escape exactly when an even number of backslashes
//! precede it, and a quote preceded by an even number of backslashes is a string's delimiter
//! (RFC 8259 §7). The cut is at such an escape, a two-byte one (`\n`, `\"`, `\\`, …; never
//! `\u`, so no surrogate pair is parted) with no delimiter in the [`Limits::reach`] bytes after
//! it (the string is long). For the reads both of its bytes are overwritten with quotes (and
//! restored after):
//! - the first thread reads from the value's start: the next quote outside strings opens a
//!   string; a short one is skipped to its delimiter, a long one read by `serde_json` (which
//!   stops at its delimiter). The string that ends at the first planted quote is the head of
//!   the cut string; a read that does not end there is not one this module understands;
//! - the second reads from the second planted quote: the tail of the cut string (up to its
//!   real delimiter), then the rest of the bytes as the first thread does.
//!
//! The cut string is head + the escape's character + tail: `serde_json` reads escapes one at a
//! time, so reading the parts apart gives what reading them together does. The strings the
//! threads read are exactly those `serde_json` would read (the same delimiters, found from a
//! point known to be outside strings), so the text with placeholders in them has the same
//! tokens; `serde_json` reads it (every short string, number, bracket and the nesting checked
//! as in one parse), and each placeholder must then be found once, as a string value (a long
//! key, or a value a repeated key replaced, is not put back: `None`).
//!
//! `None` whenever anything is not as described (no long string at the middle, an escape or
//! character `serde_json` refuses, a placeholder not found once): the caller reads the value
//! in one pass as before, which gives `serde_json`'s own answer, value or error. A value read
//! here is always the one that pass gives (`tests/split_props.rs`).

use std::io::Write as _;
use std::ops::Range;

use serde_json::Value;

/// When [`value_at`] cuts, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// When fewer bytes than this follow `start` (the value and whatever comes after it), the
    /// value is read in one pass (two threads would gain little): 1 MiB.
    pub min_bytes: usize,
    /// How far past the middle an escape to cut at is looked for, and how far past it the
    /// string must go on, in bytes: 64 KiB.
    pub reach: usize,
    /// Strings of at least this many bytes (as written, escapes and all) are read by the two
    /// threads and stood in for by placeholders; shorter ones are left to the read of the whole:
    /// 4 KiB.
    pub long_string: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            min_bytes: 1024 * 1024,
            reach: 64 * 1024,
            long_string: 4 * 1024,
        }
    }
}

/// The JSON value that starts at byte `start` of `bytes` (whitespace before it is skipped) and
/// the byte range from `start` to its end, read on two threads (see the module docs), with the
/// default [`Limits`]. The cut is looked for at the middle of `bytes[start..]`: a value followed
/// by more bytes than its own is not cut.
///
/// `bytes` is changed while the threads read (two bytes) and is as it was on return. `None`
/// when the value is not read this way; the caller then reads it in one pass. Giving up after
/// the reads (a lone surrogate escape, `NaN` beside the long string, a long key) costs about
/// half a pass more than one pass.
pub fn value_at(bytes: &mut [u8], start: usize) -> Option<(Value, Range<usize>)> {
    value_at_with(bytes, start, Limits::default())
}

/// `serde_json::from_slice::<Value>(bytes)`, read as [`value_at`] reads where it applies (the
/// value alone on the line, whitespace around it): the same value, or one pass's own answer.
///
/// # Errors
/// Exactly when `serde_json::from_slice` fails, with its error.
pub fn from_slice(bytes: &mut [u8]) -> serde_json::Result<Value> {
    if let Some((value, span)) = value_at(bytes, 0)
        && bytes[span.end..]
            .iter()
            .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        return Ok(value);
    }
    serde_json::from_slice(bytes)
}

/// [`value_at`] with the given limits (tests use small ones).
pub fn value_at_with(
    bytes: &mut [u8],
    start: usize,
    limits: Limits,
) -> Option<(Value, Range<usize>)> {
    let len = bytes.len();
    if len.checked_sub(start)? < limits.min_bytes.max(1) {
        return None;
    }
    let cut = cut_near(bytes, start, start + (len - start) / 2, limits.reach)?;
    let ch = escaped(*bytes.get(cut + 1)?)?;
    let saved = [bytes[cut], bytes[cut + 1]];
    bytes[cut] = b'"';
    bytes[cut + 1] = b'"';
    let (first, second) = {
        let b: &[u8] = bytes;
        std::thread::scope(|s| {
            let second = std::thread::Builder::new()
                .name("mcp-budget-read".into())
                .spawn_scoped(s, move || read_second(b, cut + 1, limits))
                .ok();
            let first = read_first(b, start, cut, limits);
            let second = match second {
                Some(handle) => handle.join().ok().flatten(),
                // No thread to be had: read it here.
                None => first.as_ref().and_then(|_| read_second(b, cut + 1, limits)),
            };
            (first, second)
        })
    };
    bytes[cut] = saved[0];
    bytes[cut + 1] = saved[1];
    let (mut strings, head) = first?;
    let (tail, tail_close, rest) = second?;
    let mut text = head.text;
    text.push(ch);
    text.push_str(&tail);
    drop(tail);
    strings.push(Long {
        range: head.open + 1..tail_close,
        text,
    });
    strings.extend(rest);
    put_together(bytes, start, strings)
}

/// A long string the threads read: its bytes between the quotes, and its value.
struct Long {
    range: Range<usize>,
    text: String,
}

/// The head of the cut string: where its opening quote is, and its characters up to the cut.
struct Head {
    open: usize,
    text: String,
}

/// The character of the two-byte escape `\c` (RFC 8259 §7); `None` for `\u` and anything else.
fn escaped(c: u8) -> Option<char> {
    Some(match c {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

/// Whether an odd number of backslashes come right before byte `at` (not looking before
/// `floor`): the byte is then escaped.
fn is_escaped(b: &[u8], floor: usize, at: usize) -> bool {
    let run = b[floor..at]
        .iter()
        .rev()
        .take_while(|&&c| c == b'\\')
        .count();
    !run.is_multiple_of(2)
}

/// The first delimiter (a quote after an even number of backslashes) in `b[from..to]`, for a
/// string whose characters start at `from`.
fn delimiter_in(b: &[u8], from: usize, to: usize) -> Option<usize> {
    let mut i = from;
    while let Some(q) = memchr::memchr(b'"', b.get(i..to)?) {
        let at = i + q;
        if !is_escaped(b, from, at) {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

/// Where to cut: the first two-byte escape (not `\u`) at or after `mid` and within `reach`
/// bytes of it, with no delimiter in the `reach` bytes after it (the string goes on).
fn cut_near(b: &[u8], start: usize, mid: usize, reach: usize) -> Option<usize> {
    let end = mid.saturating_add(reach).min(b.len());
    let mut i = mid;
    loop {
        let at = i + memchr::memchr(b'\\', b.get(i..end)?)?;
        if is_escaped(b, start, at) {
            // The second byte of a `\\` escape.
            i = at + 1;
            continue;
        }
        match b.get(at + 1) {
            Some(b'u') => i = at + 2,
            Some(&c) if escaped(c).is_some() => {
                let after = at + 2;
                match delimiter_in(b, after, after.saturating_add(reach).min(b.len())) {
                    None => return Some(at),
                    // The string ends soon: look on past its end.
                    Some(close) => i = close + 1,
                }
            }
            _ => return None,
        }
    }
}

/// The string whose opening quote is at `open`, read by `serde_json`, and where its closing
/// quote is.
fn read_string(b: &[u8], open: usize) -> Option<(String, usize)> {
    let mut strings = serde_json::Deserializer::from_slice(b.get(open..)?).into_iter::<String>();
    let text = strings.next()?.ok()?;
    Some((text, open + strings.byte_offset() - 1))
}

/// The strings of `b` from `from` (a point outside strings) on, to its end or to the string
/// that closes at `stop`: the long ones read, the short ones skipped. Returns the long ones
/// and, with `stop`, the opening quote and value of the string that closes there.
fn read_strings(
    b: &[u8],
    from: usize,
    stop: Option<usize>,
    limits: Limits,
) -> Option<(Vec<Long>, Option<Head>)> {
    let to = stop.map_or(b.len(), |s| s + 1);
    let mut long = Vec::new();
    let mut i = from;
    while let Some(q) = memchr::memchr(b'"', b.get(i..to)?) {
        let open = i + q;
        let short_end = (open + 1).saturating_add(limits.long_string).min(to);
        let close = match delimiter_in(b, open + 1, short_end) {
            Some(close) if Some(close) != stop => close,
            _ => {
                let (text, close) = read_string(b, open)?;
                if Some(close) == stop {
                    return Some((long, Some(Head { open, text })));
                }
                long.push(Long {
                    range: open + 1..close,
                    text,
                });
                close
            }
        };
        i = close + 1;
    }
    // Reached `stop` without a string closing there: not a cut inside a string.
    stop.is_none().then_some((long, None))
}

/// The first thread's read (see the module docs): the long strings before the cut string, and
/// the cut string's opening quote and head.
fn read_first(b: &[u8], start: usize, cut: usize, limits: Limits) -> Option<(Vec<Long>, Head)> {
    let (long, head) = read_strings(b, start, Some(cut), limits)?;
    Some((long, head?))
}

/// The second thread's read: the cut string's tail (from the quote planted at `open`), where it
/// closes, and the long strings after it.
fn read_second(b: &[u8], open: usize, limits: Limits) -> Option<(String, usize, Vec<Long>)> {
    let (tail, close) = read_string(b, open)?;
    let (long, _) = read_strings(b, close + 1, None, limits)?;
    Some((tail, close, long))
}

/// Reads the value at `start` with each long string's characters replaced by a placeholder,
/// then puts the strings back (see the module docs).
fn put_together(bytes: &[u8], start: usize, strings: Vec<Long>) -> Option<(Value, Range<usize>)> {
    // Unguessable: a server cannot write a placeholder of its own.
    let tag = getrandom::u64().ok()?;
    let prefix = format!("mcp-budget-long-string-{tag:016x}-");
    let long_bytes: usize = strings.iter().map(|l| l.range.len()).sum();
    let mut small =
        Vec::with_capacity((bytes.len() - start).saturating_sub(long_bytes) + strings.len() * 48);
    let mut placeholder_bytes = 0;
    let mut at = start;
    let mut texts = Vec::with_capacity(strings.len());
    for (k, long) in strings.into_iter().enumerate() {
        small.extend_from_slice(bytes.get(at..long.range.start)?);
        let before = small.len();
        let _ = write!(small, "{prefix}{k}");
        placeholder_bytes += small.len() - before;
        at = long.range.end;
        texts.push(Some(long.text));
    }
    let last_placeholder_end = small.len();
    small.extend_from_slice(bytes.get(at..)?);
    let mut values = serde_json::Deserializer::from_slice(&small).into_iter::<Value>();
    let mut value = values.next()?.ok()?;
    let small_end = values.byte_offset();
    if last_placeholder_end > small_end {
        // A long string after the value (in the envelope around it).
        return None;
    }
    // Each placeholder found once, as a string value.
    let mut stack = vec![&mut value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                if let Some(k) = s
                    .strip_prefix(prefix.as_str())
                    .and_then(|k| k.parse::<usize>().ok())
                {
                    *s = texts.get_mut(k)?.take()?;
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(members) => stack.extend(members.values_mut()),
            _ => {}
        }
    }
    if texts.iter().any(Option::is_some) {
        return None;
    }
    let end = (start + small_end + long_bytes).checked_sub(placeholder_bytes)?;
    Some((value, start..end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small_limits() -> Limits {
        Limits {
            min_bytes: 64,
            reach: 64,
            long_string: 24,
        }
    }

    fn read(text: &str, start: usize) -> Option<(Value, Range<usize>)> {
        let mut bytes = text.as_bytes().to_vec();
        let got = value_at_with(&mut bytes, start, small_limits());
        assert_eq!(bytes, text.as_bytes(), "the bytes are restored");
        got
    }

    fn line_with(text: &str) -> String {
        serde_json::to_string(&serde_json::json!({
            "jsonrpc": "2.0", "id": 7,
            "result": {"content": [{"type": "text", "text": text}], "isError": false}
        }))
        .unwrap_or_default()
    }

    #[test]
    fn a_long_escaped_text_reads_as_one_parse_reads_it() {
        let text = "[\n  {\"name\": \"a\\\\b\", \"n\": 1},\n".repeat(40) + "\"é🚀\"\n]";
        let line = line_with(&text);
        let start = line.find("\"result\":").unwrap_or_default() + 9;
        let (value, span) = read(&line, start).expect("cut inside the text");
        let whole: Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(value, whole["result"]);
        assert_eq!(
            line[span.clone()],
            serde_json::to_string(&whole["result"]).unwrap_or_default()
        );
        assert_eq!(&line[span.end..], "}");
    }

    #[test]
    fn two_long_strings_both_come_back() {
        let text = "line with \"quotes\" and \\ slashes\n".repeat(30);
        let line = serde_json::to_string(&serde_json::json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"content": text}
        }))
        .unwrap_or_default();
        let (value, span) = read(&line, 0).expect("cut");
        assert_eq!(span, 0..line.len());
        assert_eq!(
            value,
            serde_json::from_str::<Value>(&line).unwrap_or_default()
        );
    }

    #[test]
    fn what_one_parse_refuses_is_not_read_here() {
        let good = "ab\\ncd\\\"ef".repeat(20);
        for bad in [
            format!("[\"{good}\\x{good}\"]"),
            format!("[\"{good}\\ud83d\\n{good}\"]"),
            format!("[\"{good}\u{1}{good}\"]"),
            format!("[\"{good}\"] x"),
            format!("[\"{good}\" \"{good}\"]"),
            format!("{{\"{good}\": 1}}"),
            format!("{{\"a\": \"{good}\", \"a\": 2}}"),
        ] {
            let got = read(&bad, 0);
            if let Some((v, span)) = got {
                let one: Value = serde_json::Deserializer::from_str(&bad)
                    .into_iter::<Value>()
                    .next()
                    .and_then(Result::ok)
                    .unwrap_or(Value::Null);
                assert_eq!(v, one, "{bad}");
                assert!(span.end <= bad.len());
            }
        }
        assert!(read(&format!("[\"{good}\\x{good}\"]"), 0).is_none());
        assert!(read(&format!("{{\"{good}\": 1}}"), 0).is_none());
        assert!(read(&format!("{{\"a\": \"{good}\", \"a\": 2}}"), 0).is_none());
    }

    #[test]
    fn a_whole_line_reads_as_serde_json_reads_it() {
        let text = "a \"quoted\" line\n".repeat(100_000);
        let line = serde_json::to_vec(&serde_json::json!({"id": 1, "result": {"text": text}}))
            .unwrap_or_default();
        let whole: Value = serde_json::from_slice(&line).unwrap_or_default();
        for padded in [line.clone(), [b" \n".as_slice(), &line, b"\r\n "].concat()] {
            let mut work = padded.clone();
            assert!(from_slice(&mut work).ok() == Some(whole.clone()));
            assert_eq!(work, padded);
        }
        let mut trailing = [line.as_slice(), b" x"].concat();
        assert!(from_slice(&mut trailing).is_err());
    }

    #[test]
    fn short_or_unescaped_values_are_left_to_one_parse() {
        assert!(read("[1,2,3]", 0).is_none());
        let plain = format!("[\"{}\"]", "a".repeat(200));
        assert!(read(&plain, 0).is_none(), "no escape to cut at");
        let many = format!("[{}\"x\"]", "\"a\\nb\",".repeat(40));
        assert!(read(&many, 0).is_none(), "no long string at the middle");
    }
}
