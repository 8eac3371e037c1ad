//! Group commit (issue 22): the writer thread runs the writes queued for it in batches, each
//! write in its own savepoint inside one `BEGIN IMMEDIATE` transaction, and commits once
//! per batch instead of once per write.
//!
//! Invariants:
//! - A write that fails (or panics) rolls back to its savepoint: only its own changes go,
//!   and its caller gets its own error.
//! - No caller is answered, and nothing is published, before the commit that holds its
//!   write has returned (durable at the connection's `synchronous` level). A commit that
//!   fails answers every write of the batch with an error: none of them happened.
//! - A batch is only what is already queued when its first write starts, up to
//!   [`MAX_BATCH`] writes or [`MAX_BATCH_TIME`]: at light load a write commits alone, as
//!   before, and waits for nothing.
//! - What is published after the commit follows commit order (a later write's events never
//!   overtake an earlier one's), and runs before the next batch begins.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::AppError;
use crate::threads::{Answer, Queue};

/// The most writes one commit holds.
pub const MAX_BATCH: usize = 64;

/// How long a batch keeps taking queued writes after its first one started.
pub const MAX_BATCH_TIME: Duration = Duration::from_millis(2);

/// The transaction a write runs in: its own savepoint within the batch's transaction.
pub type Tx<'c> = rusqlite::Savepoint<'c>;

/// What answers a write's caller once the batch's commit is known (`Err` if it failed).
type Finish = Box<dyn FnOnce(Result<(), &str>) + Send>;

/// A write as queued: given its savepoint (or, if none could be begun, the reason), it
/// runs, and says whether to keep its changes and how to answer its caller.
///
/// A write that ran and failed is answered its own error once the batch commits; if the
/// batch is lost, with the batch's error instead: its failure may have come from what an
/// earlier write of the batch did (an e-mail taken, a key in use), which never happened.
pub type Write = Box<dyn FnOnce(Result<&Tx<'_>, AppError>) -> (bool, Finish) + Send>;

/// Wraps `f` (and `publish`, which runs after the commit) as a queued [`Write`] whose
/// outcome arrives on the returned channel. A write whose caller has gone before it starts
/// is skipped; its panic is caught here and re-raised on its caller.
pub fn write<T, P, F, A>(
    queue: &Queue<Write>,
    f: F,
    publish: A,
) -> (Write, Answer<Result<T, AppError>>)
where
    T: Send + 'static,
    P: Send + 'static,
    F: FnOnce(&Tx<'_>) -> Result<(T, P), AppError> + Send + 'static,
    A: FnOnce(P) + Send + 'static,
{
    let (answer, rx) = tokio::sync::oneshot::channel();
    let started = queue.wait_clock();
    let job: Write = Box::new(move |sp| {
        started();
        let sp = match sp {
            Ok(sp) if !answer.is_closed() => sp,
            Ok(_) => return (false, Box::new(|_| {})),
            Err(e) => {
                let finish: Finish = Box::new(move |_| {
                    let _ = answer.send(Ok(Err(e)));
                });
                return (false, finish);
            }
        };
        let lost = |why: &str| AppError::internal(anyhow::anyhow!("the commit failed: {why}"));
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(sp))) {
            Ok(Ok((out, published))) => {
                let finish: Finish = Box::new(move |commit| match commit {
                    Ok(()) => {
                        // A panic in `publish` reaches its caller, not the writer thread.
                        let published =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                publish(published);
                            }));
                        let _ = answer.send(published.map(|()| Ok(out)));
                    }
                    Err(why) => {
                        let _ = answer.send(Ok(Err(lost(why))));
                    }
                });
                (true, finish)
            }
            Ok(Err(e)) => (
                false,
                Box::new(move |commit| {
                    let _ = answer.send(Ok(Err(commit.map_or_else(lost, |()| e))));
                }),
            ),
            Err(panic) => (
                false,
                Box::new(move |_| {
                    let _ = answer.send(Err(panic));
                }),
            ),
        }
    });
    (job, rx)
}

/// How many writes, and for how long, one batch takes.
#[derive(Clone, Copy)]
pub struct Limits {
    pub writes: usize,
    pub time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            writes: MAX_BATCH,
            time: MAX_BATCH_TIME,
        }
    }
}

/// What the writer thread does besides running batches.
pub struct Hooks<S, A, B> {
    /// Told each batch's size.
    pub sized: S,
    /// Runs after each batch's commit (or rollback), with the mutex still held and before
    /// any of its callers is answered: a revoked token's caller must not be answered
    /// before the credentials epoch moves.
    pub after_commit: A,
    /// Runs before each batch, outside any transaction, with the mutex held.
    pub between: B,
}

/// Starts the writer thread: it takes batches of writes from `rx` and runs them on `conn`.
pub fn start<S, A, B>(
    conn: Arc<Mutex<Connection>>,
    rx: crossbeam_channel::Receiver<Write>,
    limits: Limits,
    hooks: Hooks<S, A, B>,
) where
    S: Fn(usize) + Send + 'static,
    A: Fn() + Send + 'static,
    B: Fn(&Connection) + Send + 'static,
{
    std::thread::Builder::new()
        .name("db-write-0".into())
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut c = conn.lock().unwrap_or_else(PoisonError::into_inner);
                (hooks.between)(&c);
                (hooks.sized)(run_batch(&mut c, first, &rx, limits, &hooks.after_commit));
            }
        })
        .expect("the writer thread starts");
}

/// Runs `first` and the writes queued behind it in one transaction, then answers them all.
fn run_batch(
    c: &mut Connection,
    first: Write,
    rx: &crossbeam_channel::Receiver<Write>,
    limits: Limits,
    after_commit: &dyn Fn(),
) -> usize {
    let mut begun = c.execute_batch("BEGIN IMMEDIATE");
    if begun.is_err() && !c.is_autocommit() {
        // A transaction left open by a rollback that failed: end it and begin again.
        let _ = c.execute_batch("ROLLBACK");
        begun = c.execute_batch("BEGIN IMMEDIATE");
    }
    if let Err(e) = begun {
        // Another process holds the write lock past the busy timeout: this write fails,
        // the next ones try again.
        let (_, finish) = first(Err(e.into()));
        after_commit();
        settle(finish, Ok(()));
        return 1;
    }
    let started = Instant::now();
    let mut finishes: Vec<Finish> = Vec::new();
    let mut next = Some(first);
    let mut lost = None;
    while let Some(write) = next.take() {
        match c.savepoint() {
            Ok(mut sp) => {
                let (keep, finish) = write(Ok(&sp));
                // Kept: released into the batch. Not: rolled back to the savepoint, then
                // released; if that fails, its changes could stay, so the batch is lost.
                let ended = if keep {
                    sp.commit()
                } else {
                    sp.rollback().and_then(|()| sp.commit())
                };
                if let Err(e) = ended {
                    lost = Some(e.to_string());
                }
                finishes.push(finish);
            }
            Err(e) => {
                let (_, finish) = write(Err(e.into()));
                finishes.push(finish);
            }
        }
        // SQLite rolls the whole transaction back on some errors (a full disk, an I/O
        // error): the writes kept so far are gone with it.
        if c.is_autocommit() {
            lost.get_or_insert_with(|| "the transaction was rolled back".to_owned());
        }
        if lost.is_some() || finishes.len() >= limits.writes || started.elapsed() >= limits.time {
            break;
        }
        next = rx.try_recv().ok();
    }
    let outcome = match lost {
        Some(why) => Err(why),
        None => c.execute_batch("COMMIT").map_err(|e| e.to_string()),
    };
    if outcome.is_err() && !c.is_autocommit() {
        let _ = c.execute_batch("ROLLBACK");
    }
    after_commit();
    let size = finishes.len();
    for finish in finishes {
        settle(finish, outcome.as_ref().map(|_| ()).map_err(String::as_str));
    }
    size
}

/// Runs `finish`; a panic there (none is expected: publishing only queues) is logged, so
/// the writer thread lives on and the batch's other callers are still answered.
fn settle(finish: Finish, outcome: Result<(), &str>) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| finish(outcome))).is_err() {
        tracing::error!("answering a write panicked");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use rusqlite::Connection;

    use super::{Limits, Write};
    use crate::error::{AppError, ErrorCode};
    use crate::threads::{Queue, answer};

    /// A database file with one table of unique numbers (kept while the directory lives).
    fn table() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let c = Connection::open(dir.path().join("t.db")).unwrap();
        c.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (x INTEGER UNIQUE)")
            .unwrap();
        (dir, c)
    }

    /// Issue 22: writes queued behind a busy writer share one commit; a write that fails, or
    /// panics, rolls back only its own changes and gets its own outcome; the others are kept,
    /// and published and answered after the commit.
    #[tokio::test]
    async fn queued_writes_share_one_commit_and_a_failing_one_rolls_back_alone() {
        let (_dir, c) = table();
        let commits = Arc::new(AtomicUsize::new(0));
        let counted = commits.clone();
        c.commit_hook(Some(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            false
        }))
        .unwrap();
        let conn = Arc::new(Mutex::new(c));
        let (queue, rx) = Queue::<Write>::new("test", 100);
        let limits = Limits {
            writes: 64,
            time: Duration::from_secs(60),
        };
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let sized = sizes.clone();
        let ended = Arc::new(AtomicUsize::new(0));
        let ending = ended.clone();
        super::start(
            conn.clone(),
            rx,
            limits,
            super::Hooks {
                sized: move |n| sized.lock().unwrap().push(n),
                after_commit: move || {
                    ending.fetch_add(1, Ordering::SeqCst);
                },
                between: |_: &Connection| {},
            },
        );

        // The writer is busy (its connection taken) while the writes queue.
        let busy = conn.lock().unwrap();
        let insert = |x: i64| {
            move |tx: &super::Tx<'_>| -> Result<(i64, ()), AppError> {
                tx.execute("INSERT INTO t (x) VALUES (?1)", [x])?;
                Ok((x, ()))
            }
        };
        let mut kept = Vec::new();
        for x in 1..=3 {
            let (job, rx) = super::write(&queue, insert(x), |()| {});
            queue.submit(job).unwrap();
            kept.push(rx);
        }
        // Writes, then fails: its row must go.
        let (job, failed) = super::write(
            &queue,
            |tx: &super::Tx<'_>| -> Result<((), ()), AppError> {
                tx.execute("INSERT INTO t (x) VALUES (100)", [])?;
                Err(AppError::conflict(ErrorCode::Conflict, "no"))
            },
            |()| {},
        );
        queue.submit(job).unwrap();
        // A constraint error from SQLite: the statement fails, the batch goes on.
        let (job, duplicate) = super::write(&queue, insert(2), |()| {});
        queue.submit(job).unwrap();
        // Writes, then panics: its row must go, and the panic reaches its caller.
        let (job, panicked) = super::write(
            &queue,
            |tx: &super::Tx<'_>| -> Result<((), ()), AppError> {
                tx.execute("INSERT INTO t (x) VALUES (200)", []).unwrap();
                panic!("a bug in a write");
            },
            |()| {},
        );
        queue.submit(job).unwrap();
        let published = Arc::new(Mutex::new(Vec::new()));
        let seen = published.clone();
        let (job, last) = super::write(
            &queue,
            |tx: &super::Tx<'_>| -> Result<(i64, i64), AppError> {
                tx.execute("INSERT INTO t (x) VALUES (4)", [])?;
                Ok((4, 4))
            },
            {
                let ended = ended.clone();
                // Published after `after_commit` (the credentials epoch) has run.
                move |p| seen.lock().unwrap().push((p, ended.load(Ordering::SeqCst)))
            },
        );
        queue.submit(job).unwrap();
        let before = commits.load(Ordering::SeqCst);
        drop(busy);

        for (x, rx) in (1..=3).zip(kept) {
            assert_eq!(answer(rx).await.unwrap(), x);
        }
        assert_eq!(answer(failed).await.unwrap_err().code, ErrorCode::Conflict);
        assert!(answer(duplicate).await.is_err());
        let caught = tokio::spawn(answer(panicked)).await;
        assert!(
            caught.unwrap_err().is_panic(),
            "the panic reaches its caller"
        );
        assert_eq!(answer(last).await.unwrap(), 4);
        assert_eq!(*published.lock().unwrap(), vec![(4, 1)]);

        assert_eq!(commits.load(Ordering::SeqCst) - before, 1, "one commit");
        assert_eq!(*sizes.lock().unwrap(), vec![7], "of the seven writes");
        let c = conn.lock().unwrap();
        let rows: Vec<i64> = c
            .prepare("SELECT x FROM t ORDER BY x")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows, vec![1, 2, 3, 4]);
    }

    /// A batch SQLite rolls back as a whole (here a write ends the transaction itself, as a
    /// full disk would): no write of it is answered success, and one that failed because of
    /// a batch-mate's write that never happened gets the batch's error, not its own.
    #[tokio::test]
    async fn a_lost_batch_answers_every_write_with_its_error() {
        let (_dir, c) = table();
        let conn = Arc::new(Mutex::new(c));
        let (queue, rx) = Queue::<Write>::new("test", 100);
        let limits = Limits {
            writes: 64,
            time: Duration::from_secs(60),
        };
        let hooks = super::Hooks {
            sized: |_| {},
            after_commit: || {},
            between: |_: &Connection| {},
        };
        super::start(conn.clone(), rx, limits, hooks);
        let busy = conn.lock().unwrap();
        let insert = |x: i64, code: ErrorCode| {
            move |tx: &super::Tx<'_>| -> Result<((), ()), AppError> {
                tx.execute("INSERT INTO t (x) VALUES (?1)", [x])
                    .map_err(|_| AppError::conflict(code, "taken"))?;
                Ok(((), ()))
            }
        };
        let (job, first) = super::write(&queue, insert(1, ErrorCode::Conflict), |()| {});
        queue.submit(job).unwrap();
        // Fails only because the first write took 1.
        let (job, second) = super::write(&queue, insert(1, ErrorCode::Conflict), |()| {});
        queue.submit(job).unwrap();
        let (job, third) = super::write(
            &queue,
            |tx: &super::Tx<'_>| -> Result<((), ()), AppError> {
                tx.execute_batch("ROLLBACK")?;
                Ok(((), ()))
            },
            |()| {},
        );
        queue.submit(job).unwrap();
        drop(busy);

        let e = answer(first).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InternalError, "kept, then lost");
        let e = answer(second).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::InternalError, "not its own 409");
        assert!(answer(third).await.is_err());
        let c = conn.lock().unwrap();
        let n: i64 = c
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0);
        assert!(c.is_autocommit(), "no transaction left open");
    }
}
