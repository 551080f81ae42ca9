//! Sign-ins at rest: one JSON file per MCP server under the user's config directory
//! (`$MCP_BUDGET_OAUTH_DIR`, else `$XDG_CONFIG_HOME/mcp-budget/oauth`, `~/.config/…`,
//! `%APPDATA%\mcp-budget\oauth`), readable by the user only (mode 0600 on Unix, written whole
//! to a temporary file then renamed). Every proxy of the same server on the machine reads the
//! same file, so one sign-in serves them all; a lock file beside it makes one of them sign in
//! or refresh at a time.
//!
//! Tokens are never logged, put into messages or argv; the file's `Debug` form hides them.

use std::fmt;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::discovery::ServerMetadata;
use super::error::OAuthError;

/// The client the proxy is at the authorization server.
#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct ClientInfo {
    /// The client ID (registered, pre-registered or a metadata document's URL).
    pub(crate) client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) client_secret: Option<String>,
    /// `none`, `client_secret_basic` or `client_secret_post` (RFC 7591 §2).
    pub(crate) auth_method: String,
    /// The redirect URI registered (dynamic registration), reused while its port is free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) redirect_uri: Option<String>,
    /// How the ID was obtained: `registered`, `pre-registered` or `metadata-document`.
    pub(crate) kind: String,
}

/// The tokens of one sign-in.
#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct Tokens {
    /// The access token sent as `Authorization: Bearer`.
    pub(crate) access_token: String,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<u64>,
    /// The scopes granted, space-separated (the ones asked for when the answer names none,
    /// RFC 6749 §5.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scope: Option<String>,
}

impl Tokens {
    /// Whether the access token expires within `margin` (or has).
    pub(crate) fn expires_within(&self, margin: Duration) -> bool {
        self.expires_at
            .is_some_and(|at| now() + margin.as_secs() >= at)
    }

    /// Whether the granted scopes hold every one of `wanted` (space-separated).
    pub(crate) fn has_scopes(&self, wanted: &str) -> bool {
        let granted: Vec<&str> = self.scope.as_deref().unwrap_or("").split(' ').collect();
        wanted
            .split(' ')
            .filter(|s| !s.is_empty())
            .all(|s| granted.contains(&s))
    }
}

/// Everything kept for one MCP server.
#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The MCP server's URL as given (without user info, query or fragment).
    pub(crate) server: String,
    /// The resource identifier sent as `resource`.
    pub(crate) resource: String,
    /// The authorization server's metadata.
    pub(crate) authorization_server: ServerMetadata,
    /// The client.
    pub(crate) client: ClientInfo,
    /// The tokens, absent when signed out but the registration is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tokens: Option<Tokens>,
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Record")
            .field("server", &self.server)
            .field("client_id", &self.client.client_id)
            .field("signed_in", &self.tokens.is_some())
            .finish_non_exhaustive()
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The directory of the sign-ins.
///
/// # Errors
///
/// [`OAuthError::Store`] when neither the variables nor a home directory tell where it is.
pub(crate) fn directory() -> Result<PathBuf, OAuthError> {
    if let Some(dir) = std::env::var_os("MCP_BUDGET_OAUTH_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let base = if cfg!(windows) {
        std::env::var_os("APPDATA").map(PathBuf::from)
    } else {
        std::env::var_os("XDG_CONFIG_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::home_dir().map(|h| h.join(".config")))
    };
    base.map(|b| b.join("mcp-budget").join("oauth"))
        .ok_or_else(|| {
            OAuthError::Store(
                "cannot tell the config directory (no home directory); set MCP_BUDGET_OAUTH_DIR"
                    .to_owned(),
            )
        })
}

/// The file of one MCP server's sign-in: the first 16 hex digits of the SHA-256 of its URL.
pub(crate) fn file_for(dir: &Path, server: &str) -> PathBuf {
    let digest = Sha256::digest(server.as_bytes());
    let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("{name}.json"))
}

/// The record in `path`, `None` when there is none.
///
/// # Errors
///
/// [`OAuthError::Store`] when the file exists but cannot be read or parsed.
pub(crate) fn load(path: &Path) -> Result<Option<Record>, OAuthError> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            OAuthError::Store(format!(
                "{} is not a sign-in this version can read ({e}); remove it with `mcp-budget \
                 logout`",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(OAuthError::Store(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// Writes `record` to `path` (user-only permissions, replaced whole).
///
/// # Errors
///
/// [`OAuthError::Store`] when the directory or the file cannot be written.
pub(crate) fn save(path: &Path, record: &Record) -> Result<(), OAuthError> {
    let fail =
        |e: std::io::Error| OAuthError::Store(format!("cannot write {}: {e}", path.display()));
    if let Some(dir) = path.parent() {
        create_private_dir(dir).map_err(fail)?;
    }
    let json = serde_json::to_vec_pretty(record)
        .map_err(|e| OAuthError::Store(format!("cannot encode the sign-in: {e}")))?;
    let temporary = path.with_extension(format!("json.{}.tmp", std::process::id()));
    {
        let mut file = private_file(&temporary).map_err(fail)?;
        file.write_all(&json).map_err(fail)?;
        file.sync_all().map_err(fail)?;
    }
    fs::rename(&temporary, path).map_err(fail)
}

/// Removes the record in `path`; whether there was one.
///
/// # Errors
///
/// [`OAuthError::Store`] when it exists and cannot be removed.
pub(crate) fn remove(path: &Path) -> Result<bool, OAuthError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(OAuthError::Store(format!(
            "cannot remove {}: {e}",
            path.display()
        ))),
    }
}

/// Every record in `dir`, with its file.
///
/// # Errors
///
/// [`OAuthError::Store`] when the directory exists but cannot be listed.
pub(crate) fn all(dir: &Path) -> Result<Vec<(PathBuf, Record)>, OAuthError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(OAuthError::Store(format!(
                "cannot list {}: {e}",
                dir.display()
            )));
        }
    };
    let mut records = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json")
            && let Ok(Some(record)) = load(&path)
        {
            records.push((path, record));
        }
    }
    records.sort_by(|a, b| a.1.server.cmp(&b.1.server));
    Ok(records)
}

/// An exclusive lock on the sign-in of `path`, across processes; released when dropped.
#[derive(Debug)]
pub(crate) struct Lock(#[allow(dead_code)] fs::File);

/// Waits for the lock of the record `path` (a `.lock` file beside it), polling every 100 ms
/// for up to `limit`.
///
/// # Errors
///
/// [`OAuthError::Store`] when the lock file cannot be made or the lock is held past `limit`.
pub(crate) async fn lock(path: &Path, limit: Duration) -> Result<Lock, OAuthError> {
    let lock_path = path.with_extension("lock");
    let fail =
        |e: std::io::Error| OAuthError::Store(format!("cannot lock {}: {e}", lock_path.display()));
    if let Some(dir) = lock_path.parent() {
        create_private_dir(dir).map_err(fail)?;
    }
    let file = private_file_keep(&lock_path).map_err(fail)?;
    let start = std::time::Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Lock(file)),
            Err(fs::TryLockError::WouldBlock) if start.elapsed() < limit => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(OAuthError::Store(format!(
                    "another mcp-budget has been signing in to this server for over {} s",
                    limit.as_secs()
                )));
            }
            Err(fs::TryLockError::Error(e)) => return Err(fail(e)),
        }
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}

fn private_file(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)
}

fn private_file_keep(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_kept_for_the_user_only_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_for(&dir.path().join("oauth"), "https://example.com/mcp");
        assert!(load(&path).unwrap().is_none());
        let record = Record {
            server: "https://example.com/mcp".to_owned(),
            tokens: Some(Tokens {
                access_token: "secret-token".to_owned(),
                scope: Some("a b".to_owned()),
                ..Tokens::default()
            }),
            ..Record::default()
        };
        save(&path, &record).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let back = load(&path).unwrap().unwrap();
        assert_eq!(back.tokens.as_ref().unwrap().access_token, "secret-token");
        assert!(!format!("{back:?}").contains("secret-token"));
        assert!(back.tokens.as_ref().unwrap().has_scopes("b a"));
        assert!(!back.tokens.as_ref().unwrap().has_scopes("a c"));
        assert_eq!(all(&dir.path().join("oauth")).unwrap().len(), 1);
        assert!(remove(&path).unwrap());
        assert!(!remove(&path).unwrap());
    }

    #[test]
    fn expiry_is_judged_with_a_margin() {
        let tokens = Tokens {
            expires_at: Some(now() + 30),
            ..Tokens::default()
        };
        assert!(tokens.expires_within(Duration::from_secs(60)));
        assert!(!tokens.expires_within(Duration::from_secs(5)));
        assert!(!Tokens::default().expires_within(Duration::from_secs(60)));
    }
}
