//! `backup` and `restore` (issue 2 §3).
//!
//! A backup is `VACUUM INTO` on a read transaction: a consistent snapshot even while `serve`
//! writes (WAL readers never block the writer), then `PRAGMA integrity_check` on the copy.
//! A restore is refused while a server holds the data directory's lock file.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rusqlite::{Connection, OpenFlags};

use super::{db_path, migrate};

const LOCK_FILE: &str = "merchant-admin.lock";

/// Held by `serve` for its whole life; dropping it releases the directory.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

/// Takes the data directory's lock, or says which process-level conflict stops us.
pub fn lock_data_dir(data_dir: &Path) -> anyhow::Result<DataDirLock> {
    let path = data_dir.join(LOCK_FILE);
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(DataDirLock { _file: file }),
        Err(fs::TryLockError::WouldBlock) => bail!(
            "another merchant-admin server is using {}; stop it first",
            data_dir.display()
        ),
        Err(fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("locking {}", path.display()))
        }
    }
}

#[derive(Debug)]
pub struct BackupReport {
    pub path: PathBuf,
    pub bytes: u64,
    pub duration: Duration,
}

/// Writes a consistent copy of the live database to `dest` and checks it.
pub fn backup(data_dir: &Path, dest: &Path) -> anyhow::Result<BackupReport> {
    let started = Instant::now();
    let src = db_path(data_dir);
    if !src.exists() {
        bail!("no database at {}", src.display());
    }
    if dest.exists() {
        bail!("{} already exists; choose a new path", dest.display());
    }
    let dest_str = dest
        .to_str()
        .with_context(|| format!("{} is not valid UTF-8", dest.display()))?;

    // VACUUM INTO fills an empty file: making it first is what gives the copy mode 0600
    // (SQLite would create it 0644), and create_new refuses a file that appeared since.
    create_private(dest).with_context(|| format!("writing the copy to {}", dest.display()))?;
    let conn = Connection::open_with_flags(&src, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    if let Err(e) = conn.execute("VACUUM INTO ?1", [dest_str]) {
        let _ = fs::remove_file(dest); // never leave a partial copy behind
        return Err(e).with_context(|| format!("writing the copy to {}", dest.display()));
    }
    if let Err(e) = check_integrity(dest) {
        let _ = fs::remove_file(dest);
        return Err(e);
    }
    let bytes = fs::metadata(dest)?.len();
    Ok(BackupReport {
        path: dest.to_path_buf(),
        bytes,
        duration: started.elapsed(),
    })
}

/// `PRAGMA integrity_check` on a database file, opened read-only.
pub fn check_integrity(path: &Path) -> anyhow::Result<()> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("opening {}", path.display()))?;
    let result: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .with_context(|| format!("{} is not a readable SQLite database", path.display()))?;
    if result != "ok" {
        bail!("integrity check of {} failed: {result}", path.display());
    }
    Ok(())
}

/// Replaces the data directory's database with `src`; the old one is kept beside it.
/// Returns where the replaced database was moved (None when there was none).
pub fn restore(data_dir: &Path, src: &Path) -> anyhow::Result<Option<PathBuf>> {
    let _lock = lock_data_dir(data_dir)?;
    if !src.is_file() {
        bail!("{} is not a file", src.display());
    }
    check_integrity(src)?;
    {
        let c = Connection::open_with_flags(src, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        if migrate::applied_version(&c)? == 0 {
            bail!("{} is not a merchant-admin database", src.display());
        }
        migrate::check_not_newer(&c)?;
    }

    let live = db_path(data_dir);
    // Copy next to the target first, so the swap itself is one atomic rename: at every
    // moment there is a complete database at `live`, the old one or the new one.
    let staged = live.with_extension("db.restoring");
    copy_private(src, &staged).with_context(|| format!("copying {}", src.display()))?;

    let mut kept = None;
    if live.exists() {
        // Fold the WAL into the main file so the kept copy is complete on its own.
        Connection::open(&live)?.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        // A name no earlier restore used: two in one second must not overwrite the first
        // one's kept copy.
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        let aside = (0..)
            .map(|n| match n {
                0 => live.with_extension(format!("db.replaced-{stamp}")),
                n => live.with_extension(format!("db.replaced-{stamp}-{n}")),
            })
            .find(|p| !p.exists())
            .expect("an unused name");
        copy_private(&live, &aside).with_context(|| format!("keeping {}", aside.display()))?;
        kept = Some(aside);
    }
    // The (empty, checkpointed) WAL belongs to the old file; it must not meet the new one.
    for ext in ["db-wal", "db-shm"] {
        let _ = fs::remove_file(live.with_extension(ext));
    }
    fs::rename(&staged, &live)?;
    Ok(kept)
}

/// A new, empty file only its owner can read.
fn create_private(path: &Path) -> std::io::Result<File> {
    let mut o = File::options();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

/// Copies a database to a 0600 file (`fs::copy` would copy the source's mode, often 0644).
fn copy_private(src: &Path, dest: &Path) -> std::io::Result<()> {
    let _ = fs::remove_file(dest); // a leftover from an interrupted restore
    let mut out = create_private(dest)?;
    std::io::copy(&mut File::open(src)?, &mut out)?;
    out.sync_all()
}
