//! Spill files: the text of cached responses the memory bound pushed out of memory.
//!
//! Each proxy process spills into a directory of its own, `mcp-budget-cache-<pid>-<n>` under
//! the base directory ([`crate::config::Settings::cache_dir`], default the system temp dir),
//! created on the first spill with mode 0700 (never an existing directory: `mkdir` must
//! create it). Each spilled response is one file in it, mode 0600, created exclusively,
//! removed when the response leaves the cache. The directory is removed when the store is
//! dropped or [`SpillDir::remove`] is called (the proxy does at exit); directories left by
//! proxies that died without cleaning up (their pid no longer runs) are removed when a new
//! one is created.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Prefix of every spill directory's name.
pub(crate) const DIR_PREFIX: &str = "mcp-budget-cache-";

/// The process's spill directory, created on first use.
#[derive(Debug)]
pub(crate) struct SpillDir {
    base: PathBuf,
    dir: Mutex<Option<PathBuf>>,
    seq: AtomicU64,
}

impl SpillDir {
    /// Spill directories go under `base` (created 0700 when missing).
    pub(crate) fn new(base: PathBuf) -> SpillDir {
        SpillDir {
            base,
            dir: Mutex::new(None),
            seq: AtomicU64::new(0),
        }
    }

    /// The directory, when it has been created.
    #[cfg(test)]
    pub(crate) fn path(&self) -> Option<PathBuf> {
        self.dir.lock().ok().and_then(|d| d.clone())
    }

    /// Writes `texts` one after the other to a new file (mode 0600) named after `id`.
    ///
    /// # Errors
    /// Any I/O error creating the directory or writing the file (a partly written file is
    /// removed).
    pub(crate) fn write(&self, id: &str, texts: &[String]) -> std::io::Result<SpillFile> {
        let dir = self.ensure()?;
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{id}-{n}.json"));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        let spill = SpillFile {
            path,
            lens: texts.iter().map(String::len).collect(),
        };
        // On error `spill` is dropped, which removes the file.
        for t in texts {
            file.write_all(t.as_bytes())?;
        }
        file.flush()?;
        Ok(spill)
    }

    /// Removes the directory and everything in it.
    pub(crate) fn remove(&self) {
        if let Ok(mut d) = self.dir.lock()
            && let Some(dir) = d.take()
        {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    fn ensure(&self) -> std::io::Result<PathBuf> {
        let mut guard = self
            .dir
            .lock()
            .map_err(|_| std::io::Error::other("spill directory lock poisoned"))?;
        if let Some(d) = &*guard {
            return Ok(d.clone());
        }
        if !self.base.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.base)?;
        }
        sweep_stale(&self.base);
        let pid = std::process::id();
        let mut last = None;
        for attempt in 0..64u32 {
            let nonce = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
                ^ attempt.wrapping_mul(0x9E37_79B9);
            let dir = self.base.join(format!("{DIR_PREFIX}{pid}-{nonce:08x}"));
            // Not recursive: fails when anything (a directory, a symlink) is already there.
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {
                    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
                    *guard = Some(dir.clone());
                    return Ok(dir);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no free spill directory name")))
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Removes the spill directories in `base` that belong to this user and to a process that
/// no longer runs (Linux: no `/proc/<pid>`).
fn sweep_stale(base: &Path) {
    let Ok(me) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
        return;
    };
    let Ok(list) = std::fs::read_dir(base) else {
        return;
    };
    for item in list.flatten() {
        let name = item.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let path = item.path();
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// One spilled response: its file and the byte length of each text in it. Dropping it removes
/// the file.
#[derive(Debug)]
pub(crate) struct SpillFile {
    path: PathBuf,
    lens: Vec<usize>,
}

impl SpillFile {
    /// Total bytes of the file.
    pub(crate) fn len(&self) -> usize {
        self.lens.iter().sum()
    }

    /// The texts, read back.
    ///
    /// # Errors
    /// [`LoadError::Io`] when the file cannot be read, [`LoadError::Damaged`] when its length
    /// or encoding is not what was written.
    pub(crate) fn read(&self) -> Result<Vec<String>, LoadError> {
        let bytes = std::fs::read(&self.path)?;
        if bytes.len() != self.len() {
            return Err(LoadError::Damaged);
        }
        let mut out = Vec::with_capacity(self.lens.len());
        let mut at = 0;
        for &n in &self.lens {
            let part = bytes.get(at..at + n).ok_or(LoadError::Damaged)?;
            out.push(String::from_utf8(part.to_vec()).map_err(|_| LoadError::Damaged)?);
            at += n;
        }
        Ok(out)
    }
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Why an entry's content could not be brought back.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    /// The spill file could not be read.
    #[error("cannot read the spill file: {0}")]
    Io(#[from] std::io::Error),
    /// The spill file does not hold what was written (not UTF-8, wrong length, not JSON).
    #[error("the spill file is damaged")]
    Damaged,
    /// No form of the content is left (never expected).
    #[error("the cached content is gone")]
    Gone,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_private_read_back_and_removed() {
        let base = tempfile::tempdir().unwrap();
        let dir = SpillDir::new(base.path().join("sub"));
        assert!(dir.path().is_none(), "created on first use only");
        let texts = vec!["[1,2]".to_owned(), String::new(), "é🎉 text".to_owned()];
        let file = dir.write("0123456789ab", &texts).unwrap();
        let d = dir.path().unwrap();
        let name = d.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(
            name.starts_with(&format!("{DIR_PREFIX}{}-", std::process::id())),
            "{name}"
        );
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&d), 0o700);
        assert_eq!(mode(&file.path), 0o600);
        assert_eq!(file.read().unwrap(), texts);
        std::fs::write(&file.path, "short").unwrap();
        assert!(matches!(file.read(), Err(LoadError::Damaged)));
        let path = file.path.clone();
        drop(file);
        assert!(!path.exists());
        drop(dir);
        assert!(!d.exists(), "removed with the store");
    }

    #[test]
    fn stale_directories_of_dead_processes_are_swept() {
        let base = tempfile::tempdir().unwrap();
        // A pid above the kernel's maximum (4194304) never runs.
        let stale = base.path().join(format!("{DIR_PREFIX}4194305-00000000"));
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join("x.json"), "[]").unwrap();
        let live = base
            .path()
            .join(format!("{DIR_PREFIX}{}-ffffffff", std::process::id()));
        std::fs::create_dir(&live).unwrap();
        let other = base.path().join("unrelated-4194305");
        std::fs::create_dir(&other).unwrap();
        let dir = SpillDir::new(base.path().to_path_buf());
        let _f = dir.write("0123456789ab", &["x".to_owned()]).unwrap();
        assert!(!stale.exists());
        assert!(live.exists());
        assert!(other.exists());
    }
}
