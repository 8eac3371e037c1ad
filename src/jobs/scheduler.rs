//! Periodic work. The scheduler only enqueues (a cleanup is then run by whichever worker
//! claims it); the in-memory rate-limit table is trimmed inline.

use std::time::Duration;

use crate::db::Tx;
use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use super::Cleanup;
use crate::error::AppError;
use crate::state::AppState;

/// Enqueues a cleanup unless one is already waiting or running.
pub fn enqueue_cleanup(tx: &Tx<'_>, now: DateTime<Utc>) -> Result<bool, AppError> {
    super::enqueue_once(tx, &Cleanup, now, now, true)
}

/// The scheduler loop: a cleanup every `cleanup_interval`; rate-limit budgets
/// that are full again are forgotten every minute; every hour, the recurring jobs that
/// reschedule themselves (the daily billing run) are enqueued if none is waiting, so a
/// first start, or a run that died, is picked up within the hour.
pub async fn run(st: AppState, shutdown: CancellationToken) {
    // First runs one period after start: a restart loop must not turn into a cleanup loop.
    let every = |period| tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    let mut cleanup = every(st.cfg.cleanup_interval);
    let mut trim = every(Duration::from_secs(60));
    let mut hourly = every(Duration::from_secs(3600));
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
            _ = hourly.tick() => {
                let (jobs, now) = (st.jobs.clone(), st.clock.now());
                if let Err(e) = st.db.write(move |tx| jobs.keep_scheduled(tx, now)).await {
                    tracing::error!(error = ?e, "could not enqueue the recurring jobs");
                }
            }
        }
    }
}
