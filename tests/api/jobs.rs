//! The durable job queue (issue 2 §5), driven with a clock the test controls.

use std::time::Duration as StdDuration;

use chrono::Duration;
use merchant_admin::error::AppError;
use merchant_admin::jobs::worker::{self, Outcome};
use merchant_admin::jobs::{self, Cleanup, JobKind, StoredJob};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{TestApp, spawn_app_with};

async fn quiet_app() -> TestApp {
    spawn_app_with(|c| c.workers = 0).await
}

#[derive(Debug)]
struct JobRow {
    state: String,
    attempts: i64,
    last_error: Option<String>,
    run_at: String,
}

async fn job_rows(app: &TestApp) -> Vec<JobRow> {
    app.state
        .db
        .read(|c| {
            let mut s = c.prepare(
                "SELECT state, attempts, last_error, run_at FROM jobs ORDER BY created_at",
            )?;
            let rows = s
                .query_map([], |r| {
                    Ok(JobRow {
                        state: r.get(0)?,
                        attempts: r.get(1)?,
                        last_error: r.get(2)?,
                        run_at: r.get(3)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
        .await
        .unwrap()
}

async fn enqueue(app: &TestApp, job: Cleanup) {
    let now = app.clock_now();
    app.state
        .db
        .write(move |tx| jobs::enqueue(tx, &job, now).map(|_| ()))
        .await
        .unwrap();
}

/// What a worker does first: claim the next due job at the test clock's time.
async fn claim(app: &TestApp) -> Option<worker::Claimed> {
    let (now, lease) = (app.clock_now(), app.state.cfg.job_lease);
    app.state
        .db
        .write(move |tx| worker::claim(tx, now, lease))
        .await
        .unwrap()
}

async fn failing(_: merchant_admin::AppState, _: StoredJob) -> anyhow::Result<()> {
    anyhow::bail!("receiver said no")
}

async fn run_failing(app: &TestApp) -> Outcome {
    worker::run_once_with(&app.state, &CancellationToken::new(), failing)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_job_commits_or_rolls_back_with_the_write_that_enqueued_it() {
    let app = quiet_app().await;
    let now = app.clock_now();
    let res: Result<(), AppError> = app
        .state
        .db
        .write(move |tx| {
            jobs::enqueue(tx, &Cleanup, now)?;
            Err(AppError::bad_request("the domain write failed"))
        })
        .await;
    assert!(res.is_err());
    assert!(
        job_rows(&app).await.is_empty(),
        "a rolled-back write leaves no job"
    );

    enqueue(&app, Cleanup).await;
    assert_eq!(job_rows(&app).await.len(), 1);
}

#[tokio::test]
async fn failed_attempts_back_off_then_the_job_is_dead_with_its_error() {
    let app = quiet_app().await;
    enqueue(&app, Cleanup).await;
    let max = Cleanup.max_attempts();

    let mut previous_run_at = String::new();
    for attempt in 1..=max {
        assert_eq!(run_failing(&app).await, Outcome::Ran, "attempt {attempt}");
        let row = &job_rows(&app).await[0];
        assert_eq!(row.attempts, i64::from(attempt));
        assert_eq!(row.last_error.as_deref(), Some("receiver said no"));
        if attempt < max {
            assert_eq!(row.state, "queued");
            assert!(row.run_at > previous_run_at);
            previous_run_at.clone_from(&row.run_at);
            // Not due yet: nothing runs until the backoff has passed.
            assert_eq!(run_failing(&app).await, Outcome::Empty);
            let base = 10 * 2_i64.pow(attempt - 1);
            app.clock.advance(Duration::seconds(base - 1));
            assert_eq!(
                run_failing(&app).await,
                Outcome::Empty,
                "backoff is at least {base}s"
            );
            app.clock.advance(Duration::seconds(base / 10 + 2)); // past the jitter
        } else {
            assert_eq!(row.state, "dead");
        }
    }
    app.clock.advance(Duration::hours(2));
    assert_eq!(
        run_failing(&app).await,
        Outcome::Empty,
        "dead jobs are not retried"
    );
}

#[tokio::test]
async fn a_job_whose_lease_runs_out_is_taken_again() {
    let app = quiet_app().await;
    enqueue(&app, Cleanup).await;
    let lease = app.state.cfg.job_lease;
    // A worker claims it and "dies" (never reports back).
    assert!(claim(&app).await.is_some());
    assert_eq!(
        worker::run_once(&app.state).await.unwrap(),
        Outcome::Empty,
        "leased"
    );

    app.clock
        .advance(Duration::from_std(lease).unwrap() + Duration::seconds(1));
    assert_eq!(worker::run_once(&app.state).await.unwrap(), Outcome::Ran);
    let row = &job_rows(&app).await[0];
    assert_eq!((row.state.as_str(), row.attempts), ("done", 2));
}

#[tokio::test]
async fn a_job_that_dies_on_its_last_attempt_is_dead() {
    let app = quiet_app().await;
    enqueue(&app, Cleanup).await;
    let lease = app.state.cfg.job_lease;
    for _ in 0..Cleanup.max_attempts() {
        let c = claim(&app).await;
        assert!(c.is_some());
        app.clock
            .advance(Duration::from_std(lease).unwrap() + Duration::seconds(1));
    }
    assert_eq!(worker::run_once(&app.state).await.unwrap(), Outcome::Empty);
    let row = &job_rows(&app).await[0];
    assert_eq!(row.state, "dead");
    assert!(row.last_error.as_deref().unwrap().contains("lease expired"));
}

#[tokio::test]
async fn cleanup_deletes_expired_idempotency_records() {
    let app = quiet_app().await;
    let body = json!({"name": "a", "count": 1});
    app.post_idem("/v1/test/echo", "old", &body)
        .await
        .expect(201);
    app.clock.advance(Duration::hours(25));
    app.post_idem("/v1/test/echo", "new", &body)
        .await
        .expect(201);

    enqueue(&app, Cleanup).await;
    assert_eq!(worker::run_once(&app.state).await.unwrap(), Outcome::Ran);
    let keys: Vec<String> = app
        .state
        .db
        .read(|c| {
            let mut s = c.prepare("SELECT key FROM idempotency_keys")?;
            Ok(s.query_map([], |r| r.get(0))?
                .collect::<Result<Vec<_>, _>>()?)
        })
        .await
        .unwrap();
    assert_eq!(keys, vec!["new".to_string()]);
    assert_eq!(job_rows(&app).await[0].state, "done");
}

#[tokio::test]
async fn running_workers_pick_up_a_new_job_when_it_commits() {
    let app = spawn_app_with(|c| c.workers = 2).await;
    enqueue(&app, Cleanup).await;
    // Wait (bounded) for a worker to finish it; this is not a timing assertion.
    for _ in 0..500 {
        if job_rows(&app)
            .await
            .first()
            .is_some_and(|r| r.state == "done")
        {
            return;
        }
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
    panic!("no worker ran the job: {:?}", job_rows(&app).await);
}

#[tokio::test]
async fn a_job_still_running_at_shutdown_is_released_without_using_an_attempt() {
    let app = spawn_app_with(|c| {
        c.workers = 0;
        c.shutdown_grace = StdDuration::from_millis(50);
    })
    .await;
    enqueue(&app, Cleanup).await;
    let shutdown = CancellationToken::new();
    shutdown.cancel(); // shutdown has begun; the job will not finish within the grace
    let stuck =
        |_: merchant_admin::AppState, _: StoredJob| std::future::pending::<anyhow::Result<()>>();
    let out = worker::run_once_with(&app.state, &shutdown, stuck)
        .await
        .unwrap();
    assert_eq!(out, Outcome::Ran);
    let row = &job_rows(&app).await[0];
    assert_eq!((row.state.as_str(), row.attempts), ("queued", 0), "{row:?}");
    // The next start takes it at once.
    assert_eq!(worker::run_once(&app.state).await.unwrap(), Outcome::Ran);
    assert_eq!(job_rows(&app).await[0].state, "done");
}

#[tokio::test]
async fn a_worker_whose_lease_was_taken_over_cannot_settle_the_job() {
    let app = quiet_app().await;
    enqueue(&app, Cleanup).await;
    let lease = app.state.cfg.job_lease;
    let first = claim(&app).await.unwrap();
    // The first worker stalls past its lease; a second one takes the job over.
    app.clock
        .advance(Duration::from_std(lease).unwrap() + Duration::seconds(1));
    let second = claim(&app).await.unwrap();
    assert_eq!((first.id, second.attempts), (second.id, 2));

    // The stale claim can no longer renew the lease; the live one can.
    let renew = |c: &worker::Claimed| {
        let (claim, now) = ((c.id, c.attempts), app.clock_now());
        app.state
            .db
            .write(move |tx| worker::renew(tx, claim, now, lease))
    };
    assert!(!renew(&first).await.unwrap());
    assert!(
        renew(&second).await.unwrap(),
        "the live claim keeps its lease"
    );
    let row = &job_rows(&app).await[0];
    assert_eq!((row.state.as_str(), row.attempts), ("running", 2));
}

#[tokio::test]
async fn a_handler_knows_which_attempt_it_runs_and_whether_it_is_the_last() {
    let app = quiet_app().await;
    enqueue(&app, Cleanup).await;
    assert_eq!(jobs::attempt(), None, "no attempt outside a job handler");
    let max = Cleanup.max_attempts();
    for number in 1..=max {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
        let s = seen.clone();
        let out = worker::run_once_with(&app.state, &CancellationToken::new(), |_, _| async move {
            *s.lock().unwrap() = jobs::attempt();
            anyhow::bail!("receiver said no")
        })
        .await
        .unwrap();
        assert_eq!(out, Outcome::Ran);
        let attempt = seen.lock().unwrap().expect("the handler saw its attempt");
        assert_eq!(attempt, jobs::Attempt { number, max });
        assert_eq!(attempt.is_last(), number == max);
        app.clock.advance(Duration::hours(2));
    }
    assert_eq!(job_rows(&app).await[0].state, "dead");
}
