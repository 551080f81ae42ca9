//! Offloading base64 blobs to files (DESIGN.md: "Base64 blobs … are written to a file and
//! replaced by a small description").
//!
//! What is offloaded, when it decodes to more than the threshold
//! ([`crate::config::Settings::blob_threshold`], decoded bytes):
//! - the `data` of an `image` or `audio` content item: the item becomes a `text` item whose
//!   text is the [`BlobOffload`] description (the image is no longer shown inline; its file is);
//! - the `blob` of an embedded `resource` item: the same;
//! - a JSON string inside a JSON `text` item that is a `data:` URI or wholly base64, by the
//!   rules of [`mcp_budget_core::blob`] (prose, hex ids, UUIDs are not blobs): the string
//!   becomes the description object; a `text` item that is wholly such a string likewise.
//!
//! Files go to one directory (default `$TMPDIR/mcp-budget-blobs`, mode 0700; when that one
//! belongs to another user, `$TMPDIR/mcp-budget-blobs-<uid>`) and are named by
//! the SHA-256 of the decoded bytes plus an extension from the MIME type, mode 0600. Writing
//! the same bytes twice reuses the file, but only when the file there hashes to its name (a
//! truncated or altered file is written again), and touches its modification time. Blob files
//! whose modification time is older than [`crate::config::Settings::blob_max_age`] (default
//! 24 h) are removed when the proxy starts. Pixel sizes come from the `imagesize` crate. Any
//! I/O failure leaves the blob inline: shaping never fails, and never loses data, because of
//! the disk.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use mcp_budget_core::blob::{self, PathStep};
use mcp_budget_core::wire::BlobOffload;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Members whose string value names the MIME type of a sibling blob.
const MIME_KEYS: [&str; 5] = [
    "mimeType",
    "mime_type",
    "contentType",
    "content_type",
    "mediaType",
];

/// Writes blobs to files and describes them.
#[derive(Debug, Clone)]
pub(crate) struct BlobSink {
    dir: PathBuf,
    threshold: usize,
}

impl BlobSink {
    /// Blobs that decode to more than `threshold` bytes go to files in `dir`.
    pub(crate) fn new(dir: PathBuf, threshold: usize) -> BlobSink {
        BlobSink { dir, threshold }
    }

    /// The description of an `image`/`audio`/`resource` content item whose payload was written
    /// to a file, or `None` when the item has no payload over the threshold (or the write
    /// failed).
    pub(crate) fn offload_item(&self, item: &Value) -> Option<BlobOffload> {
        let kind = item.get("type")?.as_str()?;
        let (payload, mime, kind) = match kind {
            "image" | "audio" => (
                item.get("data")?.as_str()?,
                item.get("mimeType").and_then(Value::as_str),
                kind,
            ),
            "resource" => {
                let r = item.get("resource")?;
                (
                    r.get("blob")?.as_str()?,
                    r.get("mimeType").and_then(Value::as_str),
                    "blob",
                )
            }
            _ => return None,
        };
        if payload.len() <= self.threshold {
            return None;
        }
        let decoded = blob::decode(payload).ok()?;
        if decoded.bytes.len() <= self.threshold {
            return None;
        }
        let mime = mime.map(str::to_owned).unwrap_or_else(|| decoded.mime());
        self.write(kind, &mime, &decoded.bytes)
    }

    /// Replaces every blob string inside `value` (see the module docs) by its description
    /// object. Returns how many were replaced.
    pub(crate) fn offload_in_value(&self, value: &mut Value) -> usize {
        // A blob string is longer than the threshold (decoding never makes more bytes than it
        // reads): without one, skip the core's walk, which builds the path of every string
        // (a key copy per member: ~40% of the cost of counting the tokens of a 12 MB result).
        if !has_string_over(value, self.threshold) {
            return 0;
        }
        let mut n = 0;
        for found in blob::find_blobs(value, self.threshold) {
            // A sibling member naming the type (`{"mimeType":"application/pdf","data":"…"}`)
            // says more than magic bytes can.
            let sibling_mime = found
                .path
                .split_last()
                .and_then(|(_, parent)| at_path(value, parent))
                .and_then(|p| {
                    MIME_KEYS
                        .iter()
                        .find_map(|k| p.get(*k).and_then(Value::as_str))
                        .map(str::to_owned)
                });
            let Some(slot) = at_path(value, &found.path) else {
                continue;
            };
            let Some(desc) = slot
                .as_str()
                .and_then(|s| self.offload_string(s, sibling_mime.as_deref()))
            else {
                continue;
            };
            *slot = serde_json::to_value(desc).unwrap_or(Value::Null);
            n += 1;
        }
        n
    }

    /// Whether [`Self::offload_str`] would offload `s` (nothing is written).
    pub(crate) fn is_blob(&self, s: &str) -> bool {
        self.blob_of(s).is_some()
    }

    /// `s` decoded, when it is a blob: a `data:` URI or wholly base64, decoding to more than
    /// the threshold (bytes).
    fn blob_of(&self, s: &str) -> Option<blob::Decoded> {
        if s.len() <= self.threshold {
            return None;
        }
        blob::decode(s)
            .ok()
            .filter(|d| d.bytes.len() > self.threshold)
    }

    /// The description of a string that is a blob (a `data:` URI or wholly base64, decoding
    /// to more than the threshold), once written; `None` otherwise.
    pub(crate) fn offload_str(&self, s: &str) -> Option<BlobOffload> {
        self.offload_string(s, None)
    }

    /// [`Self::offload_str`]; `hint` is the MIME type a sibling member declares, used when
    /// the string itself (a `data:` header) does not name one.
    fn offload_string(&self, s: &str, hint: Option<&str>) -> Option<BlobOffload> {
        let decoded = self.blob_of(s)?;
        let mime = match (&decoded.declared_mime, hint) {
            (None, Some(h)) if !h.is_empty() => h.to_owned(),
            _ => decoded.mime(),
        };
        self.write("base64", &mime, &decoded.bytes)
    }

    /// The decoded size in bytes above which a payload is offloaded.
    pub(crate) fn threshold(&self) -> usize {
        self.threshold
    }

    /// Writes `bytes` (of type `mime`; `kind` is the description's `offloaded`) to its file
    /// and describes it; `None` on any I/O failure.
    pub(crate) fn write(&self, kind: &str, mime: &str, bytes: &[u8]) -> Option<BlobOffload> {
        let (width, height) = if mime.starts_with("image/") || kind == "image" {
            match imagesize::blob_size(bytes) {
                Ok(size) => (Some(size.width as u64), Some(size.height as u64)),
                Err(_) => (None, None),
            }
        } else {
            (None, None)
        };
        let hash: [u8; 32] = Sha256::digest(bytes).into();
        let name = format!("{}{}", hex(&hash), extension(mime));
        let path = self.store(&name, &hash, bytes)?;
        Some(BlobOffload {
            offloaded: kind.to_owned(),
            mime_type: mime.to_owned(),
            bytes: bytes.len() as u64,
            width,
            height,
            path: path.to_string_lossy().into_owned(),
        })
    }

    /// Writes `bytes` (whose SHA-256 is `hash`) as `name` in the blob directory (0600, the
    /// directory 0700) and returns the file's path; `None` on any I/O failure or an unsafe
    /// directory. A regular file already there is kept when its content hashes to `hash`
    /// (its modification time set to now); anything else there but a directory is replaced.
    fn store(&self, name: &str, hash: &[u8; 32], bytes: &[u8]) -> Option<PathBuf> {
        let dir = self.usable_dir()?;
        let path = dir.join(name);
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if meta.is_dir() {
                return None;
            }
            if meta.is_file()
                && meta.len() == bytes.len() as u64
                && file_sha256(&path).as_ref() == Some(hash)
            {
                // The age cleanup counts from the last use.
                if let Ok(f) = std::fs::OpenOptions::new().append(true).open(&path) {
                    let _ = f.set_modified(std::time::SystemTime::now());
                }
                return Some(path);
            }
            // A different file (or a symlink) at the name: replaced by the rename below.
        }
        // Write under a unique temporary name, then rename: readers never see half a file.
        let tmp = dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            TMP_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .ok()?;
        if file.write_all(bytes).is_err() {
            let _ = std::fs::remove_file(&tmp);
            return None;
        }
        drop(file);
        if std::fs::rename(&tmp, &path).is_err() {
            let _ = std::fs::remove_file(&tmp);
            return None;
        }
        Some(path)
    }
}

impl BlobSink {
    /// Removes the blob files (and leftover temporary files) in the blob directory and its
    /// per-user sibling whose modification time is more than `max_age` ago. Only this user's
    /// regular files named like blobs are touched; `max_age` zero removes nothing. Returns how
    /// many were removed.
    pub(crate) fn remove_older_than(&self, max_age: std::time::Duration) -> usize {
        if max_age.is_zero() {
            return 0;
        }
        let Some(cutoff) = std::time::SystemTime::now().checked_sub(max_age) else {
            return 0;
        };
        let uid = my_uid();
        let mut dirs = vec![self.dir.clone()];
        if let (Some(u), Some(name)) = (uid, self.dir.file_name()) {
            let mut alt = name.to_os_string();
            alt.push(format!("-{u}"));
            dirs.push(self.dir.with_file_name(alt));
        }
        let mut removed = 0;
        for dir in dirs {
            use std::os::unix::fs::MetadataExt;
            // Only a real directory of ours (not a symlink to one).
            let ours = std::fs::symlink_metadata(&dir)
                .is_ok_and(|m| m.is_dir() && uid.is_none_or(|u| u == m.uid()));
            if !ours {
                continue;
            }
            let Ok(list) = std::fs::read_dir(&dir) else {
                continue;
            };
            for item in list.flatten() {
                let name = item.file_name();
                if !name.to_str().is_some_and(is_blob_file_name) {
                    continue;
                }
                let path = item.path();
                let Ok(meta) = std::fs::symlink_metadata(&path) else {
                    continue;
                };
                let old = meta.modified().is_ok_and(|t| t < cutoff);
                if meta.is_file()
                    && uid.is_none_or(|u| u == meta.uid())
                    && old
                    && std::fs::remove_file(&path).is_ok()
                {
                    removed += 1;
                }
            }
        }
        removed
    }

    /// The blob directory, or, when it belongs to another user (a shared temp dir), a
    /// sibling named with this process's uid (`mcp-budget-blobs-1000`).
    fn usable_dir(&self) -> Option<PathBuf> {
        let uid = my_uid();
        if ensure_private_dir(&self.dir, uid).is_some() {
            return Some(self.dir.clone());
        }
        let uid = uid?;
        let mut name = self.dir.file_name()?.to_os_string();
        name.push(format!("-{uid}"));
        let alt = self.dir.with_file_name(name);
        ensure_private_dir(&alt, Some(uid)).map(|()| alt)
    }
}

/// This process's uid (Linux: the owner of `/proc/self`).
fn my_uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").ok().map(|m| m.uid())
}

static TMP_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Creates `dir` with mode 0700 if needed; refuses a symlink, a directory of another user
/// (when `uid` is known), or one that others can read or write and whose mode cannot be fixed.
fn ensure_private_dir(dir: &Path, uid: Option<u32>) -> Option<()> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::symlink_metadata(dir) {
        Ok(meta) => {
            if !meta.is_dir() || uid.is_some_and(|u| u != meta.uid()) {
                return None;
            }
            if meta.permissions().mode() & 0o077 != 0 {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).ok()?;
            }
            Some(())
        }
        Err(_) => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .ok()?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).ok()
        }
    }
}

/// The value at `path` inside `value`.
fn at_path<'a>(value: &'a mut Value, path: &[PathStep]) -> Option<&'a mut Value> {
    let mut v = value;
    for step in path {
        v = match step {
            PathStep::Key(k) => v.get_mut(k.as_str())?,
            PathStep::Index(i) => v.get_mut(*i)?,
        };
    }
    Some(v)
}

/// Whether `name` is a blob file's (`<64 hex>.<ext>`) or a temporary one's
/// (`.<64 hex>.<ext>.<pid>.<n>.tmp`).
fn is_blob_file_name(name: &str) -> bool {
    let stem = match name.strip_prefix('.') {
        Some(rest) if name.ends_with(".tmp") => rest,
        Some(_) => return false,
        None => name,
    };
    stem.len() > 65
        && stem.as_bytes()[64] == b'.'
        && stem.as_bytes()[..64]
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

/// The SHA-256 of a file's content, read in chunks; `None` on any I/O error.
fn file_sha256(path: &Path) -> Option<[u8; 32]> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).ok()?;
        if n == 0 {
            return Some(hasher.finalize().into());
        }
        hasher.update(&buf[..n]);
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A file extension (with the dot) for a MIME type, or none.
fn extension(mime: &str) -> String {
    let sub = mime.split('/').nth(1).unwrap_or("");
    let sub = sub.split([';', '+']).next().unwrap_or("");
    let ext = match sub {
        "jpeg" => "jpg",
        "svg" => "svg",
        "mpeg" => "mp3",
        "octet-stream" | "" => "bin",
        s if s.len() <= 8 && s.bytes().all(|b| b.is_ascii_alphanumeric()) => s,
        _ => "bin",
    };
    format!(".{ext}")
}

/// Whether `value` holds a string value (not a key) longer than `bytes` bytes. No allocation.
pub(crate) fn has_string_over(value: &Value, bytes: usize) -> bool {
    match value {
        Value::String(s) => s.len() > bytes,
        Value::Array(items) => items.iter().any(|v| has_string_over(v, bytes)),
        Value::Object(map) => map.values().any(|v| has_string_over(v, bytes)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    #[test]
    fn has_string_over_sees_nested_string_values_not_keys() {
        let long = "x".repeat(11);
        let nested = serde_json::json!({"a": [1, {"b": [null, long.clone()]}]});
        assert!(has_string_over(&nested, 10));
        assert!(!has_string_over(&nested, 11));
        let key_only = serde_json::json!({ long: "short" });
        assert!(!has_string_over(&key_only, 10));
    }

    /// A PNG header (signature + IHDR) for `w`×`h`, padded with zeros to `len` bytes.
    pub(crate) fn png(w: u32, h: u32, len: usize) -> Vec<u8> {
        let mut v = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
        v.extend_from_slice(&13u32.to_be_bytes());
        v.extend_from_slice(b"IHDR");
        v.extend_from_slice(&w.to_be_bytes());
        v.extend_from_slice(&h.to_be_bytes());
        v.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        v.resize(len.max(v.len()), 0);
        v
    }

    #[test]
    fn image_item_is_written_private_and_described() {
        let dir = tempfile::tempdir().unwrap();
        let sink = BlobSink::new(dir.path().join("blobs"), 100);
        let data = STANDARD.encode(png(640, 480, 3000));
        let item = serde_json::json!({"type":"image","data":data,"mimeType":"image/png"});
        let d = sink.offload_item(&item).unwrap();
        assert_eq!((d.width, d.height, d.bytes), (Some(640), Some(480), 3000));
        assert_eq!(d.mime_type, "image/png");
        let meta = std::fs::metadata(&d.path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let dmeta = std::fs::metadata(dir.path().join("blobs")).unwrap();
        assert_eq!(dmeta.permissions().mode() & 0o777, 0o700);
        assert_eq!(STANDARD.encode(std::fs::read(&d.path).unwrap()), data);
        // Same bytes, same file.
        assert_eq!(sink.offload_item(&item).unwrap().path, d.path);
    }

    #[test]
    fn an_existing_file_is_reused_only_when_its_content_hashes_to_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let sink = BlobSink::new(dir.path().to_path_buf(), 16);
        let bytes = png(4, 4, 500);
        let item = serde_json::json!({"type":"image","data":STANDARD.encode(&bytes)});
        let path = PathBuf::from(sink.offload_item(&item).unwrap().path);
        // Same length, other content: rewritten.
        let mut tampered = bytes.clone();
        tampered[100] ^= 0xff;
        std::fs::write(&path, &tampered).unwrap();
        assert_eq!(PathBuf::from(sink.offload_item(&item).unwrap().path), path);
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        // Truncated: rewritten.
        std::fs::write(&path, &bytes[..10]).unwrap();
        sink.offload_item(&item).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        // A symlink at the name is replaced by a file; its target is left alone.
        let target = dir.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        sink.offload_item(&item).unwrap();
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // The right content is reused as is, its mtime refreshed.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .append(true)
            .open(&path)
            .unwrap()
            .set_modified(old)
            .unwrap();
        sink.offload_item(&item).unwrap();
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        assert!(mtime > old + std::time::Duration::from_secs(3000));
    }

    #[test]
    fn old_blob_files_are_removed_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = dir.path().join("blobs");
        let sink = BlobSink::new(blobs.clone(), 16);
        let fresh = PathBuf::from(
            sink.offload_str(&STANDARD.encode(png(2, 2, 300)))
                .unwrap()
                .path,
        );
        let stale = PathBuf::from(
            sink.offload_str(&STANDARD.encode(png(3, 3, 300)))
                .unwrap()
                .path,
        );
        let stale_tmp = blobs.join(format!(".{}.bin.1.2.tmp", "a".repeat(64)));
        let other = blobs.join("notes.txt");
        let odd = blobs.join(format!("{}.bin", "A".repeat(64)));
        for p in [&stale_tmp, &other, &odd] {
            std::fs::write(p, b"x").unwrap();
        }
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3 * 86_400);
        for p in [&stale, &stale_tmp, &other, &odd] {
            std::fs::File::options()
                .append(true)
                .open(p)
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        }
        assert_eq!(sink.remove_older_than(std::time::Duration::ZERO), 0);
        assert_eq!(
            sink.remove_older_than(std::time::Duration::from_secs(86_400)),
            2
        );
        assert!(fresh.exists());
        assert!(!stale.exists());
        assert!(!stale_tmp.exists());
        assert!(other.exists(), "not a blob name");
        assert!(odd.exists(), "not a blob name (uppercase)");
        // A missing directory is not created.
        let none = BlobSink::new(dir.path().join("absent"), 16);
        assert_eq!(none.remove_older_than(std::time::Duration::from_secs(1)), 0);
        assert!(!dir.path().join("absent").exists());
    }

    #[test]
    fn strings_in_json_are_offloaded_only_when_base64_and_long() {
        let dir = tempfile::tempdir().unwrap();
        let sink = BlobSink::new(dir.path().to_path_buf(), 64);
        let bytes: Vec<u8> = (0..300u32).map(|i| (i * 37 % 256) as u8).collect();
        let b64 = STANDARD.encode(&bytes);
        let uri = format!("data:image/png;base64,{}", STANDARD.encode(png(3, 5, 200)));
        let prose = "word ".repeat(100);
        let mut v = serde_json::json!({"a": b64, "b": [uri], "c": prose, "d": "short",
            "e": {"mimeType": "application/pdf", "data": b64}});
        assert_eq!(sink.offload_in_value(&mut v), 3);
        assert_eq!(v["e"]["data"]["mimeType"], "application/pdf");
        let stem = |p: &Value| {
            let p = Path::new(p.as_str().unwrap());
            (
                p.file_stem().unwrap().to_owned(),
                p.extension().unwrap().to_owned(),
            )
        };
        let (pdf, a) = (stem(&v["e"]["data"]["path"]), stem(&v["a"]["path"]));
        assert_eq!(pdf.0, a.0, "same bytes, same hash");
        assert_eq!((pdf.1.to_str(), a.1.to_str()), (Some("pdf"), Some("bin")));
        assert_eq!(v["a"]["offloaded"], "base64");
        assert_eq!(v["a"]["mimeType"], "application/octet-stream");
        assert_eq!(v["a"]["bytes"], 300);
        assert_eq!(v["b"][0]["mimeType"], "image/png");
        assert_eq!(v["b"][0]["width"], 3);
        assert_eq!(v["c"], serde_json::json!(prose));
    }

    #[test]
    fn short_strings_prose_and_hex_stay_inline() {
        let dir = tempfile::tempdir().unwrap();
        let sink = BlobSink::new(dir.path().to_path_buf(), 64);
        assert!(sink.offload_str("QUJD").is_none());
        assert!(
            sink.offload_str(&"the quick brown fox ".repeat(20))
                .is_none()
        );
        assert!(sink.offload_str(&"0123456789abcdef".repeat(20)).is_none());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn an_unusable_directory_falls_back_to_a_per_user_sibling() {
        let dir = tempfile::tempdir().unwrap();
        let taken = dir.path().join("mcp-budget-blobs");
        std::fs::write(&taken, b"not a directory").unwrap();
        let sink = BlobSink::new(taken.clone(), 16);
        let item = serde_json::json!({"type":"image","data":STANDARD.encode(png(2, 2, 100))});
        let d = sink.offload_item(&item).unwrap();
        let parent = Path::new(&d.path).parent().unwrap().to_owned();
        assert_ne!(parent, taken);
        let name = parent.file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with("mcp-budget-blobs-"), "{name}");
    }
}
