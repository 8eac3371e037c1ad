//! Idempotency keys (spec 8, issue 2 §4).

use chrono::Duration;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::json;

use crate::support::{spawn_app, spawn_app_with, wait_until};

#[tokio::test]
async fn a_replay_returns_the_first_response_and_runs_nothing() {
    let app = spawn_app().await;
    let body = json!({"name": "order", "count": 2});
    let first = app.post_idem("/v1/test/echo", "key-1", &body).await;
    first.expect(201);
    assert!(first.header("idempotent-replayed").is_none());

    let again = app.post_idem("/v1/test/echo", "key-1", &body).await;
    again.expect(201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.text, first.text, "same body");
    assert_eq!(
        again.header("x-probe"),
        Some("echo"),
        "stored headers come back"
    );
    assert_eq!(again.header("content-type"), first.header("content-type"));
    assert_ne!(again.header("x-trace-id"), first.header("x-trace-id"));
    assert_eq!(app.calls(), 1, "the handler ran once");

    // The unversioned path is the same endpoint, so the same key replays there too.
    let old = app
        .send(
            app.client
                .post(app.url("/test/echo"))
                .header("idempotency-key", "key-1")
                .json(&body),
        )
        .await;
    assert_eq!(
        old.header("idempotent-replayed"),
        Some("true"),
        "{}",
        old.text
    );
    assert_eq!(app.calls(), 1);

    // Without a key every POST runs.
    app.post_json("/v1/test/echo", &body).await.expect(201);
    app.post_json("/v1/test/echo", &body).await.expect(201);
    assert_eq!(app.calls(), 3);
}

#[tokio::test]
async fn client_errors_are_stored_too() {
    let app = spawn_app().await;
    let bad = json!({"name": "x"});
    let first = app.post_idem("/v1/test/echo", "k", &bad).await;
    first.expect_error(422, "validation_failed");
    let again = app.post_idem("/v1/test/echo", "k", &bad).await;
    again.expect_error(422, "validation_failed");
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
}

#[tokio::test]
async fn the_same_key_with_another_request_is_refused() {
    let app = spawn_app().await;
    app.post_idem("/v1/test/echo", "k", &json!({"name": "a", "count": 1}))
        .await
        .expect(201);
    let other_body = app
        .post_idem("/v1/test/echo", "k", &json!({"name": "b", "count": 1}))
        .await;
    other_body.expect_error(422, "idempotency_key_reused");
    let other_path = app
        .post_idem("/v1/test/slow", "k", &json!({"name": "a", "count": 1}))
        .await;
    other_path.expect_error(422, "idempotency_key_reused");
    assert_eq!(app.calls(), 1);
}

#[tokio::test]
async fn concurrent_requests_with_one_key_run_once() {
    let app = spawn_app().await;
    let body = json!({"name": "race", "count": 1});
    let gate = app.hold_slow();
    let mut sends: FuturesUnordered<_> = (0..8)
        .map(|_| app.post_idem("/v1/test/slow", "race-key", &body))
        .collect();
    // The first request is held in its handler until seven answers are in.
    let mut replies = Vec::new();
    while replies.len() < 7 {
        let next = tokio::time::timeout(std::time::Duration::from_secs(20), sends.next());
        replies.push(
            next.await
                .expect("seven answers while the first runs")
                .unwrap(),
        );
    }
    // Enough permits that a second run, were there one, would finish and be counted.
    gate.add_permits(8);
    while let Some(r) = sends.next().await {
        replies.push(r);
    }
    let created = replies.iter().filter(|r| r.status == 201).count();
    let in_progress = replies
        .iter()
        .filter(|r| r.status == 409 && r.body["code"] == "idempotency_request_in_progress")
        .count();
    assert_eq!(created, 1, "{replies:#?}");
    assert_eq!(in_progress, 7, "{replies:#?}");
    assert_eq!(app.calls(), 1);

    // Once the first finished, the key replays.
    let after = app.post_idem("/v1/test/slow", "race-key", &body).await;
    after.expect(201);
    assert_eq!(after.header("idempotent-replayed"), Some("true"));
    assert_eq!(app.calls(), 1);
}

#[tokio::test]
async fn server_errors_are_not_stored() {
    let app = spawn_app().await;
    let first = app.post_idem("/v1/test/fail", "k5", &json!({})).await;
    first.expect_error(500, "internal_error");
    let again = app.post_idem("/v1/test/fail", "k5", &json!({})).await;
    again.expect_error(500, "internal_error");
    assert!(again.header("idempotent-replayed").is_none());
    assert_eq!(app.calls(), 2, "a 5xx is retried for real");

    let p1 = app.post_idem("/v1/test/panic", "k6", &json!({})).await;
    p1.expect_error(500, "internal_error");
    let p2 = app.post_idem("/v1/test/panic", "k6", &json!({})).await;
    p2.expect_error(500, "internal_error");
    assert_eq!(app.calls(), 4);
}

#[tokio::test]
async fn keys_expire_after_24_hours() {
    let app = spawn_app().await;
    let body = json!({"name": "a", "count": 1});
    app.post_idem("/v1/test/echo", "day", &body)
        .await
        .expect(201);
    app.clock.advance(Duration::hours(23));
    let r = app.post_idem("/v1/test/echo", "day", &body).await;
    assert_eq!(r.header("idempotent-replayed"), Some("true"));
    app.clock.advance(Duration::hours(1) + Duration::seconds(1));
    let r = app.post_idem("/v1/test/echo", "day", &body).await;
    r.expect(201);
    assert!(r.header("idempotent-replayed").is_none());
    assert_eq!(app.calls(), 2);
}

#[tokio::test]
async fn long_keys_are_rejected_and_big_bodies_ignore_the_key() {
    let app = spawn_app().await;
    let body = json!({"name": "a", "count": 1});
    let r = app
        .post_idem("/v1/test/echo", &"k".repeat(256), &body)
        .await;
    r.expect_error(400, "bad_request");
    app.post_idem("/v1/test/echo", &"k".repeat(255), &body)
        .await
        .expect(201);
    assert_eq!(app.calls(), 1);

    // A body over 1 MB is not fingerprinted: the key is ignored and the endpoint's own
    // limit answers.
    let big = format!(r#"{{"name":"{}","count":1}}"#, "x".repeat(1024 * 1024 + 10));
    for _ in 0..2 {
        let r = app
            .send(
                app.client
                    .post(app.url("/v1/test/echo"))
                    .header("idempotency-key", "big")
                    .header("content-type", "application/json")
                    .body(big.clone()),
            )
            .await;
        r.expect_error(413, "payload_too_large");
        assert!(r.header("idempotent-replayed").is_none());
    }
    let stored: i64 = app
        .count("SELECT COUNT(*) FROM idempotency_keys WHERE key = 'big'")
        .await;
    assert_eq!(stored, 0);
}

#[tokio::test]
async fn anonymous_keys_are_scoped_to_the_client_address() {
    // Two callers behind a trusted proxy are two addresses: one's key never replays to the
    // other.
    let app = crate::support::spawn_app_with(|c| c.trust_proxy = true).await;
    let body = json!({"name": "a", "count": 1});
    let as_client = |ip: &str| {
        app.client
            .post(app.url("/v1/test/echo"))
            .header("idempotency-key", "shared")
            .header("x-forwarded-for", ip)
            .json(&body)
    };
    let a = app.send(as_client("203.0.113.7")).await;
    a.expect(201);
    let b = app.send(as_client("198.51.100.9")).await;
    b.expect(201);
    assert!(b.header("idempotent-replayed").is_none());
    assert_eq!(app.calls(), 2);
    let a2 = app.send(as_client("203.0.113.7")).await;
    assert_eq!(a2.header("idempotent-replayed"), Some("true"));
}

#[tokio::test]
async fn multipart_uploads_ignore_the_key() {
    let app = spawn_app().await;
    for _ in 0..2 {
        let r = app
            .send(
                app.client
                    .post(app.url("/v1/test/echo"))
                    .header("idempotency-key", "upload")
                    .header("content-type", "multipart/form-data; boundary=x")
                    .body(
                        "--x\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nhi\r\n--x--\r\n",
                    ),
            )
            .await;
        // The probe endpoint takes JSON only; what matters is that no replay happens.
        r.expect_error(400, "bad_request");
        assert!(r.header("idempotent-replayed").is_none());
    }
    let stored: i64 = app.count("SELECT COUNT(*) FROM idempotency_keys").await;
    assert_eq!(stored, 0);
}

#[tokio::test]
async fn a_client_that_disconnects_mid_request_gets_a_replay_on_retry() {
    // One connection at most: a second is served only once the server has closed the first.
    let app = spawn_app_with(|c| c.max_connections = 1).await;
    let body = json!({"name": "gone", "count": 1});
    let gate = app.hold_slow();
    let (client, url) = (app.client.clone(), app.url("/v1/test/slow"));
    let (key, sent) = ("walked-away", body.clone());
    let send = tokio::spawn(async move {
        client
            .post(url)
            .header("idempotency-key", key)
            .json(&sent)
            .send()
            .await
    });
    wait_until("the handler to start", || async { app.calls() == 1 }).await;
    // Give up on the request while the handler is held, and wait until the server has
    // dropped that connection (its one slot is free again).
    send.abort();
    app.get("/healthz").await.expect(200);
    gate.add_permits(8);
    // The handler finishes on its own and its response is stored.
    wait_until("the response to be stored", || async {
        let stored: Option<i64> = app
            .state
            .db
            .read(|c| {
                Ok(c.query_row(
                    "SELECT status FROM idempotency_keys WHERE key = 'walked-away'",
                    [],
                    |r| r.get(0),
                )?)
            })
            .await
            .unwrap();
        stored == Some(201)
    })
    .await;
    let retry = app.post_idem("/v1/test/slow", "walked-away", &body).await;
    retry.expect(201);
    assert_eq!(retry.header("idempotent-replayed"), Some("true"));
    assert_eq!(app.calls(), 1, "not run twice");
}

#[tokio::test]
async fn a_chunked_body_over_1_mb_passes_through_without_the_key() {
    let app = spawn_app().await;
    let chunk = vec![b' '; 256 * 1024];
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = (0..5).map(|_| Ok(chunk.clone())).collect();
    let r = app
        .send(
            app.client
                .post(app.url("/v1/test/echo"))
                .header("idempotency-key", "chunked")
                .header("content-type", "application/json")
                .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks))),
        )
        .await;
    // The endpoint's own 1 MiB limit answers; the idempotency layer kept out of the way.
    r.expect_error(413, "payload_too_large");
    let stored: i64 = app.count("SELECT COUNT(*) FROM idempotency_keys").await;
    assert_eq!(stored, 0);
}
