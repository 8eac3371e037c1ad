//! SQL of reviews; every query is scoped by store.

use crate::db::Tx;
use rusqlite::{Connection, OptionalExtension, params};

use super::model::{ReviewOut, ReviewStatus};
use crate::db::rendered::{Position, RenderedJson, RenderedRows, RenderedTable};
use crate::error::AppError;
use crate::ids::{CustomerId, OrderId, ProductId, ReviewId, StoreId};

pub fn insert(tx: &Tx<'_>, r: &ReviewOut) -> Result<(), AppError> {
    tx.prepare_cached(
        "INSERT INTO reviews (id, store_id, product_id, customer_id, order_id, author_name,
                              author_email, title, body, rating, status, is_verified_purchase,
                              created_at, updated_at, rendered, reply, replied_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
    )?
    .execute(params![
        r.id,
        r.store_id,
        r.product_id,
        r.customer_id,
        r.order_id,
        r.author_name,
        r.author_email,
        r.title,
        r.body,
        r.rating,
        r.status.as_str(),
        r.is_verified_purchase,
        r.created_at,
        r.updated_at,
        serde_json::to_string(r).map_err(AppError::internal)?,
        r.reply,
        r.replied_at
    ])?;
    // An approved review moves its product's rating (a trigger), which shoppers see.
    if r.status == ReviewStatus::Approved {
        crate::storefront::store::refresh(tx, r.store_id, r.product_id)?;
    }
    // One waiting for moderation is announced to those who can moderate it, in this
    // transaction.
    if r.status == ReviewStatus::Pending {
        let id = r.id.to_string();
        let n = crate::notifications::produce::Notice {
            kind: crate::notifications::model::Kind::ReviewPending,
            title: &format!("Review waiting: {}", r.product_title),
            body: &format!("{} rated it {} of 5: {}", r.author_name, r.rating, r.title),
            subject_type: "review",
            subject_id: &id,
        };
        let now = crate::time::parse(&r.created_at).ok_or_else(|| {
            AppError::internal(anyhow::anyhow!("a review's created_at is not a time"))
        })?;
        crate::notifications::produce::notify(tx, r.store_id, &n, now)?;
    }
    Ok(())
}

/// The review as the API shows it, already serialized.
pub fn get_rendered(
    c: &Connection,
    store: StoreId,
    id: ReviewId,
) -> Result<Option<RenderedJson>, AppError> {
    TABLE.get(c, store, &id)
}

/// The review as the API shows it, typed (for a caller that works with it rather than
/// answering it as is).
pub fn get(c: &Connection, store: StoreId, id: ReviewId) -> Result<Option<ReviewOut>, AppError> {
    get_rendered(c, store, id)?
        .map(|r| serde_json::from_str(&r.0).map_err(AppError::internal))
        .transpose()
}

/// Moves a review to `status`; false when the store has no such review in another status.
/// A move into or out of `approved` changes the product's rating (a trigger), so the
/// product's storefront row is rewritten with it.
pub fn set_status(
    tx: &Tx<'_>,
    store: StoreId,
    id: ReviewId,
    status: ReviewStatus,
    now: &str,
) -> Result<bool, AppError> {
    let moved: Option<ProductId> = tx
        .prepare_cached(
            "UPDATE reviews SET status = ?3, updated_at = ?4,
                    rendered = json_set(rendered, '$.status', ?3, '$.updated_at', ?4)
             WHERE store_id = ?1 AND id = ?2 AND status <> ?3
             RETURNING product_id",
        )?
        .query_row(params![store, id, status.as_str(), now], |r| r.get(0))
        .optional()?;
    if let Some(product) = moved {
        crate::storefront::store::refresh(tx, store, product)?;
    }
    Ok(moved.is_some())
}

/// Sets the review's reply (None removes it), stamping `replied_at`; false when the store has
/// no such review or its reply is already that.
pub fn set_reply(
    tx: &Tx<'_>,
    store: StoreId,
    id: ReviewId,
    reply: Option<&str>,
    now: &str,
) -> Result<bool, AppError> {
    Ok(crate::db::exec(
        tx,
        "UPDATE reviews SET reply = ?3, replied_at = iif(?3 IS NULL, NULL, ?4), updated_at = ?4,
                rendered = json_set(rendered, '$.reply', ?3,
                                    '$.replied_at', iif(?3 IS NULL, NULL, ?4),
                                    '$.updated_at', ?4)
         WHERE store_id = ?1 AND id = ?2 AND reply IS NOT ?3",
        params![store, id, reply, now],
    )? == 1)
}

/// The product's title and slug, when it is the store's.
pub fn product(
    c: &Connection,
    store: StoreId,
    id: ProductId,
) -> Result<Option<(String, String)>, AppError> {
    Ok(
        c.prepare_cached("SELECT slug, title FROM products WHERE store_id = ?1 AND id = ?2")?
            .query_row(params![store, id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?,
    )
}

/// What an order of the store says about a review of `product`: its customer, and whether
/// it is a paid purchase of the product. None when the store has no such order.
pub fn purchase(
    c: &Connection,
    store: StoreId,
    order: OrderId,
    product: ProductId,
) -> Result<Option<(Option<CustomerId>, bool)>, AppError> {
    Ok(c.prepare_cached(
        "SELECT o.customer_id,
                    o.status IN ('paid', 'fulfilled', 'shipped', 'delivered', 'partially_refunded')
                    AND EXISTS (SELECT 1 FROM json_each(o.items)
                                WHERE json_extract(value, '$.product_id') = ?3)
             FROM orders o WHERE o.store_id = ?1 AND o.id = ?2",
    )?
    .query_row(params![store, order, product], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
    .optional()?)
}

/// The store's reviews, newest first, filtered by status and product (and looked up by id).
const TABLE: RenderedTable = RenderedTable {
    table: "reviews",
    by: "product_id",
};

/// A page of the store's reviews, newest first, appended to `page`.
pub fn list(
    c: &Connection,
    store: StoreId,
    status: Option<ReviewStatus>,
    product: Option<ProductId>,
    after: Option<&Position>,
    page: &mut RenderedRows,
    offset: i64,
) -> Result<(), AppError> {
    let by = product.as_ref().map(|x| x as &dyn rusqlite::ToSql);
    TABLE.list(
        c,
        (store, status.map(ReviewStatus::as_str), by),
        after,
        page,
        offset,
    )
}

pub fn count(
    c: &Connection,
    store: StoreId,
    status: Option<ReviewStatus>,
    product: Option<ProductId>,
) -> Result<i64, AppError> {
    let by = product.map(|x| x.to_string());
    TABLE.count(c, (store, status.map(ReviewStatus::as_str), by.as_deref()))
}
