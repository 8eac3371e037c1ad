//! Claiming and running jobs. SQLite has no `SKIP LOCKED`, but the single writer serializes
//! claims, so one `UPDATE .. RETURNING` inside a write transaction hands a job to exactly one
//! worker.

use std::future::Future;
use std::time::Duration;

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, params};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::StoredJob;
use crate::error::AppError;
use crate::ids::JobId;
use crate::state::AppState;
use crate::time;

/// What one turn of a worker did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ran,
    Empty,
}

#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: JobId,
    /// The stored job; an error when its payload is not a job at all.
    pub job: Result<StoredJob, String>,
    pub attempts: u32,
    pub max_attempts: u32,
    pub lane: Option<String>,
}

impl Claimed {
    /// The claimed job as kind `J`, if it is one.
    pub fn read<J: super::JobKind>(&self) -> Option<J> {
        self.job.as_ref().ok()?.read()
    }
}

/// How long an idle worker waits before looking again when nothing woke it.
const IDLE_POLL: Duration = Duration::from_secs(1);

/// Which attempt of its job a handler is running, for a handler that must act once the
/// queue gives up (mark what it was delivering failed) rather than only return its error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// 1 for the first attempt.
    pub number: u32,
    pub max: u32,
}

impl Attempt {
    /// Whether the queue retries no more after this attempt fails.
    pub fn is_last(self) -> bool {
        self.number >= self.max
    }
}

tokio::task_local! {
    static ATTEMPT: Attempt;
}

/// The attempt the running job handler is on; None outside a job handler.
pub fn attempt() -> Option<Attempt> {
    ATTEMPT.try_with(|a| *a).ok()
}

/// Claims the next due job of the default queue, if any: a queued job whose time has come,
/// or a running job whose lease ran out. A job that has used every attempt is marked dead
/// instead.
#[tracing::instrument(skip_all)]
pub fn claim(
    tx: &Tx<'_>,
    now: DateTime<Utc>,
    lease: Duration,
) -> Result<Option<Claimed>, AppError> {
    let now_s = time::format(now);
    loop {
        // Default-queue jobs have no lane; saying so lets the index give run_at order.
        let next: Option<JobId> = tx
            .query_row(
                "SELECT id FROM (
                    SELECT id, run_at AS due FROM jobs
                    WHERE queue = ?2 AND lane IS NULL AND state = 'queued' AND run_at <= ?1
                    ORDER BY run_at LIMIT 1)
                 UNION ALL
                 SELECT id FROM (
                    SELECT id, lease_until AS due FROM jobs
                    WHERE queue = ?2 AND state = 'running' AND lease_until <= ?1
                    ORDER BY lease_until LIMIT 1)
                 LIMIT 1",
                params![now_s, super::DEFAULT_QUEUE],
                |r| r.get(0),
            )
            .optional()?;
        let Some(id) = next else { return Ok(None) };
        if let Taken::Claimed(c) = take(tx, id, now, lease)? {
            return Ok(Some(c));
        }
    }
}

/// Claims up to `limit` due jobs of one lane of `queue`, oldest first.
pub fn claim_lane(
    tx: &Tx<'_>,
    queue: &str,
    lane: &str,
    now: DateTime<Utc>,
    lease: Duration,
    limit: usize,
) -> Result<Vec<Claimed>, AppError> {
    let ids: Vec<JobId> = tx
        .prepare_cached(&format!(
            "SELECT id FROM jobs WHERE queue = ?1 AND lane = ?2 AND state = 'queued' AND run_at <= ?3
             ORDER BY run_at LIMIT {limit}"
        ))?
        .query_map(
            params![queue, lane, time::format(now)],
            |r| r.get(0),
        )?
        .collect::<Result<_, _>>()?;
    Ok(take_all(tx, ids, now, lease)?.0)
}

/// Claims up to `limit` jobs of `queue` whose lease ran out (their worker died mid-attempt).
/// Returns those claimed again and those that had used their last attempt and are now dead.
pub fn claim_expired(
    tx: &Tx<'_>,
    queue: &str,
    now: DateTime<Utc>,
    lease: Duration,
    limit: usize,
) -> Result<(Vec<Claimed>, Vec<Claimed>), AppError> {
    let ids: Vec<JobId> = tx
        .prepare_cached(&format!(
            "SELECT id FROM jobs WHERE queue = ?1 AND state = 'running' AND lease_until <= ?2
             ORDER BY lease_until LIMIT {limit}"
        ))?
        .query_map(params![queue, time::format(now)], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    take_all(tx, ids, now, lease)
}

fn take_all(
    tx: &Tx<'_>,
    ids: Vec<JobId>,
    now: DateTime<Utc>,
    lease: Duration,
) -> Result<(Vec<Claimed>, Vec<Claimed>), AppError> {
    let (mut claimed, mut dead) = (Vec::with_capacity(ids.len()), Vec::new());
    for id in ids {
        match take(tx, id, now, lease)? {
            Taken::Claimed(c) => claimed.push(c),
            Taken::Dead(c) => dead.push(c),
        }
    }
    Ok((claimed, dead))
}

enum Taken {
    Claimed(Claimed),
    /// It had used every attempt already (its last one died with its worker): now dead.
    Dead(Claimed),
}

/// Leases one job to the caller, counting an attempt, or marks it dead when it had used
/// every attempt already.
fn take(tx: &Tx<'_>, id: JobId, now: DateTime<Utc>, lease: Duration) -> Result<Taken, AppError> {
    let now_s = time::format(now);
    let lease_until = time::format(now + chrono::Duration::from_std(lease).unwrap_or_default());
    let claimed = tx.query_row(
        "UPDATE jobs SET state = 'running', lease_until = ?2, attempts = attempts + 1,
                         updated_at = ?3
         WHERE id = ?1
         RETURNING id, payload, attempts, max_attempts, lane",
        params![id, lease_until, now_s],
        |r| {
            Ok(Claimed {
                id: r.get(0)?,
                job: serde_json::from_str::<StoredJob>(&r.get::<_, String>(1)?)
                    .map_err(|e| format!("unknown job payload: {e}")),
                attempts: r.get(2)?,
                max_attempts: r.get(3)?,
                lane: r.get(4)?,
            })
        },
    )?;
    if claimed.attempts > claimed.max_attempts {
        // Its last attempt died with the process that held it.
        crate::db::exec(tx,
            "UPDATE jobs SET state = 'dead', lease_until = NULL, updated_at = ?2,
                    last_error = COALESCE(last_error || '; ', '') || 'lease expired: the worker holding it stopped'
             WHERE id = ?1",
            params![claimed.id, now_s],
        )?;
        return Ok(Taken::Dead(claimed));
    }
    Ok(Taken::Claimed(claimed))
}

/// Whether the default queue has a job to claim now: a cheap read before the write
/// transaction, because every commit that enqueues a webhook delivery wakes these workers.
fn default_due(c: &rusqlite::Connection, now: DateTime<Utc>) -> Result<bool, AppError> {
    Ok(c.query_row(
        "SELECT EXISTS (SELECT 1 FROM jobs WHERE queue = ?2 AND lane IS NULL
                          AND state = 'queued' AND run_at <= ?1)
             OR EXISTS (SELECT 1 FROM jobs WHERE queue = ?2 AND state = 'running'
                          AND lease_until <= ?1)",
        params![time::format(now), super::DEFAULT_QUEUE],
        |r| r.get(0),
    )?)
}

// Every statement that settles a job names the claim it belongs to (`attempts` is bumped by
// each claim), so a worker whose lease was taken over can no longer touch the job.

/// Marks a claimed job done; false when the claim was lost.
pub fn complete(tx: &Tx<'_>, c: &Claimed, now: DateTime<Utc>) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE jobs SET state = 'done', lease_until = NULL, last_error = NULL, updated_at = ?3
         WHERE id = ?1 AND attempts = ?2 AND state = 'running'",
        params![c.id, c.attempts, time::format(now)],
    )?;
    Ok(n == 1)
}

/// Extends the lease of a job that is still running; false when the claim was lost.
pub fn renew(
    tx: &Tx<'_>,
    (id, attempts): (JobId, u32),
    now: DateTime<Utc>,
    lease: Duration,
) -> Result<bool, AppError> {
    let until = now + chrono::Duration::from_std(lease).unwrap_or_default();
    let n = crate::db::exec(
        tx,
        "UPDATE jobs SET lease_until = ?3 WHERE id = ?1 AND attempts = ?2 AND state = 'running'",
        params![id, attempts, time::format(until)],
    )?;
    Ok(n == 1)
}

fn fail(tx: &Tx<'_>, c: &Claimed, error: &str, now: DateTime<Utc>) -> Result<bool, AppError> {
    let retry_at = match &c.job {
        Ok(_) if c.attempts < c.max_attempts => {
            Some(now + chrono::Duration::from_std(super::backoff(c.attempts)).unwrap_or_default())
        }
        _ => None,
    };
    fail_at(tx, c, error, now, retry_at)
}

/// Records a failed attempt: queued again at `retry_at`, or dead when None. False when the
/// claim was lost.
pub fn fail_at(
    tx: &Tx<'_>,
    c: &Claimed,
    error: &str,
    now: DateTime<Utc>,
    retry_at: Option<DateTime<Utc>>,
) -> Result<bool, AppError> {
    let (state, run_at) = retry_at.map_or(("dead", now), |at| ("queued", at));
    let n = crate::db::exec(
        tx,
        "UPDATE jobs SET state = ?3, run_at = ?4, lease_until = NULL, last_error = ?5,
                         updated_at = ?6
         WHERE id = ?1 AND attempts = ?2 AND state = 'running'",
        params![
            c.id,
            c.attempts,
            state,
            time::format(run_at),
            error,
            time::format(now)
        ],
    )?;
    Ok(n == 1)
}

/// Puts a job back without counting the attempt (shutdown came before it finished).
pub fn release(tx: &Tx<'_>, c: &Claimed, now: DateTime<Utc>) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE jobs SET state = 'queued', lease_until = NULL, attempts = attempts - 1,
                         run_at = ?3, updated_at = ?3
         WHERE id = ?1 AND attempts = ?2 AND state = 'running'",
        params![c.id, c.attempts, time::format(now)],
    )?;
    Ok(n == 1)
}

/// Runs a job with the handler its kind registered.
async fn execute(st: AppState, job: StoredJob) -> anyhow::Result<()> {
    let registry = st.jobs.clone();
    registry.run(st, job).await
}

/// Runs one due job with the real handlers, if there is one. Tests call this to drain the
/// queue deterministically.
pub async fn run_once(st: &AppState) -> Result<Outcome, AppError> {
    run_once_with(st, &CancellationToken::new(), execute).await
}

/// [`run_once`] with the job handler given, so the retry and dead-letter rules can be tested
/// with a handler that fails on purpose.
pub async fn run_once_with<F, Fut>(
    st: &AppState,
    shutdown: &CancellationToken,
    handler: F,
) -> Result<Outcome, AppError>
where
    F: FnOnce(AppState, StoredJob) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let (now, lease) = (st.clock.now(), st.cfg.job_lease);
    if !st.db.read(move |c| default_due(c, now)).await? {
        return Ok(Outcome::Empty);
    }
    let Some(claimed) = st.db.write(move |tx| claim(tx, now, lease)).await? else {
        return Ok(Outcome::Empty);
    };
    let span = tracing::info_span!("job", job_id = %claimed.id, attempt = claimed.attempts);
    settle(st, shutdown, claimed, handler)
        .instrument(span)
        .await
}

async fn settle<F, Fut>(
    st: &AppState,
    shutdown: &CancellationToken,
    claimed: Claimed,
    handler: F,
) -> Result<Outcome, AppError>
where
    F: FnOnce(AppState, StoredJob) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let result = match &claimed.job {
        Err(e) => Some(Err(anyhow::anyhow!("{e}"))),
        Ok(job) => {
            #[cfg(feature = "failpoints")]
            crate::threads::run_blocking(|| fail::fail_point!("jobs::execute")).await;
            let attempt = Attempt {
                number: claimed.attempts,
                max: claimed.max_attempts,
            };
            let run = ATTEMPT.scope(attempt, handler(st.clone(), job.clone()));
            let drain = st.cfg.shutdown_drain();
            tokio::select! {
                r = run => Some(r),
                () = keep_lease(st, &claimed) => Some(Err(anyhow::anyhow!("lost the job's lease"))),
                () = async { shutdown.cancelled().await; tokio::time::sleep(drain).await } => None,
            }
        }
    };
    let now = st.clock.now();
    let (settled, what) = match result {
        Some(Ok(())) => (
            st.db
                .write_to_finish(move |tx| complete(tx, &claimed, now))
                .await?,
            "done",
        ),
        Some(Err(e)) => {
            let msg = format!("{e:#}");
            tracing::warn!(error = %msg, "job attempt failed");
            (
                st.db
                    .write_to_finish(move |tx| fail(tx, &claimed, &msg, now))
                    .await?,
                "failed",
            )
        }
        None => {
            tracing::info!("shutting down: job released for the next start");
            (
                st.db
                    .write_to_finish(move |tx| release(tx, &claimed, now))
                    .await?,
                "released",
            )
        }
    };
    if settled {
        tracing::debug!(outcome = what, "job settled");
    } else {
        tracing::warn!(
            outcome = what,
            "job was taken over by another worker; result dropped"
        );
    }
    Ok(Outcome::Ran)
}

/// Renews the lease every third of its length while the job runs; returns only if the
/// claim was lost (another worker took the job over), which stops this attempt.
async fn keep_lease(st: &AppState, claimed: &Claimed) {
    let lease = st.cfg.job_lease;
    let claim = (claimed.id, claimed.attempts);
    loop {
        tokio::time::sleep(lease / 3).await;
        let now = st.clock.now();
        match st
            .db
            .write_to_finish(move |tx| renew(tx, claim, now, lease))
            .await
        {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => tracing::warn!(error = ?e, "could not renew a job lease"),
        }
    }
}

/// One worker: claims and runs jobs until `shutdown`, sleeping when the queue is empty until
/// a commit enqueues a job (or `IDLE_POLL` passes, for jobs scheduled in the future).
pub async fn work(st: AppState, shutdown: CancellationToken) {
    let wake = st.db.jobs_ready().clone();
    while !shutdown.is_cancelled() {
        let notified = wake.notified();
        tokio::pin!(notified);
        notified.as_mut().enable(); // register before looking, so no wake-up is missed
        match run_once_with(&st, &shutdown, execute).await {
            Ok(Outcome::Ran) => {}
            Ok(Outcome::Empty) => {
                tokio::select! {
                    () = &mut notified => {}
                    () = tokio::time::sleep(IDLE_POLL) => {}
                    () = shutdown.cancelled() => {}
                }
            }
            Err(e) => {
                tracing::error!(error = ?e, "job worker could not reach the queue");
                tokio::time::sleep(IDLE_POLL).await;
            }
        }
    }
}
