//! Load benchmark: starts the release `merchant-admin serve` on loopback with a fresh data
//! directory and drives each scenario with N keep-alive connections for a fixed time,
//! printing requests/s, p50 and p99. Figures go into README.md; nothing here asserts speed.
//!
//! `cargo bench --bench http -- [--seconds 10] [--connections 64] [--only NAME]`
//!
//! The server logs every request at info level (to /dev/null), as in production; rate
//! limits and the sign-in lockout are raised so they do not shape the load.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_merchant-admin");
const PASSWORD: &str = "benchmark password";

/// One kind of request a scenario sends over and over.
#[derive(Clone)]
struct Call {
    method: reqwest::Method,
    path: String,
    bearer: Option<String>,
    body: Option<Value>,
}

impl Call {
    fn get(path: &str) -> Self {
        Self {
            method: reqwest::Method::GET,
            path: path.into(),
            bearer: None,
            body: None,
        }
    }
}

struct Scenario {
    name: &'static str,
    call: Call,
    connections: Option<usize>,
    /// Load kept running in the background while `call` is measured.
    background: Option<(Call, usize)>,
}

struct Args {
    seconds: u64,
    connections: usize,
    only: Option<String>,
}

fn parse_args() -> Args {
    let mut a = Args {
        seconds: 10,
        connections: 64,
        only: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seconds" => a.seconds = it.next().and_then(|v| v.parse().ok()).unwrap_or(10),
            "--connections" => a.connections = it.next().and_then(|v| v.parse().ok()).unwrap_or(64),
            "--only" => a.only = it.next(),
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(data_dir: &std::path::Path) -> (Server, String) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Another build can be measured against this one (A/B) without rebuilding the harness.
    let bin = std::env::var("MERCHANT_ADMIN_BENCH_SERVER").unwrap_or_else(|_| BIN.to_owned());
    let child = Command::new(bin)
        .args([
            "serve",
            "--addr",
            &format!("127.0.0.1:{port}"),
            "--log-format",
            "json",
        ])
        .args([
            "--rate-limit-anonymous",
            "1000000000",
            "--rate-limit-authenticated",
            "1000000000",
        ])
        .args(["--sign-in-failure-limit", "1000000000"])
        // The webhook phase's receiver listens on loopback.
        .arg("--allow-private-webhook-targets")
        .arg("--data-dir")
        .arg(data_dir)
        .env("MERCHANT_ADMIN_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the release binary");
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    (Server(child), base)
}

struct Measured {
    requests: usize,
    errors: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

async fn send(client: &reqwest::Client, base: &str, call: &Call) -> bool {
    let mut req = client.request(call.method.clone(), format!("{base}{}", call.path));
    if let Some(t) = &call.bearer {
        req = req.bearer_auth(t);
    }
    if let Some(b) = &call.body {
        req = req.json(b);
    }
    match req.send().await {
        Ok(r) if r.status().is_success() => r.bytes().await.is_ok(),
        _ => false,
    }
}

/// Drives `call` from `connections` tasks until `until`.
async fn drive(
    client: &reqwest::Client,
    base: &Arc<String>,
    call: &Call,
    connections: usize,
    until: Instant,
) -> Measured {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (client, base, call) = (client.clone(), base.clone(), call.clone());
        tasks.push(tokio::spawn(async move {
            let (mut lat, mut errors) = (Vec::new(), 0usize);
            while Instant::now() < until {
                let t = Instant::now();
                if send(&client, &base, &call).await {
                    lat.push(t.elapsed());
                } else {
                    errors += 1;
                }
            }
            (lat, errors)
        }));
    }
    let (mut latencies, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (l, e) = t.await.unwrap();
        latencies.extend(l);
        errors += e;
    }
    latencies.sort_unstable();
    Measured {
        requests: latencies.len(),
        errors,
        elapsed: started.elapsed(),
        latencies,
    }
}

async fn run(s: &Scenario, client: &reqwest::Client, base: &Arc<String>, args: &Args) -> Measured {
    for _ in 0..100 {
        send(client, base, &s.call).await; // warm up connections and caches
    }
    let until = Instant::now() + Duration::from_secs(args.seconds);
    let background = s.background.clone().map(|(call, n)| {
        let (client, base) = (client.clone(), base.clone());
        // Starts a moment earlier and ends a moment later than the measured load.
        tokio::spawn(async move {
            drive(&client, &base, &call, n, until + Duration::from_millis(500)).await
        })
    });
    if background.is_some() {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let m = drive(
        client,
        base,
        &s.call,
        s.connections.unwrap_or(args.connections),
        until,
    )
    .await;
    if let Some(bg) = background {
        let b = bg.await.unwrap();
        #[expect(clippy::cast_precision_loss, reason = "a rate")]
        let rate = b.requests as f64 / b.elapsed.as_secs_f64();
        println!(
            "    (background: {} requests, {rate:.0}/s, {} errors)",
            b.requests, b.errors
        );
    }
    m
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "an index"
    )]
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// Creates an organization, a store and a store API token with every scope; returns the
/// store id and the token.
async fn store_token(
    client: &reqwest::Client,
    base: &str,
    session: &str,
    name: &str,
) -> (String, String) {
    let post = |path: &str, body: Value| {
        client
            .post(format!("{base}{path}"))
            .bearer_auth(session)
            .json(&body)
            .send()
    };
    let org: Value = post("/v1/tenants", json!({"name": format!("{name} Org")}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let store: Value = post(
        "/v1/stores",
        json!({"tenant_id": org["id"], "name": format!("{name} Store")}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let store_id = store["id"].as_str().expect("a store").to_string();
    let token: Value = post(
        &format!("/v1/stores/{store_id}/api-tokens"),
        json!({"name": "bench", "scopes": ["*"]}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    (
        store_id,
        token["value"].as_str().expect("a token value").to_string(),
    )
}

/// Registers and signs in the benchmark user; returns an access token.
async fn sign_in(client: &reqwest::Client, base: &str) -> String {
    let r = client
        .post(format!("{base}/v1/auth/register"))
        .json(&json!({"email": "bench@example.com", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "register");
    let s: Value = client
        .post(format!("{base}/v1/auth/login"))
        .json(&json!({"email": "bench@example.com", "password": PASSWORD}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    s["token"].as_str().expect("a token").to_string()
}

fn scenarios(token: &str, store_id: &str, store_token: &str) -> Vec<Scenario> {
    let me = Call {
        bearer: Some(token.to_owned()),
        ..Call::get("/v1/me")
    };
    let login = Call {
        method: reqwest::Method::POST,
        path: "/v1/auth/login".into(),
        bearer: None,
        body: Some(
            json!({"email": "bench@example.com", "password": PASSWORD, "device_name": "bench"}),
        ),
    };
    vec![
        Scenario {
            name: "GET /healthz",
            call: Call::get("/healthz"),
            connections: None,
            background: None,
        },
        Scenario {
            name: "GET /v1/openapi/admin.json",
            call: Call::get("/v1/openapi/admin.json"),
            connections: None,
            background: None,
        },
        Scenario {
            name: "GET /v1/me",
            call: me.clone(),
            connections: None,
            background: None,
        },
        Scenario {
            name: "POST /v1/auth/login",
            call: login.clone(),
            connections: Some(16),
            background: None,
        },
        Scenario {
            name: "GET /v1/me + 100 logins",
            call: me,
            connections: None,
            background: Some((login, 100)),
        },
        Scenario {
            name: "GET store (token, checked)",
            call: Call {
                bearer: Some(store_token.to_owned()),
                ..Call::get(&format!("/v1/stores/{store_id}"))
            },
            connections: None,
            background: None,
        },
        Scenario {
            name: "GET store (token, unchecked)",
            call: Call {
                bearer: Some(store_token.to_owned()),
                ..Call::get(&format!("/v1/_bench/stores/{store_id}"))
            },
            connections: None,
            background: None,
        },
    ]
}

fn report(s: &Scenario, r: &Measured, args: &Args) {
    #[expect(clippy::cast_precision_loss, reason = "a rate")]
    let rps = r.requests as f64 / r.elapsed.as_secs_f64();
    println!(
        "{:<32} {:>5} {:>9} {:>10.0} {:>8.2} {:>8.2} {:>6}",
        s.name,
        s.connections.unwrap_or(args.connections),
        r.requests,
        rps,
        pct(&r.latencies, 0.50),
        pct(&r.latencies, 0.99),
        r.errors
    );
}

fn main() {
    let args = parse_args();
    let dir = tempfile::tempdir().unwrap();
    let (server, base) = start_server(dir.path());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1) // one core for the load, one for the server
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    let base = Arc::new(base);
    let token = rt.block_on(sign_in(&client, &base));
    let (store_id, st_token) = rt.block_on(store_token(&client, &base, &token, "Bench"));
    println!(
        "{:<32} {:>5} {:>9} {:>10} {:>8} {:>8} {:>6}",
        "scenario", "conns", "requests", "req/s", "p50 ms", "p99 ms", "errors"
    );
    let wanted = |name: &str| args.only.as_deref().is_none_or(|o| name.contains(o));
    for s in scenarios(&token, &store_id, &st_token) {
        if wanted(s.name) {
            report(&s, &rt.block_on(run(&s, &client, &base, &args)), &args);
        }
    }
    // `--only admin` runs the whole store-administration phase.
    let admin_phase = args.only.as_deref() == Some("admin");
    let wanted_admin = |name: &str| admin_phase || wanted(name);
    if admin::SCENARIOS.iter().any(|n| wanted_admin(n)) {
        let (scenarios, hook) = rt.block_on(admin::prepare(&client, &base, &token));
        for s in scenarios.iter().filter(|s| wanted_admin(s.name)) {
            if s.name == admin::WITH_WEBHOOK {
                rt.block_on(hook.subscribe(&client, &base));
            }
            report(s, &rt.block_on(run(s, &client, &base, &args)), &args);
        }
    }
    if args.only.as_deref().is_none_or(|o| "webhooks".contains(o)) {
        rt.block_on(webhooks::run(
            &client,
            &base,
            &st_token,
            &store_id,
            server.0.id(),
        ));
    }
}

/// Webhook delivery (issue 5): throughput of a 20,000-event burst, enqueue-to-delivery
/// latency at a steady 200 events/s, and the server's RSS with 100,000 events queued.
mod webhooks {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use axum::extract::State;
    use serde_json::{Value, json};
    use tokio::sync::Semaphore;

    #[derive(Default)]
    struct Seen {
        count: AtomicUsize,
        /// Enqueue-to-arrival, microseconds.
        latencies: Mutex<Vec<u64>>,
        gate: Mutex<Option<Arc<Semaphore>>>,
    }

    async fn receive(State(seen): State<Arc<Seen>>, body: axum::body::Bytes) -> &'static str {
        let gate = seen.gate.lock().unwrap().clone();
        if let Some(g) = gate {
            let _permit = g.acquire().await;
        }
        let now = chrono::Utc::now().timestamp_micros();
        if let Ok(v) = serde_json::from_slice::<Value>(&body)
            && let Some(at) = v["data"]["emitted_at_us"].as_i64()
        {
            seen.latencies
                .lock()
                .unwrap()
                .push(u64::try_from(now - at).unwrap_or_default());
        }
        seen.count.fetch_add(1, Ordering::SeqCst);
        "ok"
    }

    fn rss_mib(pid: u32) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let kib: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN);
        kib / 1024.0
    }

    async fn wait_count(seen: &Seen, n: usize, pid: u32, max_rss: &mut f64) {
        while seen.count.load(Ordering::SeqCst) < n {
            tokio::time::sleep(Duration::from_millis(100)).await;
            *max_rss = max_rss.max(rss_mib(pid));
        }
    }

    fn pct(sorted: &[u64], p: f64) -> f64 {
        let d: Vec<Duration> = sorted.iter().map(|us| Duration::from_micros(*us)).collect();
        super::pct(&d, p)
    }

    pub async fn run(client: &reqwest::Client, base: &str, token: &str, store: &str, pid: u32) {
        let seen = Arc::new(Seen::default());
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let r = client
            .post(format!("{base}/v1/stores/{store}/webhooks"))
            .bearer_auth(token)
            .json(&json!({"url": url, "events": ["orders.created"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "create the webhook");
        let emit = |count: u32| {
            client
                .post(format!("{base}/v1/_bench/stores/{store}/events"))
                .bearer_auth(token)
                .json(&json!({"event": "orders.created", "count": count}))
                .send()
        };
        let mut max_rss = rss_mib(pid);
        println!("\nwebhook delivery (one receiver answering 200 on loopback)");

        // 1. A burst of 20,000 events.
        let t = Instant::now();
        assert!(emit(20_000).await.unwrap().status().is_success());
        let enqueued = t.elapsed();
        wait_count(&seen, 20_000, pid, &mut max_rss).await;
        let all = t.elapsed();
        let rate = 20_000.0 / all.as_secs_f64();
        println!(
            "  20,000 events: enqueued in {:.2} s, all delivered after {:.2} s: {rate:.0} deliveries/s",
            enqueued.as_secs_f64(),
            all.as_secs_f64()
        );

        // 2. Steady load: 200 events/s for 10 s, one event per request.
        seen.latencies.lock().unwrap().clear();
        let before = seen.count.load(Ordering::SeqCst);
        let mut tick = tokio::time::interval(Duration::from_millis(5));
        for _ in 0..2000 {
            tick.tick().await;
            assert!(emit(1).await.unwrap().status().is_success());
        }
        wait_count(&seen, before + 2000, pid, &mut max_rss).await;
        let mut lat = seen.latencies.lock().unwrap().clone();
        lat.sort_unstable();
        println!(
            "  200 events/s for 10 s: enqueue-to-delivery p50 {:.1} ms, p99 {:.1} ms",
            pct(&lat, 0.5),
            pct(&lat, 0.99)
        );

        // 3. 100,000 events queued behind a receiver that holds its requests.
        let idle = rss_mib(pid);
        let gate = Arc::new(Semaphore::new(0));
        *seen.gate.lock().unwrap() = Some(gate.clone());
        let before = seen.count.load(Ordering::SeqCst);
        assert!(emit(100_000).await.unwrap().status().is_success());
        tokio::time::sleep(Duration::from_secs(2)).await;
        let backlog = rss_mib(pid);
        gate.add_permits(Semaphore::MAX_PERMITS);
        let t = Instant::now();
        let mut drain_max = backlog;
        wait_count(&seen, before + 100_000, pid, &mut drain_max).await;
        let rate = 100_000.0 / t.elapsed().as_secs_f64();
        println!(
            "  RSS: {idle:.1} MiB before, {backlog:.1} MiB with 100,000 queued, at most {drain_max:.1} MiB \
             while draining them ({rate:.0} deliveries/s); at most {max_rss:.1} MiB in phases 1-2"
        );
    }
}

/// Store administration (issue 6): lists and the pending badge on a store holding 100,000
/// reviews and 100,000 orders, and order creation (stock reserved, `orders.created`
/// recorded and its delivery enqueued for a subscribed webhook).
mod admin {
    use std::time::Instant;

    use serde_json::{Value, json};

    use super::{Call, Scenario};

    /// The last scenario: order creation once a webhook subscribes to `orders.created`.
    pub const WITH_WEBHOOK: &str = "POST orders + webhook";

    /// A webhook to subscribe before [`WITH_WEBHOOK`] runs.
    pub struct Hook {
        token: String,
        path: String,
    }

    impl Hook {
        /// Starts a receiver answering 200 and subscribes it to `orders.created`, so each
        /// new order also enqueues a delivery that is then made during the measurement.
        pub async fn subscribe(&self, client: &reqwest::Client, base: &str) {
            let app = axum::Router::new().route("/hook", axum::routing::post(|| async { "ok" }));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/hook", listener.local_addr().unwrap());
            tokio::spawn(async move { axum::serve(listener, app).await });
            post(
                client,
                base,
                &self.token,
                &self.path,
                json!({"url": url, "events": ["orders.created"]}),
            )
            .await;
        }
    }

    pub const SCENARIOS: [&str; 7] = [
        "GET reviews limit=50",
        "GET orders limit=50",
        "GET reviews limit=1",
        "GET orders limit=1",
        "GET pending-review badge",
        "POST orders",
        WITH_WEBHOOK,
    ];

    async fn post(
        client: &reqwest::Client,
        base: &str,
        token: &str,
        path: &str,
        body: Value,
    ) -> Value {
        let r = client
            .post(format!("{base}{path}"))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.status());
        r.json().await.unwrap_or(Value::Null)
    }

    /// A fresh store with a catalog, customers, a webhook on `orders.created`, and the
    /// 100,000 orders and reviews; returns the scenarios to run on it.
    pub async fn prepare(
        client: &reqwest::Client,
        base: &str,
        session: &str,
    ) -> (Vec<Scenario>, Hook) {
        let (store, token) = super::store_token(client, base, session, "Admin").await;
        let p = format!("/v1/stores/{store}");
        let mut variants = Vec::new();
        for n in 0..10 {
            let product = post(client, base, &token, &format!("{p}/products"), json!({
                "title": format!("Product {n}"),
                "variants": [
                    {"sku": format!("P{n}-S"), "price_cents": 1990 + n, "on_hand": 100_000_000},
                    {"sku": format!("P{n}-M"), "price_cents": 2990 + n, "on_hand": 100_000_000}],
            }))
            .await;
            for v in product["variants"].as_array().unwrap() {
                variants.push(v["id"].as_str().unwrap().to_owned());
            }
        }
        let customer = post(
            client,
            base,
            &token,
            &format!("{p}/customers"),
            json!({"name": "Bench Buyer", "email": "buyer@example.com"}),
        )
        .await;
        for n in 0..20 {
            post(
                client,
                base,
                &token,
                &format!("{p}/customers"),
                json!({"name": format!("Customer {n}")}),
            )
            .await;
        }
        let hook = Hook {
            token: token.clone(),
            path: format!("{p}/webhooks"),
        };

        let t = Instant::now();
        post(
            client,
            base,
            &token,
            &format!("/v1/_bench/stores/{store}/seed"),
            json!({"orders": 100_000, "reviews": 100_000}),
        )
        .await;
        println!(
            "    (seeded 100,000 orders and 100,000 reviews in {:.1} s)",
            t.elapsed().as_secs_f64()
        );

        let get = |path: String| Call {
            bearer: Some(token.clone()),
            ..Call::get(&path)
        };
        let new_order = Call {
            method: reqwest::Method::POST,
            path: format!("{p}/orders"),
            bearer: Some(token.clone()),
            body: Some(
                json!({"customer_id": customer["id"], "shipping_cents": 1000,
                "items": [{"variant_id": variants[3], "quantity": 1},
                          {"variant_id": variants[8], "quantity": 2}]}),
            ),
        };
        let scenario = |name: &'static str, call: Call| Scenario {
            name,
            call,
            connections: None,
            background: None,
        };
        let scenarios = vec![
            scenario(SCENARIOS[0], get(format!("{p}/reviews?limit=50"))),
            scenario(SCENARIOS[1], get(format!("{p}/orders?limit=50"))),
            scenario(SCENARIOS[2], get(format!("{p}/reviews?limit=1"))),
            scenario(SCENARIOS[3], get(format!("{p}/orders?limit=1"))),
            scenario(
                SCENARIOS[4],
                get(format!(
                    "{p}/reviews?status=pending&limit=1&include_total=true"
                )),
            ),
            scenario(SCENARIOS[5], new_order.clone()),
            scenario(SCENARIOS[6], new_order),
        ];
        (scenarios, hook)
    }
}
