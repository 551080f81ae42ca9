//! One cached response, and where its content lives.
//!
//! The content of an [`Entry`] (its shaped text items, as [`Document`]s) is in one or more of
//! three forms, from the most to the least memory:
//!
//! - **tree**: the parsed documents the pager walks (`serde_json` values with `preserve_order`
//!   and `arbitrary_precision`: about ten times the bytes of their compact text). Counted by
//!   `scan_docs`, an estimate of their heap use, allocator overhead included.
//! - **text**: the exact compact rendering of each document (`serde_json::to_string`, which
//!   keeps every number's spelling and every key's order; a text document is its text).
//!   Counted by its bytes.
//! - **file**: the same text in a spill file ([`super::spill`]); no memory.
//!
//! The text parses back to the same tree (`serde_json` keeps key order and number spellings,
//! and a tree parsed from text has no duplicate keys), so pages computed from a reloaded tree
//! are the pages of the original one. Two trees cannot make that round trip and are kept
//! ([`Entry::reloadable`] is false; the store drops such an entry instead of spilling it):
//! nesting deeper than `serde_json`'s parser accepts ([`super::heap::MAX_PARSE_DEPTH`]), and, with
//! `precision == 0` (numbers written as spelled), a number whose exponent is not spelled the
//! way the parser stores it (`1e300` from jq is read back as `1e+300`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError};

use mcp_budget_core::paginate::Document;
use mcp_budget_core::tokens::Encoding;
use serde_json::Value;

use super::exact::{exact_text, exact_text_owned, fingerprint};
use super::heap::{alloc_bytes, scan_docs, texts_heap_bytes, value_heap_bytes};
use super::spill::{LoadError, SpillDir, SpillFile};
use mcp_budget_core::shape::book::PageBook;
use mcp_budget_core::shape::model::Carrier;
use mcp_budget_core::shape::model::Total;
use mcp_budget_core::shape::structured::{Orig, Plan};

/// One cached, shaped, untrimmed response.
#[derive(Debug)]
pub(crate) struct Entry {
    /// 12 lowercase hex digits.
    pub(crate) id: String,
    /// Tokens of each doc's whole rendering: exact when at most `budget`; a doc over the
    /// budget may hold `budget + 1` instead ("more than the budget": every paging decision
    /// only compares it with room of at most the budget), its exact count then coming with
    /// [`Entry::total_tokens`].
    pub(crate) doc_tokens: Vec<usize>,
    /// The exact sum of the docs' tokens (the meta item's `total_tokens`), once counted: set
    /// at once when every doc is within the budget, else by the counting thread started
    /// after page 1 ([`Entry::count_total`]) or by the first later page that needs it.
    total: OnceLock<u64>,
    /// The estimate page 1 shows while the exact total is unknown (see [`Total`]).
    estimate: u64,
    /// Budget in tokens the response was shaped with: the ceiling of `read_more`'s `max_tokens`.
    pub(crate) budget: usize,
    /// Significant digits of floats.
    pub(crate) precision: u32,
    /// Bytes of the compact rendering (floats rounded): the size the elision envelope reports.
    pub(crate) bytes: usize,
    /// Whether each doc is JSON (else text).
    json: Vec<bool>,
    /// Keyed hash of the whole renderings (floats rounded) the entry was shaped from: tells a
    /// response shaped again from another with the same id.
    fingerprint: Option<u64>,
    /// How each doc's pieces go out (a text item, an embedded resource …); empty: text items.
    pub(crate) carriers: Vec<Carrier>,
    /// How structuredContent follows the pages, when it does.
    pub(crate) structured: Option<Plan>,
    /// `Some(n)` when the response's `n` documents are paged as one JSON array (budgets near
    /// the floor: [`mcp_budget_core::shape::form::needs_one_document`]); said in
    /// `_meta["mcp-budget/page"]`.
    pub(crate) array_of: Option<usize>,
    /// Whether JSON documents go out in the table form (`tables = "auto"`): whole items as
    /// [`mcp_budget_core::table::TablePager::render`], cut ones by its pages; `doc_tokens`
    /// count that form. The docs themselves stay JSON (`query_response` sees JSON).
    pub(crate) tables: bool,
    /// Start of every page computed so far, by page number, and the next page's number for
    /// each (page number, budget) already computed.
    pub(crate) book: Mutex<PageBook>,
    body: Mutex<Body>,
    /// How many threads are loading the tree (about to take `body` for it, or holding it while
    /// they read a spill file back and parse): what making room does not wait for.
    loading: AtomicUsize,
    /// Bytes of memory the content holds now (tree estimate + text bytes), kept beside `body`
    /// so the store can sum it without taking every entry's lock.
    resident: AtomicUsize,
    /// Bytes of the spill file, when there is one.
    on_disk: AtomicUsize,
    /// Heap estimate of the tree when it was last in memory (kept after it goes: what
    /// reloading it will take).
    tree_estimate: AtomicUsize,
    /// Whether the tree / the text is in memory (mirrors of `body`, read without its lock).
    tree_in: AtomicBool,
    text_in: AtomicBool,
    reloadable: AtomicBool,
    /// Who made the response (see [`crate::boundary::Boundary::principal`]): only requests of
    /// the same principal read it. Empty by default.
    pub(crate) principal: Arc<str>,
    /// Set on a copy loaded from a shared store: where it lives there and the page book as it
    /// was read, so that the pages this request adds can be written back
    /// ([`super::remote`]).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) remote: Option<super::book::Mark>,
    /// For an entry made from its source text: page 1 as it went out, cut from the text's
    /// head, with the budget it was cut at; given again for that page (the page book's next
    /// position is where it ended, whatever a page cut from the whole would end at).
    pub(crate) first_page: Option<(usize, mcp_budget_core::shape::model::SeqPage)>,
}

/// Where the content is (see the module docs).
#[derive(Debug, Default)]
struct Body {
    tree: Option<Arc<Vec<Document>>>,
    tree_bytes: usize,
    text: Option<Vec<String>>,
    text_bytes: usize,
    file: Option<SpillFile>,
    /// Heap estimate of a structuredContent the plan keeps beside the documents
    /// ([`mcp_budget_core::shape::structured::Orig::Kept`]): resident while the entry lives.
    plan_bytes: usize,
    /// For an entry made from its source text ([`Entry::from_source`]): what the first parse
    /// does to the documents before they become the tree; the text is let go then.
    prep: Option<Prep>,
}

/// What the first parse of an entry made from its source text does to its documents (the
/// offload of blobs a result's documents go through), once.
pub(crate) struct Prep(pub(crate) Box<PrepFn>);

/// The function of a [`Prep`].
pub(crate) type PrepFn = dyn FnOnce(&mut Vec<Document>) + Send;

impl std::fmt::Debug for Prep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prep")
    }
}

impl Body {
    fn resident(&self) -> usize {
        self.plan_bytes
            + (if self.tree.is_some() {
                self.tree_bytes
            } else {
                0
            })
            + (if self.text.is_some() {
                self.text_bytes
            } else {
                0
            })
    }
}

/// What [`Entry::drop_tree`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Demoted {
    /// The tree was dropped (its text kept or already in a file); bytes freed.
    Freed(usize),
    /// There was no tree.
    Nothing,
    /// The tree cannot be rebuilt from text: the caller drops the whole entry instead.
    Unreloadable,
    /// Another thread is loading the tree (parsing the source text, which takes up to a few
    /// hundred milliseconds for megabytes), or a thread panicked holding the content: left
    /// alone rather than waited for.
    Busy,
}

/// Tries of an entry's lock, yielding between them, before [`Entry::body_to_demote`] waits.
const DEMOTE_TRIES: usize = 16;

/// Counts a loading thread for as long as it lives (see `Entry::loading`).
struct Loading<'f>(&'f AtomicUsize);

impl<'f> Loading<'f> {
    fn mark(count: &'f AtomicUsize) -> Loading<'f> {
        count.fetch_add(1, Ordering::AcqRel);
        Loading(count)
    }
}

impl Drop for Loading<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Entry {
    /// A resident entry: `docs` as the tree, counted by `scan_docs`. `bytes` is the
    /// size of the compact rendering (floats rounded).
    pub(crate) fn new(
        id: String,
        docs: Vec<Document>,
        doc_tokens: Vec<usize>,
        budget: usize,
        precision: u32,
        bytes: usize,
    ) -> Entry {
        let sum: u64 = doc_tokens.iter().map(|&t| t as u64).sum();
        let total = OnceLock::new();
        if doc_tokens.iter().all(|&t| t <= budget) {
            let _ = total.set(sum);
        }
        let scan = scan_docs(&docs, precision);
        let json = docs
            .iter()
            .map(|d| matches!(d, Document::Json(_)))
            .collect();
        Entry {
            id,
            doc_tokens,
            total,
            estimate: sum,
            budget,
            precision,
            bytes,
            json,
            fingerprint: None,
            carriers: Vec::new(),
            structured: None,
            array_of: None,
            tables: false,
            book: Mutex::new(PageBook::start()),
            body: Mutex::new(Body {
                tree: Some(Arc::new(docs)),
                tree_bytes: scan.heap,
                ..Body::default()
            }),
            resident: AtomicUsize::new(scan.heap),
            on_disk: AtomicUsize::new(0),
            tree_estimate: AtomicUsize::new(scan.heap),
            tree_in: AtomicBool::new(true),
            text_in: AtomicBool::new(false),
            loading: AtomicUsize::new(0),
            reloadable: AtomicBool::new(scan.reloadable),
            principal: Arc::from(""),
            remote: None,
            first_page: None,
        }
    }

    /// An entry of one JSON document over the budget that holds, for now, the text it came
    /// as (`source`: the text item, pretty or compact; strict JSON nesting at most
    /// [`MAX_PARSE_DEPTH`] deep, which the caller checked): parsed, and `prep` applied, the
    /// first time a page or query needs the tree ([`Entry::load`], or the thread the caller
    /// starts for it). Page 1 is written from the text's head before that
    /// ([`crate::boundary::early`]). `bytes` and `tree_estimate` are estimates (bytes of the
    /// compact rendering, bytes of heap of the tree).
    pub(crate) fn from_source(
        id: String,
        source: String,
        budget: usize,
        precision: u32,
        bytes: usize,
        tree_estimate: usize,
        prep: Prep,
    ) -> Entry {
        let texts = vec![source];
        let text_bytes = texts_heap_bytes(&texts);
        let mut entry = Entry::new(id, Vec::new(), vec![budget + 1], budget, precision, bytes);
        entry.json = vec![true];
        entry.body = Mutex::new(Body {
            text: Some(texts),
            text_bytes,
            prep: Some(prep),
            ..Body::default()
        });
        entry.resident = AtomicUsize::new(text_bytes);
        entry.tree_estimate = AtomicUsize::new(tree_estimate);
        entry.tree_in = AtomicBool::new(false);
        entry.text_in = AtomicBool::new(true);
        entry
    }

    /// The entry with page 1 as it went out (`page`, cut at `budget` from the head of its
    /// source text) and the page book it left (`book`: where page 2 starts); see
    /// [`Entry::from_source`].
    pub(crate) fn with_first_page(
        mut self,
        budget: usize,
        page: mcp_budget_core::shape::model::SeqPage,
        book: PageBook,
    ) -> Entry {
        self.first_page = Some((budget, page));
        self.book = Mutex::new(book);
        self
    }

    /// The entry whose page 1 shows `estimate` as its total while the exact count is not
    /// known (ignored when it is: every doc within the budget).
    pub(crate) fn with_estimate(mut self, estimate: u64) -> Entry {
        self.estimate = estimate;
        self
    }

    /// The total page `ordinal` (0 = page 1) shows: page 1 of a response with a doc over the
    /// budget shows the estimate, whether or not the exact count has finished since (so page
    /// 1 is the same page whenever it is computed again); every other page the exact total,
    /// counted here if no one has yet ([`Entry::total_tokens`]).
    pub(crate) fn total_for_page(&self, ordinal: usize, encoding: &Encoding) -> Total {
        if ordinal == 0 && !self.total_known_at_start() {
            return Total::Estimate(self.estimate);
        }
        Total::Exact(self.total_tokens(encoding))
    }

    /// Whether the exact total was known when the entry was made (no doc over the budget).
    fn total_known_at_start(&self) -> bool {
        self.doc_tokens.iter().all(|&t| t <= self.budget)
    }

    /// The estimate page 1 shows while the exact total is unknown.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn estimate(&self) -> u64 {
        self.estimate
    }

    /// The exact total, if it is counted already.
    pub(crate) fn total_if_known(&self) -> Option<u64> {
        self.total.get().copied()
    }

    /// Sets the exact total (as read from a shared store, counted by another replica).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn with_total(self, total: Option<u64>) -> Entry {
        if let Some(t) = total {
            let _ = self.total.set(t);
        }
        self
    }

    /// The exact tokens of the whole response (the sum of its docs' whole renderings, in the
    /// form they go out). Counts the docs over the budget from their rendering (the tree, or
    /// its text when the store let the tree go) the first time; a caller that arrives while
    /// another thread counts waits for it. 0 if the content cannot be read back.
    pub(crate) fn total_tokens(&self, encoding: &Encoding) -> u64 {
        *self.total.get_or_init(|| {
            let Some(docs) = self.docs() else {
                return 0;
            };
            self.doc_tokens
                .iter()
                .zip(docs.iter())
                .map(|(&t, d)| {
                    if t <= self.budget {
                        t as u64
                    } else {
                        mcp_budget_core::shape::form::doc_form(
                            d,
                            self.precision,
                            encoding,
                            self.tables,
                        )
                        .1 as u64
                    }
                })
                .sum()
        })
    }

    /// [`Entry::total_tokens`] from `rendered`, the docs' whole renderings as they go out
    /// (what the caller rendered to shape the response: nothing is rendered again). Run on
    /// a thread of its own after page 1 is written.
    pub(crate) fn count_total(&self, rendered: &[String], encoding: &Encoding) -> u64 {
        *self.total.get_or_init(|| {
            self.doc_tokens
                .iter()
                .zip(rendered)
                .map(|(&t, text)| {
                    if t <= self.budget {
                        t as u64
                    } else {
                        mcp_budget_core::shape::form::count(text, encoding) as u64
                    }
                })
                .sum()
        })
    }

    /// The entry made by `principal`.
    pub(crate) fn with_principal(mut self, principal: &str) -> Entry {
        self.principal = Arc::from(principal);
        self
    }

    /// Whether each doc is JSON (else text), in order.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn json_flags(&self) -> &[bool] {
        &self.json
    }

    /// Whether the tree can be rebuilt from the exact texts (see the module docs): what a
    /// shared store needs to hold the entry.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn can_reload(&self) -> bool {
        self.reloadable.load(Ordering::Relaxed)
    }

    /// The entry remembering the fingerprint of `rendered`, the whole rendering of each of its
    /// docs (floats rounded), for [`Entry::holds`]. The texts themselves are not kept.
    pub(crate) fn with_rendered(mut self, rendered: &[String]) -> Entry {
        self.fingerprint = Some(fingerprint(rendered));
        self
    }

    /// The entry whose one document is the JSON array of the response's `n` documents.
    pub(crate) fn with_array_of(mut self, n: Option<usize>) -> Entry {
        self.array_of = n;
        self
    }

    /// The entry with its JSON documents going out in the table form (see [`Entry::tables`]).
    pub(crate) fn with_tables(mut self, tables: bool) -> Entry {
        self.tables = tables;
        self
    }

    /// The entry with the carriers of its docs and its structuredContent plan. A plan that
    /// reads its value from the docs ([`Orig::Doc`]) adds nothing; one that keeps a copy
    /// ([`Orig::Kept`]) adds that copy's heap estimate to the resident bytes, for as long as
    /// the entry lives (demoting and spilling leave it).
    pub(crate) fn with_parts(mut self, carriers: Vec<Carrier>, structured: Option<Plan>) -> Entry {
        let plan_bytes = match structured.as_ref().map(|p| &p.orig) {
            // The Arc's allocation (two counters and the root node) and the nodes below.
            Some(Orig::Kept(v)) => {
                alloc_bytes(2 * std::mem::size_of::<usize>() + std::mem::size_of::<Value>())
                    + value_heap_bytes(v)
            }
            _ => 0,
        };
        if let Ok(body) = self.body.get_mut() {
            body.plan_bytes = plan_bytes;
            let resident = body.resident();
            *self.resident.get_mut() = resident;
        }
        self.carriers = carriers;
        self.structured = structured;
        self
    }

    /// Whether this entry holds `docs` whose whole renderings are `rendered` (the same
    /// response shaped again): the same kinds of docs, rendered to the same bytes (compared
    /// by a keyed 64-bit hash).
    pub(crate) fn holds(&self, docs: &[Document], rendered: &[String]) -> bool {
        self.json.len() == docs.len()
            && self
                .json
                .iter()
                .zip(docs)
                .all(|(&j, d)| j == matches!(d, Document::Json(_)))
            && self.fingerprint.is_some_and(|f| f == fingerprint(rendered))
    }

    /// How many documents (text items, embedded resources' texts, a structuredContent no text
    /// item carries) the response has.
    pub(crate) fn n_docs(&self) -> usize {
        self.json.len()
    }

    /// The documents: the resident tree, or, when the store has let it go, a copy parsed from
    /// the text (in memory or in the spill file) that is not kept. `None` only when the spill
    /// file cannot be read back.
    pub(crate) fn docs(&self) -> Option<Arc<Vec<Document>>> {
        let body = self.body.lock().ok()?;
        if let Some(tree) = &body.tree {
            return Some(Arc::clone(tree));
        }
        if body.prep.is_some() {
            // Made from its source text: the first parse is kept (it is the one that applies
            // `prep`). Marked as loading before the lock is let go.
            let _loading = Loading::mark(&self.loading);
            drop(body);
            return self.load_tree().ok().map(|(tree, _)| tree);
        }
        let texts = read_texts(&body).ok()?;
        drop(body);
        self.parse(texts).ok().map(Arc::new)
    }

    /// The response as the input of a jq query: the one document's value (a text that is not
    /// JSON as a JSON string), or an array of them when there are several (text items,
    /// embedded resources' texts, and a structuredContent no text item carries, in order). `Null` when the
    /// content cannot be read back (see [`Entry::docs`]).
    pub(crate) fn query_input(&self) -> Value {
        let Some(docs) = self.docs() else {
            return Value::Null;
        };
        let mut values: Vec<Value> = docs
            .iter()
            .map(|d| match d {
                Document::Json(v) => v.clone(),
                Document::Text(t) => Value::String(t.clone()),
            })
            .collect();
        if values.len() == 1 {
            values.pop().unwrap_or_default()
        } else {
            Value::Array(values)
        }
    }

    /// Bytes of memory the content holds now.
    pub(crate) fn resident(&self) -> usize {
        self.resident.load(Ordering::Relaxed)
    }

    /// Bytes of memory bringing the tree back takes: its heap estimate when it was last in
    /// memory, plus the text read to parse it.
    pub(crate) fn reload_bytes(&self) -> usize {
        self.tree_estimate.load(Ordering::Relaxed) + self.on_disk()
    }

    /// Bytes of the spill file (0 when none).
    pub(crate) fn on_disk(&self) -> usize {
        self.on_disk.load(Ordering::Relaxed)
    }

    /// Whether the tree can be rebuilt from the text (see the module docs).
    #[cfg(test)]
    pub(crate) fn reloadable(&self) -> bool {
        self.reloadable.load(Ordering::Relaxed)
    }

    /// Whether the tree is in memory.
    pub(crate) fn has_tree(&self) -> bool {
        self.tree_in.load(Ordering::Relaxed)
    }

    /// Whether the text is in memory and the tree is not.
    pub(crate) fn has_text_only(&self) -> bool {
        !self.tree_in.load(Ordering::Relaxed) && self.text_in.load(Ordering::Relaxed)
    }

    /// Mirrors `body` in the atomics; returns the resident bytes before.
    fn publish(&self, body: &Body) -> usize {
        self.tree_in.store(body.tree.is_some(), Ordering::Relaxed);
        self.text_in.store(body.text.is_some(), Ordering::Relaxed);
        self.resident.swap(body.resident(), Ordering::Relaxed)
    }

    /// Brings the tree back into memory (parsed from the text or the spill file) if it is not
    /// there. Returns whether it parsed anything.
    ///
    /// # Errors
    /// [`LoadError`] when the spill file cannot be read back.
    pub(crate) fn load(&self) -> Result<bool, LoadError> {
        self.load_tree().map(|(_, parsed)| parsed)
    }

    /// [`Entry::load`], returning the tree too (taken under the same lock: the store may let
    /// it go again as soon as the lock is released).
    fn load_tree(&self) -> Result<(Arc<Vec<Document>>, bool), LoadError> {
        // Marked before the lock is taken: a thread making room meanwhile does not queue
        // behind the load.
        let _loading = Loading::mark(&self.loading);
        let mut body = self.body.lock().map_err(|_| LoadError::Gone)?;
        if let Some(tree) = &body.tree {
            return Ok((Arc::clone(tree), false));
        }
        // Parsed from the text in place (a copy of it would be memory the cache does not
        // count, for as long as the parse takes).
        let mut docs = match &body.text {
            Some(texts) => self.parse_in_place(texts)?,
            None => self.parse(read_texts(&body)?)?,
        };
        let prepped = body.prep.take().map(|prep| (prep.0)(&mut docs)).is_some();
        let scan = scan_docs(&docs, self.precision);
        if prepped {
            // The source text (maybe pretty, maybe with blobs `prep` took out) is not the
            // exact text of the tree: let it go; `drop_tree` renders the exact one.
            body.text = None;
            body.text_bytes = 0;
            body.file = None;
            self.on_disk.store(0, Ordering::Relaxed);
            self.reloadable.store(scan.reloadable, Ordering::Relaxed);
        }
        body.tree_bytes = scan.heap;
        self.tree_estimate.store(body.tree_bytes, Ordering::Relaxed);
        let tree = Arc::new(docs);
        body.tree = Some(Arc::clone(&tree));
        self.publish(&body);
        Ok((tree, true))
    }

    /// Holds the content until the guard is dropped: as a background parse does (`loading`),
    /// or as a page being read does.
    #[cfg(test)]
    pub(crate) fn hold(&self, loading: bool) -> impl Sized + '_ {
        let flag = loading.then(|| Loading::mark(&self.loading));
        (flag, self.body.lock())
    }

    /// The content, for demoting it. `None` at once when another thread is loading the tree
    /// (a parse of megabytes takes up to a few hundred milliseconds) or the lock is poisoned
    /// (the content is left alone); else once the holder, if any, lets go (it is reading a
    /// page, or demoting the content itself: rendering a tree or writing a spill file). A
    /// load that begins while this waits is waited for: rare, as the holders above are
    /// brief and a load is marked before its lock is taken.
    fn body_to_demote(&self) -> Option<MutexGuard<'_, Body>> {
        // A few tries before waiting: a page read lets go within microseconds.
        for _ in 0..DEMOTE_TRIES {
            match self.body.try_lock() {
                Ok(body) => return Some(body),
                Err(TryLockError::Poisoned(_)) => return None,
                Err(TryLockError::WouldBlock) if self.loading.load(Ordering::Acquire) > 0 => {
                    return None;
                }
                Err(TryLockError::WouldBlock) => std::thread::yield_now(),
            }
        }
        if self.loading.load(Ordering::Acquire) > 0 {
            return None;
        }
        self.body.lock().ok()
    }

    /// Lets the tree go, keeping the content as text (rendered now when there is neither
    /// text nor file).
    pub(crate) fn drop_tree(&self) -> Demoted {
        let Some(mut body) = self.body_to_demote() else {
            return Demoted::Busy;
        };
        let Some(tree) = body.tree.take() else {
            return Demoted::Nothing;
        };
        if !self.reloadable.load(Ordering::Relaxed) {
            body.tree = Some(tree);
            return Demoted::Unreloadable;
        }
        if body.text.is_none() && body.file.is_none() {
            // Move the texts out of the tree when no reader holds it (no copy).
            let mut texts: Vec<String> = match Arc::try_unwrap(tree) {
                Ok(docs) => docs.into_iter().map(exact_text_owned).collect(),
                Err(shared) => shared.iter().map(exact_text).collect(),
            };
            // Rendering grows its buffer by doubling: keep only the bytes.
            texts.iter_mut().for_each(String::shrink_to_fit);
            body.text_bytes = texts_heap_bytes(&texts);
            body.text = Some(texts);
        }
        body.tree_bytes = 0;
        let before = self.publish(&body);
        Demoted::Freed(before.saturating_sub(body.resident()))
    }

    /// Moves the text to a spill file in `dir` (after [`Entry::drop_tree`]). Returns the
    /// bytes of memory freed; `Ok(Some(0))` when there was no text in memory or the tree is
    /// still there, `Ok(None)` when another thread is loading the tree
    /// or the lock is poisoned (as [`Demoted::Busy`]).
    ///
    /// # Errors
    /// The I/O error of creating or writing the file (the text then stays in memory).
    pub(crate) fn spill(&self, dir: &SpillDir) -> std::io::Result<Option<usize>> {
        let Some(mut body) = self.body_to_demote() else {
            return Ok(None);
        };
        if body.tree.is_some() {
            return Ok(Some(0));
        }
        let Some(texts) = &body.text else {
            return Ok(Some(0));
        };
        let file = dir.write(&self.id, texts)?;
        self.on_disk.store(file.len(), Ordering::Relaxed);
        body.file = Some(file);
        body.text = None;
        body.text_bytes = 0;
        let before = self.publish(&body);
        Ok(Some(before.saturating_sub(body.resident())))
    }

    /// A copy of this entry for one request, sharing its immutable content: the tree (an
    /// `Arc`, not copied), token counts, carriers and plan; with a fresh page book at the
    /// start and no shared-store mark. What the shared store's replica cache
    /// ([`super::remote::cache`]) hands out. `None` when the tree is not in memory.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn share(&self) -> Option<Entry> {
        let body = self.body.lock().ok()?;
        let tree = Arc::clone(body.tree.as_ref()?);
        let (tree_bytes, plan_bytes) = (body.tree_bytes, body.plan_bytes);
        drop(body);
        let body = Body {
            tree: Some(tree),
            tree_bytes,
            plan_bytes,
            ..Body::default()
        };
        Some(Entry {
            id: self.id.clone(),
            doc_tokens: self.doc_tokens.clone(),
            total: self.total.clone(),
            estimate: self.estimate,
            budget: self.budget,
            precision: self.precision,
            bytes: self.bytes,
            json: self.json.clone(),
            fingerprint: self.fingerprint,
            carriers: self.carriers.clone(),
            structured: self.structured.clone(),
            array_of: self.array_of,
            tables: self.tables,
            book: Mutex::new(PageBook::start()),
            resident: AtomicUsize::new(body.resident()),
            body: Mutex::new(body),
            on_disk: AtomicUsize::new(0),
            tree_estimate: AtomicUsize::new(tree_bytes),
            tree_in: AtomicBool::new(true),
            text_in: AtomicBool::new(false),
            loading: AtomicUsize::new(0),
            reloadable: AtomicBool::new(self.reloadable.load(Ordering::Relaxed)),
            principal: Arc::clone(&self.principal),
            remote: None,
            first_page: None,
        })
    }

    /// Documents from their exact texts, read in place (text documents copied).
    fn parse_in_place(&self, texts: &[String]) -> Result<Vec<Document>, LoadError> {
        if texts.len() != self.json.len() {
            return Err(LoadError::Damaged);
        }
        texts
            .iter()
            .zip(&self.json)
            .map(|(t, &json)| {
                if json {
                    serde_json::from_str(t)
                        .map(Document::Json)
                        .map_err(|_| LoadError::Damaged)
                } else {
                    Ok(Document::Text(t.clone()))
                }
            })
            .collect()
    }

    /// Documents from their exact texts.
    fn parse(&self, texts: Vec<String>) -> Result<Vec<Document>, LoadError> {
        if texts.len() != self.json.len() {
            return Err(LoadError::Damaged);
        }
        texts
            .into_iter()
            .zip(&self.json)
            .map(|(t, &json)| {
                if json {
                    serde_json::from_str(&t)
                        .map(Document::Json)
                        .map_err(|_| LoadError::Damaged)
                } else {
                    Ok(Document::Text(t))
                }
            })
            .collect()
    }
}

/// The exact texts of `body`: from memory, or read from its spill file.
fn read_texts(body: &Body) -> Result<Vec<String>, LoadError> {
    if let Some(texts) = &body.text {
        return Ok(texts.clone());
    }
    match &body.file {
        Some(file) => file.read(),
        None => Err(LoadError::Gone),
    }
}
