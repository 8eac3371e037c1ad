//! The one test harness: starts the real server on an ephemeral port with a temporary data
//! directory and a clock the test controls, and talks HTTP to it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use chrono::{TimeZone, Utc};
use merchant_admin::AppState;
use merchant_admin::clock::ManualClock;
use merchant_admin::config::Config;
use merchant_admin::error::AppError;
use merchant_admin::http::extract::{Json, Path};
use merchant_admin::http::page::{Page, Paged};
use merchant_admin::setup::{self, SetupInput, SetupOutput};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct TestApp {
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    pub state: AppState,
    pub clock: Arc<ManualClock>,
    /// How many times the probe handlers ran (idempotency tests count executions).
    pub probe_calls: Arc<AtomicUsize>,
    pub data_dir: TempDir,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<anyhow::Result<()>>>,
}

/// The response of a call: status, headers and the body as JSON (Null when empty or not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the status, printing the body on mismatch.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.text
        );
        self
    }

    /// Asserts the spec's error shape with the given status and code.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str) -> &Self {
        self.expect(status);
        assert_eq!(self.body["code"], code, "body: {}", self.text);
        assert!(
            self.body["error"].is_string(),
            "error message missing: {}",
            self.text
        );
        assert!(self.header("x-trace-id").is_some(), "x-trace-id missing");
        self
    }
}

pub fn test_config(data_dir: &std::path::Path) -> Config {
    let mut cfg = Config::new(data_dir.to_path_buf());
    cfg.workers = 1;
    cfg.shutdown_grace = Duration::from_secs(5);
    // Webhook receivers in tests listen on loopback; the SSRF test turns the guard back on.
    cfg.allow_private_webhook_targets = true;
    cfg.webhook_poll = Duration::from_millis(50);
    cfg
}

pub fn start_time() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 2, 12, 0, 0).unwrap()
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Starts the server after `tune` adjusts the configuration.
pub async fn spawn_app_with(tune: impl FnOnce(&mut Config)) -> TestApp {
    let data_dir = tempfile::tempdir().expect("temp dir");
    spawn_app_at(data_dir, start_time(), tune).await
}

/// Starts the server on an existing data directory (a restart), its clock at `now`.
pub async fn spawn_app_at(
    data_dir: TempDir,
    now: chrono::DateTime<Utc>,
    tune: impl FnOnce(&mut Config),
) -> TestApp {
    let mut cfg = test_config(data_dir.path());
    tune(&mut cfg);
    let clock = ManualClock::new(now);
    let shared = clock.clone();
    let state = tokio::task::spawn_blocking(move || AppState::open(cfg, shared))
        .await
        .unwrap()
        .expect("open state");
    let probe_calls = Arc::new(AtomicUsize::new(0));
    let routes = merchant_admin::routes(&state).merge(probe_routes(probe_calls.clone()));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let server = tokio::spawn(merchant_admin::serve_routes(
        state.clone(),
        routes,
        listener,
        async {
            let _ = rx.await;
        },
    ));
    TestApp {
        addr,
        client: reqwest::Client::builder().no_proxy().build().unwrap(),
        state,
        clock,
        probe_calls,
        data_dir,
        shutdown: Some(tx),
        server: Some(server),
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub async fn send(&self, req: reqwest::RequestBuilder) -> Reply {
        let res = req.send().await.expect("request failed to send");
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(self.client.get(self.url(path))).await
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> Reply {
        self.send(self.client.post(self.url(path)).json(body)).await
    }

    /// A POST with an `Idempotency-Key`.
    pub async fn post_idem(&self, path: &str, key: &str, body: &Value) -> Reply {
        self.send(
            self.client
                .post(self.url(path))
                .header("idempotency-key", key)
                .json(body),
        )
        .await
    }

    /// A signed-in POST with an `Idempotency-Key`.
    pub async fn post_idem_as(&self, path: &str, token: &str, key: &str, body: &Value) -> Reply {
        self.send(
            self.client
                .post(self.url(path))
                .bearer_auth(token)
                .header("idempotency-key", key)
                .json(body),
        )
        .await
    }

    pub fn calls(&self) -> usize {
        self.probe_calls.load(Ordering::SeqCst)
    }

    /// Seeds a user, organization and store through `setup`'s library function.
    pub async fn seed_owner(&self, email: &str, org: &str) -> SetupOutput {
        let (db, now) = (self.state.db.clone(), self.clock_now());
        let input = SetupInput {
            email: email.into(),
            password: "correct horse battery".into(),
            org_name: org.into(),
            store_name: format!("{org} store"),
            demo: false,
        };
        tokio::task::spawn_blocking(move || setup::run(&db, now, &input))
            .await
            .unwrap()
            .expect("setup")
    }

    /// Runs a `SELECT COUNT(*) ...` (or any one-integer query) against the live database.
    pub async fn count(&self, sql: &'static str) -> i64 {
        self.state
            .db
            .read(move |c| Ok(c.query_row(sql, [], |r| r.get(0))?))
            .await
            .unwrap()
    }

    pub fn clock_now(&self) -> chrono::DateTime<Utc> {
        use merchant_admin::clock::Clock;
        self.clock.now()
    }

    /// Stops the server the way SIGTERM does and waits for it; hands back the data
    /// directory so the test can look at what was left.
    pub async fn stop(mut self) -> (anyhow::Result<()>, TempDir) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let res = self
            .server
            .take()
            .unwrap()
            .await
            .expect("server task panicked");
        let dir = std::mem::replace(&mut self.data_dir, tempfile::tempdir().unwrap());
        (res, dir)
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

// ---- probe routes: test-only handlers that use the real extractors, served through the
// ---- real layers, for conventions no product endpoint exercises yet.

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Colour {
    Red,
    Green,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeIn {
    pub name: String,
    pub count: u32,
    pub colour: Option<Colour>,
    pub nested: Option<NestedIn>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NestedIn {
    pub size: i64,
}

#[derive(Debug, Serialize)]
pub struct ProbeOut {
    pub call: usize,
    pub input: ProbeIn,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantFilter {
    pub name_prefix: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct TenantRow {
    pub id: String,
    pub name: String,
    pub created_at: String,
}

fn probe_routes(calls: Arc<AtomicUsize>) -> Router<AppState> {
    let count = move || calls.fetch_add(1, Ordering::SeqCst) + 1;
    let (c1, c2, c3, c4) = (count.clone(), count.clone(), count.clone(), count);
    Router::new()
        .route(
            "/v1/test/echo",
            post(move |Json(input): Json<ProbeIn>| async move {
                (
                    StatusCode::CREATED,
                    [("x-probe", "echo")],
                    Json(ProbeOut { call: c1(), input }),
                )
            }),
        )
        .route(
            "/v1/test/slow",
            post(move |Json(input): Json<ProbeIn>| async move {
                let call = c2();
                tokio::time::sleep(Duration::from_millis(400)).await;
                (StatusCode::CREATED, Json(ProbeOut { call, input }))
            }),
        )
        .route(
            "/v1/test/fail",
            post(move || async move {
                c3();
                AppError::internal(anyhow::anyhow!("secret database detail"))
            }),
        )
        .route(
            "/v1/test/panic",
            post(move || async move {
                c4();
                boom().await
            })
            .get(boom),
        )
        .route(
            "/v1/test/items/{id}",
            get(|Path(id): Path<uuid::Uuid>| async move { id.to_string() }),
        )
        .route("/v1/test/tenants", get(list_tenants))
        .route("/v1/test/emit", post(emit))
}

#[derive(Debug, Deserialize)]
pub struct EmitIn {
    pub store_id: Option<merchant_admin::ids::StoreId>,
    pub event: String,
    pub data: Value,
}

/// Records an event through the real outbox, as domain code will (orders, products...), so
/// webhook fan-out is tested before those areas exist.
async fn emit(
    State(st): State<AppState>,
    Json(input): Json<EmitIn>,
) -> Result<Json<Value>, AppError> {
    let now = merchant_admin::clock::Clock::now(&*st.clock);
    let id = st
        .db
        .write(move |tx| {
            merchant_admin::events::record(tx, input.store_id, &input.event, &input.data, now)
        })
        .await?;
    Ok(Json(serde_json::json!({ "event_id": id })))
}

async fn boom() -> StatusCode {
    panic!("secret panic detail")
}

/// A keyset-paged list over a real table, newest first, as every store list will be.
async fn list_tenants(
    State(st): State<AppState>,
    Paged(page, filter): Paged<TenantFilter>,
) -> Result<Json<Page<TenantRow>>, AppError> {
    let scope = "test-tenants";
    let after: Option<(String, String)> = page.position(scope)?;
    let p = page.clone();
    let prefix = filter.name_prefix.unwrap_or_default();
    let (rows, total) = st
        .db
        .read(move |c| {
            let (at, id) = after.unwrap_or_else(|| ("9999".into(), String::new()));
            let mut stmt = c.prepare(
                "SELECT id, name, created_at FROM tenants
                 WHERE (created_at, id) < (?1, ?2) AND name LIKE ?3 || '%'
                 ORDER BY created_at DESC, id DESC LIMIT ?4 OFFSET ?5",
            )?;
            let rows = stmt
                .query_map(
                    rusqlite::params![at, id, prefix, p.fetch_limit(), p.offset()],
                    |r| {
                        Ok(TenantRow {
                            id: r.get(0)?,
                            name: r.get(1)?,
                            created_at: r.get(2)?,
                        })
                    },
                )?
                .collect::<Result<Vec<_>, _>>()?;
            let total = if p.include_total {
                Some(c.query_row(
                    "SELECT COUNT(*) FROM tenants WHERE name LIKE ?1 || '%'",
                    [&prefix],
                    |r| r.get(0),
                )?)
            } else {
                None
            };
            Ok((rows, total))
        })
        .await?;
    Ok(Json(
        Page::from_rows(
            rows,
            &page,
            scope,
            |r| (r.created_at.clone(), r.id.clone()),
            |r| r,
        )
        .with_total(total),
    ))
}
