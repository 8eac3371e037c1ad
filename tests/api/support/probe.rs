//! Probe routes: test-only handlers that use the real extractors, served through the real
//! layers, for conventions no product endpoint exercises on its own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use merchant_admin::AppState;
use merchant_admin::error::AppError;
use merchant_admin::http::extract::{Json, Path};
use merchant_admin::http::page::{Page, Paged};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Semaphore;

/// Where `/v1/test/slow` waits: nothing (it answers at once) or a gate the test opens.
pub type SlowGate = Arc<Mutex<Option<Arc<Semaphore>>>>;

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

pub(crate) fn probe_routes(calls: Arc<AtomicUsize>, gate: SlowGate) -> Router<AppState> {
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
                let held = gate.lock().unwrap().clone();
                if let Some(g) = held {
                    g.acquire().await.unwrap().forget();
                }
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

/// Records an event through the real outbox, as domain code does (orders, products...), so
/// webhook tests can fire any event without staging the write behind it.
async fn emit(
    State(st): State<AppState>,
    Json(input): Json<EmitIn>,
) -> Result<Json<Value>, AppError> {
    let now = merchant_admin::clock::Clock::now(&*st.clock);
    let event = merchant_admin::events::Event::from_name(&input.event)
        .ok_or_else(|| AppError::field("event", "is not an event name"))?;
    let id = st
        .db
        .write(move |tx| {
            merchant_admin::webhooks::publish(tx, input.store_id, event, &input.data, now)
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
