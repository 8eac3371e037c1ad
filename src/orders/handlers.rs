//! Order handlers (issue 6 "Orders", "Payments and refunds").

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::model::{
    OrderFilter, OrderIn, OrderItem, OrderOut, OrderPatch, OrderStatus, RefundIn, RefundOut,
};
use super::payments;
use super::refunds;
use super::store::{self, HeldRefund};
use crate::audit::Actor;
use crate::db::rendered::RenderedJson;
use crate::error::{AppError, ErrorCode};
use crate::events::Event;
use crate::http::auth::StoreScope;
use crate::http::extract::{Json, Path, text};
use crate::http::idempotency;
use crate::http::page::{Page, PageQuery, Paged, RenderedPage};
use crate::http::permissions::Permission;
use crate::ids::{OrderId, RefundId, StoreId};
use crate::inventory::store::{self as stock, Change, insufficient};
use crate::state::AppState;
use crate::time;
use crate::webhooks;

type ErrorBody = crate::error::ErrorBody;

fn not_found() -> AppError {
    AppError::not_found("order")
}

/// Money amounts a client may send: 0 to 10^12 cents.
const MAX_CENTS: i64 = 1_000_000_000_000;

fn cents(field: &str, v: Option<i64>) -> Result<i64, AppError> {
    let v = v.unwrap_or(0);
    if (0..=MAX_CENTS).contains(&v) {
        Ok(v)
    } else {
        Err(AppError::field(field, format!("must be 0 to {MAX_CENTS}")))
    }
}

fn note(v: Option<&str>) -> Result<Option<String>, AppError> {
    v.map(|n| text("note", n, 0, 5000)).transpose()
}

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

/// 409 `invalid_status_transition`, with what is allowed.
fn invalid_transition(from: OrderStatus, to: OrderStatus) -> AppError {
    AppError::conflict(
        ErrorCode::InvalidStatusTransition,
        format!(
            "an order that is {} cannot become {}",
            from.as_str(),
            to.as_str()
        ),
    )
    .with_details(serde_json::json!({
        "from": from,
        "to": to,
        "allowed_status_transitions": from.allowed_next(),
    }))
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
    let new_note = note(input.note.as_deref())?;
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let payments_cfg = st.cfg.payments.clone();
    let out = st
        .db
        .write(move |tx| {
            let mut o = store::load(tx, store, id)?.ok_or_else(not_found)?;
            let mut event = None;
            if let Some(to) = input.status {
                if !o.status.allowed_next().contains(&to) {
                    return Err(invalid_transition(o.status, to));
                }
                store::move_stock(tx, &o, to, now)?;
                if to == OrderStatus::Paid {
                    let provider = payments_cfg.provider_for(o.source == "manual");
                    store::insert_payment(tx, store, id, provider, o.total_cents, now)?;
                    store::bump_customer(tx, store, o.customer_id, 0, o.total_cents)?;
                }
                o.set_status(to);
                event = Some(to.event());
            }
            if let Some(n) = new_note
                && n != o.note
            {
                o.note = n;
                event = event.or(Some(Event::OrdersUpdated));
            }
            let Some(event) = event else {
                return Ok(o);
            };
            o.updated_at = time::format(now);
            o.payments = store::payments(tx, id)?;
            store::save(tx, &o)?;
            webhooks::publish_change(
                tx,
                &actor,
                &webhooks::Change {
                    event,
                    data: &o,
                    action: "order.updated",
                    resource_id: &id.to_string(),
                },
                now,
            )?;
            Ok(o)
        })
        .await?;
    Ok(Json(out))
}

/// What step 1 of a refund found.
enum Held {
    /// A new refund, or a pending one no ask is running for: this request asks the provider.
    Ask(HeldRefund),
    /// The refund as it stands: settled, failed, or pending with another ask in flight.
    Known(RefundOut),
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
    if !(1..=MAX_CENTS).contains(&input.amount_cents) {
        return Err(AppError::field(
            "amount_cents",
            format!("must be 1 to {MAX_CENTS}"),
        ));
    }
    let reason = input
        .reason
        .as_deref()
        .map(|r| text("reason", r, 0, 500))
        .transpose()?
        .filter(|r| !r.is_empty());
    let (store, id, actor) = (scope.store_id, ids.1, Actor::of(&scope));
    let amount = input.amount_cents;
    // The client's key finds its refund again; without one, the refund's own id stands in.
    let refund_id = RefundId::new();
    let client_key = headers
        .get(idempotency::HEADER)
        .and_then(|v| v.to_str().ok())
        .map_or_else(|| refund_id.to_string(), str::to_owned);

    // The rest runs as its own task: a client that hangs up mid-way leaves neither a hold
    // without its ask nor the provider's answer unrecorded.
    let task = tokio::spawn(async move {
        // 1. Hold the amount as a pending refund (or find this key's refund), with the right
        //    to ask the provider until the lease ends and the background check behind it.
        let now = st.clock.now();
        let until = refunds::lease_end(&st, now);
        let (cfg, hmac_key, k) = (st.cfg.clone(), st.hmac_key.clone(), client_key.clone());
        let held = st
            .db
            .write(move |tx| {
                if !store::order_exists(tx, store, id)? {
                    return Err(not_found());
                }
                if let Some(earlier) = store::refund_by_client_key(tx, store, id, &k)? {
                    if earlier.refund.amount_cents != amount {
                        return Err(AppError::new(
                            ErrorCode::IdempotencyKeyReused,
                            "this Idempotency-Key was used for a refund of another amount",
                        ));
                    }
                    let rid = earlier.refund.id;
                    if earlier.refund.status == "pending"
                        && store::start_asking(tx, rid, now, until)?
                    {
                        return Ok(Held::Ask(earlier));
                    }
                    return Ok(Held::Known(earlier.refund));
                }
                let Some(r) = store::refundable(tx, store, id)? else {
                    return Err(AppError::conflict(
                        ErrorCode::NoRefundablePayment,
                        "the order has no approved payment to refund",
                    ));
                };
                if !payments::can_refund(&cfg.payments, &r.provider) {
                    return Err(AppError::new(
                        ErrorCode::PaymentProviderFailed,
                        "the payment provider holding this payment is not configured",
                    ));
                }
                if amount > r.balance_cents {
                    return Err(AppError::new(
                        ErrorCode::RefundExceedsRefundable,
                        format!(
                            "at most {} cents of this order can be refunded",
                            r.balance_cents
                        ),
                    )
                    .with_details(serde_json::json!({ "refundable_cents": r.balance_cents })));
                }
                let refund = RefundOut {
                    id: refund_id,
                    order_id: id,
                    payment_id: r.payment_id,
                    amount_cents: amount,
                    reason,
                    status: "pending".into(),
                    created_at: time::format(now),
                };
                let provider_key = payments::provider_key(&hmac_key, store, r.payment_id, &k);
                let by = store::Requester {
                    user_id: actor.user_id,
                    token_name: actor.token_name.as_deref(),
                    trace_id: &actor.trace_id,
                    via: actor.via.as_deref(),
                };
                store::insert_refund(
                    tx,
                    store,
                    &refund,
                    &k,
                    &provider_key,
                    Some(until),
                    Some(&by),
                )?;
                refunds::enqueue_check(tx, refund.id, until, now)?;
                Ok(Held::Ask(HeldRefund {
                    store_id: store,
                    refund,
                    provider: r.provider,
                    provider_key,
                    actor_user_id: Some(actor.user_id),
                    actor_token_name: actor.token_name.clone(),
                    trace_id: Some(actor.trace_id.clone()),
                    actor_via: actor.via.clone(),
                }))
            })
            .await?;
        let held = match held {
            Held::Known(r) => return Ok(r),
            Held::Ask(h) => h,
        };
        // Tests stop a request here, as a crash would, to see the check resume its hold.
        #[cfg(feature = "failpoints")]
        if crate::threads::run_blocking(move || {
            fail::fail_point!("orders::refund_before_ask", |arg| arg.as_deref()
                == Some(client_key.as_str()));
            false
        })
        .await
        {
            return Err(AppError::internal(anyhow::anyhow!(
                "fail point: stopped before asking the provider"
            )));
        }
        // 2. Ask, and record the answer.
        refunds::ask(&st, held, until).await
    });
    let refund = task.await.map_err(AppError::internal)??;
    match refund.status.as_str() {
        "succeeded" => Ok((StatusCode::CREATED, Json(refund)).into_response()),
        "failed" => Err(AppError::new(
            ErrorCode::PaymentProviderFailed,
            "the payment provider refused the refund",
        )
        .with_details(serde_json::json!({ "refund": refund }))),
        // Not kept for replay: a repeat of the request must see where the refund stands now.
        _ => Ok(idempotency::no_store((StatusCode::ACCEPTED, Json(refund)))),
    }
}
