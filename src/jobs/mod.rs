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

pub mod scheduler;
pub mod worker;

use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Transaction, params};
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::ids::{EventId, JobId, RefundId, WebhookId};
use crate::time;

pub use worker::{Outcome, run_once};

/// Every kind of background work. The serialized form is stored, so variants and fields
/// may be added but not renamed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum Job {
    /// Deletes expired idempotency records, sign-in leftovers and old finished jobs.
    Cleanup,
    /// Sends one event to one webhook (None: the operator's platform webhook). `manual`
    /// re-sends (retry, recover) get one attempt; the others get the spec's five.
    WebhookDelivery {
        event_id: EventId,
        webhook_id: Option<WebhookId>,
        #[serde(default)]
        manual: bool,
    },
    /// Asks the payment provider again about a refund still pending (its first answer was
    /// uncertain, or never came), with the same idempotency key, until a definite answer.
    RefundCheck { refund_id: RefundId },
}

/// The queue of the generic workers; webhook deliveries have their own dispatcher.
pub const DEFAULT_QUEUE: &str = "default";
pub const WEBHOOK_QUEUE: &str = "webhooks";
/// Attempts of a refund check (also written by migration V14 for refunds it found pending):
/// with the backoff below, about a day, which is as long as payment providers keep an
/// idempotency key. Asking later could refund anew, so the check stops there and the refund
/// stays pending, its amount held, for the operator (its job is dead).
pub const REFUND_CHECK_ATTEMPTS: u32 = 31;

impl Job {
    pub fn kind(&self) -> &'static str {
        match self {
            Job::Cleanup => "cleanup",
            Job::WebhookDelivery { .. } => "webhook_delivery",
            Job::RefundCheck { .. } => "refund_check",
        }
    }

    pub fn max_attempts(&self) -> u32 {
        match self {
            Job::Cleanup => 3,
            Job::WebhookDelivery { manual: true, .. } => 1,
            Job::WebhookDelivery { .. } => crate::webhooks::MAX_ATTEMPTS,
            // Only a definite answer releases a held refund: keep asking (the backoff caps at
            // 1 h, so this is about six weeks) before leaving it dead for an operator.
            Job::RefundCheck { .. } => REFUND_CHECK_ATTEMPTS,
        }
    }

    /// Which workers run it.
    pub fn queue(&self) -> &'static str {
        match self {
            Job::Cleanup | Job::RefundCheck { .. } => DEFAULT_QUEUE,
            Job::WebhookDelivery { .. } => WEBHOOK_QUEUE,
        }
    }

    /// The receiver a delivery goes to: the dispatcher caps requests in flight per lane.
    pub fn lane(&self) -> Option<String> {
        match self {
            Job::Cleanup | Job::RefundCheck { .. } => None,
            Job::WebhookDelivery { webhook_id, .. } => Some(webhook_id.map_or_else(
                || crate::webhooks::PLATFORM_LANE.to_owned(),
                |w| w.to_string(),
            )),
        }
    }

    /// Delay before attempt `failed_attempts + 1`: exponential from 10 s, capped at 1 h, with
    /// up to 10% jitter so retries of many jobs spread out.
    pub fn backoff(&self, failed_attempts: u32) -> Duration {
        let base = Duration::from_secs(10);
        let exp = base.saturating_mul(1 << failed_attempts.saturating_sub(1).min(16));
        let capped = exp.min(Duration::from_secs(3600));
        let jitter = rand::random::<f64>() * 0.1;
        capped.mul_f64(1.0 + jitter)
    }
}

/// Enqueues `job` to run now, in the caller's transaction.
pub fn enqueue(tx: &Transaction<'_>, job: &Job, now: DateTime<Utc>) -> Result<JobId, AppError> {
    enqueue_at(tx, job, now, now)
}

/// Enqueues `job` to run at `run_at` or later, in the caller's transaction.
pub fn enqueue_at(
    tx: &Transaction<'_>,
    job: &Job,
    run_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<JobId, AppError> {
    let id = JobId::new();
    let payload = serde_json::to_string(job).map_err(AppError::internal)?;
    let now = time::format(now);
    crate::db::exec(
        tx,
        "INSERT INTO jobs (id, kind, payload, state, attempts, max_attempts, run_at, created_at,
                           updated_at, queue, lane)
         VALUES (?1, ?2, ?3, 'queued', 0, ?4, ?5, ?6, ?6, ?7, ?8)",
        params![
            id,
            job.kind(),
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
