//! Who owns response ids and cursors, and the shaper ([`Boundary`]) of each owner.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use sha2::{Digest as _, Sha256};

use crate::boundary::{Boundary, StoreHandle};
use crate::config::{ConfigError, Settings};

/// The owner of the responses a shaper caches: its response ids and cursors work only for it.
///
/// Stable across requests: a store shared between replicas keys by [`Principal::key`].
#[derive(Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Principal {
    /// The bearer token (`--auth-token`), by the lowercase hex SHA-256 of its bytes: every
    /// session and stateless request of the token.
    Token(String),
    /// One session, by its id (no token set).
    Session(String),
    /// The stateless (2026-07-28) requests of a server without a token: there is no session to
    /// scope them to, and every such client is local.
    Local,
}

impl Principal {
    /// The principal of bearer token `token`.
    pub fn token(token: &str) -> Principal {
        Principal::Token(sha256_hex(token.as_bytes()))
    }

    /// A stable key: `token:<sha256 hex>`, `session:<id>` or `local`.
    pub fn key(&self) -> String {
        match self {
            Principal::Token(hash) => format!("token:{hash}"),
            Principal::Session(id) => format!("session:{id}"),
            Principal::Local => "local".to_owned(),
        }
    }

    /// Short and safe for logs (never the whole session id or hash): `token`, `session` or
    /// `local`.
    pub fn kind(&self) -> &'static str {
        match self {
            Principal::Token(_) => "token",
            Principal::Session(_) => "session",
            Principal::Local => "local",
        }
    }
}

impl std::fmt::Debug for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Ids are credentials: show a prefix only.
        let short = |s: &str| s.chars().take(8).collect::<String>();
        match self {
            Principal::Token(h) => write!(f, "Token({}…)", short(h)),
            Principal::Session(id) => write!(f, "Session({}…)", short(id)),
            Principal::Local => f.write_str("Local"),
        }
    }
}

/// Lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The shaper of each principal, built from one set of settings.
///
/// This is the one place a [`Boundary`] is constructed for a principal; a shared store keyed
/// by principal hooks in here.
pub(crate) struct Shapers {
    settings: Settings,
    /// The shared store (`--store redis://…`), one connection for every principal; `None`:
    /// each principal's shaper has a memory store of its own.
    shared: Option<StoreHandle>,
    live: Mutex<HashMap<Principal, Arc<Boundary>>>,
}

impl std::fmt::Debug for Shapers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shapers").finish_non_exhaustive()
    }
}

impl Shapers {
    /// # Errors
    /// [`ConfigError`] when the config file cannot be read, or the shared store
    /// ([`Settings::store_url`]) cannot be reached.
    pub(crate) fn new(mut settings: Settings) -> Result<Shapers, ConfigError> {
        if settings.config_path.is_some() && settings.file.is_none() {
            settings.load_config_file()?;
        }
        let shared = match settings.store_url() {
            Some(_) => Some(StoreHandle::open(&settings)?),
            None => None,
        };
        Ok(Shapers {
            settings,
            shared,
            live: Mutex::new(HashMap::new()),
        })
    }

    /// The shaper of `principal`, built on first use (config file read, log opened).
    ///
    /// # Errors
    /// [`ConfigError`] as [`Boundary::new`].
    pub(crate) fn for_principal(
        &self,
        principal: &Principal,
    ) -> Result<Arc<Boundary>, ConfigError> {
        if let Some(b) = self.lock().get(principal) {
            return Ok(Arc::clone(b));
        }
        let built = Arc::new(match &self.shared {
            // Keys of the shared store carry the principal: its cursors work on every replica.
            Some(store) => {
                Boundary::with_store(self.settings.clone(), store.clone(), principal.key())?
            }
            None => Boundary::new(self.settings.clone())?,
        });
        let mut live = self.lock();
        Ok(Arc::clone(live.entry(principal.clone()).or_insert(built)))
    }

    /// Forgets a session principal's shaper when its session ends: its telemetry is written
    /// and its spill files removed (its cursors die with the session). Token and local
    /// principals outlive their sessions: nothing happens.
    pub(crate) fn release(&self, principal: &Principal) {
        if !matches!(principal, Principal::Session(_)) {
            return;
        }
        let gone = self.lock().remove(principal);
        if let Some(b) = gone {
            b.flush_telemetry();
            // The shared store's spill files (responses Redis did not take) are every
            // principal's: removed at exit only.
            if self.shared.is_none() {
                b.remove_spill_files();
            }
        }
    }

    /// Writes every shaper's telemetry and removes its spill files (at exit).
    pub(crate) fn finish(&self) {
        let all: Vec<_> = self.lock().drain().map(|(_, b)| b).collect();
        for b in all {
            b.flush_telemetry();
            b.remove_spill_files();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Principal, Arc<Boundary>>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_principal_is_the_sha256_of_the_token() {
        // SHA-256("abc"), FIPS 180-2 appendix B.1.
        assert_eq!(
            Principal::token("abc").key(),
            "token:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn debug_never_shows_a_whole_session_id() {
        let p = Principal::Session("0123456789abcdef0123456789abcdef".into());
        assert_eq!(format!("{p:?}"), "Session(01234567…)");
        assert_eq!(p.key(), "session:0123456789abcdef0123456789abcdef");
    }
}
