//! `structuredContent` next to its text twin, or paged as a document of its own.
//!
//! Rules (DESIGN.md: "never dropped when the tool declares an outputSchema; paged with its
//! text twin and stays valid against that schema"; it is model-visible when no text item
//! carries it):
//! - **String twin**: an object one of whose members is a string equal to a `text` item's
//!   text (the filesystem server's `directory_tree`: `{"content": <the text>}` with outputSchema
//!   `{content: string}`). That member is set to what the twin text item carries in the
//!   emitted result (the compacted text, or page 1's body). It stays a string, so the schema
//!   still holds ([`shape`]).
//! - **Value twin**: structuredContent value-equal to a JSON `text` item; and **no twin**: a
//!   structuredContent object or array no text item carries, which becomes a document of its
//!   own (its pages go out as text items too). Both follow their document's pages through a
//!   [`Plan`]: floats rounded like the text; whole when the result fits; on a page, the page
//!   made valid ([`complete`]: arrays hold the elements the page shows, members the page does
//!   not show are filled in [`minimal`]), so types, required members and additional
//!   properties hold (not `minItems`, string lengths or patterns); in summary mode, and on
//!   page 1 when the page shows none of it, [`minimal`]. What a page's value holds beyond its
//!   text item counts in the budget (`parts.rs` keeps it in).
//! - A twin (either kind) is dropped only when the tool is known (from `tools/list`) to declare
//!   no outputSchema: it duplicates a text item, and clients then read the text. When the
//!   proxy has not seen the tool in `tools/list`, it is kept as above (a client that knows an
//!   outputSchema rejects a result without structuredContent). Without an outputSchema, a
//!   structuredContent of its own is paged as the page itself.

use crate::paginate::{Document, PathStep, Position};
use crate::tokens::Encoding;
use std::sync::Arc;

use serde_json::Value;

use super::need::Need;

/// How structuredContent relates to the text items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Twin {
    /// Not a twin of any text item.
    None,
    /// `structuredContent[key]` is the text of text item `item`.
    Str {
        /// The member.
        key: String,
        /// Index of the text item among the text items.
        item: usize,
    },
    /// structuredContent is value-equal to the JSON of text item `item`.
    Value {
        /// Index of the text item among the text items.
        item: usize,
    },
}

/// Finds the twin of `sc` among the original texts of the text items: `texts[i]` is the text
/// of document `i` when that document is a `text` item, `None` for any other document (an
/// embedded resource's text, an offloaded blob), which no structuredContent twins.
pub fn find_twin(sc: &Value, texts: &[Option<&str>]) -> Twin {
    if let Value::Object(o) = sc {
        for (key, v) in o {
            if let Value::String(s) = v
                && let Some(item) = texts.iter().position(|t| *t == Some(s.as_str()))
            {
                return Twin::Str {
                    key: key.clone(),
                    item,
                };
            }
        }
    }
    if matches!(sc, Value::Object(_) | Value::Array(_)) {
        for (item, t) in texts.iter().enumerate() {
            let Some(t) = t else { continue };
            // Read as text items are (Python's NaN and lone surrogates included).
            if crate::dialect::json_document(t).is_some_and(|v| &v == sc) {
                return Twin::Value { item };
            }
        }
    }
    Twin::None
}

/// The structuredContent to emit beside a string twin (or a scalar that twins nothing), or
/// `None` to drop it. Value twins and structuredContent that no text item carries follow
/// their pages through a [`Plan`] instead.
///
/// `has_schema`: `Some(true/false)` when `tools/list` said whether the tool declares an
/// outputSchema, `None` when unknown. `emitted(item)`: the text that text item `item` carries
/// in the emitted result (empty when it is not on this page).
pub fn shape(
    mut sc: Value,
    twin: &Twin,
    has_schema: Option<bool>,
    emitted: impl Fn(usize) -> String,
) -> Option<Value> {
    if has_schema == Some(false) && *twin != Twin::None {
        return None;
    }
    if let Twin::Str { key, item } = twin
        && let Some(slot) = sc.get_mut(key.as_str())
    {
        *slot = Value::String(emitted(*item));
    }
    Some(sc)
}

/// How a structuredContent value follows the pages of the document that carries it: a value
/// twin follows its text item's document; a structuredContent that no text item carries is
/// a document of its own (its page goes out in a text item of its own too).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Index of the carrying document among the response's documents; `None` when the
    /// documents were merged into one array (budgets near the floor): then page 1 carries
    /// [`minimal`] and later pages none.
    pub doc: Option<usize>,
    /// The document is the structuredContent itself (no text item carried it).
    pub own: bool,
    /// The structuredContent, floats rounded like the text: read from its document when that
    /// holds the same value (no second copy), else kept ([`Plan::orig`]).
    pub orig: Orig,
    /// Keep every page valid against an outputSchema ([`complete`]): the tool declares one
    /// or `tools/list` has not said. Otherwise a page's structuredContent is the page itself.
    pub valid: bool,
    /// The tool is known to declare an outputSchema: page 1 keeps a structuredContent even
    /// when nothing smaller than the budget is valid.
    pub declared: bool,
    /// The declared outputSchema (from `tools/list`): a page's value is filled with only the
    /// members it requires ([`Need`]). `None` (not declared, or not seen): every member.
    pub schema: Option<Arc<Value>>,
}

/// Where a [`Plan`] finds the structuredContent (floats rounded like the text).
#[derive(Debug, Clone, PartialEq)]
pub enum Orig {
    /// Document `n` of the response (its index before any merging into one array) holds the
    /// very value: always for a structuredContent of its own, and for a value twin whose
    /// rounded value equals its text item's document. No copy is kept: the value is read
    /// from the cached documents, so it is counted, demoted and spilled with them.
    Doc(usize),
    /// A copy (shared: plans are cloned), when the document differs (a `transform`, an
    /// offloaded blob, floats rounded): counted in the resident bytes of the
    /// cache entry that holds the plan (the proxy's `Entry::with_parts`).
    Kept(Arc<Value>),
}

/// What a page carries as structuredContent.
#[derive(Debug, Clone, PartialEq)]
pub struct ScPage {
    /// The value; `None`: no structuredContent on this page.
    pub value: Option<Value>,
    /// Its model-visible tokens beyond the text item that carries it (all of its tokens when
    /// no text item on the page carries it).
    pub extra: usize,
    /// The value holds the page's structure ([`carries_within`]): it twins the page's text
    /// item, and only its tokens beyond that count. `false` when it counts in full (or there
    /// is none): its size then hardly depends on the page beside it.
    pub carried: bool,
}

impl ScPage {
    /// No structuredContent.
    pub const NONE: ScPage = ScPage {
        value: None,
        extra: 0,
        carried: false,
    };
}

impl Plan {
    /// The structuredContent value, read from `docs`, the documents as cached (the one
    /// merged array when [`Plan::doc`] is `None`) or as laid out. `None` when they do not hold
    /// it (never expected).
    pub fn orig<'a>(&'a self, docs: &'a [Document]) -> Option<&'a Value> {
        let n = match &self.orig {
            Orig::Kept(v) => return Some(v),
            Orig::Doc(n) => *n,
        };
        let doc = if self.doc.is_some() {
            docs.get(n)
        } else {
            match docs {
                [Document::Json(Value::Array(all))] => return all.get(n),
                _ => docs.get(n),
            }
        };
        match doc {
            Some(Document::Json(v)) => Some(v),
            _ => None,
        }
    }

    /// What the outputSchema requires of the value ([`Need::All`] without a declared one).
    pub fn need(&self) -> Need<'_> {
        Need::of(self.schema.as_deref())
    }

    /// `orig` reduced ([`minimal`]) to what the outputSchema requires: the structuredContent
    /// of a page that shows none of it, and of the elision envelope.
    pub fn reduced(&self, orig: &Value) -> Value {
        minimal(orig, &self.need())
    }

    /// The structuredContent of a page (`orig`: the value, [`Plan::orig`]). `part`: the body,
    /// start and root of the page's part of the carrying document, when the page has one;
    /// `first` when it is page 1 of the tool's own result (which must carry a valid value even
    /// without a part: [`minimal`]). `fill`: make it valid ([`complete`], with the members
    /// the outputSchema requires); without it the page value itself, a twin of its text item
    /// (no extra tokens). `room`: when set and the value holds more than `room` tokens beyond
    /// its text item, its arrays are cut further ([`shrink_to`]) until all of its tokens fit
    /// `room` (a value cut below the page no longer twins the text item).
    pub fn for_page(
        &self,
        orig: &Value,
        part: Option<(&str, &Position, &[PathStep])>,
        first: bool,
        fill: bool,
        room: Option<usize>,
        encoding: &Encoding,
    ) -> ScPage {
        let need = self.need();
        // A body in the table form (`tables = "auto"`) is decoded: the value twins the JSON
        // it stands for, so what it holds beyond the page is counted against that JSON.
        let page = part.and_then(|(body, start, root)| {
            let (v, tabled) = match crate::dialect::parse_unbounded(body.as_bytes()) {
                Ok(p) => (p.value, false),
                Err(_) => (crate::table::decode(body).ok()?, true),
            };
            matches!(v, Value::Object(_) | Value::Array(_))
                .then_some((body, v, tabled, start, root))
        });
        let count =
            |value: &Value| encoding.count(&serde_json::to_string(value).unwrap_or_default());
        match page {
            Some((body, v, tabled, start, root)) if fill && self.valid => {
                let steps = position_steps(start);
                let body_tokens = if tabled {
                    encoding.count(&serde_json::to_string(&v).unwrap_or_default())
                } else {
                    encoding.count(body)
                };
                let mut value = complete_at(orig, root, &v, &steps, minimal, &need);
                // A value that does not hold the page (a cut number filled in whole) twins no
                // text item: all of its tokens count.
                let mut carried = carries_within(&value, &v);
                let mut extra = if carried {
                    count(&value).saturating_sub(body_tokens)
                } else {
                    count(&value)
                };
                if let Some(room) = room {
                    // No smaller page. Members filled in bare, then fewer elements than the
                    // text item shows: while it still holds the page's structure it twins the
                    // text item (counting once, at the larger of the two); cut below that,
                    // all of its tokens count.
                    for filler in [minimal as Filler, bare] {
                        if extra <= room {
                            break;
                        }
                        value = complete_at(orig, root, &v, &steps, filler, &need);
                        shrink_to(&mut value, body_tokens + room, encoding);
                        extra = count(&value).saturating_sub(body_tokens);
                        carried = carries_within(&value, &v);
                        if !carried {
                            shrink_to(&mut value, room, encoding);
                            extra = count(&value);
                        }
                    }
                }
                ScPage {
                    value: Some(value),
                    extra,
                    carried,
                }
            }
            Some((_, v, _, _, _)) => ScPage {
                value: Some(v),
                extra: 0,
                carried: true,
            },
            None if first && self.valid => {
                let mut value = minimal(orig, &need);
                if let Some(room) = room
                    && !shrink_to(&mut value, room, encoding)
                {
                    value = bare(orig, &need);
                    shrink_to(&mut value, room, encoding);
                }
                ScPage {
                    extra: count(&value),
                    value: Some(value),
                    carried: false,
                }
            }
            None => ScPage::NONE,
        }
    }
}

/// Cuts elements off the end of `value`'s arrays (the last non-empty array in document
/// order first, deepest first) until its compact JSON is at most `max_tokens`: the fewest
/// such cuts; types and required members stay. Returns whether it got there.
///
/// Work is `O(size · log cuts)`: the cuts are made in doubling batches, each one pass over the
/// value (`pop_many`), and the fewest cuts that fit are then found by bisection, each probe
/// one copy, one serialization and one count (one cut and one count at a time costs
/// `O(size · cuts)`, quadratic on a value nested hundreds of levels deep).
pub fn shrink_to(value: &mut Value, max_tokens: usize, encoding: &Encoding) -> bool {
    let fits = |v: &Value| {
        let text = serde_json::to_string(v).unwrap_or_default();
        encoding.count_till_limit(&text, max_tokens).is_some()
    };
    if fits(value) {
        return true;
    }
    let mut batch = 1usize;
    loop {
        let before = value.clone();
        let cut = pop_many(value, batch);
        if fits(value) {
            // `before` does not fit, `before` less `cut` elements does: bisect.
            let (mut lo, mut hi) = (0, cut);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                let mut v = before.clone();
                pop_many(&mut v, mid);
                if fits(&v) {
                    hi = mid;
                    *value = v;
                } else {
                    lo = mid;
                }
            }
            return true;
        }
        if cut < batch {
            // Every array is empty.
            return false;
        }
        batch = batch.saturating_mul(2);
    }
}

/// Whether `sc`, or a value inside it, holds `page`'s structure: every member the page shows,
/// held the same way; arrays element by element (`sc` may hold fewer, not none when the page
/// has some); other values equal. A structuredContent that holds its text item's page this
/// way twins that text item.
pub fn carries_within(sc: &Value, page: &Value) -> bool {
    fn carries(sc: &Value, page: &Value) -> bool {
        match (sc, page) {
            (Value::Object(s), Value::Object(p)) => p
                .iter()
                .all(|(k, pv)| s.get(k).is_some_and(|sv| carries(sv, pv))),
            (Value::Array(s), Value::Array(p)) => {
                s.len() <= p.len()
                    && (!s.is_empty() || p.is_empty())
                    && s.iter().zip(p).all(|(sv, pv)| carries(sv, pv))
            }
            _ => sc == page,
        }
    }
    carries(sc, page)
        || match sc {
            Value::Object(o) => o.values().any(|v| carries_within(v, page)),
            Value::Array(a) => a.iter().any(|v| carries_within(v, page)),
            _ => false,
        }
}

/// Removes up to `k` elements from `v`, one at a time, each the last element of the last
/// non-empty array in document order (deepest first: an element is removed once nothing in it
/// can be), in one pass; returns how many it removed (fewer than `k` when every array is
/// then empty).
fn pop_many(v: &mut Value, k: usize) -> usize {
    let mut done = 0;
    match v {
        Value::Array(a) => {
            while done < k {
                let Some(last) = a.last_mut() else { break };
                done += pop_many(last, k - done);
                if done < k {
                    // Nothing left to remove inside it: the element goes.
                    a.pop();
                    done += 1;
                }
            }
        }
        Value::Object(o) => {
            for c in o.values_mut().rev() {
                if done == k {
                    break;
                }
                done += pop_many(c, k - done);
            }
        }
        _ => {}
    }
    done
}

/// The steps of a JSON position (member index in key order, element index, last a byte
/// offset in a string), read from its display form `1.<hex>.<hex>…`; empty for the start or
/// a text position.
pub fn position_steps(p: &Position) -> Vec<usize> {
    let s = p.to_string();
    match s.split_once('.') {
        Some(("1", rest)) => rest
            .split('.')
            .map_while(|h| usize::from_str_radix(h, 16).ok())
            .collect(),
        _ => Vec::new(),
    }
}

/// How members a page does not show are filled in: [`minimal`] or [`bare`].
pub type Filler = fn(&Value, &Need<'_>) -> Value;

/// [`complete`] of a page whose body is the sub-tree at `root`: the ancestors on `root` are
/// filled from `orig` (the members beside the path that `need` requires, filled by `fill`;
/// arrays holding only the element on the path). `steps`: the page's start from `$`
/// ([`position_steps`]).
pub fn complete_at(
    orig: &Value,
    root: &[PathStep],
    page: &Value,
    steps: &[usize],
    fill: Filler,
    need: &Need<'_>,
) -> Value {
    let Some((step, below)) = root.split_first() else {
        return complete(orig, page, steps, fill, need);
    };
    let steps = steps.get(1..).unwrap_or(&[]);
    match (orig, step) {
        (Value::Object(o), PathStep::Key(k)) => Value::Object(
            o.iter()
                .filter_map(|(kk, v)| {
                    let v = if kk == k {
                        complete_at(v, below, page, steps, fill, &need.member(kk))
                    } else if need.requires(kk) {
                        fill(v, &need.member(kk))
                    } else {
                        return None;
                    };
                    Some((kk.clone(), v))
                })
                .collect(),
        ),
        (Value::Array(a), PathStep::Index(i)) => match a.get(*i) {
            Some(v) => Value::Array(vec![complete_at(
                v,
                below,
                page,
                steps,
                fill,
                &need.element(*i),
            )]),
            None => fill(orig, need),
        },
        _ => fill(orig, need),
    }
}

/// Values whose compact JSON is at most this many bytes are "short": kept as they are when
/// filling members a page does not show (the same limit as the pager's skeleton).
const SHORT_BYTES: usize = 64;

/// A page of `orig` (its body `page` rooted at `orig`'s root, starting at `steps`, see
/// [`position_steps`]) made into a value of the same shape as `orig`: every object keeps, in
/// order, the members of `orig` the page shows (completed the same way) and those `need`
/// requires that it does not show (filled by `fill`); arrays hold the elements the page shows
/// (each completed against the element of `orig` it is: on the start path offset by the
/// start's index), and strings and other scalars are what the page shows (a piece of a long
/// string stays a piece; a piece of a long number, which a page shows as a string, is filled
/// in as the number). Types and required members hold, so a value valid against a schema that
/// constrains types, required members and additional properties stays valid (not
/// `minItems`, tuples, string patterns or lengths).
pub fn complete(
    orig: &Value,
    page: &Value,
    steps: &[usize],
    fill: Filler,
    need: &Need<'_>,
) -> Value {
    match (orig, page) {
        (Value::Object(o), Value::Object(p)) => Value::Object(
            o.iter()
                .enumerate()
                .filter_map(|(idx, (k, v))| {
                    let v = match p.get(k) {
                        Some(pv) => {
                            let rest = match steps.split_first() {
                                Some((&s, rest)) if s == idx => rest,
                                _ => &[],
                            };
                            complete(v, pv, rest, fill, &need.member(k))
                        }
                        None if need.requires(k) => fill(v, &need.member(k)),
                        None => return None,
                    };
                    Some((k.clone(), v))
                })
                .collect(),
        ),
        (Value::Array(a), Value::Array(p)) => {
            let (offset, rest) = match steps.split_first() {
                Some((&s, rest)) => (s, rest),
                None => (0, &[][..]),
            };
            Value::Array(
                p.iter()
                    .enumerate()
                    .map(|(j, pv)| {
                        let i = offset.saturating_add(j);
                        match a.get(i) {
                            Some(v) => complete(
                                v,
                                pv,
                                if j == 0 { rest } else { &[] },
                                fill,
                                &need.element(i),
                            ),
                            None => pv.clone(),
                        }
                    })
                    .collect(),
            )
        }
        (Value::Object(_) | Value::Array(_), _) => fill(orig, need),
        // A piece of a number cut across pages shows as a string of its digits: the value
        // keeps the number's type (filled in whole), so the schema still holds.
        (Value::Number(_), p) if !p.is_number() => fill(orig, need),
        _ => page.clone(),
    }
}

/// `v` bare, the last resort when even [`minimal`] members do not fit: strings empty,
/// numbers `0`, arrays empty, objects with the members `need` requires, bare; booleans and
/// null as they are. Types and required members hold; values are placeholders.
pub fn bare(v: &Value, need: &Need<'_>) -> Value {
    match v {
        Value::String(_) => Value::String(String::new()),
        Value::Number(_) => Value::from(0),
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| need.requires(k))
                .map(|(k, v)| (k.clone(), bare(v, &need.member(k))))
                .collect(),
        ),
        _ => v.clone(),
    }
}

/// `v` reduced: short values as they are, arrays empty, objects with the members `need`
/// requires, reduced, long strings empty, other scalars whole.
pub fn minimal(v: &Value, need: &Need<'_>) -> Value {
    let short = || fits_bytes(v, SHORT_BYTES);
    match v {
        Value::Array(_) if short() => v.clone(),
        Value::Array(_) => Value::Array(Vec::new()),
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| need.requires(k))
                .map(|(k, v)| (k.clone(), minimal(v, &need.member(k))))
                .collect(),
        ),
        Value::String(_) if !short() => Value::String(String::new()),
        _ => v.clone(),
    }
}

/// Whether `v`'s compact JSON is at most `cap` bytes. Work is `O(min(size, cap))`: the
/// writing stops at the cap (asking this of every array on a path nested `d` levels deep
/// would otherwise serialize `O(d)` sub-trees of `O(size)` each).
pub fn fits_bytes(v: &Value, cap: usize) -> bool {
    /// Counts bytes written and fails past its cap.
    struct Capped {
        left: usize,
    }
    impl std::io::Write for Capped {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.left = self
                .left
                .checked_sub(buf.len())
                .ok_or(std::io::ErrorKind::WriteZero)?;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(&mut Capped { left: cap }, v).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn twins_are_found_among_text_items_only() {
        let texts = vec![Some("hello"), Some("{\"a\": 1}"), None];
        assert_eq!(
            find_twin(&json!({"content":"hello"}), &texts),
            Twin::Str {
                key: "content".into(),
                item: 0
            }
        );
        assert_eq!(find_twin(&json!({"a":1}), &texts), Twin::Value { item: 1 });
        assert_eq!(find_twin(&json!({"a":2}), &texts), Twin::None);
        // An empty string member twins no document that is not a text item.
        assert_eq!(find_twin(&json!({"x":""}), &[None]), Twin::None);
    }

    #[test]
    fn twin_dropped_only_when_known_schemaless() {
        let twin = Twin::Str {
            key: "content".into(),
            item: 0,
        };
        let sc = json!({"content":"long"});
        assert_eq!(shape(sc.clone(), &twin, Some(false), |_| "p".into()), None);
        assert_eq!(
            shape(sc.clone(), &twin, Some(true), |_| "p".into()),
            Some(json!({"content":"p"}))
        );
        assert_eq!(
            shape(sc, &twin, None, |_| "p".into()),
            Some(json!({"content":"p"}))
        );
        let other = json!(3);
        assert_eq!(
            shape(other.clone(), &Twin::None, Some(false), |_| String::new()),
            Some(other)
        );
    }

    #[test]
    fn page_one_is_completed_with_every_member() {
        let orig = json!({"items": [
            {"id": 0, "name": "a", "tags": ["x", "y"]},
            {"id": 1, "name": "b", "tags": ["x"]},
            {"id": 2, "name": "c", "tags": []}
        ], "total": 3, "big": {"list": (100..140).collect::<Vec<u32>>()}, "long": "z".repeat(100)});
        let page = json!({"items": [{"id": 0, "name": "a", "tags": ["x", "y"]}, {"id": 1}]});
        assert_eq!(
            complete(&orig, &page, &[], minimal, &Need::All),
            json!({"items": [
                {"id": 0, "name": "a", "tags": ["x", "y"]},
                {"id": 1, "name": "b", "tags": ["x"]}
            ], "total": 3, "big": {"list": []}, "long": ""})
        );
        assert_eq!(
            minimal(&orig, &Need::All),
            json!({"items": [], "total": 3, "big": {"list": []}, "long": ""})
        );
    }

    #[test]
    fn later_pages_are_completed_against_the_elements_they_show() {
        let orig = json!({"n": 2, "rows": [
            {"id": 0, "text": "a".repeat(10)},
            {"id": 1, "text": "b".repeat(10)},
            {"id": 2, "text": "c".repeat(10)}
        ]});
        // Page 2 starts inside row 1's text (member 1 of the root, element 1, member 1,
        // byte 4): its skeleton repeats row 1's id.
        let page = json!({"rows": [{"id": 1, "text": "bbbbbb"}, {"id": 2}]});
        assert_eq!(
            complete(&orig, &page, &[1, 1, 1, 4], minimal, &Need::All),
            json!({"n": 2, "rows": [{"id": 1, "text": "bbbbbb"}, {"id": 2, "text": "cccccccccc"}]})
        );
        // A body rooted below `$` (at `$.rows[2]`) is put back in its ancestors.
        let body = json!({"id": 2, "text": "cc"});
        let root = [PathStep::Key("rows".into()), PathStep::Index(2)];
        assert_eq!(
            complete_at(&orig, &root, &body, &[1, 2, 1, 0], minimal, &Need::All),
            json!({"n": 2, "rows": [{"id": 2, "text": "cc"}]})
        );
    }

    #[test]
    fn shrinking_cuts_the_last_arrays_first_and_keeps_members() {
        let enc = Encoding::Cl100kBase;
        let mut v = json!({"a": [1, 2, 3, 4, 5, 6, 7, 8], "b": {"c": [[1, 2], [3, 4]]}, "n": 1});
        let target = enc.count(r#"{"a":[1,2,3,4,5,6,7,8],"b":{"c":[[1,2]]},"n":1}"#);
        assert!(shrink_to(&mut v, target, &enc));
        assert_eq!(v["b"]["c"], json!([[1, 2]]));
        assert_eq!(v["a"].as_array().unwrap().len(), 8);
        assert!(shrink_to(&mut v, 5, &enc) || v == json!({"a": [], "b": {"c": []}, "n": 1}));
        assert_eq!(v["n"], 1);
    }

    #[test]
    fn bare_keeps_types_and_members_only() {
        assert_eq!(
            bare(
                &json!({"a": "name", "n": 12.5, "b": true, "z": null, "l": [1], "o": {"k": "v"}}),
                &Need::All
            ),
            json!({"a": "", "n": 0, "b": true, "z": null, "l": [], "o": {"k": ""}})
        );
    }

    #[test]
    fn position_steps_read_the_display_form() {
        assert_eq!(position_steps(&Position::start()), Vec::<usize>::new());
        let p: Position = "1.1.a.0".parse().unwrap();
        assert_eq!(position_steps(&p), vec![1, 10, 0]);
    }

    #[test]
    fn a_plan_gives_page_one_a_value_even_without_a_part() {
        let plan = Plan {
            doc: Some(1),
            own: true,
            orig: Orig::Doc(1),
            valid: true,
            declared: true,
            schema: None,
        };
        let docs = [
            Document::Text("t".into()),
            Document::Json(json!({"a": [1, 2, 3], "b": "x"})),
        ];
        let orig = plan.orig(&docs).unwrap();
        // Merged into one array (budgets near the floor): the same value, read from it.
        let merged_plan = Plan {
            doc: None,
            ..plan.clone()
        };
        let merged = [Document::Json(json!(["t", {"a": [1, 2, 3], "b": "x"}]))];
        assert_eq!(merged_plan.orig(&merged), Some(orig));
        let kept = Plan {
            orig: Orig::Kept(Arc::new(json!({"k": 1}))),
            ..plan.clone()
        };
        assert_eq!(kept.orig(&[]), Some(&json!({"k": 1})));
        let enc = Encoding::Cl100kBase;
        let sc = plan.for_page(orig, None, true, true, None, &enc);
        assert_eq!(sc.value, Some(json!({"a": [1, 2, 3], "b": "x"})));
        assert_eq!(sc.extra, enc.count(r#"{"a":[1,2,3],"b":"x"}"#));
        assert_eq!(
            plan.for_page(orig, None, false, true, None, &enc).value,
            None
        );
        let start = Position::start();
        let part = Some(("{\"a\":[1]}", &start, &[][..]));
        let filled = plan.for_page(orig, part, false, true, None, &enc);
        assert_eq!(filled.value, Some(json!({"a": [1], "b": "x"})));
        assert!(filled.extra > 0);
        let raw = plan.for_page(orig, part, false, false, None, &enc);
        assert_eq!((raw.value, raw.extra), (Some(json!({"a": [1]})), 0));
    }
}
