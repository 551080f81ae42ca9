//! The cursor store: shaped full responses by `response_id`, bounded in bytes (least recently
//! used first out) and by a TTL counted from each response's last use.
//!
//! A response id is 12 lowercase hex digits. A cursor is `<response id>.<page number>`, page
//! numbers counting from 0 (page 1 of the response is `.0`). Each cached response keeps the
//! [`Position`] where every page computed so far starts, so a cursor is a lookup, never a
//! re-computation from the start, and the upstream tool is never called again.
//!
//! Ids of responses that were dropped (TTL or bound) are remembered (the last
//! [`TOMBSTONES`]) so that a stale cursor is reported as `expired`, not `unknown`.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
#[cfg(test)]
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_budget_core::paginate::{Document, Position};
use mcp_budget_core::wire::CursorFault;

use super::parts::Carrier;
use super::structured::Plan;

/// How many dropped ids are remembered to tell `expired` from `unknown`.
pub(crate) const TOMBSTONES: usize = 65_536;

/// Where a page starts in a response of several text items: item index and position in it.
pub(crate) type SeqPos = (usize, Position);

/// One cached, shaped, untrimmed response.
#[derive(Debug)]
pub(crate) struct Entry {
    /// 12 lowercase hex digits.
    pub(crate) id: String,
    /// The model-visible documents (text items, embedded resources' texts, a structuredContent
    /// no text item carries) after compaction, transform and offloading, in order.
    pub(crate) docs: Vec<Document>,
    /// Exact tokens of each doc's whole rendering.
    pub(crate) doc_tokens: Vec<usize>,
    /// Sum of `doc_tokens` (the meta item's `total_tokens`).
    pub(crate) total_tokens: u64,
    /// Budget in tokens the response was shaped with: the ceiling of `read_more`'s `max_tokens`.
    pub(crate) budget: usize,
    /// Significant digits of floats.
    pub(crate) precision: u32,
    /// Bytes of the compact rendering (what the store bound counts).
    pub(crate) bytes: usize,
    /// The whole rendering of each doc (compact JSON with floats rounded, or the text), as
    /// counted in `doc_tokens`; empty when not kept. Tells a response shaped again from
    /// another with the same id by a byte comparison, not a walk of two JSON trees.
    pub(crate) rendered: Vec<String>,
    /// How each doc's pieces go out (a text item, an embedded resource …); empty: text items.
    pub(crate) carriers: Vec<Carrier>,
    /// How structuredContent follows the pages, when it does.
    pub(crate) structured: Option<Plan>,
    /// `Some(n)` when the response's `n` documents are paged as one JSON array (budgets near
    /// the floor: [`super::walk::needs_one_document`]); said in `_meta["mcp-budget/page"]`.
    pub(crate) array_of: Option<usize>,
    /// Start of every page computed so far, by page number, and the next page's number for
    /// each (page number, budget) already computed.
    pub(crate) book: Mutex<PageBook>,
}

/// Positions of the pages of one response.
#[derive(Debug, Default)]
pub(crate) struct PageBook {
    /// `positions[k]` is where page number `k` starts; `positions[0]` is the start.
    pub(crate) positions: Vec<SeqPos>,
    /// (page number, budget) → page number of the next page.
    pub(crate) next_of: HashMap<(usize, usize), usize>,
}

impl Entry {
    pub(crate) fn new(
        id: String,
        docs: Vec<Document>,
        doc_tokens: Vec<usize>,
        budget: usize,
        precision: u32,
        bytes: usize,
    ) -> Entry {
        let total_tokens = doc_tokens.iter().map(|&t| t as u64).sum();
        Entry {
            id,
            docs,
            doc_tokens,
            total_tokens,
            budget,
            precision,
            bytes,
            rendered: Vec::new(),
            carriers: Vec::new(),
            structured: None,
            array_of: None,
            book: Mutex::new(PageBook {
                positions: vec![(0, Position::start())],
                next_of: HashMap::new(),
            }),
        }
    }

    /// The entry keeping `rendered`, the whole rendering of each of its docs.
    pub(crate) fn with_rendered(mut self, rendered: Vec<String>) -> Entry {
        self.rendered = rendered;
        self
    }

    /// The entry with the carriers of its docs and its structuredContent plan.
    pub(crate) fn with_parts(mut self, carriers: Vec<Carrier>, structured: Option<Plan>) -> Entry {
        self.carriers = carriers;
        self.structured = structured;
        self
    }

    /// The entry whose one document is the JSON array of the response's `n` documents.
    pub(crate) fn with_array_of(mut self, n: Option<usize>) -> Entry {
        self.array_of = n;
        self
    }

    /// Whether this entry holds `docs` whose whole renderings are `rendered` (the same
    /// response shaped again): the same kinds of docs, rendered to the same bytes.
    pub(crate) fn holds(&self, docs: &[Document], rendered: &[String]) -> bool {
        self.rendered.len() == rendered.len()
            && self.docs.len() == docs.len()
            && self.rendered == rendered
            && self.docs.iter().zip(docs).all(|(a, b)| {
                matches!(
                    (a, b),
                    (Document::Json(_), Document::Json(_)) | (Document::Text(_), Document::Text(_))
                )
            })
    }

    /// The response as the input of a jq query: the one document's value (a text that is not
    /// JSON as a JSON string), or an array of them when there are several (text items,
    /// embedded resources' texts, and a structuredContent no text item carries, in order).
    pub(crate) fn query_input(&self) -> serde_json::Value {
        let mut values: Vec<serde_json::Value> = self
            .docs
            .iter()
            .map(|d| match d {
                Document::Json(v) => v.clone(),
                Document::Text(t) => serde_json::Value::String(t.clone()),
            })
            .collect();
        if values.len() == 1 {
            values.pop().unwrap_or_default()
        } else {
            serde_json::Value::Array(values)
        }
    }
}

#[derive(Debug)]
struct Slot {
    entry: Arc<Entry>,
    last_used: Instant,
    tick: u64,
}

#[derive(Debug, Default)]
struct Inner {
    map: HashMap<String, Slot>,
    /// tick of last use → id, oldest first.
    lru: BTreeMap<u64, String>,
    tick: u64,
    bytes: usize,
    gone: VecDeque<String>,
    gone_set: HashSet<String>,
}

impl Inner {
    fn drop_id(&mut self, id: &str) {
        if let Some(slot) = self.map.remove(id) {
            self.lru.remove(&slot.tick);
            self.bytes = self.bytes.saturating_sub(slot.entry.bytes);
            if self.gone_set.insert(id.to_owned()) {
                self.gone.push_back(id.to_owned());
            }
            while self.gone.len() > TOMBSTONES {
                if let Some(old) = self.gone.pop_front() {
                    self.gone_set.remove(&old);
                }
            }
        }
    }

    fn expire(&mut self, ttl: Duration, now: Instant) {
        // The LRU order is also the order of last use, so expired entries are at the front.
        while let Some((_, id)) = self.lru.first_key_value() {
            let id = id.clone();
            let stale = self
                .map
                .get(&id)
                .is_none_or(|s| now.duration_since(s.last_used) > ttl);
            if !stale {
                break;
            }
            self.drop_id(&id);
        }
    }
}

/// Cached responses by id.
pub(crate) struct Store {
    inner: Mutex<Inner>,
    bound: usize,
    ttl: Duration,
}

impl std::fmt::Debug for Store {
    // Never print the cached payloads.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (entries, bytes) = self
            .inner
            .lock()
            .map(|i| (i.map.len(), i.bytes))
            .unwrap_or_default();
        f.debug_struct("Store")
            .field("entries", &entries)
            .field("bytes", &bytes)
            .field("bound", &self.bound)
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl Store {
    /// A store of at most `bound` bytes whose entries expire `ttl` after their last use.
    pub(crate) fn new(bound: usize, ttl: Duration) -> Store {
        Store {
            inner: Mutex::new(Inner::default()),
            bound,
            ttl,
        }
    }

    /// The 12-hex id of a response: derived from its content (`seed`: the rendered items and
    /// the budget and precision they are paged with), so the same response gets the same id
    /// and the same pages. When another response already holds that id, the next free
    /// derivation is used.
    pub(crate) fn id_for(&self, seed: &[&[u8]], same: impl Fn(&Entry) -> bool) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let feed = |bytes: &[u8], h: &mut u64| {
            for &b in bytes {
                *h ^= u64::from(b);
                *h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        for part in seed {
            feed(part, &mut h);
            feed(&[0xff], &mut h);
        }
        loop {
            let id = format!("{:012x}", h >> 16);
            let free = self
                .inner
                .lock()
                .map(|i| i.map.get(&id).is_none_or(|s| same(&s.entry)))
                .unwrap_or(true);
            if free {
                return id;
            }
            feed(b"+", &mut h);
        }
    }

    /// A fresh 12-hex id, not in use now (tests).
    #[cfg(test)]
    pub(crate) fn new_id(&self) -> String {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        self.id_for(&[&n.to_le_bytes()], |_| false)
    }

    /// Keeps `entry`, dropping expired and then least recently used entries to stay within
    /// the bound. A single entry larger than the whole bound is still kept (alone), so the
    /// cursors of the response just returned always work.
    pub(crate) fn insert(&self, entry: Arc<Entry>) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let now = Instant::now();
        inner.expire(self.ttl, now);
        let id = entry.id.clone();
        inner.drop_id(&id);
        inner.gone_set.remove(&id);
        while inner.bytes + entry.bytes > self.bound {
            let Some((_, oldest)) = inner.lru.first_key_value() else {
                break;
            };
            let oldest = oldest.clone();
            inner.drop_id(&oldest);
        }
        inner.tick += 1;
        let tick = inner.tick;
        inner.bytes += entry.bytes;
        inner.lru.insert(tick, id.clone());
        inner.map.insert(
            id,
            Slot {
                entry,
                last_used: now,
                tick,
            },
        );
    }

    /// The entry with `id`, marked as used now.
    ///
    /// # Errors
    /// [`CursorFault::Expired`] when it was dropped (TTL or bound), [`CursorFault::Unknown`]
    /// when no response had that id.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<Entry>, CursorFault> {
        let Ok(mut guard) = self.inner.lock() else {
            return Err(CursorFault::Unknown);
        };
        let inner = &mut *guard;
        let now = Instant::now();
        inner.expire(self.ttl, now);
        inner.tick += 1;
        let tick = inner.tick;
        let old_tick = match inner.map.get_mut(id) {
            Some(slot) => {
                slot.last_used = now;
                std::mem::replace(&mut slot.tick, tick)
            }
            None => {
                return Err(if inner.gone_set.contains(id) {
                    CursorFault::Expired
                } else {
                    CursorFault::Unknown
                });
            }
        };
        inner.lru.remove(&old_tick);
        inner.lru.insert(tick, id.to_owned());
        inner
            .map
            .get(id)
            .map(|s| Arc::clone(&s.entry))
            .ok_or(CursorFault::Unknown)
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.inner.lock().map(|i| i.bytes).unwrap_or(0)
    }
}

/// Splits a cursor `<12 hex>.<page number>` into id and page number.
///
/// # Errors
/// [`CursorFault::Malformed`] for anything else.
pub(crate) fn parse_cursor(cursor: &str) -> Result<(&str, usize), CursorFault> {
    let (id, page) = cursor.split_once('.').ok_or(CursorFault::Malformed)?;
    check_id(id)?;
    if page.is_empty() || page.len() > 9 || !page.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CursorFault::Malformed);
    }
    let n = page.parse().map_err(|_| CursorFault::Malformed)?;
    Ok((id, n))
}

/// Checks a response id: 12 lowercase hex digits.
///
/// # Errors
/// [`CursorFault::Malformed`] otherwise.
pub(crate) fn check_id(id: &str) -> Result<(), CursorFault> {
    if id.len() == 12
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        Ok(())
    } else {
        Err(CursorFault::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(store: &Store, bytes: usize) -> Arc<Entry> {
        Arc::new(Entry::new(
            store.new_id(),
            vec![Document::Text("x".into())],
            vec![1],
            1000,
            9,
            bytes,
        ))
    }

    #[test]
    fn ids_are_12_lowercase_hex_and_distinct() {
        let s = Store::new(100, Duration::from_secs(60));
        let ids: HashSet<String> = (0..1000).map(|_| s.new_id()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(ids.iter().all(|i| check_id(i).is_ok()));
    }

    #[test]
    fn least_recently_used_goes_first_and_reports_expired() {
        let s = Store::new(100, Duration::from_secs(60));
        let a = entry(&s, 40);
        let b = entry(&s, 40);
        s.insert(Arc::clone(&a));
        s.insert(Arc::clone(&b));
        assert!(s.get(&a.id).is_ok()); // a is now the most recent
        let c = entry(&s, 40);
        s.insert(Arc::clone(&c));
        assert_eq!(s.get(&b.id).unwrap_err(), CursorFault::Expired);
        assert!(s.get(&a.id).is_ok());
        assert!(s.get(&c.id).is_ok());
        assert_eq!(s.bytes(), 80);
        assert_eq!(s.get("0123456789ab").unwrap_err(), CursorFault::Unknown);
    }

    #[test]
    fn ttl_expires_entries() {
        let s = Store::new(1000, Duration::from_millis(5));
        let a = entry(&s, 1);
        s.insert(Arc::clone(&a));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(s.get(&a.id).unwrap_err(), CursorFault::Expired);
    }

    #[test]
    fn oversized_entry_is_kept_alone() {
        let s = Store::new(10, Duration::from_secs(60));
        let a = entry(&s, 5);
        let b = entry(&s, 50);
        s.insert(Arc::clone(&a));
        s.insert(Arc::clone(&b));
        assert!(s.get(&b.id).is_ok());
        assert_eq!(s.get(&a.id).unwrap_err(), CursorFault::Expired);
    }

    #[test]
    fn cursors_parse_strictly() {
        assert_eq!(parse_cursor("0123456789ab.3"), Ok(("0123456789ab", 3)));
        for bad in [
            "",
            "x",
            "0123456789ab",
            "0123456789ab.",
            "0123456789AB.1",
            "0123456789a.1",
            "0123456789ab.-1",
            "0123456789ab.1.2",
            "0123456789ab.99999999999",
        ] {
            assert_eq!(parse_cursor(bad), Err(CursorFault::Malformed), "{bad}");
        }
    }
}
