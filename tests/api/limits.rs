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

/// Sends `head`, then `trickle` one byte every 100 ms (each gap far below the body's idle
/// timeout) until the server hangs up; returns what the server answered and how long it took.
async fn slowloris(addr: std::net::SocketAddr, head: &[u8], trickle: &[u8]) -> (String, Duration) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut rd, mut wr) = s.into_split();
    let started = std::time::Instant::now();
    wr.write_all(head).await.unwrap();
    let trickle = trickle.to_vec();
    let writer = tokio::spawn(async move {
        for b in trickle {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if wr.write_all(&[b]).await.is_err() {
                return;
            }
        }
        std::future::pending::<()>().await; // never finishes, never hangs up
    });
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(15), rd.read_to_end(&mut buf))
        .await
        .expect("the server cut the slow client off")
        .ok();
    writer.abort();
    (
        String::from_utf8_lossy(&buf).into_owned(),
        started.elapsed(),
    )
}

#[tokio::test]
async fn a_request_body_trickled_past_the_request_deadline_gets_408_request_timeout() {
    let app = spawn_app_with(|c| c.request_deadline = Duration::from_secs(1)).await;
    let head = b"POST /v1/test/echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n";
    let (res, took) = slowloris(app.addr, head, &[b' '; 1000]).await;
    assert!(res.starts_with("HTTP/1.1 408"), "{res}");
    assert!(res.contains(r#""code":"request_timeout""#), "{res}");
    assert!(res.to_ascii_lowercase().contains("x-trace-id:"), "{res}");
    assert!(
        took >= Duration::from_millis(900),
        "cut off early: {took:?}"
    );
    assert_eq!(app.calls(), 0, "the handler never ran");
    // A well-behaved client is served.
    app.get("/healthz").await.expect(200);
}

#[tokio::test]
async fn a_request_head_trickled_past_the_request_deadline_is_disconnected() {
    let app = spawn_app_with(|c| c.request_deadline = Duration::from_secs(1)).await;
    let head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n";
    let (res, took) = slowloris(app.addr, head, &[b'x'; 1000]).await;
    assert_eq!(res, "", "closed without an answer");
    assert!(
        took >= Duration::from_millis(900),
        "cut off early: {took:?}"
    );
    app.get("/healthz").await.expect(200);
}

#[tokio::test]
async fn connections_past_max_connections_wait_in_the_accept_queue_until_one_closes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app_with(|c| c.max_connections = 2).await;
    let idle1 = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let _idle2 = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await; // both accepted

    let mut third = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    third
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let waited = tokio::time::timeout(Duration::from_secs(1), third.read_to_end(&mut buf)).await;
    assert!(waited.is_err(), "answered past the cap: {buf:?}");

    drop(idle1);
    tokio::time::timeout(Duration::from_secs(10), third.read_to_end(&mut buf))
        .await
        .expect("served once a connection closed")
        .unwrap();
    let res = String::from_utf8_lossy(&buf);
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
}
