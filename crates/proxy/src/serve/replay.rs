//! Resumable SSE streams: each stream `serve` writes keeps its recent events, numbered, so a
//! client whose connection dropped can get the rest with `GET` and `Last-Event-ID`.
//!
//! Source: MCP 2025-06-18 and 2025-11-25, Streamable HTTP, "Resumability and Redelivery":
//! event ids are unique across the session's streams and say which stream they belong to
//! (`<stream>-<n>`: stream 0 is the session's GET stream, stream `k` ≥ 1 the SSE answer of the
//! session's `k`-th POSTed request; `n` counts that stream's events from 1); a `GET` with
//! `Last-Event-ID` replays what came after that event *on that stream only*, then goes on with
//! that stream's new events.
//!
//! A POST stream of a 2025-11-25 (or later) client opens at once with a priming event ("the
//! server SHOULD immediately send an SSE event consisting of an event ID and an empty data
//! field in order to prime the client to reconnect"): id `<stream>-0`, a `retry` and an
//! empty `data`, written by `serve`'s handler before the stream's own events. Resuming from
//! `<stream>-0` replays the stream from its first event.
//!
//! Each stream keeps at most [`KEEP_EVENTS`] events and [`KEEP_BYTES`] bytes (the oldest go
//! first); a session keeps the buffers of its last [`KEEP_STREAMS`] POST streams. A resumption
//! from an event no longer kept gets what is still kept (the response, the last event of a
//! POST stream, is the last to go).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::response::sse::Event;
use tokio::sync::watch;

/// Events one stream keeps for replay: 256.
pub(crate) const KEEP_EVENTS: usize = 256;
/// Bytes (of event data) one stream keeps for replay: 8 MiB.
pub(crate) const KEEP_BYTES: usize = 8 * 1024 * 1024;
/// POST streams a session keeps for resumption: the last 64.
pub(crate) const KEEP_STREAMS: usize = 64;

/// The stream number of the session's GET stream.
pub(crate) const GET_STREAM: u64 = 0;

#[derive(Debug, Default)]
struct Kept {
    /// (number, data), oldest first.
    events: VecDeque<(u64, Arc<str>)>,
    bytes: usize,
    /// The number of the last event pushed.
    last: u64,
    /// No more events will come (the response was sent, or the session ended).
    done: bool,
    /// The number of the last event written to a GET connection (where a new GET without
    /// `Last-Event-ID` starts).
    delivered: u64,
}

/// One stream's events.
#[derive(Debug)]
pub(crate) struct Replay {
    stream: u64,
    kept: Mutex<Kept>,
    /// Bumped on each push and at the end: wakes the connections reading the stream.
    changed: watch::Sender<u64>,
    /// Connections reading it now.
    readers: AtomicUsize,
}

impl Replay {
    /// The buffer of stream `stream`.
    pub(crate) fn new(stream: u64) -> Arc<Replay> {
        Arc::new(Replay {
            stream,
            kept: Mutex::new(Kept::default()),
            changed: watch::Sender::new(0),
            readers: AtomicUsize::new(0),
        })
    }

    fn kept(&self) -> MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Its stream number.
    pub(crate) fn stream(&self) -> u64 {
        self.stream
    }

    /// Adds an event (one JSON-RPC message); the oldest go past the bounds.
    pub(crate) fn push(&self, line: Vec<u8>) {
        let data: Arc<str> = match String::from_utf8(line) {
            Ok(s) => s.into(),
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into(),
        };
        let mut kept = self.kept();
        if kept.done {
            return;
        }
        kept.last += 1;
        let n = kept.last;
        kept.bytes += data.len();
        kept.events.push_back((n, data));
        while kept.events.len() > 1 && (kept.events.len() > KEEP_EVENTS || kept.bytes > KEEP_BYTES)
        {
            if let Some((_, old)) = kept.events.pop_front() {
                kept.bytes -= old.len();
            }
        }
        drop(kept);
        self.changed.send_modify(|v| *v += 1);
    }

    /// No more events: readers end once they have the last one.
    pub(crate) fn finish(&self) {
        self.kept().done = true;
        self.changed.send_modify(|v| *v += 1);
    }

    /// Whether a connection reads it now.
    pub(crate) fn has_reader(&self) -> bool {
        self.readers.load(Ordering::Acquire) > 0
    }

    /// Where a new GET connection without `Last-Event-ID` starts: after what an earlier one
    /// was given.
    pub(crate) fn delivered(&self) -> u64 {
        self.kept().delivered
    }

    /// The first event kept after `after`, or whether the stream is done.
    fn next_after(&self, after: u64) -> Result<(u64, Arc<str>), bool> {
        let kept = self.kept();
        kept.events
            .iter()
            .find(|(n, _)| *n > after)
            .map(|(n, d)| (*n, Arc::clone(d)))
            .ok_or(kept.done)
    }

    fn mark_delivered(&self, n: u64) {
        let mut kept = self.kept();
        kept.delivered = kept.delivered.max(n);
    }

    /// The SSE events of this stream after event `after`, as they come, until it is done.
    /// `guard` lives as long as the connection.
    pub(crate) fn events<G: Send + 'static>(
        self: &Arc<Self>,
        after: u64,
        guard: G,
    ) -> impl futures_util::Stream<Item = Result<Event, std::convert::Infallible>> + Send + 'static
    {
        let reader = Reader::new(Arc::clone(self));
        let changes = self.changed.subscribe();
        futures_util::stream::unfold(
            (reader, changes, after, guard),
            |(reader, mut changes, after, guard)| async move {
                loop {
                    // Seen before looking: a push after the look wakes `changed`.
                    changes.borrow_and_update();
                    match reader.0.next_after(after) {
                        Ok((n, data)) => {
                            if reader.0.stream == GET_STREAM {
                                reader.0.mark_delivered(n);
                            }
                            let event = Event::default()
                                .event("message")
                                .id(format!("{}-{n}", reader.0.stream))
                                .data(&*data);
                            return Some((Ok(event), (reader, changes, n, guard)));
                        }
                        Err(true) => return None,
                        Err(false) => changes.changed().await.ok()?,
                    }
                }
            },
        )
    }
}

/// Counts a connection reading a stream while it lives.
struct Reader(Arc<Replay>);

impl Reader {
    fn new(replay: Arc<Replay>) -> Reader {
        replay.readers.fetch_add(1, Ordering::AcqRel);
        Reader(replay)
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.0.readers.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A `Last-Event-ID` as `(stream, event)`; `None` when it is not one of ours.
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, n) = id.trim().split_once('-')?;
    Some((stream.parse().ok()?, n.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt as _;

    #[test]
    fn event_ids_name_their_stream() {
        assert_eq!(parse_event_id("3-17"), Some((3, 17)));
        assert_eq!(parse_event_id("0-1"), Some((0, 1)));
        assert_eq!(parse_event_id("x-1"), None);
        assert_eq!(parse_event_id("17"), None);
    }

    #[test]
    fn the_oldest_events_go_past_the_bound_and_the_last_stays() {
        let replay = Replay::new(1);
        for i in 0..(KEEP_EVENTS + 10) {
            replay.push(format!("{{\"n\":{i}}}").into_bytes());
        }
        let first = replay.next_after(0).unwrap();
        assert_eq!(first.0, 11);
        // One event bigger than the byte bound is still kept (the response).
        replay.push(vec![b'x'; KEEP_BYTES + 1]);
        let last = replay.next_after(KEEP_EVENTS as u64 + 10).unwrap();
        assert_eq!(last.1.len(), KEEP_BYTES + 1);
        assert_eq!(replay.kept().events.len(), 1);
    }

    #[tokio::test]
    async fn a_reader_gets_what_follows_its_event_then_the_new_ones() {
        let replay = Replay::new(2);
        replay.push(b"a".to_vec());
        replay.push(b"b".to_vec());
        let stream = replay.events(1, ());
        let mut stream = Box::pin(stream);
        let later = Arc::clone(&replay);
        tokio::spawn(async move {
            later.push(b"c".to_vec());
            later.finish();
        });
        let mut got = 0;
        while stream.next().await.is_some() {
            got += 1;
        }
        assert_eq!(got, 2, "b and c");
        assert!(!replay.has_reader());
    }
}
