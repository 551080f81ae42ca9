//! The response store as a trait, with its two implementations: the memory store
//! ([`Store`], the default: one process) and the shared store ([`Shared`]: Redis, so that
//! replicas answer each other's cursors; see [`super::remote`]).
//!
//! Every entry belongs to the principal that made it (the session, or the bearer token's
//! SHA-256 with `serve --auth-token`; `local` for the stdio proxy): a lookup by another
//! principal finds nothing (`unknown`).

use std::fmt;
use std::sync::Arc;

use mcp_budget_core::wire::CursorFault;

use super::remote::{self, Miss};
#[cfg(feature = "redis")]
use super::remote::{Put, RemoteConfig, RemoteStore};
use super::{Entry, Held, Store};
use crate::config::{ConfigError, Settings};

/// Where the boundary keeps shaped responses for `read_more` and `query_response`.
pub(crate) trait ResponseStore: Send + Sync + fmt::Debug {
    /// Hex digits of the response ids this store hands out: 12 (memory: derived from the
    /// content) or 24 (shared: 96 random bits).
    fn id_len(&self) -> usize;

    /// Makes room in memory before shaping a result of `text_bytes` bytes of text, held as work
    /// until the [`Held`] is dropped ([`Store::make_room_for`]; may wait for other work).
    fn make_room_for(&self, text_bytes: usize) -> Held;

    /// Holds `bytes` of memory for work about to take it, against the memory bound, waiting
    /// while it does not fit ([`Store::reserve`]; `keep`: the id not to push out).
    fn reserve(&self, keep: Option<&str>, bytes: usize) -> Held;

    /// Counts `bytes` work has already taken against the memory bound ([`Store::charge`]).
    fn charge(&self, bytes: usize) -> Held;

    /// Applies the memory bound now ([`Store::fit`]).
    fn fit(&self);

    /// Where a response just shaped by `principal` goes: `Ok` with the entry already kept
    /// for this very response (the memory store: the id derived from `seed`, the content,
    /// is held by an entry of `principal` that `same` accepts; its cursors stay valid), or
    /// `Err` with the id to build its entry with and [`ResponseStore::keep`] it (the shared
    /// store: always, a fresh random id).
    ///
    /// # Errors
    /// `Err(id)` is not a failure: the response is new.
    fn find_or_id(
        &self,
        principal: &str,
        seed: &[&[u8]],
        same: &dyn Fn(&Entry) -> bool,
    ) -> Result<Arc<Entry>, String>;

    /// Keeps `entry` (built with an id from [`ResponseStore::find_or_id`] and its principal)
    /// and returns it, to page.
    fn keep(&self, entry: Entry) -> Arc<Entry>;

    /// The entry `id` of `principal`, marked as used now.
    ///
    /// # Errors
    /// [`Miss::Fault`] `unknown` (never kept, or another principal's) or `expired` (dropped);
    /// [`Miss::Unavailable`] when the shared store does not answer.
    fn get(&self, principal: &str, id: &str) -> Result<Arc<Entry>, Miss>;

    /// Makes the pages computed on `entry` in this request readable by other replicas (a
    /// no-op for memory).
    ///
    /// # Errors
    /// [`Miss::Conflict`]: another replica wrote first; read the entry again and compute
    /// again. [`Miss::Fault`] / [`Miss::Unavailable`] as for [`ResponseStore::get`].
    fn save_pages(&self, entry: &Entry) -> Result<(), Miss>;

    /// Removes the memory store's spill files (at exit).
    fn remove_spill_dir(&self);

    /// The memory store, for tests that look inside it.
    #[cfg(test)]
    fn memory(&self) -> Option<&Store>;
}

impl ResponseStore for Store {
    fn id_len(&self) -> usize {
        12
    }

    fn make_room_for(&self, text_bytes: usize) -> Held {
        Store::make_room_for(self, text_bytes)
    }

    fn reserve(&self, keep: Option<&str>, bytes: usize) -> Held {
        Store::reserve(self, keep, bytes)
    }

    fn charge(&self, bytes: usize) -> Held {
        Store::charge(self, bytes)
    }

    fn fit(&self) {
        Store::fit(self);
    }

    fn find_or_id(
        &self,
        principal: &str,
        seed: &[&[u8]],
        same: &dyn Fn(&Entry) -> bool,
    ) -> Result<Arc<Entry>, String> {
        let id = self.id_for(seed, |e| *e.principal == *principal && same(e));
        match Store::get(self, &id) {
            Ok(existing) if *existing.principal == *principal => Ok(existing),
            _ => Err(id),
        }
    }

    fn keep(&self, entry: Entry) -> Arc<Entry> {
        let entry = Arc::new(entry);
        self.insert(Arc::clone(&entry));
        entry
    }

    fn get(&self, principal: &str, id: &str) -> Result<Arc<Entry>, Miss> {
        counted(memory_get(self, principal, id))
    }

    fn save_pages(&self, _entry: &Entry) -> Result<(), Miss> {
        Ok(())
    }

    fn remove_spill_dir(&self) {
        Store::remove_spill_dir(self);
    }

    #[cfg(test)]
    fn memory(&self) -> Option<&Store> {
        Some(self)
    }
}

/// The entry `id` of `principal` in the memory store `store`.
fn memory_get(store: &Store, principal: &str, id: &str) -> Result<Arc<Entry>, Miss> {
    let entry = Store::get(store, id)?;
    if *entry.principal == *principal {
        Ok(entry)
    } else {
        Err(Miss::Fault(CursorFault::Unknown))
    }
}

/// `found`, counted in [`crate::metrics`] (`mcp_budget_store_lookups_total`).
fn counted(found: Result<Arc<Entry>, Miss>) -> Result<Arc<Entry>, Miss> {
    crate::metrics::global().lookup(match &found {
        Ok(_) => "hit",
        Err(Miss::Fault(CursorFault::Expired)) => "expired",
        Err(Miss::Fault(_)) => "unknown",
        Err(Miss::Unavailable(_) | Miss::Conflict) => "unavailable",
    });
    found
}

/// The shared store: Redis, with this process's memory store for the responses Redis does not
/// take (too large, not readable back from text, or Redis failing at that moment).
#[cfg(feature = "redis")]
#[derive(Debug)]
pub(crate) struct Shared {
    remote: RemoteStore,
    local: Store,
}

#[cfg(feature = "redis")]
impl ResponseStore for Shared {
    fn id_len(&self) -> usize {
        remote::ID_HEX
    }

    fn make_room_for(&self, text_bytes: usize) -> Held {
        self.local.make_room_for(text_bytes)
    }

    fn reserve(&self, keep: Option<&str>, bytes: usize) -> Held {
        self.local.reserve(keep, bytes)
    }

    fn charge(&self, bytes: usize) -> Held {
        self.local.charge(bytes)
    }

    fn fit(&self) {
        self.local.fit();
    }

    fn find_or_id(
        &self,
        principal: &str,
        seed: &[&[u8]],
        same: &dyn Fn(&Entry) -> bool,
    ) -> Result<Arc<Entry>, String> {
        match remote::random_id() {
            Ok(id) => Err(id),
            // No randomness (never expected): this replica only, with a derived id.
            Err(_) => self.local.find_or_id(principal, seed, same),
        }
    }

    fn keep(&self, mut entry: Entry) -> Arc<Entry> {
        if entry.id.len() != remote::ID_HEX {
            return ResponseStore::keep(&self.local, entry);
        }
        let why = if !entry.can_reload() {
            "its tree cannot be read back from text".to_owned()
        } else {
            match entry.docs().map(|docs| self.remote.put(&entry, &docs)) {
                Some(Ok(mark)) => {
                    entry.remote = Some(mark);
                    return Arc::new(entry);
                }
                Some(Err(Put::TooLarge(n))) => format!("{n} bytes compressed, over the bound"),
                Some(Err(Put::Failed(e))) => e.to_string(),
                None => "its content is gone".to_owned(),
            }
        };
        crate::logging::warn(format_args!(
            "a response is kept in this replica's memory only ({why})"
        ));
        let entry = Arc::new(entry);
        self.local.insert(Arc::clone(&entry));
        entry
    }

    fn get(&self, principal: &str, id: &str) -> Result<Arc<Entry>, Miss> {
        let local = memory_get(&self.local, principal, id);
        if local.is_ok() {
            return counted(local);
        }
        counted(match self.remote.get(principal, id) {
            Ok(entry) => Ok(Arc::new(entry)),
            // A response this replica kept itself and has dropped since.
            Err(Miss::Fault(CursorFault::Unknown)) => match local {
                Err(Miss::Fault(CursorFault::Expired)) => Err(CursorFault::Expired.into()),
                _ => Err(CursorFault::Unknown.into()),
            },
            Err(other) => Err(other),
        })
    }

    fn save_pages(&self, entry: &Entry) -> Result<(), Miss> {
        self.remote.save_book(entry)
    }

    fn remove_spill_dir(&self) {
        self.local.remove_spill_dir();
    }

    #[cfg(test)]
    fn memory(&self) -> Option<&Store> {
        None
    }
}

/// A response store to share between boundaries (one per session in `serve`): the memory
/// store, or Redis with `--store redis://…`. Cloning shares it.
#[derive(Debug, Clone)]
pub struct StoreHandle(pub(crate) Arc<dyn ResponseStore>);

impl StoreHandle {
    /// The store `settings` ask for: Redis when [`Settings::store_url`] is set, else the
    /// memory store (bound, TTL and spill directory from the settings). Load the config file
    /// first ([`Settings::load_config_file`]) for `[store]` and `[cache]` to count.
    ///
    /// # Errors
    /// [`ConfigError::Store`] when Redis is set but cannot be used: a bad URL or CA file, an
    /// untrusted TLS certificate, or no answer to `PING` within the timeout; or when this
    /// build lacks the `redis` feature.
    pub fn open(settings: &Settings) -> Result<StoreHandle, ConfigError> {
        let memory = || {
            Store::new(
                settings.cache_bytes(),
                settings.cache_ttl(),
                settings.cache_base_dir(),
            )
        };
        let Some(url) = settings.store_url() else {
            return Ok(StoreHandle(Arc::new(memory())));
        };
        #[cfg(not(feature = "redis"))]
        {
            let _ = url;
            Err(ConfigError::Store {
                message: "this build has no shared store: mcp-budget-engine was built without \
                          its `redis` feature (the mcp-budget binary has it)"
                    .into(),
            })
        }
        #[cfg(feature = "redis")]
        {
            let remote = RemoteStore::open(RemoteConfig {
                url,
                ttl: settings.cache_ttl(),
                timeout: settings.store_timeout(),
                max_entry_bytes: settings.store_max_entry_bytes(),
                ca_file: settings.store_ca_file(),
                cache_bytes: settings.store_cache_bytes(),
            })
            .map_err(|e| ConfigError::Store {
                message: e.to_string(),
            })?;
            Ok(StoreHandle(Arc::new(Shared {
                remote,
                local: memory(),
            })))
        }
    }

    /// Whether responses live in Redis (shared between replicas).
    pub fn is_shared(&self) -> bool {
        self.0.id_len() == remote::ID_HEX
    }
}
