//! Cross-cutting HTTP conventions (issue 2 §4 and "Bad input").

use serde_json::json;

use crate::support::{spawn_app, wait_until};

#[tokio::test]
async fn health_and_readiness_answer_at_the_root() {
    let app = spawn_app().await;
    let r = app.get("/healthz").await;
    r.expect(200);
    assert_eq!(r.body["status"], "ok");
    assert!(r.header("x-trace-id").is_some());
    assert!(
        r.header("deprecation").is_none(),
        "operational paths are not deprecated"
    );

    let r = app.get("/readyz").await;
    r.expect(200);
    assert_eq!(r.body["status"], "ready");
    assert_eq!(
        r.body["schema_version"],
        merchant_admin::db::migrate::latest_version()
    );
}

#[tokio::test]
async fn unknown_routes_and_wrong_methods_use_the_error_shape() {
    let app = spawn_app().await;
    for path in [
        "/v1/nope",
        "/v1/",
        "/v1",
        "/v1/stores/x/../../etc/passwd",
        "/v1/%FF%FE",
    ] {
        app.get(path).await.expect_error(404, "route_not_found");
    }
    let r = app
        .send(app.client.delete(app.url("/v1/openapi/admin.json")))
        .await;
    r.expect_error(405, "method_not_allowed");
    assert!(
        r.header("allow").is_some_and(|a| a.contains("GET")),
        "{:?}",
        r.headers
    );
}

/// Sends raw bytes, so nothing on the client side normalizes the path first.
async fn raw_status(addr: std::net::SocketAddr, request: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), s.read_to_end(&mut buf)).await;
    String::from_utf8_lossy(&buf).into_owned()
}

#[tokio::test]
async fn dot_segments_and_invalid_utf8_in_paths_are_plain_404s() {
    let app = spawn_app().await;
    for path in [
        &b"/v1/../etc/passwd"[..],
        b"/v1/test/items/..%2F..%2Fetc",
        b"/v1/%FF%FE",
        b"/v1/test/items/%C0%AF",
    ] {
        let mut req = b"GET ".to_vec();
        req.extend_from_slice(path);
        req.extend_from_slice(b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let res = raw_status(app.addr, &req).await;
        assert!(
            res.starts_with("HTTP/1.1 404") || res.starts_with("HTTP/1.1 400"),
            "{res}"
        );
        assert!(
            res.contains("\"code\":\"route_not_found\"") || res.contains("\"code\":\"not_found\""),
            "{res}"
        );
        assert!(res.contains("x-trace-id"), "{res}");
    }
    // Raw non-ASCII bytes are not an HTTP request line at all: the HTTP parser answers a
    // bare 400 and closes, before any of our code runs. It must not hang or crash.
    let res = raw_status(app.addr, b"GET /v1/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert!(res.starts_with("HTTP/1.1 400"), "{res}");
    app.get("/healthz").await.expect(200);
}

#[tokio::test]
async fn every_response_carries_a_distinct_trace_id() {
    let app = spawn_app().await;
    let a = app.get("/healthz").await;
    let b = app.get("/v1/nope").await;
    let (ta, tb) = (
        a.header("x-trace-id").unwrap(),
        b.header("x-trace-id").unwrap(),
    );
    assert_ne!(ta, tb);
    assert!(ta.len() >= 16);
}

#[tokio::test]
async fn unversioned_paths_answer_with_deprecation_headers() {
    let app = spawn_app_with_sunset().await;
    let r = app.get("/openapi/admin.json?x=1").await;
    r.expect(200);
    assert_eq!(r.body["openapi"], "3.1.0");
    assert_eq!(r.header("deprecation"), Some("@1790640000"));
    assert_eq!(
        r.header("link"),
        Some("</v1/openapi/admin.json>; rel=\"successor-version\"")
    );
    assert_eq!(r.header("sunset"), Some("Fri, 01 Jan 2027 00:00:00 GMT"));

    let v1 = app.get("/v1/openapi/admin.json").await;
    v1.expect(200);
    assert!(v1.header("deprecation").is_none() && v1.header("link").is_none());
    assert_eq!(v1.text, r.text, "both paths serve the same thing");

    // Without a configured date there is no Sunset header.
    let plain = spawn_app().await;
    let r = plain.get("/openapi/admin.json").await;
    assert!(r.header("deprecation").is_some() && r.header("sunset").is_none());

    // An unknown unversioned path is a plain 404, with no successor to point at.
    let r = app.get("/no/such/thing").await;
    r.expect_error(404, "route_not_found");
    assert!(r.header("link").is_none());
}

async fn spawn_app_with_sunset() -> crate::support::TestApp {
    crate::support::spawn_app_with(|c| {
        c.sunset_date = merchant_admin::time::parse("2027-01-01T00:00:00Z");
    })
    .await
}

#[tokio::test]
async fn json_bodies_are_checked_with_clear_errors() {
    let app = spawn_app().await;
    let url = app.url("/v1/test/echo");

    // Malformed JSON, invalid UTF-8 and a wrong content type are 400 bad_request.
    for body in [
        &b"{\"name\": "[..],
        b"not json",
        b"{\"name\": \"\xff\xfe\", \"count\": 1}",
        b"",
    ] {
        let r = app
            .send(
                app.client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(body.to_vec()),
            )
            .await;
        r.expect_error(400, "bad_request");
    }
    let r = app
        .send(app.client.post(&url).body(r#"{"name":"a","count":1}"#))
        .await;
    r.expect_error(400, "bad_request");
    let r = app
        .send(
            app.client
                .post(&url)
                .header("content-type", "text/plain")
                .body(r#"{"name":"a","count":1}"#),
        )
        .await;
    r.expect_error(400, "bad_request");

    // Field errors are 422 validation_failed naming the field.
    let cases = [
        (json!({"count": 1}), "name"),
        (json!({"name": "a", "count": "many"}), "count"),
        (json!({"name": "a", "count": -1}), "count"),
        (json!({"name": "a", "count": 99_999_999_999u64}), "count"),
        (
            json!({"name": "a", "count": 1, "colour": "purple"}),
            "colour",
        ),
        (
            json!({"name": "a", "count": 1, "nested": {"size": "big"}}),
            "nested.size",
        ),
        (
            json!({"name": "a", "count": 1, "nested": {}}),
            "nested.size",
        ),
        (
            json!({"name": "a", "count": 1, "surprise": true}),
            "surprise",
        ),
        (json!(["a", "b"]), "[1]"),
        (json!(null), "body"),
    ];
    for (body, field) in cases {
        let r = app.post_json("/v1/test/echo", &body).await;
        r.expect_error(422, "validation_failed");
        let fields = &r.body["details"]["fields"];
        assert!(
            fields[field].is_string(),
            "{body} should name {field}: {}",
            r.text
        );
    }

    // A good body passes and nothing failed along the way was executed.
    assert_eq!(app.calls(), 0, "rejected bodies never reach the handler");
    let r = app
        .post_json(
            "/v1/test/echo",
            &json!({"name": "ok", "count": 3, "colour": "red"}),
        )
        .await;
    r.expect(201);
    assert_eq!(r.body["input"]["colour"], "red");
}

#[tokio::test]
async fn oversized_bodies_and_headers_are_refused() {
    let app = spawn_app().await;
    let big = format!(r#"{{"name":"{}","count":1}}"#, "x".repeat(10 * 1024 * 1024));
    let r = app
        .send(
            app.client
                .post(app.url("/v1/test/echo"))
                .header("content-type", "application/json")
                .body(big),
        )
        .await;
    r.expect_error(413, "payload_too_large");

    let r = app
        .send(
            app.client
                .get(app.url("/healthz"))
                .header("x-filler", "y".repeat(40 * 1024)),
        )
        .await;
    r.expect_error(431, "request_header_fields_too_large");
    assert_eq!(app.calls(), 0);
}

#[tokio::test]
async fn malformed_path_ids_are_not_found() {
    let app = spawn_app().await;
    let id = uuid::Uuid::new_v4();
    let r = app.get(&format!("/v1/test/items/{id}")).await;
    r.expect(200);
    for bad in ["not-a-uuid", "%FF", "1e9999"] {
        app.get(&format!("/v1/test/items/{bad}"))
            .await
            .expect_error(404, "not_found");
    }
}

#[tokio::test]
async fn a_panicking_handler_answers_500_without_its_text() {
    let app = spawn_app().await;
    let r = app.send(app.client.get(app.url("/v1/test/panic"))).await;
    r.expect_error(500, "internal_error");
    assert!(!r.text.contains("secret"), "{}", r.text);

    let r = app.send(app.client.post(app.url("/v1/test/fail"))).await;
    r.expect_error(500, "internal_error");
    assert!(!r.text.contains("secret"), "{}", r.text);

    // The server is still fine afterwards.
    app.get("/healthz").await.expect(200);
}

#[tokio::test]
async fn unknown_query_parameters_and_bad_numbers_are_rejected() {
    let app = spawn_app().await;
    let r = app.get("/v1/test/tenants?colour=red").await;
    r.expect_error(422, "validation_failed");
    assert!(
        r.body["details"]["fields"]["colour"].is_string(),
        "{}",
        r.text
    );
    app.get("/v1/test/tenants?name_prefix=a").await.expect(200);
}

#[tokio::test]
async fn shutdown_lets_an_in_flight_request_finish() {
    let app = spawn_app().await;
    let gate = app.hold_slow();
    let (client, url) = (app.client.clone(), app.url("/v1/test/slow"));
    let in_flight = tokio::spawn(async move {
        client
            .post(url)
            .json(&json!({"name": "late", "count": 1}))
            .send()
            .await
    });
    // Wait until the handler is running (held), then ask the server to stop, and let the
    // handler finish only once the server has stopped taking connections.
    wait_until("the handler to start", || async { app.calls() == 1 }).await;
    let addr = app.addr;
    let stopping = tokio::spawn(app.stop());
    wait_until("the listener to close", || async {
        no_proxy_get(format!("http://{addr}/healthz"))
            .await
            .is_err()
    })
    .await;
    gate.add_permits(1);
    let (stopped, _dir) = stopping.await.unwrap();
    stopped.expect("clean shutdown");
    let res = in_flight
        .await
        .unwrap()
        .expect("the in-flight request completed");
    assert_eq!(res.status(), 201);
    // And new connections are refused.
    assert!(
        no_proxy_get(format!("http://{addr}/healthz"))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn fuzzed_bodies_and_queries_never_get_a_server_error() {
    use rand::{Rng, SeedableRng};
    let app = spawn_app_with_high_limits().await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let seeds: [&[u8]; 3] = [
        br#"{"name":"ana","count":3,"colour":"green","nested":{"size":-4}}"#,
        br#"{"name":"","count":0}"#,
        br#"[{"name":1e400,"count":18446744073709551616}]"#,
    ];
    let alphabet = b"{}[]\",:0123456789-+.eEtrufalsn \\u\x00\xff\xc3";
    let mut created = 0;
    for i in 0..300 {
        let mut body = seeds[i % seeds.len()].to_vec();
        for _ in 0..rng.random_range(1..6) {
            let at = rng.random_range(0..=body.len());
            match rng.random_range(0..3) {
                0 if at < body.len() => {
                    body.remove(at);
                }
                1 => body.insert(at, alphabet[rng.random_range(0..alphabet.len())]),
                _ if at < body.len() => body[at] = alphabet[rng.random_range(0..alphabet.len())],
                _ => {}
            }
        }
        let r = app
            .send(
                app.client
                    .post(app.url("/v1/test/echo"))
                    .header("content-type", "application/json")
                    .body(body.clone()),
            )
            .await;
        match r.status.as_u16() {
            201 => created += 1,
            400 => assert_eq!(r.body["code"], "bad_request", "{}", r.text),
            422 => assert_eq!(r.body["code"], "validation_failed", "{}", r.text),
            other => panic!(
                "{other} for {:?}: {}",
                String::from_utf8_lossy(&body),
                r.text
            ),
        }
    }
    assert_eq!(
        app.calls(),
        created,
        "only accepted bodies reached the handler"
    );

    for q in [
        "limit=%00",
        "limit=1&limit=500",
        "cursor=%FF%FE",
        "offset=1e3",
        "name_prefix=%",
        "&&==&",
        "limit",
    ] {
        let r = app.get(&format!("/v1/test/tenants?{q}")).await;
        assert!(
            r.status.is_success() || r.status.is_client_error(),
            "{q}: {}",
            r.text
        );
        assert!(
            r.status.is_success() || r.body["code"].is_string(),
            "{q}: {}",
            r.text
        );
    }
}

async fn spawn_app_with_high_limits() -> crate::support::TestApp {
    crate::support::spawn_app_with(|c| c.rate_limit_anonymous = 100_000).await
}

#[tokio::test]
async fn a_client_that_stops_sending_its_body_gets_an_error_not_a_hang() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = crate::support::spawn_app_with(|c| {
        c.body_timeout = std::time::Duration::from_millis(200);
    })
    .await;
    let mut s = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    s.write_all(
        b"POST /v1/test/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"name\":",
    )
    .await
    .unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .expect("the server answered instead of waiting forever")
        .unwrap();
    let res = String::from_utf8_lossy(&buf);
    assert!(res.starts_with("HTTP/1.1 400"), "{res}");
    assert!(res.contains("\"code\":\"bad_request\""), "{res}");
    assert_eq!(app.calls(), 0);
}

#[tokio::test]
async fn a_client_that_trickles_its_headers_is_disconnected() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = crate::support::spawn_app_with(|c| {
        c.header_read_timeout = std::time::Duration::from_millis(300);
    })
    .await;
    let mut s = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap(); // never finished
    let mut buf = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut buf))
        .await
        .expect("the server closed the connection instead of waiting forever")
        .unwrap();
    // A well-behaved client on the same server is unaffected.
    app.get("/healthz").await.expect(200);
}

/// A GET that ignores any proxy set in the environment (CI machines may have one).
async fn no_proxy_get(url: String) -> reqwest::Result<reqwest::Response> {
    reqwest::Client::builder()
        .no_proxy()
        .build()?
        .get(url)
        .send()
        .await
}

/// Issue 13 item 18: the permission catalog and both webhook event catalogs answer in the
/// Page envelope (spec 9.4 replaced bare arrays), every entry in one page.
#[tokio::test]
async fn catalogs_answer_in_the_page_envelope() {
    let app = spawn_app().await;
    let (token, _) = app.member("ana@example.com").await;
    for path in [
        "/v1/permissions/catalog",
        "/v1/webhook-events/catalog",
        "/v1/webhooks/events/catalog",
    ] {
        let r = app.call(reqwest::Method::GET, path, &token, None).await;
        r.expect(200);
        let data = r.body["data"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}: {}", r.text));
        assert!(data.len() > 10, "{path}: {}", r.text);
        assert_eq!(r.body["has_more"], false, "{path}");
        assert!(r.body["next_cursor"].is_null(), "{path}");
    }
}
