//! Stock handlers.

use axum::extract::State;
use axum::http::StatusCode;

use super::model::{AdjustmentIn, AdjustmentOut, InventoryFilter, InventoryItem};
use super::{store, writes};
use crate::audit::Actor;
use crate::error::AppError;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{StoreId, VariantId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// Every variant's stock, by SKU; filters `product_id` and `low_stock`.
#[utoipa::path(get, path = "/stores/{store_id}/inventory", tag = "inventory", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery, InventoryFilter),
    responses((status = 200, body = Page<InventoryItem>), (status = 403, body = ErrorBody)))]
pub async fn list_inventory(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, f): Paged<InventoryFilter>,
) -> Result<Json<Page<InventoryItem>>, AppError> {
    scope.require(Permission::InventoryRead)?;
    let store = scope.store_id;
    let (product, low) = (f.product_id, f.low_stock);
    let scope_key = format!(
        "inventory:{store}:{}:{}",
        product.map(|p| p.to_string()).unwrap_or_default(),
        low.map(|l| l.to_string()).unwrap_or_default()
    );
    let page = page
        .list(
            &st.db,
            &scope_key,
            move |c, after, limit, offset| {
                store::list(c, store, product, low, after, limit, offset)
            },
            move |c| store::count(c, store, product, low),
            |i| (i.sku.clone(), i.variant_id.to_string()),
            |i| i,
        )
        .await?;
    Ok(Json(page))
}

/// Adds or takes units off hand. Taking more than is available (on hand and not reserved
/// by orders) is 409 `insufficient_stock`.
#[utoipa::path(post, path = "/stores/{store_id}/inventory/{variant_id}/adjustments", tag = "inventory",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("variant_id" = VariantId, Path)),
    request_body = AdjustmentIn,
    responses((status = 201, body = AdjustmentOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`insufficient_stock`"), (status = 422, body = ErrorBody)))]
pub async fn adjust_stock(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, VariantId)>,
    Json(input): Json<AdjustmentIn>,
) -> Result<(StatusCode, Json<AdjustmentOut>), AppError> {
    scope.require(Permission::InventoryWrite)?;
    let out = writes::adjust_stock(&st, &Actor::of(&scope), scope.store_id, ids.1, input).await?;
    Ok((StatusCode::CREATED, Json(out)))
}
