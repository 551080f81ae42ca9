//! One page within the budget with its structuredContent (a "sheet"): the page a pager lays
//! out, resized until its pieces, its meta item and the structuredContent completed for it
//! ([`super::structured::Plan::for_page`]) fit the budget together. Pure: the caller lays out
//! the page at the tokens asked ([`super::walk::page`] over its cached response).

use serde_json::Value;

use super::model::{Part, SeqPage};
use super::structured::{Plan, ScPage};
use crate::paginate::{PathStep, Position};
use crate::tokens::Encoding;

/// A page of a cached response with its structuredContent, within the budget.
#[derive(Debug)]
pub struct Sheet {
    /// The pieces of documents and the meta item.
    pub page: SeqPage,
    /// The page's structuredContent (`value: None`: none).
    pub sc: ScPage,
    /// Model-visible tokens: the page's (pieces and meta) plus `sc.extra`.
    pub tokens: usize,
}

/// How many smaller pages are tried before the structuredContent gives up its filling.
const TRIES: usize = 8;

/// The page `cut` lays out (given the tokens asked for it) such that its pieces, its meta
/// item and its structuredContent stay within `budget` tokens. `first`: page 1 of the tool's
/// own result (it must carry a structuredContent when the response has one and a schema may ask
/// for it). `structured`: the response's structuredContent plan and its value
/// ([`Plan::orig`]); `None`: it has none, and the page is `cut(budget)`.
///
/// The structuredContent is filled with the members the outputSchema requires (every member
/// when the schema is not known). When that does not fit, smaller pages are tried; when none
/// fits (or the filling alone passes the budget, which smaller pages do not help), the value's
/// arrays are cut further (it then shows fewer elements than the text item; cut below the page
/// it counts in full, and the page beside it is resized to what is left). Failing that: when
/// the tool declares an outputSchema, page 1 keeps the valid value over the budget (validity
/// over budget, the one exception: only when the required members alone, bare, cannot fit
/// beside the page) and later pages carry none; otherwise the page carries the page value
/// itself (no filling, a twin of its text item), or none.
///
/// Work: at most `TRIES + 2` pages are laid out, each `O(page + depth · log depth)` in the
/// core pager, and the structuredContent is completed and cut in `O(value · log cuts)`
/// ([`super::structured::shrink_to`]) for each.
///
/// `None` when `cut` gives none (the response has no such page).
pub fn page_in_budget(
    cut: &mut dyn FnMut(usize) -> Option<SeqPage>,
    structured: Option<(&Plan, &Value)>,
    budget: usize,
    encoding: &Encoding,
    first: bool,
) -> Option<Sheet> {
    let Some((plan, orig)) = structured else {
        let page = cut(budget)?;
        let tokens = page.tokens;
        return Some(Sheet {
            page,
            sc: ScPage::NONE,
            tokens,
        });
    };
    let floor = crate::MIN_BUDGET_TOKENS;
    let mut asked = budget;
    // The page at the whole budget (the first tried).
    let mut whole: Option<SeqPage> = None;
    for attempt in 0..TRIES {
        let page = cut(asked)?;
        let part = plan.doc.and_then(|d| part_of(&page.parts, d));
        let sc = plan.for_page(orig, part, first, true, None, encoding);
        let tokens = page.tokens + sc.extra;
        if tokens <= budget {
            return Some(Sheet { page, sc, tokens });
        }
        // Smaller pages fill in no less (fewer members shown, as many required): a filling
        // past the budget alone fits beside none of them.
        let hopeless = sc.extra >= budget;
        if asked <= floor || attempt + 1 == TRIES || hopeless {
            let whole = whole.unwrap_or_else(|| page.clone());
            return Some(last_resort(
                cut, budget, encoding, first, plan, orig, page, whole,
            ));
        }
        let excess = tokens - budget;
        asked = if attempt == 0 {
            // The filling is at most about the reduced value: leave room for it at once.
            let fill =
                encoding.count(&serde_json::to_string(&plan.reduced(orig)).unwrap_or_default());
            asked
                .saturating_sub(excess + 4)
                .min(budget.saturating_sub(fill + 16))
        } else {
            // A smaller page may need more filling: step down faster.
            asked.saturating_sub(2 * excess + 8)
        }
        .max(floor);
        if attempt == 0 {
            whole = Some(page);
        }
    }
    None
}

/// [`page_in_budget`] when no page with its filled structuredContent fits: `page` is the
/// smallest page tried, `whole` the page at the whole budget.
#[allow(clippy::too_many_arguments)]
fn last_resort(
    cut: &mut dyn FnMut(usize) -> Option<SeqPage>,
    budget: usize,
    encoding: &Encoding,
    first: bool,
    plan: &Plan,
    orig: &Value,
    page: SeqPage,
    whole: SeqPage,
) -> Sheet {
    let floor = crate::MIN_BUDGET_TOKENS;
    // The value cut to the room beside `page`.
    let cut_value = |page: &SeqPage| {
        let room = budget.saturating_sub(page.tokens);
        let part = plan.doc.and_then(|d| part_of(&page.parts, d));
        plan.for_page(orig, part, first, true, Some(room), encoding)
    };
    let sc = cut_value(&page);
    if !sc.carried && sc.value.is_some() {
        // Cut below the page, it counts in full whatever the page: the page takes what is
        // left beside it (larger, or smaller when it did not fit).
        let asked = budget.saturating_sub(sc.extra).max(floor);
        if let Some(resized) = cut(asked) {
            let sc2 = cut_value(&resized);
            let tokens = resized.tokens + sc2.extra;
            let fits_before = page.tokens + sc.extra <= budget;
            if tokens <= budget && (!fits_before || resized.tokens > page.tokens) {
                return Sheet {
                    page: resized,
                    sc: sc2,
                    tokens,
                };
            }
        }
    }
    let tokens = page.tokens + sc.extra;
    if tokens <= budget || (first && plan.declared && plan.valid) {
        // Within the budget; or page 1 of a tool that declares an outputSchema, which keeps a
        // valid value over it (the documented exception).
        return Sheet { page, sc, tokens };
    }
    // Nothing valid fits: the page at the whole budget, with the page value itself when no
    // schema is known to ask for validity (a twin of its text item: no extra tokens), else
    // none (later pages: `read_more` declares no outputSchema).
    let sc = if !plan.valid || (first && !plan.declared) {
        let part = plan.doc.and_then(|d| part_of(&whole.parts, d));
        plan.for_page(orig, part, first, false, None, encoding)
    } else {
        ScPage::NONE
    };
    let sc = if whole.tokens + sc.extra > budget {
        ScPage::NONE
    } else {
        sc
    };
    let tokens = whole.tokens + sc.extra;
    Sheet {
        page: whole,
        sc,
        tokens,
    }
}

/// The body, start and root of the part of document `doc` on a page.
fn part_of(parts: &[Part], doc: usize) -> Option<(&str, &Position, &[PathStep])> {
    parts
        .iter()
        .find(|p| p.item == doc)
        .map(|p| (p.body.as_str(), &p.start, p.root.as_slice()))
}
