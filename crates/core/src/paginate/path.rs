//! Locations inside a JSON document: how a page names where it is (`shown`), and the steps a
//! [`super::Position`] is made of.
//!
//! Internally a JSON position is a list of indices from the root: an array element index, an
//! object member index (in key order), or, last, a **byte** offset: inside a string (at a UTF-8
//! character boundary), inside the compact spelling of a number, or, flagged with [`KEY_BIT`]
//! and following a member index, inside that member's key. Locations shown to people use keys
//! and **character** offsets instead.

use std::fmt;

use serde_json::Value;

/// Longest location (in chars) written in full at the smallest budget; longer ones are
/// abbreviated with `…`. Pagers pass `max(LOC_MIN_CHARS, budget / 8)`.
pub(crate) const LOC_MIN_CHARS: usize = 48;
/// Location length tried when a page does not fit with longer locations.
pub(crate) const LOC_TINY_CHARS: usize = 12;
/// Longest key (in chars) written in full inside an abbreviated location.
const KEY_MAX_CHARS: usize = 24;
/// Flags the last step of a position as a byte offset inside the key of the member named by the
/// step before it (`[.., i, KEY_BIT | b]`: byte `b` of member `i`'s key, `0 < b < len`).
pub(crate) const KEY_BIT: usize = 1 << (usize::BITS - 1);

/// The byte offset of a step flagged with [`KEY_BIT`], or `None` for other steps.
pub(crate) fn key_offset(step: usize) -> Option<usize> {
    (step & KEY_BIT != 0).then_some(step & !KEY_BIT)
}

/// Whether `pos` ends inside an object key.
pub(crate) fn ends_in_key(pos: &[usize]) -> bool {
    pos.last().is_some_and(|&l| key_offset(l).is_some())
}

/// The compact spelling of a number, floats rounded to `precision` (what a page shows).
pub(crate) fn number_text(n: &serde_json::Number, precision: u32) -> std::borrow::Cow<'_, str> {
    crate::compact::round_number(n.as_str(), precision)
}

/// One step of a path from the root of a JSON document: an object key or an array index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathStep {
    /// A member of an object, by key.
    Key(String),
    /// An element of an array, by 0-based index.
    Index(usize),
}

impl fmt::Display for PathStep {
    /// `.key` for identifier keys, `['k\'ey']` otherwise (RFC 9535 escapes), `[3]` for indices.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathStep::Index(i) => write!(f, "[{i}]"),
            PathStep::Key(k) => write_key(f, k),
        }
    }
}

fn is_identifier(k: &str) -> bool {
    let mut chars = k.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn write_key(out: &mut impl fmt::Write, k: &str) -> fmt::Result {
    if is_identifier(k) {
        return write!(out, ".{k}");
    }
    out.write_str("['")?;
    for c in k.chars() {
        match c {
            '\'' => out.write_str("\\'")?,
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            '\u{8}' => out.write_str("\\b")?,
            '\u{c}' => out.write_str("\\f")?,
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32)?,
            c => out.write_char(c)?,
        }
    }
    out.write_str("']")
}

/// The number of steps a container or string has: elements, members, or bytes (numbers: none;
/// the walk never normalizes a position inside a number).
pub(crate) fn extent(v: &Value) -> usize {
    match v {
        Value::Array(a) => a.len(),
        Value::Object(m) => m.len(),
        Value::String(s) => s.len(),
        _ => 0,
    }
}

/// The child of a container at index `i`, with its key for objects.
pub(crate) fn child(v: &Value, i: usize) -> Option<(Option<&str>, &Value)> {
    match v {
        Value::Array(a) => a.get(i).map(|c| (None, c)),
        Value::Object(m) => m.iter().nth(i).map(|(k, c)| (Some(k.as_str()), c)),
        _ => None,
    }
}

/// The node at `steps` (container steps only; no string offsets).
pub(crate) fn node_at<'v>(root: &'v Value, steps: &[usize]) -> Option<&'v Value> {
    let mut v = root;
    for &i in steps {
        v = child(v, i)?.1;
    }
    Some(v)
}

/// The first unshown unit at or after `pos`: pops out of containers (and strings) whose end
/// `pos` has reached. `None` is the end of the document.
pub(crate) fn normalize(root: &Value, mut pos: Vec<usize>) -> Option<Vec<usize>> {
    while let Some(&last) = pos.last() {
        let parent = node_at(root, &pos[..pos.len() - 1])?;
        if last < extent(parent) {
            return Some(pos);
        }
        pos.pop();
        if let Some(l) = pos.last_mut() {
            *l += 1;
        }
    }
    None
}

/// Whether `pos` is a canonical position of `root`: every step is in range, string offsets are
/// at character boundaries, and only strings, numbers (their compact spelling with floats
/// rounded to `precision`, offset past 0) and keys (offset past 0) hold offsets, last.
pub(crate) fn is_valid(root: &Value, pos: &[usize], precision: u32) -> bool {
    let mut v = root;
    let mut key: Option<&str> = None;
    for (n, &i) in pos.iter().enumerate() {
        let last = n + 1 == pos.len();
        if let Some(b) = key_offset(i) {
            return last && key.is_some_and(|k| b > 0 && b < k.len() && k.is_char_boundary(b));
        }
        match v {
            Value::String(s) => return last && i < s.len() && s.is_char_boundary(i),
            Value::Number(x) => return last && i > 0 && i < number_text(x, precision).len(),
            _ => match child(v, i) {
                Some((k, c)) => {
                    key = k;
                    v = c;
                }
                None => return false,
            },
        }
    }
    true
}

/// The keyed path of `steps` (container steps only).
pub(crate) fn path_steps(root: &Value, steps: &[usize]) -> Vec<PathStep> {
    let mut out = Vec::with_capacity(steps.len());
    let mut v = root;
    for &i in steps {
        match child(v, i) {
            Some((Some(k), c)) => {
                out.push(PathStep::Key(k.to_owned()));
                v = c;
            }
            Some((None, c)) => {
                out.push(PathStep::Index(i));
                v = c;
            }
            None => break,
        }
    }
    out
}

/// A rendered location: `$` and its steps, then an optional tail (`[3:9]`, `[chars 0:80]`).
struct Loc {
    steps: Vec<String>,
    tail: String,
}

impl Loc {
    /// The location of the container steps `steps`; a trailing string offset is not included.
    fn of(root: &Value, steps: &[usize]) -> Loc {
        let steps = path_steps(root, steps)
            .iter()
            .map(|s| s.to_string())
            .collect();
        Loc {
            steps,
            tail: String::new(),
        }
    }

    fn render(mut self, max: usize) -> String {
        let full: usize = self.steps.iter().map(|s| s.chars().count()).sum();
        if full < max {
            let mut out = String::from("$");
            self.steps.iter().for_each(|s| out.push_str(s));
            out.push_str(&self.tail);
            return out;
        }
        // Too long for a human: shorten long keys (to fewer characters, and bytes, the
        // shorter `max` is: emoji keys cost tokens), then drop middle steps.
        let key_max = (max / 2).clamp(4, KEY_MAX_CHARS);
        for s in &mut self.steps {
            if s.chars().count() > key_max || s.len() > 3 * key_max {
                let mut bytes = 0;
                let cut: String = s
                    .chars()
                    .take(key_max - 1)
                    .take_while(|c| {
                        bytes += c.len_utf8();
                        bytes <= 3 * key_max
                    })
                    .collect();
                *s = format!("{cut}…");
            }
        }
        let mut out = String::from("$");
        let n = self.steps.len();
        let head = n.min(1);
        for s in &self.steps[..head] {
            out.push_str(s);
        }
        let mut tail_steps = Vec::new();
        let mut len = out.chars().count() + 1;
        for s in self.steps[head..].iter().rev() {
            let l = s.chars().count();
            if len + l > max && !tail_steps.is_empty() {
                break;
            }
            len += l;
            tail_steps.push(s.as_str());
        }
        if head + tail_steps.len() < n {
            out.push('…');
        }
        for s in tail_steps.iter().rev() {
            out.push_str(s);
        }
        out.push_str(&self.tail);
        out
    }
}

/// The location of a point `pos`: `$[0].children[40]`, or `$.text[chars 8000]` inside a
/// string (character offset).
fn point(root: &Value, pos: &[usize], max: usize) -> String {
    let Some((&last, parent_steps)) = pos.split_last() else {
        return "$".into();
    };
    if let Some(b) = key_offset(last) {
        let mut loc = Loc::of(root, parent_steps);
        loc.tail = format!("[key chars {}]", key_chars(root, parent_steps, b));
        return loc.render(max);
    }
    let parent = node_at(root, parent_steps);
    match parent {
        Some(Value::String(s)) => {
            let mut loc = Loc::of(root, parent_steps);
            loc.tail = format!("[chars {}]", char_offset(s, last));
            loc.render(max)
        }
        Some(Value::Number(_)) => {
            let mut loc = Loc::of(root, parent_steps);
            loc.tail = format!("[digits {last}]");
            loc.render(max)
        }
        _ => Loc::of(root, pos).render(max),
    }
}

/// Characters before byte `b` of the key of the member at `member` (a path ending in a member
/// index).
fn key_chars(root: &Value, member: &[usize], b: usize) -> usize {
    let key = member
        .split_last()
        .and_then(|(&i, parent)| child(node_at(root, parent)?, i))
        .and_then(|(k, _)| k);
    key.map_or(b, |k| char_offset(k, b))
}

/// Characters of `s` before byte offset `b`.
pub(crate) fn char_offset(s: &str, b: usize) -> usize {
    s.get(..b).map_or(0, |p| p.chars().count())
}

/// Whether the members/elements before each step of `steps` are only what a skeleton repeats
/// (index 0 of arrays; short scalars of objects): then a page from the document start to
/// `steps` reads as `parent[0:b]`.
fn leads_with_skeleton(root: &Value, steps: &[usize]) -> bool {
    let mut v = root;
    for &i in steps {
        match v {
            Value::Array(a) => {
                if i != 0 {
                    return false;
                }
                match a.first() {
                    Some(c) => v = c,
                    None => return false,
                }
            }
            Value::Object(m) => {
                let mut it = m.values();
                for _ in 0..i {
                    match it.next() {
                        Some(c) if is_short_scalar(c) => {}
                        _ => return false,
                    }
                }
                match it.next() {
                    Some(c) => v = c,
                    None => return false,
                }
            }
            _ => return false,
        }
    }
    true
}

/// The `shown` location of a JSON page rooted at `root_steps` that holds the units from `s`
/// (inclusive) to `e` (exclusive; `None` = the document end). Grammar in the module docs of
/// [`super`].
pub(crate) fn shown(
    root: &Value,
    s: &[usize],
    e: Option<&[usize]>,
    root_steps: &[usize],
    max: usize,
) -> String {
    let base = match e {
        None if s.is_empty() => "$".to_owned(),
        None => format!("{} to end", point(root, s, max)),
        Some(e) => same_parent(root, s, e, max).unwrap_or_else(|| {
            if s.is_empty() {
                format!("$ to {}", point(root, e, max))
            } else {
                format!("{} to {}", point(root, s, max), point(root, e, max))
            }
        }),
    };
    if root_steps.is_empty() {
        base
    } else {
        format!("{base} (body is {})", Loc::of(root, root_steps).render(max))
    }
}

/// `P[a:b]` or `P[chars a:b]` when `s` and `e` are in the same array or string.
fn same_parent(root: &Value, s: &[usize], e: &[usize], max: usize) -> Option<String> {
    let (&eb, parent) = e.split_last()?;
    if let Some(eb) = key_offset(eb) {
        // Both inside one key: `P['k'][key chars a:b]`.
        let (&sa, sparent) = s.split_last()?;
        let sa = key_offset(sa)?;
        if sparent != parent {
            return None;
        }
        let mut loc = Loc::of(root, parent);
        loc.tail = format!(
            "[key chars {}:{}]",
            key_chars(root, parent, sa),
            key_chars(root, parent, eb)
        );
        return Some(loc.render(max));
    }
    if s.last().is_some_and(|&l| key_offset(l).is_some()) {
        return None;
    }
    let sa = if s.is_empty() {
        // Page 1 that ends inside a chain of first elements: `$[0].children[0:40]`.
        if !leads_with_skeleton(root, parent) {
            return None;
        }
        0
    } else {
        let (&sa, sparent) = s.split_last()?;
        if sparent != parent {
            return None;
        }
        sa
    };
    match node_at(root, parent)? {
        Value::Array(_) => {
            let mut loc = Loc::of(root, parent);
            loc.tail = format!("[{sa}:{eb}]");
            Some(loc.render(max))
        }
        Value::String(st) => {
            let mut loc = Loc::of(root, parent);
            loc.tail = format!("[chars {}:{}]", char_offset(st, sa), char_offset(st, eb));
            Some(loc.render(max))
        }
        Value::Number(_) => {
            let mut loc = Loc::of(root, parent);
            loc.tail = format!("[digits {sa}:{eb}]");
            Some(loc.render(max))
        }
        _ => None,
    }
}

/// A step of a start path parsed from a `shown` location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShownStep {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
    /// A character offset inside a string (the page continues that string).
    Chars(usize),
    /// A character offset inside the key named by the step before it (the page continues that
    /// key).
    KeyChars(usize),
    /// A character offset inside the compact spelling of a number (the page continues that
    /// number, whose pieces pages show as JSON strings).
    Digits(usize),
}

/// The start path and page root parsed from a JSON page's `shown` location, as a client
/// that sees only the wire would parse it (see the merge rule in [`super`]).
///
/// Returns `(start, root)`: `start` is where the page begins (empty on page 1, which needs no
/// merging), `root` is the path of the page body (empty unless `shown` ends with
/// ` (body is …)`). `None` when `shown` is abbreviated (contains `…` outside keys) or not of
/// the grammar.
pub fn parse_shown(shown: &str) -> Option<(Vec<ShownStep>, Vec<ShownStep>)> {
    // Parsed left to right (keys may themselves contain " to " or " (body is ").
    let (start, mut rest) = parse_loc(shown)?;
    if let Some(r) = rest.strip_prefix(" to ") {
        rest = match r.strip_prefix("end") {
            Some(r) => r,
            None => parse_loc(r)?.1,
        };
    }
    let root = match rest.strip_prefix(" (body is ") {
        Some(r) => {
            let (root, r) = parse_loc(r)?;
            if r != ")" {
                return None;
            }
            root
        }
        None if rest.is_empty() => Vec::new(),
        None => return None,
    };
    Some((start, root))
}

/// Parses `$` and its steps up to the first character that starts no step (a space or the
/// end); a slice `[a:b]`, `[chars a:b]`, `[key chars a:b]` or `[digits a:b]` yields its start
/// `a`. Returns the steps and the rest.
fn parse_loc(s: &str) -> Option<(Vec<ShownStep>, &str)> {
    let mut rest = s.strip_prefix('$')?;
    let mut steps = Vec::new();
    while rest.starts_with('.') || rest.starts_with('[') {
        if let Some(r) = rest.strip_prefix("['") {
            let mut key = String::new();
            let mut chars = r.char_indices();
            let end = loop {
                let (i, c) = chars.next()?;
                match c {
                    '\\' => {
                        let (_, e) = chars.next()?;
                        key.push(match e {
                            'n' => '\n',
                            'r' => '\r',
                            't' => '\t',
                            'b' => '\u{8}',
                            'f' => '\u{c}',
                            'u' => {
                                let hex: String =
                                    (0..4).filter_map(|_| chars.next()).map(|x| x.1).collect();
                                char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
                            }
                            other => other,
                        });
                    }
                    '\'' => break i,
                    c => key.push(c),
                }
            };
            rest = r[end + 1..].strip_prefix(']')?;
            steps.push(ShownStep::Key(key));
        } else if let Some(r) = rest.strip_prefix('[') {
            let close = r.find(']')?;
            let inner = &r[..close];
            rest = &r[close + 1..];
            let start = |c: &str| -> Option<usize> { c.split(':').next()?.parse().ok() };
            if let Some(c) = inner.strip_prefix("key chars ") {
                steps.push(ShownStep::KeyChars(start(c)?));
            } else if let Some(c) = inner.strip_prefix("chars ") {
                steps.push(ShownStep::Chars(start(c)?));
            } else if let Some(c) = inner.strip_prefix("digits ") {
                steps.push(ShownStep::Digits(start(c)?));
            } else {
                let a = inner.split(':').next()?;
                steps.push(ShownStep::Index(a.parse().ok()?));
            }
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(r.len());
            if end == 0 {
                return None;
            }
            steps.push(ShownStep::Key(r[..end].to_owned()));
            rest = &r[end..];
        } else {
            return None;
        }
    }
    Some((steps, rest))
}

/// Scalars (in skeletons: see `window`) whose compact text is at most this many bytes are repeated in skeletons.
pub(crate) const SHORT_SCALAR_BYTES: usize = 64;

/// Whether `v` is a scalar short enough to be repeated in the skeleton of every page.
pub(crate) fn is_short_scalar(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(_) => true,
        Value::Number(n) => n.as_str().len() <= SHORT_SCALAR_BYTES,
        Value::String(s) => s.len() + 2 <= SHORT_SCALAR_BYTES,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_render_in_dot_or_bracket_notation() {
        assert_eq!(PathStep::Key("children".into()).to_string(), ".children");
        assert_eq!(PathStep::Key("a b".into()).to_string(), "['a b']");
        assert_eq!(PathStep::Key("it's\\".into()).to_string(), "['it\\'s\\\\']");
        assert_eq!(PathStep::Key("9x".into()).to_string(), "['9x']");
        assert_eq!(PathStep::Index(7).to_string(), "[7]");
    }

    #[test]
    fn shown_forms() {
        let doc = json!([{"name": "a", "type": "d", "children": [1, 2, 3, 4]}, {"x": "ü-long"}]);
        assert_eq!(shown(&doc, &[], None, &[], 64), "$");
        assert_eq!(
            shown(&doc, &[], Some(&[0, 2, 2]), &[], 64),
            "$[0].children[0:2]"
        );
        assert_eq!(
            shown(&doc, &[0, 2, 2], Some(&[0, 2, 3]), &[], 64),
            "$[0].children[2:3]"
        );
        assert_eq!(
            shown(&doc, &[0, 2, 3], Some(&[1, 0, 3]), &[], 64),
            "$[0].children[3] to $[1].x[chars 2]"
        );
        assert_eq!(
            shown(&doc, &[1, 0, 2], Some(&[1, 0, 4]), &[1], 64),
            "$[1].x[chars 1:3] (body is $[1])"
        );
        assert_eq!(
            shown(&doc, &[1, 0, 3], None, &[], 64),
            "$[1].x[chars 2] to end"
        );
    }

    #[test]
    fn shown_parses_back_to_the_start() {
        let (s, r) = parse_shown("$[0].children[2:3]").unwrap();
        assert_eq!(
            s,
            vec![
                ShownStep::Index(0),
                ShownStep::Key("children".into()),
                ShownStep::Index(2)
            ]
        );
        assert!(r.is_empty());
        let (s, r) = parse_shown("$[1]['a\\'b'][chars 1:3] (body is $[1])").unwrap();
        assert_eq!(
            s,
            vec![
                ShownStep::Index(1),
                ShownStep::Key("a'b".into()),
                ShownStep::Chars(1)
            ]
        );
        assert_eq!(r, vec![ShownStep::Index(1)]);
        assert_eq!(parse_shown("$ to $[3]").unwrap().0, vec![]);
        assert!(parse_shown("$.a…b[3]").is_none());
        // Keys that look like the grammar's own words.
        let (s, r) =
            parse_shown("$['a to b'][2] to $['x (body is y)'][0] (body is $['a to b'])").unwrap();
        assert_eq!(
            s,
            vec![ShownStep::Key("a to b".into()), ShownStep::Index(2)]
        );
        assert_eq!(r, vec![ShownStep::Key("a to b".into())]);
        let (s, _) = parse_shown("$.x[chars 7] to end").unwrap();
        assert_eq!(s, vec![ShownStep::Key("x".into()), ShownStep::Chars(7)]);
    }

    #[test]
    fn long_locations_are_abbreviated() {
        let mut doc = json!(1);
        for _ in 0..60 {
            doc = json!({ "level": doc });
        }
        let s = shown(&doc, &vec![0; 60], None, &[], 64);
        assert!(s.chars().count() < 100, "{s}");
        assert!(s.contains('…'));
    }
}
