//! Rate limits (spec 8): headers on every response, 429 with Retry-After past the budget.

use chrono::Duration;

use crate::support::spawn_app_with;

#[tokio::test]
async fn anonymous_budget_counts_down_then_refuses() {
    let app = spawn_app_with(|c| c.rate_limit_anonymous = 5).await;
    for left in (0..5).rev() {
        let r = app.get("/healthz").await;
        r.expect(200);
        assert_eq!(r.header("ratelimit-limit"), Some("5"));
        assert_eq!(
            r.header("ratelimit-remaining"),
            Some(left.to_string().as_str())
        );
        let reset: u64 = r.header("ratelimit-reset").unwrap().parse().unwrap();
        assert!(reset <= 60, "{reset}");
    }
    let r = app.get("/v1/openapi/admin.json").await;
    r.expect_error(429, "rate_limited");
    assert_eq!(r.header("ratelimit-remaining"), Some("0"));
    assert_eq!(r.header("ratelimit-limit"), Some("5"));
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert_eq!(r.body["details"]["retry_after_seconds"], retry);
    assert!(
        (1..=12).contains(&retry),
        "one cell of a 5/min budget is 12 s: {retry}"
    );
    assert!(r.header("ratelimit-reset").is_some());

    // The budget comes back as the clock moves.
    app.clock
        .advance(Duration::seconds(i64::try_from(retry).unwrap()));
    app.get("/healthz").await.expect(200);
    app.get("/healthz").await.expect_error(429, "rate_limited");
    app.clock.advance(Duration::minutes(1));
    let r = app.get("/healthz").await;
    r.expect(200);
    assert_eq!(r.header("ratelimit-remaining"), Some("4"));
}

#[tokio::test]
async fn budgets_are_per_client_address_behind_a_trusted_proxy() {
    let app = spawn_app_with(|c| {
        c.rate_limit_anonymous = 2;
        c.trust_proxy = true;
    })
    .await;
    let from = |ip: &'static str| {
        app.client
            .get(app.url("/healthz"))
            .header("x-forwarded-for", ip)
    };
    app.send(from("203.0.113.1")).await.expect(200);
    app.send(from("203.0.113.1")).await.expect(200);
    app.send(from("203.0.113.1"))
        .await
        .expect_error(429, "rate_limited");
    // Another address has its own budget; a spoofed earlier hop does not help.
    app.send(from("203.0.113.2")).await.expect(200);
    app.send(from("10.9.9.9, 203.0.113.1"))
        .await
        .expect_error(429, "rate_limited");
}

#[tokio::test]
async fn forwarded_for_is_ignored_without_trust_proxy() {
    let app = spawn_app_with(|c| c.rate_limit_anonymous = 1).await;
    let from = |ip: &'static str| {
        app.client
            .get(app.url("/healthz"))
            .header("x-forwarded-for", ip)
    };
    app.send(from("203.0.113.1")).await.expect(200);
    app.send(from("203.0.113.2"))
        .await
        .expect_error(429, "rate_limited");
}
