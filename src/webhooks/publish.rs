//! How domain code publishes an event: recorded in the outbox (`events`) and fanned out to
//! the webhooks that receive it, in the caller's transaction, so the change, the event and
//! its deliveries commit together or not at all.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{WebhookDelivery, store};
use crate::audit::{self, Actor};
use crate::error::AppError;
use crate::events::{self, Event};
use crate::ids::{EventId, StoreId};
use crate::jobs;

/// Records `event` with its `data` payload and enqueues its deliveries: one per active webhook
/// of the store subscribed to it, or, for a platform event (`store_id` None, such as
/// `user.created`), one for the operator's platform webhook.
pub fn publish(
    tx: &Tx<'_>,
    store_id: Option<StoreId>,
    event: Event,
    data: &impl Serialize,
    now: DateTime<Utc>,
) -> Result<EventId, AppError> {
    let id = events::record(tx, store_id, event, data, now)?;
    match store_id {
        Some(store) => {
            store::fan_out(tx, store, id, event, now)?;
        }
        None => {
            let job = WebhookDelivery {
                event_id: id,
                webhook_id: None,
                manual: false,
            };
            jobs::enqueue(tx, &job, now)?;
        }
    }
    Ok(id)
}

/// A store change: the event it publishes (`event`, whose payload is `data`) and the audit
/// entry that records it (`action` on `resource_id`; the resource type is the action's first
/// part, `order` of `order.refunded`).
pub struct Change<'a, T: Serialize> {
    pub event: Event,
    pub data: &'a T,
    pub action: &'a str,
    pub resource_id: &'a str,
}

/// Publishes a store change's event and records its audit entry, both in the caller's
/// transaction. Domain writes end with this, so neither is forgotten. It lives here, not in
/// `audit`, because webhook management writes audit entries too: audit stays below webhooks.
pub fn publish_change<T: Serialize>(
    tx: &Tx<'_>,
    actor: &Actor,
    c: &Change<'_, T>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    publish(tx, actor.store_id, c.event, c.data, now)?;
    let resource_type = c.action.split('.').next().unwrap_or(c.action);
    audit::record(tx, actor, c.action, resource_type, c.resource_id, now)
}
