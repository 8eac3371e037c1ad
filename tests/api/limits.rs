//! Slow clients, full queues and shutdown (issue 13, items 16 and 17): the server's
//! resources stay bounded whatever clients do.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crate::helpers::spawn_app_with;

/// Waits (bounded) until `check` holds; this waits, it does not time anything.
async fn until(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("gave up waiting for {what}");
}

#[tokio::test]
async fn a_full_database_queue_answers_503_with_retry_after() {
    let app = spawn_app_with(|c| c.db_queue_limit = 1).await;
    // Every reader thread stuck on a slow read, and the one queue slot taken.
    let gate = Arc::new(std::sync::RwLock::new(()));
    let held = gate.write().unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let mut slow = Vec::new();
    // One at a time: the queue holds one read, so a burst would be turned away too; and a
    // background read (the job worker's) may hold the slot for a moment, so each retries.
    for i in 0..9 {
        let (db, gate, count) = (app.state.db.clone(), gate.clone(), started.clone());
        slow.push(tokio::spawn(async move {
            loop {
                let (gate, count) = (gate.clone(), count.clone());
                let r = db
                    .read(move |_| {
                        count.fetch_add(1, Ordering::SeqCst);
                        drop(gate.read().unwrap_or_else(PoisonError::into_inner));
                        Ok(())
                    })
                    .await;
                match r {
                    Err(e) if e.status == 503 => {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    r => return r,
                }
            }
        }));
        if i < 8 {
            until("a reader thread to take the read", || {
                started.load(Ordering::SeqCst) > i
            })
            .await;
        }
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(started.load(Ordering::SeqCst), 8, "the ninth read waits");

    let r = app.get("/v1/test/tenants").await;
    r.expect_error(503, "service_unavailable");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.body["details"]["retry_after_seconds"], 1);

    // Once the queue drains, the same request is served.
    drop(held);
    for s in slow {
        s.await.unwrap().unwrap();
    }
    app.get("/v1/test/tenants").await.expect(200);
}

/// The real binary with a hasher stuck on each hash (a fail point sleeps): one hash runs,
/// at most one waits, and the rest are turned away at once instead of queueing.
#[cfg(feature = "failpoints")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_hashing_queue_answers_503_with_retry_after() {
    use crate::process::start;
    let dir = tempfile::tempdir().unwrap();
    let server = start(
        dir.path(),
        &["--hash-workers", "1", "--hash-queue-limit", "1"],
        &[("FAILPOINTS", "hasher::run=sleep(1500)")],
    );
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let url = format!("http://{}/v1/auth/register", server.addr);
    let sends = (0..5).map(|i| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let body = serde_json::json!({
                "email": format!("u{i}@example.com"),
                "password": "correct horse battery",
            });
            client.post(url).json(&body).send().await.unwrap()
        }
    });
    let replies = futures::future::join_all(sends).await;
    let (mut busy, mut served) = (0, 0);
    for r in replies {
        match r.status().as_u16() {
            201 => served += 1,
            503 => {
                busy += 1;
                assert_eq!(r.headers()["retry-after"], "1");
                let body: serde_json::Value = r.json().await.unwrap();
                assert_eq!(body["code"], "service_unavailable", "{body}");
            }
            s => panic!("unexpected status {s}: {}", r.text().await.unwrap()),
        }
    }
    assert!(busy >= 1, "no registration was turned away");
    assert!(served >= 1, "the hash that got a thread was served");
}
