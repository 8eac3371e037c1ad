//! The orders' writes, shared by their REST handlers and the assistant (issue 16): each
//! checks its input and writes the change, its event and its audit entry in one transaction.
//! Permission checks stay with the callers (the handler's `scope.require`, the assistant's
//! at approval time).

use super::model::{OrderOut, OrderPatch, OrderStatus, RefundIn, RefundOut};
use super::payments;
use super::refunds;
use super::store::{self, HeldRefund};
use crate::audit::Actor;
use crate::error::{AppError, ErrorCode};
use crate::events::Event;
use crate::http::extract::text;
use crate::ids::{OrderId, RefundId, StoreId};
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
        .await
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
