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

#[cfg(test)]
mod tests {
    use super::*;

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
