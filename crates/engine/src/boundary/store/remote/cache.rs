//! The replica cache: parsed responses this replica read from (or wrote to) Redis, so that
//! the next `read_more` on the same response neither fetches its body again nor decompresses
//! and parses it.
//!
//! # What may be cached
//!
//! Only what never changes: a response's body (its documents, token counts, carriers and
//! plan) is written once under a key holding 96 random bits and is never rewritten, so a copy
//! of it stays right for as long as the key exists. The mutable bookkeeping, the page book and
//! its version, is not cached: every lookup still reads it from Redis (one round trip, the
//! same as without the cache, but without the body), refreshes the TTLs, and sees the
//! tombstone. A response Redis no longer holds (expired, evicted, flushed) is therefore
//! `expired`/`unknown` on every replica, cached or not, and its cached copy is dropped then.
//!
//! # Bounds
//!
//! Least recently used first, bounded in bytes by the entries' heap estimate (the tree's, as
//! the memory store counts it; [`super::super::Entry::resident`]). An entry larger than a
//! quarter of the bound is not cached. Bound 0: no cache.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::super::entry::Entry;

#[derive(Debug)]
struct Slot {
    entry: Arc<Entry>,
    bytes: usize,
    tick: u64,
}

#[derive(Debug, Default)]
struct Inner {
    map: HashMap<String, Slot>,
    /// Tick of last use → key, oldest first.
    lru: BTreeMap<u64, String>,
    bytes: usize,
    tick: u64,
}

/// Parsed responses by their Redis key (which names the principal and the id), least
/// recently used dropped first past `max_bytes`.
#[derive(Debug)]
pub(crate) struct ReplicaCache {
    inner: Mutex<Inner>,
    max_bytes: usize,
}

impl ReplicaCache {
    /// An empty cache of at most `max_bytes` (heap estimate of the trees); 0 caches nothing.
    pub(crate) fn new(max_bytes: usize) -> ReplicaCache {
        ReplicaCache {
            inner: Mutex::new(Inner::default()),
            max_bytes,
        }
    }

    /// Whether the cache can hold anything.
    pub(crate) fn enabled(&self) -> bool {
        self.max_bytes > 0
    }

    /// A fresh copy (see [`Entry::share`]) of the response under `key`, marked as used now.
    pub(crate) fn get(&self, key: &str) -> Option<Entry> {
        if !self.enabled() {
            return None;
        }
        let template = {
            let mut inner = self.inner.lock().ok()?;
            inner.tick += 1;
            let tick = inner.tick;
            let slot = inner.map.get_mut(key)?;
            let old = std::mem::replace(&mut slot.tick, tick);
            let entry = Arc::clone(&slot.entry);
            inner.lru.remove(&old);
            inner.lru.insert(tick, key.to_owned());
            entry
        };
        let copy = template.share();
        crate::metrics::global().replica_cache(if copy.is_some() { "hit" } else { "miss" });
        copy
    }

    /// Counts a lookup the cache could not answer.
    pub(crate) fn missed(&self) {
        if self.enabled() {
            crate::metrics::global().replica_cache("miss");
        }
    }

    /// Keeps a copy of `entry` (its immutable content) under `key`, dropping the least
    /// recently used past the bound. Does nothing for an entry whose tree is not in memory or
    /// that is larger than a quarter of the bound.
    pub(crate) fn put(&self, key: &str, entry: &Entry) {
        let bytes = entry.resident();
        if !self.enabled() || bytes > self.max_bytes / 4 {
            return;
        }
        let Some(copy) = entry.share() else {
            return;
        };
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        inner.tick += 1;
        let tick = inner.tick;
        if let Some(old) = inner.map.insert(
            key.to_owned(),
            Slot {
                entry: Arc::new(copy),
                bytes,
                tick,
            },
        ) {
            inner.lru.remove(&old.tick);
            inner.bytes -= old.bytes;
        }
        inner.lru.insert(tick, key.to_owned());
        inner.bytes += bytes;
        while inner.bytes > self.max_bytes {
            let Some((_, oldest)) = inner.lru.pop_first() else {
                break;
            };
            if let Some(slot) = inner.map.remove(&oldest) {
                inner.bytes -= slot.bytes;
            }
        }
    }

    /// Drops the copy under `key` (Redis no longer holds it).
    pub(crate) fn forget(&self, key: &str) {
        if let Ok(mut inner) = self.inner.lock()
            && let Some(slot) = inner.map.remove(key)
        {
            inner.lru.remove(&slot.tick);
            inner.bytes -= slot.bytes;
        }
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.inner.lock().map(|i| i.bytes).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use mcp_budget_core::paginate::Document;

    use super::*;

    fn entry(id: &str, n: usize) -> Entry {
        let doc = Document::Json(serde_json::json!((0..n).collect::<Vec<_>>()));
        Entry::new(id.to_owned(), vec![doc], vec![n], 300, 0, n * 3).with_principal("p")
    }

    #[test]
    fn copies_share_the_tree_but_not_the_book() {
        let cache = ReplicaCache::new(1 << 20);
        let e = entry("a", 10);
        e.book.lock().unwrap().ordinals.push(1);
        cache.put("k", &e);
        let one = cache.get("k").unwrap();
        let two = cache.get("k").unwrap();
        assert!(Arc::ptr_eq(&one.docs().unwrap(), &two.docs().unwrap()));
        assert!(Arc::ptr_eq(&one.docs().unwrap(), &e.docs().unwrap()));
        // A fresh book each time, never the one of the entry it was made from.
        assert_eq!(one.book.lock().unwrap().ordinals, vec![0]);
        one.book.lock().unwrap().ordinals.push(7);
        assert_eq!(two.book.lock().unwrap().ordinals, vec![0]);
        assert_eq!((one.id.as_str(), &*one.principal), ("a", "p"));
        assert_eq!(one.doc_tokens, e.doc_tokens);
        assert!(cache.get("other").is_none());
        cache.forget("k");
        assert!(cache.get("k").is_none());
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn least_recently_used_go_first_past_the_bound() {
        let size = entry("x", 100).resident();
        let cache = ReplicaCache::new(size * 4);
        for k in ["a", "b", "c", "d"] {
            cache.put(k, &entry(k, 100));
        }
        assert!(cache.bytes() <= size * 4);
        assert!(cache.get("a").is_some());
        cache.put("e", &entry("e", 100));
        // "b" was the least recently used ("a" was just read).
        assert!(cache.get("b").is_none());
        assert!(cache.get("a").is_some() && cache.get("e").is_some());
        assert!(cache.bytes() <= size * 4);
        // Larger than a quarter of the bound: not cached; bound 0: nothing.
        cache.put("big", &entry("big", 1000));
        assert!(cache.get("big").is_none());
        let off = ReplicaCache::new(0);
        off.put("a", &entry("a", 1));
        assert!(off.get("a").is_none());
    }
}
