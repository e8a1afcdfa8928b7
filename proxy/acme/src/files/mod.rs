//! Files written so that a reader never sees half of one: the bytes go to a temporary
//! file in the same directory, are synced, and take the final name by `rename`, which
//! replaces the old file in one step. The proxy polls certificate files by mtime and
//! length; it sees the old file or the new one, nothing between.
//!
//! Blocking `std::fs` calls: async callers run them through [`blocking`].

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Error;

/// Mode of files anyone on the machine may read (certificates).
pub(crate) const PUBLIC: u32 = 0o644;
/// Mode of files only the owner may read (private keys, the account).
pub(crate) const PRIVATE: u32 = 0o600;
/// Mode of the directories this crate creates.
const DIRECTORY: u32 = 0o700;

/// Creates `dir` and its missing parents (mode 0700).
pub(crate) fn create_dir(dir: &Path) -> Result<(), Error> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIRECTORY)
        .create(dir)
        .map_err(|err| Error::io("creating directory", dir, err))
}

/// The file's bytes, or `None` if there is no such file.
pub(crate) fn read_if_present(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(Error::io("reading", path, err)),
    }
}

/// Replaces `path` with `bytes` in one step, the new file having `mode`.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temporary = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = write_new(&temporary, bytes, mode)
        .and_then(|()| fs::rename(&temporary, path))
        .map_err(|err| Error::io("writing", path, err));
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
        return result;
    }
    // The rename is durable once the directory entry is; a failure here loses nothing
    // that a reader could see, so it is not an error.
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

fn write_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    // The umask may have cleared bits of `mode` (never added any); set it exactly.
    file.set_permissions(fs::Permissions::from_mode(mode))?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Runs blocking file work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(work).await.map_err(Error::Join)
}

#[cfg(test)]
mod tests;
