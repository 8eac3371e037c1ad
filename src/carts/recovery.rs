//! Cart recovery: the job that marks carts abandoned (`carts.abandoned`, once per cart), and
//! the signed link in that event that opens the cart again.

use crate::db::Tx;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use super::model::CartAbandoned;
use super::store;
use crate::error::AppError;
use crate::events::Event;
use crate::ids::{CartId, StoreId};
use crate::jobs::JobKind;
use crate::state::AppState;

/// The recovery job: every [`SWEEP_EVERY`] it marks abandoned the open carts with a contact
/// and items untouched for `--cart-abandon-after-minutes`, then enqueues its next run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CartSweep;

impl JobKind for CartSweep {
    const KIND: &'static str = "cart_sweep";

    fn max_attempts(&self) -> u32 {
        3
    }
}

/// How often the job looks (a cart is abandoned at most this late).
pub const SWEEP_EVERY: Duration = Duration::minutes(5);
/// Carts marked per transaction, so a backlog does not hold the writer long.
const BATCH: i64 = 200;
/// How long a recovery link opens its cart.
pub const LINK_VALID: Duration = Duration::days(14);

/// Enqueues a run at `run_at` unless one is waiting (`also_running`: or running).
fn schedule(
    tx: &Tx<'_>,
    run_at: DateTime<Utc>,
    now: DateTime<Utc>,
    also_running: bool,
) -> Result<(), AppError> {
    crate::jobs::enqueue_once(tx, &CartSweep, run_at, now, also_running).map(|_| ())
}

/// The scheduler's hourly check: a run now, unless one is waiting or running (the first
/// start, or after a run that died for good).
pub fn ensure_scheduled(tx: &Tx<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
    schedule(tx, now, now, true)
}

/// One run: abandons what is due, in batches, then schedules the next run.
pub async fn sweep(st: &AppState) -> anyhow::Result<()> {
    let now = st.clock.now();
    let cutoff = now - st.cfg.cart_abandon_after;
    let (key, origin) = (st.hmac_key.clone(), st.public_url().to_owned());
    let mut total = 0;
    loop {
        let (key, origin) = (key.clone(), origin.clone());
        let (seen, marked) = st
            .db
            .write(move |tx| {
                let due = store::to_abandon_unscoped(tx, cutoff, BATCH)?;
                let mut marked = 0;
                for &(s, id) in &due {
                    marked += usize::from(abandon(tx, &key, &origin, s, id, cutoff, now)?);
                }
                Ok((due.len(), marked))
            })
            .await?;
        total += marked;
        if i64::try_from(seen).unwrap_or(i64::MAX) < BATCH {
            break;
        }
    }
    let cancelled = expire_unpaid(st, now).await?;
    st.db
        .write(move |tx| schedule(tx, now + SWEEP_EVERY, now, false))
        .await?;
    tracing::info!(abandoned = total, cancelled, "cart sweep ran");
    Ok(())
}

/// Cancels the storefront orders unpaid for `--storefront-order-hold-hours`, through the
/// orders area's one status change (stock released, `orders.cancelled`, audited as the
/// storefront), in batches. A shopper's checkout reserves stock; an order nobody pays must
/// not hold it for good.
async fn expire_unpaid(st: &AppState, now: DateTime<Utc>) -> anyhow::Result<usize> {
    let cutoff = now - st.cfg.storefront_order_hold;
    let mut total = 0;
    loop {
        let payments = st.cfg.payments.clone();
        let seen = st
            .db
            .write(move |tx| {
                let due = crate::orders::store::unpaid_storefront_unscoped(tx, cutoff, BATCH)?;
                for &(s, id) in &due {
                    let tenant = crate::orders::store::tenant_of(tx, s)?;
                    let actor = crate::audit::Actor {
                        store_id: Some(s),
                        ..crate::audit::Actor::system(tenant, "storefront_order_hold")
                    };
                    let cancel = (Some(crate::orders::model::OrderStatus::Cancelled), None);
                    crate::orders::writes::update_in(tx, &actor, &payments, (s, id), cancel, now)?;
                }
                Ok(due.len())
            })
            .await?;
        total += seen;
        if i64::try_from(seen).unwrap_or(i64::MAX) < BATCH {
            return Ok(total);
        }
    }
}

/// Marks one cart abandoned and fires `carts.abandoned`, in one transaction; false (and
/// nothing fired) when it changed or was checked out since it was found.
fn abandon(
    tx: &Tx<'_>,
    key: &[u8],
    origin: &str,
    s: StoreId,
    id: CartId,
    cutoff: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    if !store::abandon(tx, s, id, cutoff, now)? {
        return Ok(false);
    }
    let cart = store::get(tx, s, id)?.ok_or_else(super::writes::not_found)?;
    let channel = store::head(tx, s, id)?.and_then(|h| h.channel);
    let recovery_url = match channel {
        Some(ch) => {
            store::channel_key(tx, ch)?.map(|k| link(key, origin, &k, id, now + LINK_VALID))
        }
        None => None,
    };
    let data = CartAbandoned {
        customer: cart.customer.clone(),
        cart,
        recovery_url,
    };
    crate::webhooks::publish(tx, Some(s), Event::CartsAbandoned, &data, now)?;
    Ok(true)
}

/// The signature of a recovery link: an HMAC with the server's key over the cart and the
/// link's end, so it cannot be made for another cart or made to last longer.
fn signature(key: &[u8], cart: CartId, expires: i64) -> Vec<u8> {
    crate::secrets::keyed_hash(key, format!("cart-recovery:{cart}:{expires}").as_bytes())
}

/// `{origin}/v1/storefront-api/{channel_key}/carts/{cart}/recover?expires=..&signature=..`
pub fn link(
    key: &[u8],
    origin: &str,
    channel_key: &str,
    cart: CartId,
    until: DateTime<Utc>,
) -> String {
    let expires = until.timestamp();
    let sig = URL_SAFE_NO_PAD.encode(signature(key, cart, expires));
    format!(
        "{origin}/v1/storefront-api/{channel_key}/carts/{cart}/recover?expires={expires}&signature={sig}"
    )
}

/// Whether a recovery link's `expires` and `signature` are ours for this cart and it has
/// not ended (compared in constant time).
pub fn link_is_valid(
    key: &[u8],
    cart: CartId,
    expires: i64,
    signature_b64: &str,
    now: DateTime<Utc>,
) -> bool {
    let Ok(given) = URL_SAFE_NO_PAD.decode(signature_b64) else {
        return false;
    };
    now.timestamp() <= expires && crate::secrets::same(&signature(key, cart, expires), &given)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_opens_only_its_cart_until_it_ends() {
        let now = DateTime::parse_from_rfc3339("2026-11-02T12:00:00Z")
            .unwrap()
            .to_utc();
        let (key, cart) = (b"server key".as_slice(), CartId::new());
        let url = link(key, "https://a.example", "chk_x", cart, now + LINK_VALID);
        let query = url.split_once('?').unwrap().1;
        let (e, s) = query.split_once('&').unwrap();
        let expires: i64 = e.strip_prefix("expires=").unwrap().parse().unwrap();
        let sig = s.strip_prefix("signature=").unwrap();
        assert!(url.starts_with(&format!(
            "https://a.example/v1/storefront-api/chk_x/carts/{cart}/recover?"
        )));
        assert!(link_is_valid(key, cart, expires, sig, now));
        assert!(
            !link_is_valid(key, CartId::new(), expires, sig, now),
            "another cart"
        );
        assert!(
            !link_is_valid(key, cart, expires + 1, sig, now),
            "a longer life"
        );
        assert!(!link_is_valid(b"other key", cart, expires, sig, now));
        assert!(!link_is_valid(
            key,
            cart,
            expires,
            sig,
            now + LINK_VALID + Duration::seconds(1)
        ));
        assert!(!link_is_valid(key, cart, expires, "not base64!", now));
    }
}
