//! The one test harness: starts the real server on an ephemeral port with a temporary data
//! directory and a clock the test controls. Area files hold tests; what several of them share
//! lives here: the HTTP client (`client`), seeded accounts and stores (`fixtures`), a webhook
//! receiver (`receiver`), a stocked shop (`shop`), TOTP (`totp`), the messaging-app fake
//! (`msgapp`), the real binary (`process`), the probe routes (`probe`), a shopper on the
//! chat widget's routes (`inbox`), WebSocket clients (`ws`), a headless Chromium for the
//! widget itself (`browser`) and an SMTP receiver (`smtp`).

pub mod browser;
mod client;
mod fixtures;
mod inbox;
pub mod model;
pub mod msgapp;
mod probe;
pub mod process;
mod receiver;
mod shop;
pub mod smtp;
mod totp;
mod ws;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{TimeZone, Utc};
use merchant_admin::AppState;
use merchant_admin::clock::ManualClock;
use merchant_admin::config::Config;
use tempfile::TempDir;
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinHandle;

pub use client::{Reply, get, patch, post};
pub use fixtures::PASSWORD;
pub use inbox::Visitor;
pub use receiver::{Hit, Receiver, assert_signed};
pub use shop::Shop;
pub use totp::{rfc6238, verify_recovery};
pub use ws::Ws;

pub struct TestApp {
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    pub state: AppState,
    pub clock: Arc<ManualClock>,
    /// How many times the probe handlers ran (idempotency tests count executions).
    pub probe_calls: Arc<AtomicUsize>,
    slow_gate: probe::SlowGate,
    pub data_dir: TempDir,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<anyhow::Result<()>>>,
}

/// Polls `check` until it holds: a bounded wait for a condition, which fails the test
/// (rather than timing it) when the condition never comes.
pub async fn wait_until<F: std::future::Future<Output = bool>>(
    what: &str,
    mut check: impl FnMut() -> F,
) {
    for _ in 0..2000 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("gave up waiting for {what}");
}

pub fn test_config(data_dir: &std::path::Path) -> Config {
    let mut cfg = Config::new(data_dir.to_path_buf());
    cfg.workers = 1;
    cfg.shutdown_grace = Duration::from_secs(5);
    // Webhook receivers in tests listen on loopback; the SSRF test turns the guard back on.
    cfg.allow_private_webhook_targets = true;
    cfg.webhook_poll = Duration::from_millis(50);
    cfg
}

pub fn start_time() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 2, 12, 0, 0).unwrap()
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Starts the server after `tune` adjusts the configuration.
pub async fn spawn_app_with(tune: impl FnOnce(&mut Config)) -> TestApp {
    let data_dir = tempfile::tempdir().expect("temp dir");
    spawn_app_at(data_dir, start_time(), tune).await
}

/// Starts the server on an existing data directory (a restart), its clock at `now`.
pub async fn spawn_app_at(
    data_dir: TempDir,
    now: chrono::DateTime<Utc>,
    tune: impl FnOnce(&mut Config),
) -> TestApp {
    let mut cfg = test_config(data_dir.path());
    tune(&mut cfg);
    let clock = ManualClock::new(now);
    let shared = clock.clone();
    let state = tokio::task::spawn_blocking(move || AppState::open(cfg, shared))
        .await
        .unwrap()
        .expect("open state");
    let probe_calls = Arc::new(AtomicUsize::new(0));
    let slow_gate = probe::SlowGate::default();
    let probes = probe::probe_routes(probe_calls.clone(), slow_gate.clone());
    let routes = merchant_admin::routes(&state).merge(probes);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let server = tokio::spawn(merchant_admin::serve_routes(
        state.clone(),
        routes,
        listener,
        async {
            let _ = rx.await;
        },
    ));
    TestApp {
        addr,
        client: reqwest::Client::builder().no_proxy().build().unwrap(),
        state,
        clock,
        probe_calls,
        slow_gate,
        data_dir,
        shutdown: Some(tx),
        server: Some(server),
    }
}

impl TestApp {
    /// How many times the probe handlers ran.
    pub fn calls(&self) -> usize {
        self.probe_calls.load(Ordering::SeqCst)
    }

    /// Holds every `/v1/test/slow` request inside its handler (after it is counted) until
    /// the test adds permits, one per request let through.
    pub fn hold_slow(&self) -> Arc<Semaphore> {
        let g = Arc::new(Semaphore::new(0));
        *self.slow_gate.lock().unwrap() = Some(g.clone());
        g
    }

    /// Waits until no job is running and none is due at the test clock: the queues are
    /// drained, and what waits for a later time waits for the test to move the clock. The
    /// default queue counts only when workers run it (tests with none drain it themselves).
    pub async fn settled(&self) {
        let workers = i64::try_from(self.state.cfg.workers).unwrap();
        wait_until("the job queues to settle", || async {
            let now = merchant_admin::time::format(self.clock_now());
            let busy: i64 = self
                .state
                .db
                .read(move |c| {
                    Ok(c.query_row(
                        "SELECT COUNT(*) FROM jobs
                         WHERE (state = 'running' OR (state = 'queued' AND run_at <= ?1))
                           AND (queue = 'webhooks' OR ?2 > 0)",
                        rusqlite::params![now, workers],
                        |r| r.get(0),
                    )?)
                })
                .await
                .unwrap();
            busy == 0
        })
        .await;
    }

    /// Enqueues the periodic cleanup at the test clock's time and runs it.
    pub async fn run_cleanup(&self) {
        let now = self.clock_now();
        self.state
            .db
            .write(move |tx| merchant_admin::jobs::enqueue(tx, &merchant_admin::jobs::Cleanup, now))
            .await
            .unwrap();
        let ran = merchant_admin::jobs::run_once(&self.state).await.unwrap();
        assert_eq!(ran, merchant_admin::jobs::Outcome::Ran);
    }

    /// Runs the daily billing job at the test clock's time (for apps with no workers).
    pub async fn run_billing_day(&self) {
        use merchant_admin::billing::lifecycle::BillingDay;
        let now = self.clock_now();
        self.state
            .db
            .write(move |tx| merchant_admin::jobs::enqueue(tx, &BillingDay, now))
            .await
            .unwrap();
        let ran = merchant_admin::jobs::run_once(&self.state).await.unwrap();
        assert_eq!(ran, merchant_admin::jobs::Outcome::Ran);
    }

    /// Runs the default queue's due jobs one by one until none is due (for apps with no
    /// workers); how many ran.
    pub async fn drain_jobs(&self) -> usize {
        let mut ran = 0;
        while merchant_admin::jobs::run_once(&self.state).await.unwrap()
            == merchant_admin::jobs::Outcome::Ran
        {
            ran += 1;
            assert!(ran < 10_000, "the queue never ran dry");
        }
        ran
    }

    pub fn clock_now(&self) -> chrono::DateTime<Utc> {
        use merchant_admin::clock::Clock;
        self.clock.now()
    }

    /// Stops the server the way SIGTERM does and waits for it; hands back the data
    /// directory so the test can look at what was left.
    pub async fn stop(mut self) -> (anyhow::Result<()>, TempDir) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let res = self
            .server
            .take()
            .unwrap()
            .await
            .expect("server task panicked");
        let dir = std::mem::replace(&mut self.data_dir, tempfile::tempdir().unwrap());
        (res, dir)
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}
