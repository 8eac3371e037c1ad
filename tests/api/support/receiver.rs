//! A real HTTP server standing in for a merchant's webhook receiver or an outside API
//! (svix `TestReceiver`), and the check of a delivery's signatures.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use tokio::sync::Semaphore;

use super::TestApp;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The request path, e.g. `/hook` or `/payments/{id}/refunds` (fake providers).
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The sender's address: one per connection it opened.
    pub peer: std::net::SocketAddr,
}

impl Hit {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

#[derive(Default)]
struct Inner {
    hits: Mutex<Vec<Hit>>,
    /// Statuses to answer, in order; 200 once they run out.
    script: Mutex<VecDeque<u16>>,
    /// How long to wait before answering.
    delay: Mutex<Duration>,
    /// When non-zero, the answer's body is this many bytes instead of "answered N".
    body_len: AtomicUsize,
    /// When set, every request waits for a permit before answering.
    gate: Mutex<Option<Arc<Semaphore>>>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

/// A real HTTP server standing in for a merchant's webhook receiver, or for an outside API
/// such as the payment provider: it records every POST, whatever the path.
#[derive(Clone)]
pub struct Receiver {
    /// `{base}/hook`.
    pub url: String,
    /// `http://127.0.0.1:{port}`.
    pub base: String,
    inner: Arc<Inner>,
}

async fn receive(
    State(inner): State<Arc<Inner>>,
    axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<std::net::SocketAddr>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let path = uri.path().to_owned();
    inner.hits.lock().unwrap().push(Hit {
        path,
        headers,
        body,
        peer,
    });
    let now = inner.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    inner.most_in_flight.fetch_max(now, Ordering::SeqCst);
    let gate = inner.gate.lock().unwrap().clone();
    if let Some(g) = gate {
        g.acquire().await.unwrap().forget();
    }
    let delay = *inner.delay.lock().unwrap();
    tokio::time::sleep(delay).await;
    inner.in_flight.fetch_sub(1, Ordering::SeqCst);
    let status = inner.script.lock().unwrap().pop_front().unwrap_or(200);
    let body = match inner.body_len.load(Ordering::SeqCst) {
        0 => format!("answered {status}"),
        n => "é".repeat(n / 2),
    };
    (StatusCode::from_u16(status).unwrap(), body)
}

impl Receiver {
    pub async fn start() -> Self {
        let inner = Arc::new(Inner::default());
        let app = axum::Router::new()
            .fallback(axum::routing::post(receive))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            url: format!("{base}/hook"),
            base,
            inner,
        }
    }

    /// Answers these statuses to the next requests, then 200.
    pub fn answer(&self, statuses: &[u16]) {
        self.inner.script.lock().unwrap().extend(statuses);
    }

    /// Answers with bodies of `len` bytes (multi-byte text) instead of "answered N".
    pub fn answer_bodies_of(&self, len: usize) {
        self.inner.body_len.store(len, Ordering::SeqCst);
    }

    pub fn delay(&self, d: Duration) {
        *self.inner.delay.lock().unwrap() = d;
    }

    /// Holds every request until `open` lets them through.
    pub fn hold(&self) -> Arc<Semaphore> {
        let g = Arc::new(Semaphore::new(0));
        *self.inner.gate.lock().unwrap() = Some(g.clone());
        g
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.inner.hits.lock().unwrap().clone()
    }

    pub fn most_in_flight(&self) -> usize {
        self.inner.most_in_flight.load(Ordering::SeqCst)
    }

    /// Waits (up to 20 s) until `n` requests have arrived.
    pub async fn wait_for(&self, n: usize) -> Vec<Hit> {
        for _ in 0..2000 {
            let hits = self.hits();
            if hits.len() >= n {
                return hits;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "the receiver got {} requests, expected {n}",
            self.hits().len()
        );
    }

    /// Waits for `n` webhook deliveries and gives them in the order their events were
    /// recorded. Deliveries to one endpoint run concurrently (`--webhook-endpoint-concurrency`),
    /// so, as with Stripe's, they may arrive out of order; event ids are UUIDv7, which the
    /// `uuid` crate orders by creation within a process. Retries of one event keep their
    /// arrival order.
    pub async fn events_in_order(&self, n: usize) -> Vec<Hit> {
        let mut hits = self.wait_for(n).await;
        hits.sort_by_key(|h| h.header("x-webhook-event-id").to_owned());
        hits
    }

    /// Asserts no request beyond the first `n` arrives before the test clock moves: once
    /// `app` has no job running or due, nothing more can be sent to anyone.
    pub async fn expect_no_more_than(&self, app: &TestApp, n: usize) {
        app.settled().await;
        assert_eq!(self.hits().len(), n, "unexpected deliveries");
    }
}

fn hmac_b64(key: &[u8], parts: &[&[u8]]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    for p in parts {
        mac.update(p);
    }
    STANDARD.encode(mac.finalize().into_bytes())
}

/// Checks the spec's headers and both signatures of a delivery, recomputed from the raw
/// bytes with the secret.
pub fn assert_signed(hit: &Hit, secret: &str, event: &str) {
    assert_eq!(hit.header("content-type"), "application/json");
    assert_eq!(hit.header("user-agent"), "Webhook/1.0");
    assert_eq!(hit.header("x-webhook-event"), event);
    let id = hit.header("x-webhook-event-id");
    assert!(uuid::Uuid::parse_str(id).is_ok(), "event id {id}");
    assert_eq!(
        hit.header("x-webhook-signature"),
        format!("sha256={}", hmac_b64(secret.as_bytes(), &[&hit.body])),
        "X-Webhook-Signature is HMAC-SHA256 keyed with the secret string over the raw body"
    );
    // Standard Webhooks: keyed with the decoded part after whsec_.
    assert_eq!(hit.header("webhook-id"), id);
    let ts = hit.header("webhook-timestamp");
    let key = secret
        .strip_prefix("whsec_")
        .and_then(|k| STANDARD.decode(k).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec());
    assert_eq!(
        hit.header("webhook-signature"),
        format!(
            "v1,{}",
            hmac_b64(&key, &[id.as_bytes(), b".", ts.as_bytes(), b".", &hit.body])
        )
    );
}
