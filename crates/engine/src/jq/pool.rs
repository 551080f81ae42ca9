//! Runs `query_response` filters in worker processes ([`super::worker`]): at most
//! [`JqLimits::workers`] alive at once, each killed at the deadline.
//!
//! A query that finds every worker slot taken waits for one, up to the deadline, behind at most
//! [`MAX_WAITING`] others; beyond that it is refused at once ([`JqError::Overloaded`]), and
//! one that waited the whole deadline gets [`JqError::Busy`]. A slot is freed only once its
//! worker is reaped, so the cap counts live processes. Callers block (the relay calls the
//! boundary on its blocking pool, one task per injected call, so nothing else waits).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::filter::{JqError, MAX_OUTPUT_BYTES, MAX_OUTPUTS, to_value};
use super::worker::{Failure, HELLO, WorkerArgs};
use crate::config::{JqLimits, WorkerCommand};

/// At most this many queries wait for a worker slot; more are refused at once.
pub(crate) const MAX_WAITING: usize = 16;

/// At most this much of a worker's stderr is kept (to name why it died).
const STDERR_KEPT: usize = 16 * 1024;

/// The worker processes of one boundary.
#[derive(Debug)]
pub(crate) struct Pool {
    command: WorkerCommand,
    limits: JqLimits,
    slots: Mutex<Slots>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct Slots {
    running: usize,
    waiting: usize,
}

/// A taken worker slot, given back on drop.
struct Slot<'a>(&'a Pool);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.running = s.running.saturating_sub(1);
        drop(s);
        self.0.freed.notify_one();
    }
}

/// What a worker's stdout said.
enum Replies {
    /// Every output, then `k`.
    Done(Vec<Value>),
    /// An `e` record.
    Failed(Failure),
    /// End of file with no last record: the worker died.
    Ended,
}

impl Pool {
    pub(crate) fn new(command: WorkerCommand, limits: JqLimits) -> Pool {
        Pool {
            command,
            limits,
            slots: Mutex::new(Slots::default()),
            freed: Condvar::new(),
        }
    }

    /// Every output of `code` on `input` (JSON text), run in a worker process.
    ///
    /// # Errors
    /// [`JqError::Overloaded`] or [`JqError::Busy`] when no worker slot frees up;
    /// [`JqError::TimedOut`] when the worker was killed at the deadline;
    /// [`JqError::Stopped`] when it died (stack overflow, out of memory, CPU limit);
    /// [`JqError::Syntax`] and [`JqError::Runtime`] from the filter;
    /// [`JqError::Internal`] when the worker cannot be started or does not speak its protocol.
    pub(crate) fn run(&self, code: &str, input: &str) -> Result<Vec<Value>, JqError> {
        let _slot = self.acquire()?;
        self.run_worker(code, input)
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn acquire(&self) -> Result<Slot<'_>, JqError> {
        let workers = self.limits.workers.max(1);
        let mut s = self.lock();
        if s.running < workers {
            s.running += 1;
            return Ok(Slot(self));
        }
        if s.waiting >= MAX_WAITING {
            return Err(JqError::Overloaded(s.waiting + s.running));
        }
        s.waiting += 1;
        let started = Instant::now();
        loop {
            let Some(left) = self.limits.deadline.checked_sub(started.elapsed()) else {
                s.waiting -= 1;
                return Err(JqError::Busy {
                    workers,
                    waited: self.limits.deadline,
                });
            };
            s = self
                .freed
                .wait_timeout(s, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            if s.running < workers {
                s.waiting -= 1;
                s.running += 1;
                return Ok(Slot(self));
            }
        }
    }

    fn run_worker(&self, code: &str, input: &str) -> Result<Vec<Value>, JqError> {
        let deadline = self.limits.deadline;
        let limits = WorkerArgs {
            memory_bytes: self.limits.memory_bytes,
            // A backstop to the kill at the deadline.
            cpu_secs: deadline.as_secs() + 2,
        };
        let mut child = Command::new(&self.command.program)
            .args(&self.command.args)
            .args(limits.to_args())
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                JqError::Internal(format!(
                    "cannot start the jq worker {:?}: {e}",
                    self.command.program
                ))
            })?;
        let started = Instant::now();
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            kill(&mut child);
            return Err(JqError::Internal("the jq worker has no pipes".to_owned()));
        };
        let header = serde_json::to_string(code).unwrap_or_default();
        std::thread::scope(|scope| {
            // A worker that dies early closes its stdin: the write fails, which is fine.
            scope.spawn(move || {
                let _ = stdin
                    .write_all(header.as_bytes())
                    .and_then(|()| stdin.write_all(b"\n"))
                    .and_then(|()| stdin.write_all(input.as_bytes()));
            });
            let errors = scope.spawn(move || read_stderr(stderr));
            let (tx, rx) = sync_channel(1);
            scope.spawn(move || {
                let _ = tx.send(read_replies(stdout));
            });
            let replies = match rx.recv_timeout(deadline) {
                Ok(r) => r,
                Err(RecvTimeoutError::Timeout) => {
                    kill(&mut child);
                    return Err(JqError::TimedOut(deadline));
                }
                Err(RecvTimeoutError::Disconnected) => Err(JqError::Internal(
                    "the reader of the jq worker ended with no answer".to_owned(),
                )),
            };
            match replies {
                Ok(Replies::Done(outs)) => {
                    let _ = child.wait();
                    Ok(outs)
                }
                Ok(Replies::Failed(f)) => {
                    let _ = child.wait();
                    Err(f.into_error())
                }
                Ok(Replies::Ended) => {
                    let status = wait_until(&mut child, started + deadline);
                    let text = errors.join().unwrap_or_default();
                    Err(JqError::Stopped(death_reason(
                        status,
                        &text,
                        self.limits.memory_bytes,
                    )))
                }
                Err(e) => {
                    kill(&mut child);
                    Err(e)
                }
            }
        })
    }
}

/// Kills and reaps `child`.
fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits for `child` to exit until `until`, then kills it; its status when it exited itself.
fn wait_until(child: &mut Child, until: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                kill(child);
                return None;
            }
        }
    }
}

/// The first [`STDERR_KEPT`] bytes of the worker's stderr (the rest is read and dropped).
fn read_stderr(stderr: ChildStderr) -> String {
    let mut kept = Vec::new();
    let mut stderr = stderr;
    let _ = stderr
        .by_ref()
        .take(STDERR_KEPT as u64)
        .read_to_end(&mut kept);
    let _ = std::io::copy(&mut stderr, &mut std::io::sink());
    String::from_utf8_lossy(&kept).into_owned()
}

/// Reads the worker's records (see [`super::worker`]), at most [`MAX_OUTPUT_BYTES`] of them.
fn read_replies(stdout: ChildStdout) -> Result<Replies, JqError> {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    let mut left = MAX_OUTPUT_BYTES as u64 + 2;
    let hello = next_line(&mut reader, &mut line, &mut left)?;
    if hello != Some(HELLO.as_bytes()) {
        return Err(JqError::Internal(
            "the jq worker program did not answer as one (a wrong worker program?)".to_owned(),
        ));
    }
    let mut outs = Vec::new();
    loop {
        let Some(record) = next_line(&mut reader, &mut line, &mut left)? else {
            return Ok(Replies::Ended);
        };
        match record.split_first() {
            Some((b'o', text)) => {
                if outs.len() >= MAX_OUTPUTS {
                    return Err(JqError::Runtime(format!(
                        "more than {MAX_OUTPUTS} outputs; narrow the query"
                    )));
                }
                outs.push(to_value(String::from_utf8_lossy(text).into_owned()));
            }
            Some((b'k', _)) => return Ok(Replies::Done(outs)),
            Some((b'e', json)) => {
                let failure = serde_json::from_slice(json).unwrap_or_else(|e| Failure {
                    kind: "runtime".to_owned(),
                    message: format!("(an unreadable message: {e})"),
                });
                return Ok(Replies::Failed(failure));
            }
            _ => {
                return Err(JqError::Internal(
                    "the jq worker wrote a record of no known kind".to_owned(),
                ));
            }
        }
    }
}

/// The next whole line (without its newline), `None` at end of file or on a line cut short by
/// it (the worker died writing). `left` bounds the bytes read in all.
fn next_line<'a>(
    reader: &mut BufReader<ChildStdout>,
    line: &'a mut Vec<u8>,
    left: &mut u64,
) -> Result<Option<&'a [u8]>, JqError> {
    line.clear();
    let n = reader
        .by_ref()
        .take(*left)
        .read_until(b'\n', line)
        .map_err(|e| JqError::Internal(format!("cannot read the jq worker's answer: {e}")))?;
    *left -= n as u64;
    if line.last() == Some(&b'\n') {
        line.pop();
        return Ok(Some(line));
    }
    if *left == 0 {
        return Err(JqError::Runtime(format!(
            "the outputs exceed {} MiB; narrow the query",
            MAX_OUTPUT_BYTES >> 20
        )));
    }
    Ok(None)
}

/// Why a worker died with no last record, in words for the model.
fn death_reason(status: Option<ExitStatus>, stderr: &str, memory_bytes: u64) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    let mib = memory_bytes >> 20;
    if stderr.contains("overflowed its stack") {
        return "stack overflow: the query recurses or nests too deeply".to_owned();
    }
    if stderr.contains("memory allocation of") || stderr.contains("capacity overflow") {
        return format!("out of memory: the query needs more than the jq worker's {mib} MiB");
    }
    match status {
        None => "the jq worker stopped answering".to_owned(),
        Some(s) => match s.signal() {
            // SIGXCPU (24 on Linux and macOS): RLIMIT_CPU.
            Some(24) => "the query used up its CPU time".to_owned(),
            Some(9) => "the jq worker was killed (out of memory or CPU time)".to_owned(),
            Some(sig) => format!("the jq worker died (signal {sig})"),
            None => format!("the jq worker exited early ({s})"),
        },
    }
}
