//! Scheduled backups in `serve` (issue 21): every `--backup-every` (by the server's clock), a
//! verified copy into `--backup-dir` named `merchant-admin-backup-<UTC time>.db`, then all but
//! the newest `--backup-keep` such files deleted.
//! Give each server a backup directory of its own: two schedules in one directory would
//! prune each other's copies.
//!
//! Invariants: only files whose whole name matches that pattern are ever deleted; a copy is
//! written under a `.partial` name (locked while written) and renamed once verified, so a crash never leaves a
//! half copy that looks finished; the copy runs on a blocking thread with the online backup
//! API in steps (writers are never held for more than one step); a failure is logged, counted
//! in the metrics and named by `/readyz` until a backup succeeds again.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;
use std::time::Duration;

use anyhow::Context;
use chrono::{DateTime, NaiveDateTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::config::BackupSchedule;
use crate::db::backup::{BackupOptions, BackupReport, backup_with, is_stale_partial};
use crate::state::AppState;
use crate::threads::run_blocking;

const PREFIX: &str = "merchant-admin-backup-";
const SUFFIX: &str = ".db";
const STAMP: &str = "%Y%m%dT%H%M%SZ";
/// After a failure, the next try comes this soon (or at the schedule, if sooner).
const RETRY_AFTER: Duration = Duration::from_secs(600);

/// The last scheduled backup's outcome, for `/readyz`.
#[derive(Debug, Default, Clone)]
pub struct BackupStatus {
    pub last_success: Option<DateTime<Utc>>,
    /// Set by a failure, cleared by the next success.
    pub last_error: Option<String>,
}

/// The schedule's loop: looks every `poll` whether a backup is due, until `stop`.
pub async fn run(st: AppState, stop: CancellationToken) {
    let Some(sched) = st.cfg.backups.clone() else {
        return;
    };
    let every = chrono::Duration::from_std(sched.every).unwrap_or(chrono::Duration::hours(6));
    // A restart does not back up again before the schedule says so. A backup stamped in the
    // future (the clock was wrong, or was set back) does not put the next one off.
    let now = st.clock.now();
    let newest = {
        let dir = sched.dir.clone();
        run_blocking(move || newest(&dir, now)).await
    };
    let mut due = newest.map_or(now, |t| t + every);
    let mut tick = tokio::time::interval(sched.poll);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = stop.cancelled() => return,
        }
        let now = st.clock.now();
        if now < due {
            continue;
        }
        let (data_dir, s, halt) = (st.cfg.data_dir.clone(), sched.clone(), stop.clone());
        let ran = run_blocking(move || back_up(&data_dir, &s, now, &halt)).await;
        if stop.is_cancelled() {
            // Shutting down: a copy cut short is no failure to report.
            return;
        }
        let status = &st.backup_status;
        match ran {
            Ok(r) => {
                tracing::info!(path = %r.path.display(), bytes = r.bytes, pages = r.pages,
                    seconds = r.duration.as_secs_f64(), "scheduled backup written");
                st.metrics
                    .counter("backups_total", &[("outcome", "ok")])
                    .increment(1);
                st.metrics
                    .gauge("backup_last_success_timestamp_seconds", &[])
                    .set(now.timestamp() as f64);
                let mut s = status.lock().unwrap_or_else(PoisonError::into_inner);
                *s = BackupStatus {
                    last_success: Some(now),
                    last_error: None,
                };
                due = now + every;
            }
            Err(e) => {
                tracing::error!(error = format!("{e:#}"), "scheduled backup failed");
                st.metrics
                    .counter("backups_total", &[("outcome", "failed")])
                    .increment(1);
                status
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .last_error = Some(format!("{e:#}"));
                let retry = chrono::Duration::from_std(RETRY_AFTER).unwrap_or(every);
                due = now + retry.min(every);
            }
        }
    }
}

/// One scheduled backup at `now`, verified, then the pruning. A shutdown (`stop`) ends the
/// copy at its next step.
fn back_up(
    data_dir: &Path,
    s: &BackupSchedule,
    now: DateTime<Utc>,
    stop: &CancellationToken,
) -> anyhow::Result<BackupReport> {
    crate::db::create_data_dir(&s.dir)
        .with_context(|| format!("creating the backup directory {}", s.dir.display()))?;
    let done = s.dir.join(format!("{PREFIX}{}{SUFFIX}", now.format(STAMP)));
    let opts = BackupOptions {
        verify: true,
        ..BackupOptions::default()
    };
    let r = backup_with(data_dir, &done, opts, &mut |_| {
        if stop.is_cancelled() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    prune(&s.dir, s.keep, now)?;
    Ok(r)
}

/// When a file name is one this feature wrote, its time.
fn stamp_of(name: &str) -> Option<DateTime<Utc>> {
    let stamp = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    NaiveDateTime::parse_from_str(stamp, STAMP)
        .ok()
        .map(|t| t.and_utc())
}

/// Our backups in `dir` stamped no later than `now`, oldest first (none when it cannot be
/// read). One stamped in the future (a clock that was wrong) is neither counted nor pruned:
/// it would pass for the newest and push out the copy just written.
fn ours(dir: &Path, now: DateTime<Utc>) -> Vec<(DateTime<Utc>, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<_> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| Some((stamp_of(e.file_name().to_str()?)?, e.path())))
        .filter(|(t, _)| *t <= now)
        .collect();
    found.sort();
    found
}

fn newest(dir: &Path, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    ours(dir, now).last().map(|(t, _)| *t)
}

/// Deletes all but the newest `keep` of our backups, and leftover partial copies.
fn prune(dir: &Path, keep: usize, now: DateTime<Utc>) -> anyhow::Result<()> {
    let found = ours(dir, now);
    let extra = found.len().saturating_sub(keep);
    for (_, path) in &found[..extra] {
        std::fs::remove_file(path).with_context(|| format!("pruning {}", path.display()))?;
    }
    for e in std::fs::read_dir(dir)?.filter_map(Result::ok) {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        // A copy a killed process left; never one a live backup is writing.
        if name
            .strip_suffix(".partial")
            .is_some_and(|n| stamp_of(n).is_some())
            && is_stale_partial(&e.path())
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_our_exact_names_count() {
        assert!(super::stamp_of("merchant-admin-backup-20261102T120000Z.db").is_some());
        for other in [
            "merchant-admin.db",
            "merchant-admin-backup-20261102T120000Z.db.partial",
            "merchant-admin-backup-latest.db",
            "x-merchant-admin-backup-20261102T120000Z.db",
            "merchant-admin-backup-20261102T120000Z.dbx",
        ] {
            assert!(super::stamp_of(other).is_none(), "{other}");
        }
    }
}
