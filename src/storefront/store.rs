//! The storefront's reads: the catalog's own queries restricted to what is on sale, plus
//! what only shoppers ask (whether a variant has a unit free, approved reviews).

use rusqlite::{Connection, Row, params};

use super::model::{StorefrontProduct, StorefrontReview};
use crate::catalog::model::ProductStatus;
use crate::catalog::store::{self as catalog, ProductQuery, Sort};
use crate::db::rendered::Position;
use crate::error::AppError;
use crate::ids::{CategoryId, ProductId, StoreId, VariantId};

/// The list order: newest first, as the admin list's default.
pub fn sort() -> Sort {
    Sort::parse(None).expect("the default sort parses")
}

fn on_sale(category: Option<CategoryId>, search: Option<String>) -> ProductQuery {
    ProductQuery {
        status: Some(ProductStatus::Active.as_str().to_owned()),
        category,
        search,
    }
}

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

fn shown(
    c: &Connection,
    products: Vec<crate::catalog::model::ProductOut>,
) -> Result<Vec<StorefrontProduct>, AppError> {
    let ids: Vec<VariantId> = products
        .iter()
        .flat_map(|p| p.variants.iter().map(|v| v.id))
        .collect();
    let free: std::collections::HashSet<VariantId> = available(c, &ids)?.into_iter().collect();
    Ok(products
        .into_iter()
        .map(|p| StorefrontProduct::from_product(p, |v| free.contains(&v)))
        .collect())
}

/// Active products, newest first.
pub fn list_products(
    c: &Connection,
    store: StoreId,
    category: Option<CategoryId>,
    search: Option<String>,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<StorefrontProduct>, AppError> {
    let q = on_sale(category, search);
    let rows = catalog::list_products(c, store, &q, sort(), after, limit, offset)?;
    shown(c, rows)
}

pub fn count_products(
    c: &Connection,
    store: StoreId,
    category: Option<CategoryId>,
    search: Option<String>,
) -> Result<i64, AppError> {
    catalog::count_products(c, store, &on_sale(category, search))
}

/// An active product of the store; None for a draft, archived or unknown one.
pub fn get_product(
    c: &Connection,
    store: StoreId,
    id: ProductId,
) -> Result<Option<StorefrontProduct>, AppError> {
    let Some(p) = catalog::get_product(c, store, id)?.filter(|p| p.status == ProductStatus::Active)
    else {
        return Ok(None);
    };
    Ok(shown(c, vec![p])?.pop())
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

pub fn count_reviews(c: &Connection, store: StoreId, product: ProductId) -> Result<i64, AppError> {
    Ok(c.prepare_cached(
        "SELECT COUNT(*) FROM reviews WHERE store_id = ?1 AND product_id = ?2
           AND status = 'approved'",
    )?
    .query_row(params![store, product], |r| r.get(0))?)
}
