//! The proxy's own stdin and stdout as async streams, and the signals that end it.
//!
//! MCP clients start the proxy with pipes on stdin and stdout. A pipe can be polled: the relay
//! then reads and writes it on its own threads through the reactor, with no hand-off to a
//! blocking thread per read or write (which `tokio::io::stdin`/`stdout` need for any kind of
//! file, and which costs a few microseconds on every message). Anything else (a file, a
//! terminal, /dev/null) falls back to tokio's blocking-thread handles.

use tokio::io::{AsyncRead, AsyncWrite};

/// The client's side: what it writes (our stdin).
pub(crate) type ClientIn = Box<dyn AsyncRead + Unpin + Send>;
/// The client's side: what it reads (our stdout).
pub(crate) type ClientOut = Box<dyn AsyncWrite + Unpin + Send>;

/// Our stdin and stdout. Must be called inside the runtime (pipes register with its reactor).
pub(crate) fn client_pipes() -> (ClientIn, ClientOut) {
    (stdin(), stdout())
}

fn stdin() -> ClientIn {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        // Sets O_NONBLOCK on the pipe's open file description, which only this process reads.
        let pipe = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .and_then(tokio::net::unix::pipe::Receiver::from_owned_fd);
        if let Ok(pipe) = pipe {
            return Box::new(pipe);
        }
    }
    Box::new(tokio::io::stdin())
}

fn stdout() -> ClientOut {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let pipe = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .and_then(tokio::net::unix::pipe::Sender::from_owned_fd);
        if let Ok(pipe) = pipe {
            return Box::new(pipe);
        }
    }
    Box::new(tokio::io::stdout())
}

/// Puts our stdin and stdout back in blocking mode (O_NONBLOCK lives on the open file
/// description, which a parent shell or a sibling may share after we exit).
pub(crate) fn restore_blocking() {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        use tokio::net::unix::pipe;
        if let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned() {
            let _ = pipe::Receiver::from_owned_fd(fd).and_then(pipe::Receiver::into_blocking_fd);
        }
        if let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() {
            let _ = pipe::Sender::from_owned_fd(fd).and_then(pipe::Sender::into_blocking_fd);
        }
    }
}

/// Completes when the process is asked to terminate (SIGTERM or SIGHUP, on Unix); never
/// elsewhere, or when the signals cannot be watched. SIGINT is left alone: a terminal sends it
/// to the server too.
pub(crate) async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            tokio::select! {
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            return;
        }
    }
    std::future::pending::<()>().await;
}
