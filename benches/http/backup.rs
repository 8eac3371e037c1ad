//! Backups under load (issue 21): a 1 GiB database is backed up by `merchant-admin backup`
//! (the same `db::backup::backup_with` the scheduled backups run) while a steady stream of
//! HTTP writes runs against the server; the writers' latency is measured without a backup
//! and during backups (three in a row, so a window holds as many writes as a 15 s one).
//!
//! The gigabyte is ballast: rows of 2,000 random bytes in a table of the benchmark's own
//! (`bench_ballast`), written straight into the file after `migrate` and before `serve`
//! starts. The online backup API copies pages whatever they hold, so what matters is the
//! file's size; writing a gigabyte of real orders through the API would take most of an
//! hour. The writes measured are real: `POST /v1/stores/{id}/customers` with a store token
//! (a row, its audit entry and its event, one transaction), at a fixed rate, each latency
//! taken from the moment the request was due (a late start counts against it).

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The database's size before the backup.
const TARGET_BYTES: u64 = 1 << 30;
/// Bytes of each ballast row (two rows to a 4 KiB page).
const ROW_BYTES: u64 = 2_000;
/// The steady write load: this many requests a second, spread over `WRITERS` connections.
const RATE: u64 = 400;
const WRITERS: u64 = 16;

fn pct(sorted: &[Duration], p: f64) -> f64 {
    super::pct(sorted, p)
}

/// Migrates a fresh data directory and fills it to [`TARGET_BYTES`] with ballast.
fn seed(dir: &Path) {
    let bin =
        std::env::var("MERCHANT_ADMIN_BENCH_SERVER").unwrap_or_else(|_| super::BIN.to_owned());
    let out = Command::new(&bin)
        .arg("migrate")
        .arg("--data-dir")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "migrate: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let started = Instant::now();
    let c = rusqlite::Connection::open(dir.join("merchant-admin.db")).unwrap();
    c.execute_batch("CREATE TABLE bench_ballast (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        .unwrap();
    let rows = TARGET_BYTES / (4096 / 2);
    let batch = 50_000;
    let mut done = 0;
    while done < rows {
        let n = batch.min(rows - done);
        c.execute_batch(&format!(
            "BEGIN;
             WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < {n})
             INSERT INTO bench_ballast (body) SELECT randomblob({ROW_BYTES}) FROM k;
             COMMIT;"
        ))
        .unwrap();
        done += n;
    }
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let bytes = std::fs::metadata(dir.join("merchant-admin.db"))
        .unwrap()
        .len();
    #[expect(clippy::cast_precision_loss, reason = "a size")]
    let mib = bytes as f64 / 1_048_576.0;
    println!(
        "backup: seeded {mib:.0} MiB ({rows} ballast rows) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Sends `RATE` writes a second until `stop`; each latency is measured from when the request
/// was due. Returns (due time, latency) pairs and the error count.
async fn write_load(
    client: reqwest::Client,
    url: Arc<String>,
    token: Arc<String>,
    stop: Arc<AtomicBool>,
) -> (Vec<(Instant, Duration)>, usize) {
    let period = Duration::from_micros(1_000_000 * WRITERS / RATE);
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (client, url, token, stop) = (client.clone(), url.clone(), token.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            // Writers start staggered, so the requests are spread evenly over each period.
            let offset = period.mul_f64(w as f64 / WRITERS as f64);
            let mut tick = tokio::time::interval_at((Instant::now() + offset).into(), period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            let (mut lat, mut errors, mut n) = (Vec::new(), 0usize, 0u64);
            while !stop.load(Ordering::Relaxed) {
                let due: Instant = tick.tick().await.into();
                n += 1;
                let r = client
                    .post(url.as_str())
                    .bearer_auth(token.as_str())
                    .json(&json!({"name": format!("Writer {w} #{n}")}))
                    .send()
                    .await;
                let ok = match r {
                    Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                    Err(_) => false,
                };
                if ok {
                    lat.push((due, due.elapsed()));
                } else {
                    errors += 1;
                }
            }
            (lat, errors)
        }));
    }
    let (mut all, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (l, e) = t.await.unwrap();
        all.extend(l);
        errors += e;
    }
    (all, errors)
}

fn summary(label: &str, mut lat: Vec<Duration>, errors: usize) {
    lat.sort_unstable();
    println!(
        "backup: writers {label:<26} {:>6} writes  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>7.2} ms  errors {errors}",
        lat.len(),
        pct(&lat, 0.50),
        pct(&lat, 0.99),
        pct(&lat, 1.0),
    );
}

/// The write load alone for `seconds`; the latencies measured and the errors.
async fn without_backup(
    client: &reqwest::Client,
    url: &Arc<String>,
    token: &Arc<String>,
    seconds: u64,
) -> (Vec<Duration>, usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn(write_load(
        client.clone(),
        url.clone(),
        token.clone(),
        stop.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let from = Instant::now();
    let load_avg = super::load_average();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let to = Instant::now();
    stop.store(true, Ordering::Relaxed);
    let (lat, errors) = load.await.unwrap();
    let lat: Vec<Duration> = lat
        .into_iter()
        .filter(|(due, _)| *due >= from && *due < to)
        .map(|(_, l)| l)
        .collect();
    summary(
        &format!("without a backup (load {load_avg})"),
        lat.clone(),
        errors,
    );
    (lat, errors)
}

/// Backups in each window: one backup's writes (some 1,800) leave a single stall of the
/// shared host to decide their p99, so the window holds several, one after another.
const ROUNDS: usize = 3;

/// [`ROUNDS`] backups, one after another with a second between, while the write load runs;
/// the writes due while one ran are measured together.
async fn with_backup(
    client: &reqwest::Client,
    url: &Arc<String>,
    token: &Arc<String>,
    dir: &Path,
    verify: bool,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let load = tokio::spawn(write_load(
        client.clone(),
        url.clone(),
        token.clone(),
        stop.clone(),
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let what = if verify { "backup --verify" } else { "backup" };
    let mut windows = Vec::new();
    for round in 0..ROUNDS {
        let dest = dir.join(format!("copy-{verify}-{round}.db"));
        let load_avg = super::load_average();
        let bin =
            std::env::var("MERCHANT_ADMIN_BENCH_SERVER").unwrap_or_else(|_| super::BIN.to_owned());
        let mut cmd = Command::new(bin);
        cmd.arg("backup").arg(&dest).arg("--data-dir").arg(dir);
        if verify {
            cmd.arg("--verify");
        }
        let from = Instant::now();
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        let to = Instant::now();
        windows.push((from, to));
        assert!(
            out.status.success(),
            "backup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let s: Value = serde_json::from_slice(&out.stdout).unwrap();
        let secs = s["seconds"].as_f64().unwrap();
        #[expect(clippy::cast_precision_loss, reason = "a size")]
        let mib = s["bytes"].as_u64().unwrap() as f64 / 1_048_576.0;
        println!(
            "backup: {what} {}/{ROUNDS}: {mib:.0} MiB in {secs:.2} s, {:.0} MiB/s (process {:.2} s; load {load_avg})",
            round + 1,
            mib / secs,
            (to - from).as_secs_f64(),
        );
        let _ = std::fs::remove_file(&dest);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let (lat, errors) = load.await.unwrap();
    let lat = lat
        .into_iter()
        .filter(|(due, _)| windows.iter().any(|(from, to)| due >= from && due < to))
        .map(|(_, l)| l)
        .collect();
    summary(&format!("during {what}"), lat, errors);
}

pub async fn run(client: &reqwest::Client, seconds: u64) {
    // MERCHANT_ADMIN_BENCH_DIR: where the gigabyte goes (default: the temporary directory).
    let dir = match std::env::var_os("MERCHANT_ADMIN_BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .unwrap();
    seed(dir.path());
    let (_model, model_base) = super::assistant::bind();
    let (_server, base) = super::start_server(dir.path(), &model_base);
    let token = super::sign_in(client, &base).await;
    let (store_id, store_token) = super::store_token(client, &base, &token, "Backup").await;
    let url = Arc::new(format!("{base}/v1/stores/{store_id}/customers"));
    let token = Arc::new(store_token);
    println!("backup: steady load of {RATE} writes/s over {WRITERS} connections");
    let (mut without, mut errors) = without_backup(client, &url, &token, seconds).await;
    with_backup(client, &url, &token, dir.path(), false).await;
    with_backup(client, &url, &token, dir.path(), true).await;
    let (after, more) = without_backup(client, &url, &token, seconds).await;
    without.extend(after);
    errors += more;
    // The baseline the target compares with: both windows without a backup, one before the
    // backups and one after, so a stall of the host in either weighs as in the backups' own.
    summary("without a backup, both", without, errors);
}
