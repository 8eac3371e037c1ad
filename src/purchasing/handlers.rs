//! Purchasing handlers.

use axum::extract::State;
use axum::http::StatusCode;

use super::model::{
    PurchaseOrderFilter, PurchaseOrderIn, PurchaseOrderOut, PurchaseOrderPatch,
    PurchaseOrderStatus, ReceiveIn, SupplierIn, SupplierOut, SupplierPatch,
};
use super::store::{self, OrderChange, SupplierFields};
use super::writes;
use crate::audit::{self, Actor};
use crate::error::{AppError, ErrorCode};
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path, text};
use crate::http::page::{Page, PageQuery, Paged};
use crate::http::permissions::Permission;
use crate::ids::{PurchaseOrderId, StoreId, SupplierId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

fn supplier_not_found() -> AppError {
    AppError::not_found("supplier")
}

/// Optional text: trimmed, empty clears it, at most `max` characters.
fn optional(field: &str, v: Option<&str>, max: usize) -> Result<Option<String>, AppError> {
    match v.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => text(field, s, 1, max).map(Some),
    }
}

fn supplier_email(v: Option<&str>) -> Result<Option<String>, AppError> {
    v.map(crate::customers::model::email)
        .transpose()
        .map(Option::flatten)
}

fn supplier_phone(v: Option<&str>) -> Result<Option<String>, AppError> {
    v.map(crate::customers::model::phone)
        .transpose()
        .map(Option::flatten)
}

/// An RFC 3339 timestamp as stored; anything else is 422.
fn expected_at(v: Option<&str>) -> Result<Option<String>, AppError> {
    v.map(|s| {
        crate::time::parse(s)
            .map(crate::time::format)
            .ok_or_else(|| AppError::field("expected_at", "must be an RFC 3339 timestamp"))
    })
    .transpose()
}

/// The store's suppliers, newest first.
#[utoipa::path(get, path = "/stores/{store_id}/suppliers", tag = "purchasing", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery),
    responses((status = 200, body = Page<SupplierOut>), (status = 403, body = ErrorBody)))]
pub async fn list_suppliers(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, _): Paged,
) -> Result<Json<Page<SupplierOut>>, AppError> {
    scope.require(Permission::InventoryRead)?;
    let store = scope.store_id;
    let page = page
        .list(
            &st.db,
            &format!("suppliers:{store}"),
            move |c, after, limit, offset| store::list_suppliers(c, store, after, limit, offset),
            move |c| store::count_suppliers(c, store),
            |s| (s.created_at.clone(), s.id.to_string()),
            |s| s,
        )
        .await?;
    Ok(Json(page))
}

/// Adds a supplier.
#[utoipa::path(post, path = "/stores/{store_id}/suppliers", tag = "purchasing", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = SupplierIn,
    responses((status = 201, body = SupplierOut), (status = 422, body = ErrorBody)))]
pub async fn create_supplier(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<SupplierIn>,
) -> Result<(StatusCode, Json<SupplierOut>), AppError> {
    scope.require(Permission::InventoryWrite)?;
    let f = SupplierFields {
        name: Some(text("name", &input.name, 1, 255)?),
        email: Some(supplier_email(input.email.as_deref())?),
        phone: Some(supplier_phone(input.phone.as_deref())?),
        contact_name: Some(optional(
            "contact_name",
            input.contact_name.as_deref(),
            255,
        )?),
        notes: Some(optional("notes", input.notes.as_deref(), 5000)?),
    };
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let id = SupplierId::new();
            store::insert_supplier(tx, store, id, &f, now)?;
            audit::record(
                tx,
                &actor,
                "supplier.created",
                "supplier",
                &id.to_string(),
                now,
            )?;
            store::get_supplier(tx, store, id)?.ok_or_else(supplier_not_found)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// One supplier.
#[utoipa::path(get, path = "/stores/{store_id}/suppliers/{supplier_id}", tag = "purchasing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("supplier_id" = SupplierId, Path)),
    responses((status = 200, body = SupplierOut), (status = 404, body = ErrorBody)))]
pub async fn get_supplier(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, SupplierId)>,
) -> Result<Json<SupplierOut>, AppError> {
    scope.require(Permission::InventoryRead)?;
    let (store, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get_supplier(c, store, id))
        .await?
        .map(Json)
        .ok_or_else(supplier_not_found)
}

/// Changes any subset; `null` or an empty string clears an optional field.
#[utoipa::path(patch, path = "/stores/{store_id}/suppliers/{supplier_id}", tag = "purchasing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("supplier_id" = SupplierId, Path)),
    request_body = SupplierPatch,
    responses((status = 200, body = SupplierOut), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn update_supplier(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, SupplierId)>,
    Json(input): Json<SupplierPatch>,
) -> Result<Json<SupplierOut>, AppError> {
    scope.require(Permission::InventoryWrite)?;
    let f = SupplierFields {
        name: input
            .name
            .as_deref()
            .map(|n| text("name", n, 1, 255))
            .transpose()?,
        email: input
            .email
            .map(|e| supplier_email(e.as_deref()))
            .transpose()?,
        phone: input
            .phone
            .map(|p| supplier_phone(p.as_deref()))
            .transpose()?,
        contact_name: input
            .contact_name
            .map(|c| optional("contact_name", c.as_deref(), 255))
            .transpose()?,
        notes: input
            .notes
            .map(|n| optional("notes", n.as_deref(), 5000))
            .transpose()?,
    };
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            if !store::update_supplier(tx, store, id, &f, now)? {
                return Err(supplier_not_found());
            }
            audit::record(
                tx,
                &actor,
                "supplier.updated",
                "supplier",
                &id.to_string(),
                now,
            )?;
            store::get_supplier(tx, store, id)?.ok_or_else(supplier_not_found)
        })
        .await?;
    Ok(Json(out))
}

/// Deletes a supplier that has no purchase orders (409 `conflict` otherwise).
#[utoipa::path(delete, path = "/stores/{store_id}/suppliers/{supplier_id}", tag = "purchasing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("supplier_id" = SupplierId, Path)),
    responses((status = 204), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody, description = "`conflict`: purchase orders name the supplier")))]
pub async fn delete_supplier(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, SupplierId)>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::InventoryWrite)?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    st.db
        .write(move |tx| {
            if !store::supplier_exists(tx, store, id)? {
                return Err(supplier_not_found());
            }
            let n = store::supplier_orders(tx, store, id)?;
            if n > 0 {
                return Err(AppError::conflict(
                    ErrorCode::Conflict,
                    "the supplier has purchase orders; it is kept while they are",
                )
                .with_details(serde_json::json!({ "purchase_orders": n })));
            }
            store::delete_supplier(tx, store, id)?;
            audit::record(
                tx,
                &actor,
                "supplier.deleted",
                "supplier",
                &id.to_string(),
                now,
            )
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The store's purchase orders, newest first; filters `status` and `supplier_id`.
#[utoipa::path(get, path = "/stores/{store_id}/purchase-orders", tag = "purchasing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), PageQuery, PurchaseOrderFilter),
    responses((status = 200, body = Page<PurchaseOrderOut>), (status = 403, body = ErrorBody)))]
pub async fn list_purchase_orders(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, f): Paged<PurchaseOrderFilter>,
) -> Result<Json<Page<PurchaseOrderOut>>, AppError> {
    scope.require(Permission::InventoryRead)?;
    let store = scope.store_id;
    let (status, supplier) = (f.status, f.supplier_id);
    let scope_key = format!(
        "purchase-orders:{store}:{}:{}",
        status.map(PurchaseOrderStatus::as_str).unwrap_or_default(),
        supplier.map(|s| s.to_string()).unwrap_or_default()
    );
    let page = page
        .list(
            &st.db,
            &scope_key,
            move |c, after, limit, offset| {
                store::list_orders(c, store, status, supplier, after, limit, offset)
            },
            move |c| store::count_orders(c, store, status, supplier),
            |p| (p.created_at.clone(), p.id.to_string()),
            |p| p,
        )
        .await?;
    Ok(Json(page))
}

/// Creates a draft purchase order.
#[utoipa::path(post, path = "/stores/{store_id}/purchase-orders", tag = "purchasing",
    security(("bearer" = [])), params(("store_id" = StoreId, Path)), request_body = PurchaseOrderIn,
    responses((status = 201, body = PurchaseOrderOut), (status = 422, body = ErrorBody)))]
pub async fn create_purchase_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<PurchaseOrderIn>,
) -> Result<(StatusCode, Json<PurchaseOrderOut>), AppError> {
    scope.require(Permission::InventoryWrite)?;
    let expected = expected_at(input.expected_at.as_deref())?;
    let note = optional("note", input.note.as_deref(), 5000)?;
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let po = writes::create(
                tx,
                store,
                input.supplier_id,
                &input.items,
                expected,
                note,
                now,
            )?;
            let id = po.id.to_string();
            audit::record(
                tx,
                &actor,
                "purchase_order.created",
                "purchase_order",
                &id,
                now,
            )?;
            Ok(po)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// One purchase order.
#[utoipa::path(get, path = "/stores/{store_id}/purchase-orders/{purchase_order_id}", tag = "purchasing",
    security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("purchase_order_id" = PurchaseOrderId, Path)),
    responses((status = 200, body = PurchaseOrderOut), (status = 404, body = ErrorBody)))]
pub async fn get_purchase_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, PurchaseOrderId)>,
) -> Result<Json<PurchaseOrderOut>, AppError> {
    scope.require(Permission::InventoryRead)?;
    let (store, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get_order(c, store, id))
        .await?
        .map(Json)
        .ok_or_else(writes::not_found)
}

/// Changes a draft: supplier, lines (replaced), expected date, note. Past draft it is 409
/// `invalid_status_transition`.
#[utoipa::path(patch, path = "/stores/{store_id}/purchase-orders/{purchase_order_id}", tag = "purchasing",
    security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("purchase_order_id" = PurchaseOrderId, Path)),
    request_body = PurchaseOrderPatch,
    responses((status = 200, body = PurchaseOrderOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`invalid_status_transition`"), (status = 422, body = ErrorBody)))]
pub async fn update_purchase_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, PurchaseOrderId)>,
    Json(input): Json<PurchaseOrderPatch>,
) -> Result<Json<PurchaseOrderOut>, AppError> {
    scope.require(Permission::InventoryWrite)?;
    let change = OrderChange {
        supplier_id: input.supplier_id,
        expected_at: input
            .expected_at
            .map(|e| expected_at(e.as_deref()))
            .transpose()?,
        note: input
            .note
            .map(|n| optional("note", n.as_deref(), 5000))
            .transpose()?,
        status: None,
    };
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let po = writes::update(tx, store, id, &change, input.items.as_deref(), now)?;
            let rid = id.to_string();
            audit::record(
                tx,
                &actor,
                "purchase_order.updated",
                "purchase_order",
                &rid,
                now,
            )?;
            Ok(po)
        })
        .await?;
    Ok(Json(out))
}

async fn move_status(
    st: &AppState,
    scope: &StoreScope,
    id: PurchaseOrderId,
    from: &'static [PurchaseOrderStatus],
    to: PurchaseOrderStatus,
    action: &'static str,
) -> Result<PurchaseOrderOut, AppError> {
    scope.require(Permission::InventoryWrite)?;
    let (store, actor, now) = (scope.store_id, Actor::of(scope), st.clock.now());
    st.db
        .write(move |tx| {
            let po = writes::transition(tx, store, id, from, to, now)?;
            audit::record(tx, &actor, action, "purchase_order", &id.to_string(), now)?;
            Ok(po)
        })
        .await
}

/// Places a draft with the supplier: draft -> ordered (409 `invalid_status_transition`
/// from any other status).
#[utoipa::path(post, path = "/stores/{store_id}/purchase-orders/{purchase_order_id}/order",
    tag = "purchasing", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("purchase_order_id" = PurchaseOrderId, Path)),
    responses((status = 200, body = PurchaseOrderOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`invalid_status_transition`")))]
pub async fn order_purchase_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, PurchaseOrderId)>,
) -> Result<Json<PurchaseOrderOut>, AppError> {
    use PurchaseOrderStatus as S;
    let po = move_status(
        &st,
        &scope,
        ids.1,
        &[S::Draft],
        S::Ordered,
        "purchase_order.ordered",
    );
    Ok(Json(po.await?))
}

/// Cancels a draft, ordered or partially received purchase order: for a short shipment this
/// closes what is left, and what was received stays on hand (409 `invalid_status_transition`
/// once fully received, or when it is cancelled already).
#[utoipa::path(post, path = "/stores/{store_id}/purchase-orders/{purchase_order_id}/cancel",
    tag = "purchasing", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("purchase_order_id" = PurchaseOrderId, Path)),
    responses((status = 200, body = PurchaseOrderOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`invalid_status_transition`")))]
pub async fn cancel_purchase_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, PurchaseOrderId)>,
) -> Result<Json<PurchaseOrderOut>, AppError> {
    use PurchaseOrderStatus as S;
    let from = &[S::Draft, S::Ordered, S::PartiallyReceived];
    let po = move_status(
        &st,
        &scope,
        ids.1,
        from,
        S::Cancelled,
        "purchase_order.cancelled",
    );
    Ok(Json(po.await?))
}

/// Receives units: each goes on hand (a `purchase_order` stock adjustment, with the
/// low-stock and back-in-stock events it crosses) and the order becomes
/// `partially_received` or `received`, in one transaction. A draft, cancelled or received
/// order is 409 `invalid_status_transition`; more than is left on a line is 422 and
/// receives nothing.
#[utoipa::path(post, path = "/stores/{store_id}/purchase-orders/{purchase_order_id}/receive",
    tag = "purchasing", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), ("purchase_order_id" = PurchaseOrderId, Path)),
    request_body = ReceiveIn,
    responses((status = 200, body = PurchaseOrderOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "`invalid_status_transition`"), (status = 422, body = ErrorBody)))]
pub async fn receive_purchase_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, PurchaseOrderId)>,
    Json(input): Json<ReceiveIn>,
) -> Result<Json<PurchaseOrderOut>, AppError> {
    scope.require(Permission::InventoryWrite)?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            let po = writes::receive(tx, store, id, &input.items, now)?;
            let details = serde_json::json!({ "items": input.items.iter().map(|i| {
                serde_json::json!({ "variant_id": i.variant_id, "quantity": i.quantity })
            }).collect::<Vec<_>>() });
            audit::record_with_details(
                tx,
                &actor,
                "purchase_order.received",
                "purchase_order",
                &id.to_string(),
                &details,
                now,
            )?;
            Ok(po)
        })
        .await?;
    Ok(Json(out))
}
