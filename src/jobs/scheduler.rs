//! Periodic work and the job handlers. The scheduler only enqueues (a cleanup is then run by
//! whichever worker claims it); the in-memory rate-limit table is trimmed inline.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::Transaction;
use tokio_util::sync::CancellationToken;

use super::{Job, enqueue};
use crate::error::AppError;
use crate::http::idempotency;
use crate::state::AppState;
use crate::time;

/// How long finished jobs are kept for inspection.
const KEEP_DONE: chrono::Duration = chrono::Duration::days(1);
const KEEP_DEAD: chrono::Duration = chrono::Duration::days(30);

/// Runs one job. Every `Job` variant is handled here.
#[tracing::instrument(skip_all, fields(kind = job.kind()))]
pub async fn execute(st: AppState, job: Job) -> anyhow::Result<()> {
    match job {
        Job::Cleanup => {
            let now = st.clock.now();
            let window = st.cfg.sign_in_window;
            let (rows, jobs) = st.db.write(move |tx| cleanup(tx, now, window)).await?;
            tracing::info!(rows, jobs, "cleanup done");
            Ok(())
        }
        Job::RefundCheck { refund_id } => crate::orders::refunds::check(&st, refund_id).await,
        // Claimed only by the webhook dispatcher, never by these workers.
        Job::WebhookDelivery { .. } => {
            anyhow::bail!("webhook deliveries run on the webhook dispatcher")
        }
    }
}

#[tracing::instrument(skip_all)]
fn cleanup(
    tx: &Transaction<'_>,
    now: DateTime<Utc>,
    sign_in_window: chrono::Duration,
) -> Result<(usize, usize), AppError> {
    let keys =
        idempotency::purge_expired(tx, now)? + crate::auth::store::purge(tx, now, sign_in_window)?;
    let jobs = crate::db::exec(
        tx,
        "DELETE FROM jobs WHERE (state = 'done' AND updated_at <= ?1)
                             OR (state = 'dead' AND updated_at <= ?2)",
        [time::format(now - KEEP_DONE), time::format(now - KEEP_DEAD)],
    )?;
    // Delivery history and the events behind it are kept 30 days (recover reaches 14).
    let old = time::format(now - KEEP_DEAD);
    let history = crate::db::exec(
        tx,
        "DELETE FROM webhook_attempts WHERE created_at <= ?1",
        [&old],
    )? + crate::db::exec(tx, "DELETE FROM events WHERE created_at <= ?1", [&old])?;
    Ok((keys + history, jobs))
}

/// Enqueues a cleanup unless one is already waiting or running.
pub fn enqueue_cleanup(tx: &Transaction<'_>, now: DateTime<Utc>) -> Result<bool, AppError> {
    let pending: bool = tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM jobs WHERE kind = 'cleanup' AND state IN ('queued', 'running'))",
        [],
        |r| r.get(0),
    )?;
    if !pending {
        enqueue(tx, &Job::Cleanup, now)?;
    }
    Ok(!pending)
}

/// The scheduler loop: a cleanup every `cleanup_interval`; rate-limit budgets
/// that are full again are forgotten every minute.
pub async fn run(st: AppState, shutdown: CancellationToken) {
    // First runs one period after start: a restart loop must not turn into a cleanup loop.
    let every = |period| tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    let mut cleanup = every(st.cfg.cleanup_interval);
    let mut trim = every(Duration::from_secs(60));
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = cleanup.tick() => {
                let now = st.clock.now();
                if let Err(e) = st.db.write(move |tx| enqueue_cleanup(tx, now)).await {
                    tracing::error!(error = ?e, "could not enqueue the cleanup job");
                }
            }
            _ = trim.tick() => st.limits.forget_idle(),
        }
    }
}
