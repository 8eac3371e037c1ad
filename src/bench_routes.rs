//! Routes that exist only in benchmark builds (feature `bench-routes`), undocumented on
//! purpose: the unchecked twin of a store route, to measure what the permission check costs,
//! and the routes that seed a store and record events at rates no product route makes.

use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;

use crate::error::AppError;
use crate::events::Event;
use crate::http::auth::{Principal, StoreScope};
use crate::http::extract::{Json, Path};
use crate::http::permissions::Permission;
use crate::state::AppState;
use crate::tenants::model::StoreOut;
use crate::webhooks;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .route(
            "/_bench/stores/{store_id}",
            axum::routing::get(get_store_unchecked),
        )
        .route(
            "/_bench/stores/{store_id}/seed",
            axum::routing::post(seed_store),
        )
        .route(
            "/_bench/stores/{store_id}/events",
            axum::routing::post(emit_events),
        )
}

/// `GET /stores/{id}` without `StoreScope`: authenticated, but no membership or permission
/// check.
async fn get_store_unchecked(
    State(st): State<AppState>,
    _p: Principal,
    Path(id): Path<crate::ids::StoreId>,
) -> Result<Json<StoreOut>, AppError> {
    let s = st
        .db
        .read(move |c| crate::tenants::store::get_store(c, id))
        .await?;
    s.map(Json).ok_or_else(|| AppError::not_found("store"))
}

#[derive(Debug, serde::Deserialize)]
struct BenchSeed {
    orders: i64,
    reviews: i64,
    /// Seconds between consecutive orders (default 1): 80 spreads 100,000 orders over 92
    /// days, for the analytics benchmark.
    #[serde(default)]
    spacing_seconds: Option<i64>,
}

/// Adds orders and reviews to a store that has products and customers, in transactions of
/// 5,000 rows, through the demo seeder (which counts paid orders and refunds in analytics
/// through the orders' store writes).
async fn seed_store(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<BenchSeed>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::OrdersWrite)?;
    let store = scope.store_id;
    let (mut orders, mut reviews, mut round) = (input.orders, input.reviews, 0);
    let spacing = chrono::Duration::seconds(input.spacing_seconds.unwrap_or(1).clamp(1, 86_400));
    let start = st.clock.now();
    let mut seeded = 0;
    while orders > 0 || reviews > 0 {
        let (o, r) = (orders.min(5000), reviews.min(5000));
        // Each round's orders end where the previous round's began.
        let now = start - spacing * seeded;
        round += 1;
        seeded += i32::try_from(o).unwrap_or(0);
        st.db
            .write(move |tx| crate::setup::demo::bulk(tx, store, o, r, round, now, spacing))
            .await?;
        orders -= o;
        reviews -= r;
    }
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, serde::Deserialize)]
struct BenchEmit {
    event: String,
    count: u32,
}

/// Records `count` events in the store through the real outbox, with `emitted_at_us` (wall
/// clock) and `seq` in their data, so the benchmark can measure enqueue-to-delivery time.
async fn emit_events(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<BenchEmit>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::WebhooksWrite)?;
    let event = Event::from_name(&input.event)
        .ok_or_else(|| AppError::field("event", "is not an event name"))?;
    let store = scope.store_id;
    let mut left = input.count;
    let mut seq = 0u32;
    while left > 0 {
        let n = left.min(1000);
        let (start, now) = (seq, st.clock.now());
        st.db
            .write(move |tx| {
                for i in start..start + n {
                    let data = serde_json::json!({
                        "seq": i,
                        "emitted_at_us": chrono::Utc::now().timestamp_micros(),
                    });
                    webhooks::publish(tx, Some(store), event, &data, now)?;
                }
                Ok(())
            })
            .await?;
        left -= n;
        seq += n;
    }
    Ok(StatusCode::NO_CONTENT)
}
