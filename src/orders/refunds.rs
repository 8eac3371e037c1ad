//! Refunds: holding, asking the provider, settling exactly once (issue 6 "Payments and
//! refunds"; issue 13 items 6-8).
//!
//! Invariants:
//! - A refund is written `pending` before the provider is asked; the amount stays held (the
//!   refundable balance counts it) until the refund is `succeeded` or `failed`.
//! - Settling and failing are transitions guarded in SQL (`WHERE id = ? AND status =
//!   'pending'`): the payment's and order's refunded amounts, the customer's spend and the
//!   event are written only by the one transaction whose guard matched.
//! - At most one ask of a refund is in flight (`asking_until`): a duplicate request answers
//!   with the pending refund instead of asking again.
//! - Only a definite refusal (a 4xx) fails a refund. An uncertain outcome (timeout, transport
//!   error, 5xx) leaves it pending; the [`RefundCheck`] enqueued with the hold asks
//!   again with the same key, with the queue's backoff, until a definite answer. The same job
//!   resumes a hold whose first ask never happened (the process stopped).

use crate::db::Tx;
use chrono::{DateTime, Utc};

use super::model::{OrderStatus, RefundOut};
use super::payments::{self, Answer};
use super::store::{self, HeldRefund};
use crate::audit::Actor;
use crate::error::AppError;
use crate::events::Event;
use crate::ids::{OrderId, RefundId};
use crate::jobs::{self, JobKind};
use crate::state::AppState;
use crate::time;
use crate::webhooks;

/// Asks the payment provider again about a refund still pending (its first answer was
/// uncertain, or never came), with the same idempotency key, until a definite answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RefundCheck {
    pub refund_id: RefundId,
}

/// Attempts of a refund check (also written by migration V14 for refunds it found pending):
/// with the queue's backoff, about a day, which is as long as payment providers keep an
/// idempotency key. Asking later could refund anew, so the check stops there and the refund
/// stays pending, its amount held, for the operator (its job is dead).
pub const CHECK_ATTEMPTS: u32 = 31;

impl JobKind for RefundCheck {
    const KIND: &'static str = "refund_check";

    fn max_attempts(&self) -> u32 {
        CHECK_ATTEMPTS
    }
}

/// When the background check first looks at a new refund: once the first ask's lease has
/// run out, so it never races an ask that is still going.
pub fn enqueue_check(
    tx: &Tx<'_>,
    id: RefundId,
    asking_until: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    jobs::enqueue_at(tx, &RefundCheck { refund_id: id }, asking_until, now)?;
    Ok(())
}

/// The end of an ask starting now.
pub fn lease_end(st: &AppState, now: DateTime<Utc>) -> DateTime<Utc> {
    now + chrono::Duration::from_std(payments::ask_lease(&st.cfg.payments)).unwrap_or_default()
}

/// Asks the provider about a refund whose ask lease (ending `until`) the caller holds,
/// records the answer, and returns the refund as it now stands (another ask may have settled
/// it meanwhile).
pub async fn ask(
    st: &AppState,
    held: HeldRefund,
    until: DateTime<Utc>,
) -> Result<RefundOut, AppError> {
    let r = &held.refund;
    let answer = payments::refund(
        &st.cfg.payments,
        &held.provider,
        r.payment_id,
        r.amount_cents,
        &held.provider_key,
    )
    .await;
    let now = st.clock.now();
    st.db
        .write_to_finish(move |tx| {
            let id = held.refund.id;
            match answer {
                Answer::Refunded => {
                    settle(tx, &held, now)?;
                }
                Answer::Refused(_) => {
                    store::fail_refund(tx, id)?;
                }
                Answer::Uncertain(_) => store::stop_asking(tx, id, until)?,
            }
            let now_held = store::refund_by_id_unscoped(tx, id)?
                .ok_or_else(|| AppError::not_found("refund"))?;
            Ok(now_held.refund)
        })
        .await
}

/// The audit actor of a refund's settlement: whoever asked for it.
fn actor_of(tx: &Tx<'_>, held: &HeldRefund) -> Result<Actor, AppError> {
    Ok(Actor {
        store_id: Some(held.store_id),
        tenant_id: store::tenant_of(tx, held.store_id)?,
        // Refunds made before V14 did not keep their requester: the nil id says "unknown".
        user_id: held
            .actor_user_id
            .unwrap_or(crate::ids::UserId(uuid::Uuid::nil())),
        token_name: held.actor_token_name.clone(),
        trace_id: held
            .trace_id
            .clone()
            .unwrap_or_else(|| "refund-check".to_owned()),
        via: held.actor_via.clone(),
        on_record: crate::audit::OnRecord::default(),
    })
}

/// Records a refund the provider confirmed, once: the payment's and order's refunded
/// amounts, the order's status, the customer's spend, and the event (`orders.refunded` when
/// it is full). False, writing nothing, when the refund was no longer pending.
fn settle(tx: &Tx<'_>, held: &HeldRefund, now: DateTime<Utc>) -> Result<bool, AppError> {
    let refund = &held.refund;
    if !store::confirm_refund(tx, refund)? {
        return Ok(false);
    }
    let (store_id, id): (_, OrderId) = (held.store_id, refund.order_id);
    let mut o = store::load(tx, store_id, id)?.ok_or_else(|| AppError::not_found("order"))?;
    o.refunded_cents += refund.amount_cents;
    let full = o.refunded_cents >= o.total_cents;
    if o.status.refund_moves() {
        // A paid order still holds its stock; refunded, it will not be fulfilled (the
        // lifecycle has no way back), so the units go back on sale.
        if o.status == OrderStatus::Paid {
            store::move_stock(tx, &o, OrderStatus::Cancelled, now)?;
        }
        o.set_status(if full {
            OrderStatus::Refunded
        } else {
            OrderStatus::PartiallyRefunded
        });
    }
    o.updated_at = time::format(now);
    store::save(tx, &o)?;
    store::bump_customer(tx, store_id, o.customer_id, 0, -refund.amount_cents)?;
    let event = if full {
        Event::OrdersRefunded
    } else {
        Event::OrdersUpdated
    };
    let change = webhooks::Change {
        event,
        data: &o,
        action: "order.refunded",
        resource_id: &id.to_string(),
    };
    webhooks::publish_change(tx, &actor_of(tx, held)?, &change, now)?;
    Ok(true)
}

/// What the check found before asking.
enum Found {
    Settled,
    Busy,
    Ask(Box<HeldRefund>),
}

/// The [`RefundCheck`] handler: asks the provider again about a refund still pending.
/// An error (the answer is still uncertain, or another ask is in flight) has the queue try
/// again after its backoff.
#[tracing::instrument(skip_all, fields(refund_id = %id))]
pub async fn check(st: &AppState, id: RefundId) -> anyhow::Result<()> {
    let now = st.clock.now();
    let until = lease_end(st, now);
    let found = st
        .db
        .write(move |tx| {
            let Some(held) = store::refund_by_id_unscoped(tx, id)? else {
                return Ok(Found::Settled); // its order or store was deleted
            };
            if held.refund.status != "pending" {
                return Ok(Found::Settled);
            }
            if !store::start_asking(tx, id, now, until)? {
                return Ok(Found::Busy);
            }
            Ok(Found::Ask(Box::new(held)))
        })
        .await?;
    match found {
        Found::Settled => Ok(()),
        Found::Busy => anyhow::bail!("another ask of this refund is in flight"),
        Found::Ask(held) => {
            let r = ask(st, *held, until).await?;
            tracing::info!(status = %r.status, "refund checked with the provider");
            if r.status == "pending" {
                anyhow::bail!("the provider's answer is still uncertain");
            }
            Ok(())
        }
    }
}
