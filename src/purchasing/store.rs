//! SQL of suppliers and purchase orders; every query is scoped by store.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{PurchaseOrderItem, PurchaseOrderOut, PurchaseOrderStatus, SupplierOut};
use crate::db::rendered::Position;
use crate::error::AppError;
use crate::ids::{PurchaseOrderId, StoreId, SupplierId, VariantId};
use crate::time;

// ---- suppliers ----

const SUPPLIER_COLUMNS: &str =
    "id, store_id, name, email, phone, contact_name, notes, created_at, updated_at";

fn supplier_row(r: &Row<'_>) -> rusqlite::Result<SupplierOut> {
    Ok(SupplierOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        name: r.get(2)?,
        email: r.get(3)?,
        phone: r.get(4)?,
        contact_name: r.get(5)?,
        notes: r.get(6)?,
        created_at: r.get(7)?,
        updated_at: r.get(8)?,
    })
}

/// A supplier's fields as a write sets them; on update `None` keeps a field and
/// `Some(None)` clears an optional one.
#[derive(Debug, Default, Clone)]
pub struct SupplierFields {
    pub name: Option<String>,
    pub email: Option<Option<String>>,
    pub phone: Option<Option<String>>,
    pub contact_name: Option<Option<String>>,
    pub notes: Option<Option<String>>,
}

pub fn insert_supplier(
    tx: &Tx<'_>,
    store: StoreId,
    id: SupplierId,
    f: &SupplierFields,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO suppliers (id, store_id, name, email, phone, contact_name, notes,
                                created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
        params![
            id,
            store,
            f.name,
            f.email.clone().flatten(),
            f.phone.clone().flatten(),
            f.contact_name.clone().flatten(),
            f.notes.clone().flatten(),
            time::format(now)
        ],
    )?;
    Ok(())
}

/// Applies `f`; false when the store has no such supplier.
pub fn update_supplier(
    tx: &Tx<'_>,
    store: StoreId,
    id: SupplierId,
    f: &SupplierFields,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE suppliers SET name = COALESCE(?3, name),
                email = CASE WHEN ?4 THEN ?5 ELSE email END,
                phone = CASE WHEN ?6 THEN ?7 ELSE phone END,
                contact_name = CASE WHEN ?8 THEN ?9 ELSE contact_name END,
                notes = CASE WHEN ?10 THEN ?11 ELSE notes END,
                updated_at = ?12
         WHERE store_id = ?1 AND id = ?2",
        params![
            store,
            id,
            f.name,
            f.email.is_some(),
            f.email.clone().flatten(),
            f.phone.is_some(),
            f.phone.clone().flatten(),
            f.contact_name.is_some(),
            f.contact_name.clone().flatten(),
            f.notes.is_some(),
            f.notes.clone().flatten(),
            time::format(now)
        ],
    )?;
    Ok(n == 1)
}

pub fn get_supplier(
    c: &Connection,
    store: StoreId,
    id: SupplierId,
) -> Result<Option<SupplierOut>, AppError> {
    let sql = format!("SELECT {SUPPLIER_COLUMNS} FROM suppliers WHERE store_id = ?1 AND id = ?2");
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, id], supplier_row)
        .optional()?)
}

pub fn supplier_exists(c: &Connection, store: StoreId, id: SupplierId) -> Result<bool, AppError> {
    Ok(
        c.prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM suppliers WHERE store_id = ?1 AND id = ?2)",
        )?
        .query_row(params![store, id], |r| r.get(0))?,
    )
}

/// How many purchase orders name the supplier (a supplier with any is kept).
pub fn supplier_orders(c: &Connection, store: StoreId, id: SupplierId) -> Result<i64, AppError> {
    Ok(c.prepare_cached(
        "SELECT COUNT(*) FROM purchase_orders WHERE store_id = ?1 AND supplier_id = ?2",
    )?
    .query_row(params![store, id], |r| r.get(0))?)
}

pub fn delete_supplier(tx: &Tx<'_>, store: StoreId, id: SupplierId) -> Result<bool, AppError> {
    crate::db::delete_in_store(tx, "suppliers", store, &id)
}

/// The store's suppliers, newest first.
pub fn list_suppliers(
    c: &Connection,
    store: StoreId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<SupplierOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {SUPPLIER_COLUMNS} FROM suppliers WHERE store_id = ?1 AND (created_at, id) < (?2, ?3)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?4"
    );
    c.prepare_cached(&sql)?
        .query_map(params![store, at, id, offset], supplier_row)?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count_suppliers(c: &Connection, store: StoreId) -> Result<i64, AppError> {
    Ok(
        c.prepare_cached("SELECT COUNT(*) FROM suppliers WHERE store_id = ?1")?
            .query_row(params![store], |r| r.get(0))?,
    )
}

// ---- purchase orders ----

/// The next purchase-order number of the store (the writer serializes callers).
pub fn next_number(tx: &Tx<'_>, store: StoreId) -> Result<i64, AppError> {
    Ok(tx
        .prepare_cached(
            "SELECT COALESCE(MAX(number), 1000) + 1 FROM purchase_orders WHERE store_id = ?1",
        )?
        .query_row(params![store], |r| r.get(0))?)
}

/// A new purchase order's row (its lines go in with [`set_items`]).
#[derive(Debug, Clone)]
pub struct NewPurchaseOrder {
    pub id: PurchaseOrderId,
    pub supplier_id: SupplierId,
    pub status: PurchaseOrderStatus,
    pub expected_at: Option<String>,
    pub note: Option<String>,
}

/// Inserts the order with the store's next number; returns that number.
pub fn insert_order(
    tx: &Tx<'_>,
    store: StoreId,
    po: &NewPurchaseOrder,
    now: DateTime<Utc>,
) -> Result<i64, AppError> {
    let number = next_number(tx, store)?;
    crate::db::exec(
        tx,
        "INSERT INTO purchase_orders (id, store_id, number, supplier_id, status, expected_at,
                                      note, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
        params![
            po.id,
            store,
            number,
            po.supplier_id,
            po.status.as_str(),
            po.expected_at,
            po.note,
            time::format(now)
        ],
    )?;
    Ok(number)
}

/// Replaces the order's lines (none received yet: only drafts change lines).
pub fn set_items(
    tx: &Tx<'_>,
    id: PurchaseOrderId,
    items: &[(VariantId, i64, i64)],
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "DELETE FROM purchase_order_items WHERE purchase_order_id = ?1",
        params![id],
    )?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO purchase_order_items (purchase_order_id, position, variant_id, quantity,
                                           unit_cost_cents)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (i, (variant, quantity, cost)) in (0_i64..).zip(items) {
        insert.execute(params![id, i, variant, quantity, cost])?;
    }
    Ok(())
}

/// What a draft's `PATCH` changes; `None` keeps a field, `Some(None)` clears it.
#[derive(Debug, Default, Clone)]
pub struct OrderChange {
    pub supplier_id: Option<SupplierId>,
    pub expected_at: Option<Option<String>>,
    pub note: Option<Option<String>>,
    pub status: Option<PurchaseOrderStatus>,
}

/// Applies `f` and stamps `updated_at`; false when the store has no such order.
pub fn update_order(
    tx: &Tx<'_>,
    store: StoreId,
    id: PurchaseOrderId,
    f: &OrderChange,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE purchase_orders SET supplier_id = COALESCE(?3, supplier_id),
                expected_at = CASE WHEN ?4 THEN ?5 ELSE expected_at END,
                note = CASE WHEN ?6 THEN ?7 ELSE note END,
                status = COALESCE(?8, status), updated_at = ?9
         WHERE store_id = ?1 AND id = ?2",
        params![
            store,
            id,
            f.supplier_id,
            f.expected_at.is_some(),
            f.expected_at.clone().flatten(),
            f.note.is_some(),
            f.note.clone().flatten(),
            f.status.map(PurchaseOrderStatus::as_str),
            time::format(now)
        ],
    )?;
    Ok(n == 1)
}

/// Adds `quantity` to a line's received units; false when the line would pass its ordered
/// quantity (or the order has no such line), leaving it unchanged.
pub fn add_received(
    tx: &Tx<'_>,
    id: PurchaseOrderId,
    variant: VariantId,
    quantity: i64,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE purchase_order_items SET received_quantity = received_quantity + ?3
         WHERE purchase_order_id = ?1 AND variant_id = ?2
           AND received_quantity + ?3 <= quantity",
        params![id, variant, quantity],
    )?;
    Ok(n == 1)
}

const ORDER_COLUMNS: &str = "id, store_id, number, supplier_id, status, expected_at, note,
    created_at, updated_at";

fn order_row(r: &Row<'_>) -> rusqlite::Result<PurchaseOrderOut> {
    Ok(PurchaseOrderOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        number: r.get(2)?,
        supplier_id: r.get(3)?,
        status: crate::db::parse_column(r, 4, PurchaseOrderStatus::parse)?,
        items: Vec::new(),
        total_cost_cents: 0,
        expected_at: r.get(5)?,
        note: r.get(6)?,
        created_at: r.get(7)?,
        updated_at: r.get(8)?,
    })
}

fn with_items(c: &Connection, mut po: PurchaseOrderOut) -> Result<PurchaseOrderOut, AppError> {
    po.items = c
        .prepare_cached(
            "SELECT variant_id, quantity, unit_cost_cents, received_quantity
             FROM purchase_order_items WHERE purchase_order_id = ?1 ORDER BY position",
        )?
        .query_map(params![po.id], |r| {
            Ok(PurchaseOrderItem {
                variant_id: r.get(0)?,
                quantity: r.get(1)?,
                unit_cost_cents: r.get(2)?,
                received_quantity: r.get(3)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    po.total_cost_cents = po
        .items
        .iter()
        .map(|i| i.quantity * i.unit_cost_cents)
        .sum();
    Ok(po)
}

pub fn get_order(
    c: &Connection,
    store: StoreId,
    id: PurchaseOrderId,
) -> Result<Option<PurchaseOrderOut>, AppError> {
    let sql =
        format!("SELECT {ORDER_COLUMNS} FROM purchase_orders WHERE store_id = ?1 AND id = ?2");
    let found = c
        .prepare_cached(&sql)?
        .query_row(params![store, id], order_row)
        .optional()?;
    found.map(|po| with_items(c, po)).transpose()
}

fn order_filter(status: Option<PurchaseOrderStatus>, supplier: Option<SupplierId>) -> String {
    crate::db::where_clause(
        "store_id = ?1",
        &[
            (status.is_some(), "status = ?2", "?2"),
            (supplier.is_some(), "supplier_id = ?3", "?3"),
        ],
    )
}

/// The store's purchase orders, newest first.
pub fn list_orders(
    c: &Connection,
    store: StoreId,
    status: Option<PurchaseOrderStatus>,
    supplier: Option<SupplierId>,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<PurchaseOrderOut>, AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT {ORDER_COLUMNS} FROM purchase_orders WHERE {} AND (created_at, id) < (?4, ?5)
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?6",
        order_filter(status, supplier)
    );
    let rows: Vec<PurchaseOrderOut> = c
        .prepare_cached(&sql)?
        .query_map(
            params![
                store,
                status.map(PurchaseOrderStatus::as_str),
                supplier,
                at,
                id,
                offset
            ],
            order_row,
        )?
        .collect::<Result<_, _>>()?;
    rows.into_iter().map(|po| with_items(c, po)).collect()
}

pub fn count_orders(
    c: &Connection,
    store: StoreId,
    status: Option<PurchaseOrderStatus>,
    supplier: Option<SupplierId>,
) -> Result<i64, AppError> {
    let sql = format!(
        "SELECT COUNT(*) FROM purchase_orders WHERE {}",
        order_filter(status, supplier)
    );
    Ok(c.prepare_cached(&sql)?.query_row(
        params![store, status.map(PurchaseOrderStatus::as_str), supplier],
        |r| r.get(0),
    )?)
}
