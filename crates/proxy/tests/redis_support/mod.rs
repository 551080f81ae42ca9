//! A real `redis-server` for tests: started on a free local port (no persistence), stopped on
//! drop. Shared by the proxy crate's and the CLI's shared-store tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One `redis-server` process of this test.
pub struct Redis {
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: tempfile::TempDir,
}

/// A local port nobody listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Redis {
    /// A fresh server, or `None` when `redis-server` is not installed and
    /// `MCP_BUDGET_REQUIRE_REDIS` is not set (scripts/test.sh sets it after installing it).
    pub fn start() -> Option<Redis> {
        let present = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !present {
            assert!(
                std::env::var_os("MCP_BUDGET_REQUIRE_REDIS").is_none(),
                "MCP_BUDGET_REQUIRE_REDIS is set but no redis-server is on PATH"
            );
            eprintln!("SKIPPED: no redis-server on PATH (apt-get install redis-server)");
            return None;
        }
        let mut r = Redis {
            child: None,
            port: free_port(),
            dir: tempfile::tempdir().unwrap(),
        };
        r.restart();
        Some(r)
    }

    /// `redis://127.0.0.1:<port>/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// (Re)starts the server on the same port, empty, and waits until it answers.
    pub fn restart(&mut self) {
        self.kill();
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.try_cmd(&["PING"]).as_deref() == Some("+PONG") {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server on port {} did not answer", self.port);
    }

    /// Kills the server (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Sends one command; returns the first line of the reply (`+OK`, `:3`, `$5` …).
    pub fn cmd(&self, args: &[&str]) -> String {
        self.try_cmd(args).expect("redis answers")
    }

    fn try_cmd(&self, args: &[&str]) -> Option<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(out.as_bytes()).ok()?;
        let mut line = String::new();
        BufReader::new(s).read_line(&mut line).ok()?;
        Some(line.trim_end().to_owned())
    }

    /// How many keys the server holds.
    pub fn dbsize(&self) -> u64 {
        self.cmd(&["DBSIZE"])
            .trim_start_matches(':')
            .parse()
            .unwrap()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}
