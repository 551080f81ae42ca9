//! The cursor store: shaped full responses by `response_id`, bounded in memory (least
//! recently used content out of memory first, to spill files) and by a TTL counted from each
//! response's last use.
//!
//! A response id is 12 lowercase hex digits. A cursor is `<response id>.<page number>`, page
//! numbers counting from 0 (page 1 of the response is `.0`). Each cached response keeps the
//! [`Position`] where every page computed so far starts, so a cursor is a lookup, never a
//! re-computation from the start, and the upstream tool is never called again.
//!
//! # The memory bound
//!
//! `bound` (`--cache-bytes`) bounds the bytes the cached content holds in memory, measured by
//! [`Entry::resident`]: the heap estimate of parsed trees plus the bytes of compact texts (see
//! [`entry`]). Past it, least recently used first: parsed trees are let go (their exact
//! compact text kept), then texts move to spill files ([`spill`]); an entry whose tree cannot
//! be rebuilt from text, or whose text cannot be written, is dropped. The entry in use (just
//! inserted or read) keeps its tree for the request; the background sweeper (every
//! [`SWEEP_EVERY`]) applies the bound to it too, drops expired entries, and hands freed memory
//! back to the system (`malloc_trim`). Spill files total at most [`DISK_FACTOR`] × `bound`
//! (at least [`MIN_DISK_BYTES`]); past that the least recently used spilled entries are dropped. Before shaping a large
//! result, [`Store::make_room_for`] pushes content out so that the parsed result fits beside
//! the cache within the bound.
//!
//! Memory that work on results holds outside the entries (a tree being parsed, renderings a
//! counting thread holds, a result being shaped) counts against the same bound ([`work`]):
//! making room counts it beside the entries, and new work waits while the cache and the work
//! held would pass the bound ([`Store::reserve`]), so memory follows the bound whatever the
//! rate of calls.
//!
//! Ids of responses that were dropped (TTL or bound) are remembered (the last
//! [`TOMBSTONES`]) so that a stale cursor is reported as `expired`, not `unknown`.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::Hasher;
use std::path::PathBuf;
#[cfg(test)]
use std::sync::atomic::AtomicU64;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use mcp_budget_core::wire::CursorFault;

pub(crate) mod book;
pub(crate) mod entry;
pub(crate) mod exact;
pub(crate) mod heap;
pub(crate) mod remote;
pub(crate) mod responses;
pub(crate) mod spill;
pub(crate) mod work;

use entry::Demoted;
pub(crate) use entry::Entry;
use spill::SpillDir;
pub(crate) use work::Held;
use work::Work;

/// How many dropped ids are remembered to tell `expired` from `unknown`.
pub(crate) const TOMBSTONES: usize = 65_536;

/// Spill files total at most this many times the memory bound, or [`MIN_DISK_BYTES`] if more.
pub(crate) const DISK_FACTOR: usize = 8;

/// Spill files may always total this much (1 GiB).
pub(crate) const MIN_DISK_BYTES: usize = 1 << 30;

/// How often the sweeper applies the TTL and the bound to every store.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_millis(250);

/// Bytes of memory shaping a result takes per byte of its text, for [`Store::make_room_for`]:
/// the parsed tree (about 11 for rows of numbers, by [`heap::docs_heap_bytes`]), the
/// renderings beside it and the relay's copies of the message (measured: about 15; 20 leaves
/// room for the allocator's slack).
pub(crate) const TREE_FACTOR: usize = 20;

/// Results with less text than this do not make room before shaping.
pub(crate) const MAKE_ROOM_MIN_BYTES: usize = 256 * 1024;

/// Freeing at least this many bytes at once returns memory to the system at once
/// (`malloc_trim`); smaller amounts wait for the sweeper.
const TRIM_NOW_BYTES: usize = 32 << 20;

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
    gone: VecDeque<String>,
    gone_set: HashSet<String>,
}

impl Inner {
    /// Removes `id` (remembering it as gone) and returns its entry, to be dropped by the
    /// caller once the lock is released (dropping a large tree takes milliseconds).
    fn drop_id(&mut self, id: &str) -> Option<Arc<Entry>> {
        let slot = self.map.remove(id)?;
        self.lru.remove(&slot.tick);
        if self.gone_set.insert(id.to_owned()) {
            self.gone.push_back(id.to_owned());
        }
        while self.gone.len() > TOMBSTONES {
            if let Some(old) = self.gone.pop_front() {
                self.gone_set.remove(&old);
            }
        }
        Some(slot.entry)
    }

    fn expire(&mut self, ttl: Duration, now: Instant, out: &mut Vec<Arc<Entry>>) {
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
            match self.drop_id(&id) {
                Some(e) => out.push(e),
                None => {
                    // An LRU key without a slot (never expected): forget it.
                    let first = self.lru.first_key_value().map(|(k, _)| *k);
                    if let Some(k) = first {
                        self.lru.remove(&k);
                    }
                }
            }
        }
    }

    fn resident(&self) -> usize {
        self.map.values().map(|s| s.entry.resident()).sum()
    }

    fn on_disk(&self) -> usize {
        self.map.values().map(|s| s.entry.on_disk()).sum()
    }

    /// The least recently used entry (not `keep`) that `pick` accepts.
    fn oldest(&self, keep: Option<&str>, pick: impl Fn(&Entry) -> bool) -> Option<Arc<Entry>> {
        self.lru
            .values()
            .filter(|id| Some(id.as_str()) != keep)
            .filter_map(|id| self.map.get(id))
            .find(|s| pick(&s.entry))
            .map(|s| Arc::clone(&s.entry))
    }
}

/// What the store shares with the sweeper.
#[derive(Debug)]
struct Shared {
    inner: Mutex<Inner>,
    bound: usize,
    /// Bytes the spill files may total.
    disk_bound: AtomicUsize,
    ttl: Duration,
    spill: SpillDir,
    /// Bytes freed since memory was last handed back to the system.
    released: AtomicUsize,
    /// Bytes work in progress holds outside the entries.
    work: Arc<Work>,
}

/// Cached responses by id.
pub(crate) struct Store {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Store {
    // Never print the cached payloads.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (entries, resident, on_disk) = self
            .shared
            .inner
            .lock()
            .map(|i| (i.map.len(), i.resident(), i.on_disk()))
            .unwrap_or_default();
        f.debug_struct("Store")
            .field("entries", &entries)
            .field("resident", &resident)
            .field("work", &self.shared.work.held())
            .field("on_disk", &on_disk)
            .field("bound", &self.shared.bound)
            .field("ttl", &self.shared.ttl)
            .finish()
    }
}

impl Store {
    /// A store holding at most `bound` bytes in memory (spilling to a directory under
    /// `spill_base`), whose entries expire `ttl` after their last use.
    pub(crate) fn new(bound: usize, ttl: Duration, spill_base: PathBuf) -> Store {
        let store = Store::new_unswept(bound, ttl, spill_base);
        sweeper::register(&store.shared);
        store
    }

    /// [`Store::new`] without the background sweeper (expiry on insert and get only).
    pub(crate) fn new_unswept(bound: usize, ttl: Duration, spill_base: PathBuf) -> Store {
        Store {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner::default()),
                bound,
                disk_bound: AtomicUsize::new(bound.saturating_mul(DISK_FACTOR).max(MIN_DISK_BYTES)),
                ttl,
                spill: SpillDir::new(spill_base),
                released: AtomicUsize::new(0),
                work: Arc::new(Work::default()),
            }),
        }
    }

    /// The 12-hex id of a response: derived from its content (`seed`: the rendered items and
    /// the budget and precision they are paged with), so the same response gets the same id
    /// and the same pages. When another response already holds that id, the next free
    /// derivation is used.
    pub(crate) fn id_for(&self, seed: &[&[u8]], same: impl Fn(&Entry) -> bool) -> String {
        // FxHash reads 8 bytes a step (a byte-at-a-time hash cost ~3 ms per 2.5 MB rendering
        // on the reply path); the id only has to be the same within this process.
        let mut h = rustc_hash::FxHasher::default();
        for part in seed {
            h.write(part);
            h.write_u8(0xff);
        }
        loop {
            let id = format!("{:012x}", h.finish() >> 16);
            let holder = self
                .shared
                .inner
                .lock()
                .ok()
                .and_then(|i| i.map.get(&id).map(|s| Arc::clone(&s.entry)));
            if holder.is_none_or(|e| same(&e)) {
                return id;
            }
            h.write(b"+");
        }
    }

    /// A fresh 12-hex id, not in use now (tests).
    #[cfg(test)]
    pub(crate) fn new_id(&self) -> String {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        self.id_for(&[&n.to_le_bytes()], |_| false)
    }

    /// Keeps `entry`, dropping expired entries and pushing the least recently used content
    /// out of memory to stay within the bound. The new entry keeps its tree for now (a single
    /// entry larger than the whole bound too), so the cursors of the response just returned
    /// work at once; the sweeper applies the bound to it later.
    pub(crate) fn insert(&self, entry: Arc<Entry>) {
        let id = entry.id.clone();
        let mut dropped = Vec::new();
        {
            let Ok(mut inner) = self.shared.inner.lock() else {
                return;
            };
            let now = Instant::now();
            inner.expire(self.shared.ttl, now, &mut dropped);
            dropped.extend(inner.drop_id(&id));
            inner.gone_set.remove(&id);
            inner.tick += 1;
            let tick = inner.tick;
            inner.lru.insert(tick, id.clone());
            inner.map.insert(
                id.clone(),
                Slot {
                    entry,
                    last_used: now,
                    tick,
                },
            );
        }
        self.shared.release(dropped);
        self.shared.make_room(Some(&id), 0);
    }

    /// The entry with `id`, marked as used now, with its tree in memory (parsed back from its
    /// text or spill file when it had been pushed out).
    ///
    /// # Errors
    /// [`CursorFault::Expired`] when it was dropped (TTL or bound, or its spill file cannot be
    /// read back), [`CursorFault::Unknown`] when no response had that id.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<Entry>, CursorFault> {
        let mut dropped = Vec::new();
        let found = {
            let Ok(mut guard) = self.shared.inner.lock() else {
                return Err(CursorFault::Unknown);
            };
            let inner = &mut *guard;
            let now = Instant::now();
            inner.expire(self.shared.ttl, now, &mut dropped);
            inner.tick += 1;
            let tick = inner.tick;
            match inner.map.get_mut(id) {
                Some(slot) => {
                    slot.last_used = now;
                    let old_tick = std::mem::replace(&mut slot.tick, tick);
                    let entry = Arc::clone(&slot.entry);
                    inner.lru.remove(&old_tick);
                    inner.lru.insert(tick, id.to_owned());
                    Ok(entry)
                }
                None => Err(if inner.gone_set.contains(id) {
                    CursorFault::Expired
                } else {
                    CursorFault::Unknown
                }),
            }
        };
        self.shared.release(dropped);
        let entry = found?;
        // Room first: the tree about to be parsed must fit beside the cache and the work in
        // progress (this waits while it does not).
        let held = if entry.has_tree() {
            Held::none()
        } else {
            // The tree's last estimate can be short of what the parse takes at its peak:
            // at least TREE_FACTOR × the text, as the parse after page 1 holds.
            let need = entry
                .reload_bytes()
                .max(entry.on_disk().saturating_mul(TREE_FACTOR));
            self.reserve(Some(id), need)
        };
        // Parsing happens outside the store's lock: other requests go on meanwhile.
        let loaded = entry.load();
        drop(held);
        match loaded {
            Ok(true) => self.shared.make_room(Some(id), 0),
            Ok(false) => {}
            Err(e) => {
                crate::logging::warn(format_args!("a cached response was lost: {e}"));
                let gone = self
                    .shared
                    .inner
                    .lock()
                    .ok()
                    .and_then(|mut i| i.drop_id(id));
                self.shared.release(gone.into_iter().collect());
                return Err(CursorFault::Expired);
            }
        }
        Ok(entry)
    }

    /// Makes room before shaping a result of `text_bytes` bytes of text: holds
    /// [`TREE_FACTOR`] × `text_bytes` (what parsing it takes) as work ([`Store::reserve`]:
    /// content pushed out of memory until it fits beside the cache, waiting while other work
    /// does not let it), for as long as the caller keeps the [`Held`]. Results under
    /// [`MAKE_ROOM_MIN_BYTES`] hold nothing.
    pub(crate) fn make_room_for(&self, text_bytes: usize) -> Held {
        if text_bytes < MAKE_ROOM_MIN_BYTES {
            return Held::none();
        }
        self.reserve(None, text_bytes.saturating_mul(TREE_FACTOR))
    }

    /// Holds `bytes` of memory for work about to take it (a tree to parse and what counting it
    /// takes), against the bound: pushes content out of memory (least recently used first,
    /// `keep` left alone) until the cache, the work already held and `bytes` fit the bound,
    /// waiting while they do not (for other work to end, rechecked every few tens of
    /// milliseconds). Admitted at once when no other work is held, whatever `bytes` (a result
    /// larger than the bound is worked on alone), or when this thread already holds work.
    pub(crate) fn reserve(&self, keep: Option<&str>, bytes: usize) -> Held {
        let shared = &self.shared;
        let held = shared.work.admit(bytes, |_| {
            shared.make_room(keep, bytes);
            shared.fits(bytes)
        });
        // Counted now: room for it beside the cache (a no-op when made above).
        shared.make_room(keep, 0);
        held
    }

    /// Counts `bytes` of memory work has already taken (renderings a counting thread holds)
    /// against the bound until the [`Held`] is dropped, pushing content out to fit.
    pub(crate) fn charge(&self, bytes: usize) -> Held {
        let held = self.shared.work.charge(bytes);
        self.shared.make_room(None, 0);
        held
    }

    /// Applies the bound now (what the sweeper does within [`SWEEP_EVERY`]), the entry in use
    /// too: after work ends with a new tree in the cache.
    pub(crate) fn fit(&self) {
        self.shared.make_room(None, 0);
    }

    /// Bytes work in progress holds now.
    #[cfg(test)]
    pub(crate) fn work_held(&self) -> usize {
        self.shared.work.held()
    }

    /// Removes the spill directory and its files (at exit; the entries stay readable only
    /// while their tree or text is in memory).
    pub(crate) fn remove_spill_dir(&self) {
        self.shared.spill.remove();
    }

    /// Drops expired entries and applies the bound to every entry (what the sweeper does).
    #[cfg(test)]
    pub(crate) fn sweep(&self) {
        self.shared.sweep();
    }

    /// Sets the bytes the spill files may total.
    #[cfg(test)]
    pub(crate) fn set_disk_bound(&self, bytes: usize) {
        self.shared.disk_bound.store(bytes, Ordering::Relaxed);
    }

    /// Pushes every entry's content out of memory (trees dropped, texts spilled), as a full
    /// cache would.
    #[cfg(test)]
    pub(crate) fn push_out_all(&self) {
        self.shared.make_room(None, usize::MAX);
    }

    /// Bytes held in memory now.
    #[cfg(test)]
    pub(crate) fn resident(&self) -> usize {
        self.shared.inner.lock().map(|i| i.resident()).unwrap_or(0)
    }

    /// Bytes in spill files now.
    #[cfg(test)]
    pub(crate) fn on_disk(&self) -> usize {
        self.shared.inner.lock().map(|i| i.on_disk()).unwrap_or(0)
    }

    /// The spill directory, once created.
    #[cfg(test)]
    pub(crate) fn spill_dir(&self) -> Option<PathBuf> {
        self.shared.spill.path()
    }
}

/// One step of making room.
enum Step {
    DropTree(Arc<Entry>),
    Spill(Arc<Entry>),
}

impl Shared {
    /// Whether the resident bytes, the work held and `more` fit the bound.
    fn fits(&self, more: usize) -> bool {
        let resident = self.inner.lock().map(|i| i.resident()).unwrap_or(0);
        resident
            .saturating_add(self.work.held())
            .saturating_add(more)
            <= self.bound
    }

    /// Pushes content out of memory, least recently used first, until the resident bytes, the
    /// work held ([`work`]) and `reserve` fit the bound (`keep`, the entry in use, is left alone, and so is an entry
    /// whose tree another thread is loading: the call does not wait for a load it sees), then
    /// drops spilled entries past the disk bound.
    fn make_room(&self, keep: Option<&str>, reserve: usize) {
        let mut freed = 0usize;
        let mut dropped = Vec::new();
        // Entries whose tree another thread is loading (a background parse), or whose lock a
        // panic poisoned: passed over, not waited for.
        let mut busy: Vec<String> = Vec::new();
        // Each step frees an entry's tree or text; concurrent loads may undo some, so the
        // loop is bounded rather than trusted to converge.
        for _ in 0..4096 {
            let reserve = reserve.saturating_add(self.work.held());
            let step = {
                let Ok(inner) = self.inner.lock() else {
                    break;
                };
                if inner.resident().saturating_add(reserve) <= self.bound {
                    break;
                }
                let free = |e: &Entry| !busy.contains(&e.id);
                let tree = inner.oldest(keep, |e| e.has_tree() && free(e));
                match tree {
                    Some(e) => Step::DropTree(e),
                    None => match inner.oldest(keep, |e| e.has_text_only() && free(e)) {
                        Some(e) => Step::Spill(e),
                        None => break,
                    },
                }
            };
            match step {
                Step::DropTree(e) => match e.drop_tree() {
                    Demoted::Freed(n) => freed += n,
                    Demoted::Nothing => {}
                    Demoted::Busy => busy.push(e.id.clone()),
                    Demoted::Unreloadable => {
                        freed += e.resident();
                        dropped.extend(self.inner.lock().ok().and_then(|mut i| i.drop_id(&e.id)));
                    }
                },
                Step::Spill(e) => match e.spill(&self.spill) {
                    Ok(Some(n)) => freed += n,
                    Ok(None) => busy.push(e.id.clone()),
                    Err(err) => {
                        crate::logging::warn(format_args!(
                            "cannot spill a cached response to disk, dropped: {err}"
                        ));
                        freed += e.resident();
                        dropped.extend(self.inner.lock().ok().and_then(|mut i| i.drop_id(&e.id)));
                    }
                },
            }
        }
        if let Ok(mut inner) = self.inner.lock() {
            let disk_bound = self.disk_bound.load(Ordering::Relaxed);
            while inner.on_disk() > disk_bound {
                let Some(e) = inner.oldest(keep, |e| e.on_disk() > 0) else {
                    break;
                };
                freed += e.resident();
                dropped.extend(inner.drop_id(&e.id));
            }
        }
        drop(dropped);
        if freed > 0 {
            let pending = self.released.fetch_add(freed, Ordering::Relaxed) + freed;
            if pending >= TRIM_NOW_BYTES {
                self.trim();
            }
        }
    }

    /// Drops `entries` (outside the lock) and notes the memory they held.
    fn release(&self, entries: Vec<Arc<Entry>>) {
        let freed: usize = entries.iter().map(|e| e.resident()).sum();
        drop(entries);
        if freed > 0 {
            self.released.fetch_add(freed, Ordering::Relaxed);
        }
    }

    /// Drops expired entries, applies the bound to every entry (the one last used too), and
    /// hands freed memory back to the system.
    fn sweep(&self) {
        let mut dropped = Vec::new();
        if let Ok(mut inner) = self.inner.lock() {
            inner.expire(self.ttl, Instant::now(), &mut dropped);
        }
        self.release(dropped);
        self.make_room(None, 0);
        if self.released.load(Ordering::Relaxed) > 0 {
            self.trim();
        }
    }

    fn trim(&self) {
        self.released.store(0, Ordering::Relaxed);
        release_free_memory();
    }
}

/// At most this many glibc malloc arenas (default: 8 per core). Each thread that allocates
/// while others do gets an arena of its own, and memory freed in one is reused only there and
/// returned only in whole pages: with the blocking pool's many threads, a large cached result
/// freed left tens of MB behind (measured: 4 results of 10 MB, expired, left 30 MB; with 2
/// arenas, none). The proxy's work is mostly one result at a time, on 2 worker threads.
const MALLOC_ARENAS: i32 = 2;

/// Caps glibc's malloc arenas at [`MALLOC_ARENAS`], once per process. glibc fixes the limit
/// when a second thread first needs an arena, so this must run before any other thread
/// allocates ([`crate::boundary::Boundary::new`] calls it first; the CLI builds the boundary
/// before the relay's runtime).
#[allow(unsafe_code)]
pub(crate) fn limit_malloc_arenas() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: mallopt takes two integers and changes an allocator tunable under the
        // allocator's lock; M_ARENA_MAX only limits arenas created from now on.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS);
        }
    });
}

/// Hands the allocator's free memory back to the system. glibc's malloc keeps what is freed
/// (in every thread's arena) for reuse; `malloc_trim(0)` returns the free pages of all arenas.
#[allow(unsafe_code)]
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it walks glibc's own free lists under the
    // allocator's locks, like any malloc call, and is safe to call from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// One thread, started with the first store, that sweeps every live store every
/// [`SWEEP_EVERY`].
mod sweeper {
    use super::*;

    static STORES: OnceLock<Mutex<Vec<Weak<Shared>>>> = OnceLock::new();

    pub(super) fn register(shared: &Arc<Shared>) {
        let mut started = false;
        let stores = STORES.get_or_init(|| {
            started = true;
            Mutex::new(Vec::new())
        });
        if let Ok(mut list) = stores.lock() {
            list.retain(|w| w.strong_count() > 0);
            list.push(Arc::downgrade(shared));
        }
        if started {
            // Without the thread, expiry still happens on every insert and get.
            let _ = std::thread::Builder::new()
                .name("mcp-budget-cache".into())
                .spawn(run);
        }
    }

    fn run() {
        loop {
            std::thread::sleep(SWEEP_EVERY);
            let live: Vec<Arc<Shared>> = match STORES.get().map(Mutex::lock) {
                Some(Ok(mut list)) => {
                    list.retain(|w| w.strong_count() > 0);
                    list.iter().filter_map(Weak::upgrade).collect()
                }
                _ => continue,
            };
            for s in live {
                s.sweep();
            }
        }
    }
}

/// Splits a cursor `<12 or 24 hex>.<page number>` into id and page number.
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

/// Checks a response id: 12 lowercase hex digits (the memory store's) or
/// [`remote::ID_HEX`] (the shared store's).
///
/// # Errors
/// [`CursorFault::Malformed`] otherwise.
pub(crate) fn check_id(id: &str) -> Result<(), CursorFault> {
    if (id.len() == 12 || id.len() == remote::ID_HEX)
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
mod tests;
