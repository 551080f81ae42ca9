//! The exact search shared by JSON and text paging.

/// The largest `i < n` for which `fits(i)` is `Some`, assuming that it holds up to some index
/// and fails after (page size grows with `i`). Starts at the estimate `guess` and gallops, so
/// a good estimate costs two or three exact checks instead of a full binary search.
pub(crate) fn largest_fit<T>(
    n: usize,
    guess: usize,
    mut fits: impl FnMut(usize) -> Option<T>,
) -> Option<T> {
    if n == 0 {
        return None;
    }
    let guess = guess.min(n - 1);
    let (mut lo, mut best, mut hi);
    match fits(guess) {
        Some(b) => {
            (lo, best, hi) = (guess, b, n);
            let mut step = 1;
            while lo + step < hi {
                match fits(lo + step) {
                    Some(b) => {
                        lo += step;
                        best = b;
                        step *= 2;
                    }
                    None => {
                        hi = lo + step;
                        break;
                    }
                }
            }
        }
        None => {
            hi = guess;
            let mut step = 1;
            loop {
                if hi == 0 {
                    return None;
                }
                let i = hi.saturating_sub(step);
                match fits(i) {
                    Some(b) => {
                        (lo, best) = (i, b);
                        break;
                    }
                    None => {
                        hi = i;
                        step *= 2;
                    }
                }
            }
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match fits(mid) {
            Some(b) => {
                lo = mid;
                best = b;
            }
            None => hi = mid,
        }
    }
    Some(best)
}

/// The largest candidate `i < n` whose page fits `budget`, where `est(i)` is the estimated
/// body tokens up to candidate `i` (non-decreasing) and `trial(i)` builds the page and returns
/// it with its exact total tokens and its meta's tokens.
///
/// The first trial, at the estimate's guess, also calibrates the estimate (estimates of a
/// page are consistently off by a ratio: per-unit counts, separators), so the next guess is
/// usually within a candidate or two of the answer.
pub(crate) fn calibrated<T>(
    n: usize,
    est: impl Fn(usize) -> usize,
    budget: usize,
    body_budget: usize,
    mut trial: impl FnMut(usize) -> (T, usize, usize),
) -> Option<T> {
    if n == 0 {
        return None;
    }
    let last_at_most = |limit: f64, scale: f64| {
        (0..n)
            .rev()
            .find(|&i| est(i) as f64 * scale <= limit)
            .unwrap_or(0)
    };
    let g0 = last_at_most(body_budget as f64, 1.0);
    let (first, tokens, meta_tokens) = trial(g0);
    let body_tokens = tokens.saturating_sub(meta_tokens);
    let scale = body_tokens.max(1) as f64 / est(g0).max(1) as f64;
    let g1 = last_at_most(budget.saturating_sub(meta_tokens) as f64, scale);
    let mut fits = |i: usize| {
        let (page, tokens, _) = trial(i);
        (tokens <= budget).then_some(page)
    };
    if tokens <= budget {
        let off = g0 + 1;
        if off >= n {
            return Some(first);
        }
        Some(largest_fit(n - off, g1.saturating_sub(off), |i| fits(i + off)).unwrap_or(first))
    } else {
        if g0 == 0 {
            return None;
        }
        largest_fit(g0, g1.min(g0 - 1), fits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_finds_the_answer_in_few_trials() {
        // Estimates twice the truth: the answer is far past the first guess.
        for limit in 1..200 {
            let mut trials = 0;
            let got = calibrated(
                200,
                |i| 2 * (i + 1),
                100,
                100,
                |i| {
                    trials += 1;
                    (i, if i < limit { 100 } else { 101 }, 0)
                },
            );
            assert_eq!(got, Some(limit - 1));
            assert!(trials <= 18, "{trials}");
        }
        let mut trials = 0;
        let got = calibrated(
            200,
            |i| 2 * (i + 1),
            1000,
            1000,
            |i| {
                trials += 1;
                (i, 10 + i, 10)
            },
        );
        assert_eq!(got, Some(199));
        assert!(trials <= 3, "{trials}");
        assert_eq!(calibrated(5, |i| i, 10, 10, |i| (i, 11, 0)), None);
    }

    #[test]
    fn finds_the_last_fitting_index_from_any_guess() {
        for n in 1..40 {
            for limit in 0..=n {
                for guess in 0..n + 3 {
                    let mut calls = 0;
                    let got = largest_fit(n, guess, |i| {
                        calls += 1;
                        (i < limit).then_some(i)
                    });
                    assert_eq!(
                        got,
                        limit.checked_sub(1),
                        "n={n} limit={limit} guess={guess}"
                    );
                    assert!(calls <= 16);
                }
            }
        }
    }
}
