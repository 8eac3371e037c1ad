//! The real binary, started on an ephemeral port as an operator runs it, for tests that
//! signal, kill and restart it.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_merchant-admin");

pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub logs: Arc<Mutex<Vec<String>>>,
}

/// Starts `merchant-admin serve` on an ephemeral port with JSON logs and waits for its
/// "listening" line (which carries the port).
pub fn start(data_dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Server {
    let mut child = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--log-format", "json"])
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .envs(envs.iter().copied())
        .env("MERCHANT_ADMIN_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start merchant-admin");
    let logs = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    let (stderr, sink) = (child.stderr.take().unwrap(), logs.clone());
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && v["fields"]["message"] == "listening"
            {
                let _ = tx.send(v["fields"]["addr"].as_str().unwrap_or_default().to_string());
            }
            sink.lock().unwrap().push(line);
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("server did not start: {:?}", logs.lock().unwrap()));
    Server {
        child,
        addr: addr.parse().unwrap(),
        logs,
    }
}

impl Server {
    pub fn sigterm(&mut self) -> std::process::ExitStatus {
        self.signal("-TERM")
    }

    pub fn signal(&mut self, sig: &str) -> std::process::ExitStatus {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        wait_exit(&mut self.child, Duration::from_secs(30))
    }

    pub fn log_lines(&self) -> Vec<Value> {
        self.logs
            .lock()
            .unwrap()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(start.elapsed() < limit, "the server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `check` until it returns true (bounded; this waits, it does not time anything).
pub fn wait_for(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Registers `a@example.com` on a server the test started as a process; the status.
pub async fn register(addr: std::net::SocketAddr) -> reqwest::StatusCode {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("http://{addr}/v1/auth/register"))
        .json(&serde_json::json!({"email": "a@example.com", "password": "correct horse battery"}))
        .send()
        .await
        .unwrap()
        .status()
}
