//! `backup` and `restore` (issue 2 §3).
//!
//! A backup is SQLite's online backup API, in steps, inside one read transaction: a
//! consistent snapshot even while `serve` writes (WAL readers never block the writer), then
//! a check of the copy (`integrity_check` with `--verify`, `quick_check` otherwise).
//! A restore is refused while a server holds the data directory's lock file.

use std::fs::{self, File};
use std::ops::ControlFlow;
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

#[derive(Debug, Clone)]
pub struct BackupReport {
    pub path: PathBuf,
    pub bytes: u64,
    /// Database pages copied.
    pub pages: u64,
    pub duration: Duration,
    /// Whether the full `PRAGMA integrity_check` ran on the copy and passed (`--verify`);
    /// without it, the quicker `quick_check` still must pass.
    pub verified: bool,
    /// Message attachments in the copy: they live in the database, so they travel with it.
    pub attachments: i64,
}

/// How a backup copies: the online backup API in steps of `pages_per_step` pages, with a
/// `pause` between steps.
#[derive(Debug, Clone, Copy)]
pub struct BackupOptions {
    pub verify: bool,
    pub pages_per_step: i32,
    pub pause: Duration,
}

impl Default for BackupOptions {
    fn default() -> Self {
        // 4 MiB a step at the default page size: a step takes a few milliseconds.
        Self {
            verify: false,
            pages_per_step: 1024,
            pause: Duration::from_millis(1),
        }
    }
}

/// Pages copied so far of the total (the total may grow while the copy runs).
#[derive(Debug, Clone, Copy)]
pub struct Copied {
    pub done: u64,
    pub total: u64,
}

/// Writes a consistent copy of the live database to `dest` and checks it (see
/// [`backup_with`]).
pub fn backup(data_dir: &Path, dest: &Path) -> anyhow::Result<BackupReport> {
    backup_with(data_dir, dest, BackupOptions::default(), &mut |_| {
        ControlFlow::Continue(())
    })
}

/// Where a copy is written before it is checked: `dest` with `.partial` appended.
pub fn partial_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    dest.with_file_name(name)
}

/// Writes a consistent copy of the live database to `dest` with SQLite's online backup API,
/// `opts.pages_per_step` pages at a time, calling `progress` after each step (`Break` stops
/// it: a shutdown); then checks the copy. The source is read inside one read transaction, so the copy is
/// the snapshot of when it began and never restarts when a writer commits; in WAL mode that
/// reader does not block writers (it only holds the checkpoint back until it ends).
///
/// The copy is written to [`partial_path`], locked while it is written, and appears at
/// `dest` only once checked: a crash, a kill or a full disk never leaves a file at `dest`
/// that looks like a finished backup. `dest` must not exist (nor be a symlink, even a
/// dangling one).
pub fn backup_with(
    data_dir: &Path,
    dest: &Path,
    opts: BackupOptions,
    progress: &mut dyn FnMut(Copied) -> ControlFlow<()>,
) -> anyhow::Result<BackupReport> {
    let started = Instant::now();
    let src = db_path(data_dir);
    if !src.exists() {
        bail!("no database at {}", src.display());
    }
    if fs::symlink_metadata(dest).is_ok() {
        bail!("{} already exists; choose a new path", dest.display());
    }
    let partial = partial_path(dest);
    let writing = claim_partial(&partial)
        .with_context(|| format!("writing the copy to {}", dest.display()))?;
    let copied = copy_online(&src, &partial, opts, progress)
        .with_context(|| format!("writing the copy to {}", dest.display()))
        .and_then(|pages| {
            let attachments = check_copy(&partial, opts.verify)?;
            publish(&partial, dest)?;
            Ok((pages, attachments))
        });
    drop(writing);
    let (pages, attachments) = match copied {
        Ok(c) => c,
        Err(e) => {
            // Never leave a partial or damaged copy behind.
            remove_with_sidecars(&partial);
            return Err(e);
        }
    };
    let bytes = fs::metadata(dest)?.len();
    Ok(BackupReport {
        path: dest.to_path_buf(),
        bytes,
        pages,
        duration: started.elapsed(),
        verified: opts.verify,
        attachments,
    })
}

/// Creates `partial` (0600) and holds an exclusive lock on it while the copy is written. A
/// leftover nobody holds (a backup killed mid-copy) is replaced when it is empty or a SQLite
/// file; one another backup holds, or a file of someone else's, is refused.
fn claim_partial(partial: &Path) -> anyhow::Result<File> {
    if let Ok(meta) = fs::symlink_metadata(partial) {
        // Checked before opening: opening a FIFO would wait forever.
        if !meta.file_type().is_file() {
            bail!(
                "{} is in the way (not a regular file); move it",
                partial.display()
            );
        }
        let old =
            File::open(partial).with_context(|| format!("{} is in the way", partial.display()))?;
        match old.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                bail!("another backup is writing {}", partial.display())
            }
            Err(fs::TryLockError::Error(e)) => return Err(e.into()),
        }
        if !is_leftover_copy(partial)? {
            bail!(
                "{} is in the way (not a copy this command left); move it",
                partial.display()
            );
        }
        remove_with_sidecars(partial);
    }
    let f = create_private(partial)?;
    f.try_lock()
        .map_err(|e| anyhow::anyhow!("locking {}: {e}", partial.display()))?;
    Ok(f)
}

/// What a copy cut short looks like: a regular file that is empty, starts with SQLite's
/// header, or has SQLite's rollback journal beside it (killed inside a step, before page 1
/// was written).
fn is_leftover_copy(path: &Path) -> anyhow::Result<bool> {
    use std::io::Read;
    let meta = fs::symlink_metadata(path)?;
    if !meta.file_type().is_file() {
        return Ok(false);
    }
    let mut head = [0u8; 16];
    let n = File::open(path)?.take(16).read(&mut head)?;
    Ok(n == 0
        || head[..n] == b"SQLite format 3\0"[..n]
        || fs::symlink_metadata(sidecar(path, "-journal")).is_ok_and(|m| m.is_file()))
}

/// `path` with `suffix` appended, where SQLite keeps a database's journal files.
fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// Whether `partial` is a leftover copy no live backup holds (safe to delete).
pub fn is_stale_partial(partial: &Path) -> bool {
    // Checked before opening: opening a FIFO would wait forever.
    if !fs::symlink_metadata(partial).is_ok_and(|m| m.file_type().is_file()) {
        return false;
    }
    let Ok(f) = File::open(partial) else {
        return false;
    };
    f.try_lock().is_ok() && is_leftover_copy(partial).unwrap_or(false)
}

/// Gives the checked copy its final name without replacing anything that appeared there
/// meanwhile: a hard link fails when `dest` exists (rename would replace it). On a file
/// system without hard links, a rename after one more look.
fn publish(partial: &Path, dest: &Path) -> anyhow::Result<()> {
    match fs::hard_link(partial, dest) {
        Ok(()) => {
            fs::remove_file(partial)?;
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            bail!(
                "{} appeared while the copy was written; the copy is discarded",
                dest.display()
            )
        }
        Err(_) => {
            if fs::symlink_metadata(dest).is_ok() {
                bail!("{} appeared while the copy was written", dest.display());
            }
            fs::rename(partial, dest)
                .with_context(|| format!("renaming the copy to {}", dest.display()))
        }
    }
}

/// Removes a copy and the journal files SQLite may have left beside it.
fn remove_with_sidecars(path: &Path) {
    let _ = fs::remove_file(path);
    for suffix in ["-journal", "-wal", "-shm"] {
        let _ = fs::remove_file(sidecar(path, suffix));
    }
}

/// The stepped copy; the pages copied.
fn copy_online(
    src: &Path,
    dest: &Path,
    opts: BackupOptions,
    progress: &mut dyn FnMut(Copied) -> ControlFlow<()>,
) -> anyhow::Result<u64> {
    use rusqlite::backup::{Backup, StepResult};
    let from = Connection::open_with_flags(src, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    from.busy_timeout(Duration::from_secs(10))?;
    // The snapshot: a read transaction held for the whole copy.
    from.execute_batch("BEGIN")?;
    from.query_row("SELECT COUNT(*) FROM sqlite_schema", [], |_| Ok(()))?;
    let mut to = Connection::open(dest)?;
    // The copy's pages are flushed as it goes. Left to pile up (a gigabyte in the page
    // cache), their writeback stalls the server's checkpoint fsyncs behind them: writers'
    // p99 went 5 -> 41 ms during a backup, 13.6 ms with writeback kept going (issue 21).
    let flush = File::open(dest)?;
    {
        let b = Backup::new(&from, &mut to)?;
        loop {
            let step = b.step(opts.pages_per_step.max(1))?;
            flush.sync_data()?;
            let p = b.progress();
            let total = u64::try_from(p.pagecount).unwrap_or(0);
            let left = u64::try_from(p.remaining).unwrap_or(0);
            let asked = progress(Copied {
                done: total.saturating_sub(left),
                total,
            });
            // More, or Busy/Locked: a step's lock was not had; either way, pause and go on.
            if matches!(step, StepResult::Done) {
                break;
            }
            if asked.is_break() {
                bail!("stopped before the copy was complete");
            }
            // Tests slow the copy down to act in the middle of it.
            #[cfg(feature = "failpoints")]
            fail::fail_point!("backup::step");
            std::thread::sleep(opts.pause);
        }
    }
    from.execute_batch("COMMIT")?;
    // The copy carries the source's WAL flag; a backup file stands alone, with no -wal.
    to.pragma_update(None, "journal_mode", "DELETE")?;
    let pages: i64 = to.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    drop(to);
    Ok(u64::try_from(pages).unwrap_or(0))
}

/// Checks a fresh copy: `integrity_check` when `full`, `quick_check` otherwise. Returns the
/// number of message attachments it holds.
fn check_copy(path: &Path, full: bool) -> anyhow::Result<i64> {
    if full {
        check_integrity(path)?;
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    if !full {
        let result: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        if result != "ok" {
            bail!("quick check of {} failed: {result}", path.display());
        }
    }
    let has_table: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE name = 'message_attachments')",
        [],
        |r| r.get(0),
    )?;
    Ok(if has_table {
        conn.query_row("SELECT COUNT(*) FROM message_attachments", [], |r| r.get(0))?
    } else {
        0
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
