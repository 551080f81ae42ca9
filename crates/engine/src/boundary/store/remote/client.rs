//! The Redis client of the shared store (the `redis` feature): see [`super`] for what is
//! stored, the lifetimes, the concurrency and the faults.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_budget_core::wire::CursorFault;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use sha2::{Digest, Sha256};

use super::super::book::Mark;
use super::super::entry::Entry;
use super::types::{ID_HEX, Miss, RemoteConfig, RemoteError};
use super::{cache, codec};
use mcp_budget_core::shape::book::PageBook;

/// A body decompresses to at most this many times `max_entry_bytes` (a guard against a
/// damaged or hostile value).
const INFLATE_FACTOR: usize = 64;

/// Writes `book` and the next `ver` only when `ver` is still the one read.
/// KEYS[1] the hash; ARGV: ver read, new book, new ver, TTL in ms.
/// Returns 1 (written), 0 (another writer was first), -1 (the hash is gone).
const CAS_BOOK: &str = r"
local v = redis.call('HGET', KEYS[1], 'ver')
if not v then return -1 end
if v ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'book', ARGV[2], 'ver', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
";

/// A connection to Redis with a small runtime of its own, so that the synchronous boundary
/// (on tokio's blocking pool, or any thread) can wait for commands without an async context.
pub(crate) struct RemoteStore {
    conn: ConnectionManager,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    handle: tokio::runtime::Handle,
    cas: Arc<redis::Script>,
    /// Parsed bodies of responses this replica read or wrote ([`cache`]).
    cache: cache::ReplicaCache,
    config: RemoteConfig,
    /// Where Redis is (host and port, never credentials), for messages.
    place: String,
}

impl std::fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteStore")
            .field("at", &self.place)
            .field("ttl", &self.config.ttl)
            .field("timeout", &self.config.timeout)
            .finish()
    }
}

impl Drop for RemoteStore {
    fn drop(&mut self) {
        // Dropping a runtime inside an async context panics; this one never waits.
        if let Some(rt) = self.runtime.lock().ok().and_then(|mut r| r.take()) {
            rt.shutdown_background();
        }
    }
}

/// The principal's part of a key: the first 32 hex digits of its SHA-256.
pub(crate) fn principal_key(principal: &str) -> String {
    let digest = Sha256::digest(principal.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh response id: [`ID_HEX`] lowercase hex digits from the OS's CSPRNG (96 bits).
///
/// # Errors
/// The OS gave no random bytes (never expected on Linux).
pub(crate) fn random_id() -> Result<String, RemoteError> {
    let mut bytes = [0u8; ID_HEX / 2];
    getrandom::fill(&mut bytes).map_err(|e| RemoteError::Redis(format!("no random bytes: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl RemoteStore {
    /// Connects to Redis at `config.url` and checks it answers (`PING`).
    ///
    /// # Errors
    /// [`RemoteError::Url`] for a URL that is not `redis://` or `rediss://`, or a CA file that
    /// cannot be read or holds no PEM certificate; [`RemoteError::Redis`] /
    /// [`RemoteError::Timeout`] when Redis cannot be reached (or its certificate is not
    /// trusted) within the deadline.
    pub(crate) fn open(config: RemoteConfig) -> Result<RemoteStore, RemoteError> {
        let client = client_for(&config)?;
        let place = match &client.get_connection_info().addr() {
            redis::ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
            redis::ConnectionAddr::TcpTls { host, port, .. } => format!("{host}:{port} (TLS)"),
            other => format!("{other}"),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("mcp-budget-redis")
            .enable_all()
            .build()
            .map_err(|e| RemoteError::Redis(format!("cannot start a runtime: {e}")))?;
        let handle = runtime.handle().clone();
        let mc = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.timeout))
            .set_response_timeout(Some(config.timeout))
            .set_number_of_retries(2)
            .set_max_delay(config.timeout);
        let timeout = config.timeout;
        let conn = wait(&handle, timeout * 2, async move {
            let mut conn = ConnectionManager::new_with_config(client, mc).await?;
            redis::cmd("PING").query_async::<()>(&mut conn).await?;
            Ok(conn)
        })
        .map_err(|e| match e {
            RemoteError::Redis(m) => RemoteError::Redis(format!("cannot reach {place}: {m}")),
            other => other,
        })?;
        Ok(RemoteStore {
            conn,
            runtime: Mutex::new(Some(runtime)),
            handle,
            cas: Arc::new(redis::Script::new(CAS_BOOK)),
            cache: cache::ReplicaCache::new(config.cache_bytes),
            config,
            place,
        })
    }

    /// Runs the command(s) `fut` within the deadline, timed as `op` in [`crate::metrics`].
    fn run<T: Send + 'static>(
        &self,
        op: &'static str,
        fut: impl Future<Output = redis::RedisResult<T>> + Send + 'static,
    ) -> Result<T, RemoteError> {
        let started = std::time::Instant::now();
        let out = wait(&self.handle, self.config.timeout, fut);
        crate::metrics::global().store_op(op, started.elapsed(), out.is_err());
        out
    }

    fn key(principal: &str, id: &str) -> String {
        format!("mcp-budget:{}:{id}", principal_key(principal))
    }

    fn ttl_ms(&self) -> u64 {
        self.config.ttl.as_millis().clamp(1, u128::from(u64::MAX)) as u64
    }

    /// Writes the new entry `entry` (its documents `docs`): body, book and tombstone, with
    /// the TTL. Returns the mark of what was written.
    ///
    /// # Errors
    /// [`Put::TooLarge`] past `max_entry_bytes`, [`Put::Failed`] when Redis did not take it.
    pub(crate) fn put(
        &self,
        entry: &Entry,
        docs: &[mcp_budget_core::paginate::Document],
    ) -> Result<Mark, Put> {
        let body = codec::compress(&codec::encode_body(entry, docs));
        if body.len() > self.config.max_entry_bytes {
            return Err(Put::TooLarge(body.len()));
        }
        let book = entry
            .book
            .lock()
            .map(|b| codec::encode_book(&b))
            .map_err(|_| Put::Failed(RemoteError::Redis("poisoned book".into())))?;
        let key = RemoteStore::key(&entry.principal, &entry.id);
        let tomb = format!("{key}:t");
        let ttl = self.ttl_ms();
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("HSET")
            .arg(&key)
            .arg("body")
            .arg(body)
            .arg("book")
            .arg(&book)
            .arg("ver")
            .arg(0)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(ttl)
            .ignore()
            .cmd("SET")
            .arg(&tomb)
            .arg(1)
            .arg("PX")
            .arg(ttl.saturating_mul(2))
            .ignore();
        let mut conn = self.conn.clone();
        self.run(
            "put",
            async move { pipe.query_async::<()>(&mut conn).await },
        )
        .map_err(Put::Failed)?;
        self.cache.put(&key, entry);
        Ok(Mark { key, ver: 0, book })
    }

    /// The entry `id` of `principal`, its TTL refreshed: the page book (and version) read
    /// from Redis, the body too unless this replica's cache ([`cache`]) holds it parsed.
    ///
    /// # Errors
    /// [`Miss::Fault`] `unknown` (no such hash: never written, another principal's, or
    /// flushed) or `expired` (the tombstone is left, or the body does not read back);
    /// [`Miss::Unavailable`] when Redis does not answer.
    pub(crate) fn get(&self, principal: &str, id: &str) -> Result<Entry, Miss> {
        let key = RemoteStore::key(principal, id);
        let tomb = format!("{key}:t");
        let ttl = self.ttl_ms();
        let cached = self.cache.get(&key);
        let mut pipe = redis::pipe();
        pipe.cmd("HMGET").arg(&key).arg("ver").arg("book");
        if cached.is_none() {
            pipe.arg("body");
        }
        pipe.cmd("PEXPIRE")
            .arg(&key)
            .arg(ttl)
            .ignore()
            .cmd("EXISTS")
            .arg(&tomb)
            .cmd("PEXPIRE")
            .arg(&tomb)
            .arg(ttl.saturating_mul(2))
            .ignore();
        let mut conn = self.conn.clone();
        let (mut fields, tomb_left): (Vec<Option<Vec<u8>>>, bool) = self
            .run("get", async move { pipe.query_async(&mut conn).await })
            .map_err(|e| Miss::Unavailable(e.to_string()))?;
        let body = if cached.is_none() {
            fields.pop().flatten()
        } else {
            None
        };
        let ver = fields
            .first()
            .cloned()
            .flatten()
            .and_then(|v| String::from_utf8(v).ok()?.parse::<u64>().ok());
        let book_text = fields
            .get(1)
            .cloned()
            .flatten()
            .and_then(|b| String::from_utf8(b).ok());
        let (Some(ver), Some(book_text)) = (ver, book_text) else {
            self.cache.forget(&key);
            return Err(Miss::Fault(if tomb_left {
                CursorFault::Expired
            } else {
                CursorFault::Unknown
            }));
        };
        let damaged = |what: &str| {
            crate::logging::warn(format_args!(
                "the shared store holds a damaged response ({what})"
            ));
            Miss::Fault(CursorFault::Expired)
        };
        let book = codec::decode_book(&book_text).map_err(|_| damaged("book"))?;
        let mut entry = match cached {
            Some(entry) => entry,
            None => {
                self.cache.missed();
                let Some(body) = body else {
                    return Err(damaged("no body"));
                };
                let limit = self.config.max_entry_bytes.saturating_mul(INFLATE_FACTOR);
                let raw = codec::decompress(&body, limit).map_err(|_| damaged("frame"))?;
                let entry = codec::decode_body(&raw, id, principal, PageBook::default())
                    .map_err(|_| damaged("body"))?;
                self.cache.put(&key, &entry);
                entry
            }
        };
        entry.book = Mutex::new(book);
        entry.remote = Some(Mark {
            key,
            ver,
            book: book_text,
        });
        Ok(entry)
    }

    /// Writes back the pages `entry` (read by [`RemoteStore::get`] or written by
    /// [`RemoteStore::put`]) gained in this request, if any.
    ///
    /// # Errors
    /// [`Miss::Conflict`] when another replica wrote the book since it was read (read again);
    /// [`Miss::Fault`] `expired` when the hash is gone; [`Miss::Unavailable`].
    pub(crate) fn save_book(&self, entry: &Entry) -> Result<(), Miss> {
        let Some(mark) = &entry.remote else {
            return Ok(());
        };
        let book = entry
            .book
            .lock()
            .map(|b| codec::encode_book(&b))
            .map_err(|_| Miss::Unavailable("poisoned book".into()))?;
        if book == mark.book {
            return Ok(());
        }
        let key = mark.key.clone();
        let (ver, ttl) = (mark.ver, self.ttl_ms());
        let mut conn = self.conn.clone();
        let cas = Arc::clone(&self.cas);
        let written: i64 = self
            .run("save", async move {
                cas.key(key)
                    .arg(ver)
                    .arg(book)
                    .arg(ver + 1)
                    .arg(ttl)
                    .invoke_async(&mut conn)
                    .await
            })
            .map_err(|e| Miss::Unavailable(e.to_string()))?;
        match written {
            1 => Ok(()),
            0 => Err(Miss::Conflict),
            _ => Err(Miss::Fault(CursorFault::Expired)),
        }
    }
}

/// Why [`RemoteStore::put`] did not write an entry.
#[derive(Debug)]
pub(crate) enum Put {
    /// The compressed body has this many bytes, past `max_entry_bytes`.
    TooLarge(usize),
    /// Redis did not take it.
    Failed(RemoteError),
}

/// The client of `config.url`: plain TCP for `redis://`, TLS for `rediss://` (the system's
/// roots, or only the certificates of `config.ca_file`).
///
/// # Errors
/// [`RemoteError::Url`] for another scheme, a URL the redis crate does not read, or a CA file
/// that cannot be read or holds no certificate. Never echoes the URL (it may hold a password).
fn client_for(config: &RemoteConfig) -> Result<redis::Client, RemoteError> {
    let url = config.url.as_str();
    let tls = url.starts_with("rediss://");
    if !tls && !url.starts_with("redis://") {
        return Err(RemoteError::Url(
            "it must start with redis:// or rediss:// (TLS)".into(),
        ));
    }
    if !tls {
        if config.ca_file.is_some() {
            return Err(RemoteError::Url(
                "a CA file (--store-ca) needs a rediss:// (TLS) URL".into(),
            ));
        }
        return redis::Client::open(url).map_err(|e| RemoteError::Url(e.to_string()));
    }
    // The redis crate builds its rustls config from the process's default provider: ring, as
    // the HTTP upstream's (one may already be installed; then that one is used).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Some(path) = &config.ca_file else {
        return redis::Client::open(url).map_err(|e| RemoteError::Url(e.to_string()));
    };
    let pem = std::fs::read(path).map_err(|e| {
        RemoteError::Url(format!("cannot read the CA file {}: {e}", path.display()))
    })?;
    if !pem
        .windows(b"-----BEGIN CERTIFICATE-----".len())
        .any(|w| w == b"-----BEGIN CERTIFICATE-----")
    {
        return Err(RemoteError::Url(format!(
            "the CA file {} holds no PEM certificate",
            path.display()
        )));
    }
    redis::Client::build_with_tls(
        url,
        redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(pem),
        },
    )
    .map_err(|e| RemoteError::Url(e.to_string()))
}

/// Runs `fut` on `handle` and waits for it, at most `deadline` (the future is dropped then).
fn wait<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    deadline: Duration,
    fut: impl Future<Output = redis::RedisResult<T>> + Send + 'static,
) -> Result<T, RemoteError> {
    let (tx, rx) = mpsc::sync_channel(1);
    handle.spawn(async move {
        let r = tokio::time::timeout(deadline, fut).await;
        let _ = tx.send(r);
    });
    // The task's own timeout answers first; this one only guards a runtime that is gone.
    match rx.recv_timeout(deadline + Duration::from_secs(1)) {
        Ok(Ok(Ok(v))) => Ok(v),
        Ok(Ok(Err(e))) => Err(RemoteError::Redis(e.to_string())),
        Ok(Err(_)) | Err(_) => Err(RemoteError::Timeout(deadline)),
    }
}
