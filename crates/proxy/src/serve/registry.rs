//! The live sessions and stateless workers: creation within the process bound, lookup by id,
//! the idle sweep, and one stderr line per start and end.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use super::principal::{Principal, Shapers};
use super::session::Session;
use crate::relay::{RelayOptions, Upstream};

/// Why a session could not be made.
#[derive(Debug)]
pub(crate) enum StartError {
    /// `max_sessions` processes are alive.
    Full(usize),
    /// The principal's shaper could not be built.
    Shaper(String),
}

/// Every live session and worker.
pub(crate) struct Registry {
    upstream: Upstream,
    relay: RelayOptions,
    pub(crate) shapers: Shapers,
    max: usize,
    live: AtomicUsize,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Idle stateless workers, per principal.
    workers: Mutex<HashMap<Principal, Vec<Arc<Session>>>>,
    /// Every session and worker whose relay runs (busy workers are only here).
    every: Mutex<Vec<Weak<Session>>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("live", &self.live.load(Ordering::Relaxed))
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Registry {
    pub(crate) fn new(
        upstream: Upstream,
        relay: RelayOptions,
        shapers: Shapers,
        max: usize,
    ) -> Self {
        Registry {
            upstream,
            relay,
            shapers,
            max,
            live: AtomicUsize::new(0),
            sessions: Mutex::new(HashMap::new()),
            workers: Mutex::new(HashMap::new()),
            every: Mutex::new(Vec::new()),
        }
    }

    /// The live session with this id (not one that is ending: stopped, its relay finishing).
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions)
            .get(id)
            .filter(|s| !s.has_ended() && !s.is_stopping())
            .cloned()
    }

    /// Starts a session (`id` set) or a stateless worker (`id` `None`) for `principal`.
    ///
    /// # Errors
    /// [`StartError::Full`] past `max_sessions`; [`StartError::Shaper`] when the principal's
    /// shaper cannot be built.
    pub(crate) fn start(
        self: &Arc<Self>,
        id: Option<String>,
        principal: Principal,
    ) -> Result<Arc<Session>, StartError> {
        let reserved = self
            .live
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            });
        if reserved.is_err() {
            return Err(StartError::Full(self.max));
        }
        let boundary = match self.shapers.for_principal(&principal) {
            Ok(b) => b,
            Err(e) => {
                self.live.fetch_sub(1, Ordering::AcqRel);
                return Err(StartError::Shaper(e.to_string()));
            }
        };
        let registry: Weak<Registry> = Arc::downgrade(self);
        let session = Session::start(
            id.clone(),
            principal,
            boundary,
            self.upstream.clone(),
            self.relay.clone(),
            move |session, why| {
                if let Some(registry) = registry.upgrade() {
                    registry.ended(session, &why);
                }
            },
        );
        if let Some(id) = id {
            lock(&self.sessions).insert(id, Arc::clone(&session));
        }
        lock(&self.every).push(Arc::downgrade(&session));
        crate::logging::session(
            session.id.as_deref(),
            "started",
            format_args!(
                "{} started (principal {}; {} of {} live)",
                session.label(),
                session.principal.kind(),
                self.live.load(Ordering::Acquire),
                self.max
            ),
        );
        Ok(session)
    }

    /// An idle stateless worker of `principal`, or a new one.
    ///
    /// # Errors
    /// As [`Registry::start`].
    pub(crate) fn checkout(
        self: &Arc<Self>,
        principal: &Principal,
    ) -> Result<Arc<Session>, StartError> {
        let idle = {
            let mut workers = lock(&self.workers);
            let pool = workers.entry(principal.clone()).or_default();
            pool.retain(|w| !w.has_ended());
            pool.pop()
        };
        match idle {
            Some(w) => Ok(w),
            None => self.start(None, principal.clone()),
        }
    }

    /// Puts a worker back after a request that finished.
    pub(crate) fn checkin(&self, worker: Arc<Session>) {
        if worker.has_ended() {
            return;
        }
        lock(&self.workers)
            .entry(worker.principal.clone())
            .or_default()
            .push(worker);
    }

    /// Called once per session or worker when its relay is done.
    fn ended(&self, session: &Arc<Session>, why: &str) {
        if let Some(id) = &session.id {
            lock(&self.sessions).remove(id);
        } else if let Some(pool) = lock(&self.workers).get_mut(&session.principal) {
            pool.retain(|w| !Arc::ptr_eq(w, session));
        }
        lock(&self.every).retain(|w| w.upgrade().is_some_and(|w| !Arc::ptr_eq(&w, session)));
        let live = self.live.fetch_sub(1, Ordering::AcqRel).saturating_sub(1);
        self.shapers.release(&session.principal);
        crate::logging::session(
            session.id.as_deref(),
            "ended",
            format_args!(
                "{} ended after {:.1} s, {} requests: {why} ({live} of {} live)",
                session.label(),
                session.age().as_secs_f64(),
                session.request_count(),
                self.max
            ),
        );
    }

    /// Stops every session and worker idle for `limit`.
    pub(crate) fn sweep(&self, limit: Duration) {
        let mut all: Vec<Arc<Session>> = lock(&self.sessions).values().cloned().collect();
        all.extend(lock(&self.workers).values().flatten().cloned());
        for s in all {
            if s.idle_past(limit) {
                s.stop(&format!("idle for {}", human(limit)));
            }
        }
    }

    /// Stops everything and waits (up to `wait`) for the relays to finish.
    pub(crate) async fn stop_all(&self, wait: Duration) {
        let all: Vec<Arc<Session>> = lock(&self.every).iter().filter_map(Weak::upgrade).collect();
        for s in &all {
            s.stop("the server is shutting down");
        }
        let deadline = tokio::time::Instant::now() + wait;
        while self.live.load(Ordering::Acquire) > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// `90s`, `30m`, `2h` for logs.
fn human(d: Duration) -> String {
    let s = d.as_secs();
    if s == 0 {
        format!("{} ms", d.as_millis())
    } else if s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}
