//! Sales over a period, for the assistant's `sales_summary` tool.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};
use serde::Serialize;

use crate::error::AppError;
use crate::ids::StoreId;
use crate::time;

/// The store's orders created since a moment: how many, and what they brought in.
#[derive(Debug, Serialize)]
pub struct SalesSummary {
    pub since: String,
    pub currency: String,
    /// Every order created in the period, whatever its status.
    pub orders: i64,
    /// Orders that were paid (paid, fulfilled, shipped, delivered or refunded since).
    pub paid_orders: i64,
    /// The paid orders' totals.
    pub gross_cents: i64,
    pub refunded_cents: i64,
    /// Gross less refunds.
    pub net_cents: i64,
    pub pending_orders: i64,
    pub cancelled_orders: i64,
}

pub fn sales_since(
    c: &Connection,
    store: StoreId,
    since: DateTime<Utc>,
) -> Result<SalesSummary, AppError> {
    let currency = super::store::currency(c, store)?;
    let since = time::format(since);
    let (orders, paid, gross, refunded, pending, cancelled) = c
        .prepare_cached(
            "SELECT COUNT(*),
                    COALESCE(SUM(status NOT IN ('pending', 'cancelled')), 0),
                    COALESCE(SUM(CASE WHEN status NOT IN ('pending', 'cancelled')
                                      THEN total_cents END), 0),
                    COALESCE(SUM(refunded_cents), 0),
                    COALESCE(SUM(status = 'pending'), 0),
                    COALESCE(SUM(status = 'cancelled'), 0)
             FROM orders WHERE store_id = ?1 AND created_at >= ?2",
        )?
        .query_row(params![store, since], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, i64>(5)?,
            ))
        })?;
    Ok(SalesSummary {
        since,
        currency,
        orders,
        paid_orders: paid,
        gross_cents: gross,
        refunded_cents: refunded,
        net_cents: gross - refunded,
        pending_orders: pending,
        cancelled_orders: cancelled,
    })
}
