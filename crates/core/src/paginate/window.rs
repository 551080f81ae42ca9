//! The body of a JSON page: the window of a value between two positions, wrapped in the
//! skeleton of the value before the window's start (see the module docs of [`super`]).
//!
//! [`write_window`] writes the window's compact text straight from the document (whole children
//! are serialized in place, nothing is cloned); [`build`] builds the same window as a value and
//! is the reference the writer is tested against.

use serde_json::Value;

use super::path::{is_short_scalar, key_offset, number_text};
use crate::compact;

/// The window of one child: its start and end below the child (`None`: its beginning, its end).
type Sub<'p> = (Option<&'p [usize]>, Option<&'p [usize]>);

/// The part of a member's key a window shows: bytes `from` to `to` (`None`: the key's end).
#[derive(Debug, Clone, Copy)]
struct KeyWindow {
    from: usize,
    to: Option<usize>,
}

impl KeyWindow {
    fn piece<'k>(&self, k: &'k str) -> &'k str {
        let a = self.from.min(k.len());
        let b = self.to.unwrap_or(k.len()).min(k.len()).max(a);
        k.get(a..b).unwrap_or_default()
    }
}

/// A window `[s, e)` of one value, split into its first steps and the rest.
struct Window<'p> {
    /// First step of the start (`0` when the window starts at the value's beginning).
    s0: usize,
    s_rest: Option<&'p [usize]>,
    /// First step of the end (`usize::MAX` when the window runs to the value's end).
    e0: usize,
    e_rest: Option<&'p [usize]>,
}

impl<'p> Window<'p> {
    fn new(s: Option<&'p [usize]>, e: Option<&'p [usize]>) -> Window<'p> {
        fn first(p: Option<&[usize]>) -> Option<(usize, Option<&[usize]>)> {
            let (&i, rest) = p?.split_first()?;
            Some((i, (!rest.is_empty()).then_some(rest)))
        }
        let (s0, s_rest) = first(s).unwrap_or((0, None));
        let (e0, e_rest) = first(e).unwrap_or((usize::MAX, None));
        Window {
            s0,
            s_rest,
            e0,
            e_rest,
        }
    }

    /// The window of child `i` (at or after the start step): `None` once past the end,
    /// `Some((None, None))` when the child is shown whole.
    fn child(&self, i: usize) -> Option<Sub<'p>> {
        let cs = if i == self.s0 { self.s_rest } else { None };
        let ce = if i == self.e0 { self.e_rest } else { None };
        if i > self.e0 || (i == self.e0 && ce.is_none()) {
            return None;
        }
        Some((cs, ce))
    }

    /// The start offset inside the key of member `s0`, when the window starts inside it.
    fn s_key(&self) -> Option<usize> {
        match self.s_rest {
            Some([k]) => key_offset(*k),
            _ => None,
        }
    }

    /// The end offset inside the key of member `e0`, when the window ends inside it.
    fn e_key(&self) -> Option<usize> {
        match self.e_rest {
            Some([k]) => key_offset(*k),
            _ => None,
        }
    }

    /// The window of member `i` of an object (at or after the start step): `None` once past
    /// the end; else the window of its key, and of its value (`None` when the window ends
    /// inside the key: the value is then shown as `null`).
    fn member(&self, i: usize) -> Option<(KeyWindow, Option<Sub<'p>>)> {
        let s_key = if i == self.s0 { self.s_key() } else { None };
        let e_key = if i == self.e0 { self.e_key() } else { None };
        let kw = KeyWindow {
            from: s_key.unwrap_or(0),
            to: e_key,
        };
        if e_key.is_some() {
            return Some((kw, None));
        }
        let cs = if i == self.s0 && s_key.is_none() {
            self.s_rest
        } else {
            None
        };
        let ce = if i == self.e0 { self.e_rest } else { None };
        if i > self.e0 || (i == self.e0 && ce.is_none()) {
            return None;
        }
        Some((kw, Some((cs, ce))))
    }

    /// The piece of a string between the window's byte offsets (empty when they are not at
    /// character boundaries, which positions from the pager always are).
    fn piece<'s>(&self, st: &'s str) -> &'s str {
        let a = self.s0.min(st.len());
        let b = self.e0.min(st.len());
        st.get(a..b.max(a)).unwrap_or_default()
    }
}

/// The window of `v` from `s` (inclusive; `None` = its beginning) to `e` (exclusive; `None` =
/// its end), with the skeleton of `v` before `s` when `v` is an object.
#[cfg(test)]
pub(crate) fn build(v: &Value, s: Option<&[usize]>, e: Option<&[usize]>) -> Value {
    let w = Window::new(s, e);
    let part = |c: &Value, (cs, ce): Sub<'_>| {
        if cs.is_none() && ce.is_none() {
            c.clone()
        } else {
            build(c, cs, ce)
        }
    };
    match v {
        Value::String(st) => Value::String(w.piece(st).to_owned()),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .skip(w.s0)
                .map_while(|(i, c)| w.child(i).map(|cw| part(c, cw)))
                .collect(),
        ),
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            let skeleton = w.s_key().is_none();
            for (i, (k, c)) in m.iter().enumerate() {
                if i < w.s0 {
                    if skeleton && is_short_scalar(c) {
                        out.insert(k.clone(), c.clone());
                    }
                    continue;
                }
                let Some((kw, cw)) = w.member(i) else { break };
                let key = kw.piece(k).to_owned();
                match cw {
                    Some(cw) => out.insert(key, part(c, cw)),
                    None => out.insert(key, Value::Null),
                };
            }
            Value::Object(out)
        }
        Value::Number(n) if s.is_some() || e.is_some() => {
            Value::String(w.piece(&number_text(n, 0)).to_owned())
        }
        scalar => scalar.clone(),
    }
}

/// Appends to `out` the compact text (floats rounded to `precision`) of [`build`]`(v, s, e)`,
/// without cloning the window: whole children are written straight from the document.
pub(crate) fn write_window(
    v: &Value,
    s: Option<&[usize]>,
    e: Option<&[usize]>,
    precision: u32,
    out: &mut String,
) {
    let w = Window::new(s, e);
    let mut sep = false;
    let mut item = |out: &mut String, key: Option<&str>, c: &Value, cw: Option<Sub<'_>>| {
        if sep {
            out.push(',');
        }
        sep = true;
        if let Some(k) = key {
            out.push_str(&serde_json::to_string(k).unwrap_or_default());
            out.push(':');
        }
        match cw {
            None => out.push_str("null"),
            Some((None, None)) => out.push_str(&compact::to_string(c, precision)),
            Some((cs, ce)) => write_window(c, cs, ce, precision, out),
        }
    };
    match v {
        Value::String(st) => out.push_str(&serde_json::to_string(w.piece(st)).unwrap_or_default()),
        Value::Array(items) => {
            out.push('[');
            for (i, c) in items.iter().enumerate().skip(w.s0) {
                let Some(cw) = w.child(i) else { break };
                item(out, None, c, Some(cw));
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            // A window that starts inside a key shows no skeleton at that level: its first
            // member is the key's continuation.
            let skeleton = w.s_key().is_none();
            for (i, (k, c)) in m.iter().enumerate() {
                if i < w.s0 {
                    if skeleton && is_short_scalar(c) {
                        item(out, Some(k), c, Some((None, None)));
                    }
                    continue;
                }
                let Some((kw, cw)) = w.member(i) else { break };
                item(out, Some(kw.piece(k)), c, cw);
            }
            out.push('}');
        }
        // A number cut across pages: each piece of its spelling is shown as a JSON string.
        Value::Number(n) if s.is_some() || e.is_some() => {
            let text = number_text(n, precision);
            out.push('"');
            out.push_str(w.piece(&text));
            out.push('"');
        }
        scalar => out.push_str(&compact::to_string(scalar, precision)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn build_keeps_the_skeleton_and_cuts_between_elements() {
        let v = json!({"name": "x", "rows": [1, 2, 3, 4], "tail": "t"});
        assert_eq!(
            build(&v, Some(&[1, 2]), None),
            json!({"name": "x", "rows": [3, 4], "tail": "t"})
        );
        assert_eq!(
            build(&v, None, Some(&[1, 2])),
            json!({"name": "x", "rows": [1, 2]})
        );
        assert_eq!(
            build(&v, Some(&[1, 1]), Some(&[1, 1])),
            json!({"name": "x", "rows": []})
        );
        assert_eq!(
            build(&v, Some(&[2]), None),
            json!({"name": "x", "tail": "t"})
        );
    }

    #[test]
    fn build_splits_strings_at_byte_offsets() {
        let v = json!(["héllo"]);
        assert_eq!(build(&v, Some(&[0, 1]), Some(&[0, 3])), json!(["é"]));
    }

    #[test]
    fn the_window_writer_agrees_with_build() {
        let v = json!({"name": "x", "rows": [1, {"a": "héllo", "b": [2, 3]}, 4], "tail": "t"});
        let cases: [Sub<'_>; 6] = [
            (None, None),
            (Some(&[1, 1]), None),
            (None, Some(&[1, 1, 0, 2])),
            (Some(&[1, 1, 0, 1]), Some(&[1, 1, 1, 1])),
            (Some(&[1, 1]), Some(&[1, 1])),
            (Some(&[2]), None),
        ];
        for (s, e) in cases {
            let mut out = String::new();
            write_window(&v, s, e, 9, &mut out);
            assert_eq!(out, compact::to_string(&build(&v, s, e), 9), "{s:?} {e:?}");
        }
    }
}
