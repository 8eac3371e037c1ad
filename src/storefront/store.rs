//! The storefront's storage: each active product kept rendered as shoppers see it
//! (`storefront_products`, V29), rewritten by [`refresh`] in the transaction of every write
//! that changes it, so lists and reads copy stored JSON; and what only shoppers ask
//! (approved reviews).
//!
//! Who calls [`refresh`]: the catalog's product writes (create, update with its variants and
//! categories) and category deletes, every stock move (`inventory::store::change`, when a
//! variant's availability crosses zero: order reserve and release, fulfilment, adjustments,
//! refunds that cancel), and review writes that move a product's rating. Seeders rebuild a
//! whole store ([`refresh_store`]).

use crate::db::Tx;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{StorefrontProduct, StorefrontReview};
use crate::catalog::model::ProductStatus;
use crate::catalog::store as catalog;
use crate::db::rendered::{Position, RenderedJson, RenderedRows, RenderedTable};
use crate::error::AppError;
use crate::ids::{CategoryId, ProductId, StoreId, VariantId};

const TABLE: RenderedTable = RenderedTable {
    table: "storefront_products",
    by: "id",
};

/// The variants among `ids` with a unit free to sell.
fn available(c: &Connection, ids: &[VariantId]) -> Result<Vec<VariantId>, AppError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let json = serde_json::to_string(ids).map_err(AppError::internal)?;
    Ok(c.prepare_cached(
        "SELECT id FROM variants WHERE id IN (SELECT value FROM json_each(?1))
           AND on_hand - reserved > 0",
    )?
    .query_map([json], |r| r.get(0))?
    .collect::<Result<_, _>>()?)
}

/// The product as shoppers see it, built from the catalog's rows: what [`refresh`] stores.
/// None for a draft, archived or unknown product.
pub fn build(
    c: &Connection,
    store: StoreId,
    id: ProductId,
) -> Result<Option<StorefrontProduct>, AppError> {
    let Some(p) = catalog::get_product(c, store, id)?.filter(|p| p.status == ProductStatus::Active)
    else {
        return Ok(None);
    };
    let ids: Vec<VariantId> = p.variants.iter().map(|v| v.id).collect();
    let free = available(c, &ids)?;
    Ok(Some(StorefrontProduct::from_product(p, |v| {
        free.contains(&v)
    })))
}

/// The stored JSON of a product [`build`] gives.
pub fn render(p: &StorefrontProduct) -> Result<String, AppError> {
    serde_json::to_string(p).map_err(AppError::internal)
}

/// Rewrites the product's storefront row from the catalog (removes it when the product is
/// not on sale or is gone). Call it in the transaction of any write that changes what a
/// shopper sees of the product.
pub fn refresh(tx: &Tx<'_>, store: StoreId, id: ProductId) -> Result<(), AppError> {
    let Some(p) = build(tx, store, id)? else {
        crate::db::exec(
            tx,
            "DELETE FROM storefront_products WHERE store_id = ?1 AND id = ?2",
            params![store, id],
        )?;
        return Ok(());
    };
    let json = render(&p)?;
    // A product's `created_at` (part of the row's key) never changes: an existing row is
    // updated in place, a new one inserted.
    let updated = tx
        .prepare_cached(
            "UPDATE storefront_products SET rendered = ?3 WHERE store_id = ?1 AND id = ?2",
        )?
        .execute(params![store, id, json])?;
    if updated == 0 {
        tx.prepare_cached(
            "INSERT INTO storefront_products (store_id, created_at, id, rendered)
             VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![store, p.created_at, id, json])?;
    }
    Ok(())
}

/// Rewrites every product's row in the store (the seeders', after writing many at once).
pub fn refresh_store(tx: &Tx<'_>, store: StoreId) -> Result<(), AppError> {
    let ids: Vec<ProductId> = tx
        .prepare_cached("SELECT id FROM products WHERE store_id = ?1")?
        .query_map([store], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for id in ids {
        refresh(tx, store, id)?;
    }
    Ok(())
}

/// Renders the products queued in `storefront_pending` (V29 queues every active product of
/// a database it upgrades) and empties the queue; how many were queued. Run when the
/// database opens, before serving.
pub fn render_pending(tx: &Tx<'_>) -> Result<usize, AppError> {
    let queued: Vec<(ProductId, Option<StoreId>)> = tx
        .prepare(
            "SELECT q.product_id, p.store_id FROM storefront_pending q
             LEFT JOIN products p ON p.id = q.product_id",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (id, store) in &queued {
        if let Some(store) = store {
            refresh(tx, *store, *id)?;
        }
    }
    crate::db::exec(tx, "DELETE FROM storefront_pending", [])?;
    Ok(queued.len())
}

/// An active product's stored JSON.
pub fn get_rendered(
    c: &Connection,
    store: StoreId,
    id: ProductId,
) -> Result<Option<RenderedJson>, AppError> {
    TABLE.get(c, store, &id)
}

/// Whether the product is on sale (it has a storefront row).
pub fn on_sale(c: &Connection, store: StoreId, id: ProductId) -> Result<bool, AppError> {
    Ok(c.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM storefront_products WHERE store_id = ?1 AND id = ?2)",
    )?
    .query_row(params![store, id], |r| r.get(0))?)
}

/// The filters of the list; `?1` is the store, `?2` the category, `?3` the search pattern.
fn filter(category: Option<CategoryId>, search: Option<&str>) -> String {
    crate::db::where_clause(
        "s.store_id = ?1",
        &[
            (
                category.is_some(),
                "EXISTS (SELECT 1 FROM product_categories pc
                         WHERE pc.product_id = s.id AND pc.category_id = ?2)",
                "?2",
            ),
            (
                search.is_some(),
                "(EXISTS (SELECT 1 FROM products p
                          WHERE p.id = s.id AND p.title LIKE ?3 ESCAPE '\\')
                  OR EXISTS (SELECT 1 FROM variants v
                             WHERE v.product_id = s.id AND v.sku LIKE ?3 ESCAPE '\\'))",
                "?3",
            ),
        ],
    )
}

/// Active products, newest first (the admin list's default order), the page after `after`
/// appended to `page`: one walk of the table's key, the stored rows copied out.
pub fn list_products(
    c: &Connection,
    store: StoreId,
    category: Option<CategoryId>,
    search: Option<&str>,
    after: Option<&Position>,
    page: &mut RenderedRows,
    offset: i64,
) -> Result<(), AppError> {
    let (at, id) = after
        .cloned()
        .unwrap_or_else(|| ("9999".into(), String::new()));
    let sql = format!(
        "SELECT s.created_at, s.id, s.rendered FROM storefront_products s
         WHERE {} AND (s.created_at, s.id) < (?4, ?5)
         ORDER BY s.created_at DESC, s.id DESC LIMIT {} OFFSET ?6",
        filter(category, search),
        page.fetch()
    );
    let pattern = search.map(crate::db::contains_pattern);
    let mut stmt = c.prepare_cached(&sql)?;
    page.extend(stmt.query(params![store, category, pattern, at, id, offset])?)
}

pub fn count_products(
    c: &Connection,
    store: StoreId,
    category: Option<CategoryId>,
    search: Option<&str>,
) -> Result<i64, AppError> {
    let sql = format!(
        "SELECT COUNT(*) FROM storefront_products s WHERE {}",
        filter(category, search)
    );
    let pattern = search.map(crate::db::contains_pattern);
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, category, pattern], |r| r.get(0))?)
}

fn review_row(r: &Row<'_>) -> rusqlite::Result<StorefrontReview> {
    Ok(StorefrontReview {
        id: r.get(0)?,
        author_name: r.get(1)?,
        title: r.get(2)?,
        body: r.get(3)?,
        rating: r.get(4)?,
        is_verified_purchase: r.get(5)?,
        reply: r.get(6)?,
        created_at: r.get(7)?,
    })
}

/// A product's approved reviews, newest first.
pub fn list_reviews(
    c: &Connection,
    store: StoreId,
    product: ProductId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<StorefrontReview>, AppError> {
    let keyset = if after.is_some() {
        "AND (created_at, id) < (?3, ?4)"
    } else {
        "AND ?3 IS NULL AND ?4 IS NULL"
    };
    let sql = format!(
        "SELECT id, author_name, title, body, rating, is_verified_purchase, reply, created_at
         FROM reviews WHERE store_id = ?1 AND product_id = ?2 AND status = 'approved' {keyset}
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?5"
    );
    let (k, i) = after
        .cloned()
        .map_or((None, None), |(k, i)| (Some(k), Some(i)));
    Ok(c.prepare_cached(&sql)?
        .query_map(params![store, product, k, i, offset], review_row)?
        .collect::<Result<_, _>>()?)
}

/// A product's approved reviews: its `rating_count`, which the reviews' triggers keep.
pub fn count_reviews(c: &Connection, store: StoreId, product: ProductId) -> Result<i64, AppError> {
    Ok(
        c.prepare_cached("SELECT rating_count FROM products WHERE store_id = ?1 AND id = ?2")?
            .query_row(params![store, product], |r| r.get(0))
            .optional()?
            .unwrap_or(0),
    )
}
