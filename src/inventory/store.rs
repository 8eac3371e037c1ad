//! SQL of stock; every query is scoped by store.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::InventoryItem;
use crate::db::rendered::Position;
use crate::error::{AppError, ErrorCode};
use crate::events::Event;
use crate::ids::{AdjustmentId, ProductId, StoreId, VariantId};
use crate::time;

const COLUMNS: &str = "id, product_id, sku, on_hand, reserved, low_stock_threshold";

fn row(r: &Row<'_>) -> rusqlite::Result<InventoryItem> {
    let (on_hand, reserved): (i64, i64) = (r.get(3)?, r.get(4)?);
    Ok(InventoryItem {
        variant_id: r.get(0)?,
        product_id: r.get(1)?,
        sku: r.get(2)?,
        on_hand,
        reserved,
        available: on_hand - reserved,
        low_stock_threshold: r.get(5)?,
    })
}

/// What a stock change came to.
#[derive(Debug)]
pub enum Change {
    Done(InventoryItem),
    /// The store has no such variant.
    Missing,
    /// The change would take `available` (or on-hand) below zero; the stock is unchanged.
    Short(InventoryItem),
}

/// 409 `insufficient_stock`, naming the variant and what it has.
pub fn insufficient(level: &InventoryItem, wanted: i64) -> AppError {
    AppError::conflict(
        ErrorCode::InsufficientStock,
        format!(
            "SKU {} has {} available, {wanted} needed",
            level.sku, level.available
        ),
    )
    .with_details(serde_json::json!({
        "variant_id": level.variant_id,
        "sku": level.sku,
        "available": level.available,
        "requested": wanted,
    }))
}

fn is_low(available: i64, threshold: i64) -> bool {
    available <= threshold
}

/// Moves one variant's on-hand and reserved units by the given deltas in one conditional
/// UPDATE, and fires `inventory.low_stock` / `inventory.back_in_stock` when `available`
/// crosses the threshold. Every stock move goes through here: when `available` crosses zero
/// the product's storefront row is rewritten, in the same transaction.
pub fn change(
    tx: &Tx<'_>,
    store: StoreId,
    variant: VariantId,
    d_on_hand: i64,
    d_reserved: i64,
    now: DateTime<Utc>,
) -> Result<Change, AppError> {
    let sql = format!(
        "UPDATE variants SET on_hand = on_hand + ?3, reserved = reserved + ?4, updated_at = ?5
         WHERE store_id = ?1 AND id = ?2 AND reserved + ?4 >= 0
           AND on_hand + ?3 - (reserved + ?4) >= 0
         RETURNING {COLUMNS}"
    );
    let done = tx
        .prepare_cached(&sql)?
        .query_row(
            params![store, variant, d_on_hand, d_reserved, time::format(now)],
            row,
        )
        .optional()?;
    let Some(after) = done else {
        return Ok(match get(tx, store, variant)? {
            Some(level) => Change::Short(level),
            None => Change::Missing,
        });
    };
    let before = after.available - (d_on_hand - d_reserved);
    // Shoppers see only whether a unit is free: their row changes when that does.
    if (before > 0) != (after.available > 0) {
        crate::storefront::store::refresh(tx, store, after.product_id)?;
    }
    let (was, is) = (
        is_low(before, after.low_stock_threshold),
        is_low(after.available, after.low_stock_threshold),
    );
    if was != is {
        let name = if is {
            Event::InventoryLowStock
        } else {
            Event::InventoryBackInStock
        };
        crate::webhooks::publish(tx, Some(store), name, &after, now)?;
    }
    Ok(Change::Done(after))
}

pub fn get(
    c: &Connection,
    store: StoreId,
    variant: VariantId,
) -> Result<Option<InventoryItem>, AppError> {
    let sql = format!("SELECT {COLUMNS} FROM variants WHERE store_id = ?1 AND id = ?2");
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, variant], row)
        .optional()?)
}

pub fn log_adjustment(
    tx: &Tx<'_>,
    store: StoreId,
    id: AdjustmentId,
    level: &InventoryItem,
    delta: i64,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(tx,
        "INSERT INTO stock_adjustments (id, store_id, variant_id, delta, reason, on_hand, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![id, store, level.variant_id, delta, reason, level.on_hand, time::format(now)],
    )?;
    Ok(())
}

fn filter(product: Option<ProductId>, low: Option<bool>) -> String {
    crate::db::where_clause(
        "store_id = ?1",
        &[
            (product.is_some(), "product_id = ?2", "?2"),
            (
                low.is_some(),
                "(on_hand - reserved <= low_stock_threshold) = ?3",
                "?3",
            ),
        ],
    )
}

/// The store's variants' stock, by SKU.
pub fn list(
    c: &Connection,
    store: StoreId,
    product: Option<ProductId>,
    low: Option<bool>,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<InventoryItem>, AppError> {
    let (sku, id) = after.cloned().unwrap_or_default();
    let sql = format!(
        "SELECT {COLUMNS} FROM variants WHERE {} AND (sku, id) > (?4, ?5)
         ORDER BY sku, id LIMIT {limit} OFFSET ?6",
        filter(product, low)
    );
    c.prepare_cached(&sql)?
        .query_map(params![store, product, low, sku, id, offset], row)?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count(
    c: &Connection,
    store: StoreId,
    product: Option<ProductId>,
    low: Option<bool>,
) -> Result<i64, AppError> {
    let sql = format!(
        "SELECT COUNT(*) FROM variants WHERE {}",
        filter(product, low)
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, product, low], |r| r.get(0))?)
}
