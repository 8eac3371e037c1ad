//! The real binary as an operator runs it: graceful SIGTERM, log lines, crash recovery.

use std::time::Duration;

use serde_json::Value;

use crate::support::process::{start, wait_for};

#[tokio::test]
async fn sigterm_exits_zero_and_logs_one_line_per_request_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path(), &[], &[]);
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let base = format!("http://{}", server.addr);
    let secret = "svc_st_s3cr3tT0k3nValueThatMustNeverBeLogged00000";
    let r = client
        .get(format!("{base}/v1/openapi/admin.json"))
        .bearer_auth(secret)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let trace_id = r.headers()["x-trace-id"].to_str().unwrap().to_string();
    let r = client
        .post(format!("{base}/v1/nope?code=123456"))
        .header("content-type", "application/json")
        .body(r#"{"password":"hunter2-the-password"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);

    let status = server.sigterm();
    assert_eq!(status.code(), Some(0), "graceful exit");

    let lines = server.log_lines();
    let requests: Vec<&Value> = lines
        .iter()
        .filter(|l| l["fields"]["message"] == "request")
        .collect();
    assert_eq!(requests.len(), 2, "one line per request: {lines:#?}");
    let first = requests[0];
    assert_eq!(first["fields"]["trace_id"], trace_id.as_str());
    assert_eq!(first["fields"]["method"], "GET");
    assert_eq!(first["fields"]["route"], "/v1/openapi/admin.json");
    assert_eq!(first["fields"]["status"], 200);
    assert!(first["fields"]["duration_ms"].is_number());
    assert_eq!(requests[1]["fields"]["status"], 404);

    let all = server.logs.lock().unwrap().join("\n");
    for s in [secret, "hunter2", "123456"] {
        assert!(!all.contains(s), "{s} leaked into the logs");
    }
    assert!(lines.iter().any(|l| l["fields"]["message"] == "stopped"));
}

#[tokio::test]
async fn sigint_also_stops_it_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path(), &[], &[]);
    let r = no_proxy_get(format!("http://{}/readyz", server.addr))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(server.signal("-INT").code(), Some(0));
    assert!(
        server
            .log_lines()
            .iter()
            .any(|l| l["fields"]["message"] == "stopped")
    );
}

#[cfg(feature = "failpoints")]
#[test]
fn a_job_held_by_a_killed_server_finishes_after_restart() {
    use merchant_admin::db::Db;
    use merchant_admin::jobs::{self, Cleanup};
    use rusqlite::Connection;

    let dir = tempfile::tempdir().unwrap();
    let db_path = merchant_admin::db::db_path(dir.path());
    {
        let db = Db::open(&db_path).unwrap();
        db.write_blocking(|tx| jobs::enqueue(tx, &Cleanup, chrono::Utc::now()).map(|_| ()))
            .unwrap();
    }
    let job = || -> (String, i64) {
        let c = Connection::open(&db_path).unwrap();
        c.query_row("SELECT state, attempts FROM jobs", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap()
    };

    // The first server takes the job and is stuck inside it (a fail point sleeps) when it
    // is killed with SIGKILL: no chance to release anything.
    let mut first = start(
        dir.path(),
        &["--workers", "1", "--job-lease-secs", "2"],
        &[("FAILPOINTS", "jobs::execute=sleep(60000)")],
    );
    wait_for("the job to be claimed", Duration::from_secs(20), || {
        job() == ("running".into(), 1)
    });
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert_eq!(
        job(),
        ("running".into(), 1),
        "the killed process still holds the lease"
    );

    // After a restart the lease runs out and the job is taken again and finished.
    let mut second = start(
        dir.path(),
        &["--workers", "1", "--job-lease-secs", "2"],
        &[],
    );
    wait_for("the job to finish", Duration::from_secs(30), || {
        job().0 == "done"
    });
    assert_eq!(job(), ("done".into(), 2));
    assert_eq!(second.sigterm().code(), Some(0));
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

/// Pending webhook retries are rows, not timers: a server killed with SIGKILL between two
/// attempts sends the next one after it is started again, with the same event and bytes.
/// The real binary and its flags: the platform webhook receives `user.created`.
// Multi-threaded: the receiver must keep answering while the test blocks on the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_webhook_retry_survives_kill_9() {
    use crate::support::{Receiver, assert_signed};
    let rx = Receiver::start().await;
    rx.answer(&[500]);
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--platform-webhook-url",
        rx.url.as_str(),
        "--webhook-retry-base-secs",
        "3",
    ];
    let env = [(
        "MERCHANT_ADMIN_PLATFORM_WEBHOOK_SECRET",
        "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=",
    )];
    let mut first = start(dir.path(), &args, &env);
    assert_eq!(crate::support::process::register(first.addr).await, 201);
    rx.wait_for(1).await;
    // Wait until the failed attempt and its retry are recorded, then kill.
    let db = merchant_admin::db::db_path(dir.path());
    let recorded = move |status: &'static str| {
        let db = db.clone();
        move || -> bool {
            rusqlite::Connection::open(&db)
                .unwrap()
                .query_row(
                    "SELECT COUNT(*) FROM webhook_attempts WHERE status = ?1",
                    [status],
                    |r| r.get::<_, i64>(0),
                )
                .unwrap()
                == 1
        }
    };
    let pending = recorded("pending");
    tokio::task::spawn_blocking(move || {
        wait_for(
            "the first attempt to be recorded",
            Duration::from_secs(20),
            pending,
        );
    })
    .await
    .unwrap();
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert_eq!(rx.hits().len(), 1, "the retry is not due yet");

    let mut second = start(dir.path(), &args, &env);
    let hits = rx.wait_for(2).await;
    assert_eq!(hits[1].body, hits[0].body);
    assert_eq!(
        hits[1].header("x-webhook-event-id"),
        hits[0].header("x-webhook-event-id")
    );
    assert_signed(
        &hits[1],
        "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=",
        "user.created",
    );
    assert_eq!(hits[1].json()["data"]["email"], "a@example.com");
    let succeeded = recorded("succeeded");
    let code = tokio::task::spawn_blocking(move || {
        wait_for(
            "the second attempt to be recorded",
            Duration::from_secs(20),
            succeeded,
        );
        second.sigterm().code()
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0));
    // The server has exited: nothing more can arrive.
    assert_eq!(rx.hits().len(), 2, "unexpected deliveries");
}

/// Issue 22 (group commit): orders created by many clients at once share commits, and a
/// server killed with SIGKILL in the middle loses none it answered and leaves none half
/// written: after a restart every answered order is there, each order has its line, and
/// the variant's reserved stock equals the units of the orders that exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answered_order_survives_kill_9_and_none_is_half_written() {
    use std::sync::{Arc, Mutex};

    use serde_json::json;

    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(crate::support::process::BIN)
        .arg("setup")
        .arg("--data-dir")
        .arg(dir.path())
        .args([
            "--email",
            "crash@example.com",
            "--password",
            "crash crash crash",
        ])
        .args(["--org-name", "Crash", "--store-name", "Crash", "--demo"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ids: Value = serde_json::from_slice(&out.stdout).unwrap();
    let store = ids["store_id"].as_str().unwrap().to_owned();
    let budget = ["--rate-limit-authenticated", "1000000"];
    let mut first = start(dir.path(), &budget, &[]);
    let base = format!("http://{}/v1", first.addr);
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let login: Value = client
        .post(format!("{base}/auth/login"))
        .json(&json!({"email": "crash@example.com", "password": "crash crash crash"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = login["token"].as_str().unwrap().to_owned();
    let get = |path: String| {
        let (client, token) = (client.clone(), token.clone());
        async move {
            let r = client.get(path).bearer_auth(token).send().await.unwrap();
            assert_eq!(r.status(), 200);
            r.json::<Value>().await.unwrap()
        }
    };
    let customer =
        get(format!("{base}/stores/{store}/customers?limit=1")).await["data"][0]["id"].clone();
    let variant =
        get(format!("{base}/stores/{store}/inventory?limit=1")).await["data"][0]["variant_id"]
            .as_str()
            .unwrap()
            .to_owned();
    let r = client
        .post(format!(
            "{base}/stores/{store}/inventory/{variant}/adjustments"
        ))
        .bearer_auth(&token)
        .json(&json!({"delta": 100_000, "reason": "crash test"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let reserved_before = r.json::<Value>().await.unwrap()["reserved"]
        .as_i64()
        .unwrap();

    // Sixteen clients create orders until the server dies under them.
    let answered = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut clients = Vec::new();
    for _ in 0..16 {
        let (client, token, answered) = (client.clone(), token.clone(), answered.clone());
        let url = format!("{base}/stores/{store}/orders");
        let body = json!({
            "customer_id": customer,
            "items": [{"variant_id": variant, "quantity": 1}],
            "note": "crash test",
        });
        clients.push(tokio::spawn(async move {
            loop {
                let Ok(r) = client
                    .post(&url)
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await
                else {
                    return;
                };
                if r.status() != 201 {
                    return;
                }
                let Ok(order) = r.json::<Value>().await else {
                    return;
                };
                answered
                    .lock()
                    .unwrap()
                    .push(order["id"].as_str().unwrap().to_owned());
            }
        }));
    }
    let counted = answered.clone();
    tokio::task::spawn_blocking(move || {
        wait_for("300 answered orders", Duration::from_secs(60), || {
            counted.lock().unwrap().len() >= 300
        });
    })
    .await
    .unwrap();
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    for c in clients {
        c.await.unwrap();
    }
    let answered = answered.lock().unwrap().clone();

    let mut second = start(dir.path(), &budget, &[]);
    let base = format!("http://{}/v1", second.addr);
    for id in &answered {
        let r = client
            .get(format!("{base}/stores/{store}/orders/{id}"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "answered order {id} is missing");
        let order: Value = r.json().await.unwrap();
        assert_eq!(order["items"].as_array().unwrap().len(), 1, "{order}");
    }
    let db = merchant_admin::db::db_path(dir.path());
    let (orders, without_lines, without_audit, units, reserved): (i64, i64, i64, i64, i64) =
        tokio::task::spawn_blocking(move || {
            let c = rusqlite::Connection::open(&db).unwrap();
            c.query_row(
                "SELECT
                   (SELECT COUNT(*) FROM orders WHERE note = 'crash test'),
                   (SELECT COUNT(*) FROM orders WHERE note = 'crash test'
                      AND json_array_length(items) <> 1),
                   (SELECT COUNT(*) FROM orders o WHERE note = 'crash test'
                      AND NOT EXISTS (SELECT 1 FROM audit_log a
                                       WHERE a.resource_id = o.id)),
                   (SELECT COALESCE(SUM(json_extract(items, '$[0].quantity')), 0)
                      FROM orders WHERE note = 'crash test'),
                   (SELECT reserved FROM variants WHERE id = ?1)",
                [&variant],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .unwrap()
        })
        .await
        .unwrap();
    assert!(
        orders >= answered.len() as i64,
        "{orders} < {}",
        answered.len()
    );
    assert_eq!(without_lines, 0, "an order without its line");
    assert_eq!(without_audit, 0, "an order without its audit entry");
    assert_eq!(units, orders, "one unit per order");
    assert_eq!(
        reserved - reserved_before,
        units,
        "reserved stock grew by the orders' units"
    );
    assert_eq!(second.sigterm().code(), Some(0));
}
