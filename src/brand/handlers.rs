//! Brand system handlers.

use axum::extract::State;
use axum::http::StatusCode;

use super::model::{BrandSystemIn, BrandSystemOut, GenerateIn};
use super::{generate, store, writes};
use crate::assistant::model::ProposalOut;
use crate::audit::Actor;
use crate::error::AppError;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path};
use crate::http::permissions::Permission;
use crate::ids::StoreId;
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// The store's brand system: the current `system`, its `version`, and every version newest
/// first (`versions`: {created_at, prompt, summary, version}).
#[utoipa::path(get, path = "/stores/{store_id}/brand-system", tag = "brand",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)),
    responses((status = 200, body = BrandSystemOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
pub async fn get_brand_system(
    State(st): State<AppState>,
    scope: StoreScope,
) -> Result<Json<BrandSystemOut>, AppError> {
    scope.require(Permission::BrandRead)?;
    let store = scope.store_id;
    if let Some(out) = st.db.read(move |c| store::current(c, store)).await? {
        return Ok(Json(out));
    }
    // A store made before the brand area existed gets its default on first read.
    let (user, now) = (scope.principal.user_id, st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            writes::ensure_default(tx, store, user, now)?;
            store::current(tx, store)
        })
        .await?
        .ok_or_else(|| AppError::not_found("brand system"))?;
    Ok(Json(out))
}

/// Saves a new version of the brand system (versions are immutable; `version` goes up by
/// one). Every key of `system` is required and typed (422 `validation_failed` naming the
/// JSON path, such as `system.colors.aliases.link`); `system.updated_at` is set to the
/// time of the save.
#[utoipa::path(put, path = "/stores/{store_id}/brand-system", tag = "brand",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)),
    request_body = BrandSystemIn,
    responses((status = 200, body = BrandSystemOut), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn save_brand_system(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<BrandSystemIn>,
) -> Result<Json<BrandSystemOut>, AppError> {
    scope.require(Permission::BrandWrite)?;
    let out = writes::save(&st, &Actor::of(&scope), scope.store_id, input).await?;
    Ok(Json(out))
}

/// Saves an old version's system as a new version (spec 3, 4.7); no body. 404 for a
/// version the store does not have.
#[utoipa::path(post, path = "/stores/{store_id}/brand-system/versions/{version}/restore",
    tag = "brand", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("version" = i32, Path)),
    responses((status = 200, body = BrandSystemOut), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn restore_brand_version(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, String)>,
) -> Result<Json<BrandSystemOut>, AppError> {
    scope.require(Permission::BrandWrite)?;
    let version = crate::http::extract::int32_param("version", &ids.1)?;
    let out = writes::restore(&st, &Actor::of(&scope), scope.store_id, version).await?;
    Ok(Json(out))
}

/// Asks the assistant's model for a new brand system from `prompt` and the current one,
/// and answers 201 with the assistant proposal that saves it: approve it with `POST
/// /assistant/proposals/{id}/approve` (assistant.use and brand.write), decline it, or let
/// it expire (an hour). 503 `assistant_unavailable` without a model or when the model
/// server fails; 502 `model_answer_invalid` when its answer is not a valid brand system
/// (`details.fields` names the problem); 429 `assistant_cap_reached`: a generation counts as
/// an assistant message.
#[utoipa::path(post, path = "/stores/{store_id}/brand-system/generate", tag = "brand",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)), request_body = GenerateIn,
    responses((status = 201, body = ProposalOut), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody),
              (status = 502, body = ErrorBody, description = "`model_answer_invalid`"), (status = 503, body = ErrorBody, description = "`assistant_unavailable`")))]
pub async fn generate_brand_system(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<GenerateIn>,
) -> Result<(StatusCode, Json<ProposalOut>), AppError> {
    scope.require(Permission::BrandWrite)?;
    let p = generate::generate(&st, scope.store_id, scope.principal.user_id, &input.prompt).await?;
    Ok((StatusCode::CREATED, Json(p)))
}
