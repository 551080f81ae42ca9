//! Puts pages back together by the merge rule of the module docs of [`super`].

use serde_json::Value;

use super::path::{ShownStep, parse_shown};
use super::{Document, Page};

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
