//! The state the relay's tasks share: the table of requests waiting for an answer, the shaper,
//! the line bound, and whether the server's reader was stopped.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::route::{self, Pending};
use super::shaper::Shaper;
use super::threads::Worker;

/// State shared by the relay's tasks.
pub(crate) struct Shared {
    pub(super) pending: Mutex<Pending>,
    pub(super) shaper: Option<Arc<dyn Shaper>>,
    pub(super) max_line_bytes: usize,
    /// Set when the server's reader is stopped: a reader on a thread of its own, which cannot
    /// be aborted, checks it after each read and sends nothing more.
    pub(super) server_stopped: std::sync::atomic::AtomicBool,
}

impl Shared {
    pub(super) fn new(shaper: Option<Arc<dyn Shaper>>, max_line_bytes: usize) -> Shared {
        Shared {
            pending: Mutex::new(Pending::default()),
            shaper,
            max_line_bytes,
            server_stopped: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether the server's reader was stopped.
    pub(super) fn server_stopped(&self) -> bool {
        self.server_stopped
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Stops the server's reader: `reader`'s task is aborted; a thread stops at its next line.
    pub(super) fn stop_server<T: Send + 'static>(&self, reader: &Worker<T>) {
        self.server_stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        reader.abort();
    }

    /// The pending table (a panic elsewhere never makes it unusable).
    pub(super) fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Accounts (telemetry) for a `tools/call` answered with an error instead of a result:
    /// by the server, or by the relay in its place (exit, timeout). Other requests: nothing.
    pub(super) fn note_call_error(&self, entry: &route::Entry) {
        if let (Some(shaper), route::Track::Call { tool }) = (&self.shaper, &entry.track) {
            let upstream_ms =
                u64::try_from(entry.sent_at.elapsed().as_millis()).unwrap_or(u64::MAX);
            shaper.note_call_error(tool, upstream_ms);
        }
    }
}
