//! Store API token handlers.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::model::{TokenIn, TokenOut};
use super::store;
use crate::audit::{self, Actor};
use crate::error::{AppError, ErrorCode};
use crate::http::auth::{Credential, StoreScope, missing_permission};
use crate::http::extract::{Json, Path, text};
use crate::http::idempotency::sealed_store;
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::{Permission, PermissionSet};
use crate::ids::{ApiTokenId, StoreId};
use crate::state::AppState;
use crate::time;

/// Checks the requested scopes: known codes (or `*` alone), each held by the issuer here.
fn check_scopes(scope: &StoreScope, scopes: &[String]) -> Result<Vec<String>, AppError> {
    let bad = |m: String| AppError::validation([("scopes", m)]);
    if scopes.is_empty() {
        return Err(bad("name at least one permission, or \"*\"".into()));
    }
    if scopes.iter().any(|s| s == "*") {
        if scopes.len() > 1 {
            return Err(bad("\"*\" stands alone".into()));
        }
        // "*" is everything the issuer can do: only a caller holding all of that may grant
        // it (a narrower token must not mint a broader one).
        if scope.permissions != scope.role.permissions() {
            return Err(bad(
                "\"*\" is not yours to grant with this credential".into()
            ));
        }
        return Ok(scopes.to_vec());
    }
    let mut out = Vec::new();
    for code in scopes {
        let p = Permission::parse(code)
            .ok_or_else(|| bad(format!("{code} is not a permission code")))?;
        if !scope.permissions.contains(p) {
            return Err(bad(format!("{code} is not yours to grant in this store")));
        }
        if !out.contains(code) {
            out.push(code.clone());
        }
    }
    Ok(out)
}

/// 403 `missing_permission` unless the caller holds everything token `t` can do (its scopes
/// within the issuer's role, taken as the caller's role).
fn outranks(caller: PermissionSet, role: PermissionSet, t: &TokenOut) -> Result<(), AppError> {
    if caller.contains_all(role.intersect(PermissionSet::from_scopes(&t.scopes))) {
        Ok(())
    } else {
        Err(missing_permission(Permission::ApiTokensWrite))
    }
}

/// Creates a store API token; its value is shown in this response only.
#[utoipa::path(post, path = "/stores/{store_id}/api-tokens", tag = "api_tokens", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = TokenIn,
    responses((status = 201, body = TokenOut), (status = 403, body = crate::error::ErrorBody),
              (status = 422, body = crate::error::ErrorBody)))]
pub async fn create_token(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<TokenIn>,
) -> Result<Response, AppError> {
    scope.require(Permission::ApiTokensWrite)?;
    let name = text("name", &input.name, 1, 120)?;
    let scopes = check_scopes(&scope, &input.scopes)?;
    let now = st.clock.now();
    let expires_at = match input.expires_at.as_deref() {
        None => None,
        Some(s) => match time::parse(s) {
            Some(t) if t > now => Some(time::format(t)),
            _ => {
                return Err(AppError::field(
                    "expires_at",
                    "must be a future RFC 3339 time",
                ));
            }
        },
    };
    let (store, issuer, actor) = (scope.store_id, scope.principal.user_id, Actor::of(&scope));
    let caller_token = match &scope.principal.credential {
        Credential::StoreToken { token_id, .. } => Some(*token_id),
        Credential::Session { .. } => None,
    };
    let token = st
        .db
        .write(move |tx| {
            // A token made by a token ends no later than its maker, so a short-lived token
            // that leaks cannot mint itself a lasting heir.
            let limit = match caller_token {
                Some(id) => store::get(tx, store, id)?.and_then(|t| t.expires_at),
                None => None,
            };
            let expires_at = match (expires_at, limit) {
                (None, limit) => limit,
                (Some(e), Some(limit)) if e > limit => {
                    return Err(AppError::field(
                        "expires_at",
                        "must not be later than the expiry of the token making it",
                    ));
                }
                (e, _) => e,
            };
            let t = store::create(
                tx,
                store,
                issuer,
                &name,
                &scopes,
                expires_at.as_deref(),
                now,
            )?;
            audit::record(
                tx,
                &actor,
                "api_token.created",
                "api_token",
                &t.id.to_string(),
                now,
            )?;
            Ok(t)
        })
        .await?;
    Ok(sealed_store((StatusCode::CREATED, Json(token))))
}

/// The store's API tokens (never their values).
#[utoipa::path(get, path = "/stores/{store_id}/api-tokens", tag = "api_tokens", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery),
    responses((status = 200, body = Page<TokenOut>), (status = 403, body = crate::error::ErrorBody)))]
pub async fn list_tokens(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, _): Paged,
) -> Result<Json<Page<TokenOut>>, AppError> {
    scope.require(Permission::ApiTokensRead)?;
    let store_id = scope.store_id;
    let page = page
        .list(
            &st.db,
            &format!("api_tokens:{store_id}"),
            move |c, after, limit, offset| store::list(c, store_id, after, limit, offset),
            move |c| store::count(c, store_id),
            |t| (t.created_at.clone(), t.id.to_string()),
            |t| t,
        )
        .await?;
    Ok(Json(page))
}

/// Gives the token a new value (shown once); the old value stops working at once. Only the
/// user who issued a token may rotate it.
#[utoipa::path(post, path = "/stores/{store_id}/api-tokens/{token_id}/rotate", tag = "api_tokens",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("token_id" = ApiTokenId, Path)),
    responses((status = 200, body = TokenOut), (status = 403, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody)))]
pub async fn rotate_token(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ApiTokenId)>,
) -> Result<Response, AppError> {
    scope.require(Permission::ApiTokensWrite)?;
    let id = ids.1;
    let (store, caller, actor, now) = (
        scope.store_id,
        scope.principal.user_id,
        Actor::of(&scope),
        st.clock.now(),
    );
    let (role_permissions, caller_permissions) = (scope.role.permissions(), scope.permissions);
    let token = st
        .db
        .write(move |tx| {
            let t = store::get(tx, store, id)?.ok_or_else(|| AppError::not_found("API token"))?;
            if t.created_by != caller {
                return Err(AppError::new(
                    ErrorCode::NotTokenOwner,
                    "only the user who issued this token can rotate it",
                ));
            }
            // Rotating hands out the new value: the caller must hold everything the token
            // can do, or a narrow token could take over a broad one.
            outranks(caller_permissions, role_permissions, &t)?;
            let t =
                store::rotate(tx, store, id)?.ok_or_else(|| AppError::not_found("API token"))?;
            audit::record(
                tx,
                &actor,
                "api_token.rotated",
                "api_token",
                &id.to_string(),
                now,
            )?;
            Ok(t)
        })
        .await?;
    Ok(sealed_store(Json(token)))
}

/// Revokes a token; later use is 401 at once.
#[utoipa::path(delete, path = "/stores/{store_id}/api-tokens/{token_id}", tag = "api_tokens",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("token_id" = ApiTokenId, Path)),
    responses((status = 204, description = "Revoked"), (status = 403, body = crate::error::ErrorBody),
              (status = 404, body = crate::error::ErrorBody)))]
pub async fn delete_token(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, ApiTokenId)>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::ApiTokensWrite)?;
    let id = ids.1;
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let (role_permissions, caller_permissions) = (scope.role.permissions(), scope.permissions);
    let deleted = st
        .db
        .write(move |tx| {
            // A narrow token may not revoke a broader one (an integration's lifeline).
            if let Some(t) = store::get(tx, store, id)? {
                outranks(caller_permissions, role_permissions, &t)?;
            }
            let gone = store::delete(tx, store, id)?;
            if gone {
                audit::record(
                    tx,
                    &actor,
                    "api_token.revoked",
                    "api_token",
                    &id.to_string(),
                    now,
                )?;
            }
            Ok(gone)
        })
        .await?;
    if deleted {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(AppError::not_found("API token"))
    }
}
