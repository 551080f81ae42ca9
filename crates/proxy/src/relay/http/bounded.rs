//! A bound on one SSE event: the bytes between two blank lines.
//!
//! The SSE decoder (`sse-stream`) keeps an event's lines until the blank line that ends it, so
//! a server that never sends one (an endless `data:` line, or endless lines without a blank
//! one) would make it hold everything. [`EventBound`] counts the bytes since the last blank
//! line as the body streams by and breaks the stream once they pass the bound. Line ends are
//! CR, LF or CRLF (HTML Living Standard, "Server-sent events", "Parsing an event stream").

use bytes::Bytes;

/// Counts the bytes of the event being received.
#[derive(Debug)]
pub(super) struct EventBound {
    /// The most bytes one event may take, line ends included.
    max: usize,
    /// Bytes of the current event so far.
    event: usize,
    /// Bytes of the current line so far.
    line: usize,
    /// Whether the last byte seen was a CR (a LF right after it ends no new line).
    after_cr: bool,
}

/// An event went past the bound: the bytes it had taken.
#[derive(Debug, thiserror::Error)]
#[error(
    "an event of the server's stream went past {max} bytes without the blank line that ends it"
)]
pub(super) struct TooLong {
    /// The bound, in bytes.
    pub(super) max: usize,
}

impl EventBound {
    /// A bound of `max` bytes per event.
    pub(super) fn new(max: usize) -> EventBound {
        EventBound {
            max,
            event: 0,
            line: 0,
            after_cr: false,
        }
    }

    /// Counts `chunk`, the next bytes of the stream.
    ///
    /// # Errors
    ///
    /// [`TooLong`] once the event being received is longer than the bound.
    pub(super) fn feed(&mut self, chunk: &Bytes) -> Result<(), TooLong> {
        let mut rest: &[u8] = chunk;
        while let Some(at) = memchr::memchr2(b'\n', b'\r', rest) {
            // Bytes of the line before its end.
            let before = at;
            if before > 0 {
                self.line += before;
                self.event += before;
                self.after_cr = false;
            }
            let end = rest[at];
            let crlf = end == b'\n' && self.after_cr && before == 0;
            self.event += 1;
            if !crlf {
                if self.line == 0 {
                    // A blank line: the event ends.
                    self.event = 0;
                }
                self.line = 0;
            }
            self.after_cr = end == b'\r';
            rest = &rest[at + 1..];
            if self.event > self.max {
                return Err(TooLong { max: self.max });
            }
        }
        if !rest.is_empty() {
            self.line += rest.len();
            self.event += rest.len();
            self.after_cr = false;
        }
        if self.event > self.max {
            return Err(TooLong { max: self.max });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(bound: &mut EventBound, chunks: &[&str]) -> Result<(), TooLong> {
        chunks
            .iter()
            .try_for_each(|c| bound.feed(&Bytes::copy_from_slice(c.as_bytes())))
    }

    #[test]
    fn events_of_any_number_under_the_bound_pass() {
        let mut bound = EventBound::new(20);
        let event = "data: 0123456789\n\n";
        assert!(feed_all(&mut bound, &[event; 100]).is_ok());
        // CRLF and CR line ends, split across chunks.
        let mut bound = EventBound::new(20);
        let chunks: Vec<&str> = ["data: 0123456789\r", "\n\r\n"].repeat(50);
        assert!(feed_all(&mut bound, &chunks).is_ok());
        let mut bound = EventBound::new(20);
        assert!(feed_all(&mut bound, &["data: 0123456789\r\r"; 50]).is_ok());
    }

    #[test]
    fn an_event_without_its_blank_line_is_stopped() {
        let mut bound = EventBound::new(100);
        let line = "data: 0123456789\n";
        let err = feed_all(&mut bound, &[line; 10]).unwrap_err();
        assert_eq!(err.max, 100);
        // One endless line.
        let mut bound = EventBound::new(100);
        assert!(feed_all(&mut bound, &["x"; 100]).is_ok());
        assert!(feed_all(&mut bound, &["x"]).is_err());
        // A CRLF is one line end, not a blank line.
        let mut bound = EventBound::new(30);
        assert!(
            feed_all(
                &mut bound,
                &["data: a\r\n", "data: b\r\n", "data: c\r\n", "data: d\r\n"]
            )
            .is_err()
        );
    }
}
