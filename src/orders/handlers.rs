//! Order handlers (issue 6 "Orders", "Payments and refunds").

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::model::{
    OrderFilter, OrderIn, OrderItem, OrderOut, OrderPatch, OrderStatus, RefundIn, RefundOut,
};
use super::store;
use super::writes::{self, MAX_CENTS, RefundOutcome, cents, not_found, note};
use crate::audit::Actor;
use crate::db::rendered::RenderedJson;
use crate::error::AppError;
use crate::events::Event;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path};
use crate::http::idempotency;
use crate::http::page::{Page, PageQuery, Paged, RenderedPage};
use crate::http::permissions::Permission;
use crate::ids::{OrderId, StoreId};
use crate::inventory::store::{self as stock, Change, insufficient};
use crate::state::AppState;
use crate::time;
use crate::webhooks;

type ErrorBody = crate::error::ErrorBody;

/// Checks a create body's shape before the transaction: lines, amounts, note.
fn check_new(input: &OrderIn, manual: bool) -> Result<(), AppError> {
    if input.items.is_empty() || input.items.len() > 100 {
        return Err(AppError::field("items", "an order has 1 to 100 items"));
    }
    for (i, item) in input.items.iter().enumerate() {
        if !(1..=10_000).contains(&item.quantity) {
            return Err(AppError::field(
                format!("items[{i}].quantity"),
                "must be 1 to 10000",
            ));
        }
        if input.items[..i]
            .iter()
            .any(|o| o.variant_id == item.variant_id)
        {
            return Err(AppError::field(
                format!("items[{i}].variant_id"),
                "appears twice; send one item with the total quantity",
            ));
        }
        match item.unit_price_cents {
            Some(_) if !manual => {
                return Err(AppError::field(
                    format!("items[{i}].unit_price_cents"),
                    "only manual orders (POST .../orders/manual) set their own prices",
                ));
            }
            Some(p) => {
                cents(&format!("items[{i}].unit_price_cents"), Some(p))?;
            }
            None => {}
        }
    }
    cents("shipping_cents", input.shipping_cents)?;
    cents("discount_cents", input.discount_cents)?;
    Ok(())
}

/// Writes a new order in one transaction: lines priced from the variants, stock reserved
/// (409 `insufficient_stock` rolls everything back), the customer's counters, the event.
async fn create(
    st: AppState,
    scope: StoreScope,
    input: OrderIn,
    manual: bool,
) -> Result<(StatusCode, Json<OrderOut>), AppError> {
    scope.require(Permission::OrdersWrite)?;
    check_new(&input, manual)?;
    let note = note(input.note.as_deref())?.unwrap_or_default();
    let (store, actor, now) = (scope.store_id, Actor::of(&scope), st.clock.now());
    let out = st
        .db
        .write(move |tx| {
            if !crate::customers::store::exists(tx, store, input.customer_id)? {
                return Err(AppError::field(
                    "customer_id",
                    "is not a customer of this store",
                ));
            }
            let mut items = Vec::with_capacity(input.items.len());
            for (i, line) in input.items.iter().enumerate() {
                let Some(v) = store::sellable(tx, store, line.variant_id)? else {
                    return Err(AppError::field(
                        format!("items[{i}].variant_id"),
                        "is not a variant of this store",
                    ));
                };
                match stock::change(tx, store, line.variant_id, 0, line.quantity, now)? {
                    Change::Done(_) => {}
                    Change::Short(level) => return Err(insufficient(&level, line.quantity)),
                    Change::Missing => {
                        return Err(AppError::internal(anyhow::anyhow!(
                            "variant {} vanished inside its transaction",
                            line.variant_id
                        )));
                    }
                }
                let unit = line.unit_price_cents.unwrap_or(v.price_cents);
                let total = unit
                    .checked_mul(line.quantity)
                    .filter(|t| *t <= MAX_CENTS)
                    .ok_or_else(|| {
                        AppError::field(format!("items[{i}]"), "the line total is too large")
                    })?;
                items.push(OrderItem {
                    variant_id: line.variant_id,
                    product_id: v.product_id,
                    title: v.product_title,
                    variant_title: v.variant_title,
                    sku: v.sku,
                    quantity: line.quantity,
                    unit_price_cents: unit,
                    total_cents: total,
                });
            }
            let subtotal: i64 = items.iter().map(|i| i.total_cents).sum();
            let shipping = input.shipping_cents.unwrap_or(0);
            let discount = input.discount_cents.unwrap_or(0);
            if subtotal > MAX_CENTS {
                return Err(AppError::field("items", "the order total is too large"));
            }
            if discount > subtotal + shipping {
                return Err(AppError::field(
                    "discount_cents",
                    "must not exceed the subtotal plus shipping",
                ));
            }
            let status = OrderStatus::Pending;
            let at = time::format(now);
            let o = OrderOut {
                id: OrderId::new(),
                store_id: store,
                number: store::next_number(tx, store)?,
                customer_id: Some(input.customer_id),
                source: if manual { "manual" } else { "api" }.into(),
                items,
                subtotal_cents: subtotal,
                shipping_cents: shipping,
                discount_cents: discount,
                total_cents: subtotal + shipping - discount,
                refunded_cents: 0,
                currency: store::currency(tx, store)?,
                status,
                allowed_status_transitions: status.allowed_next().to_vec(),
                payments: Vec::new(),
                note,
                created_at: at.clone(),
                updated_at: at,
            };
            store::insert(tx, &o)?;
            store::bump_customer(tx, store, o.customer_id, 1, 0)?;
            webhooks::publish_change(
                tx,
                &actor,
                &webhooks::Change {
                    event: Event::OrdersCreated,
                    data: &o,
                    action: "order.created",
                    resource_id: &o.id.to_string(),
                },
                now,
            )?;
            Ok(o)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// Creates an order priced from the variants and reserves its stock.
#[utoipa::path(post, path = "/stores/{store_id}/orders", tag = "orders", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = OrderIn,
    responses((status = 201, body = OrderOut), (status = 409, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn create_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<OrderIn>,
) -> Result<(StatusCode, Json<OrderOut>), AppError> {
    create(st, scope, input, false).await
}

/// Creates a manual order (a sale over the messaging app, say): lines may carry
/// `unit_price_cents`, and its payment is recorded by hand.
#[utoipa::path(post, path = "/stores/{store_id}/orders/manual", tag = "orders", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = OrderIn,
    responses((status = 201, body = OrderOut), (status = 409, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
pub async fn create_manual_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<OrderIn>,
) -> Result<(StatusCode, Json<OrderOut>), AppError> {
    create(st, scope, input, true).await
}

/// The store's orders, newest first; filters `status` and `customer_id`.
#[utoipa::path(get, path = "/stores/{store_id}/orders", tag = "orders", security(("bearer" = [])),
    params(("store_id" = StoreId, Path), PageQuery, OrderFilter),
    responses((status = 200, body = Page<OrderOut>), (status = 403, body = ErrorBody)))]
pub async fn list_orders(
    State(st): State<AppState>,
    scope: StoreScope,
    Paged(page, f): Paged<OrderFilter>,
) -> Result<RenderedPage, AppError> {
    scope.require(Permission::OrdersRead)?;
    let store = scope.store_id;
    let (status, customer) = (f.status, f.customer_id);
    let key = format!(
        "orders:{store}:{}:{}",
        status.map_or("", OrderStatus::as_str),
        customer.map(|c| c.to_string()).unwrap_or_default()
    );
    let page = page
        .list_rendered(
            &st.db,
            &key,
            move |c, after, page, offset| {
                store::list(c, store, status, customer, after, page, offset)
            },
            move |c| store::count(c, store, status, customer),
        )
        .await?;
    Ok(page)
}

/// One order.
#[utoipa::path(get, path = "/stores/{store_id}/orders/{order_id}", tag = "orders",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("order_id" = OrderId, Path)),
    responses((status = 200, body = OrderOut), (status = 404, body = ErrorBody)))]
pub async fn get_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, OrderId)>,
) -> Result<RenderedJson, AppError> {
    scope.require(Permission::OrdersRead)?;
    let (store, id) = (scope.store_id, ids.1);
    st.db
        .read(move |c| store::get_rendered(c, store, id))
        .await?
        .ok_or_else(not_found)
}

/// Moves the order along its lifecycle (`status`, one of `allowed_status_transitions`)
/// and/or changes its note.
#[utoipa::path(patch, path = "/stores/{store_id}/orders/{order_id}", tag = "orders",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("order_id" = OrderId, Path)),
    request_body = OrderPatch,
    responses((status = 200, body = OrderOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn update_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, OrderId)>,
    Json(input): Json<OrderPatch>,
) -> Result<Json<OrderOut>, AppError> {
    scope.require(Permission::OrdersWrite)?;
    let order = writes::update_order(&st, &Actor::of(&scope), scope.store_id, ids.1, input).await?;
    Ok(Json(order))
}

/// Refunds part or all of the order's payment. The refund is held as pending while the
/// provider is asked, so concurrent refunds cannot spend the same balance. 201 when the
/// provider confirmed it; 202 with the pending refund when its outcome is not known yet (the
/// provider did not answer for sure, or another request with this key is asking): it stays
/// held and is asked about again in the background. A definite refusal is 502
/// `payment_provider_failed` and releases the amount.
#[utoipa::path(post, path = "/stores/{store_id}/orders/{order_id}/refund", tag = "orders",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("order_id" = OrderId, Path)),
    request_body = RefundIn,
    responses((status = 201, body = RefundOut, description = "The provider confirmed the refund."),
              (status = 202, body = RefundOut,
               description = "The outcome is not known yet: the refund is `pending`, its amount held. \
                              Repeat the request with the same Idempotency-Key to see where it stands."),
              (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody), (status = 422, body = ErrorBody),
              (status = 502, body = ErrorBody, description = "The provider refused the refund.")))]
pub async fn refund_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, OrderId)>,
    headers: HeaderMap,
    Json(input): Json<RefundIn>,
) -> Result<Response, AppError> {
    scope.require(Permission::OrdersRefund)?;
    let key = headers
        .get(idempotency::HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match writes::refund(&st, &Actor::of(&scope), scope.store_id, ids.1, input, key).await? {
        RefundOutcome::Settled(refund) => Ok((StatusCode::CREATED, Json(refund)).into_response()),
        // Not kept for replay: a repeat of the request must see where the refund stands now.
        RefundOutcome::Pending(refund) => {
            Ok(idempotency::no_store((StatusCode::ACCEPTED, Json(refund))))
        }
    }
}
