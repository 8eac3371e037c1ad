//! The durable job queue (issue 2 §5).
//!
//! Invariants:
//! - A job is enqueued with [`enqueue`] inside the same transaction as the write that causes
//!   it (outbox): both commit or neither does.
//! - A worker claims a job with a lease. If the process dies, the lease runs out and another
//!   worker (after a restart, this one) takes the job again; each claim counts an attempt.
//! - A failed attempt is retried after the job's backoff until `max_attempts`; then the job
//!   is `dead`, keeping its last error.
//! - The scheduler enqueues periodic cleanups rather than running them inline.
//! - A job belongs to a queue: the generic workers take `default` jobs, the webhook
//!   dispatcher `webhooks` jobs, each with its own lanes (see `webhooks::delivery`).
//! - The queue knows no area: areas define their kinds ([`JobKind`]) and register handlers
//!   and cleanups in the [`Registry`] the application builds.

pub mod registry;
pub mod scheduler;
pub mod worker;

use std::time::Duration;

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::params;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::ids::JobId;
use crate::time;

pub use registry::{Cleanup, Registry};
pub use worker::{Attempt, Outcome, attempt, run_once};

/// A kind of background work, defined by the area that does it and registered with its
/// handler in a [`Registry`]. The job is stored as `{"kind": KIND, "data": <the job>}`, so
/// `KIND` and the fields may be added to but never renamed.
pub trait JobKind: Serialize + DeserializeOwned {
    const KIND: &'static str;

    /// Attempts before the job is left `dead` for an operator.
    fn max_attempts(&self) -> u32;

    /// Which workers run it: the generic ones (`default`) unless an area runs its own.
    fn queue(&self) -> &'static str {
        DEFAULT_QUEUE
    }

    /// Jobs of one lane are capped together by the workers of their queue.
    fn lane(&self) -> Option<String> {
        None
    }
}

/// A job as stored: its kind, and its data for the kind's handler to read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredJob {
    pub kind: String,
    /// Absent in jobs that carry none (`{"kind": "cleanup"}`).
    #[serde(default)]
    pub data: serde_json::Value,
}

impl StoredJob {
    /// The job as kind `J`, if it is one.
    pub fn read<J: JobKind>(&self) -> Option<J> {
        (self.kind == J::KIND)
            .then(|| serde_json::from_value(self.data.clone()).ok())
            .flatten()
    }
}

/// The queue of the generic workers; an area may run a queue of its own (webhook deliveries).
pub const DEFAULT_QUEUE: &str = "default";

/// Delay before attempt `failed_attempts + 1` of a job: [`backoff_from`] 10 s.
pub fn backoff(failed_attempts: u32) -> Duration {
    backoff_from(Duration::from_secs(10), failed_attempts)
}

/// The one retry rule: `base`, then doubling (2×, 4×, ...), capped at 1 h, with up to 10%
/// jitter so retries of many jobs spread out.
pub fn backoff_from(base: Duration, failed_attempts: u32) -> Duration {
    let exp = base.saturating_mul(1 << failed_attempts.saturating_sub(1).min(16));
    let capped = exp.min(Duration::from_secs(3600));
    let jitter = rand::random::<f64>() * 0.1;
    capped.mul_f64(1.0 + jitter)
}

/// Enqueues `job` to run now, in the caller's transaction.
pub fn enqueue<J: JobKind>(tx: &Tx<'_>, job: &J, now: DateTime<Utc>) -> Result<JobId, AppError> {
    enqueue_at(tx, job, now, now)
}

/// Enqueues `job` to run at `run_at` or later, in the caller's transaction.
pub fn enqueue_at<J: JobKind>(
    tx: &Tx<'_>,
    job: &J,
    run_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<JobId, AppError> {
    let id = JobId::new();
    let stored = StoredJob {
        kind: J::KIND.to_owned(),
        data: serde_json::to_value(job).map_err(AppError::internal)?,
    };
    let payload = serde_json::to_string(&stored).map_err(AppError::internal)?;
    let now = time::format(now);
    crate::db::exec(
        tx,
        "INSERT INTO jobs (id, kind, payload, state, attempts, max_attempts, run_at, created_at,
                           updated_at, queue, lane)
         VALUES (?1, ?2, ?3, 'queued', 0, ?4, ?5, ?6, ?6, ?7, ?8)",
        params![
            id,
            J::KIND,
            payload,
            job.max_attempts(),
            time::format(run_at),
            now,
            job.queue(),
            job.lane()
        ],
    )?;
    Ok(id)
}

/// Enqueues `job` at `run_at` unless a job of its kind is waiting (or, with `or_running`,
/// running): how a recurring job keeps one copy in the queue. True when it enqueued.
pub fn enqueue_once<J: JobKind>(
    tx: &Tx<'_>,
    job: &J,
    run_at: DateTime<Utc>,
    now: DateTime<Utc>,
    or_running: bool,
) -> Result<bool, AppError> {
    let pending: bool = tx
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM jobs WHERE kind = ?1
                              AND (state = 'queued' OR (?2 AND state = 'running')))",
        )?
        .query_row(params![J::KIND, or_running], |r| r.get(0))?;
    if !pending {
        enqueue_at(tx, job, run_at, now)?;
    }
    Ok(!pending)
}

#[cfg(test)]
mod tests {
    use super::{Cleanup, JobKind, StoredJob};

    /// Jobs queued before kinds moved to their areas were stored as the old enum wrote them
    /// (`{"kind": .., "data": ..}`, no `data` for a unit variant): they still read.
    #[test]
    fn jobs_stored_by_the_old_enum_still_read() {
        let cleanup: StoredJob = serde_json::from_str(r#"{"kind":"cleanup"}"#).unwrap();
        assert_eq!(cleanup.read::<Cleanup>(), Some(Cleanup));
        let stored = StoredJob {
            kind: Cleanup::KIND.into(),
            data: serde_json::to_value(Cleanup).unwrap(),
        };
        assert_eq!(stored.read::<Cleanup>(), Some(Cleanup));
        let other: StoredJob =
            serde_json::from_str(r#"{"kind":"refund_check","data":{"refund_id":"x"}}"#).unwrap();
        assert_eq!(
            other.read::<Cleanup>(),
            None,
            "another kind is not a cleanup"
        );
    }
}

/// One kind's jobs as the metrics see them.
#[derive(Debug, Clone, PartialEq)]
pub struct KindStats {
    pub kind: String,
    pub queue: String,
    /// Waiting, due or not.
    pub queued: i64,
    pub running: i64,
    /// How long the oldest due job has waited past its `run_at`; zero when none is due.
    pub oldest_due: chrono::Duration,
}

/// Waiting and running jobs by kind, and how late the oldest due one is. A scan of the
/// waiting and running rows only (the partial indexes hold just those): a backlog is what
/// this is meant to show, and it stays cheap while there is none.
pub fn stats(c: &rusqlite::Connection, now: DateTime<Utc>) -> Result<Vec<KindStats>, AppError> {
    let mut st = c.prepare_cached(
        "SELECT kind, queue,
                SUM(state = 'queued'), SUM(state = 'running'),
                MIN(CASE WHEN state = 'queued' AND run_at <= ?1 THEN run_at END)
         FROM jobs WHERE state IN ('queued', 'running')
         GROUP BY kind, queue ORDER BY kind, queue",
    )?;
    let rows = st.query_map(params![time::format(now)], |r| {
        let due: Option<String> = r.get(4)?;
        Ok(KindStats {
            kind: r.get(0)?,
            queue: r.get(1)?,
            queued: r.get(2)?,
            running: r.get(3)?,
            oldest_due: due
                .as_deref()
                .and_then(time::parse)
                .map_or(chrono::Duration::zero(), |d| {
                    (now - d).max(chrono::Duration::zero())
                }),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// How long the oldest due job of the default queue has waited past its `run_at` (zero
/// when none is due): what `/readyz` holds against `--ready-max-job-lag-secs`.
pub fn default_queue_lag(
    c: &rusqlite::Connection,
    now: DateTime<Utc>,
) -> Result<chrono::Duration, AppError> {
    // The claim index (queue, lane, run_at) gives the oldest per lane.
    let due: Option<String> = c
        .prepare_cached(
            "SELECT MIN(run_at) FROM jobs
             WHERE queue = ?1 AND state = 'queued' AND run_at <= ?2",
        )?
        .query_row(params![DEFAULT_QUEUE, time::format(now)], |r| r.get(0))?;
    Ok(due
        .as_deref()
        .and_then(time::parse)
        .map_or(chrono::Duration::zero(), |d| {
            (now - d).max(chrono::Duration::zero())
        }))
}
