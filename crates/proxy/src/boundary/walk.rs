//! Pages of a cached response: its documents (text items, embedded resources' texts, a
//! structuredContent no text item carries; see [`super::parts`]) as one paged sequence; this
//! module calls them items.
//!
//! A response may hold several items. They are paged as one sequence, in order: a page
//! holds whole items while they fit, and the first item that does not fit is cut by the core
//! [`Pager`] (which never cuts JSON in the middle and shows at least one new unit). Every item
//! stays a separate content item, so following the cursors gives each item back exactly (its
//! pages reassemble with `mcp_budget_core::paginate::reassemble`). When the budget is too
//! small for that (see [`needs_one_document`]), the caller pages the items as one JSON array.
//!
//! Location of a page (its meta item's `shown`, and in full in `_meta["mcp-budget/page"]`,
//! [`page_meta`]): with several items, `text I/N` for each item on the page, joined by `, `;
//! only the last can be a piece of its item, and then it is followed by a space and the
//! item's own location (`text 1/3, text 2/3 $[0:40]`). A reader splits left to right
//! (`mcp_budget_core::paginate::split_location`), never inside that inner location, so keys
//! or texts holding `, ` or `text 2/3` cannot make it ambiguous. When the items are paged as
//! one JSON array, `_meta` says `"array_of": N`.
//!
//! Budget: the token counts of the page's text items plus the meta item's never exceed the
//! budget (each item is counted on its own, exactly as it goes out).

use mcp_budget_core::paginate::meta::{self, HintTools};
use mcp_budget_core::paginate::{Document, Page, PageError, PageInfo, Pager, PathStep, Position};
use mcp_budget_core::table::TablePager;
use mcp_budget_core::tokens::Encoding;
use serde_json::{Map, Value};

pub(crate) use super::store::Total;
use super::store::{Entry, SeqPos};

/// Names of the injected tools, for hints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolNames {
    /// `read_more`, or its prefixed name.
    pub(crate) read_more: String,
    /// `query_response`, or its prefixed name.
    pub(crate) query_response: String,
    /// `response_refs` is on for some tool: hints say how to pass a response by reference.
    pub(crate) refs: bool,
}

impl ToolNames {
    /// Whether `tool` is one of the two injected tools.
    pub(crate) fn answers(&self, tool: &str) -> bool {
        tool == self.read_more || tool == self.query_response
    }
}

impl Default for ToolNames {
    fn default() -> ToolNames {
        ToolNames {
            read_more: super::injected::READ_MORE.to_owned(),
            query_response: super::injected::QUERY_RESPONSE.to_owned(),
            refs: false,
        }
    }
}

/// One text item (or the part of one) on a page.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    /// Index of the text item in the response.
    pub(crate) item: usize,
    /// The text that goes out.
    pub(crate) body: String,
    /// Where the part starts in its item ([`Position::start`] for a whole item or page 1).
    pub(crate) start: Position,
    /// For a JSON part, the path of its body in the item (empty: rooted at `$`).
    pub(crate) root: Vec<PathStep>,
}

/// A page of a cached response.
#[derive(Debug, Clone)]
pub(crate) struct SeqPage {
    /// How many pages come before this one (0 = page 1), whatever its page number.
    pub(crate) ordinal: usize,
    /// The text items of the page, in order.
    pub(crate) parts: Vec<Part>,
    /// The meta item's text.
    pub(crate) meta: String,
    /// Tokens of the parts plus the meta: at most the budget.
    pub(crate) tokens: usize,
    /// The page's full location (the meta item's `shown`, never abbreviated).
    pub(crate) location: String,
    /// The cursor of the next page; `None` on the last page.
    pub(crate) next_cursor: Option<String>,
    /// The total its meta item shows.
    pub(crate) total: Total,
}

/// The key of a paged result's `_meta` member that holds the page's machine-readable position.
pub(crate) const PAGE_META_KEY: &str = "mcp-budget/page";

/// The value of `result._meta["mcp-budget/page"]` for `page` of response `id`:
/// `{"response_id","page" (0 = page 1: the page's ordinal, not its cursor's number),"location",
/// "next_cursor" (absent on the last page),"total_tokens" (exact; on page 1 of a response with a
/// document over the budget `"total_tokens_estimate"` instead, see [`Total`]),"array_of" (only when the response's
/// N documents are paged as one JSON array: N),"tables" (only with `tables = "auto"`: `true`;
/// each JSON body is then in the table form: `mcp_budget_core::table::decode` it before
/// merging)}`.
///
/// `location` is the page's full location: for a response of one document, that document's
/// (the grammar of `mcp_budget_core::paginate`); for several, `text I/N` for each document
/// the page carries, joined by `, `, the last followed by a space and its inner location when
/// the page holds only a piece of it (`text 1/3, text 2/3 $[0:40]`; parsed by
/// `mcp_budget_core::paginate::split_location`, which never looks inside the inner location).
pub(crate) fn page_meta(id: &str, page: &SeqPage, entry: &Entry) -> Value {
    let mut m = Map::new();
    m.insert("response_id".into(), Value::String(id.to_owned()));
    m.insert("page".into(), Value::from(page.ordinal as u64));
    m.insert("location".into(), Value::String(page.location.clone()));
    if let Some(c) = &page.next_cursor {
        m.insert("next_cursor".into(), Value::String(c.clone()));
    }
    match page.total {
        Total::Exact(t) => m.insert("total_tokens".into(), Value::from(t)),
        Total::Estimate(t) => m.insert("total_tokens_estimate".into(), Value::from(t)),
    };
    if let Some(n) = entry.array_of {
        m.insert("array_of".into(), Value::from(n as u64));
    }
    if entry.tables {
        m.insert("tables".into(), Value::Bool(true));
    }
    Value::Object(m)
}

/// Puts `page_meta` into `result._meta["mcp-budget/page"]`, keeping the other members of an
/// upstream `_meta` object (a `_meta` that is not an object is left as it came).
pub(crate) fn put_page_meta(result: &mut Map<String, Value>, page_meta: Value) {
    match result.get_mut("_meta") {
        Some(Value::Object(m)) => {
            m.insert(PAGE_META_KEY.into(), page_meta);
        }
        Some(_) => {}
        None => {
            let mut m = Map::new();
            m.insert(PAGE_META_KEY.into(), page_meta);
            result.insert("_meta".into(), Value::Object(m));
        }
    }
}

/// The meta item's text (compact JSON), by the core's [`meta::build_meta`]: `next_page`
/// is the page number of the next page (`None` on the last page).
pub(crate) fn render_meta(
    id: &str,
    next_page: Option<usize>,
    shown: &str,
    next_start_line: Option<u64>,
    total: Total,
    names: &ToolNames,
) -> String {
    let info = PageInfo {
        shown,
        has_next: next_page.is_some(),
        next_start_line,
    };
    let tools = HintTools {
        read_more: &names.read_more,
        query_response: &names.query_response,
    };
    let (exact, estimate) = match total {
        Total::Exact(t) => (Some(t), None),
        Total::Estimate(t) => (None, Some(t)),
    };
    let mut m = meta::build_meta(&info, id, next_page.unwrap_or(0) as u64, 0, tools);
    m.total_tokens = exact;
    m.total_tokens_estimate = estimate;
    if names.refs {
        m.hint.push_str(&super::args_rewrite::refs_hint(id));
    }
    serde_json::to_string(&m).unwrap_or_default()
}

/// Tokens kept free for the meta item while whole items are placed: a meta with a long
/// cursor and a long `shown`, plus slack for BPE's non-additivity.
pub(crate) fn meta_reserve(
    id: &str,
    n_docs: usize,
    total: Total,
    encoding: &Encoding,
    names: &ToolNames,
) -> usize {
    let shown = format!("text {n}/{n}, text {n}/{n}", n = n_docs.max(100));
    encoding.count(&render_meta(
        id,
        Some(999_999),
        &shown,
        Some(9_999_999),
        total,
        names,
    )) + 8
}

/// Whether several text items must be paged as one JSON array instead of as a sequence:
/// when the budget is so small that a whole item beside the meta item might not fit while
/// the core pager, whose floor is [`mcp_budget_core::MIN_BUDGET_TOKENS`], would not cut it.
pub(crate) fn needs_one_document(n_docs: usize, budget: usize, reserve: usize) -> bool {
    n_docs > 1 && budget < mcp_budget_core::MIN_BUDGET_TOKENS + reserve
}

/// `shown` of one part: the pager's own for a response of one item, else prefixed with the
/// item's number.
fn part_shown(entry: &Entry, item: usize, inner: Option<&str>) -> String {
    let n = entry.n_docs();
    match (n, inner) {
        (1, Some(s)) => s.to_owned(),
        (1, None) => "$".to_owned(),
        (_, Some(s)) => format!("text {}/{n} {s}", item + 1),
        (_, None) => format!("text {}/{n}", item + 1),
    }
}

/// Page number `k` of `entry` with `budget` tokens.
///
/// Returns `None` when the response has no page `k` (never computed).
pub(crate) fn page(
    entry: &Entry,
    k: usize,
    budget: usize,
    encoding: &Encoding,
    names: &ToolNames,
) -> Option<SeqPage> {
    if k == 0
        && let Some((at, first)) = &entry.first_page
        && *at == budget
    {
        // Page 1 of an entry made from its source text, as it went out.
        return Some(first.clone());
    }
    let docs = entry.docs()?;
    let mut book = entry.book.lock().ok()?;
    let (mut item, mut pos): SeqPos = book.positions.get(k)?.clone();
    let next_k = book
        .next_of
        .get(&(k, budget))
        .copied()
        .unwrap_or(book.positions.len());
    let n = docs.len();
    let ordinal = book.ordinals.get(k).copied().unwrap_or(k);
    let total = entry.total_for_page(ordinal, encoding);
    let reserve = meta_reserve(&entry.id, n, total, encoding, names);

    let mut parts: Vec<Part> = Vec::new();
    let mut shown: Vec<String> = Vec::new();
    let mut location: Vec<String> = Vec::new();
    let mut used = 0usize;
    let mut next: Option<SeqPos> = None;
    let mut meta: Option<String> = None;
    let mut meta_tokens = 0usize;

    while item < n {
        let remaining = budget.saturating_sub(used);
        let doc = &docs[item];
        let item_tokens = entry.doc_tokens[item];
        if pos.is_start() && item_tokens + reserve <= remaining {
            // The whole item, and still room for the meta.
            parts.push(Part {
                item,
                body: doc_form(doc, entry.precision, encoding, entry.tables).0,
                start: Position::start(),
                root: Vec::new(),
            });
            shown.push(part_shown(entry, item, None));
            location.push(part_shown(entry, item, None));
            used += item_tokens;
            item += 1;
            pos = Position::start();
            continue;
        }
        if !parts.is_empty() && remaining < mcp_budget_core::MIN_BUDGET_TOKENS + reserve {
            // Too little room for a useful cut: the item starts the next page.
            next = Some((item, pos));
            break;
        }
        // Cut this item. At its start, ask for less than its size so that the pager never
        // returns it whole without a meta item.
        let pager_budget = if pos.is_start() && item_tokens <= remaining {
            remaining.saturating_sub(reserve)
        } else {
            remaining
        };
        let pager = Cutter::new(entry.tables, encoding, pager_budget, entry.precision);
        let more_items = item + 1 < n;
        let prefix = shown.clone();
        let mut render = |info: &PageInfo<'_>| {
            let has_next = info.has_next || more_items;
            let mut all = prefix.clone();
            all.push(part_shown(entry, item, Some(info.shown)));
            render_meta(
                &entry.id,
                has_next.then_some(next_k),
                &all.join(", "),
                if info.has_next {
                    info.next_start_line
                } else {
                    None
                },
                total,
                names,
            )
        };
        let Ok(p) = pager.page(doc, &pos, &mut render) else {
            return None;
        };
        match p.meta {
            Some(m) => {
                shown.push(part_shown(entry, item, Some(&p.shown)));
                location.push(part_shown(entry, item, Some(&p.location)));
                used += p.tokens;
                meta = Some(m);
                parts.push(Part {
                    item,
                    body: p.body,
                    start: p.start,
                    root: p.root,
                });
                next = match p.next {
                    Some(np) => Some((item, np)),
                    None if more_items => Some((item + 1, Position::start())),
                    None => None,
                };
            }
            None => {
                // The pager found it whole within `pager_budget`: keep it whole and let the
                // meta below account for itself (only reachable with budgets near the floor).
                let t = encoding.count(&p.body);
                parts.push(Part {
                    item,
                    body: p.body,
                    start: Position::start(),
                    root: Vec::new(),
                });
                shown.push(part_shown(entry, item, None));
                location.push(part_shown(entry, item, None));
                used += t;
                item += 1;
                next = (item < n).then(|| (item, Position::start()));
            }
        }
        break;
    }

    let meta = match meta {
        Some(m) => m,
        None => {
            let m = render_meta(
                &entry.id,
                next.is_some().then_some(next_k),
                &shown.join(", "),
                None,
                total,
                names,
            );
            meta_tokens = encoding.count(&m);
            m
        }
    };
    let next_cursor = next
        .is_some()
        .then(|| meta::cursor(&entry.id, next_k as u64));
    if let Some(np) = next {
        if next_k == book.positions.len() {
            book.positions.push(np);
            let ordinal = book.ordinals.get(k).map_or(k, |o| o + 1);
            book.ordinals.push(ordinal);
        }
        book.next_of.insert((k, budget), next_k);
    }
    Some(SeqPage {
        ordinal,
        parts,
        meta,
        tokens: used + meta_tokens,
        location: location.join(", "),
        next_cursor,
        total,
    })
}

/// The pager of a cached response's documents: plain, or in the table form.
enum Cutter {
    Plain(Pager),
    Tables(TablePager),
}

impl Cutter {
    fn new(tables: bool, encoding: &Encoding, budget: usize, precision: u32) -> Cutter {
        if tables {
            Cutter::Tables(TablePager::new(encoding.clone(), budget, precision))
        } else {
            Cutter::Plain(Pager::new(encoding.clone(), budget, precision))
        }
    }

    fn page(
        &self,
        doc: &Document,
        at: &Position,
        meta: &mut dyn FnMut(&PageInfo<'_>) -> String,
    ) -> Result<Page, PageError> {
        match self {
            Cutter::Plain(p) => p.page(doc, at, meta),
            Cutter::Tables(p) => p.page(doc, at, meta),
        }
    }
}

/// The whole rendering of `doc` as it goes out, and its exact tokens: the table form when
/// `tables` and some array of it becomes a table, else [`doc_tokens`]'s.
pub(crate) fn doc_form(
    doc: &Document,
    precision: u32,
    encoding: &Encoding,
    tables: bool,
) -> (String, usize) {
    if tables && let Some((_, text)) = TablePager::new(encoding.clone(), 0, precision).render(doc) {
        let t = count(&text, encoding);
        return (text, t);
    }
    doc_tokens(doc, precision, encoding)
}

/// [`doc_form`], counted only up to `budget`: the exact tokens when at most `budget`, else
/// `budget + 1` ("over the budget"; [`Encoding::count_till_limit_sampled`] stops there, so a
/// 12 MB document costs the tokenizing of about the budget's worth of text, not of all of it),
/// with, for a doc over the budget, how far that count got ([`Sample`], for the estimate).
/// A text document is counted as page 1 of it counts
/// ([`mcp_budget_core::paginate::count_till_limit_noted`]): page 1, on the same thread,
/// starts from that count instead of tokenizing the same bytes again.
pub(crate) fn doc_form_till(
    doc: &Document,
    precision: u32,
    encoding: &Encoding,
    tables: bool,
    budget: usize,
) -> (String, usize, Sample) {
    let (text, paged_as_text) = if tables
        && let Some((_, text)) = TablePager::new(encoding.clone(), 0, precision).render(doc)
    {
        (text, false)
    } else {
        (doc.render(precision), matches!(doc, Document::Text(_)))
    };
    let counted = if paged_as_text {
        mcp_budget_core::paginate::count_till_limit_noted(encoding, &text, budget)
    } else {
        encoding.count_till_limit_sampled(&text, budget)
    };
    match counted {
        Ok(t) => (text, t, None),
        Err(sample) => (text, budget + 1, Some(sample)),
    }
}

/// For a rendering over the budget: the tokens and bytes of its start that
/// [`doc_form_till`] counted before it passed the budget (`None`: within the budget).
pub(crate) type Sample = Option<(usize, usize)>;

/// Bytes of a doc's rendering counted to estimate its tokens (its first bytes).
const ESTIMATE_SAMPLE_BYTES: usize = 16 * 1024;

/// The estimate of a response's total tokens page 1 shows while the exact count runs: the
/// docs within `budget` as counted (`doc_tokens`, exact), each doc over it as its bytes times
/// the tokens per byte of the start [`doc_form_till`] counted (`samples`; when that is too
/// short, of its first [`ESTIMATE_SAMPLE_BYTES`], counted here), rounded to two significant
/// digits. A function of the renderings alone, so it is the same whenever computed.
pub(crate) fn estimate_total(
    rendered: &[String],
    doc_tokens: &[usize],
    samples: &[Sample],
    budget: usize,
    encoding: &Encoding,
) -> u64 {
    let sum: u64 = rendered
        .iter()
        .zip(doc_tokens)
        .enumerate()
        .map(|(i, (text, &t))| {
            if t <= budget {
                return t as u64;
            }
            let (sample, end) = match samples.get(i).copied().flatten() {
                Some((tokens, bytes)) if bytes >= ESTIMATE_SAMPLE_BYTES.min(text.len()) => {
                    (tokens, bytes)
                }
                _ => {
                    let mut end = text.len().min(ESTIMATE_SAMPLE_BYTES);
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    (encoding.count(&text[..end]), end)
                }
            };
            over_budget(text.len(), (sample, end), budget)
        })
        .sum();
    two_significant_digits(sum)
}

/// The estimate of a doc over `budget` whose rendering has `bytes` bytes, by the tokens per
/// byte of a sample of it (`(tokens, bytes)` of its start), unrounded.
fn over_budget(bytes: usize, (tokens, sample_bytes): (usize, usize), budget: usize) -> u64 {
    let est = tokens.max(1) as u128 * bytes as u128 / sample_bytes.max(1) as u128;
    u64::try_from(est)
        .unwrap_or(u64::MAX)
        .max(budget as u64 + 1)
}

/// [`estimate_total`] of a response of one doc over `budget` whose rendering is not at hand:
/// `bytes`, an estimate of its size, and `sample`, the tokens and bytes of its start.
pub(crate) fn estimate_one(bytes: usize, sample: (usize, usize), budget: usize) -> u64 {
    two_significant_digits(over_budget(bytes, sample, budget))
}

/// `n` rounded to two significant digits (12,345 → 12,000; 99 → 99).
fn two_significant_digits(n: u64) -> u64 {
    let mut unit = 1u64;
    while n / unit >= 100 {
        unit *= 10;
    }
    (n + unit / 2) / unit * unit
}

/// Whether the whole response fits `budget` without a meta item (the sum of its items'
/// tokens).
pub(crate) fn fits_whole(doc_tokens: &[usize], budget: usize) -> bool {
    doc_tokens.iter().sum::<usize>() <= budget
}

/// The whole-rendering tokens of `doc`, exactly.
pub(crate) fn doc_tokens(doc: &Document, precision: u32, encoding: &Encoding) -> (String, usize) {
    let text = doc.render(precision);
    let t = count(&text, encoding);
    (text, t)
}

/// Texts at least this long (bytes) are counted in two halves on two threads.
const PARALLEL_COUNT_BYTES: usize = 512 * 1024;

/// The tokens of `text`, exactly ([`Encoding::count`]); a long text in an OpenAI encoding is
/// counted as two halves at once, on this thread and a scoped one.
///
/// Exact because the halves meet where a pre-tokenization piece must end: between an ASCII
/// letter and a `"`. No alternative of the cl100k_base or o200k_base split pattern matches a
/// letter followed by `"` (letters runs, contractions and digits take no `"`; punctuation and
/// whitespace runs take no letter), and the two look-around parts (`\s+$`, `\s+\s`) only
/// concern whitespace; BPE then runs on each piece alone, so the count is the sum of the
/// halves' counts (checked against the whole count in the tests below).
pub(crate) fn count(text: &str, encoding: &Encoding) -> usize {
    let splittable = matches!(encoding, Encoding::Cl100kBase | Encoding::O200kBase);
    if !splittable || text.len() < PARALLEL_COUNT_BYTES {
        return encoding.count(text);
    }
    let Some(mid) = split_point(text) else {
        return encoding.count(text);
    };
    let (a, b) = text.split_at(mid);
    std::thread::scope(|s| {
        let other = s.spawn(|| encoding.count(b));
        let first = encoding.count(a);
        // A panic in the other thread (none expected) falls back to counting here.
        first + other.join().unwrap_or_else(|_| encoding.count(b))
    })
}

/// A byte index near the middle of `text` where a `"` follows an ASCII letter: a boundary of
/// the OpenAI pre-tokenizers (see [`count`]). `None` when there is none.
fn split_point(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mid = bytes.len() / 2;
    let at = |i: usize| bytes[i] == b'"' && bytes[i - 1].is_ascii_alphabetic();
    let forward = memchr::memchr_iter(b'"', &bytes[mid..])
        .map(|i| mid + i)
        .find(|&i| i > 0 && at(i));
    forward.or_else(|| memchr::memrchr_iter(b'"', &bytes[..mid]).find(|&i| i > 0 && at(i)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn big_json(seed: u64, n: usize) -> String {
        let items: Vec<serde_json::Value> = (0..n)
            .map(|i| {
                let k = seed.wrapping_mul(31).wrapping_add(i as u64);
                serde_json::json!({
                    "name": format!("pkg_{k}_émoji 🎉 'sé\"q\" x"),
                    "type": if k.is_multiple_of(3) { "directory" } else { "file" },
                    "size": k % 1000, "ratio": (k as f64) / 7.0,
                    "tags": ["a", "B c", "  spaced  ", "tab\there", "line\nbreak", "don't"],
                })
            })
            .collect();
        serde_json::to_string(&items).unwrap_or_default()
    }

    #[test]
    fn split_point_is_between_a_letter_and_a_quote() {
        let text = big_json(1, 10);
        let i = split_point(&text).unwrap_or(0);
        assert!(i > 0);
        assert_eq!(text.as_bytes()[i], b'"');
        assert!(text.as_bytes()[i - 1].is_ascii_alphabetic());
        assert_eq!(split_point("[1,2,3]"), None);
    }

    #[test]
    fn parallel_count_equals_whole_count_on_a_long_text() {
        let text = big_json(7, 8000);
        assert!(text.len() >= PARALLEL_COUNT_BYTES);
        for enc in [Encoding::Cl100kBase, Encoding::O200kBase] {
            assert_eq!(count(&text, &enc), enc.count(&text));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any `letter"` boundary splits the count exactly, whatever surrounds it.
        #[test]
        fn halves_at_a_letter_quote_boundary_add_up(
            left in "[ -~\\n\\t é🎉']{0,40}[a-zA-Z]",
            right in "\"[ -~\\n\\t é🎉']{0,40}",
        ) {
            let text = format!("{left}{right}");
            for enc in [Encoding::Cl100kBase, Encoding::O200kBase] {
                prop_assert_eq!(enc.count(&left) + enc.count(&right), enc.count(&text));
            }
        }
    }
}
