//! SQL of orders, payments and refunds; every query is scoped by store.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{OrderItem, OrderOut, OrderStatus, PaymentOut, RefundOut};
use crate::analytics::store as analytics;
use crate::db::rendered::{Position, RenderedJson, RenderedRows, RenderedTable};
use crate::error::AppError;
use crate::ids::{CustomerId, OrderId, PaymentId, RefundId, StoreId, TenantId, UserId};
use crate::time;

/// The store's currency: its organization's.
pub fn currency(c: &Connection, store: StoreId) -> Result<String, AppError> {
    Ok(c.prepare_cached(
        "SELECT t.currency FROM stores s JOIN tenants t ON t.id = s.tenant_id WHERE s.id = ?1",
    )?
    .query_row([store], |r| r.get(0))?)
}

/// The next order number of the store (the writer serializes callers).
pub fn next_number(tx: &Tx<'_>, store: StoreId) -> Result<i64, AppError> {
    Ok(tx
        .prepare_cached("SELECT COALESCE(MAX(number), 1000) + 1 FROM orders WHERE store_id = ?1")?
        .query_row([store], |r| r.get(0))?)
}

fn render(o: &OrderOut) -> Result<String, AppError> {
    serde_json::to_string(o).map_err(AppError::internal)
}

pub fn insert(tx: &Tx<'_>, o: &OrderOut) -> Result<(), AppError> {
    let items = serde_json::to_string(&o.items).map_err(AppError::internal)?;
    tx.prepare_cached(
        "INSERT INTO orders (id, store_id, number, customer_id, source, items, subtotal_cents,
                             shipping_cents, discount_cents, total_cents, refunded_cents, currency,
                             status, note, created_at, updated_at, rendered)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?
    .execute(params![
        o.id,
        o.store_id,
        o.number,
        o.customer_id,
        o.source,
        items,
        o.subtotal_cents,
        o.shipping_cents,
        o.discount_cents,
        o.total_cents,
        o.refunded_cents,
        o.currency,
        o.status.as_str(),
        o.note,
        o.created_at,
        o.updated_at,
        render(o)?
    ])?;
    Ok(())
}

const COLUMNS: &str = "id, store_id, number, customer_id, source, items, subtotal_cents,
    shipping_cents, discount_cents, total_cents, refunded_cents, currency, status, note,
    created_at, updated_at";

fn order_row(r: &Row<'_>) -> rusqlite::Result<OrderOut> {
    let items: Vec<OrderItem> = crate::db::json_column(r, 5)?;
    let status = crate::db::parse_column(r, 12, OrderStatus::parse)?;
    Ok(OrderOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        number: r.get(2)?,
        customer_id: r.get(3)?,
        source: r.get(4)?,
        items,
        subtotal_cents: r.get(6)?,
        shipping_cents: r.get(7)?,
        discount_cents: r.get(8)?,
        total_cents: r.get(9)?,
        refunded_cents: r.get(10)?,
        currency: r.get(11)?,
        status,
        allowed_status_transitions: status.allowed_next().to_vec(),
        payments: Vec::new(),
        note: r.get(13)?,
        created_at: r.get(14)?,
        updated_at: r.get(15)?,
    })
}

/// The order rebuilt from its rows (writes use this; reads copy `rendered`).
pub fn load(c: &Connection, store: StoreId, id: OrderId) -> Result<Option<OrderOut>, AppError> {
    let sql = format!("SELECT {COLUMNS} FROM orders WHERE store_id = ?1 AND id = ?2");
    let Some(mut o) = c
        .prepare_cached(&sql)?
        .query_row(params![store, id], order_row)
        .optional()?
    else {
        return Ok(None);
    };
    o.payments = payments(c, id)?;
    Ok(Some(o))
}

pub fn order_exists(c: &Connection, store: StoreId, id: OrderId) -> Result<bool, AppError> {
    Ok(
        c.prepare_cached("SELECT EXISTS (SELECT 1 FROM orders WHERE store_id = ?1 AND id = ?2)")?
            .query_row(params![store, id], |r| r.get(0))?,
    )
}

/// The order's payments, oldest first.
pub fn payments(c: &Connection, id: OrderId) -> Result<Vec<PaymentOut>, AppError> {
    c.prepare_cached(
        "SELECT id, provider, amount_cents, refunded_cents, status, created_at
             FROM payments WHERE order_id = ?1 ORDER BY created_at, id",
    )?
    .query_map([id], |r| {
        Ok(PaymentOut {
            id: r.get(0)?,
            provider: r.get(1)?,
            amount_cents: r.get(2)?,
            refunded_cents: r.get(3)?,
            status: r.get(4)?,
            created_at: r.get(5)?,
        })
    })?
    .collect::<Result<_, _>>()
    .map_err(Into::into)
}

/// Writes the order's changed fields and its `rendered` JSON.
pub fn save(tx: &Tx<'_>, o: &OrderOut) -> Result<(), AppError> {
    tx.prepare_cached(
        "UPDATE orders SET status = ?3, note = ?4, refunded_cents = ?5, updated_at = ?6, rendered = ?7
         WHERE store_id = ?1 AND id = ?2",
    )?
    .execute(params![
        o.store_id,
        o.id,
        o.status.as_str(),
        o.note,
        o.refunded_cents,
        o.updated_at,
        render(o)?
    ])?;
    Ok(())
}

/// The order as the API shows it, already serialized.
pub fn get_rendered(
    c: &Connection,
    store: StoreId,
    id: OrderId,
) -> Result<Option<RenderedJson>, AppError> {
    TABLE.get(c, store, &id)
}

/// The store's orders, newest first, filtered by status and customer (and looked up by id).
const TABLE: RenderedTable = RenderedTable {
    table: "orders",
    by: "customer_id",
};

/// A page of the store's orders, newest first, appended to `page`.
pub fn list(
    c: &Connection,
    store: StoreId,
    status: Option<OrderStatus>,
    customer: Option<CustomerId>,
    after: Option<&Position>,
    page: &mut RenderedRows,
    offset: i64,
) -> Result<(), AppError> {
    let by = customer.as_ref().map(|x| x as &dyn rusqlite::ToSql);
    TABLE.list(
        c,
        (store, status.map(OrderStatus::as_str), by),
        after,
        page,
        offset,
    )
}

/// The other filters, with the order number: at most one row, by the (store, number) key.
const BY_NUMBER: &str = "store_id = ?1 AND number = ?2 AND (?3 IS NULL OR status = ?3)
     AND (?4 IS NULL OR customer_id = ?4)";

/// [`list`] narrowed to the order numbered `number`.
#[allow(clippy::too_many_arguments)]
pub fn list_number(
    c: &Connection,
    store: StoreId,
    number: i64,
    status: Option<OrderStatus>,
    customer: Option<CustomerId>,
    after: Option<&Position>,
    page: &mut RenderedRows,
    offset: i64,
) -> Result<(), AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT created_at, id, rendered FROM orders WHERE {BY_NUMBER}
           AND (created_at, id) < (?5, ?6) LIMIT 1 OFFSET ?7"
    );
    let mut stmt = c.prepare_cached(&sql)?;
    let status = status.map(OrderStatus::as_str);
    page.extend(stmt.query(params![store, number, status, customer, at, id, offset])?)
}

pub fn count_number(
    c: &Connection,
    store: StoreId,
    number: i64,
    status: Option<OrderStatus>,
    customer: Option<CustomerId>,
) -> Result<i64, AppError> {
    let sql = format!("SELECT COUNT(*) FROM orders WHERE {BY_NUMBER}");
    let status = status.map(OrderStatus::as_str);
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, number, status, customer], |r| r.get(0))?)
}

pub fn count(
    c: &Connection,
    store: StoreId,
    status: Option<OrderStatus>,
    customer: Option<CustomerId>,
) -> Result<i64, AppError> {
    let by = customer.map(|x| x.to_string());
    TABLE.count(c, (store, status.map(OrderStatus::as_str), by.as_deref()))
}

/// Keeps a customer's `orders_count` and `total_spent_cents`.
pub fn bump_customer(
    tx: &Tx<'_>,
    store: StoreId,
    customer: Option<CustomerId>,
    orders: i64,
    spent_cents: i64,
) -> Result<(), AppError> {
    if let Some(customer) = customer {
        tx.prepare_cached(
            "UPDATE customers SET orders_count = orders_count + ?3,
                    total_spent_cents = total_spent_cents + ?4
             WHERE store_id = ?1 AND id = ?2",
        )?
        .execute(params![store, customer, orders, spent_cents])?;
    }
    Ok(())
}

/// A variant of the store with its product's title, for a new order line.
pub struct Sellable {
    pub product_id: crate::ids::ProductId,
    pub product_title: String,
    pub variant_title: String,
    pub sku: String,
    pub price_cents: i64,
}

pub fn sellable(
    c: &Connection,
    store: StoreId,
    variant: crate::ids::VariantId,
) -> Result<Option<Sellable>, AppError> {
    Ok(c.prepare_cached(
        "SELECT v.product_id, p.title, v.title, v.sku, v.price_cents
             FROM variants v JOIN products p ON p.id = v.product_id
             WHERE v.store_id = ?1 AND v.id = ?2",
    )?
    .query_row(params![store, variant], |r| {
        Ok(Sellable {
            product_id: r.get(0)?,
            product_title: r.get(1)?,
            variant_title: r.get(2)?,
            sku: r.get(3)?,
            price_cents: r.get(4)?,
        })
    })
    .optional()?)
}

// ---- payments and refunds

pub fn insert_payment(
    tx: &Tx<'_>,
    store: StoreId,
    order: OrderId,
    provider: &str,
    amount_cents: i64,
    now: DateTime<Utc>,
) -> Result<PaymentId, AppError> {
    let id = PaymentId::new();
    crate::db::exec(
        tx,
        "INSERT INTO payments (id, store_id, order_id, provider, amount_cents, status, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 'approved', ?6)",
        params![id, store, order, provider, amount_cents, time::format(now)],
    )?;
    count_paid(tx, store, order)?;
    Ok(id)
}

/// Counts an order in the store's analytics as it gains its (one) payment, in this
/// transaction: the one moment an order starts to count (analytics' invariant).
fn count_paid(tx: &Tx<'_>, store: StoreId, order: OrderId) -> Result<(), AppError> {
    let (created_at, total, items): (String, i64, String) = tx
        .prepare_cached(
            "SELECT created_at, total_cents, items FROM orders WHERE id = ?1 AND store_id = ?2",
        )?
        .query_row(params![order, store], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
    let items: Vec<OrderItem> = serde_json::from_str(&items).map_err(AppError::internal)?;
    let sales: Vec<analytics::Sale<'_>> = items
        .iter()
        .map(|i| analytics::Sale {
            product_id: i.product_id,
            title: &i.title,
            quantity: i.quantity,
            revenue_cents: i.total_cents,
        })
        .collect();
    analytics::count_order(tx, store, &created_at, total, &sales)
}

/// An approved payment of the order and what is left to refund of it, pending refunds
/// counted as spent. None when the order has no approved payment.
pub struct Refundable {
    pub payment_id: PaymentId,
    pub provider: String,
    pub balance_cents: i64,
}

pub fn refundable(
    c: &Connection,
    store: StoreId,
    order: OrderId,
) -> Result<Option<Refundable>, AppError> {
    // Orders carry one payment; should there be more, refund the one with most left.
    Ok(c.prepare_cached(
        "SELECT p.id, p.provider, p.amount_cents - p.refunded_cents
                    - COALESCE((SELECT SUM(r.amount_cents) FROM refunds r
                                WHERE r.payment_id = p.id AND r.status = 'pending'), 0) AS left
             FROM payments p WHERE p.store_id = ?1 AND p.order_id = ?2 AND p.status = 'approved'
             ORDER BY left DESC, p.created_at LIMIT 1",
    )?
    .query_row(params![store, order], |r| {
        Ok(Refundable {
            payment_id: r.get(0)?,
            provider: r.get(1)?,
            balance_cents: r.get(2)?,
        })
    })
    .optional()?)
}

/// A refund as stored, with what asking the provider about it needs.
#[derive(Debug, Clone)]
pub struct HeldRefund {
    pub store_id: StoreId,
    pub refund: RefundOut,
    /// The provider holding its payment.
    pub provider: String,
    /// The `Idempotency-Key` every ask of this refund sends.
    pub provider_key: String,
    /// Who asked for it (None for refunds made before V14 or by the demo seeder).
    pub actor_user_id: Option<UserId>,
    pub actor_token_name: Option<String>,
    pub trace_id: Option<String>,
    /// The requester's `via` (the assistant, when it proposed the refund).
    pub actor_via: Option<String>,
}

/// Who asked for a refund, kept for the audit entry of the background check.
pub struct Requester<'a> {
    pub user_id: UserId,
    pub token_name: Option<&'a str>,
    pub trace_id: &'a str,
    pub via: Option<&'a str>,
}

/// Writes a refund (pending unless the seeder records a finished one). `asking_until` marks
/// the ask the caller is about to make, so no other one starts before it ends.
#[allow(clippy::too_many_arguments)]
pub fn insert_refund(
    tx: &Tx<'_>,
    store: StoreId,
    r: &RefundOut,
    client_key: &str,
    provider_key: &str,
    asking_until: Option<DateTime<Utc>>,
    by: Option<&Requester<'_>>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO refunds (id, store_id, order_id, payment_id, amount_cents, reason, status,
                              client_key, provider_key, asking_until, actor_user_id,
                              actor_token_name, trace_id, created_at, actor_via)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        params![
            r.id,
            store,
            r.order_id,
            r.payment_id,
            r.amount_cents,
            r.reason,
            r.status,
            client_key,
            provider_key,
            asking_until.map(time::format),
            by.map(|b| b.user_id),
            by.and_then(|b| b.token_name),
            by.map(|b| b.trace_id),
            r.created_at,
            by.and_then(|b| b.via)
        ],
    )?;
    Ok(())
}

const REFUND_COLUMNS: &str = "r.id, r.order_id, r.payment_id, r.amount_cents, r.reason, r.status,
    r.created_at, r.store_id, p.provider, r.provider_key, r.actor_user_id, r.actor_token_name,
    r.trace_id, r.actor_via";

fn held_row(r: &Row<'_>) -> rusqlite::Result<HeldRefund> {
    Ok(HeldRefund {
        refund: RefundOut {
            id: r.get(0)?,
            order_id: r.get(1)?,
            payment_id: r.get(2)?,
            amount_cents: r.get(3)?,
            reason: r.get(4)?,
            status: r.get(5)?,
            created_at: r.get(6)?,
        },
        store_id: r.get(7)?,
        provider: r.get(8)?,
        provider_key: r.get(9)?,
        actor_user_id: r.get(10)?,
        actor_token_name: r.get(11)?,
        trace_id: r.get(12)?,
        actor_via: r.get(13)?,
    })
}

/// The order's refund made with this client key, if any (a retry, or a request racing it).
pub fn refund_by_client_key(
    c: &Connection,
    store: StoreId,
    order: OrderId,
    key: &str,
) -> Result<Option<HeldRefund>, AppError> {
    let sql = format!(
        "SELECT {REFUND_COLUMNS} FROM refunds r JOIN payments p ON p.id = r.payment_id
         WHERE r.store_id = ?1 AND r.order_id = ?2 AND r.client_key = ?3"
    );
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, order, key], held_row)
        .optional()?)
}

/// A refund by id alone: the background check names only the refund.
pub fn refund_by_id_unscoped(c: &Connection, id: RefundId) -> Result<Option<HeldRefund>, AppError> {
    let sql = format!(
        "SELECT {REFUND_COLUMNS} FROM refunds r JOIN payments p ON p.id = r.payment_id
         WHERE r.id = ?1"
    );
    Ok(c.prepare_cached(&sql)?
        .query_row([id], held_row)
        .optional()?)
}

/// Takes the right to ask the provider about a pending refund until `until`; false when the
/// refund is no longer pending or another ask holds it.
pub fn start_asking(
    tx: &Tx<'_>,
    id: RefundId,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE refunds SET asking_until = ?3
         WHERE id = ?1 AND status = 'pending' AND (asking_until IS NULL OR asking_until <= ?2)",
        params![id, time::format(now), time::format(until)],
    )?;
    Ok(n == 1)
}

/// Gives up the right to ask (the answer was uncertain): the background check asks next.
/// Only the lease this ask holds (`until`) is given up: one that ran out may meanwhile have
/// been taken by a newer ask, which keeps it.
pub fn stop_asking(tx: &Tx<'_>, id: RefundId, until: DateTime<Utc>) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE refunds SET asking_until = NULL
         WHERE id = ?1 AND status = 'pending' AND asking_until = ?2",
        params![id, time::format(until)],
    )?;
    Ok(())
}

/// Marks a pending refund succeeded and counts it against its payment. False (and nothing
/// written) when it was not pending: another request or the check settled it first.
pub fn confirm_refund(tx: &Tx<'_>, r: &RefundOut) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE refunds SET status = 'succeeded', asking_until = NULL
         WHERE id = ?1 AND status = 'pending'",
        [r.id],
    )?;
    if n == 1 {
        // Counted at the refund's own creation, in the settling transaction.
        let (store, created_at): (StoreId, String) = tx
            .prepare_cached("SELECT store_id, created_at FROM refunds WHERE id = ?1")?
            .query_row([r.id], |row| Ok((row.get(0)?, row.get(1)?)))?;
        analytics::count_refund(tx, store, &created_at, r.amount_cents)?;
        crate::db::exec(
            tx,
            "UPDATE payments SET refunded_cents = refunded_cents + ?2 WHERE id = ?1",
            params![r.payment_id, r.amount_cents],
        )?;
    }
    Ok(n == 1)
}

/// Marks a pending refund failed, which releases the amount it held. False when it was not
/// pending.
pub fn fail_refund(tx: &Tx<'_>, id: RefundId) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE refunds SET status = 'failed', asking_until = NULL
         WHERE id = ?1 AND status = 'pending'",
        [id],
    )?;
    Ok(n == 1)
}

/// The organization a store belongs to (the audit entry of a refund settled in the
/// background names it).
pub fn tenant_of(c: &Connection, store: StoreId) -> Result<TenantId, AppError> {
    Ok(
        c.prepare_cached("SELECT tenant_id FROM stores WHERE id = ?1")?
            .query_row([store], |r| r.get(0))?,
    )
}

/// The stock side of a status move: fulfilment takes the reserved units off hand,
/// cancelling releases them.
pub fn move_stock(
    tx: &Tx<'_>,
    o: &OrderOut,
    to: OrderStatus,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let sign = match to {
        OrderStatus::Fulfilled => (-1, -1),
        OrderStatus::Cancelled => (0, -1),
        _ => return Ok(()),
    };
    for item in &o.items {
        let q = item.quantity;
        // A variant deleted since the order was placed has no stock left to move.
        if let crate::inventory::store::Change::Short(level) = crate::inventory::store::change(
            tx,
            o.store_id,
            item.variant_id,
            sign.0 * q,
            sign.1 * q,
            now,
        )? {
            return Err(AppError::internal(anyhow::anyhow!(
                "variant {} holds {} reserved, fewer than order {} reserved",
                level.variant_id,
                level.reserved,
                o.id
            )));
        }
    }
    Ok(())
}

/// Storefront orders still unpaid (`pending`) that were placed before `before`, oldest first,
/// across stores: the cart sweep cancels them to free their stock.
pub fn unpaid_storefront_unscoped(
    c: &Connection,
    before: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<(StoreId, OrderId)>, AppError> {
    Ok(c.prepare_cached(
        "SELECT store_id, id FROM orders
         WHERE source = 'storefront' AND status = 'pending' AND created_at < ?1
         ORDER BY created_at LIMIT ?2",
    )?
    .query_map(params![time::format(before), limit], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?
    .collect::<Result<_, _>>()?)
}
