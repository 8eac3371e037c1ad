//! The event outbox (spec 6.1). Domain code records an event in the same transaction as the
//! change it describes; the webhooks area delivers what is recorded here.

use chrono::{DateTime, Utc};
use rusqlite::{Transaction, params};
use serde::Serialize;

use crate::http::error::AppError;
use crate::ids::{EventId, StoreId};
use crate::time;

/// Records `name` with its `data` payload. `store_id` is None for platform events
/// (`user.created`).
pub fn record(
    tx: &Transaction<'_>,
    store_id: Option<StoreId>,
    name: &str,
    data: &impl Serialize,
    now: DateTime<Utc>,
) -> Result<EventId, AppError> {
    let id = EventId::new();
    let payload = serde_json::to_string(data).map_err(AppError::internal)?;
    tx.execute(
        "INSERT INTO events (id, store_id, name, payload, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, store_id, name, payload, time::format(now)],
    )?;
    Ok(id)
}
