//! `copy-relay -- COMMAND [ARGS]...`: a pure byte-copy stdio relay, the floor any stdio proxy
//! pays for its extra hop. Tighter than `socat` (no poll loop: a blocking thread a direction);
//! `benches/relay.rs` measures both.
//!
//! Runs COMMAND with piped stdin/stdout (stderr inherited) and copies this process's stdin to
//! the child's stdin and the child's stdout to this process's stdout, each on its own thread,
//! with 64 KiB buffers and a flush after every read (the bytes never wait for more). Exits with
//! the child's status. Used by `benches/relay.rs` and `scripts/bench_speed.py`; never shipped.

use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};

/// Copies `from` to `to` until end of file, flushing after every read.
fn pump(mut from: impl Read, mut to: impl Write) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).and_then(|()| to.flush()).is_err() {
                    return;
                }
            }
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match args.first().map(String::as_str) {
        Some("--") => &args[1..],
        _ => &args[..],
    };
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: copy-relay -- COMMAND [ARGS]...");
        return ExitCode::from(2);
    };
    let mut child = match Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("copy-relay: cannot run {program}: {e}");
            return ExitCode::from(2);
        }
    };
    let (Some(child_in), Some(child_out)) = (child.stdin.take(), child.stdout.take()) else {
        return ExitCode::from(2);
    };
    // stdin → child: when the client closes, the child's stdin closes with the thread.
    std::thread::spawn(move || pump(std::io::stdin().lock(), child_in));
    let out = std::thread::spawn(move || pump(child_out, std::io::stdout().lock()));
    let status = child.wait();
    let _ = out.join();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    }
}
