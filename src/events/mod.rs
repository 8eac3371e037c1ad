//! The event outbox (spec 6.1). Domain code records an event in the same transaction as the
//! change it describes; that transaction also enqueues its webhook deliveries, so the change,
//! the event and its deliveries commit together or not at all.

use chrono::{DateTime, Utc};
use rusqlite::{Transaction, params};
use serde::Serialize;

use crate::error::AppError;
use crate::ids::{EventId, StoreId};
use crate::jobs;
use crate::time;

/// The JSON body every delivery of an event carries, fields in the spec's order, around the
/// already-serialized `data`. Recording and the rebuild of events stored before bodies were
/// (see `webhooks::delivery`) both use it, so the two give the same bytes.
pub fn envelope(name: &str, store_id: Option<StoreId>, timestamp: i64, data_json: &str) -> String {
    format!(
        r#"{{"event":{},"store_id":{},"timestamp":{timestamp},"data":{data_json}}}"#,
        serde_json::Value::from(name),
        store_id.map_or_else(|| "null".to_owned(), |s| format!("\"{s}\"")),
    )
}

/// Records `name` with its `data` payload and enqueues its deliveries: one per active webhook
/// of the store subscribed to it, or, for a platform event (`store_id` None, such as
/// `user.created`), one for the operator's platform webhook.
pub fn record(
    tx: &Transaction<'_>,
    store_id: Option<StoreId>,
    name: &str,
    data: &impl Serialize,
    now: DateTime<Utc>,
) -> Result<EventId, AppError> {
    let id = record_only(tx, store_id, name, data, now)?;
    match store_id {
        Some(store) => {
            crate::webhooks::store::fan_out(tx, store, id, name, now)?;
        }
        None => {
            let job = crate::webhooks::WebhookDelivery {
                event_id: id,
                webhook_id: None,
                manual: false,
            };
            jobs::enqueue(tx, &job, now)?;
        }
    }
    Ok(id)
}

/// Records an event without enqueuing anything (`webhook.test` goes to one webhook only).
pub fn record_only(
    tx: &Transaction<'_>,
    store_id: Option<StoreId>,
    name: &str,
    data: &impl Serialize,
    now: DateTime<Utc>,
) -> Result<EventId, AppError> {
    let id = EventId::new();
    let payload = serde_json::to_string(data).map_err(AppError::internal)?;
    let body = envelope(name, store_id, now.timestamp(), &payload);
    tx.prepare_cached(
        "INSERT INTO events (id, store_id, name, payload, created_at, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        id,
        store_id,
        name,
        payload,
        time::format(now),
        body
    ])?;
    Ok(id)
}
