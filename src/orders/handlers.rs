//! Order handlers (issue 6 "Orders", "Payments and refunds").

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::model::{
    OrderFilter, OrderIn, OrderOut, OrderPatch, OrderStatus, PlainOrderIn, RefundIn, RefundOut,
};
use super::store;
use super::writes::{self, Origin, RefundOutcome, not_found};
use crate::audit::Actor;
use crate::db::rendered::RenderedJson;
use crate::error::AppError;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path};
use crate::http::idempotency;
use crate::http::page::{Page, PageQuery, Paged, RenderedPage};
use crate::http::permissions::Permission;
use crate::ids::{OrderId, StoreId};
use crate::state::AppState;

type ErrorBody = crate::error::ErrorBody;

/// Creates an order priced from the variants and reserves its stock.
///
/// The organization's plan limits the orders created in a calendar month (UTC, all its
/// stores counted): one more past it is 402 `plan_limit_reached` (`details {limit:
/// "orders_per_month", max, used, plan}`), and none is taken while its subscription is
/// suspended or canceled (402 `subscription_inactive`, `details {status}`). An order the
/// storefront takes is never refused for the limit: it is counted, and the first one past it
/// in a month leaves a `billing.limit_exceeded` audit entry for the owners.
#[utoipa::path(post, path = "/stores/{store_id}/orders", tag = "orders", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = PlainOrderIn,
    responses((status = 201, body = OrderOut),
              (status = 402, body = ErrorBody, description = "plan_limit_reached or subscription_inactive"),
              (status = 409, body = ErrorBody, description = "`insufficient_stock`"), (status = 422, body = ErrorBody)))]
pub async fn create_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<OrderIn>,
) -> Result<(StatusCode, Json<OrderOut>), AppError> {
    scope.require(Permission::OrdersWrite)?;
    let out = writes::create_order(&st, &Actor::of(&scope), input, Origin::Api).await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// Creates a manual order (a sale over the messaging app, say): lines may carry
/// `unit_price_cents`, and its payment is recorded by hand.
///
/// Held to the plan's monthly orders like `POST .../orders` (402 `plan_limit_reached`,
/// `details {limit: "orders_per_month", max, used, plan}`; 402 `subscription_inactive` while
/// suspended or canceled). Only storefront orders are never refused for the limit.
#[utoipa::path(post, path = "/stores/{store_id}/orders/manual", tag = "orders", security(("bearer" = [])),
    params(("store_id" = StoreId, Path)), request_body = OrderIn,
    responses((status = 201, body = OrderOut),
              (status = 402, body = ErrorBody, description = "plan_limit_reached or subscription_inactive"),
              (status = 409, body = ErrorBody, description = "`insufficient_stock`"), (status = 422, body = ErrorBody)))]
pub async fn create_manual_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<OrderIn>,
) -> Result<(StatusCode, Json<OrderOut>), AppError> {
    scope.require(Permission::OrdersWrite)?;
    let out = writes::create_order(&st, &Actor::of(&scope), input, Origin::Manual).await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// The store's orders, newest first; filters `status`, `customer_id` and `number`.
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
    let (status, customer, number) = (f.status, f.customer_id, f.number);
    if number.is_some_and(|n| n < 1) {
        return Err(AppError::field("number", "must be at least 1"));
    }
    let key = format!(
        "orders:{store}:{}:{}:{}",
        status.map_or("", OrderStatus::as_str),
        customer.map(|c| c.to_string()).unwrap_or_default(),
        number.map(|n| n.to_string()).unwrap_or_default()
    );
    let page = match number {
        None => {
            page.list_rendered(
                &st.db,
                &key,
                move |c, after, page, offset| {
                    store::list(c, store, status, customer, after, page, offset)
                },
                move |c| store::count(c, store, status, customer),
            )
            .await?
        }
        Some(n) => {
            page.list_rendered(
                &st.db,
                &key,
                move |c, after, page, offset| {
                    store::list_number(c, store, n, status, customer, after, page, offset)
                },
                move |c| store::count_number(c, store, n, status, customer),
            )
            .await?
        }
    };
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
              (status = 409, body = ErrorBody, description = "`invalid_status_transition` or `insufficient_stock`"), (status = 422, body = ErrorBody)))]
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
              (status = 409, body = ErrorBody, description = "`no_refundable_payment` or `invalid_status_transition`"), (status = 422, body = ErrorBody, description = "`refund_exceeds_refundable`, `validation_failed` or `idempotency_key_reused`"),
              (status = 502, body = ErrorBody, description = "`payment_provider_failed`")))]
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
