//! Metrics and readiness (issue 21, "Metrics and health"): `GET /metrics` on its own
//! listener, in the Prometheus text format, labelled by route template; `/readyz` turning
//! 503 when the job queue lags or the server is shutting down.

use std::time::Duration;

use merchant_admin::jobs::{self, Cleanup};
use serde_json::json;

use crate::support::{Receiver, Shop, TestApp, post, spawn_app, spawn_app_with, wait_until};

/// The server's `/metrics` text, checked to be Prometheus text.
pub async fn scrape(app: &TestApp) -> String {
    let addr = app.state.metrics_bound.get().expect("metrics are served");
    let r = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"),
        "the Prometheus text format"
    );
    r.text().await.unwrap()
}

/// The value of the series whose line starts with `series` (name and labels as printed).
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

async fn enqueue_cleanup(app: &TestApp) {
    let now = app.clock_now();
    app.state
        .db
        .write(move |tx| jobs::enqueue(tx, &Cleanup, now).map(|_| ()))
        .await
        .unwrap();
}

#[tokio::test]
async fn metrics_are_off_unless_an_address_is_given() {
    let app = spawn_app().await;
    assert!(app.state.metrics_bound.get().is_none());
    assert!(!app.state.metrics.enabled());
    // Not on the API's port either.
    app.get("/metrics")
        .await
        .expect_error(404, "route_not_found");
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_sample_the_queues() {
    let app = spawn_app_with(|c| {
        c.metrics_addr = Some("127.0.0.1:0".parse().unwrap());
        c.workers = 0;
    })
    .await;
    let shop = Shop::open(app, 5).await;
    let app = &shop.app;
    let rx = Receiver::start().await;
    app.call(
        post(),
        &shop.path("webhooks"),
        &shop.token,
        Some(json!({"url": rx.url, "events": ["orders.created"]})),
    )
    .await
    .expect(201);
    for _ in 0..3 {
        app.call(
            reqwest::Method::GET,
            &shop.path("products"),
            &shop.token,
            None,
        )
        .await
        .expect(200);
    }
    app.get(&format!("/v1/stores/{}/nope/123", shop.store))
        .await
        .expect_error(404, "route_not_found");
    let odd = reqwest::Method::from_bytes(b"BREW").unwrap();
    let r = app
        .client
        .request(odd, app.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    shop.order(1).await;
    rx.wait_for(1).await;
    enqueue_cleanup(app).await;
    app.clock.advance(chrono::Duration::seconds(90));

    // The attempt is counted once the receiver's answer is back.
    let delivered = r#"merchant_admin_webhook_attempts_total{outcome="delivered"}"#;
    wait_until("the webhook attempt is counted", || async {
        value(&scrape(app).await, delivered) == Some(1.0)
    })
    .await;
    let text = scrape(app).await;

    let products = r#"route="/v1/stores/{store_id}/products""#;
    assert_eq!(
        value(
            &text,
            &format!(
                r#"merchant_admin_http_requests_total{{method="GET",{products},status="200"}}"#
            )
        ),
        Some(3.0),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            r#"merchant_admin_http_request_duration_seconds_bucket{{method="GET",{products},le="0.5"}}"#
        )),
        "a latency histogram with buckets: {text}"
    );
    assert_eq!(
        value(
            &text,
            r#"merchant_admin_http_requests_total{method="GET",route="unmatched",status="404"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            &text,
            r#"merchant_admin_http_requests_total{method="other",route="/healthz",status="405"}"#
        ),
        Some(1.0),
        "a made-up method is one series, not a label of its own: {text}"
    );
    assert!(!text.contains("BREW"));
    assert!(
        !text.contains(&shop.store),
        "no raw path (nor any id) becomes a label"
    );

    // The queue, sampled at scrape through the read pool.
    let cleanup = r#"{kind="cleanup",queue="default"}"#;
    assert_eq!(
        value(&text, &format!("merchant_admin_jobs_queued{cleanup}")),
        Some(1.0)
    );
    assert_eq!(
        value(&text, &format!("merchant_admin_jobs_running{cleanup}")),
        Some(0.0)
    );
    assert_eq!(
        value(
            &text,
            &format!("merchant_admin_jobs_oldest_due_seconds{cleanup}")
        ),
        Some(90.0)
    );
    // Depths are whatever is queued at that moment (the webhook dispatcher polls too).
    for series in [
        r#"merchant_admin_db_queue_depth{pool="read"}"#,
        r#"merchant_admin_db_queue_depth{pool="write"}"#,
    ] {
        assert!(value(&text, series).is_some(), "{series}: {text}");
    }
    // The checkpointer is alive: the writer has not had to checkpoint in its stead.
    assert_eq!(
        value(&text, "merchant_admin_db_writer_checkpoints_total"),
        Some(0.0),
        "{text}"
    );
    for series in [
        r#"merchant_admin_open_sockets{kind="agent"}"#,
        r#"merchant_admin_open_sockets{kind="widget"}"#,
    ] {
        assert_eq!(value(&text, series), Some(0.0), "{series}: {text}");
    }
    for series in [
        r#"merchant_admin_db_wait_seconds_count{pool="read"}"#,
        r#"merchant_admin_db_wait_seconds_count{pool="write"}"#,
        "merchant_admin_db_write_batch_size_count",
        "merchant_admin_process_resident_memory_bytes",
    ] {
        assert!(
            value(&text, series).unwrap_or(0.0) > 0.0,
            "{series}: {text}"
        );
    }

    // Run the job: its kind reads zero rather than keeping its last value.
    assert!(app.drain_jobs().await >= 1);
    let text = scrape(app).await;
    assert_eq!(
        value(&text, &format!("merchant_admin_jobs_queued{cleanup}")),
        Some(0.0)
    );
    assert_eq!(
        value(
            &text,
            &format!("merchant_admin_jobs_oldest_due_seconds{cleanup}")
        ),
        Some(0.0)
    );
}

#[tokio::test]
async fn readyz_turns_503_when_the_oldest_due_job_waits_too_long() {
    let app = spawn_app_with(|c| {
        c.workers = 0;
        c.ready_max_job_lag = Duration::from_secs(60);
    })
    .await;
    enqueue_cleanup(&app).await;
    app.clock.advance(chrono::Duration::seconds(59));
    app.get("/readyz").await.expect(200);

    app.clock.advance(chrono::Duration::seconds(2));
    let r = app.get("/readyz").await;
    r.expect_error(503, "service_unavailable");
    assert_eq!(r.body["details"]["reasons"], json!(["job_queue_lagging"]));
    assert_eq!(r.body["details"]["oldest_due_job_secs"], 61);
    assert_eq!(r.body["details"]["max_job_lag_secs"], 60);

    // Once the workers catch up, ready again, in the shape it always had.
    assert_eq!(app.drain_jobs().await, 1);
    let r = app.get("/readyz").await;
    r.expect(200);
    assert_eq!(r.body["status"], "ready");
}

#[tokio::test]
async fn readyz_turns_503_once_shutdown_begins() {
    let app = spawn_app().await;
    app.get("/readyz").await.expect(200);
    // What the shutdown signal sets before the listener stops accepting; a request already
    // on a connection (a load balancer's probe) sees it.
    app.state
        .shutting_down
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let r = app.get("/readyz").await;
    r.expect_error(503, "service_unavailable");
    assert_eq!(r.body["details"]["reasons"], json!(["shutting_down"]));
}
