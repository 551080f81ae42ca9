//! Puts pages back together by the merge rule of the module docs of [`super`].

use serde_json::Value;

use super::path::{PathStep, ShownStep, parse_shown};
use super::{Document, Page, Pos};

/// Puts pages back together: the inverse of paging (byte-exact for text, value-equal for JSON
/// after rounding). `pages` must be every page of one document, in order, from page 1.
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
    let mut acc: Option<Value> = None;
    for page in pages {
        let value = page.value.clone()?;
        let start: &[usize] = match &page.start.0 {
            Pos::Start => &[],
            Pos::Json(steps) => steps,
            Pos::Text(_) => return None,
        };
        let Some(a) = acc.as_mut() else {
            acc = Some(wrap(
                value,
                page.root.iter().map(|s| match s {
                    PathStep::Key(k) => Some(k.as_str()),
                    PathStep::Index(_) => None,
                }),
            ));
            continue;
        };
        let root: Vec<Option<&str>> = page
            .root
            .iter()
            .map(|s| match s {
                PathStep::Key(k) => Some(k.as_str()),
                PathStep::Index(_) => None,
            })
            .collect();
        let rest = start.get(root.len()..)?;
        merge_at(a, value, &root, rest.len())?;
    }
    acc.map(Document::Json)
}

/// Merges `value`, the body of a page rooted at `root` (keys for object steps), into `acc`;
/// `depth` is the number of steps of the page's start below the root (0: the root node is
/// new, and is attached to its parent).
fn merge_at(acc: &mut Value, value: Value, root: &[Option<&str>], depth: usize) -> Option<()> {
    let mut node = acc;
    let (attach, descend) = if depth == 0 {
        let (last, parents) = root.split_last()?;
        (Some(*last), parents)
    } else {
        (None, root)
    };
    for _ in descend {
        node = last_child(node)?;
    }
    match attach {
        None => merge(node, value, depth),
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

/// The merge rule: `depth` steps of the page's start lie below this node. With more than one,
/// the cut is inside this node's last child (the page's first child, after the skeleton,
/// continues it); with exactly one, the page's children are new and append.
fn merge(acc: &mut Value, value: Value, depth: usize) -> Option<()> {
    match (acc, value) {
        (Value::Array(items), Value::Array(more)) => {
            let mut more = more.into_iter();
            if depth > 1 {
                merge(items.last_mut()?, more.next()?, depth - 1)?;
            }
            items.extend(more);
        }
        (Value::Object(m), Value::Object(more)) => {
            let last = m.keys().next_back().cloned();
            for (k, v) in more {
                if depth > 1 && last.as_ref() == Some(&k) {
                    merge(m.get_mut(&k)?, v, depth - 1)?;
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

/// Reassembles JSON pages as a client that sees only the wire does: from each page's body
/// value and its meta's `shown` (`None` for a page 1 that fit whole). The same rule as
/// [`reassemble`], driven by [`parse_shown`]; it fails (`None`) on abbreviated locations.
pub fn reassemble_from_wire(pages: &[(Value, Option<&str>)]) -> Option<Value> {
    let mut acc: Option<Value> = None;
    for (value, shown) in pages {
        let Some(a) = acc.as_mut() else {
            // Page 1: a fitting document has no meta; one rooted below `$` is wrapped back.
            let root = match shown {
                // (Page 1 needs only R: an abbreviated location is fine unless it has a root.)
                Some(shown) => match parse_shown(shown) {
                    Some((_, root)) => root,
                    None if !shown.contains(" (body is ") => Vec::new(),
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
        let (start, root) = parse_shown((*shown)?)?;
        let root_keys: Vec<Option<&str>> = root
            .iter()
            .map(|s| match s {
                ShownStep::Key(k) => Some(k.as_str()),
                _ => None,
            })
            .collect();
        let depth = start.len().checked_sub(root.len())?;
        merge_at(a, value.clone(), &root_keys, depth)?;
    }
    acc
}
