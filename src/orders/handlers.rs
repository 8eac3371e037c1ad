//! Order handlers (issue 6 "Orders", "Payments and refunds").

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};

use super::model::{
    OrderFilter, OrderIn, OrderItem, OrderOut, OrderPatch, OrderStatus, RefundIn, RefundOut,
};
use super::payments;
use super::store;
use crate::audit::{self, Actor};
use crate::http::auth::StoreScope;
use crate::http::error::{AppError, ErrorCode};
use crate::http::extract::{Json, Path, text};
use crate::http::idempotency;
use crate::http::page::{Page, PageQuery, Paged, RenderedJson, RenderedPage};
use crate::http::permissions::Permission;
use crate::ids::{OrderId, RefundId, StoreId};
use crate::inventory::handlers::insufficient;
use crate::inventory::store::{self as stock, Change};
use crate::state::AppState;
use crate::time;

type ErrorBody = crate::http::error::ErrorBody;

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
            audit::change(
                tx,
                &actor,
                "orders.created",
                &o,
                "order.created",
                "order",
                &o.id.to_string(),
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

/// The stock side of a status move: fulfilment takes the reserved units off hand,
/// cancelling releases them.
fn move_stock(
    tx: &rusqlite::Transaction<'_>,
    o: &OrderOut,
    to: OrderStatus,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), AppError> {
    let sign = match to {
        OrderStatus::Fulfilled => (-1, -1),
        OrderStatus::Cancelled => (0, -1),
        _ => return Ok(()),
    };
    for item in &o.items {
        let q = item.quantity;
        // A variant deleted since the order was placed has no stock left to move.
        if let Change::Short(level) =
            stock::change(tx, o.store_id, item.variant_id, sign.0 * q, sign.1 * q, now)?
        {
            return Err(AppError::internal(anyhow::anyhow!(
                "variant {} holds {} reserved, fewer than order {} reserved",
                level.variant_id,
                level.reserved,
                o.id
            )));
        }
    }
    Ok(())
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
                move_stock(tx, &o, to, now)?;
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
                event = event.or(Some("orders.updated"));
            }
            let Some(event) = event else {
                return Ok(o);
            };
            o.updated_at = time::format(now);
            o.payments = store::payments(tx, id)?;
            store::save(tx, &o)?;
            audit::change(
                tx,
                &actor,
                event,
                &o,
                "order.updated",
                "order",
                &id.to_string(),
                now,
            )?;
            Ok(o)
        })
        .await?;
    Ok(Json(out))
}

/// What step 1 of a refund found: a new pending refund, one left pending by an earlier
/// attempt with the same key, or one that already succeeded.
enum Held {
    Pending(RefundOut, String),
    Done(RefundOut),
}

/// Refunds part or all of the order's payment. The refund is held as pending while the
/// provider is asked, so concurrent refunds cannot spend the same balance; a provider
/// failure is 502 `payment_provider_failed` and records nothing.
#[utoipa::path(post, path = "/stores/{store_id}/orders/{order_id}/refund", tag = "orders",
    security(("bearer" = [])), params(("store_id" = StoreId, Path), ("order_id" = OrderId, Path)),
    request_body = RefundIn,
    responses((status = 201, body = RefundOut), (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody), (status = 422, body = ErrorBody),
              (status = 502, body = ErrorBody)))]
pub async fn refund_order(
    State(st): State<AppState>,
    scope: StoreScope,
    Path(ids): Path<(StoreId, OrderId)>,
    headers: HeaderMap,
    Json(input): Json<RefundIn>,
) -> Result<(StatusCode, Json<RefundOut>), AppError> {
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
    let (store, id, actor, now) = (scope.store_id, ids.1, Actor::of(&scope), st.clock.now());
    let amount = input.amount_cents;
    // The provider's key: the client's, or the new refund's id when it sent none.
    let refund_id = RefundId::new();
    let key = headers
        .get(idempotency::HEADER)
        .and_then(|v| v.to_str().ok())
        .map_or_else(|| refund_id.to_string(), str::to_owned);

    // 1. Hold the amount as a pending refund (or find this key's earlier attempt).
    let k = key.clone();
    let held = st
        .db
        .write(move |tx| {
            if !store::order_exists(tx, store, id)? {
                return Err(not_found());
            }
            if let Some(earlier) = store::refund_by_key(tx, store, id, &k)? {
                if earlier.amount_cents != amount {
                    return Err(AppError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        ErrorCode::IdempotencyKeyReused,
                        "this Idempotency-Key was used for a refund of another amount",
                    ));
                }
                let provider = store::payment_provider(tx, earlier.payment_id)?;
                return Ok(if earlier.status == "pending" {
                    Held::Pending(earlier, provider)
                } else {
                    Held::Done(earlier)
                });
            }
            let Some(r) = store::refundable(tx, store, id)? else {
                return Err(AppError::conflict(
                    ErrorCode::NoRefundablePayment,
                    "the order has no approved payment to refund",
                ));
            };
            if amount > r.balance_cents {
                return Err(AppError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
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
            store::insert_refund(tx, store, &refund, &k)?;
            Ok(Held::Pending(refund, r.provider))
        })
        .await?;
    let (refund, provider) = match held {
        Held::Done(r) => return Ok((StatusCode::CREATED, Json(r))),
        Held::Pending(r, p) => (r, p),
    };

    // 2 and 3 run as their own task: a client that hangs up mid-way does not leave the
    // provider's answer unrecorded.
    let task = tokio::spawn(async move {
        let asked =
            payments::refund(&st.cfg.payments, &provider, refund.payment_id, amount, &key).await;
        let rid = refund.id;
        if let Err(e) = asked {
            st.db.write(move |tx| store::delete_refund(tx, rid)).await?;
            return Err(AppError::new(
                StatusCode::BAD_GATEWAY,
                ErrorCode::PaymentProviderFailed,
                format!("the payment provider did not confirm the refund: {e}"),
            ));
        }
        st.db
            .write(move |tx| settle_refund(tx, store, id, refund, &actor, now))
            .await
    });
    let out = task.await.map_err(AppError::internal)??;
    Ok((StatusCode::CREATED, Json(out)))
}

/// Records a refund the provider confirmed: the payment's and order's refunded amounts, the
/// order's status, the customer's spend, and the event (`orders.refunded` when it is full).
fn settle_refund(
    tx: &rusqlite::Transaction<'_>,
    store: StoreId,
    id: OrderId,
    mut refund: RefundOut,
    actor: &Actor,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<RefundOut, AppError> {
    refund.status = "succeeded".into();
    store::confirm_refund(tx, &refund)?;
    let mut o = store::load(tx, store, id)?.ok_or_else(not_found)?;
    o.refunded_cents += refund.amount_cents;
    let full = o.refunded_cents >= o.total_cents;
    if o.status.refund_moves() {
        // A paid order still holds its stock; refunded, it will not be fulfilled (the
        // lifecycle has no way back), so the units go back on sale.
        if o.status == OrderStatus::Paid {
            move_stock(tx, &o, OrderStatus::Cancelled, now)?;
        }
        o.set_status(if full {
            OrderStatus::Refunded
        } else {
            OrderStatus::PartiallyRefunded
        });
    }
    o.updated_at = time::format(now);
    store::save(tx, &o)?;
    store::bump_customer(tx, store, o.customer_id, 0, -refund.amount_cents)?;
    let event = if full {
        "orders.refunded"
    } else {
        "orders.updated"
    };
    audit::change(
        tx,
        actor,
        event,
        &o,
        "order.refunded",
        "order",
        &id.to_string(),
        now,
    )?;
    Ok(refund)
}

#[cfg(feature = "bench-routes")]
#[derive(Debug, serde::Deserialize)]
pub struct BenchSeed {
    orders: i64,
    reviews: i64,
}

/// Benchmark builds only (feature `bench-routes`): adds orders and reviews to a store that
/// has products and customers, in transactions of 5,000 rows, through the demo seeder.
#[cfg(feature = "bench-routes")]
pub async fn seed_for_bench(
    State(st): State<AppState>,
    scope: StoreScope,
    Json(input): Json<BenchSeed>,
) -> Result<StatusCode, AppError> {
    scope.require(Permission::OrdersWrite)?;
    let store = scope.store_id;
    let (mut orders, mut reviews, mut round) = (input.orders, input.reviews, 0);
    while orders > 0 || reviews > 0 {
        let (o, r) = (orders.min(5000), reviews.min(5000));
        let now = st.clock.now();
        round += 1;
        st.db
            .write(move |tx| crate::setup::demo::bulk(tx, store, o, r, round, now))
            .await?;
        orders -= o;
        reviews -= r;
    }
    Ok(StatusCode::NO_CONTENT)
}
