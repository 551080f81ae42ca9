//! The jq worker process: runs one `query_response` filter on one value and exits.
//!
//! The proxy starts it (the same `mcp-budget` binary, hidden subcommand `jq-worker`, or any
//! program whose `main` calls [`main`]) with an empty environment, and the worker bounds
//! itself before it reads anything: address space (`--memory-bytes`, RLIMIT_AS), CPU time
//! (`--cpu-secs`, RLIMIT_CPU), no file opened or written (RLIMIT_NOFILE 3, RLIMIT_FSIZE 0), no
//! core dump; it lowers its own priority (nice +10) and, on Linux, dies with its parent. The
//! filter runs on a thread with a big stack (a quarter of the memory bound, at most 256 MiB),
//! so deep recursion ends in a clean failure or, at worst, in this process dying alone.
//!
//! # Wire format (version 1)
//!
//! - stdin: the filter as one JSON string on the first line, then the input value's JSON text
//!   up to end of file.
//! - stdout, one record a line: first [`HELLO`]; then `o<json>` for each output (its compact
//!   JSON text, in order); last either `k` (done) or `e{"kind":…,"message":…}` with `kind`
//!   one of `syntax`, `runtime`, `panic`.
//!
//! Exit status 0 once the last record is written; 2 on bad arguments or unreadable stdin, 3
//! when the limits could not be set. A worker that dies (stack overflow, out of memory, CPU
//! limit, killed at the deadline) writes no last record: the proxy names the reason from its
//! exit status and stderr.

use std::ffi::OsString;
use std::io::{BufWriter, Read, Write};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::filter::{JqError, compile, run_filter};

/// The worker's first line on stdout: the proxy refuses to read any other program.
pub const HELLO: &str = "mcp-budget-jq-worker 1";

/// The largest stack given to the filter's thread: 256 MiB.
const MAX_STACK_BYTES: u64 = 256 * 1024 * 1024;

/// The last record of a run that did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Failure {
    /// `syntax`, `runtime` or `panic`.
    pub(crate) kind: String,
    /// In words.
    pub(crate) message: String,
}

impl Failure {
    fn from_error(e: JqError) -> Failure {
        let (kind, message) = match e {
            JqError::Syntax(m) => ("syntax", m),
            JqError::Runtime(m) => ("runtime", m),
            other => ("runtime", other.to_string()),
        };
        Failure {
            kind: kind.to_owned(),
            message,
        }
    }

    /// The error the proxy answers with.
    pub(crate) fn into_error(self) -> JqError {
        match self.kind.as_str() {
            "syntax" => JqError::Syntax(self.message),
            "panic" => JqError::Stopped(format!(
                "the jq library failed (a bug in it, not in the query): {}",
                self.message
            )),
            _ => JqError::Runtime(self.message),
        }
    }
}

/// The worker's own limits, from its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WorkerArgs {
    /// Address-space bound in bytes; 0 = none.
    pub(crate) memory_bytes: u64,
    /// CPU-time bound in seconds; 0 = none.
    pub(crate) cpu_secs: u64,
}

impl WorkerArgs {
    /// The arguments that give these limits.
    pub(crate) fn to_args(self) -> [String; 4] {
        [
            "--memory-bytes".to_owned(),
            self.memory_bytes.to_string(),
            "--cpu-secs".to_owned(),
            self.cpu_secs.to_string(),
        ]
    }

    fn parse(args: impl IntoIterator<Item = OsString>) -> Result<WorkerArgs, String> {
        let mut out = WorkerArgs {
            memory_bytes: 0,
            cpu_secs: 0,
        };
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let value = args
                .next()
                .and_then(|v| v.to_str().and_then(|s| s.parse::<u64>().ok()));
            let slot = match flag.to_str() {
                Some("--memory-bytes") => &mut out.memory_bytes,
                Some("--cpu-secs") => &mut out.cpu_secs,
                _ => return Err(format!("unknown argument {flag:?}")),
            };
            *slot = value.ok_or_else(|| format!("{flag:?} needs a whole number"))?;
        }
        Ok(out)
    }

    /// The filter thread's stack: a quarter of the memory bound, at most [`MAX_STACK_BYTES`].
    fn stack_bytes(self) -> usize {
        let quarter = if self.memory_bytes == 0 {
            MAX_STACK_BYTES
        } else {
            self.memory_bytes / 4
        };
        usize::try_from(quarter.clamp(8 * 1024 * 1024, MAX_STACK_BYTES)).unwrap_or(8 << 20)
    }
}

/// The worker's entry: `args` are its arguments after the program name (and subcommand):
/// `--memory-bytes N --cpu-secs N`. Reads stdin, writes stdout as the module docs say.
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    ExitCode::from(run(args))
}

/// [`main`] returning the exit status as a number (0, 2 or 3, as the module docs say), for a
/// program that ends with [`std::process::exit`] (an rmcp server whose `main` runs the worker
/// when its arguments ask for it: `mcp-budget-rmcp`).
pub fn run(args: impl IntoIterator<Item = OsString>) -> u8 {
    let args = match WorkerArgs::parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mcp-budget jq-worker: {e}");
            return 2;
        }
    };
    if let Err(e) = limit_self(args) {
        eprintln!("mcp-budget jq-worker: cannot set its limits: {e}");
        return 3;
    }
    let mut hello = std::io::stdout();
    if writeln!(hello, "{HELLO}")
        .and_then(|()| hello.flush())
        .is_err()
    {
        return 2;
    }
    let mut stdin = Vec::new();
    if let Err(e) = std::io::stdin().lock().read_to_end(&mut stdin) {
        eprintln!("mcp-budget jq-worker: cannot read stdin: {e}");
        return 2;
    }
    let done = std::thread::Builder::new()
        .name("jq".to_owned())
        .stack_size(args.stack_bytes())
        .spawn(move || {
            let mut stdout = BufWriter::new(std::io::stdout().lock());
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                serve(&stdin, &mut stdout)
            }));
            let last = match result {
                Ok(Ok(())) => "k".to_owned(),
                Ok(Err(e)) => failure_line(Failure::from_error(e)),
                Err(payload) => failure_line(Failure {
                    kind: "panic".to_owned(),
                    message: panic_message(payload.as_ref()),
                }),
            };
            writeln!(stdout, "{last}").and_then(|()| stdout.flush())
        });
    match done.map(std::thread::JoinHandle::join) {
        Ok(Ok(Ok(()))) => 0,
        Ok(Ok(Err(_))) => 2,
        Ok(Err(_)) | Err(_) => 3,
    }
}

/// Compiles the filter and writes an `o` record per output.
fn serve(stdin: &[u8], out: &mut impl Write) -> Result<(), JqError> {
    let (first, input) = match memchr::memchr(b'\n', stdin) {
        Some(i) => (&stdin[..i], &stdin[i + 1..]),
        None => (stdin, &[][..]),
    };
    let code: String = serde_json::from_slice(first)
        .map_err(|e| JqError::Internal(format!("bad filter line: {e}")))?;
    let filter = compile(&code)?;
    let never = AtomicBool::new(false);
    // The deadline is the proxy's: it kills this process.
    run_filter(&filter, input, &never, Duration::ZERO, |text| {
        out.write_all(b"o")
            .and_then(|()| out.write_all(text.as_bytes()))
            .and_then(|()| out.write_all(b"\n"))
            .map_err(|e| JqError::Internal(format!("cannot write an output: {e}")))
    })
}

fn failure_line(f: Failure) -> String {
    let json = serde_json::to_string(&f)
        .unwrap_or_else(|_| r#"{"kind":"runtime","message":"(unprintable message)"}"#.to_owned());
    format!("e{json}")
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// Sets this process's rlimits (see the module docs).
#[cfg(unix)]
fn limit_self(args: WorkerArgs) -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let hard = |n: u64| Rlimit {
        current: Some(n),
        maximum: Some(n),
    };
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let memory = Resource::As;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let memory = Resource::Data;
    if args.memory_bytes > 0 {
        setrlimit(memory, hard(args.memory_bytes))?;
    }
    if args.cpu_secs > 0 {
        // SIGXCPU at the soft limit, SIGKILL one second later.
        setrlimit(
            Resource::Cpu,
            Rlimit {
                current: Some(args.cpu_secs),
                maximum: Some(args.cpu_secs + 1),
            },
        )?;
    }
    setrlimit(Resource::Core, hard(0))?;
    // Gone with the proxy's thread that started it (that thread waits for it all along).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    // A runaway query yields the CPU to the proxy, which keeps serving other requests.
    let _ = rustix::process::nice(10);
    setrlimit(Resource::Fsize, hard(0))?;
    // stdin, stdout and stderr stay usable; no other file can be opened.
    setrlimit(Resource::Nofile, hard(3))?;
    Ok(())
}

#[cfg(not(unix))]
fn limit_self(_args: WorkerArgs) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_round_trip() {
        let a = WorkerArgs {
            memory_bytes: 1 << 30,
            cpu_secs: 11,
        };
        let parsed = WorkerArgs::parse(a.to_args().map(OsString::from)).unwrap();
        assert_eq!(parsed, a);
        assert!(WorkerArgs::parse(["--memory-bytes".into()]).is_err());
        assert!(WorkerArgs::parse(["--nope".into(), "1".into()]).is_err());
        assert_eq!(parsed.stack_bytes(), 256 << 20);
    }

    #[test]
    fn serve_writes_one_record_per_output() {
        let mut out = Vec::new();
        serve(b"\".[]\"\n[1, 2.50, \"a\"]", &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "o1\no2.50\no\"a\"\n");
        let e = serve(b"\".a[\"\n{}", &mut Vec::new()).unwrap_err();
        let f = Failure::from_error(e);
        assert_eq!(f.kind, "syntax");
        let back: Failure =
            serde_json::from_str(failure_line(f.clone()).strip_prefix('e').unwrap()).unwrap();
        assert_eq!(back, f);
    }
}
