//! Producing notifications, in the transaction of what they report: the events listener
//! for `orders.created` and `inventory.low_stock`, and [`notify`], which the inbox, reviews
//! and billing call where a conversation starts, a review waits and a subscription falls
//! past due (none of these is an outbox event).

use crate::db::Tx;
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::model::Kind;
use super::send::NotificationSend;
use super::store::{self, NewNotification};
use crate::error::AppError;
use crate::events::{Event, Recorded};
use crate::ids::{NotificationDeliveryId, NotificationId, StoreId, TenantId};
use crate::jobs;

/// What a notification says and points at.
pub struct Notice<'a> {
    pub kind: Kind,
    pub title: &'a str,
    pub body: &'a str,
    pub subject_type: &'a str,
    pub subject_id: &'a str,
}

/// Longest title and body kept: they quote shoppers' names and SKUs.
const MAX_TITLE: usize = 200;
const MAX_BODY: usize = 1000;

fn clip(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// Fans `n` out to the store's members whose role can see its kind and whose preferences
/// want it somewhere: a feed row (hidden when in-app is off), and a delivery record with its
/// send job per out-of-app channel, all in the caller's transaction. How many members it
/// reached.
pub fn notify(
    tx: &Tx<'_>,
    store: StoreId,
    n: &Notice<'_>,
    now: DateTime<Utc>,
) -> Result<usize, AppError> {
    let (title, body) = (clip(n.title, MAX_TITLE), clip(n.body, MAX_BODY));
    let mut reached = 0;
    for r in store::recipients(tx, store, n.kind)? {
        if !r.role.permissions().contains(n.kind.permission()) {
            continue;
        }
        let ch = r.channels;
        // A messaging-app copy needs a verified number; without one there is nowhere to send.
        let msgapp = ch.msgapp && r.phone.is_some();
        if !(ch.in_app || ch.email || msgapp) {
            continue;
        }
        let id = NotificationId::new();
        store::insert(
            tx,
            &NewNotification {
                id,
                store,
                user: r.user_id,
                kind: n.kind,
                title: &title,
                body: &body,
                subject_type: n.subject_type,
                subject_id: n.subject_id,
                in_app: ch.in_app,
            },
            now,
        )?;
        for (on, channel) in [(ch.email, "email"), (msgapp, "msgapp")] {
            if on {
                let delivery_id = NotificationDeliveryId::new();
                store::insert_delivery(tx, delivery_id, id, channel, now)?;
                jobs::enqueue(tx, &NotificationSend { delivery_id }, now)?;
            }
        }
        reached += 1;
    }
    Ok(reached)
}

/// [`notify`] in every store of an organization (a subscription belongs to it).
pub fn notify_tenant(
    tx: &Tx<'_>,
    tenant: TenantId,
    n: &Notice<'_>,
    now: DateTime<Utc>,
) -> Result<usize, AppError> {
    let stores: Vec<StoreId> = tx
        .prepare_cached("SELECT id FROM stores WHERE tenant_id = ?1 ORDER BY id")?
        .query_map([tenant], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut reached = 0;
    for s in stores {
        reached += notify(tx, s, n, now)?;
    }
    Ok(reached)
}

fn money(cents: i64, currency: &str) -> String {
    format!("{currency} {}.{:02}", cents / 100, (cents % 100).abs())
}

/// The events listener: a new order and a low stock level notify the store's members.
pub fn on_event(tx: &Tx<'_>, e: &Recorded<'_>) -> Result<(), AppError> {
    if !matches!(e.event, Event::OrdersCreated | Event::InventoryLowStock) {
        return Ok(());
    }
    let data: Value = serde_json::from_str(e.data_json).map_err(AppError::internal)?;
    let text = |k: &str| data[k].as_str().unwrap_or_default().to_owned();
    let (kind, subject_type, subject_id, title, body) = if e.event == Event::OrdersCreated {
        let total = money(data["total_cents"].as_i64().unwrap_or(0), &text("currency"));
        let number = data["number"].as_i64().unwrap_or(0);
        (
            Kind::NewOrder,
            "order",
            text("id"),
            format!("New order #{number}"),
            format!("Order #{number} for {total} was placed."),
        )
    } else {
        let available = data["available"].as_i64().unwrap_or(0);
        let threshold = data["low_stock_threshold"].as_i64().unwrap_or(0);
        let sku = text("sku");
        (
            Kind::LowStock,
            "variant",
            text("variant_id"),
            format!("Low stock: {sku}"),
            format!("{sku} has {available} available (low-stock threshold {threshold})."),
        )
    };
    let n = Notice {
        kind,
        title: &title,
        body: &body,
        subject_type,
        subject_id: &subject_id,
    };
    notify(tx, e.store_id, &n, e.at).map(drop)
}

/// `setup --demo`: a feed for the owner, through this area's store functions: the latest
/// orders, a low stock level and a waiting review, the older ones read, one copied by
/// e-mail.
pub fn seed_demo(
    tx: &Tx<'_>,
    store: StoreId,
    owner: crate::ids::UserId,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let orders: Vec<(String, i64, i64, String)> = tx
        .prepare_cached(
            "SELECT id, number, total_cents, currency FROM orders WHERE store_id = ?1
             ORDER BY created_at DESC LIMIT 4",
        )?
        .query_map([store], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut items: Vec<(Kind, &str, String, String, String)> = orders
        .into_iter()
        .map(|(id, number, total, currency)| {
            (
                Kind::NewOrder,
                "order",
                id,
                format!("New order #{number}"),
                format!(
                    "Order #{number} for {} was placed.",
                    money(total, &currency)
                ),
            )
        })
        .collect();
    let low: Option<(String, String)> = tx
        .prepare_cached("SELECT id, sku FROM variants WHERE store_id = ?1 ORDER BY sku LIMIT 1")?
        .query_row([store], |r| Ok((r.get(0)?, r.get(1)?)))
        .ok();
    if let Some((id, sku)) = low {
        items.push((
            Kind::LowStock,
            "variant",
            id,
            format!("Low stock: {sku}"),
            format!("{sku} has 2 available (low-stock threshold 5)."),
        ));
    }
    for (i, (kind, subject_type, subject_id, title, body)) in items.into_iter().enumerate() {
        let id = NotificationId::new();
        let at = now - chrono::Duration::hours(i64::try_from(i).unwrap_or(0) * 5);
        store::insert(
            tx,
            &NewNotification {
                id,
                store,
                user: owner,
                kind,
                title: &title,
                body: &body,
                subject_type,
                subject_id: &subject_id,
                in_app: true,
            },
            at,
        )?;
        if i == 0 {
            let d = NotificationDeliveryId::new();
            store::insert_delivery(tx, d, id, "email", at)?;
            store::record_attempt(tx, d, Ok(()), at)?;
        }
        if i >= 2 {
            store::mark_read(tx, store, owner, Some(&[id]), at)?;
        }
    }
    Ok(())
}
