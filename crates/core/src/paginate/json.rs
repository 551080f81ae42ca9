//! Pages of a JSON value: a window of the document in document order, wrapped in the skeleton
//! of its ancestors (see the module docs of [`super`] for the rules).
//!
//! How a page is found, without tokenizing the whole payload:
//! 1. **walk**: from the start position, visit units in document order; a unit that fits the
//!    remaining budget (estimated by counting its own compact text, or, inside a unit the walk
//!    counted and then entered, by its size at that unit's tokens per byte where that decides
//!    clearly) is taken whole, one that does not is descended into (containers) or split (long
//!    strings). Each unit taken gives a candidate end position with an estimated cumulative
//!    cost. The walk stops a little past the body budget, so only about one page of the
//!    document is ever serialized.
//! 2. **verify**: the estimates are not exact (BPE counts are not additive), so the page for a
//!    candidate end is built, serialized and counted exactly together with its meta text (the
//!    trials share their prefix counts: `prefix::Trials`); a binary search over the candidates
//!    finds the largest page that fits.
//! 3. **root deeper**: when the skeleton alone would eat more than a quarter of the body budget
//!    (deep paths with many short scalars), the page body becomes the sub-tree at a deeper path.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::page::{Page, PageInfo, Position};
use super::path::{self, KEY_BIT, child, key_offset, node_at, normalize, number_text};
use super::prefix::Trials;
use super::window::write_window;
use crate::compact;
use crate::tokens::Encoding;

/// Strings whose compact text is longer than this many bytes may be split across pages.
const LONG_STRING_BYTES: usize = 64;
/// Siblings of at most this many bytes of compact text are estimated in runs.
const SMALL_UNIT_BYTES: usize = 512;
/// About this many bytes of small siblings are counted (or estimated) at once.
const RUN_BYTES: usize = 2048;
/// A text of more than this many bytes per token of budget is assumed not to fit (it is then
/// descended into or split rather than serialized whole): keeps work proportional to the page.
const BYTES_PER_TOKEN_CAP: usize = 16;
/// A value whose estimated compact size passes this many bytes per token of room is not
/// serialized to be counted: it is descended into (compact JSON averages 3 to 4 bytes per
/// token). Smaller than `BYTES_PER_TOKEN_CAP` because sizing a big sub-tree walks it up to the
/// cap, at every level the walk descends through.
const APPROX_BYTES_PER_TOKEN: usize = 6;

/// The compact byte length of `v` (unrounded numbers, unescaped strings: an estimate), or
/// `None` as soon as it passes `cap`. Work is O(min(size, cap)).
fn approx_len(v: &Value, cap: usize) -> Option<usize> {
    fn go(v: &Value, cap: usize, acc: &mut usize) -> bool {
        *acc += match v {
            Value::Null => 4,
            Value::Bool(_) => 5,
            Value::Number(n) => n.as_str().len(),
            Value::String(s) => s.len() + 2,
            Value::Array(a) => {
                *acc += 1 + a.len();
                if *acc > cap {
                    return false;
                }
                for c in a {
                    if !go(c, cap, acc) {
                        return false;
                    }
                }
                0
            }
            Value::Object(m) => {
                *acc += 1 + m.len();
                for (k, c) in m {
                    *acc += k.len() + 3;
                    if *acc > cap || !go(c, cap, acc) {
                        return false;
                    }
                }
                0
            }
        };
        *acc <= cap
    }
    let mut acc = 0;
    go(v, cap, &mut acc).then_some(acc)
}

/// A candidate end of the page being built, with the estimated tokens up to it.
#[derive(Debug)]
struct Cand {
    end: Option<Vec<usize>>,
    est: usize,
}

/// A page found for one candidate, with its exact count.
struct Built {
    body: String,
    meta: String,
    tokens: usize,
    meta_tokens: usize,
    shown: String,
    end: Option<Vec<usize>>,
}

/// An estimate of a unit's tokens inside a unit the walk counted and then descended into.
#[derive(Clone, Copy)]
struct Guess {
    /// Tokens per byte of compact text of the unit around.
    density: f64,
    /// The room left before the budget line, in tokens.
    to_target: usize,
}

impl Guess {
    /// The estimated tokens of a compact text of `bytes` bytes.
    fn tokens(self, bytes: usize) -> usize {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let tokens = (bytes as f64 * self.density).ceil() as usize;
        tokens
    }
}

/// Pages one JSON document.
#[derive(Clone, Copy)]
pub(crate) struct JsonPaging<'a> {
    pub(crate) doc: &'a Value,
    pub(crate) enc: &'a Encoding,
    pub(crate) budget: usize,
    pub(crate) precision: u32,
    /// Longest location written in full in `shown`, in chars.
    pub(crate) loc_max: usize,
}

impl JsonPaging<'_> {
    fn loc_max(&self) -> usize {
        self.loc_max
    }

    fn text(&self, v: &Value) -> String {
        compact::to_string(v, self.precision)
    }

    /// Tokens of `text` if at most `limit`, without tokenizing texts that are obviously longer.
    fn count_upto(&self, text: &str, limit: usize) -> Option<usize> {
        if text.len() > limit.saturating_mul(BYTES_PER_TOKEN_CAP).max(64) {
            return None;
        }
        self.enc.count_till_limit(text, limit)
    }

    /// Estimated tokens of `v` (as a member `key` when given, plus a separator) and the bytes
    /// of its compact text (the key's included), or `None` when it does not fit `remaining`.
    ///
    /// Counted, unless `guess` gives the tokens per byte of compact text of a unit around it
    /// (counted already) and the room left before the budget line: then the estimate stands
    /// where it decides clearly, at most half the room (the unit is taken) or over the room (it
    /// is descended into, which costs nothing but finer candidates); in between the unit is
    /// counted, or one denser than its surroundings would be taken whole and end the page
    /// before it.
    fn fit_cost(
        &self,
        key: Option<&str>,
        v: &Value,
        remaining: usize,
        guess: Option<Guess>,
    ) -> Option<(usize, usize)> {
        let cap = remaining.saturating_mul(APPROX_BYTES_PER_TOKEN).max(64);
        approx_len(v, cap)?;
        let mut text = match key {
            Some(k) => {
                let mut t = serde_json::to_string(k).unwrap_or_default();
                t.push(':');
                t
            }
            None => String::new(),
        };
        text.push_str(&self.text(v));
        if let Some(g) = guess {
            let tokens = g.tokens(text.len());
            if tokens <= g.to_target / 2 || tokens > g.to_target {
                return (tokens <= remaining).then_some((tokens + 1, text.len()));
            }
        }
        self.count_upto(&text, remaining)
            .map(|c| (c + 1, text.len()))
    }

    /// The page that starts at `s` (a canonical position; empty = the document start).
    pub(crate) fn page(&self, s: &[usize], meta: &mut dyn FnMut(&PageInfo<'_>) -> String) -> Page {
        // Every exact count of a page body: they share long prefixes (see `Trials`).
        let trials = Trials::new(self.enc);
        if s.is_empty() {
            let cap = self.budget.saturating_mul(BYTES_PER_TOKEN_CAP);
            if approx_len(self.doc, cap).is_some() {
                let body = self.text(self.doc);
                if let Some(tokens) = trials.count_upto(&body, self.budget) {
                    return self.finish(s, &[], None, body, None, tokens, "$".into(), false);
                }
            }
        }
        // The meta text varies a little with `shown`; estimate it with a plausible one.
        let guess = format!(
            "{} to {}",
            path::shown(self.doc, s, Some(s), &[], self.loc_max()),
            "$[00000]"
        );
        let meta_est = self.enc.count(&meta(&PageInfo {
            shown: &guess,
            has_next: true,
            next_start_line: None,
        })) + 4;
        let body_budget = self.budget.saturating_sub(meta_est).max(1);

        // Page roots, shallowest first: prefixes of `s` (a string node is the deepest), or, on
        // page 1, the chain of first children (nothing precedes them, so a page 1 rooted there
        // is wrapped back by the merge rule without a skeleton).
        let roots: Vec<Vec<usize>> = if s.is_empty() {
            let mut chain = vec![Vec::new()];
            let mut node = self.doc;
            let mut r = Vec::new();
            while let Some((_, c)) = child(node, 0) {
                r.push(0);
                chain.push(r.clone());
                node = c;
            }
            chain
        } else {
            // A page that starts inside a key is rooted at most at the key's object; inside a
            // string or number, at most at that string or number.
            let max_root = if path::ends_in_key(s) {
                s.len() - 2
            } else {
                match s.split_last().and_then(|(_, p)| node_at(self.doc, p)) {
                    Some(Value::String(_) | Value::Number(_)) => s.len() - 1,
                    _ => s.len(),
                }
            };
            (0..=max_root).map(|k| s[..k].to_vec()).collect()
        };
        // The shallowest root whose skeleton takes at most a quarter of the body budget.
        let (first_root, shells) = self.first_root(&roots, s, body_budget / 4);
        for (k, r) in roots.iter().enumerate().skip(first_root) {
            let shell = match shells.get(&k) {
                Some(&t) => t,
                None => self.shell_tokens(r, s),
            };
            // Estimates can be off: when even the first candidate is over, walk again with a
            // smaller limit (units then get split or descended into) before rooting deeper.
            let mut limit = body_budget + body_budget / 4 + 16;
            loop {
                let cands = self.walk(r, s, shell, body_budget, limit);
                if let Some(b) = self.search(r, s, &cands, body_budget, meta, &trials) {
                    return self.finish(
                        s,
                        r,
                        b.end,
                        b.body,
                        Some(b.meta),
                        b.tokens,
                        b.shown,
                        false,
                    );
                }
                if limit <= 1 {
                    break;
                }
                limit /= 2;
            }
        }
        // Nothing fits even alone at the deepest root. Long locations make the meta big at
        // small budgets: try again with the shortest ones.
        if self.loc_max > path::LOC_TINY_CHARS {
            let tiny = JsonPaging {
                loc_max: path::LOC_TINY_CHARS,
                ..*self
            };
            return tiny.page(s, meta);
        }
        // An indivisible unit (a huge number) bigger than the budget. Show it alone, flagged,
        // rather than lose it.
        let r = roots.last().map_or(&[][..], Vec::as_slice);
        let cands = self.walk(r, s, 0, 0, 0);
        let end = cands.into_iter().next().and_then(|c| c.end);
        let b = self.build_page(r, s, end, meta, &trials);
        self.finish(s, r, b.end, b.body, Some(b.meta), b.tokens, b.shown, true)
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        s: &[usize],
        r: &[usize],
        end: Option<Vec<usize>>,
        body: String,
        meta: Option<String>,
        tokens: usize,
        shown: String,
        oversized: bool,
    ) -> Page {
        Page {
            // Pages are never deeper than their document; NaN/Infinity literals it kept come
            // back in the Python dialect.
            value: parse_unbounded(&body)
                .or_else(|| crate::dialect::parse(body.as_bytes()).ok().map(|p| p.value)),
            location: path::shown(self.doc, s, end.as_deref(), r, usize::MAX),
            body,
            meta,
            tokens,
            shown,
            start: Position::json(s.to_vec()),
            next: end.map(Position::json),
            root: path::path_steps(self.doc, r),
            oversized,
        }
    }

    /// The index in `roots` (prefixes of `s`, shallowest first) of the shallowest root whose
    /// skeleton takes at most `quarter` tokens, or of the last root when none does; with the
    /// skeleton tokens it counted within `quarter`, by root index (the others are counted
    /// whole only if the page is rooted there).
    ///
    /// A deeper root's skeleton is part of a shallower one's, so the counts fall (up to BPE's
    /// non-additivity) as roots deepen: a binary search finds the root with `O(log depth)`
    /// counts of `O(depth)` text each. (Trying the roots one by one costs `O(depth²)` per page,
    /// `O(depth³)` over a document nested hundreds of levels deep.) The root found always has a
    /// skeleton within `quarter` unless the last one does not, and the root above it (if any)
    /// does not.
    fn first_root(
        &self,
        roots: &[Vec<usize>],
        s: &[usize],
        quarter: usize,
    ) -> (usize, std::collections::HashMap<usize, usize>) {
        // Skeletons are counted only up to `quarter` (one past a long run of short members
        // before the start is long: counting it whole on every page is quadratic).
        let mut within: std::collections::HashMap<usize, Option<usize>> =
            std::collections::HashMap::new();
        let mut over = |k: usize| {
            within
                .entry(k)
                .or_insert_with(|| {
                    roots
                        .get(k)
                        .map_or(Some(0), |r| self.shell_tokens_upto(r, s, quarter))
                })
                .is_none()
        };
        let last = roots.len().saturating_sub(1);
        let found = if !over(0) || last == 0 {
            0
        } else if over(last) {
            last
        } else {
            // over(lo), !over(hi).
            let (mut lo, mut hi) = (0, last);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if over(mid) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            hi
        };
        let shells = within
            .into_iter()
            .filter_map(|(k, t)| Some((k, t?)))
            .collect();
        (found, shells)
    }

    /// Tokens of the skeleton alone of a page rooted at `r` that starts at `s`, when at most
    /// `limit`.
    fn shell_tokens_upto(&self, r: &[usize], s: &[usize], limit: usize) -> Option<usize> {
        if r.len() >= s.len() {
            return Some(0);
        }
        let Some(node) = node_at(self.doc, r) else {
            return Some(0);
        };
        let rel = &s[r.len()..];
        let mut shell = String::new();
        write_window(node, Some(rel), Some(rel), self.precision, &mut shell);
        if shell.len() > limit.saturating_mul(BYTES_PER_TOKEN_CAP).max(64) {
            return None;
        }
        self.enc.count_till_limit(&shell, limit)
    }

    /// Tokens of the skeleton alone of a page rooted at `r` that starts at `s`.
    fn shell_tokens(&self, r: &[usize], s: &[usize]) -> usize {
        // A page that starts at its root's beginning (R = S, or page 1) has no skeleton.
        if r.len() >= s.len() {
            return 0;
        }
        let Some(node) = node_at(self.doc, r) else {
            return 0;
        };
        let rel = &s[r.len()..];
        let mut shell = String::new();
        write_window(node, Some(rel), Some(rel), self.precision, &mut shell);
        self.enc.count(&shell)
    }

    /// The end of the sub-tree at `r`: where a page rooted at `r` must stop.
    fn root_end(&self, r: &[usize]) -> Option<Vec<usize>> {
        let mut p = r.to_vec();
        let l = p.last_mut()?;
        *l += 1;
        normalize(self.doc, p)
    }

    /// Candidate ends of a page rooted at `r` starting at `s`, in document order, until the
    /// estimate passes `limit` (at least one candidate, so every page makes progress).
    fn walk(
        &self,
        r: &[usize],
        s: &[usize],
        shell: usize,
        target: usize,
        limit: usize,
    ) -> Vec<Cand> {
        let target = target.min(limit);
        let mut cands: Vec<Cand> = Vec::new();
        // Page 1 rooted below `$` starts at its root, which nothing precedes.
        let mut pos = if s.len() < r.len() {
            r.to_vec()
        } else {
            s.to_vec()
        };
        let mut est = shell;
        // Whether the key of the member at `pos` was already taken (in pieces): what is left
        // of the member is its value.
        let mut key_done = false;
        // A unit that fit the limit but was descended into (it crosses the budget line), while
        // the walk is inside it: the depth of its children and its tokens per byte. Its
        // descendants are estimated by their size instead of being counted again (a deep
        // tree would be counted once per level).
        let mut inside: Option<(usize, f64)> = None;
        loop {
            if !cands.is_empty() && est > limit {
                break;
            }
            if inside.is_some_and(|(depth, _)| pos.len() < depth) {
                inside = None;
            }
            let density = inside.map(|(_, d)| d);
            let to_target = target.saturating_sub(est).max(1);
            let remaining = limit.saturating_sub(est).max(1);
            // What is left of the body budget proper (`to_target`, above): a unit that would
            // cross it is descended into, so that candidates are fine-grained where the page
            // will end.
            if let Some(o) = pos.last().copied().and_then(key_offset) {
                // Inside a long key: pieces at character boundaries, then its value.
                let member = &pos[..pos.len() - 1];
                let Some((&i, obj_steps)) = member.split_last() else {
                    break;
                };
                let Some(Value::Object(obj)) = node_at(self.doc, obj_steps) else {
                    break;
                };
                let Some((k, _)) = obj.iter().nth(i) else {
                    break;
                };
                // The rest of a key of the same object this page starts inside: shown on this
                // page too, beside the first piece of this one.
                let beside = s.split_last().and_then(|(&last, rest)| {
                    let o0 = key_offset(last)?;
                    let (&i0, steps) = rest.split_last()?;
                    if i0 == i || steps != obj_steps {
                        return None;
                    }
                    obj.keys().nth(i0)?.get(o0..)
                });
                let allow = |b: usize| key_cut_ok(obj, i, k, o, b, beside);
                if !self.string_pieces(k, o, &pos, KEY_BIT, &mut est, to_target, &mut cands, &allow)
                {
                    break;
                }
                pos.pop();
                key_done = true;
                continue;
            }
            let parent = pos.split_last().and_then(|(_, p)| node_at(self.doc, p));
            let piece_text: Option<Cow<'_, str>> = match parent {
                Some(Value::String(st)) => Some(Cow::Borrowed(st.as_str())),
                Some(Value::Number(n)) => Some(number_text(n, self.precision)),
                _ => None,
            };
            if pos.len() > r.len()
                && let Some(st) = piece_text
            {
                // Inside a long string or number: pieces at character boundaries.
                let o = pos.last().copied().unwrap_or(0);
                if !self.string_pieces(&st, o, &pos, 0, &mut est, to_target, &mut cands, &|_| true)
                {
                    break;
                }
                pos.pop();
                key_done = false;
                if self.take(r, &mut pos, &mut est, 0, &mut cands) {
                    break;
                }
                continue;
            }
            // Runs of small siblings are counted in one tokenizer call (per-call overhead
            // dominates on many small elements), or estimated inside a counted unit, their
            // tokens spread over them by bytes.
            if pos.len() > r.len()
                && !key_done
                && let Some(p) = parent
                && let Some(run) =
                    self.small_run(p, pos.last().copied().unwrap_or(0), to_target, density)
            {
                let mut done = false;
                for share in run {
                    if self.take(r, &mut pos, &mut est, share, &mut cands) {
                        done = true;
                        break;
                    }
                }
                if done {
                    break;
                }
                continue;
            }
            let (key, node) = if pos.len() == r.len() {
                match node_at(self.doc, &pos) {
                    Some(n) => (None, n),
                    None => break,
                }
            } else {
                match parent.and_then(|p| child(p, pos.last().copied().unwrap_or(0))) {
                    Some((k, n)) => (k.filter(|_| !key_done), n),
                    None => break,
                }
            };
            let splittable = match node {
                Value::Array(a) => !a.is_empty(),
                Value::Object(m) => !m.is_empty(),
                Value::String(st) => st.len() + 2 > LONG_STRING_BYTES,
                Value::Number(n) => number_text(n, self.precision).len() > LONG_STRING_BYTES,
                _ => false,
            };
            // A key too long to sit on the page whole beside some of its value is cut too.
            let long_key = key.filter(|k| k.len() + 2 > LONG_STRING_BYTES);
            // A unit that crosses the budget line is split (descended into) only when it is
            // big: small objects (records, rows) stay whole and the page ends between them.
            let small = (target / 16).max(48).min(target / 4);
            let guess = density
                .filter(|_| splittable)
                .map(|density| Guess { density, to_target });
            let fit = self.fit_cost(key, node, remaining.max(small), guess);
            match fit {
                Some((cost, _))
                    if cost <= remaining
                        && (cost <= to_target
                            || !(splittable || long_key.is_some())
                            || cost <= small) =>
                {
                    key_done = false;
                    if self.take(r, &mut pos, &mut est, cost, &mut cands) {
                        break;
                    }
                    continue;
                }
                Some((cost, _)) if splittable && cost <= small && !cands.is_empty() => break,
                _ => {}
            }
            if let Some(k) = long_key {
                let quoted = serde_json::to_string(k).unwrap_or_default();
                let fits = self
                    .count_upto(&quoted, to_target)
                    .is_some_and(|c| c + 2 < to_target);
                if !fits {
                    pos.push(KEY_BIT);
                    continue;
                }
            }
            if splittable {
                est += 1 + key.map_or(0, |k| self.enc.count(k) + 2);
                key_done = false;
                pos.push(0);
                if inside.is_none()
                    && let Some((cost, bytes)) = fit
                {
                    #[allow(clippy::cast_precision_loss)]
                    let d = cost as f64 / bytes.max(1) as f64;
                    inside = Some((pos.len(), d));
                }
                continue;
            }
            if !cands.is_empty() {
                break;
            }
            // An indivisible unit over the budget: it still gets its page.
            key_done = false;
            if self.take(r, &mut pos, &mut est, limit + 1, &mut cands) {
                break;
            }
        }
        cands
    }

    /// The estimated tokens of each sibling of a run of at least two small siblings of
    /// `parent` from index `i` (about `RUN_BYTES` of compact text in all) when the whole run
    /// fits `room`; `None` otherwise (the walk then goes one element at a time). Counted, or
    /// with `density` (tokens per byte of a unit around them, counted already) estimated.
    fn small_run(
        &self,
        parent: &Value,
        i: usize,
        room: usize,
        density: Option<f64>,
    ) -> Option<Vec<usize>> {
        let children: Box<dyn Iterator<Item = (Option<&str>, &Value)>> = match parent {
            Value::Array(a) => Box::new(a.get(i..)?.iter().map(|c| (None, c))),
            Value::Object(m) => Box::new(m.iter().skip(i).map(|(k, c)| (Some(k.as_str()), c))),
            _ => return None,
        };
        let mut text = String::new();
        let mut ends = Vec::new();
        for (key, c) in children {
            if text.len() >= RUN_BYTES || approx_len(c, SMALL_UNIT_BYTES).is_none() {
                break;
            }
            if let Some(k) = key {
                text.push_str(&serde_json::to_string(k).unwrap_or_default());
                text.push(':');
            }
            text.push_str(&self.text(c));
            text.push(',');
            ends.push(text.len());
        }
        if ends.len() < 2 {
            return None;
        }
        // An estimate that leaves half the room stands (see `fit_cost`); otherwise the run is
        // counted.
        let guess = density
            .map(|density| Guess {
                density,
                to_target: room,
            })
            .map(|g| g.tokens(text.len()))
            .filter(|&t| t <= room / 2);
        let total = match guess {
            Some(t) => t,
            None => self.count_upto(&text, room)?,
        };
        let mut shares = Vec::with_capacity(ends.len());
        let mut prev_tokens = 0;
        for e in ends {
            let t = total * e / text.len();
            shares.push(t - prev_tokens);
            prev_tokens = t;
        }
        Some(shares)
    }

    /// Takes the unit at `pos` whole (estimated at `cost` tokens): records the candidate after
    /// it and moves `pos` there. Returns whether the page root is done.
    fn take(
        &self,
        r: &[usize],
        pos: &mut Vec<usize>,
        est: &mut usize,
        cost: usize,
        cands: &mut Vec<Cand>,
    ) -> bool {
        *est += cost;
        let next = if pos.len() <= r.len() {
            self.root_end(r)
        } else {
            let mut p = pos.clone();
            if let Some(l) = p.last_mut() {
                *l += 1;
            }
            normalize(self.doc, p)
        };
        // Closing brackets of the containers left.
        *est += pos.len().saturating_sub(next.as_ref().map_or(0, Vec::len));
        let done = match &next {
            None => true,
            Some(p) => p.len() <= r.len() || !p.starts_with(r),
        };
        cands.push(Cand {
            end: next.clone(),
            est: *est,
        });
        if let Some(n) = next.filter(|_| !done) {
            *pos = n;
        }
        done
    }

    /// Candidate ends inside the string `st` (a string value, a number's spelling or a key)
    /// from byte `o`; each end step is `flag | b`, for the byte offsets `b` that `allow`.
    /// Returns whether the rest of the string was taken (the walk goes on after it).
    #[allow(clippy::too_many_arguments)]
    fn string_pieces(
        &self,
        st: &str,
        o: usize,
        pos: &[usize],
        flag: usize,
        est: &mut usize,
        remaining: usize,
        cands: &mut Vec<Cand>,
        allow: &dyn Fn(usize) -> bool,
    ) -> bool {
        let rest = st.get(o..).unwrap_or_default();
        let quoted = |t: &str| serde_json::to_string(t).unwrap_or_default();
        // (Length first: never escape a whole multi-megabyte string to learn it is too long.)
        if rest.len() <= remaining.saturating_mul(BYTES_PER_TOKEN_CAP)
            && let Some(c) = self.count_upto(&quoted(rest), remaining)
        {
            *est += c;
            return true;
        }
        // Bytes per token of this string, from a sample about the size of the piece.
        let sample_end = floor_boundary(rest, (remaining * 4 + 16).min(rest.len()));
        let sample = &rest[..sample_end.max(next_boundary(rest, 0))];
        let sample_tokens = self.enc.count(&quoted(sample)).max(1);
        let target = (remaining * sample.len() / sample_tokens).max(1);
        let depth = pos.len();
        let mut last = o;
        for k in 1..=40usize {
            let mut b = o + floor_boundary(rest, (target * k / 32).min(rest.len()));
            if b <= last {
                b = o + next_boundary(rest, last - o);
            }
            // A few cuts are not allowed (a key piece equal to a sibling key): the next one is.
            let mut tries = 0;
            while b < st.len() && !allow(b) && tries < 256 {
                b = o + next_boundary(rest, b - o);
                tries += 1;
            }
            if b < st.len() && !allow(b) {
                last = b;
                continue;
            }
            if b >= st.len() {
                // The rest of the string is within reach: the walk goes on after it.
                *est += remaining * k / 32;
                return true;
            }
            last = b;
            let mut end = pos.to_vec();
            end[depth - 1] = flag | b;
            cands.push(Cand {
                end: Some(end),
                est: *est + remaining * k / 32,
            });
        }
        *est += remaining * 40 / 32;
        false
    }

    /// Exact search for the largest candidate whose page fits the budget.
    fn search(
        &self,
        r: &[usize],
        s: &[usize],
        cands: &[Cand],
        body_budget: usize,
        meta: &mut dyn FnMut(&PageInfo<'_>) -> String,
        trials: &Trials<'_>,
    ) -> Option<Built> {
        super::search::calibrated(
            cands.len(),
            |i| cands[i].est,
            self.budget,
            body_budget,
            |i| {
                let b = self.build_page(r, s, cands[i].end.clone(), meta, trials);
                let (tokens, meta_tokens) = (b.tokens, b.meta_tokens);
                (b, tokens, meta_tokens)
            },
        )
    }

    /// The page rooted at `r` from `s` to `end`, counted exactly with its meta (the body
    /// through `trials`).
    fn build_page(
        &self,
        r: &[usize],
        s: &[usize],
        end: Option<Vec<usize>>,
        meta: &mut dyn FnMut(&PageInfo<'_>) -> String,
        trials: &Trials<'_>,
    ) -> Built {
        let node = node_at(self.doc, r).unwrap_or(self.doc);
        let rel_s = &s[r.len().min(s.len())..];
        let rel_e = end
            .as_deref()
            .filter(|e| e.len() > r.len() && e.starts_with(r))
            .map(|e| &e[r.len()..]);
        let mut body = String::new();
        write_window(
            node,
            (!rel_s.is_empty()).then_some(rel_s),
            rel_e,
            self.precision,
            &mut body,
        );
        let shown = path::shown(self.doc, s, end.as_deref(), r, self.loc_max());
        let m = meta(&PageInfo {
            shown: &shown,
            has_next: end.is_some(),
            next_start_line: None,
        });
        let meta_tokens = self.enc.count(&m);
        // One exact count: a page that fits is counted whole either way, and one over `room`
        // would be counted again after `count_till_limit` stopped (the exact figure calibrates
        // the search and flags an oversized page), so stopping early never saves work here.
        let tokens = trials.count(&body) + meta_tokens;
        Built {
            body,
            meta: m,
            tokens,
            meta_tokens,
            shown,
            end,
        }
    }
}

/// Whether member `i` of `obj`, whose key is `k`, may be cut at byte `b` of its key on a page
/// that shows the key from byte `o`. Keys shown side by side must differ, or the page's object
/// loses a member: no piece (`k[o..b]` on this page, `k[b..]` as the next page could show it)
/// may equal another key of `obj`, nor may this page's piece equal `beside`, the rest of
/// another key of `obj` that the page starts inside. And the key as merged so far (`k[..b]`,
/// what a client holds after this page) may not equal another key of `obj` either: the merge
/// rule continues its object's last key, so a partial key equal to an earlier member's would
/// overwrite that member.
fn key_cut_ok(
    obj: &Map<String, Value>,
    i: usize,
    k: &str,
    o: usize,
    b: usize,
    beside: Option<&str>,
) -> bool {
    let (Some(head), Some(tail), Some(merged)) = (k.get(o..b), k.get(b..), k.get(..b)) else {
        return false;
    };
    beside != Some(head)
        && !obj
            .keys()
            .enumerate()
            .any(|(j, other)| j != i && (other == head || other == tail || other == merged))
}

/// `body` parsed back as JSON without serde_json's recursion limit of 128 (a page is no deeper
/// than the document it comes from).
fn parse_unbounded(body: &str) -> Option<Value> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_str(body);
    de.disable_recursion_limit();
    let v = Value::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(v)
}

/// The largest character boundary of `s` at or below `b`.
pub(crate) fn floor_boundary(s: &str, b: usize) -> usize {
    let mut b = b.min(s.len());
    while b > 0 && !s.is_char_boundary(b) {
        b -= 1;
    }
    b
}

/// The first character boundary of `s` after `b` (or `s.len()`).
pub(crate) fn next_boundary(s: &str, b: usize) -> usize {
    let mut b = (b + 1).min(s.len());
    while b < s.len() && !s.is_char_boundary(b) {
        b += 1;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn approx_len_stops_at_the_cap() {
        let v = json!({"a": [1, 2, 3], "b": "xyz"});
        assert!(approx_len(&v, 1000).is_some());
        assert!(approx_len(&v, 5).is_none());
    }
}
