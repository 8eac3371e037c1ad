//! Analytics SQL: the counters' writes, called by the writes they count in their
//! transaction, and the reads of a range of buckets.

use crate::db::Tx;
use rusqlite::{Connection, OptionalExtension, params};

use super::model::TopProductOut;
use crate::error::AppError;
use crate::ids::{ProductId, StoreId};

/// A quarter hour, the summary's bucket.
pub const QUARTER: i64 = 900;
/// A UTC day, the products' coarse bucket.
pub const DAY: i64 = 86_400;

/// The start (Unix seconds) of the `span` bucket holding a stored timestamp.
fn bucket_of(at: &str, span: i64) -> Result<i64, AppError> {
    let t = crate::time::parse(at)
        .ok_or_else(|| AppError::internal(anyhow::anyhow!("a stored timestamp: {at}")))?;
    Ok(t.timestamp().div_euclid(span) * span)
}

/// One line of a counted order.
#[derive(Debug, Clone, Copy)]
pub struct Sale<'a> {
    pub product_id: ProductId,
    pub title: &'a str,
    pub quantity: i64,
    pub revenue_cents: i64,
}

/// Adds to the counters of the quarter hour holding `at`.
fn add(
    tx: &Tx<'_>,
    store: StoreId,
    at: &str,
    [orders, revenue, refunds, customers]: [i64; 4],
) -> Result<(), AppError> {
    tx.prepare_cached(
        "INSERT INTO analytics_buckets (store_id, bucket, orders, revenue_cents, refunds_cents,
                                        new_customers)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (store_id, bucket) DO UPDATE SET
             orders = orders + excluded.orders,
             revenue_cents = revenue_cents + excluded.revenue_cents,
             refunds_cents = refunds_cents + excluded.refunds_cents,
             new_customers = new_customers + excluded.new_customers",
    )?
    .execute(params![
        store,
        bucket_of(at, QUARTER)?,
        orders,
        revenue,
        refunds,
        customers
    ])?;
    Ok(())
}

/// Counts an order as it becomes paid (the one time it gains a payment): one order and its
/// total in the bucket of its `created_at`, and its lines per product.
pub fn count_order(
    tx: &Tx<'_>,
    store: StoreId,
    created_at: &str,
    total_cents: i64,
    sales: &[Sale<'_>],
) -> Result<(), AppError> {
    add(tx, store, created_at, [1, total_cents, 0, 0])?;
    let mut up = tx.prepare_cached(
        "INSERT INTO analytics_product_buckets (store_id, span, bucket, product_id, title,
                                                quantity, revenue_cents)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (store_id, span, bucket, product_id) DO UPDATE SET
             title = excluded.title,
             quantity = quantity + excluded.quantity,
             revenue_cents = revenue_cents + excluded.revenue_cents",
    )?;
    for span in [QUARTER, DAY] {
        let bucket = bucket_of(created_at, span)?;
        for s in sales {
            up.execute(params![
                store,
                span,
                bucket,
                s.product_id,
                s.title,
                s.quantity,
                s.revenue_cents
            ])?;
        }
    }
    Ok(())
}

/// Counts a refund as it succeeds, in the bucket of the refund's own `created_at`.
pub fn count_refund(
    tx: &Tx<'_>,
    store: StoreId,
    created_at: &str,
    amount_cents: i64,
) -> Result<(), AppError> {
    add(tx, store, created_at, [0, 0, amount_cents, 0])
}

/// Counts a new customer (`delta` 1) or takes a deleted one out again (-1), in the bucket
/// of the customer's `created_at`.
pub fn count_customer(
    tx: &Tx<'_>,
    store: StoreId,
    created_at: &str,
    delta: i64,
) -> Result<(), AppError> {
    add(tx, store, created_at, [0, 0, 0, delta])
}

/// A quarter hour's counters: its start and orders, revenue, refunds, new customers.
pub type Bucket = (i64, [i64; 4]);

/// The store's non-empty quarter hours in `[start, end)`, in time order.
pub fn buckets(
    c: &Connection,
    store: StoreId,
    start: i64,
    end: i64,
) -> Result<Vec<Bucket>, AppError> {
    let mut stmt = c.prepare_cached(
        "SELECT bucket, orders, revenue_cents, refunds_cents, new_customers
         FROM analytics_buckets WHERE store_id = ?1 AND bucket >= ?2 AND bucket < ?3
         ORDER BY bucket",
    )?;
    let rows = stmt.query_map(params![store, start, end], |r| {
        Ok((r.get(0)?, [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?]))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// `[start, end)` cut into UTC quarter hours at its ends and whole UTC days between:
/// (quarters before, days, quarters after).
fn cut(start: i64, end: i64) -> [(i64, i64); 3] {
    let first_day = start.div_euclid(DAY) * DAY + if start.rem_euclid(DAY) == 0 { 0 } else { DAY };
    let last_day = end.div_euclid(DAY) * DAY;
    if first_day >= last_day {
        return [(start, end), (0, 0), (0, 0)];
    }
    [(start, first_day), (first_day, last_day), (last_day, end)]
}

const RANKED: &str = "
    WITH ranged AS (
        SELECT product_id, title, quantity, revenue_cents FROM analytics_product_buckets
        WHERE store_id = ?1 AND span = 900 AND bucket >= ?2 AND bucket < ?3
        UNION ALL
        SELECT product_id, title, quantity, revenue_cents FROM analytics_product_buckets
        WHERE store_id = ?1 AND span = 86400 AND bucket >= ?4 AND bucket < ?5
        UNION ALL
        SELECT product_id, title, quantity, revenue_cents FROM analytics_product_buckets
        WHERE store_id = ?1 AND span = 900 AND bucket >= ?6 AND bucket < ?7
    ),
    ranked AS (
        SELECT product_id, MAX(title) AS title, SUM(quantity) AS quantity,
               SUM(revenue_cents) AS revenue
        FROM ranged GROUP BY product_id
    )";

/// The products sold in `[start, end)`, by revenue (highest first, then by id), after the
/// keyset position `after` (revenue, product id).
pub fn top_products(
    c: &Connection,
    store: StoreId,
    (start, end): (i64, i64),
    after: Option<&(i64, String)>,
    limit: i64,
    offset: i64,
) -> Result<Vec<TopProductOut>, AppError> {
    let [q1, d, q2] = cut(start, end);
    let mut stmt = c.prepare_cached(&format!(
        "{RANKED}
         SELECT r.product_id, COALESCE(p.title, r.title), r.quantity, r.revenue
         FROM ranked r LEFT JOIN products p ON p.id = r.product_id AND p.store_id = ?1
         WHERE ?8 IS NULL OR r.revenue < ?8 OR (r.revenue = ?8 AND r.product_id > ?9)
         ORDER BY r.revenue DESC, r.product_id LIMIT ?10 OFFSET ?11"
    ))?;
    let rows = stmt.query_map(
        params![
            store,
            q1.0,
            q1.1,
            d.0,
            d.1,
            q2.0,
            q2.1,
            after.map(|a| a.0),
            after.map(|a| a.1.as_str()),
            limit,
            offset
        ],
        |r| {
            Ok(TopProductOut {
                product_id: r.get(0)?,
                title: r.get(1)?,
                quantity: r.get(2)?,
                revenue_cents: r.get(3)?,
            })
        },
    )?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// How many products sold in `[start, end)`.
pub fn count_products(
    c: &Connection,
    store: StoreId,
    (start, end): (i64, i64),
) -> Result<i64, AppError> {
    let [q1, d, q2] = cut(start, end);
    Ok(
        c.prepare_cached(&format!("{RANKED} SELECT COUNT(*) FROM ranked"))?
            .query_row(params![store, q1.0, q1.1, d.0, d.1, q2.0, q2.1], |r| {
                r.get(0)
            })?,
    )
}

/// The store's time zone and currency (its organization's); None for no such store.
pub fn zone(c: &Connection, store: StoreId) -> Result<Option<(String, String)>, AppError> {
    Ok(c.prepare_cached(
        "SELECT t.timezone, t.currency FROM stores s JOIN tenants t ON t.id = s.tenant_id
             WHERE s.id = ?1",
    )?
    .query_row([store], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_cut_into_quarter_hours_at_its_ends_and_days_between() {
        // 2026-01-01T03:00Z to 2026-01-04T03:00Z (a UTC-3 store's three days).
        let s = 1_767_236_400;
        let e = s + 3 * DAY;
        assert_eq!(
            cut(s, e),
            [
                (s, s + 21 * 3600),
                (s + 21 * 3600, e - 3 * 3600),
                (e - 3 * 3600, e)
            ]
        );
        // Aligned on UTC days: no quarter hours.
        let d = s - 3 * 3600;
        assert_eq!(cut(d, d + DAY), [(d, d), (d, d + DAY), (d + DAY, d + DAY)]);
        // Shorter than a day across midnight: quarter hours only.
        assert_eq!(cut(s, s + DAY)[1], (0, 0));
        assert_eq!(
            bucket_of("2026-01-01T03:14:59.999999Z", QUARTER).unwrap(),
            s
        );
        assert_eq!(
            bucket_of("2026-01-01T03:15:00.000000Z", QUARTER).unwrap(),
            s + 900
        );
    }
}
