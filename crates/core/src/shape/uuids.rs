//! The UUID stage (`uuid_prefix = true`): UUIDs in results become their 12-hex prefix;
//! prefixes in later calls' arguments become the full UUID again. The memory of what a
//! session was shown ([`UuidMemory`]) is plain data the caller keeps, one per session.
//!
//! - **Shortening** ([`UuidMemory::shorten`]): every UUID ([`crate::uuid`]: `8-4-4-4-12`
//!   hex digits with clean boundaries) in a result's documents — strings and object keys of
//!   JSON, plain text — and in its structuredContent is replaced by its prefix, unless the
//!   prefix would be ambiguous: two spellings in this result share it, the session already
//!   showed another UUID with it, or the result holds that run of 12 hex digits as it is.
//!   Those stay whole, so a result never shows a prefix that names two things. Every UUID a result holds is remembered, shortened or not.
//! - **Expansion** ([`UuidMemory::expand_args`]): in a later `tools/call`'s arguments (string
//!   values, object keys, and inside strings: a run of exactly 12 hex digits with clean
//!   boundaries, any case), a prefix some result showed, of exactly one remembered UUID,
//!   becomes that UUID; a prefix of two or more is [`Ambiguous`] (the call is answered `isError` and not
//!   forwarded); anything else is left as it is.
//! - **query_response** sees full UUIDs: each shortened response keeps its own prefix map
//!   ([`UuidMemory::register`]), which expands its cached documents (and prefixes in the jq
//!   filter) before the filter runs; the output is shortened again.
//!
//! Memory: at most [`MAX_REMEMBERED`] UUIDs are remembered for expansion (the least recently
//! shown are forgotten first; a forgotten prefix passes unexpanded), and the prefix maps of
//! responses hold at most [`MAX_REMEMBERED`] UUIDs together (the oldest responses' maps go
//! first). About 200 bytes each: under 50 MB at the bounds.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::paginate::Document;
use crate::uuid::{self, PREFIX_LEN, UUID_LEN};
use serde_json::Value;

/// Most UUIDs remembered for expansion, and most UUIDs in the prefix maps of responses.
pub const MAX_REMEMBERED: usize = 100_000;

/// Prefix (12 lowercase hex digits) → the full UUID it stands for, as the result spelled it.
pub type PrefixMap = HashMap<String, String>;

/// A prefix in a call's arguments that names several remembered UUIDs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ambiguous {
    /// The prefix as written in the arguments.
    pub prefix: String,
    /// The remembered UUIDs it names, oldest first.
    pub candidates: Vec<String>,
}

/// The UUIDs shown in this session (see the module docs).
#[derive(Debug, Default)]
pub struct UuidMemory {
    inner: Mutex<Inner>,
    /// Whether any UUID was ever remembered: until then no call needs expanding.
    any: AtomicBool,
}

#[derive(Debug, Default)]
struct Inner {
    /// Prefix → the UUIDs with it, each spelled as first shown.
    by_prefix: HashMap<String, Vec<String>>,
    /// The prefixes some result showed in place of a UUID: only those are expanded.
    shown: HashSet<String>,
    /// UUID (as spelled) → the sequence number of its last showing.
    seen: HashMap<String, u64>,
    /// Sequence number → UUID, least recently shown first.
    order: BTreeMap<u64, String>,
    seq: u64,
    /// Response id → (sequence number, its prefix map).
    responses: HashMap<String, (u64, Arc<PrefixMap>)>,
    response_order: BTreeMap<u64, String>,
    /// Sum of the sizes of the maps in `responses`.
    response_uuids: usize,
}

impl Inner {
    fn remember(&mut self, full: &str) {
        self.seq += 1;
        let seq = self.seq;
        match self.seen.insert(full.to_owned(), seq) {
            Some(old) => {
                self.order.remove(&old);
            }
            None => self
                .by_prefix
                .entry(uuid::prefix_of(full))
                .or_default()
                .push(full.to_owned()),
        }
        self.order.insert(seq, full.to_owned());
        while self.seen.len() > MAX_REMEMBERED {
            let Some((_, old)) = self.order.pop_first() else {
                break;
            };
            self.seen.remove(&old);
            let p = uuid::prefix_of(&old);
            if let Some(list) = self.by_prefix.get_mut(&p) {
                list.retain(|u| *u != old);
                if list.is_empty() {
                    self.by_prefix.remove(&p);
                    self.shown.remove(&p);
                }
            }
        }
    }
}

impl UuidMemory {
    /// Whether a UUID was ever shown (a cheap check before walking a call's arguments).
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    /// Shortens the UUIDs of one result in place: its documents and `values` (a
    /// structuredContent kept beside them). Returns the prefixes used (empty: none).
    pub fn shorten(&self, docs: &mut [Document], values: &mut [&mut Value]) -> PrefixMap {
        let mut found = Found::default();
        for d in docs.iter() {
            match d {
                Document::Json(v) => collect_value(v, &mut found),
                Document::Text(t) => collect_str(t, &mut found),
            }
        }
        for v in values.iter() {
            collect_value(v, &mut found);
        }
        if found.uuids.is_empty() {
            return PrefixMap::new();
        }
        let mut map = PrefixMap::new();
        if let Ok(mut inner) = self.inner.lock() {
            for (p, fulls) in &found.uuids {
                let known = inner.by_prefix.get(p);
                let unique = fulls.len() == 1
                    && known.is_none_or(|k| k.iter().all(|u| *u == fulls[0]))
                    && !found.literal.contains(p);
                if unique {
                    map.insert(p.clone(), fulls[0].clone());
                }
            }
            for fulls in found.uuids.values() {
                for f in fulls {
                    inner.remember(f);
                }
            }
            inner.shown.extend(map.keys().cloned());
            self.any.store(true, Ordering::Relaxed);
        }
        if map.is_empty() {
            return map;
        }
        for d in docs.iter_mut() {
            match d {
                Document::Json(v) => walk(v, &mut |s| shorten_str(s, &map), false),
                Document::Text(t) => {
                    if let Some(s) = shorten_str(t, &map) {
                        *t = s;
                    }
                }
            }
        }
        for v in values.iter_mut() {
            walk(v, &mut |s| shorten_str(s, &map), false);
        }
        map
    }

    /// Keeps `map` (from [`UuidMemory::shorten`]) as the prefix map of response `id`, for
    /// `query_response` and response references.
    pub fn register(&self, id: &str, map: PrefixMap) {
        if map.is_empty() {
            return;
        }
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        inner.seq += 1;
        let seq = inner.seq;
        let n = map.len();
        if let Some((old_seq, old)) = inner.responses.insert(id.to_owned(), (seq, Arc::new(map))) {
            inner.response_order.remove(&old_seq);
            inner.response_uuids -= old.len();
        }
        inner.response_order.insert(seq, id.to_owned());
        inner.response_uuids += n;
        while inner.response_uuids > MAX_REMEMBERED && inner.responses.len() > 1 {
            let Some((_, old_id)) = inner.response_order.pop_first() else {
                break;
            };
            if let Some((_, old)) = inner.responses.remove(&old_id) {
                inner.response_uuids -= old.len();
            }
        }
    }

    /// The prefix map of response `id`, when its UUIDs were shortened.
    pub fn response_map(&self, id: &str) -> Option<Arc<PrefixMap>> {
        let inner = self.inner.lock().ok()?;
        inner.responses.get(id).map(|(_, m)| Arc::clone(m))
    }

    /// Expands the prefixes of remembered UUIDs in a call's `arguments` (see the module docs);
    /// the value of a `"$response"` member (a response id, also 12 hex digits) is left alone.
    /// `Ok(true)` when something changed.
    ///
    /// # Errors
    /// [`Ambiguous`] for the first prefix that names two or more remembered UUIDs (nothing is
    /// changed then that matters: the call is not forwarded).
    pub fn expand_args(&self, arguments: &mut Value) -> Result<bool, Ambiguous> {
        let Ok(inner) = self.inner.lock() else {
            return Ok(false);
        };
        let mut fault: Option<Ambiguous> = None;
        let mut changed = false;
        walk(
            arguments,
            &mut |s| {
                if fault.is_some() {
                    return None;
                }
                let out = replace_prefixes(s, |p| match inner.by_prefix.get(p) {
                    _ if !inner.shown.contains(p) => Ok(None),
                    Some(list) if list.len() == 1 => Ok(Some(list[0].clone())),
                    Some(list) => Err(list.clone()),
                    None => Ok(None),
                });
                match out {
                    Ok(out) => {
                        changed |= out.is_some();
                        out
                    }
                    Err((prefix, candidates)) => {
                        fault = Some(Ambiguous { prefix, candidates });
                        None
                    }
                }
            },
            true,
        );
        match fault {
            Some(f) => Err(f),
            None => Ok(changed),
        }
    }
}

/// Expands, in `v` (a cached response's query input) and in place, every prefix `map` holds.
pub fn expand_with(map: &PrefixMap, v: &mut Value) {
    walk(v, &mut |s| expand_str_with(map, s), false);
}

/// `s` with every prefix `map` holds expanded; `None` when there is none.
pub fn expand_str_with(map: &PrefixMap, s: &str) -> Option<String> {
    replace_prefixes(s, |p| Ok::<_, ()>(map.get(p).cloned())).unwrap_or(None)
}

/// Replaces each prefix-shaped run of `s` ([`uuid::prefix_starts`]) by what `look` gives for
/// its lowercase form (`Ok(None)`: leave it). `Ok(None)` when nothing changed; the first
/// `Err` stops, with the run as written.
fn replace_prefixes<E>(
    s: &str,
    look: impl Fn(&str) -> Result<Option<String>, E>,
) -> Result<Option<String>, (String, E)> {
    if s.len() < PREFIX_LEN {
        return Ok(None);
    }
    let mut out: Option<String> = None;
    let mut copied = 0;
    for start in uuid::prefix_starts(s) {
        let run = &s[start..start + PREFIX_LEN];
        match look(&run.to_ascii_lowercase()) {
            Ok(Some(full)) => {
                let o = out.get_or_insert_with(|| String::with_capacity(s.len() + 24));
                o.push_str(&s[copied..start]);
                o.push_str(&full);
                copied = start + PREFIX_LEN;
            }
            Ok(None) => {}
            Err(e) => return Err((run.to_owned(), e)),
        }
    }
    Ok(out.map(|mut o| {
        o.push_str(&s[copied..]);
        o
    }))
}

/// What one result holds: its UUIDs, and the runs of 12 hex digits it holds as they are.
#[derive(Debug, Default)]
struct Found {
    /// Prefix → the UUIDs with it (distinct spellings).
    uuids: HashMap<String, Vec<String>>,
    /// Runs that look like a prefix already ([`uuid::prefix_starts`], lowercased): a UUID
    /// with such a prefix stays whole, so the result's prefix map expands only what was
    /// shortened (`query_response` sees the original exactly).
    literal: HashSet<String>,
}

/// Records each UUID of `s` under its prefix, and each prefix-like run.
fn collect_str(s: &str, found: &mut Found) {
    if s.len() < PREFIX_LEN {
        return;
    }
    for start in uuid::prefix_starts(s) {
        found
            .literal
            .insert(s[start..start + PREFIX_LEN].to_ascii_lowercase());
    }
    if s.len() < UUID_LEN {
        return;
    }
    for start in uuid::uuid_starts(s) {
        let full = &s[start..start + UUID_LEN];
        let list = found.uuids.entry(uuid::prefix_of(full)).or_default();
        if !list.iter().any(|u| u == full) {
            list.push(full.to_owned());
        }
    }
}

fn collect_value(v: &Value, found: &mut Found) {
    match v {
        Value::String(s) => collect_str(s, found),
        Value::Array(a) => a.iter().for_each(|x| collect_value(x, found)),
        Value::Object(o) => {
            for (k, x) in o {
                collect_str(k, found);
                collect_value(x, found);
            }
        }
        _ => {}
    }
}

/// `s` with each UUID whose prefix `map` maps to exactly that UUID replaced by the prefix;
/// `None` when there is none.
fn shorten_str(s: &str, map: &PrefixMap) -> Option<String> {
    if s.len() < UUID_LEN {
        return None;
    }
    let mut out: Option<String> = None;
    let mut copied = 0;
    for start in uuid::uuid_starts(s) {
        let full = &s[start..start + UUID_LEN];
        let p = uuid::prefix_of(full);
        if map.get(&p).is_some_and(|u| u == full) {
            let o = out.get_or_insert_with(|| String::with_capacity(s.len()));
            o.push_str(&s[copied..start]);
            o.push_str(&p);
            copied = start + UUID_LEN;
        }
    }
    out.map(|mut o| {
        o.push_str(&s[copied..]);
        o
    })
}

/// Rewrites every string and object key of `v` in place with `f` (`None`: unchanged); keys
/// keep their order. With `skip_refs`, the string value of a `"$response"` member (a
/// response reference's id) is left alone.
fn walk(v: &mut Value, f: &mut dyn FnMut(&str) -> Option<String>, skip_refs: bool) {
    match v {
        Value::String(s) => {
            if let Some(n) = f(s) {
                *s = n;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| walk(x, f, skip_refs)),
        Value::Object(o) => {
            let new_keys: Vec<Option<String>> = o.keys().map(|k| f(k)).collect();
            if new_keys.iter().any(Option::is_some) {
                let old = std::mem::take(o);
                for ((k, x), n) in old.into_iter().zip(new_keys) {
                    o.insert(n.unwrap_or(k), x);
                }
            }
            for (k, x) in o.iter_mut() {
                if skip_refs && k == super::model::REF_KEY && x.is_string() {
                    continue;
                }
                walk(x, f, skip_refs);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const A: &str = "3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d";
    const A2: &str = "3f2b8c1e-9a4d-4000-8000-000000000001";
    const B: &str = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3";

    #[test]
    fn shortens_strings_keys_and_text_then_expands_back() {
        let m = UuidMemory::default();
        assert!(!m.any());
        let mut docs = vec![
            Document::Json(json!({"id": A, B: [format!("see {A}."), 1]})),
            Document::Text(format!("owner {B}\n")),
        ];
        let mut sc = json!({"id": A});
        let map = m.shorten(&mut docs, &mut [&mut sc]);
        assert_eq!(map.len(), 2);
        assert!(m.any());
        let Document::Json(v) = &docs[0] else {
            panic!("json doc")
        };
        assert_eq!(
            v.to_string(),
            r#"{"id":"3f2b8c1e9a4d","0a1b2c3d4e5f":["see 3f2b8c1e9a4d.",1]}"#
        );
        assert_eq!(docs[1], Document::Text("owner 0a1b2c3d4e5f\n".into()));
        assert_eq!(sc, json!({"id": "3f2b8c1e9a4d"}));

        let mut args = json!({"id": "3F2B8C1E9A4D", "note": "for 0a1b2c3d4e5f and x3f2b8c1e9a4d",
            "0a1b2c3d4e5f": true, "$response": "3f2b8c1e9a4d", "n": 3});
        assert_eq!(m.expand_args(&mut args), Ok(true));
        assert_eq!(
            args,
            json!({"id": A, "note": format!("for {B} and x3f2b8c1e9a4d"), B: true,
                "$response": "3f2b8c1e9a4d", "n": 3})
        );
        let mut plain = json!({"id": "ffffffffffff", "full": A});
        assert_eq!(m.expand_args(&mut plain), Ok(false));
    }

    #[test]
    fn a_shared_prefix_stays_whole_and_is_ambiguous_in_arguments() {
        let m = UuidMemory::default();
        let mut first = vec![Document::Json(json!([A]))];
        assert_eq!(m.shorten(&mut first, &mut []).len(), 1);
        assert_eq!(first[0], Document::Json(json!(["3f2b8c1e9a4d"])));
        // A later result with another UUID of the same prefix shows it whole.
        let mut second = vec![Document::Json(json!([A2, B]))];
        let map = m.shorten(&mut second, &mut []);
        assert_eq!(second[0], Document::Json(json!([A2, "0a1b2c3d4e5f"])));
        assert_eq!(map.len(), 1);
        let mut args = json!({"id": "3f2b8c1e9a4d"});
        let err = m.expand_args(&mut args).unwrap_err();
        assert_eq!(err.prefix, "3f2b8c1e9a4d");
        assert_eq!(err.candidates, [A, A2]);
        // Within one result: both whole.
        let m = UuidMemory::default();
        let mut both = vec![Document::Text(format!("{A} {A2}"))];
        assert!(m.shorten(&mut both, &mut []).is_empty());
        assert_eq!(both[0], Document::Text(format!("{A} {A2}")));
    }

    #[test]
    fn response_maps_expand_query_inputs() {
        let m = UuidMemory::default();
        let mut docs = vec![Document::Json(json!({"id": A}))];
        let map = m.shorten(&mut docs, &mut []);
        m.register("0123456789ab", map);
        let map = m.response_map("0123456789ab").expect("registered");
        let Document::Json(mut v) = docs.remove(0) else {
            panic!("json doc")
        };
        expand_with(&map, &mut v);
        assert_eq!(v, json!({"id": A}));
        assert_eq!(
            expand_str_with(&map, r#".[] | select(.id == "3f2b8c1e9a4d")"#).as_deref(),
            Some(format!(r#".[] | select(.id == "{A}")"#).as_str())
        );
        assert!(m.response_map("ffffffffffff").is_none());
    }

    #[test]
    fn memory_is_bounded_least_recently_shown_first() {
        let mut inner = Inner::default();
        for i in 0..MAX_REMEMBERED + 10 {
            inner.remember(&format!("{i:08x}-0000-4000-8000-000000000000"));
        }
        assert_eq!(inner.seen.len(), MAX_REMEMBERED);
        assert_eq!(inner.order.len(), MAX_REMEMBERED);
        assert!(!inner.by_prefix.contains_key("000000000000"));
        assert!(
            inner
                .by_prefix
                .contains_key(&format!("{:08x}0000", MAX_REMEMBERED + 9))
        );
    }

    /// A JSON value built from `UUIDS`, words and numbers (strings mixing them).
    fn value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            (0..UUIDS.len()).prop_map(|i| UUIDS[i].to_owned()),
            (0..UUIDS.len()).prop_map(|i| UUIDS[i].to_uppercase()),
            "[a-z ,:/-]{0,6}",
        ];
        let text = proptest::collection::vec(piece, 0..4).prop_map(|p| p.concat());
        let leaf = prop_oneof![
            text.clone().prop_map(Value::String),
            any::<i32>().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec((text.clone(), inner), 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Four UUIDs, two of them sharing a prefix.
    const UUIDS: [&str; 4] = [A, A2, B, "00000000-0000-4000-8000-000000000000"];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Shortening is undone by the response's prefix map (what `query_response` sees), no
        /// shown prefix names two UUIDs, and every UUID left whole had a reason.
        #[test]
        fn the_prefix_map_gives_the_original_back(v in value()) {
            let m = UuidMemory::default();
            let mut docs = vec![Document::Json(v.clone())];
            let map = m.shorten(&mut docs, &mut []);
            let Document::Json(mut shown) = docs.remove(0) else {
                panic!("json doc")
            };
            let mut back = shown.clone();
            expand_with(&map, &mut back);
            proptest::prop_assert_eq!(&back, &v);
            for (p, full) in &map {
                proptest::prop_assert_eq!(&uuid::prefix_of(full), p);
                let mut found = Found::default();
                collect_value(&v, &mut found);
                proptest::prop_assert_eq!(found.uuids.get(p).map(Vec::len), Some(1));
                proptest::prop_assert!(!found.literal.contains(p));
            }
            // Expanding the arguments of a later call with the same prefixes gives the same.
            if m.expand_args(&mut shown).is_ok() {
                proptest::prop_assert_eq!(&shown, &v);
            }
        }
    }
}
