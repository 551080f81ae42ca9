//! Everything the relay sends to the client goes through one [`ClientOut`], so lines never
//! interleave, whichever thread or task (a reader, a shaping job) produced them: either the
//! queue of the one task that writes to the client ([`run`]), or, in the stdio relay
//! ([`super::threads`]), the client's pipe itself, written under a lock by whoever has a line.

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

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

/// Where the relay's lines for the client go.
#[derive(Clone)]
pub(crate) enum ClientOut {
    /// The queue of the writer task ([`run`]).
    Queue(mpsc::Sender<Vec<u8>>),
    /// The client's pipe, written in place with blocking writes (the stdio relay's threads).
    Pipe {
        pipe: Arc<Pipe>,
        /// Held by shaping jobs and injected-tool answers (see [`ClientOut::job`]).
        job: Option<Arc<()>>,
    },
}

/// The client's pipe, shared by the threads that write to it.
pub(crate) struct Pipe {
    state: Mutex<PipeState>,
    /// Counts the [`ClientOut::job`] clones still alive (one held by the pipe itself).
    jobs: Arc<()>,
    /// The relay has ended: lines are dropped (a reader thread left blocked in a read may wake
    /// after its relay returned). Set without the lock, which a write to a client that reads
    /// nothing may hold for ever.
    closed: std::sync::atomic::AtomicBool,
}

struct PipeState {
    out: std::io::BufWriter<std::fs::File>,
    /// A write failed (the client closed its stdout): lines are dropped from then on.
    broken: bool,
}

impl ClientOut {
    /// Lines through a new writer task that owns `out` (it ends when every sender is gone).
    pub(crate) fn queue<O: AsyncWrite + Unpin + Send + 'static>(
        out: O,
    ) -> (ClientOut, tokio::task::JoinHandle<()>) {
        let (queue, lines) = mpsc::channel(QUEUE);
        (ClientOut::Queue(queue), tokio::spawn(run(out, lines)))
    }

    /// Lines written straight to `file` (blocking writes), from any thread.
    pub(crate) fn pipe(file: std::fs::File) -> ClientOut {
        ClientOut::Pipe {
            pipe: Arc::new(Pipe {
                state: Mutex::new(PipeState {
                    out: std::io::BufWriter::with_capacity(64 * 1024, file),
                    broken: false,
                }),
                jobs: Arc::new(()),
                closed: std::sync::atomic::AtomicBool::new(false),
            }),
            job: None,
        }
    }

    /// A sender for work that outlives the line that started it (a shaping job, an answer of
    /// an injected tool): the relay's end waits for these to finish ([`ClientOut::drain`]).
    pub(crate) fn job(&self) -> ClientOut {
        match self {
            ClientOut::Queue(queue) => ClientOut::Queue(queue.clone()),
            ClientOut::Pipe { pipe, .. } => ClientOut::Pipe {
                pipe: Arc::clone(pipe),
                job: Some(Arc::clone(&pipe.jobs)),
            },
        }
    }

    /// Sends `line` from a relay reader: through the queue (waiting while it is full), or
    /// written and flushed in place — a blocking write, so in the stdio relay this is called
    /// only on its own reader threads. `false` once the client is gone.
    pub(crate) async fn send(&self, line: Vec<u8>) -> bool {
        match self {
            ClientOut::Queue(queue) => queue.send(line).await.is_ok(),
            ClientOut::Pipe { pipe, .. } => pipe.write(&line),
        }
    }

    /// Sends `line` from a task on the runtime's workers (never blocks one: the pipe is
    /// written on the blocking pool).
    pub(crate) async fn send_from_task(&self, line: Vec<u8>) -> bool {
        match self {
            ClientOut::Queue(queue) => queue.send(line).await.is_ok(),
            ClientOut::Pipe { pipe, .. } => {
                let pipe = Arc::clone(pipe);
                tokio::task::spawn_blocking(move || pipe.write(&line))
                    .await
                    .unwrap_or(false)
            }
        }
    }

    /// Sends `line` from a blocking thread (a shaping job on the blocking pool).
    pub(crate) fn send_blocking(&self, line: Vec<u8>) -> bool {
        match self {
            ClientOut::Queue(queue) => queue.blocking_send(line).is_ok(),
            ClientOut::Pipe { pipe, .. } => pipe.write(&line),
        }
    }

    /// At the relay's end, with the readers done: lets the jobs still running send their
    /// lines (waiting at most `limit`), then writes nothing more. `writer` is the writer task
    /// of a queue (it ends when every sender is gone, this one included).
    pub(crate) async fn drain(
        self,
        writer: Option<tokio::task::JoinHandle<()>>,
        limit: std::time::Duration,
    ) {
        match self {
            ClientOut::Queue(queue) => {
                drop(queue);
                if let Some(writer) = writer
                    && tokio::time::timeout(limit, writer).await.is_err()
                {
                    log::warn(format_args!(
                        "gave up writing to the client after {limit:?}"
                    ));
                }
            }
            ClientOut::Pipe { pipe, job } => {
                drop(job);
                let started = std::time::Instant::now();
                while Arc::strong_count(&pipe.jobs) > 1 {
                    if started.elapsed() > limit {
                        log::warn(format_args!(
                            "gave up writing to the client after {limit:?}"
                        ));
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
                pipe.close();
            }
        }
    }
}

impl Pipe {
    fn state(&self) -> std::sync::MutexGuard<'_, PipeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `line` and its `\n`, and flushes (one `write` for a line that fits the buffer);
    /// `false` once writing failed or the relay has ended (the line is dropped).
    fn write(&self, line: &[u8]) -> bool {
        if self.is_closed() {
            return false;
        }
        let mut state = self.state();
        if state.broken || self.is_closed() {
            return false;
        }
        let mut result = state.out.write_all(line);
        if result.is_ok() {
            result = state.out.write_all(b"\n");
        }
        if result.is_ok() {
            result = state.out.flush();
        }
        if let Err(e) = result {
            log::warn(format_args!(
                "cannot write to the client (dropping its messages): {e}"
            ));
            state.broken = true;
            return false;
        }
        true
    }

    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Nothing is written after this; never waits (each line was flushed when written).
    fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(unix)]
#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::time::Duration;

    /// A pipe's two ends as files.
    fn pipe() -> (std::fs::File, std::fs::File) {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        (
            std::fs::File::from(std::os::fd::OwnedFd::from(reader)),
            std::fs::File::from(std::os::fd::OwnedFd::from(writer)),
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pipe_gets_whole_lines_and_nothing_after_the_drain() {
        let (mut reader, writer) = pipe();
        let out = ClientOut::pipe(writer);
        assert!(out.send(b"{\"a\":1}".to_vec()).await);
        assert!(out.send_from_task(b"{\"b\":2}".to_vec()).await);
        let job = out.job();
        let late = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            job.send_blocking(b"{\"c\":3}".to_vec())
        });
        // The drain waits for the job's line, then closes.
        out.clone().drain(None, Duration::from_secs(10)).await;
        assert!(late.join().expect("the job"));
        assert!(
            !out.send_blocking(b"{\"d\":4}".to_vec()),
            "written after the drain"
        );
        drop(out);
        let mut got = String::new();
        reader.read_to_string(&mut got).expect("read");
        assert_eq!(got, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_closed_client_breaks_the_pipe_without_blocking() {
        let (reader, writer) = pipe();
        drop(reader);
        let out = ClientOut::pipe(writer);
        assert!(!out.send(b"{\"a\":1}".to_vec()).await);
        assert!(!out.send_blocking(b"{\"b\":2}".to_vec()));
        out.drain(None, Duration::from_secs(1)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_drain_returns_while_a_write_to_a_client_that_reads_nothing_blocks() {
        let (reader, writer) = pipe();
        let out = ClientOut::pipe(writer);
        let stuck = out.clone();
        // More than a pipe holds: the write blocks, holding the pipe's lock.
        let blocked = std::thread::spawn(move || stuck.send_blocking(vec![b'x'; 4 << 20]));
        tokio::time::sleep(Duration::from_millis(100)).await;
        let answered = tokio::time::timeout(
            Duration::from_millis(300),
            out.send_from_task(b"{}".to_vec()),
        );
        // A task's send waits for the lock (the relay bounds it: `answer_orphans`)...
        assert!(answered.await.is_err());
        // ...but the drain does not.
        let started = std::time::Instant::now();
        out.drain(None, Duration::from_millis(100)).await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        drop(reader);
        assert!(
            !blocked.join().expect("the writer"),
            "the write fails once the reader is gone"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_drain_gives_up_on_a_job_that_never_ends() {
        let (_reader, writer) = pipe();
        let out = ClientOut::pipe(writer);
        let stuck = out.job();
        let started = std::time::Instant::now();
        out.drain(None, Duration::from_millis(100)).await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            !stuck.send_blocking(b"{}".to_vec()),
            "written after the drain"
        );
    }
}
