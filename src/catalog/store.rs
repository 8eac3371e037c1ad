//! SQL of the catalog; every query is scoped by store.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{CategoryOut, ProductOut, ProductStatus, VariantIn, VariantOut};
use crate::db::rendered::Position;
use crate::error::{AppError, ErrorCode, ResultExt};
use crate::ids::{CategoryId, ProductId, StoreId, VariantId};
use crate::time;

fn sku_taken(sku: &str) -> impl FnOnce(rusqlite::Error) -> AppError + '_ {
    move |_| {
        AppError::conflict(
            ErrorCode::Conflict,
            format!("SKU {sku} is already used in this store"),
        )
    }
}

/// A slug not yet used by `table` in the store: `base`, then `base-2`, `base-3`...
pub fn free_slug(
    c: &Connection,
    table: &str,
    store: StoreId,
    base: &str,
) -> Result<String, AppError> {
    let sql = format!("SELECT EXISTS (SELECT 1 FROM {table} WHERE store_id = ?1 AND slug = ?2)");
    let mut stmt = c.prepare_cached(&sql)?;
    for n in 1.. {
        let slug = if n == 1 {
            base.to_owned()
        } else {
            format!("{base}-{n}")
        };
        if !stmt.query_row(params![store, slug], |r| r.get::<_, bool>(0))? {
            return Ok(slug);
        }
    }
    unreachable!("some suffix is free")
}

#[allow(clippy::too_many_arguments)]
pub fn insert_product(
    tx: &Tx<'_>,
    store: StoreId,
    id: ProductId,
    title: &str,
    slug: &str,
    description: &str,
    status: ProductStatus,
    tags: &[String],
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let now = time::format(now);
    crate::db::exec(tx,
        "INSERT INTO products (id, store_id, title, slug, description, status, tags, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
        params![id, store, title, slug, description, status.as_str(), json(tags)?, now],
    )
    .on_constraint("products.slug", |_| {
        AppError::conflict(ErrorCode::Conflict, format!("slug {slug} is already used in this store"))
    })?;
    Ok(())
}

fn json(v: &[String]) -> Result<String, AppError> {
    serde_json::to_string(v).map_err(AppError::internal)
}

/// Changes the given fields; false when the store has no such product.
#[allow(clippy::too_many_arguments)]
pub fn update_product(
    tx: &Tx<'_>,
    store: StoreId,
    id: ProductId,
    title: Option<&str>,
    slug: Option<&str>,
    description: Option<&str>,
    status: Option<ProductStatus>,
    tags: Option<&[String]>,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let tags = tags.map(json).transpose()?;
    let n = tx
        .execute(
            "UPDATE products SET title = COALESCE(?3, title), slug = COALESCE(?4, slug),
                    description = COALESCE(?5, description), status = COALESCE(?6, status),
                    tags = COALESCE(?7, tags), updated_at = ?8
             WHERE store_id = ?1 AND id = ?2",
            params![
                store,
                id,
                title,
                slug,
                description,
                status.map(ProductStatus::as_str),
                tags,
                time::format(now)
            ],
        )
        .on_constraint("products.slug", |_| {
            AppError::conflict(
                ErrorCode::Conflict,
                "that slug is already used in this store",
            )
        })?;
    Ok(n == 1)
}

/// Categories that are not the store's: the first one, if any.
pub fn unknown_category(
    c: &Connection,
    store: StoreId,
    ids: &[CategoryId],
) -> Result<Option<CategoryId>, AppError> {
    let mut stmt = c.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM categories WHERE store_id = ?1 AND id = ?2)",
    )?;
    for id in ids {
        if !stmt.query_row(params![store, id], |r| r.get::<_, bool>(0))? {
            return Ok(Some(*id));
        }
    }
    Ok(None)
}

pub fn set_categories(tx: &Tx<'_>, product: ProductId, ids: &[CategoryId]) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "DELETE FROM product_categories WHERE product_id = ?1",
        [product],
    )?;
    let mut stmt = tx.prepare_cached(
        "INSERT INTO product_categories (product_id, category_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
    )?;
    for c in ids {
        stmt.execute(params![product, c])?;
    }
    Ok(())
}

/// Makes the product's variants those of `wanted`, in that order: listed ids are updated,
/// new ones added, the rest removed. An id that is not one of this product's variants is
/// `Ok(Err(id))`; removing one that holds stock is 409 `conflict` with `details.variant_ids`.
pub fn set_variants(
    tx: &Tx<'_>,
    store: StoreId,
    product: ProductId,
    wanted: &[VariantIn],
    now: DateTime<Utc>,
) -> Result<Result<(), VariantId>, AppError> {
    let existing: Vec<VariantId> = tx
        .prepare_cached("SELECT id FROM variants WHERE product_id = ?1")?
        .query_map([product], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if let Some(bad) = wanted
        .iter()
        .filter_map(|v| v.id)
        .find(|id| !existing.contains(id))
    {
        return Ok(Err(bad));
    }
    let now_s = time::format(now);
    let gone: Vec<VariantId> = existing
        .into_iter()
        .filter(|id| !wanted.iter().any(|v| v.id == Some(*id)))
        .collect();
    // Leaving a variant out of a PATCH must not silently throw its stock away: one with
    // units on hand or reserved is adjusted to zero first (or its orders settled).
    let stocked: Vec<VariantId> = gone
        .iter()
        .filter_map(|id| {
            tx.query_row(
                "SELECT on_hand > 0 OR reserved > 0 FROM variants WHERE id = ?1",
                [id],
                |r| r.get::<_, bool>(0),
            )
            .map(|stocked| stocked.then_some(*id))
            .transpose()
        })
        .collect::<Result<_, _>>()?;
    if !stocked.is_empty() {
        return Err(AppError::conflict(
            ErrorCode::Conflict,
            "these variants have stock on hand or reserved; adjust it to zero before removing them",
        )
        .with_details(serde_json::json!({ "variant_ids": stocked })));
    }
    // Removed first, so a SKU can move from a removed variant to a new one.
    for id in &gone {
        crate::db::exec(tx, "DELETE FROM variants WHERE id = ?1", [id])?;
    }
    for (pos, v) in wanted.iter().enumerate() {
        let title = v.title.as_deref().unwrap_or("Default");
        let pos = i64::try_from(pos).unwrap_or(i64::MAX);
        match v.id {
            Some(id) => {
                crate::db::exec(
                    tx,
                    "UPDATE variants SET position = ?2, sku = ?3, title = ?4, price_cents = ?5,
                            compare_at_price_cents = ?6, weight_grams = ?7, updated_at = ?8,
                            low_stock_threshold = COALESCE(?9, low_stock_threshold)
                     WHERE id = ?1",
                    params![
                        id,
                        pos,
                        v.sku,
                        title,
                        v.price_cents,
                        v.compare_at_price_cents,
                        v.weight_grams,
                        now_s,
                        v.low_stock_threshold
                    ],
                )
                .on_constraint("variants.sku", sku_taken(&v.sku))?;
            }
            None => {
                crate::db::exec(tx,
                    "INSERT INTO variants (id, store_id, product_id, position, sku, title, price_cents,
                                           compare_at_price_cents, weight_grams, on_hand, created_at, updated_at,
                                           low_stock_threshold)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, COALESCE(?12, 5))",
                    params![
                        VariantId::new(),
                        store,
                        product,
                        pos,
                        v.sku,
                        title,
                        v.price_cents,
                        v.compare_at_price_cents,
                        v.weight_grams,
                        v.on_hand.unwrap_or(0),
                        now_s,
                        v.low_stock_threshold
                    ],
                )
                .on_constraint("variants.sku", sku_taken(&v.sku))?;
            }
        }
    }
    Ok(Ok(()))
}

fn product_row(r: &Row<'_>) -> rusqlite::Result<ProductOut> {
    let sum: i64 = r.get(7)?;
    let count: i64 = r.get(8)?;
    #[allow(clippy::cast_precision_loss)]
    let average = (count > 0).then(|| ((sum as f64 / count as f64) * 100.0).round() / 100.0);
    Ok(ProductOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        title: r.get(2)?,
        slug: r.get(3)?,
        description: r.get(4)?,
        status: crate::db::parse_column(r, 5, ProductStatus::parse)?,
        tags: crate::db::json_column(r, 6)?,
        rating_average: average,
        rating_count: count,
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
        category_ids: Vec::new(),
        variants: Vec::new(),
    })
}

const PRODUCT_COLUMNS: &str = "p.id, p.store_id, p.title, p.slug, p.description, p.status, p.tags, p.rating_sum, p.rating_count, p.created_at, p.updated_at";

/// Fills in the products' categories and variants: two queries for the whole page, not two
/// per product.
fn complete(c: &Connection, mut products: Vec<ProductOut>) -> Result<Vec<ProductOut>, AppError> {
    if products.is_empty() {
        return Ok(products);
    }
    let ids = serde_json::to_string(&products.iter().map(|p| p.id).collect::<Vec<_>>())
        .map_err(AppError::internal)?;
    let at: std::collections::HashMap<ProductId, usize> = products
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id, i))
        .collect();
    let mut stmt = c.prepare_cached(
        "SELECT product_id, category_id FROM product_categories
         WHERE product_id IN (SELECT value FROM json_each(?1)) ORDER BY product_id, category_id",
    )?;
    let mut rows = stmt.query([&ids])?;
    while let Some(r) = rows.next()? {
        let product: ProductId = r.get(0)?;
        if let Some(&i) = at.get(&product) {
            products[i].category_ids.push(r.get(1)?);
        }
    }
    let mut stmt = c.prepare_cached(
        "SELECT product_id, id, sku, title, price_cents, compare_at_price_cents, weight_grams
         FROM variants WHERE product_id IN (SELECT value FROM json_each(?1))
         ORDER BY product_id, position",
    )?;
    let mut rows = stmt.query([&ids])?;
    while let Some(r) = rows.next()? {
        let product: ProductId = r.get(0)?;
        if let Some(&i) = at.get(&product) {
            products[i].variants.push(VariantOut {
                id: r.get(1)?,
                sku: r.get(2)?,
                title: r.get(3)?,
                price_cents: r.get(4)?,
                compare_at_price_cents: r.get(5)?,
                weight_grams: r.get(6)?,
            });
        }
    }
    Ok(products)
}

pub fn get_product(
    c: &Connection,
    store: StoreId,
    id: ProductId,
) -> Result<Option<ProductOut>, AppError> {
    let sql =
        format!("SELECT {PRODUCT_COLUMNS} FROM products p WHERE p.store_id = ?1 AND p.id = ?2");
    let found = c
        .prepare_cached(&sql)?
        .query_row(params![store, id], product_row)
        .optional()?;
    match found {
        Some(p) => Ok(complete(c, vec![p])?.pop()),
        None => Ok(None),
    }
}

pub fn delete_product(tx: &Tx<'_>, store: StoreId, id: ProductId) -> Result<bool, AppError> {
    crate::db::delete_in_store(tx, "products", store, &id)
}

/// A list order: the column and whether it descends.
#[derive(Debug, Clone, Copy)]
pub struct Sort {
    pub column: &'static str,
    pub descending: bool,
}

/// The columns the product list sorts by (the document's `sort` values).
pub const SORT_COLUMNS: [&str; 3] = ["created_at", "updated_at", "title"];

impl Sort {
    pub fn parse(s: Option<&str>) -> Option<Self> {
        let s = s.unwrap_or("-created_at");
        let (descending, name) = s.strip_prefix('-').map_or((false, s), |n| (true, n));
        let column = SORT_COLUMNS.into_iter().find(|c| *c == name)?;
        Some(Self { column, descending })
    }

    pub fn key(self, p: &ProductOut) -> Position {
        let v = match self.column {
            "updated_at" => p.updated_at.clone(),
            "title" => p.title.clone(),
            _ => p.created_at.clone(),
        };
        (v, p.id.to_string())
    }
}

/// The filters of the product list.
#[derive(Debug, Clone, Default)]
pub struct ProductQuery {
    pub status: Option<String>,
    pub category: Option<CategoryId>,
    pub search: Option<String>,
}

fn product_filter(q: &ProductQuery) -> String {
    crate::db::where_clause(
        "p.store_id = ?1",
        &[
            (q.status.is_some(), "p.status = ?2", "?2"),
            (
                q.category.is_some(),
                "EXISTS (SELECT 1 FROM product_categories pc
                         WHERE pc.product_id = p.id AND pc.category_id = ?3)",
                "?3",
            ),
            (
                q.search.is_some(),
                "(p.title LIKE ?4 ESCAPE '\\' OR EXISTS (SELECT 1 FROM variants v
                   WHERE v.product_id = p.id AND v.sku LIKE ?4 ESCAPE '\\'))",
                "?4",
            ),
        ],
    )
}

pub fn list_products(
    c: &Connection,
    store: StoreId,
    q: &ProductQuery,
    sort: Sort,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<ProductOut>, AppError> {
    let (cmp, dir) = if sort.descending {
        ("<", "DESC")
    } else {
        (">", "ASC")
    };
    let col = sort.column;
    let keyset = if after.is_some() {
        format!("AND (p.{col}, p.id) {cmp} (?5, ?6)")
    } else {
        "AND ?5 IS NULL AND ?6 IS NULL".into()
    };
    let sql = format!(
        "SELECT {PRODUCT_COLUMNS} FROM products p WHERE {} {keyset}
         ORDER BY p.{col} {dir}, p.id {dir} LIMIT {limit} OFFSET ?7",
        product_filter(q)
    );
    let (k, i) = after
        .cloned()
        .map_or((None, None), |(k, i)| (Some(k), Some(i)));
    let rows: Vec<ProductOut> = c
        .prepare_cached(&sql)?
        .query_map(
            params![
                store,
                q.status,
                q.category,
                q.search.as_deref().map(crate::db::contains_pattern),
                k,
                i,
                offset
            ],
            product_row,
        )?
        .collect::<Result<_, _>>()?;
    complete(c, rows)
}

pub fn count_products(c: &Connection, store: StoreId, q: &ProductQuery) -> Result<i64, AppError> {
    if q.category.is_none() && q.search.is_none() {
        let key = crate::db::counts::key(q.status.as_deref().map(|s| ("status", s)));
        return crate::db::counts::get(c, store, "products", &key);
    }
    let sql = format!("SELECT 1 FROM products p WHERE {}", product_filter(q));
    crate::db::counts::capped(
        c,
        &sql,
        params![
            store,
            q.status,
            q.category,
            q.search.as_deref().map(crate::db::contains_pattern)
        ],
    )
}

// ---- categories

const CATEGORY_COLUMNS: &str = "id, store_id, parent_id, name, slug, created_at, updated_at";

fn category_row(r: &Row<'_>) -> rusqlite::Result<CategoryOut> {
    Ok(CategoryOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        parent_id: r.get(2)?,
        name: r.get(3)?,
        slug: r.get(4)?,
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
    })
}

pub fn get_category(
    c: &Connection,
    store: StoreId,
    id: CategoryId,
) -> Result<Option<CategoryOut>, AppError> {
    let sql = format!("SELECT {CATEGORY_COLUMNS} FROM categories WHERE store_id = ?1 AND id = ?2");
    Ok(c.prepare_cached(&sql)?
        .query_row(params![store, id], category_row)
        .optional()?)
}

/// Whether making `parent` the parent of `id` would close a loop (`parent` is `id` or one of
/// its descendants).
pub fn would_cycle(c: &Connection, id: CategoryId, parent: CategoryId) -> Result<bool, AppError> {
    Ok(c.query_row(
        "WITH RECURSIVE up(id) AS (
            SELECT ?2 UNION SELECT c.parent_id FROM categories c JOIN up ON c.id = up.id
            WHERE c.parent_id IS NOT NULL)
         SELECT EXISTS (SELECT 1 FROM up WHERE id = ?1)",
        params![id, parent],
        |r| r.get(0),
    )?)
}

pub fn insert_category(tx: &Tx<'_>, out: &CategoryOut) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO categories (id, store_id, parent_id, name, slug, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
        params![
            out.id,
            out.store_id,
            out.parent_id,
            out.name,
            out.slug,
            out.created_at
        ],
    )
    .on_constraint("categories.slug", |_| {
        AppError::conflict(
            ErrorCode::Conflict,
            format!("slug {} is already used in this store", out.slug),
        )
    })?;
    Ok(())
}

pub fn update_category(
    tx: &Tx<'_>,
    store: StoreId,
    id: CategoryId,
    name: Option<&str>,
    slug: Option<&str>,
    parent: Option<Option<CategoryId>>,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = tx
        .execute(
            "UPDATE categories SET name = COALESCE(?3, name), slug = COALESCE(?4, slug),
                    parent_id = CASE WHEN ?5 THEN ?6 ELSE parent_id END, updated_at = ?7
             WHERE store_id = ?1 AND id = ?2",
            params![
                store,
                id,
                name,
                slug,
                parent.is_some(),
                parent.flatten(),
                time::format(now)
            ],
        )
        .on_constraint("categories.slug", |_| {
            AppError::conflict(
                ErrorCode::Conflict,
                "that slug is already used in this store",
            )
        })?;
    Ok(n == 1)
}

/// Deletes a category; its products lose it (their storefront rows with them).
pub fn delete_category(tx: &Tx<'_>, store: StoreId, id: CategoryId) -> Result<bool, AppError> {
    let products: Vec<ProductId> = tx
        .prepare_cached("SELECT product_id FROM product_categories WHERE category_id = ?1")?
        .query_map([id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    if !crate::db::delete_in_store(tx, "categories", store, &id)? {
        return Ok(false);
    }
    for p in products {
        crate::storefront::store::refresh(tx, store, p)?;
    }
    Ok(true)
}

/// The store's categories by name.
pub fn list_categories(
    c: &Connection,
    store: StoreId,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<CategoryOut>, AppError> {
    let (name, id) = after.cloned().unwrap_or_default();
    let sql = format!(
        "SELECT {CATEGORY_COLUMNS} FROM categories WHERE store_id = ?1 AND (name, id) > (?2, ?3)
         ORDER BY name, id LIMIT {limit} OFFSET ?4"
    );
    c.prepare_cached(&sql)?
        .query_map(params![store, name, id, offset], category_row)?
        .collect::<Result<_, _>>()
        .map_err(Into::into)
}

pub fn count_categories(c: &Connection, store: StoreId) -> Result<i64, AppError> {
    Ok(c.query_row(
        "SELECT COUNT(*) FROM categories WHERE store_id = ?1",
        [store],
        |r| r.get(0),
    )?)
}
