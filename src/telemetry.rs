//! Prometheus metrics (issue 21, "Metrics and health"): one recorder per server, held in
//! the state rather than installed globally, so two servers in one process (the test suite)
//! never mix their series. Off unless `--metrics-addr` is set: then every handle is a no-op
//! and a request pays one branch.
//!
//! Invariants: labels come from bounded sets only (route templates, never raw paths; status
//! codes; job kinds; fixed outcome names), so a client cannot grow the series without bound.

use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, Label, Metadata, Recorder};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

/// Every series starts with this.
pub const PREFIX: &str = "merchant_admin_";

/// Bucket bounds of every histogram, in seconds: from a cached read to a slow export.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

const METADATA: Metadata<'static> =
    Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));

/// The server's recorder, or nothing when metrics are off.
pub struct Metrics {
    inner: Option<(PrometheusRecorder, PrometheusHandle)>,
}

impl Metrics {
    /// A recorder when `enabled`; a no-op otherwise.
    pub fn new(enabled: bool) -> Self {
        let inner = enabled.then(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets(&BUCKETS)
                .expect("the bucket list is not empty")
                // Counts, not seconds: writes per commit, up to the batch's bound.
                .set_buckets_for_metric(
                    Matcher::Full(format!("{PREFIX}db_write_batch_size")),
                    &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0],
                )
                .expect("the bucket list is not empty")
                .build_recorder();
            let handle = recorder.handle();
            (recorder, handle)
        });
        Self { inner }
    }

    pub fn enabled(&self) -> bool {
        self.inner.is_some()
    }

    fn key(name: &str, labels: &[(&'static str, &str)]) -> Key {
        let labels: Vec<Label> = labels
            .iter()
            .map(|(k, v)| Label::new(*k, (*v).to_owned()))
            .collect();
        Key::from_parts(format!("{PREFIX}{name}"), labels)
    }

    pub fn counter(&self, name: &str, labels: &[(&'static str, &str)]) -> Counter {
        match &self.inner {
            Some((r, _)) => r.register_counter(&Self::key(name, labels), &METADATA),
            None => Counter::noop(),
        }
    }

    pub fn gauge(&self, name: &str, labels: &[(&'static str, &str)]) -> Gauge {
        match &self.inner {
            Some((r, _)) => r.register_gauge(&Self::key(name, labels), &METADATA),
            None => Gauge::noop(),
        }
    }

    pub fn histogram(&self, name: &str, labels: &[(&'static str, &str)]) -> Histogram {
        match &self.inner {
            Some((r, _)) => r.register_histogram(&Self::key(name, labels), &METADATA),
            None => Histogram::noop(),
        }
    }

    /// Counts one HTTP request and its latency, by route template and status.
    pub fn request(&self, method: &str, route: &str, status: u16, took: Duration) {
        if !self.enabled() {
            return;
        }
        // A client may send any token as its method: only the standard ones are labels.
        let method = match method {
            "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS" => method,
            _ => "other",
        };
        let status = status.to_string();
        let labels = [
            ("method", method),
            ("route", route),
            ("status", status.as_str()),
        ];
        self.counter("http_requests_total", &labels).increment(1);
        self.histogram(
            "http_request_duration_seconds",
            &[("method", method), ("route", route)],
        )
        .record(took);
    }

    /// The text exposition of every series (empty when off).
    pub fn render(&self) -> String {
        self.inner
            .as_ref()
            .map(|(_, h)| h.render())
            .unwrap_or_default()
    }

    /// Folds recent histogram samples into their buckets. Without a scrape they would pile
    /// up, so the metrics listener runs this every few seconds.
    pub fn upkeep(&self) {
        if let Some((_, h)) = &self.inner {
            h.run_upkeep();
        }
    }
}

/// The process's resident set in bytes (`VmRSS` of /proc/self/status; Linux only).
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
