//! Purchasing's writes as functions over the caller's transaction, shared by the handlers
//! (which add the permission check and the audit entry) and `setup --demo`.

use std::collections::HashSet;

use crate::db::Tx;
use chrono::{DateTime, Utc};

use super::model::{PurchaseOrderItemIn, PurchaseOrderOut, PurchaseOrderStatus, ReceiveItemIn};
use super::store::{self, NewPurchaseOrder, OrderChange};
use crate::error::{AppError, ErrorCode};
use crate::ids::{AdjustmentId, PurchaseOrderId, StoreId, SupplierId, VariantId};
use crate::inventory::store::{self as stock, Change};

/// Most lines on one purchase order (or in one receipt).
pub const MAX_ITEMS: usize = 250;
/// The reason on the stock adjustments a receipt logs.
pub const RECEIVE_REASON: &str = "purchase_order";

pub fn not_found() -> AppError {
    AppError::not_found("purchase order")
}

/// 409 `invalid_status_transition`, naming both statuses, as orders answer it.
fn invalid_transition(from: PurchaseOrderStatus, to: &str) -> AppError {
    AppError::conflict(
        ErrorCode::InvalidStatusTransition,
        format!("a purchase order that is {} cannot be {to}", from.as_str()),
    )
    .with_details(serde_json::json!({ "from": from, "to": to }))
}

/// The lines as stored, after checking each against the store: 1 to [`MAX_ITEMS`], each
/// variant once and the store's, quantity 1 to 1,000,000, cost 0 to 100,000,000 cents.
pub fn check_items(
    tx: &Tx<'_>,
    store: StoreId,
    items: &[PurchaseOrderItemIn],
) -> Result<Vec<(VariantId, i64, i64)>, AppError> {
    if items.is_empty() || items.len() > MAX_ITEMS {
        return Err(AppError::field("items", "must have 1 to 250 lines"));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(items.len());
    for (i, it) in items.iter().enumerate() {
        if !seen.insert(it.variant_id) {
            return Err(AppError::field(
                format!("items[{i}].variant_id"),
                "appears twice; send one line with the total quantity",
            ));
        }
        if !(1..=1_000_000).contains(&it.quantity) {
            return Err(AppError::field(
                format!("items[{i}].quantity"),
                "must be 1 to 1000000",
            ));
        }
        if !(0..=100_000_000).contains(&it.unit_cost_cents) {
            return Err(AppError::field(
                format!("items[{i}].unit_cost_cents"),
                "must be 0 to 100000000",
            ));
        }
        if stock::get(tx, store, it.variant_id)?.is_none() {
            return Err(AppError::field(
                format!("items[{i}].variant_id"),
                "is not a variant of this store",
            ));
        }
        out.push((it.variant_id, it.quantity, it.unit_cost_cents));
    }
    Ok(out)
}

fn check_supplier(tx: &Tx<'_>, store: StoreId, id: SupplierId) -> Result<(), AppError> {
    if store::supplier_exists(tx, store, id)? {
        Ok(())
    } else {
        Err(AppError::field(
            "supplier_id",
            "is not a supplier of this store",
        ))
    }
}

/// Creates a draft purchase order from checked input (see [`check_items`]).
pub fn create(
    tx: &Tx<'_>,
    store: StoreId,
    supplier: SupplierId,
    items: &[PurchaseOrderItemIn],
    expected_at: Option<String>,
    note: Option<String>,
    now: DateTime<Utc>,
) -> Result<PurchaseOrderOut, AppError> {
    check_supplier(tx, store, supplier)?;
    let lines = check_items(tx, store, items)?;
    let po = NewPurchaseOrder {
        id: PurchaseOrderId::new(),
        supplier_id: supplier,
        status: PurchaseOrderStatus::Draft,
        expected_at,
        note,
    };
    store::insert_order(tx, store, &po, now)?;
    store::set_items(tx, po.id, &lines)?;
    store::get_order(tx, store, po.id)?.ok_or_else(not_found)
}

/// Changes a draft (409 `invalid_status_transition` once it is not one).
pub fn update(
    tx: &Tx<'_>,
    store: StoreId,
    id: PurchaseOrderId,
    change: &OrderChange,
    items: Option<&[PurchaseOrderItemIn]>,
    now: DateTime<Utc>,
) -> Result<PurchaseOrderOut, AppError> {
    let po = store::get_order(tx, store, id)?.ok_or_else(not_found)?;
    if po.status != PurchaseOrderStatus::Draft {
        return Err(invalid_transition(po.status, "edited"));
    }
    if let Some(s) = change.supplier_id {
        check_supplier(tx, store, s)?;
    }
    if let Some(items) = items {
        let lines = check_items(tx, store, items)?;
        store::set_items(tx, id, &lines)?;
    }
    store::update_order(tx, store, id, change, now)?;
    store::get_order(tx, store, id)?.ok_or_else(not_found)
}

/// Moves the order to `to` when its status is one of `from`, else 409.
pub fn transition(
    tx: &Tx<'_>,
    store: StoreId,
    id: PurchaseOrderId,
    from: &[PurchaseOrderStatus],
    to: PurchaseOrderStatus,
    now: DateTime<Utc>,
) -> Result<PurchaseOrderOut, AppError> {
    let po = store::get_order(tx, store, id)?.ok_or_else(not_found)?;
    if !from.contains(&po.status) {
        return Err(invalid_transition(po.status, to.as_str()));
    }
    let change = OrderChange {
        status: Some(to),
        ..OrderChange::default()
    };
    store::update_order(tx, store, id, &change, now)?;
    store::get_order(tx, store, id)?.ok_or_else(not_found)
}

/// Receives units against an ordered (or partly received) purchase order: each line's
/// units go on hand through the inventory's one stock change (which fires the threshold
/// events and refreshes the storefront row) with a `purchase_order` adjustment, and the
/// order becomes `partially_received` or `received`. A draft, cancelled or received order
/// is 409; a variant not on the order, or more than is left to receive, is 422. Any error
/// leaves the caller's transaction to roll back, so nothing is half received.
pub fn receive(
    tx: &Tx<'_>,
    store: StoreId,
    id: PurchaseOrderId,
    items: &[ReceiveItemIn],
    now: DateTime<Utc>,
) -> Result<PurchaseOrderOut, AppError> {
    if items.is_empty() || items.len() > MAX_ITEMS {
        return Err(AppError::field("items", "must have 1 to 250 lines"));
    }
    let po = store::get_order(tx, store, id)?.ok_or_else(not_found)?;
    if !po.status.receivable() {
        return Err(invalid_transition(po.status, "received"));
    }
    let mut seen = HashSet::new();
    for (i, it) in items.iter().enumerate() {
        let field = |f: &str| format!("items[{i}].{f}");
        if !seen.insert(it.variant_id) {
            return Err(AppError::field(field("variant_id"), "appears twice"));
        }
        if !(1..=1_000_000).contains(&it.quantity) {
            return Err(AppError::field(field("quantity"), "must be 1 to 1000000"));
        }
        let Some(line) = po.items.iter().find(|l| l.variant_id == it.variant_id) else {
            return Err(AppError::field(
                field("variant_id"),
                "is not a line of this purchase order",
            ));
        };
        let left = line.quantity - line.received_quantity;
        if it.quantity > left || !store::add_received(tx, id, it.variant_id, it.quantity)? {
            return Err(AppError::field(
                field("quantity"),
                format!("is more than the {left} left to receive on this line"),
            ));
        }
        let level = match stock::change(tx, store, it.variant_id, it.quantity, 0, now)? {
            Change::Done(level) => level,
            // Adding units cannot fall short; a missing variant was deleted since ordering.
            Change::Missing | Change::Short(_) => {
                return Err(AppError::field(
                    field("variant_id"),
                    "the variant no longer exists",
                ));
            }
        };
        stock::log_adjustment(
            tx,
            store,
            AdjustmentId::new(),
            &level,
            it.quantity,
            RECEIVE_REASON,
            now,
        )?;
    }
    let after = store::get_order(tx, store, id)?.ok_or_else(not_found)?;
    let full = after
        .items
        .iter()
        .all(|l| l.received_quantity == l.quantity);
    let status = if full {
        PurchaseOrderStatus::Received
    } else {
        PurchaseOrderStatus::PartiallyReceived
    };
    let change = OrderChange {
        status: Some(status),
        ..OrderChange::default()
    };
    store::update_order(tx, store, id, &change, now)?;
    store::get_order(tx, store, id)?.ok_or_else(not_found)
}
