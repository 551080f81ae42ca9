//! Pages of a cached response: its documents (text items, embedded resources' texts, a
//! structuredContent no text item carries; see the proxy's `boundary::parts`) as one paged sequence; this
//! module calls them items.
//!
//! A response may hold several items. They are paged as one sequence, in order: a page
//! holds whole items while they fit, and the first item that does not fit is cut by the core
//! [`Pager`] (which never cuts JSON in the middle and shows at least one new unit). Every item
//! stays a separate content item, so following the cursors gives each item back exactly (its
//! pages reassemble with `crate::paginate::reassemble`). When the budget is too
//! small for that (see [`super::form::needs_one_document`]), the caller pages the items as one JSON array.
//!
//! Location of a page (its meta item's `shown`, and in full in `_meta["mcp-budget/page"]`,
//! [`page_meta`]): with several items, `text I/N` for each item on the page, joined by `, `;
//! only the last can be a piece of its item, and then it is followed by a space and the
//! item's own location (`text 1/3, text 2/3 $[0:40]`). A reader splits left to right
//! (`crate::paginate::split_location`), never inside that inner location, so keys
//! or texts holding `, ` or `text 2/3` cannot make it ambiguous. When the items are paged as
//! one JSON array, `_meta` says `"array_of": N`.
//!
//! Budget: the token counts of the page's text items plus the meta item's never exceed the
//! budget (each item is counted on its own, exactly as it goes out).

use crate::paginate::meta::{self, HintTools};
use crate::paginate::{Document, Page, PageError, PageInfo, Pager, Position};
use crate::table::TablePager;
use crate::tokens::Encoding;
use serde_json::{Map, Value};

use super::book::PageBook;
use super::form::doc_form;
use super::model::{PAGE_META_KEY, Part, SeqPage, SeqPos, ToolNames, Total};

/// A cached response as [`page`] and [`page_meta`] read it: what was decided when it was
/// cached. The proxy's store entry implements it.
pub trait Cached {
    /// The response id (the cursors' owner).
    fn id(&self) -> &str;
    /// Tokens of each document's whole rendering (as [`doc_form`] renders it), in order.
    fn doc_tokens(&self) -> &[usize];
    /// Significant digits floats are rounded to (0: exact).
    fn precision(&self) -> u32;
    /// Whether JSON bodies go out in the table form (`tables = "auto"`).
    fn tables(&self) -> bool;
    /// `Some(N)` when the response's N documents are paged as one JSON array.
    fn array_of(&self) -> Option<usize>;
    /// The total the meta of the page at `ordinal` (0: page 1) shows (tokens of `encoding`).
    fn total_for_page(&self, ordinal: usize, encoding: &Encoding) -> Total;
}

/// The value of `result._meta["mcp-budget/page"]` for `page` of response `id`:
/// `{"response_id","page" (0 = page 1: the page's ordinal, not its cursor's number),"location",
/// "next_cursor" (absent on the last page),"total_tokens" (exact; on page 1 of a response with a
/// document over the budget `"total_tokens_estimate"` instead, see [`Total`]),"array_of" (only when the response's
/// N documents are paged as one JSON array: N),"tables" (only with `tables = "auto"`: `true`;
/// each JSON body is then in the table form: `crate::table::decode` it before
/// merging)}`.
///
/// `location` is the page's full location: for a response of one document, that document's
/// (the grammar of `crate::paginate`); for several, `text I/N` for each document
/// the page carries, joined by `, `, the last followed by a space and its inner location when
/// the page holds only a piece of it (`text 1/3, text 2/3 $[0:40]`; parsed by
/// `crate::paginate::split_location`, which never looks inside the inner location).
pub fn page_meta(id: &str, page: &SeqPage, entry: &impl Cached) -> Value {
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
    if let Some(n) = entry.array_of() {
        m.insert("array_of".into(), Value::from(n as u64));
    }
    if entry.tables() {
        m.insert("tables".into(), Value::Bool(true));
    }
    Value::Object(m)
}

/// Puts `page_meta` into `result._meta["mcp-budget/page"]`, keeping the other members of an
/// upstream `_meta` object (a `_meta` that is not an object is left as it came).
pub fn put_page_meta(result: &mut Map<String, Value>, page_meta: Value) {
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
pub fn render_meta(
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
        m.hint.push_str(&super::model::refs_hint(id));
    }
    serde_json::to_string(&m).unwrap_or_default()
}

/// Tokens kept free for the meta item while whole items are placed: a meta with a long
/// cursor and a long `shown`, plus slack for BPE's non-additivity.
pub fn meta_reserve(
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

/// `shown` of one part: the pager's own for a response of one item, else prefixed with the
/// item's number.
fn part_shown(n: usize, item: usize, inner: Option<&str>) -> String {
    match (n, inner) {
        (1, Some(s)) => s.to_owned(),
        (1, None) => "$".to_owned(),
        (_, Some(s)) => format!("text {}/{n} {s}", item + 1),
        (_, None) => format!("text {}/{n}", item + 1),
    }
}

/// Page number `k` of the response `entry` whose documents are `docs`, with `budget` tokens;
/// `book` (the response's, see [`PageBook`]) learns where the next page starts.
///
/// Returns `None` when the response has no page `k` (never computed) or a position in the
/// book does not belong to its document.
pub fn page(
    entry: &impl Cached,
    docs: &[Document],
    book: &mut PageBook,
    k: usize,
    budget: usize,
    encoding: &Encoding,
    names: &ToolNames,
) -> Option<SeqPage> {
    let (mut item, mut pos): SeqPos = book.positions.get(k)?.clone();
    let next_k = book
        .next_of
        .get(&(k, budget))
        .copied()
        .unwrap_or(book.positions.len());
    let n = docs.len();
    let ordinal = book.ordinals.get(k).copied().unwrap_or(k);
    let total = entry.total_for_page(ordinal, encoding);
    let reserve = meta_reserve(entry.id(), n, total, encoding, names);

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
        let item_tokens = entry.doc_tokens()[item];
        if pos.is_start() && item_tokens + reserve <= remaining {
            // The whole item, and still room for the meta.
            parts.push(Part {
                item,
                body: doc_form(doc, entry.precision(), encoding, entry.tables()).0,
                start: Position::start(),
                root: Vec::new(),
            });
            shown.push(part_shown(n, item, None));
            location.push(part_shown(n, item, None));
            used += item_tokens;
            item += 1;
            pos = Position::start();
            continue;
        }
        if !parts.is_empty() && remaining < crate::MIN_BUDGET_TOKENS + reserve {
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
        let pager = Cutter::new(entry.tables(), encoding, pager_budget, entry.precision());
        let more_items = item + 1 < n;
        let prefix = shown.clone();
        let mut render = |info: &PageInfo<'_>| {
            let has_next = info.has_next || more_items;
            let mut all = prefix.clone();
            all.push(part_shown(n, item, Some(info.shown)));
            render_meta(
                entry.id(),
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
                shown.push(part_shown(n, item, Some(&p.shown)));
                location.push(part_shown(n, item, Some(&p.location)));
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
                shown.push(part_shown(n, item, None));
                location.push(part_shown(n, item, None));
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
                entry.id(),
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
        .then(|| meta::cursor(entry.id(), next_k as u64));
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
