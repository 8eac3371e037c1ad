//! The team's view of the store's carts (issue 19 "Cart recovery"): what shoppers left, and
//! what came back.

use axum::extract::State;

use super::model::{CartFilter, CartOut};
use super::store;
use super::writes::not_found;
use crate::error::AppError;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{CartId, StoreId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// The store's carts, newest first; `status` filters (`open`, `abandoned`, `recovered`,
/// `converted`).
#[utoipa::path(get, path = "/stores/{store_id}/carts", tag = "carts", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery, CartFilter),
    responses((status = 200, body = Page<CartOut>), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn list_carts(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, f): Paged<CartFilter>,
) -> Result<Json<Page<CartOut>>, AppError> {
    scope.require(Permission::OrdersRead)?;
    let (store, status) = (scope.store_id, f.status);
    let list_scope = format!("carts:{store}:{}", status.map_or("", |s| s.as_str()));
    let page = page
        .list(
            &st.db,
            &list_scope,
            move |c, after, limit, offset| store::list(c, store, status, after, limit, offset),
            move |c| store::count(c, store, status),
            |c| (c.created_at.clone(), c.id.to_string()),
            |c| c,
        )
        .await?;
    Ok(Json(page))
}

/// One cart, with its lines at current prices and its contact.
#[utoipa::path(get, path = "/stores/{store_id}/carts/{cart_id}", tag = "carts",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("cart_id" = CartId, Path)),
    responses((status = 200, body = CartOut), (status = 404, body = ErrorBody)))]
pub async fn get_cart(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, CartId)>,
) -> Result<Json<CartOut>, AppError> {
    scope.require(Permission::OrdersRead)?;
    let (store, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get(c, store, id))
        .await?
        .map(Json)
        .ok_or_else(not_found)
}
