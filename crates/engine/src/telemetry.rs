//! Telemetry: one JSON object per line per `tools/call` (DESIGN.md, "Telemetry").
//!
//! The record shape is [`mcp_budget_core::wire::TelemetryRecord`]. Lines are written by a
//! background thread: the caller hands over the texts of the original result, and the thread
//! counts their tokens (`tokens_pre`, which can take a while for a 12 MB original) after the
//! shaped result has gone out. No payload content is ever written.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use mcp_budget_core::tokens::Encoding;
use mcp_budget_core::wire::{Outcome, TelemetryRecord};

use crate::config::ConfigError;

/// A record whose `tokens_pre` is still to be counted.
#[derive(Debug)]
pub struct PendingRecord {
    /// The record, `tokens_pre` = 0 until counted.
    pub record: TelemetryRecord,
    /// The model-visible texts of the original result; `tokens_pre` is the sum of their counts.
    pub pre_texts: Vec<String>,
}

enum Job {
    Record(Box<PendingRecord>),
    Flush(SyncSender<()>),
}

/// Appends telemetry records to a JSONL file from a background thread.
#[derive(Debug)]
pub struct Telemetry {
    sender: Mutex<Option<Sender<Job>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
    path: PathBuf,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Job::Record(_) => "Record",
            Job::Flush(_) => "Flush",
        })
    }
}

impl Telemetry {
    /// Opens `path` for appending (creating it) and starts the writer thread, which counts
    /// tokens in `encoding`.
    ///
    /// A new file is created with mode 0600 on Unix (owner read/write only: records name the
    /// tools called and when); an existing file is appended to and keeps its mode.
    ///
    /// # Errors
    /// [`ConfigError::Log`] when the file cannot be opened or the thread cannot start.
    pub fn open(path: &Path, encoding: Encoding) -> Result<Telemetry, ConfigError> {
        let log_err = |source| ConfigError::Log {
            path: path.to_path_buf(),
            source,
        };
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(path).map_err(log_err)?;
        let (tx, rx) = mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("mcp-budget-telemetry".into())
            .spawn(move || write_loop(rx, file, encoding))
            .map_err(log_err)?;
        Ok(Telemetry {
            sender: Mutex::new(Some(tx)),
            worker: Mutex::new(Some(worker)),
            path: path.to_path_buf(),
        })
    }

    /// The file records go to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues a record; returns at once. Write errors are reported once on stderr.
    pub fn send(&self, pending: PendingRecord) {
        if let Ok(guard) = self.sender.lock()
            && let Some(tx) = guard.as_ref()
        {
            let _ = tx.send(Job::Record(Box::new(pending)));
        }
    }

    /// Blocks until every record queued before this call is written.
    pub fn flush(&self) {
        let (tx, rx) = mpsc::sync_channel(1);
        let sent = match self.sender.lock() {
            Ok(guard) => guard
                .as_ref()
                .is_some_and(|s| s.send(Job::Flush(tx)).is_ok()),
            Err(_) => false,
        };
        if sent {
            let _ = rx.recv();
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Ok(mut guard) = self.sender.lock() {
            guard.take();
        }
        if let Ok(mut guard) = self.worker.lock()
            && let Some(worker) = guard.take()
        {
            let _ = worker.join();
        }
    }
}

fn write_loop(rx: Receiver<Job>, mut file: File, encoding: Encoding) {
    let mut reported = false;
    for job in rx {
        match job {
            Job::Flush(done) => {
                let _ = file.flush();
                let _ = done.send(());
            }
            Job::Record(pending) => {
                let PendingRecord {
                    mut record,
                    pre_texts,
                } = *pending;
                record.tokens_pre = pre_texts.iter().map(|t| encoding.count(t) as u64).sum();
                let mut line = serde_json::to_string(&record).unwrap_or_default();
                line.push('\n');
                if let Err(e) = file.write_all(line.as_bytes())
                    && !reported
                {
                    eprintln!("mcp-budget: telemetry write failed: {e}");
                    reported = true;
                }
            }
        }
    }
}

/// A record with `ts` = now and `tokens_pre` = 0 (counted by the writer).
#[allow(clippy::too_many_arguments)]
pub fn record(
    tool: &str,
    bytes_pre: u64,
    bytes: u64,
    tokens: u64,
    upstream_ms: u64,
    shape_ms: u64,
    outcome: Outcome,
    response_id: Option<String>,
) -> TelemetryRecord {
    TelemetryRecord {
        ts: rfc3339_now(),
        tool: tool.to_owned(),
        bytes_pre,
        bytes,
        tokens_pre: 0,
        tokens,
        upstream_ms,
        shape_ms,
        outcome,
        response_id,
    }
}

/// Now, UTC, as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_now() -> String {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(d.as_secs(), d.subsec_millis())
}

/// `secs` since the Unix epoch (UTC) and `millis` as RFC 3339.
fn rfc3339(secs: u64, millis: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm), proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339(1_796_025_248, 123), "2026-11-30T07:54:08.123Z");
    }

    #[test]
    fn records_are_written_with_counted_tokens_pre() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let t = Telemetry::open(&path, Encoding::Cl100kBase).unwrap();
        let mut r = record("x", 13, 13, 4, 7, 1, Outcome::Fit, None);
        r.tokens_pre = 999;
        t.send(PendingRecord {
            record: r,
            pre_texts: vec!["Hello, world!".into()],
        });
        t.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        let rec: TelemetryRecord = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(rec.tokens_pre, 4);
        assert_eq!(rec.tool, "x");
        assert_eq!(text.lines().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_new_log_is_private_and_an_existing_one_keeps_working() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.jsonl");
        drop(Telemetry::open(&path, Encoding::Cl100kBase).unwrap());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");

        let old = dir.path().join("old.jsonl");
        std::fs::write(&old, "{}\n").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
        let t = Telemetry::open(&old, Encoding::Cl100kBase).unwrap();
        t.send(PendingRecord {
            record: record("y", 1, 1, 1, 1, 1, Outcome::Fit, None),
            pre_texts: Vec::new(),
        });
        t.flush();
        let text = std::fs::read_to_string(&old).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.starts_with("{}\n"), "{text}");
        let mode = std::fs::metadata(&old).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644, "an existing file keeps its mode");
    }
}
