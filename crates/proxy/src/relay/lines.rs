//! Framing: newline-delimited JSON-RPC messages, with a bound on the length of one line.
//!
//! MCP's stdio transport puts one JSON-RPC message per line (the JSON itself holds no raw
//! newline). A line is handed on without its `\n`; a `\r` before it stays, since it is JSON
//! whitespace and byte-for-byte forwarding keeps it. A UTF-8 byte-order mark (`EF BB BF`)
//! at the start of a line is dropped: RFC 8259 §8.1 lets a parser ignore one, and a line is
//! read (and forwarded) as if it had none. Blank lines are not messages and are skipped. A
//! line longer than the bound is never held in memory: it is read through in chunks, and only
//! what [`Scanner`] finds at its top level (the id) is kept.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::mpsc;

use super::scan::{Scan, Scanner};

/// One frame read from a peer.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A complete line, without its `\n`; never blank.
    Line(Vec<u8>),
    /// The last bytes before the end of the stream, without a `\n`; never blank. Often a
    /// message cut off by a crash; sometimes a complete message from a peer that does not end
    /// its last line.
    Unterminated(Vec<u8>),
    /// A line longer than the bound, read through and dropped.
    TooLong {
        /// Its length in bytes, without the `\n`.
        bytes: u64,
        /// What the scan of its top level found (the id, whether it was a response).
        scan: Scan,
    },
    /// The peer closed its end.
    Eof,
}

/// Reads [`Frame`]s from a byte stream.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    inner: BufReader<R>,
    max_bytes: usize,
}

/// The read buffer: big enough that a 12 MB line takes few reads.
const CAPACITY: usize = 64 * 1024;

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader that drops lines longer than `max_bytes` bytes (the `\n` not counted).
    pub(crate) fn new(inner: R, max_bytes: usize) -> Self {
        Self::with_capacity(inner, CAPACITY, max_bytes)
    }

    /// [`LineReader::new`] with a read buffer of `capacity` bytes.
    pub(crate) fn with_capacity(inner: R, capacity: usize, max_bytes: usize) -> Self {
        LineReader {
            inner: BufReader::with_capacity(capacity, inner),
            max_bytes,
        }
    }

    /// Whether another complete line is already buffered (so a writer may wait before
    /// flushing what it wrote for this one).
    pub(crate) fn has_buffered_line(&self) -> bool {
        memchr::memchr(b'\n', self.inner.buffer()).is_some()
    }

    /// The next non-blank line, an over-long line's scan, or the end of the stream.
    ///
    /// A last line without a trailing `\n` counts as a line.
    ///
    /// # Errors
    ///
    /// The underlying read's I/O error.
    pub(crate) async fn next_frame(&mut self) -> std::io::Result<Frame> {
        loop {
            let frame = match self.next_raw().await? {
                Frame::Line(line) => Frame::Line(without_bom(line)),
                Frame::Unterminated(line) => Frame::Unterminated(without_bom(line)),
                other => other,
            };
            match frame {
                Frame::Line(line) | Frame::Unterminated(line) if is_blank(&line) => continue,
                other => return Ok(other),
            }
        }
    }

    async fn next_raw(&mut self) -> std::io::Result<Frame> {
        let mut line = Vec::new();
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                return Ok(if line.is_empty() {
                    Frame::Eof
                } else {
                    Frame::Unterminated(line)
                });
            }
            let (take, ends) = match memchr::memchr(b'\n', buf) {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            if line.len() + take > self.max_bytes {
                let mut scanner = Scanner::new();
                scanner.feed(&line);
                scanner.feed(&buf[..take]);
                let bytes = (line.len() + take) as u64;
                self.inner.consume(take + usize::from(ends));
                if ends {
                    return Ok(Frame::TooLong {
                        bytes,
                        scan: scanner.finish(),
                    });
                }
                return self.skip_rest(scanner, bytes).await;
            }
            line.extend_from_slice(&buf[..take]);
            self.inner.consume(take + usize::from(ends));
            if ends {
                return Ok(Frame::Line(line));
            }
        }
    }

    /// Reads through the rest of an over-long line of which `bytes` bytes were read.
    async fn skip_rest(&mut self, mut scanner: Scanner, mut bytes: u64) -> std::io::Result<Frame> {
        loop {
            let buf = self.inner.fill_buf().await?;
            if buf.is_empty() {
                return Ok(Frame::TooLong {
                    bytes,
                    scan: scanner.finish(),
                });
            }
            let (take, ends) = match memchr::memchr(b'\n', buf) {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            scanner.feed(&buf[..take]);
            bytes += take as u64;
            self.inner.consume(take + usize::from(ends));
            if ends {
                return Ok(Frame::TooLong {
                    bytes,
                    scan: scanner.finish(),
                });
            }
        }
    }
}

/// Where the relay reads a peer's frames from: a byte stream cut into lines ([`LineReader`]), or
/// a transport that already hands over whole messages ([`FrameQueue`]).
pub(crate) trait FrameSource: Send {
    /// The next frame; [`Frame::Eof`] when the peer is gone.
    ///
    /// # Errors
    ///
    /// An I/O error of the underlying stream.
    fn next_frame(&mut self) -> impl Future<Output = std::io::Result<Frame>> + Send;
}

impl<R: AsyncRead + Unpin + Send> FrameSource for LineReader<R> {
    async fn next_frame(&mut self) -> std::io::Result<Frame> {
        LineReader::next_frame(self).await
    }
}

/// Frames handed over by a transport task (one message each); [`Frame::Eof`] once every sender
/// is gone.
#[derive(Debug)]
pub(crate) struct FrameQueue(pub(crate) mpsc::Receiver<Frame>);

impl FrameSource for FrameQueue {
    async fn next_frame(&mut self) -> std::io::Result<Frame> {
        Ok(self.0.recv().await.unwrap_or(Frame::Eof))
    }
}

/// The UTF-8 encoding of U+FEFF, the byte-order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `line` without a leading byte-order mark.
fn without_bom(mut line: Vec<u8>) -> Vec<u8> {
    if line.starts_with(BOM) {
        line.drain(..BOM.len());
    }
    line
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize, capacity: usize) -> Vec<Frame> {
        let mut lines = LineReader::with_capacity(input, capacity, max);
        let mut out = Vec::new();
        loop {
            match lines.next_frame().await {
                Ok(Frame::Eof) | Err(_) => return out,
                Ok(frame) => out.push(frame),
            }
        }
    }

    fn describe(frames: &[Frame]) -> Vec<String> {
        frames
            .iter()
            .map(|f| match f {
                Frame::Line(l) => format!("line {}", String::from_utf8_lossy(l)),
                Frame::Unterminated(l) => format!("last {}", String::from_utf8_lossy(l)),
                Frame::TooLong { bytes, scan } => format!(
                    "long {bytes} id={}",
                    scan.id
                        .as_deref()
                        .map(String::from_utf8_lossy)
                        .unwrap_or_default()
                ),
                Frame::Eof => "eof".to_owned(),
            })
            .collect()
    }

    #[tokio::test]
    async fn splits_lines_keeps_cr_and_skips_blank_ones() {
        for capacity in [1, 3, 8, 64] {
            let got = frames(b"{\"a\":1}\r\n\n  \r\n{\"b\":2}\n{\"c\":3}", 100, capacity).await;
            assert_eq!(
                describe(&got),
                ["line {\"a\":1}\r", "line {\"b\":2}", "last {\"c\":3}"],
                "capacity {capacity}"
            );
        }
    }

    #[tokio::test]
    async fn an_over_long_line_is_counted_scanned_and_skipped() {
        let long = format!("{{\"id\":42,\"params\":\"{}\"}}", "x".repeat(100));
        let input = format!("{{\"a\":1}}\n{long}\n{{\"b\":2}}\n{long}");
        for capacity in [1, 7, 16, 4096] {
            let got = frames(input.as_bytes(), 50, capacity).await;
            assert_eq!(
                describe(&got),
                [
                    "line {\"a\":1}".to_owned(),
                    format!("long {} id=42", long.len()),
                    "line {\"b\":2}".to_owned(),
                    format!("long {} id=42", long.len()),
                ],
                "capacity {capacity}"
            );
        }
    }

    #[tokio::test]
    async fn a_leading_byte_order_mark_is_dropped_from_every_line() {
        let input =
            b"\xEF\xBB\xBF{\"a\":1}\n\xEF\xBB\xBF\n{\"b\":\"\xEF\xBB\xBF\"}\n\xEF\xBB\xBF{\"c\":3}";
        for capacity in [1, 2, 4, 64] {
            let got = frames(input, 100, capacity).await;
            assert_eq!(
                describe(&got),
                [
                    "line {\"a\":1}",
                    "line {\"b\":\"\u{feff}\"}",
                    "last {\"c\":3}"
                ],
                "capacity {capacity}"
            );
        }
        // An over-long line with a mark still has its id recovered.
        let long = format!("\u{feff}{{\"id\":42,\"params\":\"{}\"}}\n", "x".repeat(100));
        let got = frames(long.as_bytes(), 50, 8).await;
        assert_eq!(describe(&got), [format!("long {} id=42", long.len() - 1)]);
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_bound_passes() {
        let got = frames(b"12345\n123456\n", 5, 4).await;
        assert_eq!(describe(&got), ["line 12345", "long 6 id="]);
    }
}
