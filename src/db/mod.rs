//! Storage (issue 2 §2): one SQLite file `<data-dir>/merchant-admin.db` in WAL mode.
//!
//! Invariants:
//! - One writer connection behind a mutex; every write runs in a `BEGIN IMMEDIATE`
//!   transaction and is kept on `Ok` and rolled back on `Err` or a panic. Writes queued for
//!   the writer thread share one commit per batch, each in its own savepoint ([`writer`]);
//!   none is answered before its commit.
//! - Reads use a pool of `query_only` connections, so readers never wait for the writer.
//! - No SQLite call runs on an async worker thread: `read` and `write` hop to the database's
//!   own threads (one per reader connection, one for the writer).
//! - Every connection gets the same pragmas as it opens.
//! - Checkpoints run on their own thread ([`CHECKPOINT_EVERY`]), not on the writer: copying
//!   the log into the database file and its fsync held up every write queued behind them.
//!   Under a load that never pauses, the log starts over only after a checkpoint no commit
//!   overtakes, so the checkpointer does the copying and flushing and the writer then copies
//!   the few pages committed since, between two batches. The writer never checkpoints after
//!   its commits (SQLite's autocheckpoint is off): once a backup's long read let go of a log
//!   past the old 8,192-page backstop, the writer's first commit copied all of it while
//!   writes queued. It takes over only when the checkpointer has not looked for
//!   [`CHECKPOINTER_SILENT`] (its thread died or its disk hangs), counted in
//!   [`Db::writer_checkpoints`]. A round cut short by a reader still on an older snapshot by
//!   no more than [`WRITER_ENDS_LOG_PAGES`] counts as caught up, so under a read-heavy mix
//!   the writer still tries to end the log every cycle; a backup's pin leaves far more.
//! - Queries write their `LIMIT` into the SQL text (the value is ours, an integer): SQLite
//!   plans around a bound `LIMIT ?` and so re-prepares the statement each time it is bound,
//!   which was a tenth of a list request's CPU.

pub mod backup;
pub mod counts;
pub mod idempotency;
pub mod keys;
pub mod migrate;
pub mod rendered;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::hooks::Action;
use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::Notify;

use crate::error::AppError;
use crate::threads::Queue;
pub use writer::Tx;

pub const DB_FILE: &str = "merchant-admin.db";

/// Reader connections in the pool.
const READERS: u32 = 8;

/// Reads (and, separately, writes) that may wait for a database thread before callers are
/// answered 503 (`--db-queue-limit`).
pub const DEFAULT_QUEUE_LIMIT: u32 = 1024;

/// How often the checkpointer copies what was committed since its last look from the log
/// into the database file (passive checkpoints: they never hold the writer up).
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);

/// How long the checkpointer may go without a look before the writer checkpoints between its
/// batches itself (at most once per [`CHECKPOINT_EVERY`]). A look takes milliseconds; one
/// that copies what a backup of a 1 GiB file held back (17,600 pages) a few hundred; a
/// bigger file's pile, or its flush, can take seconds, and the writer must not copy that.
pub const CHECKPOINTER_SILENT: Duration = Duration::from_secs(10);

/// Passive checkpoints the checkpointer runs back to back, each copying what was committed
/// while the one before copied.
const CHECKPOINT_ROUNDS: usize = 3;

/// Pages left in the log after the checkpointer's rounds under which the writer is asked to
/// copy them itself (about 1 MiB: a few milliseconds). Also how far behind the log a
/// reader's snapshot may hold a round back for it to count as caught up.
const WRITER_ENDS_LOG_PAGES: i64 = 256;

/// How much of the database file each connection maps into memory.
const MMAP_BYTES: i64 = 1 << 30;

/// The tables a bearer token is resolved from: a committed change to any of them moves
/// [`Db::credentials_epoch`], which is what lets a resolved token be remembered.
pub const CREDENTIAL_TABLES: [&str; 8] = [
    "api_tokens",
    "token_pairs",
    "sessions",
    "users",
    "stores",
    "store_members",
    "tenant_members",
    "tenants",
];

/// How often [`Db::watch_other_processes`] looks for other processes' commits. Each look
/// costs about a tenth of a millisecond of CPU: every 10 ms was 1% of a core while idle.
pub const OTHER_PROCESS_POLL: Duration = Duration::from_millis(50);

pub fn db_path(data_dir: &Path) -> PathBuf {
    data_dir.join(DB_FILE)
}

/// Sets the pragmas every connection needs (vaultwarden `default_init_stmts`).
pub fn apply_pragmas(c: &Connection) -> rusqlite::Result<()> {
    c.busy_timeout(std::time::Duration::from_secs(5))?;
    c.pragma_update(None, "journal_mode", "WAL")?;
    c.pragma_update(None, "synchronous", "NORMAL")?;
    c.pragma_update(None, "foreign_keys", "ON")?;
    // Room for every statement the server prepares (rusqlite keeps 16 by default; beyond
    // that, hot statements were evicted and parsed again on every request).
    c.set_prepared_statement_cache_capacity(256);
    Ok(())
}

/// Creates the data directory (and any missing parents) readable by its owner only: it
/// holds the database and the key files.
pub fn create_data_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// Makes a file readable by its owner only (0600). A file someone else owns (a CLI command
/// run as another user with group access) is left as it is: only its owner may change it.
pub fn make_private(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
        if mode != 0o600 {
            match std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    tracing::warn!(path = %path.display(), "cannot make the file 0600: not its owner");
                }
                r => r?,
            }
        }
    }
    Ok(())
}

/// Creates the database file 0600 before SQLite does (SQLite would make it 0644; its WAL and
/// SHM copy the main file's mode), and tightens the files of a data directory made before.
///
/// An existing file is never opened here: closing any descriptor of it would drop every POSIX
/// lock this process's SQLite connections hold on it, and another process closing the
/// database would then take itself for the last one and delete the log under them.
fn restrict_db_files(path: &Path) -> std::io::Result<()> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    match o.open(path) {
        Ok(f) => drop(f),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    make_private(path)?;
    for ext in ["db-wal", "db-shm"] {
        match make_private(&path.with_extension(ext)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Opens a plain read-write connection with the pragmas set (CLI commands, migrations).
/// Leaves no copy of deleted or rewritten values in the file: `VACUUM` rewrites it from live
/// rows only (free pages and freed cells of older row versions may still hold plain
/// secrets), then the WAL is folded in and truncated. Run once when an upgrade sealed,
/// blanked or moved secrets out; slow on a large file.
pub fn scrub(c: &Connection) -> anyhow::Result<()> {
    c.execute_batch("VACUUM")?;
    let busy: i64 = c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
    if busy != 0 {
        // Its old frames are overwritten as the log is reused; say so rather than refuse.
        tracing::warn!("another process kept the write-ahead log from being truncated");
    }
    Ok(())
}

/// Reads column `i` as text and parses it: a stored value the code does not know is an
/// internal error (500), never a silent default (a bad status is not a pending order).
pub fn parse_column<T>(
    r: &rusqlite::Row<'_>,
    i: usize,
    parse: impl FnOnce(&str) -> Option<T>,
) -> rusqlite::Result<T> {
    let raw: String = r.get(i)?;
    parse(&raw).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Text,
            format!("{raw:?} is not a value this column holds").into(),
        )
    })
}

/// Reads column `i` as JSON text we stored: one that does not parse is an internal error,
/// never an empty default (a token's lost scopes are not "no scopes").
pub fn json_column<T: serde::de::DeserializeOwned>(
    r: &rusqlite::Row<'_>,
    i: usize,
) -> rusqlite::Result<T> {
    let raw = r.get_ref(i)?.as_str()?;
    serde_json::from_str(raw).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, e.into())
    })
}

pub fn open_connection(path: &Path) -> rusqlite::Result<Connection> {
    restrict_db_files(path).map_err(|e| {
        rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(format!("{}: {e}", path.display())),
        )
    })?;
    let c = Connection::open(path)?;
    apply_pragmas(&c)?;
    Ok(c)
}

/// A passive checkpoint: (busy, pages in the log, pages copied).
fn checkpoint(c: &Connection) -> rusqlite::Result<(i64, i64, i64)> {
    c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })
}

/// Starts the checkpointer thread on its own connection: every [`CHECKPOINT_EVERY`], if the
/// writer committed since its last look, passive checkpoints. It ends once `commits` is
/// dropped with the writer thread.
///
/// Under a load that never pauses, a passive checkpoint never ends the log (a commit always
/// lands while it copies), so the log could only start over once the writer's backstop
/// copied, and fsynced, ~16 MiB in the middle of a commit: that was order creation's p99. So
/// the costly part happens here (the log's fsync, copying, the database file's flush), and
/// the writer is then asked (`end_log`) to copy the few pages committed since, between two
/// batches, where nothing overtakes it. `looks` counts its looks and rounds, for
/// [`Takeover`].
fn start_checkpointer(
    conn: Connection,
    db_file: Option<std::fs::File>,
    commits: std::sync::Weak<AtomicU64>,
    end_log: Arc<AtomicBool>,
    looks: Arc<AtomicU64>,
) -> anyhow::Result<()> {
    // Closed only once this thread's connection is: closing any descriptor of the file drops
    // every POSIX lock the process's connections hold on it. Leaked if the thread panics.
    let db_file = std::mem::ManuallyDrop::new(db_file);
    std::thread::Builder::new()
        .name("db-checkpoint".into())
        .spawn(move || {
            let mut seen = 0;
            loop {
                std::thread::sleep(CHECKPOINT_EVERY);
                looks.fetch_add(1, Ordering::Relaxed);
                let Some(now) = commits.upgrade().map(|c| c.load(Ordering::Relaxed)) else {
                    break;
                };
                if now == seen {
                    continue;
                }
                // Rounds, each copying what was committed while the one before copied,
                // until one copies little; the database file's flush; a last round for what
                // was committed during the flush. A round that could not copy the whole log
                // (busy: another checkpoint ran; cut short by a reader's older snapshot, a
                // backup's) or failed: the next look tries again.
                let mut copied_before = 0;
                // Pages a round copied when it caught up with the log (but for the few pages
                // a reader's older snapshot may still hold back); `None` otherwise.
                let mut round = || match checkpoint(&conn).inspect(|_| {
                    looks.fetch_add(1, Ordering::Relaxed);
                }) {
                    Ok((0, log, copied)) if log - copied <= WRITER_ENDS_LOG_PAGES => {
                        let fresh = copied - copied_before;
                        copied_before = copied;
                        Some(fresh)
                    }
                    Ok(_) => None,
                    Err(e) => {
                        tracing::debug!(error = %e, "checkpoint did not run");
                        None
                    }
                };
                let mut last = None;
                for _ in 0..CHECKPOINT_ROUNDS {
                    last = round();
                    if last.is_none_or(|fresh| fresh <= WRITER_ENDS_LOG_PAGES) {
                        break;
                    }
                }
                if last.is_none() {
                    continue;
                }
                // SQLite syncs the database file only after a round no commit overtook; this
                // flush leaves the writer's checkpoint little to sync. An error is not left
                // for SQLite's own fsync to miss (older kernels report it once).
                if let Some(f) = db_file.as_ref()
                    && let Err(e) = f.sync_data()
                {
                    tracing::error!(error = %e, "flushing the database file failed");
                    continue;
                }
                if round().is_none() {
                    continue;
                }
                seen = now;
                end_log.store(true, Ordering::Relaxed);
            }
            drop(conn);
            drop(std::mem::ManuallyDrop::into_inner(db_file));
        })?;
    Ok(())
}

#[derive(Clone)]
pub struct Db {
    writer: Arc<Mutex<Connection>>,
    readers: r2d2::Pool<SqliteConnectionManager>,
    /// Set by the writer's update hook when a row lands in `jobs`; turned into a wake-up
    /// for the workers once the transaction commits.
    job_inserted: Arc<AtomicBool>,
    jobs_ready: Arc<Notify>,
    /// Set by the update hook when a credential table changes; turned into a new
    /// [`Db::credentials_epoch`] once the transaction commits.
    credentials_touched: Arc<AtomicBool>,
    credentials_epoch: Arc<AtomicU64>,
    /// One thread per reader connection. Reads queue in it rather than as blocking threads
    /// parked on the connection pool, and a thread that finds more reads queued runs them
    /// without going to sleep: tokio's blocking pool cost two context switches per read.
    read_threads: crate::threads::Threads,
    /// The writer thread's queue: writes run there in batches that share a commit
    /// ([`writer`]); blocking code elsewhere takes the mutex directly.
    write_queue: Queue<writer::Write>,
    /// Where the writer records each batch's size, once metrics are on.
    batch_sizes: Arc<std::sync::OnceLock<metrics::Histogram>>,
    /// See [`Db::writer_checkpoints`].
    writer_checkpoints: Arc<AtomicU64>,
}

/// When the writer checkpoints in the checkpointer's stead: once the checkpointer's
/// `looks` have not moved for [`CHECKPOINTER_SILENT`], and then at most once per
/// [`CHECKPOINT_EVERY`]. The writer's thread alone calls [`Takeover::due`].
struct Takeover {
    looks: Arc<AtomicU64>,
    /// The looks last seen, and when they were first seen at that count.
    seen: std::cell::Cell<(u64, Instant)>,
    last_run: std::cell::Cell<Option<Instant>>,
}

impl Takeover {
    fn new(looks: Arc<AtomicU64>, now: Instant) -> Self {
        let seen = std::cell::Cell::new((looks.load(Ordering::Relaxed), now));
        Self {
            looks,
            seen,
            last_run: std::cell::Cell::new(None),
        }
    }

    fn due(&self, now: Instant) -> bool {
        let looks = self.looks.load(Ordering::Relaxed);
        let (seen, since) = self.seen.get();
        if looks != seen {
            self.seen.set((looks, now));
            return false;
        }
        let silent = now.saturating_duration_since(since) >= CHECKPOINTER_SILENT;
        let rested = self
            .last_run
            .get()
            .is_none_or(|t| now.saturating_duration_since(t) >= CHECKPOINT_EVERY);
        if silent && rested {
            self.last_run.set(Some(now));
        }
        silent && rested
    }
}

impl Db {
    /// Opens the database file (creating it), runs migrations, and builds the reader pool.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        Self::open_with_queue(path, DEFAULT_QUEUE_LIMIT as usize)
    }

    /// [`Db::open`] with room for `queue_limit` reads and as many writes waiting for a
    /// thread; past that, `read` and `write` answer 503 at once.
    pub fn open_with_queue(path: &Path, queue_limit: usize) -> anyhow::Result<Self> {
        let mut writer = open_connection(path)?;
        migrate::run(&mut writer)?;
        // The checkpointer copies the log (see `Takeover` for when the writer does).
        writer.pragma_update(None, "wal_autocheckpoint", 0)?;
        // The log file is cut back to this size when it starts over: a backup's long read
        // can let it grow to hundreds of megabytes.
        writer.pragma_update(None, "journal_size_limit", 64 << 20)?;
        // Each write of a batch runs in a savepoint, whose journal SQLite keeps in memory only
        // up to 64 KiB and then spills to a temporary file it creates, writes and deletes per
        // batch: half the writer's system calls under load. Kept in memory, it holds the
        // pages one write changes (the cleanup runs each purge as a write of its own).
        writer.pragma_update(None, "temp_store", "MEMORY")?;
        // Commits the writer made, for the checkpointer to look at. Only the writer thread
        // holds it, so the checkpointer ends with the writer (when the last handle drops).
        let commits = Arc::new(AtomicU64::new(0));
        let end_log = Arc::new(AtomicBool::new(false));
        let looks = Arc::new(AtomicU64::new(0));
        start_checkpointer(
            open_connection(path)?,
            // Read-only, for `fdatasync` only (Windows flushes only a handle that writes).
            cfg!(unix).then(|| std::fs::File::open(path)).transpose()?,
            Arc::downgrade(&commits),
            end_log.clone(),
            looks.clone(),
        )?;
        let writer_checkpoints = Arc::new(AtomicU64::new(0));
        let takeover = Takeover::new(looks, Instant::now());

        let job_inserted = Arc::new(AtomicBool::new(false));
        let credentials_touched = Arc::new(AtomicBool::new(false));
        let (flag, touched) = (job_inserted.clone(), credentials_touched.clone());
        writer.update_hook(Some(
            move |action: Action, _db: &str, table: &str, _row: i64| {
                if action == Action::SQLITE_INSERT && table == "jobs" {
                    flag.store(true, Ordering::Relaxed);
                }
                if CREDENTIAL_TABLES.contains(&table) {
                    touched.store(true, Ordering::Relaxed);
                }
            },
        ))?;

        let manager = SqliteConnectionManager::file(path).with_init(|c| {
            apply_pragmas(c)?;
            // Pages are read straight from the OS page cache instead of being copied into
            // each connection's own cache: about +15% on the lists. Readers only: a mapping
            // must be redone as the writer grows the file.
            c.pragma_update(None, "mmap_size", MMAP_BYTES)?;
            c.pragma_update(None, "query_only", "ON")
        });
        let readers = r2d2::Pool::builder()
            .max_size(READERS)
            .min_idle(Some(1))
            // r2d2 would run an empty statement on every check-out to test the connection; a
            // SQLite file connection does not go stale.
            .test_on_check_out(false)
            .build(manager)?;
        let writer = Arc::new(Mutex::new(writer));
        let (write_queue, writes) = Queue::new("db-write", queue_limit);
        let epoch = Arc::new(AtomicU64::new(0));
        let jobs_ready = Arc::new(Notify::new());
        let batch_sizes = Arc::<std::sync::OnceLock<metrics::Histogram>>::default();
        let sizes = batch_sizes.clone();
        let hooks = writer::Hooks {
            sized: move |n| {
                if let Some(h) = sizes.get() {
                    #[allow(clippy::cast_precision_loss)] // a batch holds at most 64 writes
                    h.record(n as f64);
                }
            },
            after_commit: {
                let (jobs, touched) = (job_inserted.clone(), credentials_touched.clone());
                let (epoch, ready) = (epoch.clone(), jobs_ready.clone());
                move || {
                    commits.fetch_add(1, Ordering::Relaxed);
                    Self::after_commit(&jobs, &touched, &epoch, &ready);
                }
            },
            // The checkpointer copied and flushed nearly all of the log: what is left is
            // copied here, between batches, where no commit can overtake it, so the log
            // starts over (see `start_checkpointer`). Or the checkpointer has gone silent
            // and the writer copies the log itself.
            between: {
                let counted = writer_checkpoints.clone();
                move |c: &Connection| {
                    let ending = end_log.swap(false, Ordering::Relaxed);
                    let takeover = takeover.due(Instant::now());
                    if ending || takeover {
                        match checkpoint(c) {
                            // Counted only when it ran (not busy: the checkpointer's own).
                            Ok((0, ..)) if takeover => {
                                counted.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(_) => {}
                            Err(e) => {
                                tracing::debug!(error = %e, "the writer's checkpoint did not run");
                            }
                        }
                    }
                }
            },
        };
        writer::start(writer.clone(), writes, writer::Limits::default(), hooks);
        Ok(Self {
            writer,
            readers,
            read_threads: crate::threads::Threads::new(
                "db-read",
                READERS as usize,
                queue_limit,
                || {},
            ),
            write_queue,
            batch_sizes,
            job_inserted,
            jobs_ready,
            credentials_touched,
            credentials_epoch: epoch,
            writer_checkpoints,
        })
    }

    /// Checkpoints the writer ran (not found busy) because the checkpointer had gone silent
    /// for [`CHECKPOINTER_SILENT`] (a metric: it stays 0 while the checkpointer works).
    pub fn writer_checkpoints(&self) -> u64 {
        self.writer_checkpoints.load(Ordering::Relaxed)
    }

    /// After a commit: a new credentials epoch if a credential table changed (after the
    /// commit, so a reader that saw the old number read the old rows), and a wake-up for
    /// the job workers if a job was queued. Also after a rollback: waking for nothing is
    /// harmless, missing a commit is not.
    fn after_commit(jobs: &AtomicBool, touched: &AtomicBool, epoch: &AtomicU64, ready: &Notify) {
        if touched.swap(false, Ordering::Relaxed) {
            epoch.fetch_add(1, Ordering::SeqCst);
        }
        if jobs.swap(false, Ordering::Relaxed) {
            ready.notify_waiters();
        }
    }

    /// A number that changes after every committed change to the tables a credential is
    /// resolved from ([`CREDENTIAL_TABLES`]), and after any commit by another process seen
    /// by [`Db::watch_other_processes`]. Read it before reading a credential: what was read
    /// stays true while the number is the same.
    pub fn credentials_epoch(&self) -> u64 {
        self.credentials_epoch.load(Ordering::SeqCst)
    }

    /// Starts a thread that notices commits made by other processes (the `users` CLI, say)
    /// within [`OTHER_PROCESS_POLL`], and moves [`Db::credentials_epoch`] on. It ends when
    /// the last handle to this database is dropped.
    pub fn watch_other_processes(&self, path: &Path) -> anyhow::Result<()> {
        let conn = open_connection(path)?;
        let epoch = Arc::downgrade(&self.credentials_epoch);
        std::thread::Builder::new()
            .name("db-watch".into())
            .spawn(move || {
                // `data_version` changes when any other connection commits, our own
                // writer's included: cheap to over-report, never misses one.
                let version = |c: &Connection| -> Option<i64> {
                    c.query_row("PRAGMA data_version", [], |r| r.get(0)).ok()
                };
                let mut seen = version(&conn);
                loop {
                    std::thread::sleep(OTHER_PROCESS_POLL);
                    let Some(epoch) = epoch.upgrade() else { return };
                    let now = version(&conn);
                    if now != seen {
                        seen = now;
                        epoch.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })?;
        Ok(())
    }

    /// Reads and writes waiting for a database thread now.
    pub fn queue_depths(&self) -> (usize, usize) {
        (self.read_threads.queued(), self.write_queue.queued())
    }

    /// Records how many writes each of the writer's commits holds, from now on (the first
    /// call wins).
    pub fn observe_batches(&self, h: metrics::Histogram) {
        let _ = self.batch_sizes.set(h);
    }

    /// Records every read's and write's wait for a database thread from now on.
    pub fn observe_waits(&self, read: metrics::Histogram, write: metrics::Histogram) {
        self.read_threads.observe_wait(read);
        self.write_queue.observe_wait(write);
    }

    /// Wakes job workers after a commit that enqueued a job.
    pub fn jobs_ready(&self) -> &Arc<Notify> {
        &self.jobs_ready
    }

    /// Runs `f` on a pooled read-only connection, off the async runtime.
    pub async fn read<T, F>(&self, f: F) -> Result<T, AppError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, AppError> + Send + 'static,
    {
        let readers = self.readers.clone();
        self.read_threads.run(move || f(&*readers.get()?)).await?
    }

    /// The one reader trip of a keyset-paged list: `rows` after the position `after` (the
    /// caller has checked the cursor it came from), and `total` when the list asks for it.
    pub async fn read_page<R, Rows, Total>(
        &self,
        after: Option<rendered::Position>,
        include_total: bool,
        rows: Rows,
        total: Total,
    ) -> Result<(R, Option<i64>), AppError>
    where
        R: Send + 'static,
        Rows: FnOnce(&Connection, Option<&rendered::Position>) -> Result<R, AppError>
            + Send
            + 'static,
        Total: FnOnce(&Connection) -> Result<i64, AppError> + Send + 'static,
    {
        self.read(move |c| {
            let found = rows(c, after.as_ref())?;
            let count = include_total.then(|| total(c)).transpose()?;
            Ok((found, count))
        })
        .await
    }

    /// Runs `f` in its own transaction (a savepoint of the writer's batch) on the writer
    /// thread, off the async runtime; answers once the commit holding it is done.
    pub async fn write<T, F>(&self, f: F) -> Result<T, AppError>
    where
        T: Send + 'static,
        F: FnOnce(&Tx<'_>) -> Result<T, AppError> + Send + 'static,
    {
        self.write_publish(move |tx| f(tx).map(|out| (out, ())), |()| {})
            .await
    }

    /// [`Db::write`] for a write that finishes work already begun (the response of a request
    /// that ran, a refund the provider answered, a job's outcome, a sign-in attempt's
    /// result): never refused with 503 for a full queue, where a refusal would leave the work
    /// half done and a retry would do it twice.
    pub async fn write_to_finish<T, F>(&self, f: F) -> Result<T, AppError>
    where
        T: Send + 'static,
        F: FnOnce(&Tx<'_>) -> Result<T, AppError> + Send + 'static,
    {
        let (job, answer) = writer::write(
            &self.write_queue,
            move |tx| f(tx).map(|out| (out, ())),
            |()| {},
        );
        self.write_queue.submit_to_finish(job).await;
        crate::threads::answer(answer).await
    }

    /// The synchronous form of [`Db::read`], for code already on a blocking thread.
    pub fn read_blocking<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, AppError>,
    ) -> Result<T, AppError> {
        let conn = self.readers.get()?;
        f(&conn)
    }

    /// [`Db::write`], then `publish` given what the write set aside for it, on the writer
    /// right after the commit and before the next write can commit: what is published
    /// follows commit order (a later write's events never overtake an earlier one's), and
    /// nothing is published for a write that rolled back. `publish` must not block.
    pub async fn write_publish<T, P, F, A>(&self, f: F, publish: A) -> Result<T, AppError>
    where
        T: Send + 'static,
        P: Send + 'static,
        F: FnOnce(&Tx<'_>) -> Result<(T, P), AppError> + Send + 'static,
        A: FnOnce(P) + Send + 'static,
    {
        let (job, answer) = writer::write(&self.write_queue, f, publish);
        self.write_queue.submit(job)?;
        crate::threads::answer(answer).await
    }

    /// The synchronous form of [`Db::write`], for code already on a blocking thread: its
    /// own `BEGIN IMMEDIATE` transaction and commit.
    pub fn write_blocking<T>(
        &self,
        f: impl FnOnce(&Tx<'_>) -> Result<T, AppError>,
    ) -> Result<T, AppError> {
        let mut conn = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        self.job_inserted.store(false, Ordering::Relaxed);
        self.credentials_touched.store(false, Ordering::Relaxed);
        let mut tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let sp = tx.savepoint()?;
        let out = f(&sp)?; // dropping them on Err (or unwind) rolls back
        sp.commit()?;
        tx.commit()?;
        Self::after_commit(
            &self.job_inserted,
            &self.credentials_touched,
            &self.credentials_epoch,
            &self.jobs_ready,
        );
        Ok(out)
    }
}

/// `Connection::execute` through the statement cache: writes run the same few statements
/// over and over, and parsing them again each time was a measurable share of a write.
pub fn exec(c: &Connection, sql: &str, params: impl rusqlite::Params) -> rusqlite::Result<usize> {
    c.prepare_cached(sql)?.execute(params)
}

/// Deletes row `id` of `table` if it belongs to `store`; false when it does not exist there.
pub fn delete_in_store(
    c: &Connection,
    table: &str,
    store: crate::ids::StoreId,
    id: &dyn rusqlite::ToSql,
) -> Result<bool, AppError> {
    let sql = format!("DELETE FROM {table} WHERE store_id = ?1 AND id = ?2");
    Ok(exec(c, &sql, rusqlite::params![store, id])? == 1)
}

/// A list's WHERE clause with only the filters in use: `base`, then for each filter
/// `(in use, condition, its parameter)` either the condition or `param IS NULL` (which keeps
/// the parameter bound). `?2 IS NULL OR col = ?2` would hide `col` from the planner, so
/// SQLite could not seek the index that matches the filters.
pub fn where_clause(base: &str, filters: &[(bool, &str, &str)]) -> String {
    let mut sql = base.to_owned();
    for (used, condition, param) in filters {
        sql.push_str(" AND ");
        if *used {
            sql.push_str(condition);
        } else {
            sql.push_str(param);
            sql.push_str(" IS NULL");
        }
    }
    sql
}

/// A `LIKE ... ESCAPE '\'` pattern matching text that contains `s`, with `%` and `_` in
/// `s` matching themselves.
pub fn contains_pattern(s: &str) -> String {
    let escaped = s
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writer checkpoints only after the checkpointer has been silent for
    /// [`CHECKPOINTER_SILENT`], then once per [`CHECKPOINT_EVERY`], and stops as soon as the
    /// checkpointer looks again. The clock is the test's.
    #[test]
    fn the_writer_takes_over_only_from_a_silent_checkpointer() {
        let looks = Arc::new(AtomicU64::new(0));
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let takeover = Takeover::new(looks.clone(), t0);
        let silent = u64::try_from(CHECKPOINTER_SILENT.as_millis()).unwrap();
        let every = u64::try_from(CHECKPOINT_EVERY.as_millis()).unwrap();
        // Looking every 100 ms: never due, however long it goes on.
        for step in 1..=50 {
            looks.fetch_add(1, Ordering::Relaxed);
            assert!(!takeover.due(at(step * 100)), "due at step {step}");
        }
        // Silent from 5,000 ms on: not due before the silence has lasted long enough.
        assert!(!takeover.due(at(5_000 + silent - 1)));
        assert!(takeover.due(at(5_000 + silent)));
        // Then at most once per CHECKPOINT_EVERY.
        assert!(!takeover.due(at(5_000 + silent + every - 1)));
        assert!(takeover.due(at(5_000 + silent + every)));
        // The checkpointer looks again: the writer stops at once.
        looks.fetch_add(1, Ordering::Relaxed);
        assert!(!takeover.due(at(5_000 + silent + 3 * every)));
        assert!(!takeover.due(at(5_000 + silent + 4 * every)));
    }
}
