//! Puts pages back together by the merge rule of the module docs of [`super`].

use serde_json::Value;

use super::page::{Document, Page};
use super::path::{ShownStep, parse_shown};

/// Puts pages back together: the inverse of paging (byte-exact for text, value-equal for JSON
/// after rounding). `pages` must be every page of one document, in order, from page 1.
///
/// JSON pages are merged by the merge rule from their bodies and full locations
/// ([`Page::location`]), exactly as [`reassemble_from_wire`] does for a client.
///
/// Returns `None` when `pages` is empty or the pages do not fit together (mixed kinds, a JSON
/// page without a value, a page whose start does not continue the previous one).
pub fn reassemble(pages: &[Page]) -> Option<Document> {
    let first = pages.first()?;
    if first.value.is_none() {
        return Some(Document::Text(
            pages.iter().map(|p| p.body.as_str()).collect(),
        ));
    }
    let wire: Vec<(Value, Option<&str>)> = pages
        .iter()
        .map(|p| {
            Some((
                p.value.clone()?,
                p.meta.as_ref().map(|_| p.location.as_str()),
            ))
        })
        .collect::<Option<_>>()?;
    reassemble_from_wire(&wire).map(Document::Json)
}

/// Merges `value`, the body of a page rooted at `root` (keys for object steps), into `acc`;
/// `rest` holds the steps of the page's start below the root (none: the root node is new, and
/// is attached to its parent).
fn merge_at(
    acc: &mut Value,
    value: Value,
    root: &[Option<&str>],
    rest: &[ShownStep],
) -> Option<()> {
    let mut node = acc;
    let (attach, descend) = if rest.is_empty() {
        let (last, parents) = root.split_last()?;
        (Some(*last), parents)
    } else {
        (None, root)
    };
    for _ in descend {
        node = last_child(node)?;
    }
    match attach {
        None => merge(node, value, rest),
        Some(key) => match (node, key) {
            (Value::Array(items), None) => {
                items.push(value);
                Some(())
            }
            (Value::Object(m), Some(k)) => {
                m.insert(k.to_owned(), value);
                Some(())
            }
            _ => None,
        },
    }
}

/// Page 1 rooted at R (a chain of first children): the body wrapped back in R's containers,
/// innermost first (`[V]` for an index step, `{"k":V}` for a key step).
fn wrap<'a>(value: Value, root: impl DoubleEndedIterator<Item = Option<&'a str>>) -> Value {
    root.rev().fold(value, |v, step| match step {
        Some(k) => {
            let mut m = serde_json::Map::new();
            m.insert(k.to_owned(), v);
            Value::Object(m)
        }
        None => Value::Array(vec![v]),
    })
}

fn last_child(v: &mut Value) -> Option<&mut Value> {
    match v {
        Value::Array(items) => items.last_mut(),
        Value::Object(m) => m.values_mut().next_back(),
        _ => None,
    }
}

/// The merge rule: `steps` (D of them) of the page's start lie below this node. With more
/// than one, the cut is inside this node's last child (the page's first child, after the
/// skeleton, continues it); with exactly one, the page's children are new and append; a start
/// inside a key continues this node's last member's key.
fn merge(acc: &mut Value, value: Value, steps: &[ShownStep]) -> Option<()> {
    let depth = steps.len();
    match (acc, value) {
        (Value::Array(items), Value::Array(more)) => {
            let mut more = more.into_iter();
            if depth > 1 {
                merge(items.last_mut()?, more.next()?, &steps[1..])?;
            }
            items.extend(more);
        }
        (Value::Object(m), Value::Object(more))
            if depth == 2 && matches!(steps[1], ShownStep::KeyChars(_)) =>
        {
            let mut more = more.into_iter();
            let (piece, v) = more.next()?;
            let mut key = m.keys().next_back()?.clone();
            m.shift_remove(&key);
            key.push_str(&piece);
            m.insert(key, v);
            for (k, v) in more {
                if !m.contains_key(&k) {
                    m.insert(k, v);
                }
            }
        }
        (Value::Object(m), Value::Object(more)) => {
            let last = m.keys().next_back().cloned();
            for (k, v) in more {
                if depth > 1 && last.as_ref() == Some(&k) {
                    merge(m.get_mut(&k)?, v, &steps[1..])?;
                } else if !m.contains_key(&k) {
                    m.insert(k, v);
                }
            }
        }
        (Value::String(s), Value::String(more)) if depth == 1 => s.push_str(&more),
        _ => return None,
    }
    Some(())
}

/// The node at `steps` (keys and indices from the root).
fn node_mut<'v>(v: &'v mut Value, steps: &[ShownStep]) -> Option<&'v mut Value> {
    steps.iter().try_fold(v, |v, s| match (s, v) {
        (ShownStep::Key(k), Value::Object(m)) => m.get_mut(k),
        (ShownStep::Index(i), Value::Array(a)) => a.get_mut(*i),
        _ => None,
    })
}

/// Reassembles JSON pages as a client that sees only the wire does: from each page's body
/// value and its full location (`result._meta["mcp-budget/page"].location` in the proxy;
/// `None` for a page 1 that fit whole). The merge rule of the module docs of [`super`]; it
/// fails (`None`) on abbreviated locations and on pages that do not fit together.
pub fn reassemble_from_wire(pages: &[(Value, Option<&str>)]) -> Option<Value> {
    let mut acc: Option<Value> = None;
    let mut numbers: Vec<Vec<ShownStep>> = Vec::new();
    for (value, location) in pages {
        let Some(a) = acc.as_mut() else {
            // Page 1: a fitting document has no meta; one rooted below `$` is wrapped back.
            let root = match location {
                // (Page 1 needs only R: an abbreviated location is fine unless it has a root.)
                Some(loc) => match parse_shown(loc) {
                    Some((_, root)) => root,
                    None if !loc.contains(" (body is ") => Vec::new(),
                    None => return None,
                },
                None => Vec::new(),
            };
            acc = Some(wrap(
                value.clone(),
                root.iter().map(|s| match s {
                    ShownStep::Key(k) => Some(k.as_str()),
                    _ => None,
                }),
            ));
            continue;
        };
        let (start, root) = parse_shown((*location)?)?;
        if start.get(..root.len()) != Some(&root[..]) {
            return None;
        }
        let root_keys: Vec<Option<&str>> = root
            .iter()
            .map(|s| match s {
                ShownStep::Key(k) => Some(k.as_str()),
                _ => None,
            })
            .collect();
        merge_at(a, value.clone(), &root_keys, &start[root.len()..])?;
        if let Some((ShownStep::Digits(_), number)) = start.split_last() {
            numbers.push(number.to_vec());
        }
    }
    let mut acc = acc?;
    for path in numbers {
        let node = node_mut(&mut acc, &path)?;
        if let Value::String(s) = node {
            *node = Value::Number(s.parse().ok()?);
        }
    }
    Some(acc)
}

/// Where one content item of a paged response lies: which document (0-based) of how many,
/// and its position inside that document (`None`: the whole document).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocationPart<'a> {
    /// The document's index (0-based; `text 2/3` is 1).
    pub doc: usize,
    /// How many documents the response has.
    pub of: usize,
    /// The position inside the document (a JSON location of the grammar of [`super`], or a
    /// text location `lines A-B of N …`); `None` when the item is the whole document.
    pub inner: Option<&'a str>,
}

/// Splits the full location of a page of a several-document response into one part per
/// document-carrying content item of the page, in order.
///
/// Grammar (what the proxy writes in `result._meta["mcp-budget/page"].location`):
///
/// ```text
/// location := single | multi
/// single   := INNER                      (a response of one document: no `text` prefix)
/// multi    := part (", " part)* [" " INNER]
/// part     := "text " I "/" N            (document I of N, 1-based, decimal)
/// ```
///
/// Only the **last** part of a page can be a piece of its document (the documents before it
/// on the page are whole), so `INNER`, when present, is everything after the space that
/// follows the last `text I/N`, and belongs to that last part. The split is left to right
/// and never looks inside `INNER`: a key or text holding `", "` or `"text 2/3"` cannot make
/// it ambiguous. A `single` location (JSON locations start with `$`, text ones with `line`)
/// gives one part: document 0 of 1, with `inner` the whole location (`None` for `$`, the
/// whole document).
///
/// Returns `None` when `location` starts with `text ` but does not follow `multi`.
pub fn split_location(location: &str) -> Option<Vec<LocationPart<'_>>> {
    let Some(mut rest) = location.strip_prefix("text ") else {
        let inner = (location != "$").then_some(location);
        return Some(vec![LocationPart {
            doc: 0,
            of: 1,
            inner,
        }]);
    };
    let mut parts = Vec::new();
    loop {
        let (i, r) = decimal(rest)?;
        let (n, r) = decimal(r.strip_prefix('/')?)?;
        if i == 0 || i > n {
            return None;
        }
        let mut part = LocationPart {
            doc: i - 1,
            of: n,
            inner: None,
        };
        if let Some(r) = r.strip_prefix(", text ") {
            parts.push(part);
            rest = r;
            continue;
        }
        if let Some(inner) = r.strip_prefix(' ') {
            part.inner = Some(inner);
        } else if !r.is_empty() {
            return None;
        }
        parts.push(part);
        return Some(parts);
    }
}

/// A decimal number at the start of `s`, and the rest.
fn decimal(s: &str) -> Option<(usize, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    Some((s[..end].parse().ok()?, &s[end..]))
}

/// Puts every document of a paged response back together from the wire alone, as a client
/// does: for each page, in order from page 1, its full location
/// (`result._meta["mcp-budget/page"].location`; `None` for a response that fit whole and has
/// no meta) and the bodies of its document-carrying content items in order (the `text` of
/// its text items but the last, the meta item; the `resource.text` of its embedded resource
/// items; images, links and blobs carry none).
///
/// The location is split by [`split_location`]; the pieces of each document are joined:
/// - a document shown whole (no `INNER`, or a response with no meta) comes back as
///   [`Document::Text`] holding the body as sent (for a JSON document, its compact
///   rendering: parse it to compare values);
/// - a text document (its `INNER` starts with `line`) is the concatenation of its pieces,
///   byte-exact ([`Document::Text`]);
/// - a JSON document (its `INNER` starts with `$`) is merged by the merge rule of [`super`]
///   ([`reassemble_from_wire`]) from its pieces parsed in the dialect of
///   [`crate::dialect::parse_unbounded`] (`NaN`/`Infinity` literals kept, any depth: a
///   structuredContent may nest deeper than 128 levels), giving [`Document::Json`],
///   value-equal to the document.
///
/// Returns `None` when a location does not parse, the number of bodies differs from the
/// number of parts, pages disagree on the number of documents, a document is missing or
/// comes whole twice, or a document's pieces do not merge.
pub fn reassemble_documents_from_wire(
    pages: &[(Option<&str>, Vec<&str>)],
) -> Option<Vec<Document>> {
    if let [(None, bodies)] = pages {
        return Some(
            bodies
                .iter()
                .map(|b| Document::Text((*b).to_owned()))
                .collect(),
        );
    }
    // For each document, its pieces: (body, inner location).
    let mut pieces: Vec<Vec<(&str, Option<&str>)>> = Vec::new();
    let mut total: Option<usize> = None;
    for (location, bodies) in pages {
        let parts = split_location((*location)?)?;
        if parts.len() != bodies.len() {
            return None;
        }
        for (part, body) in parts.iter().zip(bodies) {
            if *total.get_or_insert(part.of) != part.of {
                return None;
            }
            if pieces.len() < part.of {
                pieces.resize_with(part.of, Vec::new);
            }
            pieces[part.doc].push((body, part.inner));
        }
    }
    pieces.into_iter().map(|p| join_pieces(&p)).collect()
}

/// One document from its pieces (see [`reassemble_documents_from_wire`]).
fn join_pieces(pieces: &[(&str, Option<&str>)]) -> Option<Document> {
    match pieces {
        [] => None,
        [(body, None)] => Some(Document::Text((*body).to_owned())),
        [(_, Some(first)), ..] if first.starts_with('$') => {
            let wire: Vec<(Value, Option<&str>)> = pieces
                .iter()
                .map(|(body, inner)| {
                    let value = crate::dialect::parse_unbounded(body.as_bytes()).ok()?.value;
                    Some((value, Some((*inner)?)))
                })
                .collect::<Option<_>>()?;
            reassemble_from_wire(&wire).map(Document::Json)
        }
        _ if pieces.iter().all(|(_, inner)| inner.is_some()) => Some(Document::Text(
            pieces.iter().map(|(body, _)| *body).collect(),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_several_part_location_splits_left_to_right_whatever_the_inner_location_holds() {
        let loc = "text 1/3, text 2/3 $['a, text 2/3 $', 'b'][0:4] to $['x, text 3/3'][1]";
        let parts = split_location(loc);
        assert_eq!(
            parts,
            Some(vec![
                LocationPart {
                    doc: 0,
                    of: 3,
                    inner: None
                },
                LocationPart {
                    doc: 1,
                    of: 3,
                    inner: Some("$['a, text 2/3 $', 'b'][0:4] to $['x, text 3/3'][1]")
                },
            ])
        );
        assert_eq!(
            split_location("lines 1-3 of 9 (to char 4 of line 3)"),
            Some(vec![LocationPart {
                doc: 0,
                of: 1,
                inner: Some("lines 1-3 of 9 (to char 4 of line 3)")
            }])
        );
        assert_eq!(split_location("text 4/3"), None);
        assert_eq!(split_location("text 1/3,text 2/3"), None);
    }

    #[test]
    fn several_documents_come_back_from_locations_and_bodies() {
        let pages: Vec<(Option<&str>, Vec<&str>)> = vec![
            (
                Some("text 1/3, text 2/3 $[0:2]"),
                vec!["hello, text 2/3", "[1,{\"a, text 3/3\":NaN}]"],
            ),
            (
                Some("text 2/3 $[2:3], text 3/3 lines 1-1 of 2 (chars 0-2)"),
                vec!["[3]"],
            ),
        ];
        // Two bodies for one location part: refused.
        assert_eq!(reassemble_documents_from_wire(&pages), None);
        let pages: Vec<(Option<&str>, Vec<&str>)> = vec![
            (
                Some("text 1/3, text 2/3 $[0:2]"),
                vec!["hello, text 2/3", "[1,{\"a, text 3/3\":NaN}]"],
            ),
            (Some("text 2/3 $[2:3]"), vec!["[3]"]),
            (Some("text 3/3 lines 1-1 of 2"), vec!["a\n"]),
            (Some("text 3/3 lines 2-2 of 2"), vec!["b"]),
        ];
        let docs = reassemble_documents_from_wire(&pages);
        let expected = crate::dialect::parse(br#"[1,{"a, text 3/3":NaN},3]"#).map(|p| p.value);
        assert_eq!(
            docs,
            Some(vec![
                Document::Text("hello, text 2/3".into()),
                Document::Json(expected.unwrap_or_default()),
                Document::Text("a\nb".into()),
            ])
        );
        // A document that never shows is a failure.
        assert_eq!(reassemble_documents_from_wire(&pages[..1]), None);
        // A response that fit whole: its bodies.
        assert_eq!(
            reassemble_documents_from_wire(&[(None, vec!["x", "{}"])]),
            Some(vec![
                Document::Text("x".into()),
                Document::Text("{}".into())
            ])
        );
    }
}
