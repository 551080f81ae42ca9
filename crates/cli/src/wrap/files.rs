//! The file side of `wrap`: the unified diff it prints, the backup, and the atomic write that
//! keeps the file's permissions.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

/// The unified diff (3 lines of context) from `old` to `new`, headed with `path`.
pub(crate) fn unified_diff(old: &str, new: &str, path: &Path) -> String {
    let shown = path.display().to_string();
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&shown, &shown)
        .to_string()
}

/// Where the backup of `path` goes: `<file>.mcp-budget.bak` beside it.
pub(crate) fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".mcp-budget.bak");
    PathBuf::from(name)
}

/// Replaces the file at `path` (whose content was `old`) with `new`: first copies `old` to the
/// backup beside the real file (a symlink is followed, so it stays a symlink), then writes a
/// temporary file in the same directory with the original's permissions and renames it over.
/// Returns the backup's path.
///
/// # Errors
/// The file changed since it was read (a client rewrote it: run again), or the backup, the
/// temporary file or the rename cannot be written.
pub(crate) fn replace(path: &Path, old: &str, new: &str) -> anyhow::Result<PathBuf> {
    let target =
        fs::canonicalize(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let now =
        fs::read_to_string(&target).with_context(|| format!("cannot read {}", target.display()))?;
    if now != old {
        bail!(
            "{} changed while it was being rewritten (the client may have saved it); nothing \
             was written, run the command again",
            target.display()
        );
    }
    let permissions = fs::metadata(&target)
        .with_context(|| format!("cannot read the permissions of {}", target.display()))?
        .permissions();

    let backup = backup_path(&target);
    write_new(&backup, old.as_bytes(), &permissions)
        .with_context(|| format!("cannot write the backup {}", backup.display()))?;

    let dir = target.parent().unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.mcp-budget-{}.tmp", std::process::id()));
    let written =
        write_new(&temp, new.as_bytes(), &permissions).and_then(|()| fs::rename(&temp, &target));
    if let Err(err) = written {
        let _ = fs::remove_file(&temp);
        return Err(err).with_context(|| format!("cannot write {}", target.display()));
    }
    Ok(backup)
}

/// Writes `bytes` to `path` (replacing it), synced, with `permissions`.
pub(crate) fn write_new(
    path: &Path,
    bytes: &[u8],
    permissions: &fs::Permissions,
) -> std::io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    // Created with the original's mode already, so a secret-bearing config is never readable
    // by others, not even for a moment.
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        options.mode(permissions.mode() & 0o777);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    fs::set_permissions(path, permissions.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_sits_beside_the_file() {
        assert_eq!(
            backup_path(Path::new("/home/u/.cursor/mcp.json")),
            Path::new("/home/u/.cursor/mcp.json.mcp-budget.bak")
        );
    }

    #[test]
    fn diff_shows_only_the_changed_lines_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let diff = unified_diff(old, new, Path::new("x.json"));
        assert!(
            diff.starts_with("--- x.json\n+++ x.json\n@@ -2,7 +2,7 @@\n"),
            "{diff}"
        );
        assert!(diff.contains("-e\n+E\n"), "{diff}");
        assert!(!diff.contains(" a\n"), "{diff}");
    }
}
