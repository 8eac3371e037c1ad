//! SQL of the ad-network catalog: the store's settings row and the items of its feed;
//! every query is scoped by store.

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::model::FeedItem;
use crate::error::AppError;
use crate::ids::StoreId;
use crate::time;

/// The settings row as stored (the sealed access token still sealed).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub feed_token_hash: Option<Vec<u8>>,
    pub feed_token_created_at: Option<String>,
    pub catalog_id: Option<String>,
    pub access_token_sealed: Option<Vec<u8>>,
    pub last_sync_at: Option<String>,
    pub last_sync_items: Option<i64>,
    pub last_sync_error: Option<String>,
}

/// The store's settings; the default (nothing set) when it has no row yet.
pub fn get(c: &Connection, store: StoreId) -> Result<Settings, AppError> {
    Ok(c.prepare_cached(
        "SELECT feed_token_hash, feed_token_created_at, catalog_id, access_token_sealed,
                last_sync_at, last_sync_items, last_sync_error
         FROM ads_settings WHERE store_id = ?1",
    )?
    .query_row(params![store], |r| {
        Ok(Settings {
            feed_token_hash: r.get(0)?,
            feed_token_created_at: r.get(1)?,
            catalog_id: r.get(2)?,
            access_token_sealed: r.get(3)?,
            last_sync_at: r.get(4)?,
            last_sync_items: r.get(5)?,
            last_sync_error: r.get(6)?,
        })
    })
    .optional()?
    .unwrap_or_default())
}

fn ensure_row(tx: &Tx<'_>, store: StoreId, now: &str) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT OR IGNORE INTO ads_settings (store_id, updated_at) VALUES (?1, ?2)",
        params![store, now],
    )?;
    Ok(())
}

/// Replaces the feed token's hash (the old token stops opening the feed at once).
pub fn set_feed_token(
    tx: &Tx<'_>,
    store: StoreId,
    hash: &[u8],
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let now = time::format(now);
    ensure_row(tx, store, &now)?;
    crate::db::exec(
        tx,
        "UPDATE ads_settings SET feed_token_hash = ?2, feed_token_created_at = ?3,
                updated_at = ?3
         WHERE store_id = ?1",
        params![store, hash, now],
    )?;
    Ok(())
}

/// Sets (or, with None, clears) the catalog and its sealed access token.
pub fn set_catalog(
    tx: &Tx<'_>,
    store: StoreId,
    catalog: Option<(&str, &[u8])>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let now = time::format(now);
    ensure_row(tx, store, &now)?;
    crate::db::exec(
        tx,
        "UPDATE ads_settings SET catalog_id = ?2, access_token_sealed = ?3, updated_at = ?4
         WHERE store_id = ?1",
        params![store, catalog.map(|c| c.0), catalog.map(|c| c.1), now],
    )?;
    Ok(())
}

/// Records a push's outcome: the items sent, or the provider's error.
pub fn record_sync(
    tx: &Tx<'_>,
    store: StoreId,
    outcome: Result<i64, &str>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let (items, error) = match outcome {
        Ok(n) => (Some(n), None),
        Err(e) => (None, Some(e)),
    };
    crate::db::exec(
        tx,
        "UPDATE ads_settings SET last_sync_at = ?2, last_sync_items = ?3, last_sync_error = ?4
         WHERE store_id = ?1",
        params![store, time::format(now), items, error],
    )?;
    Ok(())
}

/// The stores with a catalog whose last push ran before `cutoff` (or never), oldest first:
/// what the scheduled sync pushes.
pub fn due_unscoped(
    c: &Connection,
    cutoff: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<StoreId>, AppError> {
    Ok(c.prepare_cached(
        "SELECT store_id FROM ads_settings
         WHERE catalog_id IS NOT NULL AND (last_sync_at IS NULL OR last_sync_at <= ?1)
         ORDER BY last_sync_at LIMIT ?2",
    )?
    .query_map(params![time::format(cutoff), limit], |r| r.get(0))?
    .collect::<Result<_, _>>()?)
}

/// The address the feed's links start with: `https://{custom_domain}` when the store has
/// one, else `fallback` (the server's public URL).
pub fn site_base(c: &Connection, store: StoreId, fallback: &str) -> Result<String, AppError> {
    let domain: Option<String> = c
        .prepare_cached("SELECT custom_domain FROM stores WHERE id = ?1")?
        .query_row(params![store], |r| r.get(0))
        .optional()?
        .flatten();
    Ok(domain.map_or_else(|| fallback.to_owned(), |d| format!("https://{d}")))
}

/// `129.90 BRL` from cents.
pub fn price(cents: i64) -> String {
    format!("{}.{:02} BRL", cents / 100, cents % 100)
}

/// One item per variant of the store's active products, in the catalog's order.
pub fn feed_items(c: &Connection, store: StoreId, site: &str) -> Result<Vec<FeedItem>, AppError> {
    let mut stmt = c.prepare_cached(
        "SELECT p.id, p.title, p.slug, p.description, v.id, v.sku, v.title, v.price_cents,
                v.on_hand - v.reserved > 0,
                (SELECT COUNT(*) FROM variants w WHERE w.product_id = p.id)
         FROM products p JOIN variants v ON v.product_id = p.id
         WHERE p.store_id = ?1 AND p.status = 'active'
         ORDER BY p.created_at, p.id, v.position",
    )?;
    let rows = stmt.query_map(params![store], |r| {
        let (product, title, slug): (String, String, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
        let description: String = r.get(3)?;
        let (variant, sku, vtitle): (String, String, String) = (r.get(4)?, r.get(5)?, r.get(6)?);
        let (cents, available, siblings): (i64, bool, i64) = (r.get(7)?, r.get(8)?, r.get(9)?);
        let link = format!("{site}/products/{slug}");
        Ok(FeedItem {
            // A product with one variant is titled as the product; others name the variant.
            title: if siblings > 1 && !vtitle.is_empty() {
                format!("{title} - {vtitle}")
            } else {
                title.clone()
            },
            // Merchant Center needs a description: the title stands in for an empty one.
            description: if description.trim().is_empty() {
                title
            } else {
                description
            },
            link: format!("{link}?variant={variant}"),
            image_link: format!("{link}/image"),
            availability: if available {
                "in_stock"
            } else {
                "out_of_stock"
            }
            .to_owned(),
            price: price(cents),
            condition: "new".to_owned(),
            id: variant,
            item_group_id: product,
            sku,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}
