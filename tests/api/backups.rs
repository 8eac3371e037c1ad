//! Scheduled backups in `serve` (issue 21): `--backup-dir`, `--backup-every`, `--backup-keep`,
//! driven by the test clock.

use std::path::Path;
use std::time::Duration;

use merchant_admin::config::BackupSchedule;
use serde_json::json;

use crate::support::{spawn_app_with, wait_until};

fn schedule(dir: &Path, keep: usize) -> BackupSchedule {
    BackupSchedule {
        dir: dir.to_path_buf(),
        every: Duration::from_secs(6 * 3600),
        keep,
        poll: Duration::from_millis(20),
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

async fn wait_for_files(dir: &Path, want: &[&str]) {
    wait_until(&format!("backups {want:?}"), || async {
        names(dir) == want
    })
    .await;
}

#[tokio::test]
async fn backups_run_on_schedule_are_verified_and_only_ours_are_pruned() {
    let dir = tempfile::tempdir().unwrap();
    // A file of the operator's in the same directory, named almost like ours.
    std::fs::write(dir.path().join("merchant-admin-backup-mine.db"), b"keep me").unwrap();
    let d = dir.path().to_path_buf();
    let app = spawn_app_with(move |c| {
        c.backups = Some(schedule(&d, 2));
        c.metrics_addr = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    app.seed_owner("owner@example.com", "Backed Up").await;

    // None yet: the first is due at start (the test clock reads 2026-11-02 12:00 UTC).
    let first = "merchant-admin-backup-20261102T120000Z.db";
    wait_for_files(dir.path(), &[first, "merchant-admin-backup-mine.db"]).await;
    let c = rusqlite::Connection::open(dir.path().join(first)).unwrap();
    let check: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");

    app.clock.advance(chrono::Duration::hours(6));
    let second = "merchant-admin-backup-20261102T180000Z.db";
    wait_for_files(
        dir.path(),
        &[first, second, "merchant-admin-backup-mine.db"],
    )
    .await;
    app.clock.advance(chrono::Duration::hours(6));
    let third = "merchant-admin-backup-20261103T000000Z.db";
    // --backup-keep 2: the oldest of ours goes; the operator's file stays.
    wait_for_files(
        dir.path(),
        &[second, third, "merchant-admin-backup-mine.db"],
    )
    .await;
    app.get("/readyz").await.expect(200);
}

#[tokio::test]
async fn a_failing_backup_is_logged_counted_and_named_by_readyz() {
    let tmp = tempfile::tempdir().unwrap();
    // The backup directory cannot be made: a file is in the way.
    let blocked = tmp.path().join("not-a-dir");
    std::fs::write(&blocked, b"").unwrap();
    let b = blocked.clone();
    let app = spawn_app_with(move |c| {
        c.backups = Some(schedule(&b, 3));
        c.metrics_addr = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    wait_until("the readiness check names the failed backup", || async {
        app.get("/readyz").await.status == 503
    })
    .await;
    let r = app.get("/readyz").await;
    r.expect_error(503, "service_unavailable");
    assert_eq!(r.body["details"]["reasons"], json!(["last_backup_failed"]));
    assert!(
        !r.body.to_string().contains("not-a-dir"),
        "the error (and its paths) stay in the log: {}",
        r.body
    );
    let text = crate::metrics::scrape(&app).await;
    assert!(
        text.contains(r#"merchant_admin_backups_total{outcome="failed"} 1"#),
        "{text}"
    );

    // Fixed: the retry (within ten minutes) succeeds and readiness comes back.
    std::fs::remove_file(&blocked).unwrap();
    app.clock.advance(chrono::Duration::minutes(10));
    wait_until("ready again", || async {
        app.get("/readyz").await.status == 200
    })
    .await;
    assert_eq!(names(&blocked).len(), 1);
}

/// The schedule in a directory it shares: a copy stamped in the future (a clock that was
/// wrong) neither puts the next backup off nor pushes out the one just written; a symlink
/// named like ours, a `.partial` that is not ours and the symlink's target are left alone;
/// a leftover `.partial` of ours (a killed run) is cleared.
#[tokio::test]
async fn a_shared_backup_dir_keeps_strangers_and_future_stamps_and_clears_our_leftovers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("backups");
    std::fs::create_dir(&dir).unwrap();
    let future = "merchant-admin-backup-20991231T000000Z.db";
    std::fs::write(dir.join(future), b"from a wrong clock").unwrap();
    let outside = tmp.path().join("outside.db");
    std::fs::write(&outside, b"not a backup").unwrap();
    let link = "merchant-admin-backup-20200101T000000Z.db";
    std::os::unix::fs::symlink(&outside, dir.join(link)).unwrap();
    let leftover = "merchant-admin-backup-20261101T000000Z.db.partial";
    std::fs::write(dir.join(leftover), b"").unwrap();
    std::fs::write(dir.join("notes.partial"), b"mine").unwrap();

    let d = dir.clone();
    let app = spawn_app_with(move |c| c.backups = Some(schedule(&d, 1))).await;
    let first = "merchant-admin-backup-20261102T120000Z.db";
    wait_for_files(&dir, &[link, first, future, "notes.partial"]).await;
    app.clock.advance(chrono::Duration::hours(6));
    let second = "merchant-admin-backup-20261102T180000Z.db";
    // --backup-keep 1: the first goes, the newest stays; strangers stay.
    wait_for_files(&dir, &[link, second, future, "notes.partial"]).await;
    assert_eq!(std::fs::read(&outside).unwrap(), b"not a backup");
    assert_eq!(
        std::fs::read(dir.join(future)).unwrap(),
        b"from a wrong clock"
    );
    app.get("/readyz").await.expect(200);
}
