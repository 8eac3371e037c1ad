//! Operational endpoints (issue 2 §4): liveness, readiness and the OpenAPI document.
//! `/healthz` and `/readyz` live at the root, outside `/v1`, and are never deprecated.

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

/// Readiness: the database answers and every migration this binary carries is applied.
#[utoipa::path(get, path = "/readyz", tag = "system",
    responses((status = 200, body = ReadyOut), (status = 503, body = crate::error::ErrorBody, description = "`service_unavailable`: the database does not answer or migrations are pending")))]
async fn readyz(State(st): State<AppState>) -> Result<Json<ReadyOut>, AppError> {
    let applied = st
        .db
        .read(|c| Ok(migrate::applied_version(c)?))
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "readiness check could not read the database");
            AppError::unavailable("the database is not reachable")
        })?;
    if applied < migrate::latest_version() {
        return Err(AppError::unavailable("database migrations are pending"));
    }
    Ok(Json(ReadyOut {
        status: "ready",
        schema_version: applied,
    }))
}

/// This OpenAPI document.
#[utoipa::path(get, path = "/openapi/admin.json", tag = "system",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json")))]
async fn get_openapi(State(st): State<AppState>) -> impl IntoResponse {
    let body = st.openapi_json.get().cloned().unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], body)
}

/// The storefront API's OpenAPI document (`/storefront-api/...`, spec 9.1).
#[utoipa::path(get, path = "/openapi/storefront.json", tag = "system",
    responses((status = 200, description = "The OpenAPI 3.1 document", content_type = "application/json")))]
async fn get_storefront_openapi(State(st): State<AppState>) -> impl IntoResponse {
    let body = st
        .storefront_openapi_json
        .get()
        .cloned()
        .unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], body)
}
