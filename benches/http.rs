//! Load benchmark: starts the release `merchant-admin serve` on loopback with a fresh data
//! directory and drives each scenario with N keep-alive connections for a fixed time,
//! printing requests/s, p50 and p99. Figures go into README.md; nothing here asserts speed.
//!
//! `cargo bench --bench http -- [--seconds 10] [--connections 64] [--only NAME]`
//! (`--only docs`: the documentation questions phase on a server of its own; `--only backup`:
//! a 1 GiB database backed up under a write load, never part of the full run; `--only totals`:
//! list totals on 100,000 and 1,000,000 orders and reviews, never part of the full run either)
//!
//! The server logs every request at info level (to /dev/null), as in production; rate
//! limits and the sign-in lockout are raised so they do not shape the load.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "http/assistant.rs"]
mod assistant;
#[path = "http/backup.rs"]
mod backup;
#[path = "http/totals.rs"]
mod totals;

const BIN: &str = env!("CARGO_BIN_EXE_merchant-admin");
const PASSWORD: &str = "benchmark password";

/// One kind of request a scenario sends over and over.
#[derive(Clone)]
struct Call {
    method: reqwest::Method,
    path: String,
    bearer: Option<String>,
    body: Option<Value>,
    /// Further request headers (a storefront cart's `X-Cart-Token`).
    headers: Vec<(&'static str, String)>,
    /// When not empty, connection `i` sends `per_connection[i % len]` instead (one cart per
    /// connection: a cart line holds at most 10,000 units).
    per_connection: Vec<Call>,
}

impl Call {
    fn get(path: &str) -> Self {
        Self {
            method: reqwest::Method::GET,
            path: path.into(),
            bearer: None,
            body: None,
            headers: Vec::new(),
            per_connection: Vec::new(),
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
    /// Idle sockets for the socket phase.
    sockets: usize,
    /// `--totals-small`: the totals phase stops after 100,000 rows (a slow build's A/B).
    totals_small: bool,
}

fn parse_args() -> Args {
    let mut a = Args {
        seconds: 10,
        connections: 64,
        only: None,
        sockets: sockets::MANY,
        totals_small: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seconds" => a.seconds = it.next().and_then(|v| v.parse().ok()).unwrap_or(10),
            "--connections" => a.connections = it.next().and_then(|v| v.parse().ok()).unwrap_or(64),
            "--only" => a.only = it.next(),
            "--totals-small" => a.totals_small = true,
            "--sockets" => {
                a.sockets = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(sockets::MANY);
            }
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

fn start_server(data_dir: &std::path::Path, model_base: &str) -> (Server, String) {
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
        // Plan limits do not shape the load either: 100,000 seeded orders are past any
        // built-in plan's month.
        .arg("--plans-file")
        .arg(bench_plans(data_dir))
        // The assistant phase's fake model listens on loopback.
        .args([
            "--assistant-provider",
            "openai",
            "--assistant-model",
            "bench",
        ])
        .args(["--assistant-api-base", model_base])
        .args(["--assistant-monthly-cap", "1000000000"])
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

/// A POST with a bearer token that must succeed (setting up a phase); its JSON body.
async fn post(client: &reqwest::Client, base: &str, token: &str, path: &str, body: Value) -> Value {
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

/// The 1, 5 and 15-minute load averages, printed beside figures taken on a shared machine.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A one-plan catalog with limits no phase reaches, written into the data directory.
fn bench_plans(data_dir: &std::path::Path) -> std::path::PathBuf {
    let path = data_dir.join("bench-plans.toml");
    let plans = r#"default = "bench"

[[plans]]
code = "bench"
name = "Bench"
monthly_price_cents = 100
annual_price_cents = 1000
limits = { stores = 1000000, members_per_store = 1000000, products = 1000000000, orders_per_month = 1000000000, assistant_messages_per_store_per_month = 1000000000 }
"#;
    std::fs::write(&path, plans).expect("write the benchmark's plans file");
    path
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
    for (name, value) in &call.headers {
        req = req.header(*name, value);
    }
    match req.send().await {
        Ok(r) if r.status().is_success() => r.bytes().await.is_ok(),
        Ok(r) => {
            // The first refusal is shown, so a scenario that only fails says why.
            static SHOWN: std::sync::Once = std::sync::Once::new();
            let status = r.status();
            let body = r.text().await.unwrap_or_default();
            SHOWN.call_once(|| eprintln!("    (first error: {status} {body:.300})"));
            false
        }
        Err(_) => false,
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
    for i in 0..connections {
        let call = if call.per_connection.is_empty() {
            call.clone()
        } else {
            call.per_connection[i % call.per_connection.len()].clone()
        };
        let (client, base) = (client.clone(), base.clone());
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
        ..Call::get("/v1/auth/login")
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
    // 10,000 sockets in this process (and, inherited, in a server that does not raise its
    // own limit: another build measured A/B).
    rlimit::increase_nofile_limit(u64::MAX).expect("raise the open-files limit");
    let dir = tempfile::tempdir().unwrap();
    let (model_listener, model_base) = assistant::bind();
    let (server, base) = start_server(dir.path(), &model_base);
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
    rt.spawn(assistant::serve(model_listener));
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
    // `--only storefront` runs the storefront phase (issue 19).
    let wanted_storefront = |name: &str| args.only.as_deref() == Some("storefront") || wanted(name);
    if storefront::SCENARIOS.iter().any(|n| wanted_storefront(n)) {
        let scenarios = rt.block_on(storefront::prepare(&client, &base, &token));
        for s in scenarios.iter().filter(|s| wanted_storefront(s.name)) {
            report(s, &rt.block_on(run(s, &client, &base, &args)), &args);
        }
    }
    // `--only analytics` runs the analytics phase (issue 20).
    let wanted_analytics = |name: &str| args.only.as_deref() == Some("analytics") || wanted(name);
    if analytics::SCENARIOS.iter().any(|n| wanted_analytics(n)) {
        let scenarios = rt.block_on(analytics::prepare(&client, &base, &token));
        for s in scenarios.iter().filter(|s| wanted_analytics(s.name)) {
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
    if args.only.as_deref().is_none_or(|o| o == "assistant") {
        rt.block_on(assistant::run(&client, &base, &model_base, &token));
    }
    if args.only.as_deref().is_none_or(|o| o == "docs") {
        rt.block_on(docs::run(&client, args.seconds));
    }
    // Not in the full run: it seeds a million orders and reviews (`--only totals`).
    if args.only.as_deref() == Some("totals") {
        totals::run(&rt, &client, &base, &args, &token);
    }
    // Not in the full run: it writes a gigabyte (`--only backup`).
    if args.only.as_deref() == Some("backup") {
        rt.block_on(backup::run(&client, args.seconds));
    }
    if args.only.as_deref().is_none_or(|o| o == "sockets") {
        rt.block_on(sockets::run(
            &client,
            &base,
            &token,
            server.0.id(),
            args.sockets,
        ));
    }
}

/// The resident memory of process `pid`, MiB.
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

/// Webhook delivery (issues 5 and 22): throughput and server CPU per delivery of a
/// 20,000-event burst, enqueue-to-arrival latency at a steady 500 events/s, and the server's
/// RSS with 100,000 events queued.
mod webhooks {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use axum::extract::State;
    use serde_json::{Value, json};
    use tokio::sync::Semaphore;

    use super::rss_mib;

    /// Events of the burst.
    const BURST: usize = 20_000;
    /// The steady phase: events per second, for how long.
    const RATE: u64 = 500;
    const STEADY_SECS: u64 = 10;

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

    /// Starts the receiver on a runtime of its own (two threads), so that the load
    /// generator's one thread does not limit it; hyper keeps each connection alive.
    /// Returns its URL. It lives as long as the process.
    fn start_receiver(seen: Arc<Seen>) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(seen);
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("bench-receiver")
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await
            })
        });
        url
    }

    async fn wait_count(seen: &Seen, n: usize, pid: u32, max_rss: &mut f64) {
        while seen.count.load(Ordering::SeqCst) < n {
            tokio::time::sleep(Duration::from_millis(20)).await;
            *max_rss = max_rss.max(rss_mib(pid));
        }
    }

    fn pct(sorted: &[u64], p: f64) -> f64 {
        let d: Vec<Duration> = sorted.iter().map(|us| Duration::from_micros(*us)).collect();
        super::pct(&d, p)
    }

    /// The CPU time (user and system) process `pid` has used, from `/proc/<pid>/stat`.
    fn cpu_time(pid: u32) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The fields after the command name (which may hold spaces and parentheses); utime
        // and stime are the 14th and 15th of the line, the 12th and 13th of these.
        let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        // Linux reports these in USER_HZ, 100 per second on every architecture it runs on.
        Duration::from_millis((ticks(11) + ticks(12)) * 10)
    }

    fn loadavg() -> String {
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .unwrap_or("?")
            .to_owned()
    }

    #[expect(clippy::cast_precision_loss, reason = "rates and averages")]
    fn per_delivery_us(cpu: Duration, n: usize) -> f64 {
        cpu.as_secs_f64() * 1e6 / n as f64
    }

    pub async fn run(client: &reqwest::Client, base: &str, token: &str, store: &str, pid: u32) {
        let seen = Arc::new(Seen::default());
        let url = start_receiver(seen.clone());
        let r = client
            .post(format!("{base}/v1/stores/{store}/webhooks"))
            .bearer_auth(token)
            .json(&json!({"url": url, "events": ["orders.created"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "create the webhook");
        let emit = |count: usize| {
            client
                .post(format!("{base}/v1/_bench/stores/{store}/events"))
                .bearer_auth(token)
                .json(&json!({"event": "orders.created", "count": count}))
                .send()
        };
        let mut max_rss = rss_mib(pid);
        println!(
            "\nwebhook delivery (one keep-alive receiver answering 200 on loopback; load average {})",
            loadavg()
        );

        // 1. A burst of 20,000 events; the server's CPU time over it, enqueueing included.
        let (t, cpu) = (Instant::now(), cpu_time(pid));
        assert!(emit(BURST).await.unwrap().status().is_success());
        let (enqueued, cpu_enqueued) = (t.elapsed(), cpu_time(pid) - cpu);
        wait_count(&seen, BURST, pid, &mut max_rss).await;
        let (all, cpu_all) = (t.elapsed(), cpu_time(pid) - cpu);
        #[expect(clippy::cast_precision_loss, reason = "a rate")]
        let rate = BURST as f64 / all.as_secs_f64();
        println!(
            "  {BURST} events: enqueued in {:.2} s, all delivered after {:.2} s: {rate:.0} deliveries/s; \
             server CPU {:.0} µs per delivery ({:.0} µs of it enqueueing), load average {}",
            enqueued.as_secs_f64(),
            all.as_secs_f64(),
            per_delivery_us(cpu_all, BURST),
            per_delivery_us(cpu_enqueued, BURST),
            loadavg()
        );

        // 2. Steady load: 500 events/s for 10 s, one event per request.
        seen.latencies.lock().unwrap().clear();
        let before = seen.count.load(Ordering::SeqCst);
        let n = usize::try_from(RATE * STEADY_SECS).unwrap();
        let cpu = cpu_time(pid);
        let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / RATE));
        for _ in 0..n {
            tick.tick().await;
            assert!(emit(1).await.unwrap().status().is_success());
        }
        wait_count(&seen, before + n, pid, &mut max_rss).await;
        let cpu = cpu_time(pid) - cpu;
        let mut lat = seen.latencies.lock().unwrap().clone();
        lat.sort_unstable();
        println!(
            "  {RATE} events/s for {STEADY_SECS} s: enqueue-to-arrival p50 {:.1} ms, p99 {:.1} ms; \
             server CPU {:.0} µs per event (its request and its delivery), load average {}",
            pct(&lat, 0.5),
            pct(&lat, 0.99),
            per_delivery_us(cpu, n),
            loadavg()
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

    use serde_json::json;

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

    use super::post;

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
            ..Call::get("")
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

/// Analytics (issue 20): a store with 100,000 orders over 92 days; its 90-day summary by
/// day and its top products over the same days.
mod analytics {
    use std::time::Instant;

    use serde_json::{Value, json};

    use super::{Call, Scenario};

    pub const SCENARIOS: [&str; 2] = ["analytics summary 90 days", "analytics top-products 90d"];

    use super::post;

    pub async fn prepare(client: &reqwest::Client, base: &str, session: &str) -> Vec<Scenario> {
        let (store, token) = super::store_token(client, base, session, "Analytics").await;
        let p = format!("/v1/stores/{store}");
        for n in 0..40 {
            post(client, base, &token, &format!("{p}/products"), json!({
                "title": format!("Product {n}"),
                "variants": [
                    {"sku": format!("A{n}-S"), "price_cents": 1990 + 10 * n, "on_hand": 100_000_000},
                    {"sku": format!("A{n}-M"), "price_cents": 2990 + 10 * n, "on_hand": 100_000_000}],
            }))
            .await;
        }
        for n in 0..50 {
            post(
                client,
                base,
                &token,
                &format!("{p}/customers"),
                json!({"name": format!("Customer {n}")}),
            )
            .await;
        }
        let t = Instant::now();
        // 80 s apart: 100,000 orders over 92.6 days, ending now.
        post(
            client,
            base,
            &token,
            &format!("/v1/_bench/stores/{store}/seed"),
            json!({"orders": 100_000, "reviews": 0, "spacing_seconds": 80}),
        )
        .await;
        println!(
            "    (seeded 100,000 orders over 92 days in {:.1} s)",
            t.elapsed().as_secs_f64()
        );
        let today = chrono::Utc::now().date_naive();
        let from = today - chrono::Duration::days(89);
        let range = format!("from={from}&to={today}");
        let get = |path: String| Call {
            bearer: Some(token.clone()),
            ..Call::get(&path)
        };
        // What the summary answers, so a broken seed shows rather than a fast empty answer.
        let body: Value = client
            .get(format!("{base}{p}/analytics/summary?{range}"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        println!(
            "    (90-day summary: {} orders, {} cents, {} days)",
            body["totals"]["orders"],
            body["totals"]["revenue_cents"],
            body["series"].as_array().map_or(0, Vec::len)
        );
        let scenario = |name: &'static str, call: Call| Scenario {
            name,
            call,
            connections: None,
            background: None,
        };
        vec![
            scenario(
                SCENARIOS[0],
                get(format!("{p}/analytics/summary?{range}&interval=day")),
            ),
            scenario(
                SCENARIOS[1],
                get(format!("{p}/analytics/top-products?{range}&limit=50")),
            ),
        ]
    }
}

/// The storefront API (issue 19): a shopper's product list on a 1,000-product catalog, and
/// adding to a cart (one cart per connection), both anonymous, named by the store's key.
mod storefront {
    use std::time::Instant;

    use serde_json::{Value, json};

    use super::{Call, Scenario};

    pub const SCENARIOS: [&str; 2] = ["storefront products limit=50", "storefront cart add-item"];

    use super::post;

    /// A fresh store with 1,000 active products and a chat channel; 64 open carts.
    pub async fn prepare(client: &reqwest::Client, base: &str, session: &str) -> Vec<Scenario> {
        let (store, token) = super::store_token(client, base, session, "Storefront").await;
        let p = format!("/v1/stores/{store}");
        let channel = post(
            client,
            base,
            &token,
            &format!("{p}/channels"),
            json!({"kind": "storefront_chat", "name": "Shop"}),
        )
        .await;
        let key = channel["key"].as_str().expect("a chat key").to_owned();
        let t = Instant::now();
        let (mut variant, products) = (String::new(), format!("{p}/products"));
        for chunk in 0..50 {
            let made = futures::future::join_all((0..20).map(|i| {
                let n = chunk * 20 + i;
                post(client, base, &token, &products, json!({
                    "title": format!("Product {n}"),
                    "description": "A product of the benchmark's catalog.",
                    "variants": [
                        {"sku": format!("SF{n}-S"), "price_cents": 1990 + n, "on_hand": 100_000_000},
                        {"sku": format!("SF{n}-M"), "price_cents": 2990 + n, "on_hand": 0}],
                }))
            }))
            .await;
            if variant.is_empty() {
                variant = made[0]["variants"][0]["id"].as_str().unwrap().to_owned();
            }
        }
        println!(
            "    (created 1,000 products in {:.1} s)",
            t.elapsed().as_secs_f64()
        );
        let front = format!("/v1/storefront-api/{key}");
        let mut carts = Vec::new();
        for _ in 0..64 {
            let r: Value = client
                .post(format!("{base}{front}/carts"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            carts.push(Call {
                method: reqwest::Method::POST,
                body: Some(json!({"variant_id": variant, "quantity": 1})),
                headers: vec![("x-cart-token", r["token"].as_str().unwrap().to_owned())],
                ..Call::get(&format!(
                    "{front}/carts/{}/items",
                    r["id"].as_str().unwrap()
                ))
            });
        }
        let add = Call {
            per_connection: carts.clone(),
            ..carts[0].clone()
        };
        let scenario = |name: &'static str, call: Call| Scenario {
            name,
            call,
            connections: None,
            background: None,
        };
        vec![
            scenario(
                SCENARIOS[0],
                Call::get(&format!("{front}/products?limit=50")),
            ),
            scenario(SCENARIOS[1], add),
        ]
    }
}

/// Realtime sockets (issue 15): the server's memory per idle team socket, the time from a
/// sent message's response to its `message:new` on every socket of the store, and the rate
/// at which messages can be sent while sockets listen.
///
/// The sockets are read on the harness's one-thread runtime; messages are sent from a
/// thread of their own, so the time a POST returns is not held up by the readers. A frame's
/// arrival is when its reader got to it: the figures include the client's own delay.
mod sockets {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use futures::StreamExt;
    use serde_json::{Value, json};
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

    /// Idle sockets opened for the memory figure and the larger latency run (`--sockets N`
    /// for another count; at most [`FEW`] skips the larger run).
    pub const MANY: usize = 10_000;
    /// Sockets kept for the smaller latency run and the send rate.
    const FEW: usize = 1_000;
    /// Handshakes in flight at once while opening them.
    const OPENING: usize = 200;
    /// Conversations the send-rate phase spreads its messages over.
    const CONVERSATIONS: usize = 8;

    /// What every client socket adds to.
    #[derive(Default)]
    struct Totals {
        /// `message:new` frames received.
        delivered: AtomicUsize,
        resyncs: AtomicUsize,
        closed: AtomicUsize,
        /// Whether each socket keeps (message id, arrival) pairs (the latency runs).
        record: AtomicBool,
    }

    /// One client socket: its reader task and what it recorded.
    struct Client {
        arrivals: Arc<Mutex<Vec<(u128, Instant)>>>,
        reader: tokio::task::JoinHandle<()>,
    }

    impl Drop for Client {
        fn drop(&mut self) {
            self.reader.abort(); // drops the stream: the server sees the socket close
        }
    }

    /// The id of a `message:new` frame's message, without parsing the rest of it (the
    /// envelope's `data` is the message, whose first field is its id).
    fn message_id(text: &str) -> Option<u128> {
        if !text.starts_with(r#"{"type":"message:new""#) {
            return None;
        }
        let at = text.find(r#""data":{"id":""#)? + r#""data":{"id":""#.len();
        uuid::Uuid::parse_str(text.get(at..at + 36)?)
            .ok()
            .map(|u| u.as_u128())
    }

    async fn open(url: String, auth: Arc<str>, totals: Arc<Totals>) -> Result<Client, String> {
        let mut req = url.into_client_request().map_err(|e| e.to_string())?;
        req.headers_mut()
            .insert("authorization", auth.parse().map_err(|_| "header")?);
        // Small client buffers too: 10,000 of them live in this process.
        let cfg = WebSocketConfig::default()
            .read_buffer_size(8192)
            .write_buffer_size(0);
        let (mut ws, _) = tokio_tungstenite::connect_async_with_config(req, Some(cfg), true)
            .await
            .map_err(|e| e.to_string())?;
        match ws.next().await {
            Some(Ok(Message::Text(t))) if t.contains(r#""type":"hello""#) => {}
            other => return Err(format!("no hello: {other:?}")),
        }
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let mine = arrivals.clone();
        // Reading is what answers the server's pings (the library queues the pong).
        let reader = tokio::spawn(async move {
            while let Some(frame) = ws.next().await {
                let Ok(Message::Text(t)) = frame else {
                    if frame.is_err() {
                        break;
                    }
                    continue;
                };
                if let Some(id) = message_id(&t) {
                    let at = Instant::now();
                    if totals.record.load(Ordering::Relaxed) {
                        mine.lock().unwrap().push((id, at));
                    }
                    totals.delivered.fetch_add(1, Ordering::Relaxed);
                } else if t.starts_with(r#"{"type":"resync""#) {
                    totals.resyncs.fetch_add(1, Ordering::Relaxed);
                }
            }
            totals.closed.fetch_add(1, Ordering::Relaxed);
        });
        Ok(Client { arrivals, reader })
    }

    /// Opens `n` team sockets on the store, `OPENING` handshakes at a time.
    async fn open_many(
        n: usize,
        url: &str,
        auth: &Arc<str>,
        totals: &Arc<Totals>,
    ) -> (Vec<Client>, usize) {
        let results: Vec<Result<Client, String>> = futures::stream::iter(0..n)
            .map(|_| open(url.to_owned(), auth.clone(), totals.clone()))
            .buffer_unordered(OPENING)
            .collect()
            .await;
        let mut failed = 0;
        let mut open = Vec::with_capacity(n);
        for r in results {
            match r {
                Ok(c) => open.push(c),
                Err(e) => {
                    if failed == 0 {
                        println!("    (a socket failed to open: {e})");
                    }
                    failed += 1;
                }
            }
        }
        (open, failed)
    }

    async fn post(client: &reqwest::Client, url: &str, token: &str, body: &Value) -> Value {
        let r = client
            .post(url)
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{url}: {}", r.status());
        r.json().await.unwrap_or(Value::Null)
    }

    /// Runs `work` on a thread and runtime of its own (the sender), so the socket readers
    /// on the harness's runtime neither delay it nor are delayed by it.
    async fn on_sender<T: Send + 'static>(
        work: impl FnOnce(reqwest::Client) -> std::pin::Pin<Box<dyn Future<Output = T> + Send>>
        + Send
        + 'static,
    ) -> T {
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let client = reqwest::Client::builder()
                .no_proxy()
                .pool_max_idle_per_host(64)
                .build()
                .unwrap();
            rt.block_on(work(client))
        });
        tokio::task::spawn_blocking(move || thread.join().unwrap())
            .await
            .unwrap()
    }

    /// Waits until the sockets have received `expected` messages in all, or `limit` has
    /// passed since the last one arrived; when the last arrived.
    async fn wait_delivered(totals: &Totals, expected: usize, limit: Duration) -> Instant {
        let (mut last, mut seen) = (Instant::now(), totals.delivered.load(Ordering::SeqCst));
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let now = totals.delivered.load(Ordering::SeqCst);
            if now != seen {
                (seen, last) = (now, Instant::now());
            }
            if now >= expected || last.elapsed() > limit {
                return last;
            }
        }
    }

    /// Sends `count` messages one by one, `every` apart, and measures for each (message,
    /// socket) the time from the POST's response to the frame's arrival.
    #[expect(clippy::too_many_arguments, reason = "a benchmark step")]
    async fn latency(
        label: &str,
        sockets: &[Client],
        totals: &Arc<Totals>,
        url: String,
        token: Arc<str>,
        count: usize,
        every: Duration,
        load: &dyn Fn() -> String,
    ) {
        for s in sockets {
            s.arrivals.lock().unwrap().clear();
        }
        totals.record.store(true, Ordering::SeqCst);
        let before = totals.delivered.load(Ordering::SeqCst);
        let (resyncs, closed) = (
            totals.resyncs.load(Ordering::SeqCst),
            totals.closed.load(Ordering::SeqCst),
        );
        let sending = Instant::now();
        let sent: Vec<(u128, Instant)> = on_sender(move |client| {
            Box::pin(async move {
                let mut sent = Vec::with_capacity(count);
                let mut tick = tokio::time::interval(every);
                for k in 0..count {
                    tick.tick().await;
                    let r = post(
                        &client,
                        &url,
                        &token,
                        &json!({"text": format!("latency {k}")}),
                    )
                    .await;
                    let t0 = Instant::now();
                    let id = uuid::Uuid::parse_str(r["message"]["id"].as_str().unwrap())
                        .unwrap()
                        .as_u128();
                    sent.push((id, t0));
                }
                sent
            })
        })
        .await;
        let sending = sending.elapsed();
        let expected = count * sockets.len();
        wait_delivered(totals, before + expected, Duration::from_secs(10)).await;
        totals.record.store(false, Ordering::SeqCst);

        let t0: HashMap<u128, Instant> = sent.into_iter().collect();
        let (mut lat, mut early) = (Vec::with_capacity(expected), 0usize);
        for s in sockets {
            for (id, at) in s.arrivals.lock().unwrap().drain(..) {
                if let Some(t) = t0.get(&id) {
                    // Before the response was read: counted as 0.
                    if at < *t {
                        early += 1;
                    }
                    lat.push(at.saturating_duration_since(*t));
                }
            }
        }
        lat.sort_unstable();
        println!(
            "  {label}: {count} messages {} ms apart (sent in {:.1} s) to {} sockets: p50 {:.1} \
             ms, p99 {:.1} ms, max {:.1} ms over {} of {expected} deliveries ({early} before \
             the response: 0); resyncs {}, closed {} [{}]",
            every.as_millis(),
            sending.as_secs_f64(),
            sockets.len(),
            super::pct(&lat, 0.50),
            super::pct(&lat, 0.99),
            lat.last().map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0),
            lat.len(),
            totals.resyncs.load(Ordering::SeqCst) - resyncs,
            totals.closed.load(Ordering::SeqCst) - closed,
            load()
        );
    }

    /// Sends from `connections` concurrent connections for `seconds` over the
    /// conversations, then waits for the sockets to have every message.
    async fn send_rate(
        sockets: usize,
        totals: &Arc<Totals>,
        urls: Vec<String>,
        token: Arc<str>,
        (connections, seconds): (usize, u64),
        load: &dyn Fn() -> String,
    ) {
        let before = totals.delivered.load(Ordering::SeqCst);
        let resyncs = totals.resyncs.load(Ordering::SeqCst);
        let started = Instant::now();
        let (sent, errors, elapsed) = on_sender(move |client| {
            Box::pin(async move {
                let until = Instant::now() + Duration::from_secs(seconds);
                let urls = Arc::new(urls);
                let mut tasks = Vec::new();
                for c in 0..connections {
                    let (client, urls, token) = (client.clone(), urls.clone(), token.clone());
                    tasks.push(tokio::spawn(async move {
                        let (mut ok, mut errors, mut k) = (0usize, 0usize, c);
                        while Instant::now() < until {
                            let r = client
                                .post(&urls[k % urls.len()])
                                .bearer_auth(&*token)
                                .json(&json!({"text": "rate"}))
                                .send()
                                .await;
                            match r {
                                Ok(r) if r.status().is_success() => {
                                    if r.bytes().await.is_ok() {
                                        ok += 1;
                                    } else {
                                        errors += 1;
                                    }
                                }
                                _ => errors += 1,
                            }
                            k += 1;
                        }
                        (ok, errors)
                    }));
                }
                let started = Instant::now();
                let (mut ok, mut errors) = (0, 0);
                for t in tasks {
                    let (o, e) = t.await.unwrap();
                    ok += o;
                    errors += e;
                }
                (ok, errors, started.elapsed())
            })
        })
        .await;
        let sending_done = started.elapsed();
        let expected = sent * sockets;
        let last = wait_delivered(totals, before + expected, Duration::from_secs(10)).await;
        let delivered = totals.delivered.load(Ordering::SeqCst) - before;
        #[expect(clippy::cast_precision_loss, reason = "rates")]
        let (rate, fanout) = (
            sent as f64 / elapsed.as_secs_f64(),
            delivered as f64 / (last - started).as_secs_f64(),
        );
        println!(
            "  send rate with {sockets} sockets listening: {sent} messages in {:.1} s from \
             {connections} connections = {rate:.0} messages/s ({errors} errors); the sockets \
             received {delivered} of {expected} message:new frames ({:.1} s after sending \
             ended, {fanout:.0} frames/s), resyncs {} [{}]",
            elapsed.as_secs_f64(),
            (last - started).as_secs_f64() - sending_done.as_secs_f64(),
            totals.resyncs.load(Ordering::SeqCst) - resyncs,
            load()
        );
    }

    /// The machine's load average (1 minute), for the figures' footnotes.
    fn loadavg() -> String {
        let l = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        format!("load {}", l.split_whitespace().next().unwrap_or("?"))
    }

    pub async fn run(client: &reqwest::Client, base: &str, session: &str, pid: u32, many: usize) {
        let (store, token) = super::store_token(client, base, session, "Sockets").await;
        let p = format!("{base}/v1/stores/{store}");
        let channel = post(
            client,
            &format!("{p}/channels"),
            &token,
            &json!({"kind": "storefront_chat", "name": "Bench chat"}),
        )
        .await;
        let key = channel["key"].as_str().expect("a channel key").to_owned();
        // Conversations a shopper opened and wrote in (their first message is the one that
        // announces them), for the team to answer.
        let mut urls = Vec::new();
        for n in 0..CONVERSATIONS {
            let c: Value = client
                .post(format!("{base}/v1/widget/{key}/conversations"))
                .json(&json!({}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let id = c["conversation_id"].as_str().unwrap();
            let r = client
                .post(format!(
                    "{base}/v1/widget/{key}/conversations/{id}/messages"
                ))
                .header("x-visitor-token", c["visitor_token"].as_str().unwrap())
                .json(&json!({"text": format!("hello {n}")}))
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "the shopper's message");
            urls.push(format!("{p}/conversations/{id}/messages"));
        }
        let ws = format!(
            "{}/v1/ws/conversations?store_id={store}",
            base.replacen("http", "ws", 1)
        );
        let (auth, token): (Arc<str>, Arc<str>) = (format!("Bearer {token}").into(), token.into());
        let totals = Arc::new(Totals::default());
        println!("\nrealtime sockets (team sockets on one store, one user)");

        // Open and close a few first, so what the first sockets ever allocate (buffers of
        // the allocator's threads, the runtime's) is not counted per socket.
        drop(open_many(OPENING, &ws, &auth, &totals).await);
        tokio::time::sleep(Duration::from_secs(2)).await;
        let idle = super::rss_mib(pid);
        let t = Instant::now();
        let (mut open, failed) = open_many(many, &ws, &auth, &totals).await;
        let took = t.elapsed();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let with = super::rss_mib(pid);
        #[expect(clippy::cast_precision_loss, reason = "a ratio")]
        let per = (with - idle) * 1024.0 / open.len() as f64;
        println!(
            "  {} idle sockets opened in {:.1} s ({failed} failed): server RSS {idle:.1} MiB \
             before, {with:.1} MiB with them open: {per:.1} KiB per socket [{}]",
            open.len(),
            took.as_secs_f64(),
            loadavg()
        );

        let one = urls[0].clone();
        if open.len() > FEW {
            // Spaced so that the fan-out keeps up (each message is 10,000 writes), then at
            // the pace of the smaller run, which is more than two cores can fan out.
            for every in [100, 20] {
                latency(
                    "latency",
                    &open,
                    &totals,
                    one.clone(),
                    token.clone(),
                    200,
                    Duration::from_millis(every),
                    &loadavg,
                )
                .await;
            }
        }
        open.truncate(FEW);
        tokio::time::sleep(Duration::from_secs(2)).await;
        latency(
            "latency",
            &open,
            &totals,
            one,
            token.clone(),
            200,
            Duration::from_millis(20),
            &loadavg,
        )
        .await;
        send_rate(open.len(), &totals, urls, token, (32, 10), &loadavg).await;
        drop(open);
        println!("  server RSS at the end: {:.1} MiB", super::rss_mib(pid));
    }
}

/// Documentation questions (issue 16): time to first byte of `POST /v1/docs/ask` (the
/// extractive answer, no model) at 16 connections, and what indexing the guides cost at
/// start. On a server of its own, started with its log on a pipe to read the index's log
/// line, and with the question limits raised; each visitor id asks 20 questions (its hourly
/// budget), so the per-visitor table is exercised as under real traffic.
mod docs {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use serde_json::{Value, json};

    const CONNECTIONS: usize = 16;
    /// Questions of several lengths and topics; one with no match.
    const QUESTIONS: [&str; 6] = [
        "How do I verify a webhook signature?",
        "How can I refund an order that is still pending with the payment provider?",
        "backup restore secrets.key",
        "Which flags turn on the assistant with a local Ollama model?",
        "How do I add the chat widget to my shop's pages and limit it to my domain?",
        "What is the airspeed velocity of an unladen swallow?",
    ];

    fn pct(sorted: &[Duration], p: f64) -> f64 {
        super::pct(sorted, p)
    }

    pub async fn run(client: &reqwest::Client, seconds: u64) {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let bin =
            std::env::var("MERCHANT_ADMIN_BENCH_SERVER").unwrap_or_else(|_| super::BIN.to_owned());
        let mut child = Command::new(bin)
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .args([
                "--log-format",
                "json",
                "--rate-limit-anonymous",
                "1000000000",
            ])
            .args(["--docs-daily-limit", "4000000000"])
            .arg("--data-dir")
            .arg(dir.path())
            .env("MERCHANT_ADMIN_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the release binary");
        let pid = child.id();
        // The log is read to its end on a thread of its own, so the server never blocks on
        // a full pipe; the index's line is handed back.
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("documentation index built")
                    && let Ok(v) = serde_json::from_str::<Value>(&line)
                {
                    let _ = tx.send(v["fields"].clone());
                }
            }
        });
        let built = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the server logs the documentation index");
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        #[expect(clippy::cast_precision_loss, reason = "a size")]
        let kib = |f: &str| built[f].as_u64().unwrap_or(0) as f64 / 1024.0;
        println!(
            "\ndocumentation questions\n  index built at start in {} ms: {} passages, index \
             {:.1} KiB + passage text {:.1} KiB; RSS grew {:.1} MiB meanwhile; server RSS \
             {:.1} MiB once listening [{}]",
            built["build_ms"],
            built["passages"],
            kib("index_bytes"),
            kib("passage_bytes"),
            kib("rss_growth_bytes") / 1024.0,
            super::rss_mib(pid),
            loadavg()
        );

        // Warm up connections, then measure.
        for i in 0..50 {
            ask(client, &base, &format!("warm-{}", i / 20), QUESTIONS[i % 6]).await;
        }
        let until = Instant::now() + Duration::from_secs(seconds);
        let started = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..CONNECTIONS {
            let (client, base) = (client.clone(), base.clone());
            tasks.push(tokio::spawn(async move {
                let (mut first, mut whole, mut errors) = (Vec::new(), Vec::new(), 0usize);
                let mut n = 0usize;
                while Instant::now() < until {
                    let visitor = format!("c{c}-{}", n / 20);
                    match ask(&client, &base, &visitor, QUESTIONS[n % QUESTIONS.len()]).await {
                        Some((f, w)) => {
                            first.push(f);
                            whole.push(w);
                        }
                        None => errors += 1,
                    }
                    n += 1;
                }
                (first, whole, errors)
            }));
        }
        let (mut first, mut whole, mut errors) = (Vec::new(), Vec::new(), 0);
        for t in tasks {
            let (f, w, e) = t.await.unwrap();
            first.extend(f);
            whole.extend(w);
            errors += e;
        }
        let elapsed = started.elapsed();
        first.sort_unstable();
        whole.sort_unstable();
        #[expect(clippy::cast_precision_loss, reason = "a rate")]
        let rate = first.len() as f64 / elapsed.as_secs_f64();
        println!(
            "  POST /v1/docs/ask, {CONNECTIONS} connections, {seconds} s: {} answers \
             ({rate:.0}/s, {errors} errors); first byte p50 {:.2} / p99 {:.2} / max {:.2} ms; \
             whole answer p50 {:.2} / p99 {:.2} ms; server RSS after {:.1} MiB [{}]",
            first.len(),
            pct(&first, 0.50),
            pct(&first, 0.99),
            pct(&first, 1.0),
            pct(&whole, 0.50),
            pct(&whole, 0.99),
            super::rss_mib(pid),
            loadavg()
        );
        let _ = child.kill();
        let _ = child.wait();
    }

    /// One question: the time to the first byte of the body, and to its end. None unless
    /// it answered 200 with a stream ending `[DONE]`.
    async fn ask(
        client: &reqwest::Client,
        base: &str,
        visitor: &str,
        question: &str,
    ) -> Option<(Duration, Duration)> {
        let t = Instant::now();
        let mut res = client
            .post(format!("{base}/v1/docs/ask"))
            .json(&json!({"question": question, "visitor_id": visitor}))
            .send()
            .await
            .ok()?;
        if res.status() != 200 {
            return None;
        }
        let mut body = res.chunk().await.ok()??.to_vec();
        let first = t.elapsed();
        while let Some(more) = res.chunk().await.ok()? {
            body.extend_from_slice(&more);
        }
        body.ends_with(b"data: [DONE]\n\n")
            .then_some((first, t.elapsed()))
    }

    fn loadavg() -> String {
        let l = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        format!("load {}", l.split_whitespace().next().unwrap_or("?"))
    }
}
