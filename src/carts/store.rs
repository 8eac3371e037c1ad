//! SQL of carts and their lines; every query is scoped by store (the recovery scan, which
//! reads every store's, is named for it).

use crate::db::Tx;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::model::{CartCustomer, CartItemOut, CartOut, CartStatus};
use crate::db::rendered::Position;
use crate::error::AppError;
use crate::ids::{CartId, ChannelId, ConversationId, OrderId, StoreId, VariantId};
use crate::time;

const COLUMNS: &str = "id, store_id, status, email, phone, currency, order_id, created_at, \
                       updated_at, abandoned_at";

fn row(r: &Row<'_>) -> rusqlite::Result<CartOut> {
    Ok(CartOut {
        id: r.get(0)?,
        store_id: r.get(1)?,
        status: r.get(2)?,
        customer: CartCustomer {
            email: r.get(3)?,
            phone: r.get(4)?,
        },
        currency: r.get(5)?,
        order_id: r.get(6)?,
        created_at: r.get(7)?,
        updated_at: r.get(8)?,
        abandoned_at: r.get(9)?,
        items: Vec::new(),
        subtotal_cents: 0,
    })
}

/// A new cart's row.
pub struct NewCart<'a> {
    pub id: CartId,
    pub store: StoreId,
    pub channel: Option<ChannelId>,
    pub token_hash: Option<&'a [u8]>,
    pub currency: &'a str,
}

pub fn insert(tx: &Tx<'_>, c: &NewCart<'_>, now: DateTime<Utc>) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO carts (id, store_id, channel_id, token_hash, currency, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
        params![
            c.id,
            c.store,
            c.channel,
            c.token_hash,
            c.currency,
            time::format(now)
        ],
    )?;
    Ok(())
}

/// What access and edits need to know of a cart: its token's hash and its status.
pub struct Head {
    pub token_hash: Option<Vec<u8>>,
    pub status: CartStatus,
    pub channel: Option<ChannelId>,
    /// The inbox conversation an assisted sale attached it to.
    pub conversation: Option<ConversationId>,
}

pub fn head(c: &Connection, store: StoreId, id: CartId) -> Result<Option<Head>, AppError> {
    Ok(c.prepare_cached(
        "SELECT token_hash, status, channel_id, conversation_id FROM carts
         WHERE store_id = ?1 AND id = ?2",
    )?
    .query_row(params![store, id], |r| {
        Ok(Head {
            token_hash: r.get(0)?,
            status: r.get(1)?,
            channel: r.get(2)?,
            conversation: r.get(3)?,
        })
    })
    .optional()?)
}

/// The cart attached to the conversation, if any (at most one: [`attach`]'s callers check).
pub fn attached(
    c: &Connection,
    store: StoreId,
    conversation: ConversationId,
) -> Result<Option<CartId>, AppError> {
    Ok(c.prepare_cached(
        "SELECT id FROM carts WHERE store_id = ?1 AND conversation_id = ?2
         ORDER BY created_at DESC, id DESC LIMIT 1",
    )?
    .query_row(params![store, conversation], |r| r.get(0))
    .optional()?)
}

/// Attaches the cart to `conversation`, or detaches it (None).
pub fn attach(
    tx: &Tx<'_>,
    store: StoreId,
    id: CartId,
    conversation: Option<ConversationId>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE carts SET conversation_id = ?3 WHERE store_id = ?1 AND id = ?2",
        params![store, id, conversation],
    )?;
    Ok(())
}

/// Sets the cart's channel when it has none (the one its links will name).
pub fn set_channel(
    tx: &Tx<'_>,
    store: StoreId,
    id: CartId,
    channel: ChannelId,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE carts SET channel_id = ?3 WHERE store_id = ?1 AND id = ?2 AND channel_id IS NULL",
        params![store, id, channel],
    )?;
    Ok(())
}

/// Removes every line of the cart (a whole new list follows).
pub fn clear_items(tx: &Tx<'_>, cart: CartId) -> Result<(), AppError> {
    crate::db::exec(tx, "DELETE FROM cart_items WHERE cart_id = ?1", [cart])?;
    Ok(())
}

/// The cart with its lines at current prices.
pub fn get(c: &Connection, store: StoreId, id: CartId) -> Result<Option<CartOut>, AppError> {
    let sql = format!("SELECT {COLUMNS} FROM carts WHERE store_id = ?1 AND id = ?2");
    let Some(cart) = c
        .prepare_cached(&sql)?
        .query_row(params![store, id], row)
        .optional()?
    else {
        return Ok(None);
    };
    Ok(complete(c, vec![cart])?.pop())
}

const ITEM_COLUMNS: &str = "ci.cart_id, ci.variant_id, v.product_id, p.title, v.title, v.sku, \
    ci.quantity, v.price_cents, (p.status = 'active' AND v.on_hand - v.reserved >= ci.quantity)";

/// Fills in the carts' lines and subtotals: one query for all of them.
fn complete(c: &Connection, mut carts: Vec<CartOut>) -> Result<Vec<CartOut>, AppError> {
    let rows = if let [one] = &carts[..] {
        let sql = format!(
            "SELECT {ITEM_COLUMNS} FROM cart_items ci JOIN variants v ON v.id = ci.variant_id
             JOIN products p ON p.id = v.product_id WHERE ci.cart_id = ?1 ORDER BY ci.position"
        );
        c.prepare_cached(&sql)?
            .query_map([one.id], item_row)?
            .collect::<Result<Vec<_>, _>>()?
    } else if carts.is_empty() {
        return Ok(carts);
    } else {
        let ids = serde_json::to_string(&carts.iter().map(|x| x.id).collect::<Vec<_>>())
            .map_err(AppError::internal)?;
        let sql = format!(
            "SELECT {ITEM_COLUMNS} FROM cart_items ci JOIN variants v ON v.id = ci.variant_id
             JOIN products p ON p.id = v.product_id
             WHERE ci.cart_id IN (SELECT value FROM json_each(?1)) ORDER BY ci.cart_id, ci.position"
        );
        c.prepare_cached(&sql)?
            .query_map([ids], item_row)?
            .collect::<Result<Vec<_>, _>>()?
    };
    for (cart, item) in rows {
        if let Some(x) = carts.iter_mut().find(|x| x.id == cart) {
            // Saturating: a catalog price has no upper bound, and the checkout refuses a
            // total past the orders' maximum anyway.
            x.subtotal_cents = x.subtotal_cents.saturating_add(item.total_cents);
            x.items.push(item);
        }
    }
    Ok(carts)
}

fn item_row(r: &Row<'_>) -> rusqlite::Result<(CartId, CartItemOut)> {
    let (quantity, unit): (i64, i64) = (r.get(6)?, r.get(7)?);
    Ok((
        r.get(0)?,
        CartItemOut {
            variant_id: r.get(1)?,
            product_id: r.get(2)?,
            title: r.get(3)?,
            variant_title: r.get(4)?,
            sku: r.get(5)?,
            quantity,
            unit_price_cents: unit,
            total_cents: unit.saturating_mul(quantity),
            available: r.get(8)?,
        },
    ))
}

/// A variant of the store as a shopper may buy it: whether its product is on sale, and the
/// units free to sell. None: not a variant of this store.
pub fn offer(
    c: &Connection,
    store: StoreId,
    variant: VariantId,
) -> Result<Option<(bool, i64)>, AppError> {
    Ok(c.prepare_cached(
        "SELECT p.status = 'active', v.on_hand - v.reserved
         FROM variants v JOIN products p ON p.id = v.product_id
         WHERE v.store_id = ?1 AND v.id = ?2",
    )?
    .query_row(params![store, variant], |r| Ok((r.get(0)?, r.get(1)?)))
    .optional()?)
}

/// The quantity of `variant` in the cart; None without such a line.
pub fn quantity(c: &Connection, cart: CartId, variant: VariantId) -> Result<Option<i64>, AppError> {
    Ok(
        c.prepare_cached("SELECT quantity FROM cart_items WHERE cart_id = ?1 AND variant_id = ?2")?
            .query_row(params![cart, variant], |r| r.get(0))
            .optional()?,
    )
}

/// Sets the line's quantity, adding the line at the end when it is new.
pub fn put_item(
    tx: &Tx<'_>,
    cart: CartId,
    variant: VariantId,
    quantity: i64,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "INSERT INTO cart_items (cart_id, variant_id, quantity, position)
         VALUES (?1, ?2, ?3, (SELECT COALESCE(MAX(position), 0) + 1 FROM cart_items
                              WHERE cart_id = ?1))
         ON CONFLICT (cart_id, variant_id) DO UPDATE SET quantity = excluded.quantity",
        params![cart, variant, quantity],
    )?;
    Ok(())
}

/// Removes the line; false when the cart has none for `variant`.
pub fn remove_item(tx: &Tx<'_>, cart: CartId, variant: VariantId) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "DELETE FROM cart_items WHERE cart_id = ?1 AND variant_id = ?2",
        params![cart, variant],
    )?;
    Ok(n == 1)
}

/// Records a change made now: abandonment counts from it.
pub fn touch(tx: &Tx<'_>, store: StoreId, id: CartId, now: DateTime<Utc>) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE carts SET updated_at = ?3 WHERE store_id = ?1 AND id = ?2",
        params![store, id, time::format(now)],
    )?;
    Ok(())
}

pub fn set_contact(
    tx: &Tx<'_>,
    store: StoreId,
    id: CartId,
    contact: &CartCustomer,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE carts SET email = ?3, phone = ?4, updated_at = ?5 WHERE store_id = ?1 AND id = ?2",
        params![store, id, contact.email, contact.phone, time::format(now)],
    )?;
    Ok(())
}

/// Replaces the shopper's token (a recovery link hands out a new one).
pub fn set_token_hash(
    tx: &Tx<'_>,
    store: StoreId,
    id: CartId,
    hash: &[u8],
) -> Result<(), AppError> {
    crate::db::exec(
        tx,
        "UPDATE carts SET token_hash = ?3 WHERE store_id = ?1 AND id = ?2",
        params![store, id, hash],
    )?;
    Ok(())
}

/// Moves the cart from `from` to `to` (`converted` or `recovered`) with its order, only if
/// it is still `from`: a second checkout of the same cart finds nothing to move.
pub fn check_out(
    tx: &Tx<'_>,
    store: StoreId,
    id: CartId,
    from: CartStatus,
    to: CartStatus,
    order: OrderId,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE carts SET status = ?4, order_id = ?5, checked_out_at = ?6, updated_at = ?6
         WHERE store_id = ?1 AND id = ?2 AND status = ?3",
        params![store, id, from, to, order, time::format(now)],
    )?;
    Ok(n == 1)
}

/// Open carts of every store with a contact and items, untouched since `cutoff`, oldest
/// first: what the recovery job abandons.
pub fn to_abandon_unscoped(
    c: &Connection,
    cutoff: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<(StoreId, CartId)>, AppError> {
    Ok(c.prepare_cached(
        "SELECT c.store_id, c.id FROM carts c
         WHERE c.status = 'open' AND c.updated_at <= ?1
           AND (c.email IS NOT NULL OR c.phone IS NOT NULL)
           AND EXISTS (SELECT 1 FROM cart_items ci WHERE ci.cart_id = c.id)
         ORDER BY c.updated_at LIMIT ?2",
    )?
    .query_map(params![time::format(cutoff), limit], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?
    .collect::<Result<_, _>>()?)
}

/// Marks the cart abandoned if it is still open and untouched since `cutoff`; true when
/// this call did (so its event fires once).
pub fn abandon(
    tx: &Tx<'_>,
    store: StoreId,
    id: CartId,
    cutoff: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let n = crate::db::exec(
        tx,
        "UPDATE carts SET status = 'abandoned', abandoned_at = ?4
         WHERE store_id = ?1 AND id = ?2 AND status = 'open' AND updated_at <= ?3",
        params![store, id, time::format(cutoff), time::format(now)],
    )?;
    Ok(n == 1)
}

/// The public key of the chat channel a cart was opened on (its recovery link names it).
pub fn channel_key(c: &Connection, channel: ChannelId) -> Result<Option<String>, AppError> {
    Ok(c.prepare_cached("SELECT key FROM channels WHERE id = ?1")?
        .query_row([channel], |r| r.get::<_, Option<String>>(0))
        .optional()?
        .flatten())
}

/// The store's carts, newest first, optionally of one status.
pub fn list(
    c: &Connection,
    store: StoreId,
    status: Option<CartStatus>,
    after: Option<&Position>,
    limit: i64,
    offset: i64,
) -> Result<Vec<CartOut>, AppError> {
    let by_status = if status.is_some() {
        "AND status = ?2"
    } else {
        "AND ?2 IS NULL"
    };
    let keyset = if after.is_some() {
        "AND (created_at, id) < (?3, ?4)"
    } else {
        "AND ?3 IS NULL AND ?4 IS NULL"
    };
    let sql = format!(
        "SELECT {COLUMNS} FROM carts WHERE store_id = ?1 {by_status} {keyset}
         ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET ?5"
    );
    let (k, i) = after
        .cloned()
        .map_or((None, None), |(k, i)| (Some(k), Some(i)));
    let rows = c
        .prepare_cached(&sql)?
        .query_map(params![store, status, k, i, offset], row)?
        .collect::<Result<Vec<_>, _>>()?;
    complete(c, rows)
}

pub fn count(c: &Connection, store: StoreId, status: Option<CartStatus>) -> Result<i64, AppError> {
    let key = crate::db::counts::key(status.map(|s| ("status", s.as_str())));
    crate::db::counts::get(c, store, "carts", &key)
}

/// Deletes carts nobody checked out and nobody touched since `before` (open or abandoned;
/// their recovery links expired long ago). Checked-out carts stay with their orders.
pub fn purge_stale(tx: &Tx<'_>, before: DateTime<Utc>) -> Result<usize, AppError> {
    Ok(crate::db::exec(
        tx,
        "DELETE FROM carts WHERE status IN ('open', 'abandoned') AND updated_at < ?1",
        [time::format(before)],
    )?)
}
