//! The one task that writes to the client: every line the relay sends goes through its queue,
//! so lines never interleave, whichever task (reader or shaping job) produced them.

use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;

use super::log;

/// Lines waiting for the client; a full queue makes producers wait (back-pressure from a
/// client that reads slowly).
pub(crate) const QUEUE: usize = 256;

/// Writes each queued line and a `\n`; flushes whenever the queue runs empty. Returns when
/// every sender is gone. After a write error (the client closed its stdout), lines are
/// dropped so that producers never block.
pub(crate) async fn run<O: AsyncWrite + Unpin>(out: O, mut queue: mpsc::Receiver<Vec<u8>>) {
    let mut out = BufWriter::with_capacity(64 * 1024, out);
    let mut broken = false;
    while let Some(line) = queue.recv().await {
        if broken {
            continue;
        }
        let mut result = out.write_all(&line).await;
        if result.is_ok() {
            result = out.write_all(b"\n").await;
        }
        if result.is_ok() && queue.is_empty() {
            result = out.flush().await;
        }
        if let Err(e) = result {
            log::warn(format_args!(
                "cannot write to the client (dropping its messages): {e}"
            ));
            broken = true;
        }
    }
    if !broken {
        let _ = out.flush().await;
    }
}
