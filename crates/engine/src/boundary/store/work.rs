//! Memory that work on a result holds outside the cached entries (issue 33): the tree a
//! background thread is parsing from a kept text, the renderings a counting thread holds, a
//! tree shared with a thread that counts it after the store has let it go, a result being
//! shaped on the full path. Each is held as a [`Held`] against the store's bound: making room
//! counts it beside the entries' resident bytes, and new work that would pass the bound waits
//! ([`Work::admit`]) until earlier work is done: memory then grows with the bound, not with
//! the rate of calls.
//!
//! Work is admitted at once when nothing else is held, whatever its size (a single result
//! larger than the whole bound is shaped and parsed as before, alone), and a thread that
//! already holds work is never made to wait (its nested work is counted at once), so waiting
//! always ends: only threads holding nothing wait, for holders that never wait for work
//! (callers take a [`Held`] before any lock of an entry and outside
//! [`super::Entry::total_tokens`]). A [`Held`] is released on the thread that took it (it is
//! not `Send`).

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

thread_local! {
    /// Bytes the work of this thread holds.
    static MINE: Cell<usize> = const { Cell::new(0) };
}

/// How long admission waits before checking the cache again: the sweeper and other threads
/// free entries' memory without waking waiters (only released work does).
const RECHECK: Duration = Duration::from_millis(50);

/// Bytes held by work in progress, and waiters for it to go down.
#[derive(Debug, Default)]
pub(crate) struct Work {
    held: Mutex<usize>,
    released: Condvar,
}

impl Work {
    /// Bytes held now.
    pub(crate) fn held(&self) -> usize {
        self.held.lock().map(|h| *h).unwrap_or(0)
    }

    /// Holds `bytes` once `fits(held now)` says the cache and the work held fit beside them
    /// (the caller makes room in `fits`), or at once when no other thread holds work or this
    /// one already does. Blocks meanwhile.
    pub(crate) fn admit(
        self: &Arc<Work>,
        bytes: usize,
        mut fits: impl FnMut(usize) -> bool,
    ) -> Held {
        if MINE.get() > 0 {
            return self.charge(bytes);
        }
        let Ok(mut held) = self.held.lock() else {
            // A thread panicked holding the counter (never expected): not counted.
            return Held::none();
        };
        loop {
            let now = *held;
            if now == 0 {
                break;
            }
            // Room is made without the counter's lock (it takes the store's and entries').
            drop(held);
            let ok = fits(now);
            held = match self.held.lock() {
                Ok(h) => h,
                Err(_) => return Held::none(),
            };
            // `ok` stands unless work was added meanwhile (then the cache is asked again).
            if *held == 0 || (ok && *held <= now) {
                break;
            }
            if *held == now {
                // Nothing changed meanwhile: wait for a release (or the recheck).
                held = match self.released.wait_timeout(held, RECHECK) {
                    Ok((h, _)) => h,
                    Err(_) => return Held::none(),
                };
            }
        }
        *held = held.saturating_add(bytes);
        drop(held);
        Held::of(self, bytes)
    }

    /// Holds `bytes` at once (memory already taken: it is counted, not waited for).
    pub(crate) fn charge(self: &Arc<Work>, bytes: usize) -> Held {
        match self.held.lock() {
            Ok(mut held) => {
                *held = held.saturating_add(bytes);
                drop(held);
                Held::of(self, bytes)
            }
            Err(_) => Held::none(),
        }
    }

    fn release(&self, bytes: usize) {
        if let Ok(mut held) = self.held.lock() {
            *held = held.saturating_sub(bytes);
        }
        self.released.notify_all();
    }
}

/// Bytes of memory held by one piece of work, counted against the store's bound until dropped.
#[derive(Debug)]
#[must_use = "the bytes are released when this is dropped"]
pub(crate) struct Held {
    work: Option<Arc<Work>>,
    bytes: usize,
    /// Released on the thread that took it (`MINE`).
    here: PhantomData<*const ()>,
}

impl Held {
    fn of(work: &Arc<Work>, bytes: usize) -> Held {
        MINE.set(MINE.get().saturating_add(bytes));
        Held {
            work: Some(Arc::clone(work)),
            bytes,
            here: PhantomData,
        }
    }

    /// Nothing held (a store without a bound to count against, or a counter lost to a panic).
    pub(crate) fn none() -> Held {
        Held {
            work: None,
            bytes: 0,
            here: PhantomData,
        }
    }

    /// Bytes held.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.work.as_ref().map_or(0, |_| self.bytes)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(work) = self.work.take() {
            MINE.set(MINE.get().saturating_sub(self.bytes));
            work.release(self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn held_bytes_add_up_and_release_on_drop() {
        let w = Arc::new(Work::default());
        let a = w.admit(100, |_| false);
        assert_eq!((a.bytes(), w.held()), (100, 100));
        let b = w.charge(30);
        assert_eq!(w.held(), 130);
        drop(a);
        assert_eq!(w.held(), 30);
        drop(b);
        assert_eq!(w.held(), 0);
        assert_eq!(Held::none().bytes(), 0);
    }

    /// Work larger than any bound is admitted when nothing else is held (no deadlock), and
    /// work that does not fit waits until the holder lets go.
    #[test]
    fn waits_for_release_and_admits_alone_whatever_the_size() {
        let w = Arc::new(Work::default());
        let first = w.admit(usize::MAX / 4, |_| false);
        let admitted = Arc::new(AtomicUsize::new(0));
        let t = {
            let (w, admitted) = (Arc::clone(&w), Arc::clone(&admitted));
            std::thread::spawn(move || {
                let h = w.admit(10, |_| false);
                admitted.store(w.held(), Ordering::SeqCst);
                drop(h);
            })
        };
        // The waiter cannot be admitted while `first` is held: `fits` always refuses.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(admitted.load(Ordering::SeqCst), 0);
        assert_eq!(w.held(), usize::MAX / 4);
        drop(first);
        t.join().unwrap();
        assert_eq!(admitted.load(Ordering::SeqCst), 10);
        assert_eq!(w.held(), 0);
    }

    /// A thread that holds work is not made to wait for more (it would wait for itself).
    #[test]
    fn nested_work_is_counted_at_once() {
        let w = Arc::new(Work::default());
        let outer = w.admit(100, |_| false);
        let inner = w.admit(100, |_| false);
        assert_eq!(w.held(), 200);
        drop((inner, outer));
        assert_eq!(w.held(), 0);
        // Nothing held here any more: admission asks `fits` again beside another thread's.
        let other = {
            let w = Arc::clone(&w);
            std::thread::spawn(move || {
                let h = w.admit(5, |_| false);
                std::mem::forget(h);
            })
        };
        other.join().unwrap();
        let mut asked = false;
        let h = w.admit(1, |_| {
            asked = true;
            true
        });
        assert!(asked);
        drop(h);
    }

    #[test]
    fn admits_beside_held_work_when_it_fits() {
        let w = Arc::new(Work::default());
        let first = w.admit(50, |_| false);
        // Asked on another thread (this one holds work: its own would not wait).
        let (seen, held) = {
            let w = Arc::clone(&w);
            std::thread::spawn(move || {
                let mut seen = None;
                let second = w.admit(20, |held| {
                    seen = Some(held);
                    held + 20 <= 100
                });
                let held = w.held();
                drop(second);
                (seen, held)
            })
            .join()
            .unwrap()
        };
        assert_eq!((seen, held), (Some(50), 70));
        drop(first);
        assert_eq!(w.held(), 0);
    }
}
