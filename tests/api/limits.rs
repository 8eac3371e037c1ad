//! Slow clients, full queues and shutdown (issue 13, items 16 and 17): the server's
//! resources stay bounded whatever clients do.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::{spawn_app_with, wait_until};

#[tokio::test]
async fn a_full_database_queue_answers_503_with_retry_after() {
    let app = spawn_app_with(|c| c.db_queue_limit = 1).await;
    // Every reader thread stuck on a slow read, and the one queue slot taken.
    let gate = Arc::new(tokio::sync::RwLock::new(()));
    let held = gate.clone().write_owned().await;
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
                        drop(gate.blocking_read());
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
            wait_until("a reader thread to take the read", || async {
                started.load(Ordering::SeqCst) > i
            })
            .await;
        }
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(started.load(Ordering::SeqCst), 8, "the ninth read waits");

    let r = tokio::time::timeout(Duration::from_secs(5), app.get("/v1/test/tenants"))
        .await
        .expect("turned away at once, not queued behind the held reads");
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
    use crate::support::process::start;
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

/// Sends SIGTERM and waits (up to 30 s) for the process to exit; returns its status and how
/// long it took.
fn terminate(child: &mut std::process::Child) -> (std::process::ExitStatus, Duration) {
    let started = std::time::Instant::now();
    let ok = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return (s, started.elapsed());
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the server did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The shutdown timeout the tests give the binary, and the exit it promises with a little
/// slack for sending the signal and noticing the exit. The server itself gives up on what is
/// in flight a second before the timeout, so a slow machine has well over a second to spare.
const SHUTDOWN_TIMEOUT: &str = "2";
const EXIT_WITHIN: Duration = Duration::from_millis(2750);

/// Starts a request whose body never finishes arriving, on its own connection.
async fn request_mid_body(addr: std::net::SocketAddr) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(
        b"POST /v1/auth/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"email\":",
    )
    .await
    .unwrap();
    s
}

/// A receiver that holds the connection open does not hold the exit, and the delivery it
/// was sent is sent again after the next start.
// Multi-threaded: the receiver must keep answering while the test blocks on the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_exits_within_the_shutdown_timeout_with_a_webhook_in_flight() {
    use crate::support::Receiver;
    use crate::support::process::start;
    let rx = Receiver::start().await;
    let gate = rx.hold(); // holds the connection open, never answers
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--platform-webhook-url",
        rx.url.as_str(),
        "--shutdown-timeout-secs",
        SHUTDOWN_TIMEOUT,
    ];
    let env = [(
        "MERCHANT_ADMIN_PLATFORM_WEBHOOK_SECRET",
        "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=",
    )];
    let mut first = start(dir.path(), &args, &env);
    assert_eq!(crate::support::process::register(first.addr).await, 201);
    rx.wait_for(1).await; // the delivery is in flight
    let _mid = request_mid_body(first.addr).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    let (status, took) = tokio::task::spawn_blocking(move || terminate(&mut first.child))
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0), "graceful exit");
    assert!(took < EXIT_WITHIN, "exited after {took:?}");

    // The interrupted attempt is due again at once, and was not counted.
    let db = merchant_admin::db::db_path(dir.path());
    let job = move || -> (String, i64) {
        rusqlite::Connection::open(&db)
            .unwrap()
            .query_row(
                "SELECT state, attempts FROM jobs WHERE queue = 'webhooks'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
    };
    assert_eq!(job(), ("queued".into(), 0));

    // The receiver answers now; the next start sends the same delivery.
    gate.add_permits(1000);
    let mut second = start(dir.path(), &args, &env);
    let hits = rx.wait_for(2).await;
    assert_eq!(hits[1].body, hits[0].body);
    assert_eq!(
        hits[1].header("x-webhook-event-id"),
        hits[0].header("x-webhook-event-id")
    );
    let code = tokio::task::spawn_blocking(move || {
        crate::support::process::wait_for(
            "the delivery to be recorded",
            Duration::from_secs(20),
            || job().0 == "done",
        );
        terminate(&mut second.child).0.code()
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_exits_within_the_shutdown_timeout_with_a_request_mid_body() {
    use tokio::io::AsyncReadExt;
    let dir = tempfile::tempdir().unwrap();
    let mut server = crate::support::process::start(
        dir.path(),
        &["--shutdown-timeout-secs", SHUTDOWN_TIMEOUT],
        &[],
    );
    let mut mid = request_mid_body(server.addr).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let (status, took) = tokio::task::spawn_blocking(move || terminate(&mut server.child))
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0), "graceful exit");
    assert!(took < EXIT_WITHIN, "exited after {took:?}");
    // The stalled client was hung up on.
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), mid.read_to_end(&mut buf))
        .await
        .expect("the connection was closed")
        .ok();
}

/// Issue 13 item 17, found in review: a client that pipelines requests for large responses
/// and never reads them cannot hold its connection slot: once the response has made no
/// progress for the request deadline, the connection is closed and the next client, waiting
/// past `--max-connections`, is served.
#[tokio::test]
async fn a_client_that_never_reads_its_responses_loses_its_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app_with(|c| {
        c.max_connections = 1;
        c.request_deadline = Duration::from_secs(1);
        c.rate_limit_anonymous = 1_000_000;
    })
    .await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut hog = socket.connect(app.addr).await.unwrap();
    let pipelined = b"GET /v1/openapi/admin.json HTTP/1.1\r\nHost: x\r\n\r\n".repeat(400);
    let writer = tokio::spawn(async move {
        let _ = hog.write_all(&pipelined).await;
        hog // kept open, never read
    });

    let mut next = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    next.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), next.read_to_end(&mut buf))
        .await
        .expect("the reader-less connection gave its slot up")
        .unwrap();
    let res = String::from_utf8_lossy(&buf);
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    drop(writer);
}
