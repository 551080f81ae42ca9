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
    /// Set for a TLS-only server ([`Redis::start_tls`]): it has no plain port.
    tls: bool,
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
            tls: false,
        };
        r.restart();
        Some(r)
    }

    /// A fresh server that speaks TLS only (`--port 0 --tls-port <port>`), its certificate
    /// (for `localhost` and 127.0.0.1) signed by a CA made here ([`Redis::ca_file`]); `None`
    /// as [`Redis::start`].
    pub fn start_tls() -> Option<Redis> {
        let mut r = Redis::start()?;
        r.kill();
        r.tls = true;
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "mcp-budget test CA");
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let mut leaf =
            rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .unwrap();
        leaf.distinguished_name
            .push(rcgen::DnType::CommonName, "localhost");
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let cert = leaf.signed_by(&key, &issuer).unwrap();
        let d = r.dir.path();
        std::fs::write(d.join("ca.pem"), ca_cert.pem()).unwrap();
        std::fs::write(d.join("server.pem"), cert.pem()).unwrap();
        std::fs::write(d.join("server.key"), key.serialize_pem()).unwrap();
        r.restart();
        Some(r)
    }

    /// The PEM file of the CA that signed a TLS server's certificate.
    pub fn ca_file(&self) -> std::path::PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// `redis://127.0.0.1:<port>/0`, or `rediss://localhost:<port>/0` for a TLS server.
    pub fn url(&self) -> String {
        if self.tls {
            format!("rediss://localhost:{}/0", self.port)
        } else {
            format!("redis://127.0.0.1:{}/0", self.port)
        }
    }

    /// (Re)starts the server on the same port, empty, and waits until it answers.
    pub fn restart(&mut self) {
        self.kill();
        let mut command = Command::new("redis-server");
        if self.tls {
            let d = self.dir.path();
            command
                .args(["--port", "0", "--tls-port", &self.port.to_string()])
                .arg("--tls-cert-file")
                .arg(d.join("server.pem"))
                .arg("--tls-key-file")
                .arg(d.join("server.key"))
                .arg("--tls-ca-cert-file")
                .arg(d.join("ca.pem"))
                .args(["--tls-auth-clients", "no"]);
        } else {
            command.args(["--port", &self.port.to_string()]);
        }
        let child = command
            .args(["--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        // A redis-server built without TLS exits at once on --tls-port.
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            // A TLS server: listening is enough (the plain PING cannot reach it).
            if self.tls && TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            if !self.tls && self.try_cmd(&["PING"]).as_deref() == Some("+PONG") {
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
