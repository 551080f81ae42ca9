//! The stdio relay on threads of its own (issue 14: a small call should cost about what a
//! byte-copy relay costs).
//!
//! When the proxy relays between its own stdin/stdout and a child process
//! ([`super::Relay::run_stdio`]), each direction is read on a thread of its own with blocking
//! reads, and written with blocking writes on that same thread: the client's line goes to the
//! server's stdin, the server's line to the client's stdout (`ClientOut::pipe`), with no
//! hand-off to another thread in between, as a byte-copy relay does. Through the reactor (a
//! readiness event, a wake-up of a runtime worker, a read that ends in `EAGAIN`, a queue to a
//! writer task) the same relay spent ~25 µs of CPU a small call; on these threads 15–17 µs
//! (`/proc` times per thread, server-everything's `echo`, two cores).
//!
//! The threads run the same code as the tasks of [`super::Relay::run`] do: [`from_client::run`]
//! and [`from_server::run`] over [`BlockingRead`], a reader whose reads block (each poll is
//! ready when it returns), driven by [`tokio::runtime::Handle::block_on`], so that what they
//! hand to the runtime (a shaping job, an injected tool's answer, a rewrite) goes to the same
//! places as before.
//!
//! [`from_client::run`]: super::from_client::run
//! [`from_server::run`]: super::from_server::run

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Our stdin and stdout as blocking files (duplicates of the descriptors, in blocking mode), or
/// `None` when either cannot be had (then the relay runs on tasks over the reactor).
pub(crate) fn client_files() -> Option<(File, File)> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let input = blocking(std::io::stdin().as_fd().try_clone_to_owned().ok()?, true)?;
        let output = blocking(std::io::stdout().as_fd().try_clone_to_owned().ok()?, false)?;
        Some((input, output))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The child's stdin and stdout as blocking files (tokio's conversion clears `O_NONBLOCK`).
pub(crate) fn child_files(
    stdin: tokio::process::ChildStdin,
    stdout: tokio::process::ChildStdout,
) -> Option<(File, File)> {
    #[cfg(unix)]
    {
        Some((
            stdin.into_owned_fd().ok()?.into(),
            stdout.into_owned_fd().ok()?.into(),
        ))
    }
    #[cfg(not(unix))]
    {
        let _ = (stdin, stdout);
        None
    }
}

/// `fd` with `O_NONBLOCK` cleared when it is a pipe (a parent may have left it set on the open
/// file description); any other kind of file is used as it is.
#[cfg(unix)]
fn blocking(fd: std::os::fd::OwnedFd, reads: bool) -> Option<File> {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let copy = fd.as_fd().try_clone_to_owned().ok()?;
    let cleared = if reads {
        pipe::Receiver::from_owned_fd(copy).and_then(pipe::Receiver::into_blocking_fd)
    } else {
        pipe::Sender::from_owned_fd(copy).and_then(pipe::Sender::into_blocking_fd)
    };
    // Not a pipe: `from_owned_fd` refused it, and `fd` is used as it is.
    Some(File::from(cleared.unwrap_or(fd)))
}

/// A file read with blocking reads behind [`AsyncRead`]: each poll returns when the read does.
/// Only for a thread of its own, never a runtime worker.
pub(crate) struct BlockingRead(pub(crate) File);

impl AsyncRead for BlockingRead {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        loop {
            match self.0.read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// A child's stdin in blocking mode, shared by the thread that writes it and the relay, which
/// closes it.
pub(crate) struct BlockingStdin {
    pipe: Mutex<Option<BufWriter<File>>>,
    /// Set by [`BlockingStdin::close`]: a write under way closes the pipe when it ends.
    closing: AtomicBool,
}

impl BlockingStdin {
    /// `stdin` (a child's stdin in blocking mode: [`child_files`]) behind a 64 KiB buffer,
    /// shared.
    pub(crate) fn new(stdin: File) -> Arc<BlockingStdin> {
        Arc::new(BlockingStdin {
            pipe: Mutex::new(Some(BufWriter::with_capacity(64 * 1024, stdin))),
            closing: AtomicBool::new(false),
        })
    }

    /// Closes the pipe, which tells a well-behaved server to exit; never waits: while a write
    /// is under way (a server that does not read), the pipe closes when the write ends (or
    /// fails, when the server is killed after the grace time).
    pub(crate) fn close(&self) {
        self.closing.store(true, Ordering::SeqCst);
        if let Ok(mut pipe) = self.pipe.try_lock()
            && let Some(open) = pipe.take()
        {
            // Without a flush (which could block): what a stopped client left unflushed is
            // dropped, as it would be on its own exit.
            drop(open.into_parts());
        }
    }

    /// Runs `write` on the open pipe; `None` when it is closed. A failed write closes it, and
    /// so does a [`BlockingStdin::close`] that came while it ran (after its bytes are flushed).
    pub(super) fn with(
        &self,
        write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
    ) -> Option<std::io::Result<()>> {
        let result = {
            let mut pipe = self.pipe.lock().unwrap_or_else(PoisonError::into_inner);
            let result = write(pipe.as_mut()?);
            if result.is_err() {
                *pipe = None;
            }
            result
        };
        // Checked once the lock is released: a `close` whose `try_lock` met this write has
        // set the flag before, so one of the two closes the pipe.
        if self.closing.load(Ordering::SeqCst)
            && let Ok(mut pipe) = self.pipe.try_lock()
            && let Some(mut open) = pipe.take()
        {
            let _ = open.flush();
        }
        Some(result)
    }
}

/// One direction of the relay: a task on the runtime, or a thread of its own.
pub(crate) enum Worker<T> {
    /// A task ([`super::Relay::run`]).
    Task(JoinHandle<T>),
    /// A thread; its result arrives through the channel (closed without one: it panicked).
    Thread(oneshot::Receiver<T>),
}

impl<T: Send + 'static> Worker<T> {
    /// Runs `work` on a new thread named `name`, within the runtime of `handle` (it may spawn
    /// tasks and blocking jobs there, and await them). `None` when no thread can be started.
    pub(crate) fn thread<F>(name: &str, handle: tokio::runtime::Handle, work: F) -> Option<Self>
    where
        F: Future<Output = T> + Send + 'static,
    {
        let (done, result) = oneshot::channel();
        std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let _ = done.send(handle.block_on(work));
            })
            .ok()?;
        Some(Worker::Thread(result))
    }

    /// Stops a task (dropping what it holds). A thread cannot be stopped: the caller makes it
    /// harmless by other means (the server's reader checks `Shared::server_stopped` after each
    /// read; the client's loses the server's stdin to `BlockingStdin::close` and its client
    /// output to the drain); blocked in a read, it ends with the process.
    pub(crate) fn abort(&self) {
        if let Worker::Task(task) = self {
            task.abort();
        }
    }
}

impl<T> Future for Worker<T> {
    /// What the work returned; `None` when it panicked or was aborted.
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        match self.get_mut() {
            Worker::Task(task) => Pin::new(task).poll(cx).map(Result::ok),
            Worker::Thread(result) => Pin::new(result).poll(cx).map(Result::ok),
        }
    }
}

/// The client's side of a relay to a child: its streams, written through a writer task, or our
/// own stdin and stdout as blocking files, each direction on a thread of its own.
pub(crate) enum Client<I, O> {
    /// Streams read and written on tasks.
    Streams(I, O),
    /// Our stdin and stdout ([`client_files`]).
    Files(File, File),
}
