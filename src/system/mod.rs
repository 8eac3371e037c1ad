//! Operational endpoints (issue 2 §4): liveness, readiness and the OpenAPI document.
//! `/healthz` and `/readyz` live at the root, outside `/v1`, and are never deprecated.

pub mod backups;
pub mod metrics;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::db::migrate;
use crate::error::AppError;
use crate::http::extract::Json;
use crate::state::AppState;

/// Routes under `/v1`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_openapi))
        .routes(routes!(get_storefront_openapi))
}

/// Routes at the root.
pub fn root_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HealthOut {
    /// `ok` or `ready`.
    pub status: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReadyOut {
    pub status: &'static str,
    /// The database schema version applied.
    pub schema_version: i64,
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "system",
    responses((status = 200, body = HealthOut)))]
async fn healthz() -> Json<HealthOut> {
    Json(HealthOut { status: "ok" })
}

/// Readiness: the server is not shutting down, the database answers, every migration this
/// binary carries is applied (another process may be migrating the file), and the oldest due
/// background job has waited less than `--ready-max-job-lag-secs`, and the last scheduled
/// backup (if any) did not fail. A 503 names each reason
/// in `details.reasons`.
#[utoipa::path(get, path = "/readyz", tag = "system",
    responses((status = 200, body = ReadyOut), (status = 503, body = crate::error::ErrorBody, description = "`service_unavailable`: the database does not answer or migrations are pending")))]
async fn readyz(State(st): State<AppState>) -> Result<Json<ReadyOut>, AppError> {
    let clock = st.clock.clone();
    let (applied, lag) = st
        .db
        .read(move |c| {
            let applied = migrate::applied_version(c)?;
            Ok((applied, crate::jobs::default_queue_lag(c, clock.now())?))
        })
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "readiness check could not read the database");
            AppError::unavailable("the database is not reachable")
                .with_details(serde_json::json!({ "reasons": ["database_unreachable"] }))
        })?;
    let mut reasons = Vec::new();
    if st.shutting_down.load(std::sync::atomic::Ordering::SeqCst) {
        reasons.push("shutting_down");
    }
    if applied < migrate::latest_version() {
        reasons.push("migrations_pending");
    }
    let max_lag = st.cfg.ready_max_job_lag;
    let lag_secs = lag.num_seconds().max(0);
    if lag.to_std().is_ok_and(|l| l >= max_lag) {
        reasons.push("job_queue_lagging");
    }
    let backup = st
        .backup_status
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if backup.last_error.is_some() {
        reasons.push("last_backup_failed");
    }
    if !reasons.is_empty() {
        return Err(
            AppError::unavailable(format!("not ready: {}", reasons.join(", "))).with_details(
                serde_json::json!({
                    "reasons": reasons,
                    "schema_version": applied,
                    "expected_schema_version": migrate::latest_version(),
                    "oldest_due_job_secs": lag_secs,
                    "max_job_lag_secs": max_lag.as_secs(),
                    // The error itself goes to the log only: this route is public, and
                    // it names paths on the server.
                    "last_backup_at": backup.last_success.map(crate::time::format),
                }),
            ),
        );
    }
    Ok(Json(ReadyOut {
        status: "ready",
        schema_version: applied,
    }))
}

/// This OpenAPI document.
#[utoipa::path(get, path = "/openapi/admin.json", tag = "system",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json",
        body = Object, example = json!({"openapi": "3.1.0", "info": {"title": "merchant-admin", "version": "1"}, "paths": {}}))))]
async fn get_openapi(State(st): State<AppState>) -> impl IntoResponse {
    let body = st.openapi_json.get().cloned().unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], body)
}

/// The storefront API's OpenAPI document (`/storefront-api/...`, spec 9.1).
#[utoipa::path(get, path = "/openapi/storefront.json", tag = "system",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json",
        body = Object, example = json!({"openapi": "3.1.0", "info": {"title": "merchant-admin", "version": "1"}, "paths": {}}))))]
async fn get_storefront_openapi(State(st): State<AppState>) -> impl IntoResponse {
    let body = st
        .storefront_openapi_json
        .get()
        .cloned()
        .unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], body)
}
