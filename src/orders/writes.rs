//! The orders' writes, shared by their REST handlers and the assistant (issue 16): each
//! checks its input and writes the change, its event and its audit entry in one transaction.
//! Permission checks stay with the callers (the handler's `scope.require`, the assistant's
//! at approval time).

use crate::db::Tx;
use chrono::{DateTime, Utc};

use super::model::{OrderIn, OrderItem, OrderOut, OrderPatch, OrderStatus, RefundIn, RefundOut};
use super::payments;
use super::refunds;
use super::store::{self, HeldRefund};
use crate::audit::Actor;
use crate::billing::limits;
use crate::billing::plans::Catalog;
use crate::error::{AppError, ErrorCode};
use crate::events::Event;
use crate::http::extract::text;
use crate::ids::{OrderId, RefundId, StoreId};
use crate::inventory::store::{self as stock, Change, insufficient};
use crate::state::AppState;
use crate::time;
use crate::webhooks;

/// Moves an order along its lifecycle (`status`, one of its `allowed_status_transitions`;
/// 409 `invalid_status_transition` otherwise) and/or changes its note (at most 5,000
/// characters, 422), as `PATCH .../orders/{id}` does. Stock moves and a payment is recorded
/// with the status; the order's event and `order.updated` audit entry are written with the
/// change. A patch that changes nothing writes nothing.
pub async fn update_order(
    st: &AppState,
    actor: &Actor,
    store: StoreId,
    id: OrderId,
    input: OrderPatch,
) -> Result<OrderOut, AppError> {
    let new_note = note(input.note.as_deref())?;
    let (actor, now) = (actor.clone(), st.clock.now());
    let payments_cfg = st.cfg.payments.clone();
    st.db
        .write(move |tx| {
            let change = (input.status, new_note);
            update_in(tx, &actor, &payments_cfg, (store, id), change, now)
        })
        .await
}

/// [`update_order`] in the caller's transaction, the note already checked: the one way an
/// order's status moves (the route, and the storefront's expiry of unpaid orders).
pub fn update_in(
    tx: &Tx<'_>,
    actor: &Actor,
    payments_cfg: &payments::PaymentsConfig,
    (store, id): (StoreId, OrderId),
    (status, new_note): (Option<OrderStatus>, Option<String>),
    now: DateTime<Utc>,
) -> Result<OrderOut, AppError> {
    let mut o = store::load(tx, store, id)?.ok_or_else(not_found)?;
    let mut event = None;
    if let Some(to) = status {
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
        actor,
        &webhooks::Change {
            event,
            data: &o,
            action: "order.updated",
            resource_id: &id.to_string(),
        },
        now,
    )?;
    Ok(o)
}

/// Where a new order comes from: its `source`, and how the plan's monthly orders hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `POST .../orders`: priced from the variants.
    Api,
    /// `POST .../orders/manual`: lines may set their own prices; paid by hand.
    Manual,
    /// The storefront's checkout of a cart (`carts::checkout`): priced from the variants; a
    /// shopper is never turned away for the merchant's plan.
    Storefront,
}

impl Origin {
    pub fn source(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Manual => "manual",
            Self::Storefront => "storefront",
        }
    }
}

/// Holds a new order to the organization's plan, in the transaction that adds it: an API
/// or manual order past this month's `orders_per_month` is 402 `plan_limit_reached`, and
/// none is taken while the subscription is suspended or canceled (402
/// `subscription_inactive`); a storefront order is never refused, only counted (the owners
/// are told once a month, `billing.limit_exceeded`).
pub fn admit(
    tx: &Tx<'_>,
    plans: &Catalog,
    actor: &Actor,
    origin: Origin,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let orders = limits::Limit::OrdersThisMonth;
    match origin {
        Origin::Api | Origin::Manual => {
            limits::allow_one_more(tx, plans, actor.tenant_id, orders, now)
        }
        Origin::Storefront => limits::count_one_more(tx, plans, actor, orders, now),
    }
}

/// Creates an order in `actor`'s store, as `POST .../orders` and `.../orders/manual` do:
/// the body's shape checked first (422), then, in one transaction, the plan's limit
/// ([`admit`]), the lines priced from the variants (a manual order's may carry their own
/// prices), stock reserved (409 `insufficient_stock` rolls everything back), the customer's
/// counters, the event and the `order.created` audit entry.
pub async fn create_order(
    st: &AppState,
    actor: &Actor,
    input: OrderIn,
    origin: Origin,
) -> Result<OrderOut, AppError> {
    // The shape first, so a bad body never waits for the writer.
    check_new(&input, origin == Origin::Manual)?;
    note(input.note.as_deref())?;
    let (actor, now, plans) = (actor.clone(), st.clock.now(), st.cfg.plans.clone());
    st.db
        .write(move |tx| create_in(tx, &plans, &actor, &input, origin, now))
        .await
}

/// [`create_order`] inside the caller's transaction: the storefront's checkout creates the
/// order and closes its cart in one. The same checks, limit, stock reservation, event and
/// audit entry; an error leaves the caller to roll everything back.
pub fn create_in(
    tx: &Tx<'_>,
    plans: &Catalog,
    actor: &Actor,
    input: &OrderIn,
    origin: Origin,
    now: DateTime<Utc>,
) -> Result<OrderOut, AppError> {
    check_new(input, origin == Origin::Manual)?;
    let store = actor
        .store_id
        .ok_or_else(|| AppError::internal(anyhow::anyhow!("an order needs a store")))?;
    let note = note(input.note.as_deref())?.unwrap_or_default();
    admit(tx, plans, actor, origin, now)?;
    insert_order(tx, actor, store, input, note, origin, now)
}

/// The new order's rows, in the caller's transaction.
fn insert_order(
    tx: &Tx<'_>,
    actor: &Actor,
    store: StoreId,
    input: &OrderIn,
    note: String,
    origin: Origin,
    now: DateTime<Utc>,
) -> Result<OrderOut, AppError> {
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
            .ok_or_else(|| AppError::field(format!("items[{i}]"), "the line total is too large"))?;
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
        source: origin.source().into(),
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
        actor,
        &webhooks::Change {
            event: Event::OrdersCreated,
            data: &o,
            action: "order.created",
            resource_id: &o.id.to_string(),
        },
        now,
    )?;
    Ok(o)
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

/// How a refund request ended, short of a refusal (an error, 502 `payment_provider_failed`).
#[derive(Debug, Clone)]
pub enum RefundOutcome {
    /// The provider confirmed the refund (the REST route answers 201).
    Settled(RefundOut),
    /// Not known yet: the refund is `pending`, its amount held, and asked about again in the
    /// background (202).
    Pending(RefundOut),
}

impl RefundOutcome {
    /// The refund as it stands.
    pub fn refund(&self) -> &RefundOut {
        match self {
            Self::Settled(r) | Self::Pending(r) => r,
        }
    }
}

/// What step 1 of a refund found.
enum Held {
    /// A new refund, or a pending one no ask is running for: this request asks the provider.
    Ask(HeldRefund),
    /// The refund as it stands: settled, failed, or pending with another ask in flight.
    Known(RefundOut),
}

/// Refunds part or all of an order's payment, as `POST .../orders/{id}/refund` does:
/// `amount_cents` of 1 to 10^12 and a `reason` of at most 500 characters (422), held as a
/// pending refund while the provider is asked, so concurrent refunds cannot spend the same
/// balance. `key` finds the refund again on a repeat (the request's `Idempotency-Key`; a
/// repeat with another amount is 422 `idempotency_key_reused`); without one the refund's own
/// id stands in. The hold and the ask run as their own task, so a caller that goes away
/// mid-way leaves neither a hold without its ask nor the provider's answer unrecorded.
pub async fn refund(
    st: &AppState,
    actor: &Actor,
    store: StoreId,
    order: OrderId,
    input: RefundIn,
    key: Option<String>,
) -> Result<RefundOutcome, AppError> {
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
    let (st, id, actor) = (st.clone(), order, actor.clone());
    let amount = input.amount_cents;
    // The client's key finds its refund again; without one, the refund's own id stands in.
    let refund_id = RefundId::new();
    let client_key = key.unwrap_or_else(|| refund_id.to_string());

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
        "succeeded" => Ok(RefundOutcome::Settled(refund)),
        "failed" => Err(AppError::new(
            ErrorCode::PaymentProviderFailed,
            "the payment provider refused the refund",
        )
        .with_details(serde_json::json!({ "refund": refund }))),
        _ => Ok(RefundOutcome::Pending(refund)),
    }
}

pub(super) fn not_found() -> AppError {
    AppError::not_found("order")
}

/// Money amounts a client may send: 0 to 10^12 cents.
pub(super) const MAX_CENTS: i64 = 1_000_000_000_000;

pub(super) fn cents(field: &str, v: Option<i64>) -> Result<i64, AppError> {
    let v = v.unwrap_or(0);
    if (0..=MAX_CENTS).contains(&v) {
        Ok(v)
    } else {
        Err(AppError::field(field, format!("must be 0 to {MAX_CENTS}")))
    }
}

/// An order's note: trimmed, at most 5,000 characters.
pub(super) fn note(v: Option<&str>) -> Result<Option<String>, AppError> {
    v.map(|n| text("note", n, 0, 5000)).transpose()
}

#[cfg(test)]
mod tests {
    //! The storefront's path through [`admit`] (the checkout's, `carts::checkout`): over a
    //! real database with every migration applied.

    use rusqlite::{Connection, params};
    use serde_json::json;

    use super::{Origin, admit};
    use crate::audit::{Actor, OnRecord};
    use crate::billing::plans::{Catalog, Limits, Plan};
    use crate::error::ErrorCode;
    use crate::ids::{StoreId, TenantId, UserId};
    use crate::time;

    fn catalog() -> Catalog {
        let limits = Limits {
            stores: 1,
            members_per_store: 1,
            products: 1,
            orders_per_month: 2,
            assistant_messages_per_store_per_month: 1,
        };
        Catalog {
            plans: vec![Plan {
                code: "tiny".into(),
                name: "Tiny".into(),
                description: String::new(),
                currency: "BRL".into(),
                monthly_price_cents: 100,
                annual_price_cents: 1000,
                limits,
            }],
            default_code: "tiny".into(),
        }
    }

    /// An order row as any origin leaves it, created at `at`.
    fn order(c: &Connection, store: StoreId, number: i64, at: chrono::DateTime<chrono::Utc>) {
        c.execute(
            "INSERT INTO orders (id, store_id, number, source, items, subtotal_cents,
                 shipping_cents, discount_cents, total_cents, currency, status, created_at,
                 updated_at, rendered)
             VALUES (?1, ?2, ?3, 'api', '[]', 0, 0, 0, 0, 'BRL', 'pending', ?4, ?4, '{}')",
            params![
                uuid::Uuid::now_v7().to_string(),
                store,
                number,
                time::format(at)
            ],
        )
        .unwrap();
    }

    /// The `billing.limit_exceeded` entries' details, oldest first.
    fn told(c: &Connection) -> Vec<serde_json::Value> {
        let mut s = c
            .prepare(
                "SELECT details FROM audit_log WHERE action = 'billing.limit_exceeded'
                 ORDER BY created_at",
            )
            .unwrap();
        s.query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(|d| serde_json::from_str(&d.unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn a_storefront_order_is_never_refused_and_the_owners_are_told_once_a_month() {
        let mut c = Connection::open_in_memory().unwrap();
        crate::db::migrate::run(&mut c).unwrap();
        let plans = catalog();
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-02T12:00:00Z")
            .unwrap()
            .to_utc();
        let (tenant, store) = (TenantId::new(), StoreId::new());
        let at = time::format(now);
        c.execute(
            "INSERT INTO tenants (id, name, slug, created_at, updated_at) VALUES (?1, 'O', 'o', ?2, ?2)",
            params![tenant, at],
        )
        .unwrap();
        c.execute(
            "INSERT INTO stores (id, tenant_id, name, slug, created_at, updated_at)
             VALUES (?1, ?2, 'S', 's', ?3, ?3)",
            params![store, tenant, at],
        )
        .unwrap();
        let tx = c.savepoint().unwrap();
        crate::billing::subscriptions::start_trial(&tx, tenant, Some("tiny"), now).unwrap();
        tx.commit().unwrap();
        let actor = Actor {
            store_id: Some(store),
            tenant_id: tenant,
            user_id: UserId::new(),
            token_name: None,
            trace_id: "test".into(),
            via: None,
            on_record: OnRecord::default(),
        };
        let admit_at = |c: &mut Connection, origin, when| {
            let tx = c.savepoint().unwrap();
            let r = admit(&tx, &plans, &actor, origin, when);
            tx.commit().unwrap();
            r
        };

        // At the limit (two this month; last month's do not count), API and manual orders
        // are refused with what was reached.
        order(&c, store, 1000, now - chrono::Duration::days(5));
        order(&c, store, 1001, now);
        assert!(
            admit_at(&mut c, Origin::Api, now).is_ok(),
            "one of two used"
        );
        order(&c, store, 1002, now);
        for origin in [Origin::Api, Origin::Manual] {
            let e = admit_at(&mut c, origin, now).unwrap_err();
            assert_eq!(e.code, ErrorCode::PlanLimitReached);
            assert_eq!(
                e.details,
                Some(json!({"limit": "orders_per_month", "max": 2, "used": 2, "plan": "tiny"}))
            );
        }
        assert!(told(&c).is_empty(), "a refusal tells no one");

        // The storefront's passes, and the owners are told, once this month.
        admit_at(&mut c, Origin::Storefront, now).unwrap();
        order(&c, store, 1003, now);
        assert_eq!(
            told(&c),
            [json!({"limit": "orders_per_month", "max": 2, "used": 3})]
        );
        let later = now + chrono::Duration::days(3);
        admit_at(&mut c, Origin::Storefront, later).unwrap();
        order(&c, store, 1004, later);
        assert_eq!(told(&c).len(), 1, "once a month");

        // A new month starts from nothing; past the limit again, they are told again.
        let december = chrono::DateTime::parse_from_rfc3339("2026-12-01T00:00:00Z")
            .unwrap()
            .to_utc();
        for n in 0..2 {
            admit_at(&mut c, Origin::Api, december).unwrap();
            order(&c, store, 1005 + n, december);
        }
        admit_at(&mut c, Origin::Storefront, december).unwrap();
        assert_eq!(
            told(&c)[1],
            json!({"limit": "orders_per_month", "max": 2, "used": 3})
        );

        // Not even a suspended subscription turns a shopper away; the API is refused.
        c.execute(
            "UPDATE subscriptions SET status = 'suspended' WHERE tenant_id = ?1",
            [tenant],
        )
        .unwrap();
        admit_at(&mut c, Origin::Storefront, december).unwrap();
        let e = admit_at(&mut c, Origin::Api, december).unwrap_err();
        assert_eq!(e.code, ErrorCode::SubscriptionInactive);
        assert_eq!(e.details, Some(json!({"status": "suspended"})));
    }
}
