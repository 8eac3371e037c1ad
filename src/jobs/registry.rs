//! What the generic workers can run: each job kind's handler, and the cleanups the periodic
//! [`Cleanup`] job runs. Areas register theirs when the application starts (`state.rs`), so
//! the queue itself names no area.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::db::Tx;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{JobKind, StoredJob};
use crate::config::Config;
use crate::error::AppError;
use crate::state::AppState;
use crate::time;

type Handler = Arc<
    dyn Fn(AppState, StoredJob) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>
        + Send
        + Sync,
>;

/// Deletes what can never matter again; returns the rows removed.
type Purge = fn(&Tx<'_>, DateTime<Utc>, &Config) -> Result<usize, AppError>;

/// Deletes what can never matter again: every registered purge, then old finished jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cleanup;

impl JobKind for Cleanup {
    const KIND: &'static str = "cleanup";

    fn max_attempts(&self) -> u32 {
        3
    }
}

/// How long finished jobs are kept for inspection.
const KEEP_DONE: chrono::Duration = chrono::Duration::days(1);
const KEEP_DEAD: chrono::Duration = chrono::Duration::days(30);

/// The handlers of every job kind the generic workers run, and the purges of [`Cleanup`].
#[derive(Default, Clone)]
pub struct Registry {
    handlers: HashMap<&'static str, Handler>,
    purges: Vec<(&'static str, Purge)>,
    recurring: Vec<(&'static str, Ensure)>,
}

/// Enqueues a recurring job unless one is waiting or running (a daily run that enqueues its
/// next run itself).
type Ensure = fn(&Tx<'_>, DateTime<Utc>) -> Result<(), AppError>;

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("kinds", &self.handlers.keys().collect::<Vec<_>>())
            .field(
                "purges",
                &self.purges.iter().map(|p| p.0).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Registry {
    /// A registry that runs [`Cleanup`] (with no purges yet).
    pub fn new() -> Self {
        let mut r = Self::default();
        r.handle::<Cleanup, _, _>(|st, Cleanup| async move { run_cleanup(&st).await });
        r
    }

    /// Runs jobs of kind `J` with `handler`.
    pub fn handle<J, F, Fut>(&mut self, handler: F)
    where
        J: JobKind + Send + 'static,
        F: Fn(AppState, J) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        self.handlers.insert(
            J::KIND,
            Arc::new(move |st, stored: StoredJob| {
                let handler = handler.clone();
                Box::pin(async move {
                    let job: J = serde_json::from_value(stored.data)
                        .map_err(|e| anyhow::anyhow!("unreadable {} job: {e}", J::KIND))?;
                    handler(st, job).await
                })
            }),
        );
    }

    /// Adds a purge to every [`Cleanup`], named for its log line.
    pub fn purge(&mut self, name: &'static str, purge: Purge) {
        self.purges.push((name, purge));
    }

    /// Adds a recurring job the scheduler keeps enqueued (named for its log line).
    pub fn recurring(&mut self, name: &'static str, ensure: Ensure) {
        self.recurring.push((name, ensure));
    }

    /// Enqueues every [`Registry::recurring`] job that is not waiting or running.
    pub fn keep_scheduled(&self, tx: &Tx<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
        for (name, ensure) in &self.recurring {
            ensure(tx, now).map_err(|e| {
                tracing::error!(error = ?e, job = name, "could not enqueue a recurring job");
                e
            })?;
        }
        Ok(())
    }

    /// Runs one job with its kind's handler.
    pub async fn run(&self, st: AppState, job: StoredJob) -> anyhow::Result<()> {
        let Some(handler) = self.handlers.get(job.kind.as_str()) else {
            anyhow::bail!("no handler for jobs of kind {:?}", job.kind);
        };
        handler(st, job).await
    }
}

async fn run_cleanup(st: &AppState) -> anyhow::Result<()> {
    let (now, cfg) = (st.clock.now(), st.cfg.clone());
    // One write per purge: the writer keeps a write's savepoint journal in memory, so a
    // purge's old pages are held only while that purge runs.
    let mut rows = 0;
    for &(_, purge) in &st.jobs.purges {
        let cfg = cfg.clone();
        rows += st.db.write(move |tx| purge(tx, now, &cfg)).await?;
    }
    let done = st
        .db
        .write(move |tx| {
            Ok(crate::db::exec(
                tx,
                "DELETE FROM jobs WHERE (state = 'done' AND updated_at <= ?1)
                                     OR (state = 'dead' AND updated_at <= ?2)",
                [time::format(now - KEEP_DONE), time::format(now - KEEP_DEAD)],
            )?)
        })
        .await?;
    tracing::info!(rows, jobs = done, "cleanup done");
    Ok(())
}
