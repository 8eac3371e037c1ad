//! Load benchmark: starts the release `merchant-admin serve` on loopback with a fresh data
//! directory and drives each scenario with N keep-alive connections for a fixed time,
//! printing requests/s, p50 and p99. Figures go into README.md; nothing here asserts speed.
//!
//! `cargo bench --bench http -- [--seconds 10] [--connections 64] [--only NAME]`
//!
//! The server logs every request at info level (to /dev/null), as in production; rate
//! limits are raised so the budget does not shape the load.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_merchant-admin");

struct Scenario {
    name: &'static str,
    method: reqwest::Method,
    path: &'static str,
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "GET /healthz",
            method: reqwest::Method::GET,
            path: "/healthz",
        },
        Scenario {
            name: "GET /v1/openapi/admin.json",
            method: reqwest::Method::GET,
            path: "/v1/openapi/admin.json",
        },
    ]
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
    let child = Command::new(BIN)
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

struct Result {
    requests: usize,
    errors: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

async fn run(s: &Scenario, base: &str, args: &Args) -> Result {
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(args.connections)
        .build()
        .unwrap();
    let url = Arc::new(format!("{base}{}", s.path));
    // Warm up connections and caches.
    for _ in 0..200 {
        let _ = client.request(s.method.clone(), url.as_str()).send().await;
    }
    let started = Instant::now();
    let until = started + Duration::from_secs(args.seconds);
    let mut tasks = Vec::new();
    for _ in 0..args.connections {
        let (client, url, method) = (client.clone(), url.clone(), s.method.clone());
        tasks.push(tokio::spawn(async move {
            let (mut lat, mut errors) = (Vec::with_capacity(100_000), 0usize);
            while Instant::now() < until {
                let t = Instant::now();
                match client.request(method.clone(), url.as_str()).send().await {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                        lat.push(t.elapsed());
                    }
                    _ => errors += 1,
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
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    Result {
        requests: latencies.len(),
        errors,
        elapsed,
        latencies,
    }
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

fn main() {
    let args = parse_args();
    let dir = tempfile::tempdir().unwrap();
    let (_server, base) = start_server(dir.path());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1) // one core for the load, one for the server
        .enable_all()
        .build()
        .unwrap();
    println!(
        "{:<32} {:>5} {:>9} {:>10} {:>8} {:>8} {:>6}",
        "scenario", "conns", "requests", "req/s", "p50 ms", "p99 ms", "errors"
    );
    for s in scenarios() {
        if args.only.as_deref().is_some_and(|o| !s.name.contains(o)) {
            continue;
        }
        let r = rt.block_on(run(&s, &base, &args));
        #[expect(clippy::cast_precision_loss, reason = "a rate")]
        let rps = r.requests as f64 / r.elapsed.as_secs_f64();
        println!(
            "{:<32} {:>5} {:>9} {:>10.0} {:>8.2} {:>8.2} {:>6}",
            s.name,
            args.connections,
            r.requests,
            rps,
            pct(&r.latencies, 0.50),
            pct(&r.latencies, 0.99),
            r.errors
        );
    }
}
